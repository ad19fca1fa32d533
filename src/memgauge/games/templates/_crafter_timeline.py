"""A Crafter trajectory cut at the horizon, as per-step arrays, events and the map as the
player had discovered it (design 0032, "Crafter templates").

Index 0 of every state array is the state at reset (``meta.initial``); index t is the state
after the action at step t. So "before step t" is index t−1 — one rule, no off-by-one. The
timeline only holds the steps it was given (the generator cuts them at the horizon), so no
template can read a later step.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import InputError
from .._trajectory import Step, TrajectoryMeta
from ._base import NOT_ANSWERABLE, GameQuestion, all_templates

# Crafter 1.8.3's own vocabulary (crafter/data.yaml; a test checks these against it when
# crafter is installed). Confusables for unanswerable questions are drawn from here.
ACTIONS = ("noop", "move_left", "move_right", "move_up", "move_down", "do", "sleep",
           "place_stone", "place_table", "place_furnace", "place_plant", "make_wood_pickaxe",
           "make_stone_pickaxe", "make_iron_pickaxe", "make_wood_sword", "make_stone_sword",
           "make_iron_sword")
MOVES = {"move_left": (-1, 0), "move_right": (1, 0), "move_up": (0, -1), "move_down": (0, 1)}
MATERIALS = ("water", "grass", "stone", "path", "sand", "tree", "lava", "coal", "iron",
             "diamond", "table", "furnace")
VITALS = ("health", "food", "drink", "energy")
RESOURCES = ("sapling", "wood", "stone", "coal", "iron", "diamond")
TOOLS = ("wood_pickaxe", "stone_pickaxe", "iron_pickaxe", "wood_sword", "stone_sword",
         "iron_sword")
ITEMS = RESOURCES + TOOLS
CREATURES = ("cow", "zombie", "skeleton", "plant", "arrow")
ACHIEVEMENTS = ("collect_coal", "collect_diamond", "collect_drink", "collect_iron",
                "collect_sapling", "collect_stone", "collect_wood", "defeat_skeleton",
                "defeat_zombie", "eat_cow", "eat_plant", "make_iron_pickaxe", "make_iron_sword",
                "make_stone_pickaxe", "make_stone_sword", "make_wood_pickaxe", "make_wood_sword",
                "place_furnace", "place_plant", "place_stone", "place_table", "wake_up")
# Crafter's walkable materials. Lava is walkable in Crafter but kills: never planned through.
WALKABLE = frozenset({"grass", "sand", "path"})
# make_*: what it uses and which stations must be within one cell (Crafter's `nearby`, 3×3).
RECIPES: dict[str, tuple[dict[str, int], tuple[str, ...]]] = {
    "wood_pickaxe": ({"wood": 1}, ("table",)),
    "stone_pickaxe": ({"wood": 1, "stone": 1}, ("table",)),
    "iron_pickaxe": ({"wood": 1, "coal": 1, "iron": 1}, ("table", "furnace")),
    "wood_sword": ({"wood": 1}, ("table",)),
    "stone_sword": ({"wood": 1, "stone": 1}, ("table",)),
    "iron_sword": ({"wood": 1, "coal": 1, "iron": 1}, ("table", "furnace")),
}
# place_*: what it uses and which faced materials it may go on.
PLACEMENTS: dict[str, tuple[dict[str, int], tuple[str, ...]]] = {
    "stone": ({"stone": 1}, ("grass", "sand", "path", "water", "lava")),
    "table": ({"wood": 2}, ("grass", "sand", "path")),
    "furnace": ({"stone": 4}, ("grass", "sand", "path")),
    "plant": ({"sapling": 1}, ("grass",)),
}
# Named events (timeline.event_steps) and how a question says them.
EVENTS: dict[str, str] = {
    **{f"place:{w}": f"you placed a {w}" for w in ("table", "furnace", "stone")},
    "place:plant": "you planted a sapling",
    **{f"make:{t}": f"you made {'an' if t[0] == 'i' else 'a'} {t.replace('_', ' ')}"
       for t in TOOLS},
    **{f"collect:{r}": f"you collected {r}" for r in RESOURCES},
    "drink": "you drank water", "eat": "you ate", "sleep": "you fell asleep",
    "wake": "you woke up", "health_drop": "your health dropped",
}
MAX_PATHS = 50  # more equally short paths than this: the instance is skipped
MAP_CACHE = 128  # maps at a step kept at once

Cell = tuple[int, int]


@dataclass(frozen=True)
class HealthDrop:
    step: int
    amount: int
    causes: tuple[str, ...]  # zombie | arrow | lava | starvation | dehydration | exhaustion


class CrafterTimeline:
    """Per-step state and derived events of one Crafter trajectory, cut at the horizon."""

    def __init__(self, meta: TrajectoryMeta, steps: Sequence[Step]) -> None:
        if not steps:
            raise InputError("a Crafter timeline needs at least one step", field="steps")
        self.meta = meta
        self.last = len(steps)
        self.horizon: tuple[int, int] = (1, self.last)
        init = meta.initial or {}
        for name in ("pos", "inventory"):
            if init.get(name) is None:
                raise InputError("the state at reset has no Crafter field", file="meta.json",
                                 field=f"initial.{name}")
        self.actions: list[str] = [""] + [s.action for s in steps]  # index t = step t
        self.success: list[bool | None] = [None] + [s.success for s in steps]
        states: list[dict[str, Any]] = [init] + [s.model_dump() for s in steps]
        for t, state in enumerate(states[1:], 1):
            for name in ("pos", "inventory"):
                if state.get(name) is None:
                    raise InputError("a Crafter step needs this field", file="trajectory.jsonl",
                                     item=f"step {t}", field=name)
        self.pos: list[Cell] = [(int(s["pos"][0]), int(s["pos"][1])) for s in states]
        facing = [s.get("facing") or (0, 1) for s in states]  # Crafter starts facing down
        self.facing: list[Cell] = [(int(f[0]), int(f[1])) for f in facing]
        self.inventory: list[dict[str, int]] = [dict(s["inventory"]) for s in states]
        self.achievements: list[dict[str, int]] = [dict(s.get("achievements") or {})
                                                   for s in states]
        self.sleeping: list[bool] = [bool(s.get("sleeping")) for s in states]
        self.daylight: list[float | None] = [s.get("daylight") for s in states]
        self.view: list[list[list[str]]] = [s.get("view") or [] for s in states]
        self.creatures: list[list[dict[str, Any]]] = [s.get("creatures") or [] for s in states]
        self.observation: list[str] = [s.get("observation") or "" for s in states]
        self._seen: list[list[tuple[int, int, str]]] = [
            [(int(c[0]), int(c[1]), str(c[2])) for c in (s.get("seen") or [])] for s in states]
        self._maps: dict[int, dict[Cell, str]] = {}
        self._history: dict[Cell, tuple[list[int], list[str]]] = {}  # steps, materials
        for t, seen in enumerate(self._seen):
            for x, y, material in seen:
                steps_, materials = self._history.setdefault((x, y), ([], []))
                steps_.append(t)
                materials.append(material)
        self._events: dict[str, list[int]] = {}
        self.died = (meta.end == "death" and self.last == meta.steps)

    # -- steps and questions -----------------------------------------------------------

    def steps_range(self) -> range:
        return range(1, self.last + 1)

    def question(self, template_id: str, *, params: dict[str, Any], answer: Any, text: str,
                 evidence_steps: Iterable[int] = (), alternatives: Sequence[Any] = (),
                 tolerance: float | None = None) -> GameQuestion:
        """A question of a registered template; ``answer`` NOT_ANSWERABLE makes it
        unanswerable. Evidence outside the horizon is a bug, so it raises."""
        spec = all_templates()[template_id]
        evidence = sorted(set(evidence_steps))
        if evidence and (evidence[0] < 0 or evidence[-1] > self.last):
            raise ValueError(f"{template_id}: evidence {evidence} outside 0..{self.last}")
        return GameQuestion(template=template_id, params=dict(params), ability=spec.ability,
                            answer_type=spec.answer_type, answer=answer,
                            evidence_steps=[t for t in evidence if t >= 1],
                            horizon=self.horizon, text=text,
                            answerable=answer != NOT_ANSWERABLE,
                            alternatives=list(alternatives), tolerance=tolerance)

    # -- state ---------------------------------------------------------------------------

    def observation_before(self, t: int) -> str:
        """What the player was shown when choosing the action at step t: step t−1's
        observation, or the one at reset for t = 1."""
        return self.observation[t - 1]

    def count(self, item: str, t: int) -> int:
        """The count of an item (or vital) after the action at step t (t = 0: at reset)."""
        return int(self.inventory[t].get(item, 0))

    def delta(self, item: str, t: int) -> int:
        return self.count(item, t) - self.count(item, t - 1)

    def increases(self, item: str) -> list[int]:
        return [t for t in self.steps_range() if self.delta(item, t) > 0]

    def decreases(self, item: str) -> list[int]:
        return [t for t in self.steps_range() if self.delta(item, t) < 0]

    def items_held(self) -> list[str]:
        """Items (not vitals) held at some point within the horizon, reset included."""
        return [i for i in ITEMS if any(self.count(i, t) > 0 for t in range(self.last + 1))]

    def achievement_steps(self, name: str) -> list[int]:
        """Steps at which the achievement's counter rose (each time it happened)."""
        return [t for t in self.steps_range()
                if self.achievements[t].get(name, 0) > self.achievements[t - 1].get(name, 0)]

    def placements(self, what: str) -> list[int]:
        """Steps at which a ``place_<what>`` really put it down (the counter rose, not the
        attempt)."""
        return [t for t in self.achievement_steps(f"place_{what}")
                if self.actions[t] == f"place_{what}"]

    def crafts(self, tool: str) -> list[int]:
        return [t for t in self.steps_range()
                if self.actions[t] == f"make_{tool}" and self.delta(tool, t) > 0]

    def action_steps(self, action: str) -> list[int]:
        return [t for t in self.steps_range() if self.actions[t] == action]

    def moved_steps(self) -> list[int]:
        return [t for t in self.steps_range() if self.pos[t] != self.pos[t - 1]]

    def sleep_starts(self) -> list[int]:
        return [t for t in self.steps_range() if self.sleeping[t] and not self.sleeping[t - 1]]

    def wake_steps(self) -> list[int]:
        return [t for t in self.steps_range() if self.sleeping[t - 1] and not self.sleeping[t]]

    def drink_steps(self) -> list[int]:
        return self.achievement_steps("collect_drink")

    def eat_steps(self) -> list[int]:
        return sorted(set(self.achievement_steps("eat_cow")) |
                      set(self.achievement_steps("eat_plant")))

    def health_drops(self) -> list[HealthDrop]:
        drops = []
        for t in self.steps_range():
            amount = self.count("health", t - 1) - self.count("health", t)
            if amount > 0:
                drops.append(HealthDrop(t, amount, self._drop_causes(t)))
        return drops

    def _drop_causes(self, t: int) -> tuple[str, ...]:
        causes: list[str] = []
        here = self.pos[t]
        # A zombie hits from next to the player after its move; an arrow hits from where it
        # was before the step, next to where the player was or has just moved to.
        for state in (t - 1, t):
            for c in self.creatures[state]:
                where = {self.pos[t - 1], here} if state == t - 1 else {here}
                near = any(_manhattan((c["pos"][0], c["pos"][1]), p) <= 1 for p in where)
                if near and c.get("kind") in ("zombie", "arrow") and c["kind"] not in causes:
                    causes.append(c["kind"])
        if self.material_at(here, t) == "lava":
            causes.append("lava")
        for vital, cause in (("food", "starvation"), ("drink", "dehydration"),
                             ("energy", "exhaustion")):
            if self.count(vital, t - 1) == 0 or self.count(vital, t) == 0:
                causes.append(cause)
        return tuple(causes)

    def event_steps(self, event: str) -> list[int]:
        """Steps at which a named event (a key of EVENTS) happened, in order."""
        if event not in self._events:
            self._events[event] = self._event_steps(event)
        return self._events[event]

    def _event_steps(self, event: str) -> list[int]:
        kind, _, what = event.partition(":")
        if kind == "place":
            return self.placements(what)
        if kind == "make":
            return self.crafts(what)
        if kind == "collect":
            return self.achievement_steps(f"collect_{what}")
        return {"drink": self.drink_steps, "eat": self.eat_steps,
                "sleep": self.sleep_starts, "wake": self.wake_steps,
                "health_drop": lambda: [d.step for d in self.health_drops()]}[kind]()

    def death_step(self) -> int | None:
        """The last step, only when the player died there (never a phantom anchor)."""
        return self.last if self.died else None

    # -- what was seen -------------------------------------------------------------------

    def map_at(self, t: int) -> dict[Cell, str]:
        """The map as discovered by step t: initial.seen and every step's seen up to t."""
        if t not in self._maps:
            known: dict[Cell, str] = {}
            for cells in self._seen[:t + 1]:
                for x, y, material in cells:
                    known[(x, y)] = material
            if len(self._maps) >= MAP_CACHE:  # bounded: a long game holds many maps
                self._maps.pop(next(iter(self._maps)))
            self._maps[t] = known
        return self._maps[t]

    def cells_over_time(self, material: str) -> Iterator[tuple[int, set[Cell]]]:
        """(t, the known cells of the material at t) for t = 1..last, folded once."""
        known: dict[Cell, str] = {}
        cells: set[Cell] = set()
        for t, seen in enumerate(self._seen):
            for x, y, m in seen:
                known[(x, y)] = m
                if m == material:
                    cells.add((x, y))
                else:
                    cells.discard((x, y))
            if t:
                yield t, cells

    def seen_step(self, cell: Cell, t: int) -> int | None:
        """The last step up to t (0: at reset) whose seen cells set this cell."""
        steps_, _ = self._history.get(cell, ([], []))
        i = bisect_right(steps_, t)
        return steps_[i - 1] if i else None

    def evidence_for(self, cells: Iterable[Cell], t: int) -> list[int]:
        """Step t and the steps that showed these cells as known at t."""
        found = {self.seen_step(c, t) for c in cells}
        return sorted({t} | {k for k in found if k})

    def material_at(self, cell: Cell, t: int) -> str | None:
        """The cell's material as last seen by step t; None if not seen by then."""
        steps_, materials = self._history.get(cell, ([], []))
        i = bisect_right(steps_, t)
        return materials[i - 1] if i else None

    def under(self, t: int) -> str | None:
        return self.material_at(self.pos[t], t)

    def seen_at(self, t: int) -> list[tuple[int, int, str]]:
        """The cells first seen or changed at step t (0: at reset)."""
        return self._seen[t]

    def first_seen(self, material: str) -> int | None:
        """The first step (0: at reset) whose seen cells include the material."""
        for t, cells in enumerate(self._seen):
            if any(m == material for _, _, m in cells):
                return t
        return None

    def in_view(self, material: str, t: int) -> bool:
        return any(material in row for row in self.view[t])

    def creature_first_seen(self, kind: str) -> int | None:
        for t in range(self.last + 1):
            if any(c.get("kind") == kind for c in self.creatures[t]):
                return t
        return None

    def cells_of(self, material: str, t: int) -> list[Cell]:
        return [c for c, m in self.map_at(t).items() if m == material]

    def nearest(self, material: str, t: int) -> tuple[int, list[Cell]] | None:
        """The Manhattan distance from the position at t to the nearest known cell of the
        material, and every cell at that distance; None if none was known by t."""
        cells = self.cells_of(material, t)
        if not cells:
            return None
        best = min(_manhattan(c, self.pos[t]) for c in cells)
        return best, sorted(c for c in cells if _manhattan(c, self.pos[t]) == best)

    def route_length(self, material: str, t: int) -> int | None:
        """Moves on the shortest route at t (see shortest_paths); None: no known route."""
        found = self._bfs(material, t)
        return None if found is None else found[0]

    def shortest_paths(self, material: str, t: int) -> list[list[str]] | None:
        """Every shortest move sequence from the position at t, over cells known walkable at
        t, to a cell of the material (walkable ones) or next to one (others). [] when already
        there; None when there is no known route or more than MAX_PATHS tie."""
        found = self._bfs(material, t)
        if found is None:
            return None
        _, parents, ends = found
        start = self.pos[t]
        counts: dict[Cell, int] = {start: 1}
        for cell in parents:  # insertion order is BFS order: parents come first
            if cell != start:
                counts[cell] = sum(counts[p] for p, _ in parents[cell])
        if sum(counts[e] for e in ends) > MAX_PATHS:
            return None

        def walk(cell: Cell) -> list[list[str]]:
            if cell == start:
                return [[]]
            return [path + [a] for p, a in parents[cell] for path in walk(p)]

        return sorted(path for e in ends for path in walk(e))

    def _bfs(self, material: str, t: int
             ) -> tuple[int, dict[Cell, list[tuple[Cell, str]]], list[Cell]] | None:
        known = self.map_at(t)
        targets = set(self.cells_of(material, t))

        def goal(cell: Cell) -> bool:
            if material in WALKABLE:
                return cell in targets
            return any((cell[0] + dx, cell[1] + dy) in targets for dx, dy in MOVES.values())

        start = self.pos[t]
        if not targets:
            return None
        if goal(start):
            return 0, {start: []}, [start]
        dist = {start: 0}
        parents: dict[Cell, list[tuple[Cell, str]]] = {start: []}
        queue: deque[Cell] = deque([start])
        found: int | None = None
        while queue:
            cell = queue.popleft()
            if found is not None and dist[cell] >= found:
                break
            for action, (dx, dy) in MOVES.items():
                nxt = (cell[0] + dx, cell[1] + dy)
                if known.get(nxt) not in WALKABLE:
                    continue
                if nxt not in dist:
                    dist[nxt] = dist[cell] + 1
                    parents[nxt] = []
                    queue.append(nxt)
                    if goal(nxt):
                        found = dist[nxt]
                if dist[nxt] == dist[cell] + 1:
                    parents[nxt].append((cell, action))
        if found is None:
            return None
        return found, parents, [c for c, d in dist.items() if d == found and goal(c)]


def _manhattan(a: Cell, b: Cell) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def direction_words(dx: int, dy: int) -> str:
    """An offset as words: "up", "left", "up-left" (vertical first); "here" at (0, 0)."""
    vertical = "up" if dy < 0 else "down" if dy > 0 else ""
    horizontal = "left" if dx < 0 else "right" if dx > 0 else ""
    return "-".join(w for w in (vertical, horizontal) if w) or "here"


def displacement_words(dx: int, dy: int) -> str:
    """An offset as moves: "3 steps right and 2 steps up"; "0 steps" when back at start."""
    parts = []
    if dx:
        parts.append(f"{abs(dx)} step{'s' if abs(dx) != 1 else ''} "
                     f"{'right' if dx > 0 else 'left'}")
    if dy:
        parts.append(f"{abs(dy)} step{'s' if abs(dy) != 1 else ''} {'down' if dy > 0 else 'up'}")
    return " and ".join(parts) or "0 steps"
