"""``memgauge play`` end to end (tiny step counts) and its errors."""

from __future__ import annotations

import json
import sys

import pytest
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.games import read_trajectory

pytest.importorskip("crafter")

runner = CliRunner()


def _play(*args: str):
    return runner.invoke(app, ["play", *args], catch_exceptions=False)


def test_play_scripted_crafter_writes_a_trajectory_and_a_summary(tmp_path):
    out = tmp_path / "t"
    result = _play("crafter", "--player", "scripted", "--steps", "30", "--seed", "1",
                   "--out", str(out))
    assert result.exit_code == 0, result.output
    meta, steps = read_trajectory(out)
    assert (meta.env, meta.seed, meta.player, meta.steps, meta.end) == (
        "crafter", 1, "scripted", 30, "step_cap")
    assert meta.player_options == {"noise": 0.0} and meta.max_steps == 30
    last = steps[-1].achievements
    assert result.output.strip().startswith("played 30 steps of crafter (end: step_cap)")
    assert f"place_table {last['place_table']}" in result.output and str(out) in result.output
    assert (out / "frames" / f"{steps[0].frame}.png").is_file()


def test_play_replay_reproduces_the_trajectory_with_its_seed_and_length(tmp_path):
    assert _play("crafter", "--player", "random", "--seed", "7", "--steps", "40",
                 "--frame-size", "32", "--out", str(tmp_path / "a")).exit_code == 0
    result = _play("crafter", "--player", f"replay:{tmp_path / 'a'}", "--frame-size", "32",
                   "--out", str(tmp_path / "b"))
    assert result.exit_code == 0, result.output
    _, a = read_trajectory(tmp_path / "a")
    b_meta, b = read_trajectory(tmp_path / "b")
    assert b_meta.seed == 7 and b_meta.frame_size == [32, 32]
    assert [(s.action, s.pos, s.inventory, s.frame) for s in b] == [
        (s.action, s.pos, s.inventory, s.frame) for s in a]


@pytest.mark.parametrize(("args", "message"), [
    (["chess", "--player", "random"], "unknown game 'chess'"),
    (["crafter", "--player", "greedy"], "unknown player 'greedy'"),
    (["crafter", "--player", "random", "--steps", "0"], "--steps 0: give at least 1"),
    (["crafter", "--player", "scripted", "--noise", "1.5"], "--noise 1.5"),
    (["crafter", "--player", "random", "--frame-size", "3"], "--frame-size 3"),
    (["crafter", "--player", "llm:gpt-4o"], "must look like provider:name"),
])
def test_bad_options_are_one_line_errors_before_anything_is_written(tmp_path, args, message):
    out = tmp_path / "t"
    result = _play(*args, "--out", str(out))
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert not (out / "trajectory.jsonl").exists()


def test_a_missing_games_extra_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "crafter", None)
    result = _play("crafter", "--player", "random", "--out", str(tmp_path / "t"))
    assert result.exit_code == 2
    assert 'pip install "memgauge[games]"' in result.output


def test_an_out_folder_that_holds_a_trajectory_is_refused(tmp_path):
    assert _play("crafter", "--player", "random", "--steps", "2",
                 "--out", str(tmp_path / "t")).exit_code == 0
    result = _play("crafter", "--player", "random", "--steps", "2", "--out", str(tmp_path / "t"))
    assert result.exit_code == 2 and "already holds a trajectory" in result.output


def test_play_with_an_llm_player_over_a_loopback_endpoint(tmp_path):
    replies = iter(["move_left", "I am not sure", "do", "sleep"])
    with StubServer(answer=lambda body: next(replies)) as stub:
        stub.models = [{"id": "m"}]
        result = _play("crafter", "--player", "llm:openai:m", "--steps", "3",
                       "--model-base-url", stub.base_url, "--cache-path",
                       str(tmp_path / "cache.sqlite"), "--out", str(tmp_path / "t"))
    assert result.exit_code == 0, result.output
    meta, steps = read_trajectory(tmp_path / "t")
    assert [s.action for s in steps] == ["move_left", "do", "sleep"]
    assert steps[1].player.attempts == 2 and steps[1].player.fallback is False
    assert meta.player == "llm:openai:m" and meta.player_options["reasks"] == 2
    sent = [m for body in stub.requests for m in body["messages"]]
    assert any("Legal actions: 1. noop, 2. move_left" in json.dumps(m) for m in sent)


def test_the_summary_reports_the_llm_players_fallback_rate(tmp_path):
    """A play that is mostly the fallback action is the fallback's play (issue 24: SmolLM2
    fell back on every step and nothing said so)."""
    replies = iter(["move_left", "I am not sure", "3. move_right"])
    with StubServer(answer=lambda body: next(replies)) as stub:
        stub.models = [{"id": "m"}]
        result = _play("crafter", "--player", "llm:openai:m", "--steps", "3", "--reasks", "0",
                       "--model-base-url", stub.base_url, "--no-cache",
                       "--out", str(tmp_path / "t"))
    assert result.exit_code == 0, result.output
    meta, steps = read_trajectory(tmp_path / "t")
    assert [s.action for s in steps] == ["move_left", "noop", "move_right"]
    assert meta.player_options["constrained_choice"] is False
    assert meta.player_options["structured_choice"] is True  # issue 29: a JSON schema
    assert stub.requests[0]["response_format"]["json_schema"]["schema"]["properties"][
        "action"]["enum"][:2] == ["noop", "move_left"]
    summary = " ".join(result.output.split())
    assert ("fallback action on 1 of 3 steps (33%) (no reply named a legal action); its "
            "choice asked as structured output (a JSON schema of the legal actions)") in summary


def test_an_llm_endpoint_that_fails_for_good_stops_play_and_keeps_the_log(tmp_path):
    with StubServer(answer=lambda body: "move_left") as stub:
        stub.models = [{"id": "m"}]
        calls = {"n": 0}

        def answer(body):  # two good steps, then every request fails
            calls["n"] += 1
            if calls["n"] == 2:
                stub.plan.extend([500] * 10)
            return "move_left"

        stub.answer = answer
        result = _play("crafter", "--player", "llm:openai:m", "--steps", "10",
                       "--model-base-url", stub.base_url, "--max-attempts", "2", "--no-cache",
                       "--out", str(tmp_path / "t"))
    assert result.exit_code == 2, result.output
    assert "the model failed" in result.output and "player_stopped" in result.output
    meta, steps = read_trajectory(tmp_path / "t")
    assert meta.end == "player_stopped" and meta.steps == len(steps) >= 2
    assert meta.model_dump()["end_message"]


def test_play_with_images_sends_the_frame_as_an_image(tmp_path):
    with StubServer(answer=lambda body: "noop") as stub:
        stub.models = [{"id": "m"}]
        result = _play("crafter", "--player", "llm:openai:m", "--steps", "2", "--images",
                       "--model-base-url", stub.base_url, "--no-cache",
                       "--out", str(tmp_path / "t"))
    assert result.exit_code == 0, result.output
    parts = stub.requests[0]["messages"][-1]["content"]
    images = [p for p in parts if p.get("type") == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png")


def test_an_out_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    result = _play("crafter", "--player", "random", "--out", str(tmp_path / "f"))
    assert result.exit_code == 2 and "is a file" in result.output


def test_a_textworld_game_is_kept_with_its_trajectory_and_replays_through_jericho(tmp_path):
    pytest.importorskip("textworld")
    pytest.importorskip("jericho")
    tw, jr = tmp_path / "tw", tmp_path / "jr"
    result = CliRunner().invoke(app, ["play", "textworld", "--player", "scripted", "--seed", "3",
                                      "--game-option", "rooms=4", "--out", str(tw)])
    assert result.exit_code == 0, result.output
    game = tw / "game" / "game.z8"
    meta, steps = read_trajectory(tw)
    assert game.is_file() and meta.game["sha256"]
    before = game.read_bytes()
    again = CliRunner().invoke(app, ["play", "textworld", "--player", "scripted", "--out", str(tw)])
    assert again.exit_code == 2 and "already holds a trajectory" in again.output
    assert game.read_bytes() == before  # refused before another game was generated over it
    result = CliRunner().invoke(app, ["play", "jericho", "--rom", str(game), "--player",
                                      "scripted", "--out", str(jr)])
    assert result.exit_code == 0, result.output
    _, jsteps = read_trajectory(jr)
    assert [s.action for s in jsteps] == [s.action for s in steps]
    read = [(a.room, b.room) for a, b in zip(steps, jsteps, strict=True) if b.room is not None]
    assert read and all(a.lower() == b.lower() for a, b in read)  # the same game, step by step


def test_an_unknown_game_option_is_refused_before_play(tmp_path):
    pytest.importorskip("textworld")
    result = CliRunner().invoke(app, ["play", "textworld", "--game-option", "bogus=1",
                                      "--out", str(tmp_path / "t")])
    assert result.exit_code == 2 and "unknown option 'bogus'" in result.output
    assert not (tmp_path / "t" / "trajectory.jsonl").exists()
