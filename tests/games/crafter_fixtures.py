"""Hand-made Crafter trajectories in the design 0032 "Crafter fields" format, small enough
to compute every answer by hand.

The world of ``tiny()`` (x to the right, y down; the player starts at (2, 2)):

    y\\x  0      1      2      3      4      5
    0    water  grass  grass  tree   stone  stone
    1    grass  grass  grass  grass  grass  stone
    2    grass  sand   grass  grass  grass  grass
    3    grass  grass  grass  grass  lava   grass

At reset the player has seen columns 0..3 (x ≤ 3); columns 4..5 are first seen at step 3.
"""

from __future__ import annotations

from typing import Any

from memgauge.games._trajectory import Step, TrajectoryMeta

WORLD = [
    ["water", "grass", "grass", "tree", "stone", "stone"],
    ["grass", "grass", "grass", "grass", "grass", "stone"],
    ["grass", "sand", "grass", "grass", "grass", "grass"],
    ["grass", "grass", "grass", "grass", "lava", "grass"],
]


def inventory(**counts: int) -> dict[str, int]:
    base = {"health": 9, "food": 9, "drink": 9, "energy": 9, "sapling": 0, "wood": 0,
            "stone": 0, "coal": 0, "iron": 0, "diamond": 0, "wood_pickaxe": 0,
            "stone_pickaxe": 0, "iron_pickaxe": 0, "wood_sword": 0, "stone_sword": 0,
            "iron_sword": 0}
    base.update(counts)
    return base


def cells(xs: range, world: list[list[str]] = WORLD) -> list[list[Any]]:
    return [[x, y, world[y][x]] for y in range(len(world)) for x in xs]


def state(pos: tuple[int, int], facing: tuple[int, int], inv: dict[str, int],
          ach: dict[str, int] | None = None, **extra: Any) -> dict[str, Any]:
    return {"pos": list(pos), "facing": list(facing), "inventory": inv,
            "achievements": dict(ach or {}), "sleeping": False, "daylight": 1.0,
            "view": extra.pop("view", [["grass"]]), "creatures": extra.pop("creatures", []),
            "seen": extra.pop("seen", []), **extra}


def tiny(end: str = "step_cap") -> tuple[TrajectoryMeta, list[Step]]:
    """Twelve steps. Step by step (state after the action):

    1 move_up      (2,2)->(2,1), facing up
    2 move_right   ->(3,1), facing right
    3 move_up      blocked by the tree at (3,0): stays (3,1), facing up; sees x 4..5
    4 do           collects wood from the tree (wood 1); the tree stays in this fixture
    5 do           wood 2
    6 place_table  fails: the faced cell is a tree (counter unchanged, wood 2)
    7 move_down    ->(3,2), facing down
    8 place_table  puts a table at (3,3): wood 0, place_table 1
    9 move_left    ->(2,2), facing left
    10 sleep       falls asleep (sleeping True); a zombie next to the player: health 9->7
    11 noop        still asleep; food 9->8
    12 move_left   wakes (sleeping False) and moves to (1,2) (sand); drink 9->8
    """
    meta = TrajectoryMeta(env="crafter", seed=0, player="scripted", steps=12, max_steps=12,
                          end=end)  # type: ignore[arg-type]
    meta.initial = state((2, 2), (0, 1), inventory(), seen=cells(range(4)),
                         view=[["grass", "sand", "water"]], creatures=[{"kind": "cow",
                                                                        "pos": [0, 3]}])
    a1 = {"place_table": 1, "collect_wood": 2}
    raw: list[tuple[str, bool | None, dict[str, Any]]] = [
        ("move_up", True, state((2, 1), (0, -1), inventory())),
        ("move_right", True, state((3, 1), (1, 0), inventory())),
        ("move_up", False, state((3, 1), (0, -1), inventory(), seen=cells(range(4, 6)),
                                 view=[["tree", "stone", "lava"]])),
        ("do", True, state((3, 1), (0, -1), inventory(wood=1), {"collect_wood": 1})),
        ("do", True, state((3, 1), (0, -1), inventory(wood=2), {"collect_wood": 2},
                           view=[["tree"]])),
        ("place_table", False, state((3, 1), (0, -1), inventory(wood=2), {"collect_wood": 2})),
        ("move_down", True, state((3, 2), (0, 1), inventory(wood=2), {"collect_wood": 2})),
        ("place_table", True, state((3, 2), (0, 1), inventory(wood=0), a1,
                                    seen=[[3, 3, "table"]])),
        ("move_left", True, state((2, 2), (-1, 0), inventory(), a1)),
        ("sleep", True, {**state((2, 2), (-1, 0), inventory(health=7), a1,
                                 creatures=[{"kind": "zombie", "pos": [2, 3]}]),
                         "sleeping": True}),
        ("noop", None, {**state((2, 2), (-1, 0), inventory(health=7, food=8), a1),
                        "sleeping": True}),
        ("move_left", True, state((1, 2), (-1, 0), inventory(health=7, food=8, drink=8),
                                  {**a1, "wake_up": 1})),
    ]
    steps = [Step(step=i, action=a, success=ok, **fields)
             for i, (a, ok, fields) in enumerate(raw, 1)]
    return meta, steps


def short(initial: dict[str, Any], *after: tuple[str, dict[str, Any]],
          end: str = "step_cap") -> tuple[TrajectoryMeta, list[Step]]:
    """A few hand-made steps from a given state at reset: (action, state after) pairs."""
    meta = TrajectoryMeta(env="crafter", seed=0, player="scripted", steps=len(after),
                          end=end, initial=initial)  # type: ignore[arg-type]
    return meta, [Step(step=i, action=a, **fields) for i, (a, fields) in enumerate(after, 1)]


def grid(rows: list[str]) -> list[list[Any]]:
    """Seen cells from a picture: g grass, s sand, p path, w water, t tree, S stone,
    L lava, T table, F furnace, ? unseen."""
    names = {"g": "grass", "s": "sand", "p": "path", "w": "water", "t": "tree", "S": "stone",
             "L": "lava", "T": "table", "F": "furnace", "c": "coal", "i": "iron",
             "d": "diamond"}
    return [[x, y, names[ch]] for y, row in enumerate(rows) for x, ch in enumerate(row)
            if ch != "?"]


SIM_MATERIALS = ("grass", "grass", "grass", "sand", "path", "tree", "water", "stone", "lava")
SIM_ACTIONS = ("noop", "move_left", "move_right", "move_up", "move_down", "do", "sleep",
               "place_table", "place_stone", "make_wood_pickaxe")
MOVE = {"move_left": (-1, 0), "move_right": (1, 0), "move_up": (0, -1), "move_down": (0, 1)}


def simulate(seed: int, n: int, end: str = "step_cap",
             size: int = 9) -> tuple[TrajectoryMeta, list[Step]]:
    """A crude, seeded Crafter-like world (not Crafter): enough variety for property tests
    (moves that fail, wood, tables that fail and succeed, sleep, health drops, creatures, a
    map revealed in a radius of 2 as the player walks)."""
    import random

    rng = random.Random(seed)
    world = [[rng.choice(SIM_MATERIALS) for _ in range(size)] for _ in range(size)]
    pos = (size // 2, size // 2)
    world[pos[1]][pos[0]] = "grass"
    inv = inventory()
    ach: dict[str, int] = {}
    known: dict[tuple[int, int], str] = {}
    facing = (0, 1)
    sleeping = False

    def reveal() -> list[list[Any]]:
        out = []
        for y in range(max(0, pos[1] - 2), min(size, pos[1] + 3)):
            for x in range(max(0, pos[0] - 2), min(size, pos[0] + 3)):
                if known.get((x, y)) != world[y][x]:
                    known[(x, y)] = world[y][x]
                    out.append([x, y, world[y][x]])
        return out

    def snapshot(seen: list[list[Any]]) -> dict[str, Any]:
        view = [[world[y][x] for x in range(max(0, pos[0] - 2), min(size, pos[0] + 3))]
                for y in range(max(0, pos[1] - 2), min(size, pos[1] + 3))]
        creatures = ([{"kind": rng.choice(("cow", "zombie", "arrow")),
                       "pos": [pos[0] + rng.choice((-1, 1)), pos[1]]}]
                     if rng.random() < 0.2 else [])
        return {"pos": list(pos), "facing": list(facing), "inventory": dict(inv),
                "achievements": dict(ach), "sleeping": sleeping, "daylight": 1.0,
                "view": view, "creatures": creatures, "seen": seen}

    initial = snapshot(reveal())
    steps = []
    for t in range(1, n + 1):
        action = rng.choice(SIM_ACTIONS)
        if action in MOVE:
            facing = MOVE[action]
            x, y = pos[0] + facing[0], pos[1] + facing[1]
            if 0 <= x < size and 0 <= y < size and world[y][x] in ("grass", "sand", "path"):
                pos = (x, y)
        fx, fy = pos[0] + facing[0], pos[1] + facing[1]
        faced = world[fy][fx] if 0 <= fx < size and 0 <= fy < size else None
        if action == "do" and faced == "tree":
            inv["wood"] = min(9, inv["wood"] + 1)
            ach["collect_wood"] = ach.get("collect_wood", 0) + 1
        if action == "place_table" and inv["wood"] >= 2 and faced in ("grass", "sand", "path"):
            inv["wood"] -= 2
            world[fy][fx] = "table"
            ach["place_table"] = ach.get("place_table", 0) + 1
        if action == "sleep":
            sleeping = True
        elif sleeping and rng.random() < 0.3:
            sleeping = False
        for vital in ("health", "food", "drink", "energy"):
            if rng.random() < 0.1:
                inv[vital] = max(0, inv[vital] - 1)
        steps.append(Step(step=t, action=action, **snapshot(reveal())))
    meta = TrajectoryMeta(env="crafter", seed=seed, player="random", steps=n, end=end,
                          initial=initial)  # type: ignore[arg-type]
    return meta, steps
