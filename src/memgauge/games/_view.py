"""The game view rule (design 0039): a question may ask only about what the answering system
is shown — the sessions ``--bench games`` renders — or what a stated rule derives from it.

The loader renders each step as the action ("Step s: <action>") and what the player saw
after it (the frame, and the observation text); the reset shows the opening text and frame.
Two logged fields are never rendered, so the generator removes them before a timeline is
built and no template can read them:

- the player's trace (``player``: an LLM player's reply and stated reason, the scripted
  player's bookkeeping such as "walkthrough 2/5");
- ``admissible``, the commands a text game would accept.

The rest of the state (rooms, inventories, scores, positions) is what the text and frames
show or what a stated rule derives from them (entering a room is the room named in the reply,
a move that changed the picture changed the position). For text games the generator also
checks each answerable question: every name it asks about or answers with must appear in the
rendered text up to its horizon (``unshown_names``); a question that fails is dropped and
counted in ``benchmark.json`` (``view_check``).
"""

from __future__ import annotations

import re
from typing import Any

from ._trajectory import Step, TrajectoryMeta

NEVER_SHOWN = ("player", "admissible")  # Step fields the sessions never render
# String params that name a thing of the game (rooms, items, words, commands); the others
# (ordinal, when, event, change, source) are the template's own wording.
NAME_PARAMS = ("a", "b", "item", "keyword", "room", "command")
NAME_ANSWER_TYPES = ("string", "action", "set", "list")  # answers that are names or text


def action_text(step: Step) -> str:
    """The assistant turn of a step, as the loader renders it."""
    return f"Step {step.step}: {step.action}"


def shown_steps(meta: TrajectoryMeta, steps: list[Step]) -> tuple[TrajectoryMeta, list[Step]]:
    """The trajectory with the never-rendered fields emptied (None: unknown, as the timeline
    already treats an env that does not log them)."""
    initial = {k: v for k, v in (meta.initial or {}).items() if k not in NEVER_SHOWN}
    return (meta.model_copy(update={"initial": initial}),
            [s.model_copy(update=dict.fromkeys(NEVER_SHOWN)) for s in steps])


def view_text(meta: TrajectoryMeta, steps: list[Step]) -> str:
    """Every text the sessions show up to the last of ``steps``: the opening text, then each
    step's action and observation, normalised (case, ``_``/``-`` as spaces, whitespace)."""
    parts = [str((meta.initial or {}).get("observation") or "")]
    for s in steps:
        parts += [action_text(s), s.observation]
    return _norm("\n".join(parts))


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[_\-]+", " ", text.lower()).split())


def _shown(shown: str, name: str) -> bool:
    term = _norm(name)
    if not term:
        return True
    return re.search(r"(?<![\w])" + re.escape(term) + r"(?![\w])", shown) is not None


def question_names(params: dict[str, Any], answer_type: str, answer: Any,
                   answerable: bool) -> list[str]:
    """The names an answerable question asks about or answers with (none for an
    unanswerable one: its names are chosen never to have been shown)."""
    if not answerable:
        return []
    names = [v for k, v in params.items() if k in NAME_PARAMS and isinstance(v, str)]
    if answer_type in NAME_ANSWER_TYPES:
        values = answer if isinstance(answer, list) else [answer]
        names += [v for v in values if isinstance(v, str)]
    return names


def unshown_names(shown: str, names: list[str]) -> list[str]:
    """The names the view text never shows (whole words, case-insensitive)."""
    return [n for n in names if not _shown(shown, n)]


__all__ = ["NAME_PARAMS", "NEVER_SHOWN", "action_text", "question_names", "shown_steps",
           "unshown_names", "view_text"]
