"""The TextWorld env (a game generated from the seed) and the walkthrough player.

The player's own tests need no game; the env's generate two games for the module (seed 3,
in two folders: the same file both times) and play them through the play loop.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from pathlib import Path

import pytest

from memgauge.errors import ConfigError
from memgauge.games._play import new_meta, play
from memgauge.games._trajectory import read_trajectory
from memgauge.games.players import Observation, make_player
from memgauge.games.players.walkthrough import WalkthroughPlayer

SEED = 3


def _act(player: WalkthroughPlayer, step: int, **state) -> str | None:
    decision = asyncio.run(player.act(Observation(step=step, text="", state=state,
                                                  legal=state.pop("legal", None))))
    return None if decision.stop else decision.action


# -- the walkthrough player, on its own ---------------------------------------------------


def test_walkthrough_player_follows_the_walkthrough_then_stops():
    player = WalkthroughPlayer(seed=0)
    state = {"walkthrough": ["go north", "take key"]}
    assert [_act(player, n, **state) for n in (1, 2, 3)] == ["go north", "take key", None]


def test_noise_detours_and_resumes_deterministically_per_seed():
    walkthrough = [f"cmd {i}" for i in range(20)]
    legal = ["look", "inventory", "jump"]

    def actions(seed: int, noise: float) -> list[str]:
        player = WalkthroughPlayer(seed=seed, noise=noise)
        out = []
        for n in range(1, 200):
            action = _act(player, n, walkthrough=walkthrough, legal=list(legal))
            if action is None:
                break
            out.append(action)
        return out

    noisy = actions(1, 0.3)
    assert noisy == actions(1, 0.3)
    assert [a for a in noisy if a.startswith("cmd")] == walkthrough  # resumed where it left
    assert set(noisy) - set(walkthrough) <= set(legal) and len(noisy) > len(walkthrough)
    assert actions(0, 0.0) == walkthrough


def test_noise_without_a_legal_list_uses_known_commands():
    player = WalkthroughPlayer(seed=5, noise=1.0)
    action = _act(player, 1, walkthrough=["go north", "go south"])
    assert action in {"go south", "look", "inventory"}  # never the planned one as a detour


def test_a_game_without_a_walkthrough_is_a_clear_error():
    with pytest.raises(ConfigError, match="walkthrough"):
        _act(WalkthroughPlayer(), 1, walkthrough=None)


def test_the_scripted_player_of_text_games_is_the_walkthrough_player():
    for game in ("textworld", "jericho"):
        assert isinstance(make_player("scripted", env_name=game, seed=0), WalkthroughPlayer)


# -- the env -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    pytest.importorskip("textworld", reason="the games extra (textworld) is not installed")
    from memgauge.games.envs import open_env

    root = tmp_path_factory.mktemp("textworld")
    envs = [open_env("textworld", seed=SEED, options={"game_dir": str(root / name)})
            for name in ("a", "b")]
    yield envs
    for env in envs:
        env.close()


def _play(env, out: Path, player: str = "scripted", noise: float = 0.0, seed: int = 0,
          max_steps: int = 40):
    meta = new_meta(env, seed=SEED, player=player, max_steps=max_steps)
    asyncio.run(play(env, make_player(player, env_name="textworld", seed=seed, noise=noise),
                     out, meta, max_steps))
    return read_trajectory(out)


def test_the_same_seed_gives_the_same_game_file_and_trajectory(games, tmp_path):
    a, b = games
    assert a.info()["game"]["sha256"] == b.info()["game"]["sha256"]
    # meta.json is written from info() before the first reset: the game's facts are known
    assert a.info()["game"]["walkthrough"] and a.info()["game"]["max_score"] == 1.0
    meta_a, steps_a = _play(a, tmp_path / "a")
    meta_b, steps_b = _play(b, tmp_path / "b")
    assert meta_a.game == meta_b.game and meta_a.initial == meta_b.initial
    assert [s.model_dump() for s in steps_a] == [s.model_dump() for s in steps_b]
    assert meta_a.game["settings"] == {"rooms": 5, "objects": 10, "quest_length": 5}


def test_the_story_serial_is_fixed_not_the_compile_date(games):
    story = (games[0].game_path).read_bytes()
    assert story[0x12:0x18] == b"000000"


def test_the_walkthrough_wins_the_generated_game(games, tmp_path):
    meta, steps = _play(games[0], tmp_path / "won")
    assert meta.end == "won" and steps[-1].done
    assert steps[-1].score == meta.initial["max_score"] > 0
    assert [s.action for s in steps] == meta.initial["walkthrough"] == meta.game["walkthrough"]


def test_room_from_facts_matches_the_text(games, tmp_path):
    meta, steps = _play(games[0], tmp_path / "rooms")
    rooms = [meta.initial["room"]] + [s.room for s in steps]
    assert len(set(rooms)) > 1  # the walkthrough goes somewhere
    headings = [meta.initial["observation"]] + [s.observation for s in steps]
    for before, after, text in zip(rooms, rooms[1:], headings[1:], strict=False):
        if after != before:  # TextWorld heads a new room's text with "-= Room =-"
            assert re.search(rf"-= {re.escape(after)} =-", text, re.IGNORECASE), text


def test_inventory_is_read_from_facts_and_matches_the_game(games):
    env = games[0]
    state = env.reset()
    assert state["inventory"] == sorted(
        re.search(r"in\((.+?): \w+, I\)", f).group(1) for f in state["facts"]
        if f.startswith("in(") and f.endswith(", I)"))
    reply = env.step("inventory")
    for item in reply["inventory"]:
        assert item in reply["observation"]
    assert reply["success"] is False and reply["inventory"] == state["inventory"]


def test_step_fields_follow_the_text_game_contract(games):
    env = games[0]
    state = env.reset()
    assert state["admissible"] == env.legal_actions() and "look" in state["admissible"]
    assert env.frame_png() is None and state["moves"] == 0 and state["score"] == 0
    first = env.step(state["walkthrough"][0])
    assert first["moves"] == 1 and first["success"] is True and "action" not in first
    assert all(isinstance(f, str) for f in first["facts"]) and first["facts"] != state["facts"]
    json.dumps(first)  # plain data, ready for the trajectory line
    # the padded status line is kept apart from the reply the player reads
    assert " " * 20 not in first["observation"] and first["status_line"].startswith("-= ")


def test_noise_changes_the_trajectory_deterministically(games, tmp_path):
    env = games[0]
    _, clean = _play(env, tmp_path / "clean")
    _, noisy = _play(env, tmp_path / "noisy-1", noise=0.5, seed=7)
    _, again = _play(env, tmp_path / "noisy-2", noise=0.5, seed=7)
    assert [s.action for s in noisy] == [s.action for s in again]
    assert [s.action for s in noisy] != [s.action for s in clean]
    assert {s.player.reason for s in noisy} >= {"noise"}


def test_a_temporary_game_folder_goes_away_on_close():
    pytest.importorskip("textworld", reason="the games extra (textworld) is not installed")
    from memgauge.games.envs.textworld_env import TextWorldEnv

    env = TextWorldEnv.__new__(TextWorldEnv)  # no game needed to check the clean-up
    env._temp = folder = Path(tempfile.mkdtemp())
    (folder / "game.z8").write_bytes(b"")
    env._env = type("Closed", (), {"close": lambda self: None})()
    env.close()
    assert not folder.exists()


@pytest.mark.parametrize("options, message", [
    ({"rooms": "many"}, "'rooms' must be a whole number"),
    ({"quest_length": 0}, "'quest_length' must be a whole number"),
    ({"objects": 2.5}, "'objects' must be a whole number"),
    ({"room": 5}, "unknown option 'room'"),
])
def test_bad_options_are_config_errors_before_generation(options, message, tmp_path):
    pytest.importorskip("textworld", reason="the games extra (textworld) is not installed")
    from memgauge.games.envs.textworld_env import open_textworld

    with pytest.raises(ConfigError, match=message):
        open_textworld(0, {**options, "game_dir": str(tmp_path / "g")})
    assert not (tmp_path / "g").exists()
