"""Scripted players: a competent heuristic per game, picked by env name.

``SCRIPTED`` maps an env name to its player class; a game adds its own with one line
(the text games add their walkthrough player). Each class is built as
``cls(seed=..., noise=...)`` and plays from the observation alone (the state fields the
player is shown), deterministically for a seed; with ``noise`` ε it takes a uniformly random
legal action on a fraction ε of the steps, drawn from the same seeded generator.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from ...errors import ConfigError
from ._base import Decision, Observation
from .walkthrough import WalkthroughPlayer

WALKABLE = frozenset({"grass", "sand", "path"})  # Crafter's walkable list, lava left out
MOVES = {(-1, 0): "move_left", (1, 0): "move_right", (0, -1): "move_up", (0, 1): "move_down"}
LOW = 4  # a vital at or under this is seen to (Crafter's vitals run 0..9)
FULL = 8
THREATS = ("zombie", "skeleton", "arrow")


class CrafterScripted:
    """Wood → table → wood pickaxe → wood sword → stone → stone pickaxe, then stone and
    coal; drinks, eats cows and sleeps when low; fights adjacent zombies; explores in
    straight runs when nothing it wants is in view. Reads only ``view``, ``creatures``,
    ``inventory``, ``pos``, ``facing`` and ``sleeping`` from the observation."""

    name = "scripted"

    def __init__(self, seed: int = 0, noise: float = 0.0) -> None:
        try:
            from crafter import constants
        except ImportError:
            raise ConfigError('the crafter scripted player needs the games extra: '
                              'pip install "memgauge[games]"') from None
        # crafter.constants fills its tables from data.yaml at import: no static attributes
        place: Any = constants.place  # pyright: ignore[reportAttributeAccessIssue]
        self._table_wood = int(place["table"]["uses"]["wood"])
        self._furnace_stone = int(place["furnace"]["uses"]["stone"])
        self._rng = random.Random(seed)
        self.noise = noise
        self._heading = (0, -1)
        self._last: tuple[str, list[int] | None] = ("noop", None)
        self._thirsty = self._hungry = False
        self._plan: list[tuple[str, list[int] | None]] = []  # (action, pos it expects first)
        self._water: set[tuple[int, int]] = set()  # water cells seen so far (world cells)
        self._cows: set[tuple[int, int]] = set()  # where cows were last seen

    async def act(self, observation: Observation) -> Decision:
        state = observation.state
        legal = observation.legal or list(MOVES.values())
        if self.noise and self._rng.random() < self.noise:
            action = self._rng.choice(legal)
        else:
            action = self._choose(state)
        self._last = (action, state.get("pos"))
        return Decision(action=action)

    # -- the heuristic -------------------------------------------------------------------

    def _choose(self, state: dict[str, Any]) -> str:
        """The first rule of the priority list that has something to do: defend, follow the
        plan, rest, drink and eat, make tools and gather; else explore."""
        if state.get("sleeping"):
            return "noop"  # Crafter keeps a sleeper asleep until rested, whatever is sent
        grid = _Grid(state)
        self._water |= grid.world_cells("water")
        self._remember_cows(grid)
        inv = state["inventory"]
        threats = [c for kind in THREATS for c in grid.creature_cells(kind)]
        return (self._defend(grid, inv, threats)
                or self._follow_plan(grid)
                or self._rest(grid, inv, threats)
                or self._drink_and_eat(grid, inv)
                or self._make_and_gather(grid, inv)
                or self._explore(grid))

    def _defend(self, grid: _Grid, inv: dict[str, int], threats: list[Any]) -> str | None:
        """Hit a zombie next to it; with little health, retreat from what threatens it."""
        zombie = grid.adjacent_creature("zombie")
        if zombie is not None:
            return self._face_and(grid, zombie, "do")
        if threats and inv["health"] <= LOW + 1:
            return self._retreat(grid, threats)
        return None

    def _follow_plan(self, grid: _Grid) -> str | None:
        if self._plan:
            action, expected = self._plan.pop(0)
            if expected is None or expected == grid.pos:
                return action
            self._plan = []  # something moved it off the plan: think again
        return None

    def _rest(self, grid: _Grid, inv: dict[str, int], threats: list[Any]) -> str | None:
        """Tired: burrow in (with a pickaxe), then sleep when nothing threatens."""
        if inv["energy"] <= LOW - 1 and inv["wood_pickaxe"] and (act := self._burrow(grid)):
            return act
        if inv["energy"] <= LOW - 2 and not threats:
            return "sleep"
        return None

    def _drink_and_eat(self, grid: _Grid, inv: dict[str, int]) -> str | None:
        """Thirst and hunger last until nearly full; a drink or a cow close by is taken
        before it is needed; very low on either, explore for them before anything else."""
        self._thirsty = (inv["drink"] <= LOW or self._thirsty) and inv["drink"] < FULL + 1
        self._hungry = (inv["food"] <= LOW or self._hungry) and inv["food"] < FULL
        if self._thirsty and (act := self._collect(grid, grid.material_cells("water"))
                              or self._head_for(grid, self._water)):
            return act
        if self._hungry and (act := self._collect(grid, grid.creature_cells("cow"))
                             or self._head_for(grid, self._cows)):
            return act
        near_water = [c for c in grid.material_cells("water") if grid.distance(c) <= 3]
        if inv["drink"] <= FULL - 1 and (act := self._collect(grid, near_water)):
            return act
        near_cows = [c for c in grid.creature_cells("cow") if grid.distance(c) <= 4]
        if inv["food"] <= FULL - 2 and (act := self._collect(grid, near_cows)):
            return act
        if inv["drink"] <= 2 or inv["food"] <= 2:
            return self._explore(grid)
        return None

    def _make_and_gather(self, grid: _Grid, inv: dict[str, int]) -> str | None:
        """The next missing tool (wood pickaxe, wood sword, stone pickaxe); with all three,
        a furnace, then coal, stone and wood."""
        for tool, needs in (("wood_pickaxe", {"wood": 1}), ("wood_sword", {"wood": 1}),
                            ("stone_pickaxe", {"wood": 1, "stone": 1})):
            if inv[tool] == 0:
                return self._make(grid, inv, tool, needs)
        if inv["stone"] >= self._furnace_stone and not grid.material_cells("furnace"):
            act = self._place(grid, "place_furnace")
            if act:
                return act
        # mining draws it into tunnels, where skeletons shoot: a few stones, then coal
        wanted = [m for m, enough in (("coal", 9), ("stone", 5), ("tree", 5))
                  if inv["wood" if m == "tree" else m] < enough]
        for material in wanted:
            if act := self._collect(grid, grid.material_cells(material)):
                return act
        return None

    def _make(self, grid: _Grid, inv: dict[str, int], tool: str,
              needs: dict[str, int]) -> str | None:
        """Gather what the tool needs, be next to a table (placing one if none is in view),
        then make it."""
        for item in ("stone", "wood"):
            if inv[item] < needs.get(item, 0):
                source = "tree" if item == "wood" else "stone"
                return self._collect(grid, grid.material_cells(source))
        if grid.near("table"):
            return f"make_{tool}"
        tables = grid.material_cells("table")
        if tables and (act := self._go_next_to(grid, tables)):
            return act
        if inv["wood"] >= self._table_wood + needs.get("wood", 0):
            return self._place(grid, "place_table")
        return self._collect(grid, grid.material_cells("tree"))

    def _place(self, grid: _Grid, action: str) -> str | None:
        if grid.placeable(grid.faced()):
            return action
        for step, move in MOVES.items():  # walk on; the cell beyond may take it
            if grid.walkable(grid.offset(step)):
                return move
        return None

    def _collect(self, grid: _Grid, targets: list[tuple[int, int]]) -> str | None:
        if not targets:
            return None
        for target in targets:
            if grid.is_adjacent(target):
                return self._face_and(grid, target, "do")
        return self._go_next_to(grid, targets)

    def _face_and(self, grid: _Grid, target: tuple[int, int], action: str) -> str:
        direction = (target[0] - grid.center[0], target[1] - grid.center[1])
        if direction == grid.facing:
            return action
        return MOVES[direction]  # the target blocks the way, so the move only turns

    def _go_next_to(self, grid: _Grid, targets: list[tuple[int, int]]) -> str | None:
        step = grid.first_step_towards(targets)
        return MOVES[step] if step else None

    def _burrow(self, grid: _Grid) -> str | None:
        """Sleep sealed in: a zombie hits a sleeper for 7. Find two stone cells in a row with
        nothing walkable beside them or beyond; mine both, walk in, step back and wall the
        entrance with the stone mined; then sleep. Plans from the cell the player stands on,
        or walks to the nearest one such a site starts from."""
        sites = grid.burrow_sites()
        if not sites:
            return None
        here = [d for cell, d in sites if cell == grid.center]
        if here:
            d = here[0]
            x, y = grid.pos
            inside = [x + d[0], y + d[1]]
            back = (-d[0], -d[1])
            self._plan = [("do", [x, y]), (MOVES[d], [x, y]), ("do", inside),
                          (MOVES[d], inside), (MOVES[back], [inside[0] + d[0], inside[1] + d[1]]),
                          ("place_stone", inside), ("sleep", inside)]
            return MOVES[d] if grid.facing != d else self._plan.pop(0)[0]
        step = grid.first_step_to({cell for cell, _ in sites})
        return MOVES[step] if step else None

    def _retreat(self, grid: _Grid, threats: list[tuple[int, int]]) -> str | None:
        """The walkable step that most increases the distance to the nearest threat."""
        def nearest(cell: tuple[int, int]) -> int:
            return min(abs(cell[0] - t[0]) + abs(cell[1] - t[1]) for t in threats)

        here = nearest(grid.center)
        options = sorted((nearest(grid.offset(d)), -i, d) for i, d in enumerate(MOVES)
                         if grid.walkable(grid.offset(d)))
        if options and options[-1][0] > here:
            self._heading = options[-1][2]
            return MOVES[options[-1][2]]
        return None

    def _remember_cows(self, grid: _Grid) -> None:
        """Cows wander: keep the ones in view now, forget remembered spots now in view."""
        ox, oy = grid.pos[0] - grid.center[0], grid.pos[1] - grid.center[1]
        in_view = {(x + ox, y + oy) for y in range(grid.height) for x in range(grid.width)}
        self._cows -= in_view
        self._cows |= {(x + ox, y + oy) for x, y in grid.creature_cells("cow")}

    def _head_for(self, grid: _Grid, cells: set[tuple[int, int]]) -> str | None:
        """A step towards the nearest remembered cell, along the longer axis first."""
        if not cells:
            return None
        px, py = grid.pos
        tx, ty = min(cells, key=lambda c: (abs(c[0] - px) + abs(c[1] - py), c[1], c[0]))
        dx, dy = tx - px, ty - py
        axes = [((1 if dx > 0 else -1), 0)] if dx else []
        axes += [(0, (1 if dy > 0 else -1))] if dy else []
        if abs(dy) > abs(dx):
            axes.reverse()
        for d in axes:
            if grid.walkable(grid.offset(d)):
                self._heading = d
                return MOVES[d]
        return None

    def _explore(self, grid: _Grid) -> str:
        last_action, last_pos = self._last
        blocked = last_action.startswith("move_") and last_pos == grid.pos
        if blocked or not grid.walkable(grid.offset(self._heading)) or self._rng.random() < 0.05:
            options = [d for d in MOVES if grid.walkable(grid.offset(d))]
            self._heading = self._rng.choice(options or list(MOVES))
        return MOVES[self._heading]


class _Grid:
    """The 9×7 local view as a grid around the player, creatures placed on it."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.view: list[list[str]] = state["view"]
        self.height, self.width = len(self.view), len(self.view[0])
        self.center = (self.width // 2, self.height // 2)
        self.pos = state["pos"]
        self.facing = tuple(state["facing"])
        self.creatures: dict[tuple[int, int], str] = {}
        for creature in state.get("creatures") or []:
            x = creature["pos"][0] - self.pos[0] + self.center[0]
            y = creature["pos"][1] - self.pos[1] + self.center[1]
            self.creatures[(x, y)] = creature["kind"]

    def inside(self, cell: tuple[int, int]) -> bool:
        return 0 <= cell[0] < self.width and 0 <= cell[1] < self.height

    def material(self, cell: tuple[int, int]) -> str:
        return self.view[cell[1]][cell[0]] if self.inside(cell) else "outside"

    def offset(self, d: tuple[int, int]) -> tuple[int, int]:
        return (self.center[0] + d[0], self.center[1] + d[1])

    def faced(self) -> tuple[int, int]:
        return self.offset(self.facing)  # type: ignore[arg-type]

    def walkable(self, cell: tuple[int, int]) -> bool:
        return self.material(cell) in WALKABLE and cell not in self.creatures

    def placeable(self, cell: tuple[int, int]) -> bool:
        return self.walkable(cell)  # Crafter places tables and furnaces on grass/sand/path

    def is_adjacent(self, cell: tuple[int, int]) -> bool:
        return abs(cell[0] - self.center[0]) + abs(cell[1] - self.center[1]) == 1

    def near(self, material: str) -> bool:
        """In the 3×3 around the player: where Crafter looks for a table when making."""
        cx, cy = self.center
        return any(self.material((cx + dx, cy + dy)) == material
                   for dx in (-1, 0, 1) for dy in (-1, 0, 1))

    def material_cells(self, material: str) -> list[tuple[int, int]]:
        cells = [(x, y) for y in range(self.height) for x in range(self.width)
                 if self.view[y][x] == material and (x, y) not in self.creatures]
        return sorted(cells, key=self._distance)

    def world_cells(self, material: str) -> set[tuple[int, int]]:
        ox, oy = self.pos[0] - self.center[0], self.pos[1] - self.center[1]
        return {(x + ox, y + oy) for x, y in self.material_cells(material)}

    def creature_cells(self, kind: str) -> list[tuple[int, int]]:
        return sorted((c for c, k in self.creatures.items() if k == kind), key=self._distance)

    def adjacent_creature(self, kind: str) -> tuple[int, int] | None:
        return next((c for c in self.creature_cells(kind) if self.is_adjacent(c)), None)

    def distance(self, cell: tuple[int, int]) -> int:
        return abs(cell[0] - self.center[0]) + abs(cell[1] - self.center[1])

    def _distance(self, cell: tuple[int, int]) -> tuple[int, int, int]:
        return (abs(cell[0] - self.center[0]) + abs(cell[1] - self.center[1]), cell[1], cell[0])

    def burrow_sites(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """(cell to stand on, direction): two stone cells ahead, nothing walkable beside
        either of them or beyond the second, no creature near."""
        def blocked(cell: tuple[int, int]) -> bool:
            return (self.inside(cell) and self.material(cell) not in WALKABLE
                    and self.material(cell) != "lava" and cell not in self.creatures)

        sites = []
        for y in range(self.height):
            for x in range(self.width):
                if not self.walkable((x, y)):
                    continue
                for d in MOVES:
                    first, second = (x + d[0], y + d[1]), (x + 2 * d[0], y + 2 * d[1])
                    beyond = (x + 3 * d[0], y + 3 * d[1])
                    side = (d[1], d[0])
                    walls = [beyond] + [(c[0] + k * side[0], c[1] + k * side[1])
                                        for c in (first, second) for k in (-1, 1)]
                    if (self.material(first) == self.material(second) == "stone"
                            and all(blocked(w) for w in walls)):
                        sites.append(((x, y), d))
        return sorted(sites, key=lambda site: (self._distance(site[0]), site[1]))

    def first_step_to(self, cells: set[tuple[int, int]]) -> tuple[int, int] | None:
        """The first move of a shortest walk (within the view) onto one of ``cells``."""
        start = self.center
        first: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
        queue = deque([start])
        while queue:
            cell = queue.popleft()
            if cell in cells and cell != start:
                return first[cell]
            for d in MOVES:
                nxt = (cell[0] + d[0], cell[1] + d[1])
                if nxt not in first and self.walkable(nxt):
                    first[nxt] = first[cell] or d
                    queue.append(nxt)
        return None

    def first_step_towards(self, targets: list[tuple[int, int]]) -> tuple[int, int] | None:
        """The first move of a shortest walk (within the view) to a cell next to a target."""
        return self.first_step_to({(t[0] + d[0], t[1] + d[1]) for t in targets for d in MOVES})


# The scripted player of each game, by env name; a game adds its own line.
SCRIPTED: dict[str, type] = {"crafter": CrafterScripted, "textworld": WalkthroughPlayer,
                             "jericho": WalkthroughPlayer}


def scripted_player(env_name: str, *, seed: int = 0, noise: float = 0.0) -> Any:
    if env_name not in SCRIPTED:
        raise ConfigError(f"there is no scripted player for {env_name!r} (there is one for "
                          f"{', '.join(sorted(SCRIPTED))})")
    if not 0.0 <= noise <= 1.0:
        raise ConfigError(f"--noise {noise:g}: give a fraction of steps in [0, 1]")
    return SCRIPTED[env_name](seed=seed, noise=noise)
