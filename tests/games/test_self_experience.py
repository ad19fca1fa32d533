"""Self-experience: `memgauge play ... --system S` plays, makes the questions from that play
with the fixed recipe, and the system answers them online (design 0032)."""

from __future__ import annotations

import itertools
import json

import pytest
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.games import read_trajectory
from memgauge.runfolder import read_records

pytest.importorskip("crafter")


def _text(body) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def _is_play(body) -> bool:
    return "Legal actions:" in _text(body)


def _server():
    actions = itertools.cycle(["move_left", "do", "move_up", "do"])
    return StubServer(answer=lambda body: next(actions) if _is_play(body) else "not answerable")


def _self_play(stub, out, *extra):
    return CliRunner().invoke(app, [
        "play", "crafter", "--player", "llm:openai:m", "--steps", "12", "--horizon", "6",
        "--system", "full-context", "--model-base-url", stub.base_url,
        "--bench-option", "steps_per_session=4", "--out", str(out), *extra])


def test_the_play_is_remembered_and_each_question_is_asked_right_after_its_horizon(tmp_path):
    out = tmp_path / "run"
    with _server() as stub:
        stub.models = [{"id": "m"}]
        result = _self_play(stub, out, "--cache-path", str(tmp_path / "c.sqlite"))
        _check_first_run(stub, out, result)
        before = len(stub.requests)  # the same command again: nothing played or asked again
        again = _self_play(stub, out, "--cache-path", str(tmp_path / "c.sqlite"))
        assert again.exit_code == 0, again.output
        assert "play already done" in again.output and "0 answered now" in again.output
        assert not [b for b in stub.requests[before:] if _is_play(b)]


def _check_first_run(stub, out, result) -> None:
    assert result.exit_code == 0, result.output
    meta, steps = read_trajectory(out / "play" / "crafter-s0")
    assert meta.player == "llm:openai:m" and len(steps) == 12
    rows = [json.loads(line) for line in (out / "bench" / "questions.jsonl").open()]
    records = read_records(out)
    assert {r["id"] for r in rows} == set(records) and all(
        r.status == "ok" for r in records.values())
    assert {tuple(r["horizon"]) for r in rows} == {(1, 6), (1, 12)}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["identity"]["bench"] == "games"
    asked = [b for b in stub.requests if not _is_play(b)]
    early = [b for b in asked if "steps 1–6 of your play" in _text(b)]
    assert early and len(asked) == len(rows)
    for body in early:  # online: the system has not seen a step after the horizon
        text = _text(body)
        assert "Step 6: " in text and "Step 7: " not in text
    plays = [b for b in stub.requests if _is_play(b)]
    assert len(plays) == 12


def test_another_recipe_in_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "run"
    with _server() as stub:
        stub.models = [{"id": "m"}]
        assert _self_play(stub, out, "--no-cache").exit_code == 0
        other = _self_play(stub, out, "--no-cache", "--horizon", "8")
    assert other.exit_code == 2 and "another recipe" in other.output
    assert "horizons" in other.output


def test_an_interrupted_play_is_played_again_and_then_answered(tmp_path):
    out = tmp_path / "run"
    with _server() as stub:
        stub.models = [{"id": "m"}]
        calls = {"n": 0}
        good = stub.answer

        def failing(body):  # three good steps, then the endpoint fails for good
            calls["n"] += 1
            if calls["n"] == 3:
                stub.plan.extend([500] * 20)
            return good(body)

        stub.answer = failing
        broken = _self_play(stub, out, "--no-cache", "--max-attempts", "2")
    assert broken.exit_code == 2 and "the model failed" in broken.output
    assert not (out / "records.jsonl").exists() and not (out / "bench").exists()
    with _server() as stub:
        stub.models = [{"id": "m"}]
        result = _self_play(stub, out, "--no-cache", "--max-attempts", "2")
    assert result.exit_code == 0, result.output
    meta, steps = read_trajectory(out / "play" / "crafter-s0")
    assert meta.end == "step_cap" and len(steps) == 12
    assert len(read_records(out)) == sum(1 for _ in (out / "bench" / "questions.jsonl").open())


@pytest.mark.parametrize(("args", "message"), [
    (["--player", "scripted", "--system", "rag"], "give --model"),
    (["--player", "replay:somewhere", "--system", "rag"], "controlled exposure"),
    (["--player", "scripted", "--model", "replay:", "--system", "no-such-system"],
     "no-such-system"),
    (["--player", "scripted", "--model", "replay:", "--system", "rag", "--steps", "5",
      "--horizon", "9"], "--horizon 9"),
])
def test_mistakes_are_refused_before_anything_is_played(tmp_path, args, message):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["play", "crafter", *args, "--out", str(out)])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not (out / "play").exists()


@pytest.mark.parametrize(("end", "message", "replayed"), [
    ("step_cap", None, False),  # finished: kept
    ("player_stopped", "http_500: server error", True),  # stopped by an error: played again
    ("player_stopped", None, False),  # the player chose to stop: a finished play
])
def test_a_play_stopped_by_an_error_is_played_again(tmp_path, end, message, replayed):
    from memgauge.games._self_play import SelfExperience, needs_play
    from memgauge.games._trajectory import TrajectoryMeta, TrajectoryWriter

    plan = SelfExperience(run_dir=tmp_path, game="crafter", seed=0, steps=5, player="random")
    writer = TrajectoryWriter(plan.trajectory_dir, TrajectoryMeta(env="crafter",
                                                                  player="random"))
    writer.meta.end_message = message
    writer.finish(end)
    written = json.loads((plan.trajectory_dir / "meta.json").read_text())
    assert ("end_message" in written) == (message is not None)  # no null key otherwise
    assert needs_play(plan) is replayed
    assert plan.trajectory_dir.exists() is not replayed
