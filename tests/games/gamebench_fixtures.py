"""Hand-made trajectories and test-only templates for the generator and loader tests.

The templates are registered only for the test that asks for them (``register_test_templates``): the
real template modules are loaded first and the registry is swapped for an empty one, so
the figures here do not move when templates are added to the package.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from memgauge.games import Step, TrajectoryMeta, TrajectoryWriter
from memgauge.games.templates import NOT_ANSWERABLE, GameQuestion, template
from memgauge.games.templates import _base as templates_base

ACTIONS = ["move_left", "move_left", "do", "move_right", "noop", "do", "move_up", "do"]


def png(shade: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (shade, shade, shade)).save(buf, format="PNG")
    return buf.getvalue()


def write_trajectory(folder: Path, actions: list[str] | None = None, *,
                     env: str = "crafter") -> Path:
    """A Crafter-like trajectory: wood rises on every ``do``; a frame per step."""
    actions = actions or ACTIONS
    writer = TrajectoryWriter(folder, TrajectoryMeta(env=env, seed=7, player="scripted"))
    writer.start({"pos": [32, 32], "inventory": {"wood": 0}, "observation": "You wake up.",
                  "frame": writer.save_frame(png(0))})
    wood, x = 0, 32
    for i, action in enumerate(actions, 1):
        wood += action == "do"
        x += {"move_left": -1, "move_right": 1}.get(action, 0)
        writer.add(Step(step=i, action=action, pos=[x, 32], inventory={"wood": wood},
                        observation=f"obs {i}", frame=writer.save_frame(png(10 * i))))
    writer.finish(end="step_cap")
    return folder


class Timeline:
    """The least a template needs: the steps it may see."""

    def __init__(self, kind: str, meta: TrajectoryMeta, steps: list[Step]) -> None:
        self.kind, self.meta, self.steps = kind, meta, steps

    @property
    def last(self) -> int:
        return self.steps[-1].step

    def question(self, tid: str, ability: str, answer_type: str, params: dict[str, Any],
                 answer: Any, text: str, evidence: list[int],
                 answerable: bool = True) -> GameQuestion:
        return GameQuestion(template=tid, params=params, ability=ability,
                            answer_type=answer_type, answer=answer, evidence_steps=evidence,
                            horizon=(1, self.last), text=text, answerable=answerable)


SEEN_LAST: list[int] = []  # the last step each run of test.last_step could read


def _register() -> None:
    @template("test.last_step", ability="single_hop", answer_type="integer", games=("crafter",))
    def last_step(tl: Timeline, rng: Any) -> Iterator[GameQuestion]:
        SEEN_LAST.append(max(s.step for s in tl.steps))
        yield tl.question("test.last_step", "single_hop", "integer", {}, tl.last,
                          "What was your last step?", [tl.last])

    @template("test.wood_at", ability="temporal", answer_type="integer", games=("crafter",))
    def wood_at(tl: Timeline, rng: Any) -> Iterator[GameQuestion]:
        for s in tl.steps:
            yield tl.question("test.wood_at", "temporal", "integer", {"item": "wood",
                                                                      "step": s.step},
                              s.inventory["wood"],
                              f"How much wood did you have after step {s.step}?", [s.step])

    @template("test.twice", ability="multi_hop", answer_type="action", games=("crafter",))
    def twice(tl: Timeline, rng: Any) -> Iterator[GameQuestion]:
        for _ in range(2):  # the same question twice: the generator keeps one
            yield tl.question("test.twice", "multi_hop", "action", {"step": 1},
                              tl.steps[0].action, "Which action did you take at step 1?", [1])

    @template("test.diamond", ability="adversarial", answer_type="integer", games=("crafter",))
    def diamond(tl: Timeline, rng: Any) -> Iterator[GameQuestion]:
        yield tl.question("test.diamond", "adversarial", "integer", {"item": "diamond"},
                          NOT_ANSWERABLE, "At which step did you first collect 'diamond'?", [],
                          answerable=False)


def register_test_templates(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Only the templates above, for one test; returns the list ``test.last_step`` fills."""
    templates_base.all_templates()  # the package's own modules register into the real one
    monkeypatch.setattr(templates_base, "_TEMPLATES", {})
    SEEN_LAST.clear()
    _register()
    return SEEN_LAST
