"""Several trajectories of one game kind played one after another, as one life: "game 1",
"game 2", … (cross-episode questions, design 0032 "Cross-episode questions").

A life's timeline holds each game's own timeline (uncut: a cross-episode question is asked
after the last game) and numbers the games in the order they were given to the generator.

    life = Life("life-crafter", "crafter", [("crafter-s0", tl0), ("crafter-s1", tl1)])
    life.question("life.total_action_count", params={"action": "do"}, answer=17,
                  text="...", evidence=[("crafter-s0", 4), ("crafter-s1", 9)])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ._base import NOT_ANSWERABLE, GameQuestion, all_templates


class Life:
    def __init__(self, life_id: str, kind: str, games: Sequence[tuple[str, Any]]) -> None:
        if len(games) < 2:
            raise ValueError("a life needs at least two games")
        self.id, self.kind = life_id, kind
        self.ids = [tid for tid, _ in games]
        self.games = [tl for _, tl in games]
        self.total_steps = sum(tl.horizon[1] for tl in self.games)
        self.horizon: tuple[int, int] = (1, self.total_steps)

    def name(self, index: int) -> str:
        """How a question names a game: ``game 1`` is the first played."""
        return f"game {index + 1}"

    def question(self, template_id: str, *, params: dict[str, Any], answer: Any, text: str,
                 evidence: Iterable[tuple[int, int]] = (),
                 alternatives: Sequence[Any] = ()) -> GameQuestion:
        """``evidence``: (game index, step) pairs; NOT_ANSWERABLE makes it unanswerable."""
        spec = all_templates()[template_id]
        refs = sorted({(self.ids[g], int(t)) for g, t in evidence},
                      key=lambda r: (self.ids.index(r[0]), r[1]))
        for tid, step in refs:
            last = self.games[self.ids.index(tid)].horizon[1]
            if not 1 <= step <= last:
                raise ValueError(f"{template_id}: evidence step {step} outside game {tid}")
        return GameQuestion(template=template_id, params=dict(params), ability=spec.ability,
                            answer_type=spec.answer_type, answer=answer, evidence_steps=[],
                            horizon=self.horizon, text=text,
                            answerable=answer != NOT_ANSWERABLE,
                            alternatives=list(alternatives), evidence_refs=refs)
