"""TextWorld: a text game generated from the seed at run time (extra ``games``; design 0032).

    env = open_textworld(seed=3, options={"rooms": 5, "objects": 10, "quest_length": 5})
    initial = env.reset()        # room, inventory, score, moves, admissible, facts, walkthrough
    fields = env.step("go south")

The game is built with TextWorld's Python API and compiled with the Inform 7 tools its wheel
ships, into ``options["game_dir"]`` (the play loop may pass ``TRAJ_DIR/game``) or a temporary
folder removed on ``close``. The story serial is fixed in the source: Inform stamps the
compile date there otherwise, and the same seed could not give the same file tomorrow.
State is read from TextWorld's fact set, never from the text: the room from ``at(P, r)``
(TextWorld 1.7's ``location`` info is always None) and the inventory from ``in(o, I)``.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .jericho_env import split_status  # the same padded status line ends TextWorld's replies

DEFAULTS: dict[str, int] = {"rooms": 5, "objects": 10, "quest_length": 5}
_PATH_OPTIONS = ("game_dir",)
GAME_FILE = "game.z8"
_FIXED_SERIAL = '\nInclude (- Serial "000000"; -).\n'


def _settings(options: dict[str, Any]) -> dict[str, int]:
    unknown = sorted(set(options) - set(DEFAULTS) - set(_PATH_OPTIONS))
    if unknown:
        raise ConfigError(f"textworld: unknown option {unknown[0]!r}; the options are "
                          f"{', '.join([*DEFAULTS, *_PATH_OPTIONS])}")
    settings = dict(DEFAULTS)
    for key in DEFAULTS:
        if key not in options:
            continue
        value = options[key]
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = 0
        if number < 1 or str(number) != str(value).strip():
            raise ConfigError(f"textworld: option {key!r} must be a whole number of at least "
                              f"1, not {value!r}")
        settings[key] = number
    return settings


def make_game(seed: int, settings: dict[str, int], folder: Path) -> Path:
    """Generate and compile the game for ``seed`` into ``folder``: ``game.z8`` (what the
    interpreter runs, Jericho included) and ``game.json`` (TextWorld's state tracking)."""
    import textworld
    import textworld.generator
    from textworld.generator.inform7 import compile_inform7_game, generate_inform7_source

    opts = textworld.GameOptions()
    opts.nb_rooms = settings["rooms"]
    opts.nb_objects = settings["objects"]
    opts.quest_length = settings["quest_length"]
    opts.seeds = seed
    game = textworld.generator.make_game(opts)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / GAME_FILE
    compile_inform7_game(generate_inform7_source(game) + _FIXED_SERIAL, str(path))
    game.save(str(path.with_suffix(".json")))
    return path


def _max_score_and_walkthrough(path: Path) -> tuple[float, list[str]]:
    import textworld

    game = textworld.Game.load(str(path.with_suffix(".json")))
    return float(game.max_score), [str(c) for c in game.metadata.get("walkthrough") or []]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _room(facts: list[Any]) -> str | None:
    for fact in facts:
        if fact.name == "at" and fact.arguments[0].name == "P":
            return str(fact.arguments[1].name)
    return None


def _inventory(facts: list[Any]) -> list[str]:
    return sorted(str(f.arguments[0].name) for f in facts
                  if f.name == "in" and f.arguments[1].name == "I")


@contextlib.contextmanager
def _quiet_jericho() -> Iterator[None]:
    """TextWorld runs its games through Jericho, which warns that it has no bindings for
    them; TextWorld tracks the state itself, so the warning says nothing here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not fully supported")
        yield


class TextWorldEnv:
    name = "textworld"
    kind = "text"

    def __init__(self, seed: int, options: dict[str, Any] | None = None) -> None:
        import textworld

        options = dict(options or {})
        self.seed = seed
        self.settings = _settings(options)
        self._temp: Path | None = None
        if options.get("game_dir"):
            folder = Path(options["game_dir"])
        else:
            self._temp = folder = Path(tempfile.mkdtemp(prefix="memgauge-textworld-"))
        self.game_path = make_game(seed, self.settings, folder)
        self.sha256 = _sha256(self.game_path)
        infos = textworld.EnvInfos(admissible_commands=True, facts=True, score=True,
                                   moves=True, max_score=True, won=True, lost=True,
                                   extras=["walkthrough"])
        with _quiet_jericho():
            self._env = textworld.start(str(self.game_path), request_infos=infos)
        self._state: dict[str, Any] = {}
        self._admissible: list[str] | None = None
        # known before the first reset: meta.json is written from info() before play starts
        self.max_score, self.walkthrough = _max_score_and_walkthrough(self.game_path)

    def _fields(self, game_state: Any) -> dict[str, Any]:
        facts = list(game_state.facts)
        reply, status = split_status(game_state.feedback)
        self._admissible = sorted(game_state.admissible_commands)
        return {
            "observation": reply,
            "room": _room(facts),
            "inventory": _inventory(facts),
            "score": float(game_state.score),
            "moves": int(game_state.moves),
            "admissible": self._admissible,
            "facts": sorted(str(f) for f in facts),
            "status_line": status,
        }

    def reset(self) -> dict[str, Any]:
        with _quiet_jericho():
            game_state = self._env.reset()
        self._state = self._fields(game_state)
        return {**self._state, "max_score": self.max_score, "walkthrough": self.walkthrough}

    def step(self, action: str) -> dict[str, Any]:
        game_state, reward, done = self._env.step(action)
        fields = self._fields(game_state)
        changed = any(fields[k] != self._state.get(k)
                      for k in ("room", "inventory", "score", "facts"))
        self._state = fields
        out = {**fields, "reward": float(reward), "done": bool(done),
               "success": changed}
        if done:
            out["end"] = "won" if game_state.won else "game_over"
        return out

    def legal_actions(self) -> list[str] | None:
        return self._admissible

    def frame_png(self) -> bytes | None:
        return None

    def info(self) -> dict[str, Any]:
        import textworld

        return {
            "env_version": textworld.__version__,
            "game": {"file": GAME_FILE, "sha256": self.sha256, "seed": self.seed,
                     "settings": self.settings, "max_score": self.max_score,
                     "walkthrough": self.walkthrough},
            "admissible_note": None,
            "frame_size": None,
        }

    def close(self) -> None:
        self._env.close()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None


def open_textworld(seed: int = 0, options: dict[str, Any] | None = None) -> TextWorldEnv:
    """A TextWorld game generated from ``seed`` with ``options`` (rooms, objects,
    quest_length, game_dir); bad options are a ConfigError before anything is generated."""
    try:
        import textworld  # noqa: F401
    except ImportError:
        raise ConfigError("textworld is not installed: pip install 'memgauge[games]'") from None
    return TextWorldEnv(seed, options)
