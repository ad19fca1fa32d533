"""Hand-made text-game trajectories (design 0032, "Text-game fields"), small enough that
every answer in tests/games/test_templates_text.py is worked out by hand from the tables
below."""

from __future__ import annotations

from typing import Any

from memgauge.games import Step, TrajectoryMeta

HOUSE_START = {
    "room": "Kitchen", "inventory": [], "score": 0, "moves": 0,
    "observation": "-= Kitchen =- A knife lies on the table. Exits lead north and east.",
    "admissible": ["take knife", "north", "east", "look"],
    "facts": ["at(P, Kitchen: r)", "on(knife: o, table: s)", "at(table: s, Kitchen: r)",
              "at(hook: o, Hall: r)", "at(ruby: o, Cellar: r)", "link(Cellar: r, Pantry: r)",
              "in(silver spoon: o, drawer: c)", "at(drawer: c, Pantry: r)"],
}
# step, action as typed, room after, inventory after, score after, the game's reply
HOUSE_STEPS: list[tuple[int, str, str, list[str], int, str]] = [
    (1, "take knife", "Kitchen", ["knife"], 1, "You take the knife from the table."),
    (2, "n", "Hall", ["knife"], 1, "-= Hall =- A lamp hangs on a hook. Exits lead south and east."),
    (3, "take lamp", "Hall", ["knife", "lamp"], 1, "You take the lamp."),
    (4, "east", "Study", ["knife", "lamp"], 1,
     "-= Study =- A dusty desk stands here. Exits lead west and south."),
    (5, "open desk", "Study", ["knife", "lamp"], 3, "You open the desk. Inside is a coin."),
    (6, "take coin", "Study", ["knife", "lamp", "coin"], 4, "You take the coin."),
    (7, "south", "Kitchen", ["knife", "lamp", "coin"], 4, "-= Kitchen =- The table is bare."),
    (8, "drop knife", "Kitchen", ["lamp", "coin"], 4, "You drop the knife."),
    (9, "go north", "Hall", ["lamp", "coin"], 4, "-= Hall =- The hook is empty."),
    (10, "look", "Hall", ["lamp", "coin"], 4,
     "-= Hall =- The hook is empty. Exits lead south and east."),
]
# the commands the game accepted, after steps 1 and 2 (unknown from step 3 on)
HOUSE_ADMISSIBLE = {1: ["north", "east", "look", "drop knife"],
                    2: ["south", "east", "take lamp", "look", "drop knife"]}


def house(cut: int | None = None, *, reasons: bool = False,
          facts: bool = True) -> tuple[TrajectoryMeta, list[Step]]:
    """Kitchen -north-> Hall -east-> Study -south-> Kitchen; knife, lamp and coin taken,
    the knife dropped back in the kitchen. ``cut`` keeps the first steps only."""
    start = dict(HOUSE_START)
    if not facts:
        start.pop("facts")
    steps = []
    for t, action, room, inv, score, obs in HOUSE_STEPS[:cut]:
        extra: dict[str, Any] = {}
        if reasons:
            extra["player"] = {"reason": f"Step {t} plan. I want to {action}."}
        if facts:
            extra["facts"] = [f"at(P, {room}: r)"] + [f"in({i}: o, I)" for i in inv]
        steps.append(Step(step=t, action=action, room=room, inventory=inv, score=score,
                          moves=t, observation=obs, admissible=HOUSE_ADMISSIBLE.get(t),
                          success=True, **extra))
    meta = TrajectoryMeta(env="textworld", seed=1, player="scripted", steps=len(steps),
                          initial=start)
    return meta, steps


def simple(rows: list[dict[str, Any]], **initial: Any) -> tuple[TrajectoryMeta, list[Step]]:
    """A trajectory from step dicts (``action`` and whatever else), numbered from 1."""
    steps = [Step(step=i, **row) for i, row in enumerate(rows, 1)]
    return TrajectoryMeta(env="textworld", player="scripted", steps=len(steps),
                          initial=initial), steps
