"""Retrieval units: what a retriever ranks and a reader is shown (a turn, a round, a session)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..schema import EvidenceRef, ImageRef, Session, Turn
from ._sessions import session_text

UNITS = ("turn", "round", "session")


@dataclass(frozen=True)
class Unit:
    """Consecutive turns of one session. ``position`` is the unit's chronological index in
    the episode (0 = oldest); ``pointer`` names the session, and for sub-session units its
    first turn."""

    session: Session
    turns: tuple[Turn, ...]
    position: int
    pointer: EvidenceRef

    @property
    def images(self) -> list[ImageRef]:
        return [im for t in self.turns for im in t.images if not im.missing]

    def text(self) -> str:
        """The turns' text with ``<image>`` placeholders removed, as the session retrievers
        index it (no captions: retrieval/_sessions.session_text)."""
        return session_text(self.session if len(self.turns) == len(self.session.turns)
                            else self.session.model_copy(update={"turns": list(self.turns)}))


def _groups(turns: Sequence[Turn], unit: str) -> list[list[Turn]]:
    if unit == "session":
        return [list(turns)] if turns else []
    if unit == "turn":
        return [[t] for t in turns]
    # round: a user turn and the assistant turns that follow it (a session that opens with
    # an assistant turn has that turn as a round of its own)
    out: list[list[Turn]] = []
    for t in turns:
        if t.role == "user" or not out:
            out.append([t])
        else:
            out[-1].append(t)
    return out


def split(session: Session, unit: str, start: int) -> list[Unit]:
    """A session's units, numbered from ``start``."""
    if unit not in UNITS:
        raise ConfigError(f"unknown unit {unit!r}; use {', '.join(UNITS)}")
    out = []
    for k, group in enumerate(_groups(session.turns, unit)):
        pointer = EvidenceRef(session_id=session.session_id,
                              turn_id=None if unit == "session" else group[0].turn_id)
        out.append(Unit(session=session, turns=tuple(group), position=start + k,
                        pointer=pointer))
    return out


def as_sessions(units: Sequence[Unit]) -> list[Session]:
    """The units as sessions for a prompt, in chronological order: one session per session
    that has chosen units, holding only the chosen turns (so each keeps its header)."""
    out: list[Session] = []
    by_session: dict[str, list[Turn]] = {}
    for u in sorted(units, key=lambda u: u.position):
        sid = u.session.session_id
        if sid not in by_session:
            by_session[sid] = []
            out.append(u.session)
        by_session[sid].extend(u.turns)
    return [s if len(by_session[s.session_id]) == len(s.turns)
            else s.model_copy(update={"turns": by_session[s.session_id]}) for s in out]
