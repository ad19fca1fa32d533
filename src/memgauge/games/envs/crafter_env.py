"""Crafter behind the ``GameEnv`` contract (design 0032, "Crafter fields").

Every state field is read from Crafter's own objects after the action: the player
(``env._player``) and the world (``env._world``). Material names come from the world's own
id table (``_world._mat_names``, id 0 = none, then ``constants.materials`` in order), so no
id is ever decoded by hand. The local view uses Crafter's own ``LocalView`` geometry (its
grid and offset), so ``view`` holds exactly the cells the frame shows.
"""

from __future__ import annotations

import io
from typing import Any

from ...errors import ConfigError

INSTALL_HINT = 'pip install "memgauge[games]"'
DEFAULT_FRAME_SIZE = 64
VITALS = ("health", "food", "drink", "energy")
OUTSIDE = "outside"  # a view cell beyond the world's edge (Crafter draws it grey)
OPTIONS = ("frame_size",)


def _import_crafter() -> Any:
    try:
        import crafter
    except ImportError:
        raise ConfigError(f"the crafter game needs the games extra: {INSTALL_HINT}") from None
    return crafter


def open_crafter(seed: int = 0, options: dict[str, Any] | None = None) -> CrafterEnv:
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"crafter takes no option {', '.join(unknown)} "
                          f"(it takes {', '.join(OPTIONS)})")
    size = options.get("frame_size", DEFAULT_FRAME_SIZE)
    try:
        size = int(size)
    except (TypeError, ValueError):
        raise ConfigError(f"--frame-size {size!r}: give a whole number of pixels") from None
    if not 9 <= size <= 2048:
        raise ConfigError(f"--frame-size {size}: give 9 to 2048 pixels (Crafter draws a 9-cell "
                          "wide view)")
    return CrafterEnv(seed=int(seed), frame_size=size)


def _make_reproducible(env: Any) -> None:
    """Crafter 1.8.3 despawns "a random creature" of a chunk by index into a *set* of
    objects, whose order follows memory addresses: the same seed and actions then diverge
    after step 10 (measured: 4 of 4 seeds, design 0032). Handing it the chunk's creatures
    sorted by position (one object per cell) makes a seed and an action list replay
    exactly; the random draws themselves are Crafter's own."""
    balance = env._balance_chunk

    def balance_in_order(chunk: Any, objs: Any) -> Any:
        return balance(chunk, sorted(objs, key=lambda o: (int(o.pos[0]), int(o.pos[1]))))

    env._balance_chunk = balance_in_order


class CrafterEnv:
    name = "crafter"
    kind = "crafter"

    def __init__(self, seed: int, frame_size: int = DEFAULT_FRAME_SIZE) -> None:
        crafter = _import_crafter()
        self._constants = crafter.constants
        self.seed = seed
        self.frame_size = frame_size
        self.env = crafter.Env(seed=seed, size=(frame_size, frame_size))
        _make_reproducible(self.env)
        self._frame: Any = None
        self._known: dict[tuple[int, int], str] = {}  # cell -> material as last seen

    # -- GameEnv -------------------------------------------------------------------------

    def reset(self) -> dict[str, Any]:
        self._frame = self.env.reset()
        self._known = {}
        return self._state()

    def step(self, action: str) -> dict[str, Any]:
        actions = self._constants.actions
        if action not in actions:
            raise ConfigError(f"crafter has no action {action!r}; it has {', '.join(actions)}")
        before = self._snapshot()
        self._frame, reward, done, _info = self.env.step(actions.index(action))
        fields = self._state()
        fields["success"] = self._succeeded(action, before)
        fields["reward"] = float(reward)
        dead = self.env._player.health <= 0
        fields["done"] = bool(done)
        if done:
            fields["end"] = "death" if dead else "game_over"  # game_over: Crafter's length
        return fields

    def legal_actions(self) -> list[str]:
        return list(self._constants.actions)

    def frame_png(self) -> bytes | None:
        if self._frame is None:
            return None
        from PIL import Image

        buffer = io.BytesIO()
        # level 1: the frames are tiny and many; a higher level costs time for a few bytes
        Image.fromarray(self._frame).save(buffer, format="PNG", compress_level=1)
        return buffer.getvalue()

    def info(self) -> dict[str, Any]:
        import importlib.metadata

        return {"env_version": importlib.metadata.version("crafter"),
                "game": {"area": list(self.env._area), "view": [int(v) for v in self.env._view],
                         "length": self.env._length},
                "frame_size": [self.frame_size, self.frame_size]}

    def close(self) -> None:
        self._frame = None

    # -- state ---------------------------------------------------------------------------

    def view_cells(self) -> list[list[tuple[int, int]]]:
        """The world cells of the local view, rows top to bottom, as Crafter's LocalView
        places them: cell (x, y) of the grid shows ``pos + (x, y) - grid // 2``."""
        local = self.env._local_view
        width, height = (int(v) for v in local._grid)
        off_x, off_y = (int(v) for v in local._offset)
        px, py = (int(v) for v in self.env._player.pos)
        return [[(px + x - off_x, py + y - off_y) for x in range(width)] for y in range(height)]

    def material(self, cell: tuple[int, int]) -> str:
        world = self.env._world
        x, y = cell
        if not (0 <= x < world.area[0] and 0 <= y < world.area[1]):
            return OUTSIDE
        return str(world[cell][0])

    def _state(self) -> dict[str, Any]:
        player, world = self.env._player, self.env._world
        cells = self.view_cells()
        view = [[self.material(c) for c in row] for row in cells]
        in_view = {c for row in cells for c in row}
        creatures = sorted(
            ({"kind": type(obj).__name__.lower(), "pos": [int(obj.pos[0]), int(obj.pos[1])]}
             for obj in world.objects
             if obj is not player and (int(obj.pos[0]), int(obj.pos[1])) in in_view),
            key=lambda c: (c["pos"][1], c["pos"][0], c["kind"]))
        seen = []
        for row, names in zip(cells, view, strict=True):
            for cell, name in zip(row, names, strict=True):
                if name != OUTSIDE and self._known.get(cell) != name:
                    self._known[cell] = name
                    seen.append([cell[0], cell[1], name])
        state = {
            "pos": [int(player.pos[0]), int(player.pos[1])],
            "facing": [int(player.facing[0]), int(player.facing[1])],
            "inventory": {k: int(v) for k, v in player.inventory.items()},
            "achievements": {k: int(v) for k, v in player.achievements.items()},
            "daylight": round(float(world.daylight), 4),
            "sleeping": bool(player.sleeping),
            "view": view,
            "creatures": creatures,
            "seen": seen,
        }
        state["observation"] = hud_text(state)
        return state

    def _faced(self) -> tuple[int, int]:
        player = self.env._player
        return (int(player.pos[0] + player.facing[0]), int(player.pos[1] + player.facing[1]))

    def _snapshot(self) -> dict[str, Any]:
        player, world = self.env._player, self.env._world
        faced = self._faced()
        obj = world[faced][1] if self.material(faced) != OUTSIDE else None
        return {"pos": tuple(int(v) for v in player.pos), "faced": faced,
                "faced_material": self.material(faced), "faced_object": obj,
                "faced_health": getattr(obj, "health", None),
                "inventory": dict(player.inventory), "achievements": dict(player.achievements)}

    def _succeeded(self, action: str, before: dict[str, Any]) -> bool | None:
        """Read from the state, never from the attempt (design 0032)."""
        player = self.env._player
        if action == "noop":
            return None
        if action.startswith("move_"):
            return tuple(int(v) for v in player.pos) != before["pos"]
        if action == "sleep":
            return bool(player.sleeping)
        inventory, achievements = player.inventory, player.achievements
        if action.startswith("make_"):
            tool = action[len("make_"):]
            return inventory[tool] > before["inventory"][tool]
        faced = before["faced"]
        if action.startswith("place_"):
            what = action[len("place_"):]
            if self._constants.place[what]["type"] == "object":  # a plant is an object
                obj = self.env._world[faced][1]
                return obj is not None and obj is not before["faced_object"]
            return self.material(faced) == what and before["faced_material"] != what
        # do: the faced cell changed, an achievement rose, a non-vital item rose, or the
        # faced creature lost health. Vitals alone are left out: they drift every step.
        if self.material(faced) != before["faced_material"]:
            return True
        if any(achievements[k] > v for k, v in before["achievements"].items()):
            return True
        if any(inventory[k] > v for k, v in before["inventory"].items() if k not in VITALS):
            return True
        obj = before["faced_object"]
        return obj is not None and before["faced_health"] is not None and (
            obj.health < before["faced_health"])


def _where(dx: int, dy: int) -> str:
    parts = []
    if dx:
        parts.append(f"{abs(dx)} {'left' if dx < 0 else 'right'}")
    if dy:
        parts.append(f"{abs(dy)} {'up' if dy < 0 else 'down'}")
    return " ".join(parts) or "here"


def hud_text(state: dict[str, Any]) -> str:
    """The text the player is shown: vitals, inventory, what it faces, and the nearest of
    each thing in view with its offset (e.g. ``tree 2 left 1 up``); deterministic."""
    inventory = state["inventory"]
    vitals = " ".join(f"{k} {inventory[k]}" for k in VITALS)
    items = ", ".join(f"{k} {v}" for k, v in inventory.items() if k not in VITALS and v > 0)
    view = state["view"]
    height, width = len(view), len(view[0])
    cy, cx = height // 2, width // 2
    px, py = state["pos"]
    fx, fy = state["facing"]
    nearest: dict[str, tuple[int, int, int]] = {}

    def note(name: str, dx: int, dy: int) -> None:
        key = (abs(dx) + abs(dy), dy, dx)
        if name not in nearest or key < nearest[name]:
            nearest[name] = key

    for y, row in enumerate(view):
        for x, name in enumerate(row):
            if (x, y) != (cx, cy) and name not in ("grass", OUTSIDE):
                note(name, x - cx, y - cy)
    for creature in state["creatures"]:
        note(creature["kind"], creature["pos"][0] - px, creature["pos"][1] - py)
    faced = view[cy + fy][cx + fx] if 0 <= cy + fy < height and 0 <= cx + fx < width else OUTSIDE
    for creature in state["creatures"]:
        if creature["pos"] == [px + fx, py + fy]:
            faced = creature["kind"]
    seen = "; ".join(f"{name} {_where(dx, dy)}"
                     for name, (_, dy, dx) in sorted(nearest.items(),
                                                     key=lambda kv: (kv[1], kv[0])))
    text = (f"{vitals} | inventory: {items or 'nothing'} | facing {_where(fx, fy)}: {faced}"
            f" | in view: {seen or 'only grass'}")
    if state["sleeping"]:
        text += " | asleep"
    return text
