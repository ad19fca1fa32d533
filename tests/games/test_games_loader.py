"""``--bench games``: BENCH_DIR round trip, sessions cut at horizon ends, asked_after and
evidence pointers, the frame policy, the offline-protocol refusal, malformed folders, and
runs end to end with built-in systems."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.scripted_server import ScriptedServer, completion
from typer.testing import CliRunner

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.games import GamesBenchmark
from memgauge.cli import app
from memgauge.errors import ConfigError, InputError
from memgauge.games._generate import GamesConfig, generate_games
from memgauge.schema import Ability, AnswerType

from .gamebench_fixtures import Timeline, register_test_templates, write_trajectory

runner = CliRunner()


@pytest.fixture
def bench(tmp_path, monkeypatch) -> Path:
    """Two 8-step trajectories, questions at horizon 4 and at the whole trajectory."""
    register_test_templates(monkeypatch)
    trajs = [write_trajectory(tmp_path / "traj-a"),
             write_trajectory(tmp_path / "traj-b", ["do"] * 8)]
    out = tmp_path / "bench"
    generate_games(GamesConfig(trajectories=trajs, out=out, horizons=[4],
                               make_timeline=Timeline))
    return out


def _load(bench: Path, **kw) -> GamesBenchmark:
    extra = kw.pop("extra", {})
    return GamesBenchmark(BenchmarkOptions(data=str(bench), extra=extra, **kw))


def _rows(bench: Path) -> list[dict]:
    return [json.loads(line) for line in (bench / "questions.jsonl").read_text().splitlines()]


def test_round_trip_one_episode_per_trajectory(bench):
    eps = list(_load(bench).episodes())
    rows = {r["id"]: r for r in _rows(bench)}
    assert [e.episode_id for e in eps] == ["traj-a", "traj-b"]
    questions = [q for e in eps for q in e.questions]
    assert sorted(q.question_id for q in questions) == sorted(rows)
    for q in questions:
        r = rows[q.question_id]
        game = q.meta["game"]
        assert q.text == r["question"] and q.subtype == r["template"]
        assert {k: game[k] for k in ("template", "params", "horizon", "evidence_steps",
                                     "alternatives", "tolerance", "answerable", "answer_type",
                                     "trajectory")} == \
            {k: r[k] for k in ("template", "params", "horizon", "evidence_steps",
                               "alternatives", "tolerance", "answerable", "answer_type",
                               "trajectory")}
        assert game["env"] == "crafter" and game["trajectory_steps"] == 8
        if r["answerable"]:
            assert q.answer == str(r["answer"])
            assert q.answer_type == AnswerType(r["answer_type"])
        else:
            assert q.answer == "not answerable" and q.answer_type is AnswerType.REFUSAL
    abilities = {q.ability for q in questions}
    assert Ability.TEMPORAL in abilities and Ability.ADVERSARIAL in abilities


def test_sessions_cut_at_horizon_ends_and_asked_after(bench):
    ep = next(_load(bench, extra={"steps_per_session": "3"}).episodes())
    assert [s.meta["steps"] for s in ep.sessions] == [[1, 3], [4, 4], [5, 6], [7, 8]]
    assert [t.turn_id for t in ep.sessions[1].turns] == ["t4-action", "t4-obs"]
    assert ep.sessions[0].turns[0].turn_id == "t0-obs"  # what was seen before step 1
    assert ep.sessions[0].turns[1].role == "assistant"
    assert ep.sessions[0].turns[1].text == "Step 1: move_left"
    for q in ep.questions:
        horizon_end = q.meta["game"]["horizon"][1]
        asked = ep.sessions[q.asked_after]
        assert asked.meta["steps"][1] == horizon_end  # right after the horizon's last step
        turns = {(s.session_id, t.turn_id) for s in ep.sessions for t in s.turns}
        for ref in q.evidence:
            assert (ref.session_id, ref.turn_id) in turns
        steps = sorted({int(ref.turn_id[1:].split("-")[0]) for ref in q.evidence})
        assert steps == sorted(q.meta["game"]["evidence_steps"])


def _frames(ep) -> dict[str, int]:
    return {t.turn_id: len(t.images) for s in ep.sessions for t in s.turns
            if t.turn_id.endswith("-obs")}


def test_frame_policy(bench):
    every = _frames(next(_load(bench).episodes()))
    assert every == {"t0-obs": 1, **{f"t{i}-obs": 1 for i in range(1, 9)}}
    none = _frames(next(_load(bench, extra={"frames": "none"}).episodes()))
    assert set(none.values()) == {0}
    ep = next(_load(bench, extra={"frames": "every:3", "steps_per_session": "5"}).episodes())
    # steps 3 and 6, and each session's last step (4: a horizon end, 5, 8)
    kept = sorted(int(k[1:-4]) for k, n in _frames(ep).items() if n and k != "t0-obs")
    assert kept == [3, 4, 5, 6, 8]
    image = ep.sessions[0].turns[-1].images[0]
    assert Path(image.path).is_file() and image.sha256 == Path(image.path).stem
    assert _load(bench, extra={"frames": "every:3"}).manifest()["options"]["frames"] == "every:3"


@pytest.mark.parametrize("extra, match", [
    ({"frames": "some"}, "frames='some'"), ({"frames": "every:0"}, "every:K"),
    ({"steps_per_session": "0"}, "steps_per_session"), ({"colour": "red"}, "colour")])
def test_bad_bench_options_are_config_errors(bench, extra, match):
    with pytest.raises(ConfigError, match=match):
        _load(bench, extra=extra)


def test_offline_protocol_with_an_early_horizon_is_refused(bench, tmp_path):
    with pytest.raises(ConfigError, match=r"--protocol offline .* steps up to 4"):
        _load(bench, protocol="offline")
    whole = tmp_path / "whole"
    generate_games(GamesConfig(trajectories=[tmp_path / "traj-a"], out=whole,
                               make_timeline=Timeline))
    assert list(_load(whole, protocol="offline").episodes())


def _rewrite_line(bench: Path, index: int, change) -> None:
    lines = (bench / "questions.jsonl").read_text().splitlines()
    row = json.loads(lines[index])
    change(row)
    lines[index] = json.dumps(row)
    (bench / "questions.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("change, item, field", [
    (lambda r: r.pop("answer_type"), "line 2", "answer_type"),
    (lambda r: r.update(horizon=[1, 99]), "line 2", "horizon"),
    (lambda r: r.update(horizon=[3]), "line 2", "horizon"),
    (lambda r: r.update(trajectory="nope"), "line 2", "trajectory"),
    (lambda r: r.update(evidence_steps=[9]), "line 2", "evidence_steps"),
    (lambda r: r.update(answerable=not r["answerable"]), "line 2", "answerable"),
    (lambda r: r.update(ability="luck"), "line 2", "ability"),
])
def test_malformed_questions_name_file_line_and_field(bench, change, item, field):
    _rewrite_line(bench, 1, change)
    with pytest.raises(InputError) as err:
        _load(bench)
    assert err.value.file.endswith("questions.jsonl")
    assert err.value.item == item and err.value.field == field


def test_malformed_folder_errors(bench):
    lines = (bench / "questions.jsonl").read_text().splitlines()
    (bench / "questions.jsonl").write_text("\n".join([lines[0], "{not json", *lines[1:]]))
    with pytest.raises(InputError, match="line 2: not valid JSON"):
        _load(bench)
    (bench / "questions.jsonl").write_text("\n".join([lines[0], lines[0]]))
    with pytest.raises(InputError, match="also on line 1"):
        _load(bench)
    traj = bench / "trajectories" / "traj-b" / "trajectory.jsonl"
    traj.write_text(traj.read_text().replace('"do"', '"noop"', 1))
    with pytest.raises(InputError, match="the trajectory changed"):
        _load(bench)
    info = json.loads((bench / "benchmark.json").read_text())
    (bench / "benchmark.json").write_text(json.dumps({**info, "format": "other/1"}))
    with pytest.raises(InputError, match="format 'other/1'"):
        _load(bench)
    with pytest.raises(InputError, match="not a folder"):
        _load(bench / "benchmark.json")


def _run(bench: Path, out: Path, *args: str):
    return runner.invoke(app, ["run", "--bench", "games", "--data", str(bench), "--out",
                               str(out), *args])


@pytest.mark.parametrize("system", ["full-context", "rag"])
def test_run_end_to_end_with_gold_predictions(bench, tmp_path, system):
    preds = tmp_path / "preds.jsonl"
    rows = _rows(bench)
    preds.write_text("".join(json.dumps({"question_id": r["id"], "prediction": str(r["answer"])})
                             + "\n" for r in rows))
    out = tmp_path / f"run-{system}"
    res = _run(bench, out, "--model", f"replay:{preds}", "--system", system,
               "--bench-option", "steps_per_session=3", "--bench-option", "frames=every:2")
    assert res.exit_code == 0, res.output
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == len(rows) and all(r["status"] == "ok" for r in records)
    again = _run(bench, out, "--model", f"replay:{preds}", "--system", system,
                 "--bench-option", "steps_per_session=3", "--bench-option", "frames=every:2")
    assert again.exit_code == 0 and "0 answered now" in again.output  # resumed: all done
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["identity"]["bench_options"] == {"frames": "every:2",
                                                              "steps_per_session": "3"}
    assert manifest["benchmark"]["options"] == {"frames": "every:2", "steps_per_session": 3}


def test_online_context_stops_at_the_horizon(bench, tmp_path):
    prompts: dict[str, str] = {}

    def reply(body):
        text = json.dumps(body["messages"])
        asked = [m for m in body["messages"] if m["role"] == "user"][-1]
        last = asked["content"] if isinstance(asked["content"], str) else \
            " ".join(p.get("text", "") for p in asked["content"])
        prompts[last] = text
        return 200, completion("3")

    with ScriptedServer([], after=reply) as srv:
        res = _run(bench, tmp_path / "run", "--model", "openai:m", "--base-url", srv.base_url,
                   "--bench-option", "frames=none", "--bench-option", "steps_per_session=3")
    assert res.exit_code == 0, res.output
    early = [t for q, t in prompts.items() if "steps 1–4 of your play" in q]
    late = [t for q, t in prompts.items() if "steps 1–8 of your play" in q]
    assert early and late
    assert all("Step 4: " in t and "Step 5: " not in t for t in early)
    assert all("Step 8: " in t for t in late)


def test_run_offline_with_horizons_stops_before_any_request(bench, tmp_path):
    with ScriptedServer([], after=(200, completion("x"))) as srv:
        res = _run(bench, tmp_path / "run", "--model", "openai:m", "--base-url",
                   srv.base_url, "--protocol", "offline")
        assert res.exit_code == 2 and "--protocol offline" in res.output
        assert srv.requests == []


def test_gold_answer_shape_the_rule_scorer_reads():
    from memgauge.benchmarks.games import gold_answer

    # list, set, path: one answer's items (alternatives stay in meta.game)
    assert gold_answer("path", ["move_left", "move_up"], [["move_up", "move_left"]]) == \
        ["move_left", "move_up"]
    assert gold_answer("set", [], []) == "none" and gold_answer("path", [], []) == "here"
    assert gold_answer("set", {"wood": 2, "sapling": 1}, []) == "1 sapling, 2 wood"
    # the others: every correct answer
    assert gold_answer("integer", 3, []) == "3"
    assert gold_answer("string", "kitchen", ["the kitchen"]) == ["kitchen", "the kitchen"]
    assert gold_answer("yes_no", True, []) == "yes"


def test_mosaic_tiles_k_frames_with_labels_outside_and_never_across_a_session(bench):
    from PIL import Image

    from memgauge.games._mosaic import LABEL_BAND

    ep = next(_load(bench, extra={"frames": "mosaic:2", "steps_per_session": "3"}).episodes())
    # sessions 1-3, 4, 5-6, 7-8: groups (1,2) (3) | (4) | (5,6) | (7,8)
    with_image = {k: n for k, n in _frames(ep).items() if n and k != "t0-obs"}
    assert sorted(with_image) == ["t2-obs", "t3-obs", "t4-obs", "t6-obs", "t8-obs"]
    turn = next(t for s in ep.sessions for t in s.turns if t.turn_id == "t6-obs")
    assert "steps 5–6" in turn.text
    [ref] = turn.images
    assert ref.meta["steps"] == [5, 6]
    with Image.open(ref.path) as im:
        assert im.size == (8, 4 + LABEL_BAND)  # two 4x4 frames side by side, a band above
        # the frames' own pixels are untouched (write_trajectory shades step i as 10*i)
        assert im.getpixel((0, LABEL_BAND)) == (50, 50, 50)
        assert im.getpixel((4, LABEL_BAND + 3)) == (60, 60, 60)
    alone = next(t for s in ep.sessions for t in s.turns if t.turn_id == "t4-obs").images[0]
    assert alone.meta["steps"] == [4]  # a horizon end: step 5 is in no picture shown before


def test_played_crafter_to_report_end_to_end(tmp_path):
    """Scripted Crafter play -> `generate games` -> `run --bench games` (full-context and
    rag, gold predictions) -> `report`: every gold, as the loader states it, scores 1."""
    pytest.importorskip("crafter")
    import asyncio

    from memgauge.benchmarks.games import answer_text
    from memgauge.games._play import new_meta, play
    from memgauge.games.envs import open_env
    from memgauge.games.players import make_player

    traj = tmp_path / "crafter-s2"
    env = open_env("crafter", seed=2)
    asyncio.run(play(env, make_player("scripted", env_name="crafter", seed=2), traj,
                     new_meta(env, seed=2, player="scripted", max_steps=40), 40))
    bench = tmp_path / "bench"
    res = runner.invoke(app, ["generate", "games", str(traj), "--out", str(bench),
                              "--horizon", "20", "--seed", "2"])
    assert res.exit_code == 0, res.output
    rows = _rows(bench)
    assert {r["horizon"][1] for r in rows} == {20, 40}
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"question_id": r["id"],
                                         "prediction": answer_text(r["answer"])}) + "\n"
                             for r in rows))
    for system in ("full-context", "rag"):
        out = tmp_path / system
        res = _run(bench, out, "--model", f"replay:{preds}", "--system", system,
                   "--bench-option", "frames=mosaic:4")
        assert res.exit_code == 0, res.output
        records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
        assert len(records) == len(rows) and all(r["status"] == "ok" for r in records)
        wrong = [(r["question_id"], r["gold"]) for r in records if r["scores"]["rule"] != 1]
        assert wrong == []
        report = runner.invoke(app, ["report", str(out)])
        assert report.exit_code == 0, report.output


def test_question_ids_keep_a_subset(bench, tmp_path):
    keep = [r["id"] for r in _rows(bench)][:3]
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(keep) + "\n")
    loaded = _load(bench, question_ids=str(ids))
    assert loaded.question_count() == 3
    assert sorted(q.question_id for e in loaded.episodes() for q in e.questions) == sorted(keep)


def test_question_ids_the_benchmark_lacks_are_named(bench, tmp_path):
    # one good and one bad id used to run one question (issue 29, design 0043)
    ids = tmp_path / "ids.txt"
    ids.write_text(_rows(bench)[0]["id"] + "\nno-such-question\n")
    with pytest.raises(InputError, match="1 question id\\(s\\) in the id list are not in "
                                         "the data: no-such-question"):
        _load(bench, question_ids=str(ids))


def test_a_non_utf8_byte_is_a_named_error_and_the_checksum_is_checked_first(bench, tmp_path):
    """One bad byte in trajectory.jsonl (issue 25 §5): an InputError naming the file and the
    line, never a UnicodeDecodeError; in a benchmark folder the checksum says it first."""
    from memgauge.games import read_trajectory

    traj = bench / "trajectories" / "traj-b" / "trajectory.jsonl"
    lines = traj.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"do"', b'"d\xff"', 1)
    damaged = b"\n".join(lines)
    copy = tmp_path / "copy"
    shutil.copytree(traj.parent, copy)  # the bare folder, as `memgauge play` wrote it
    (copy / "trajectory.jsonl").write_bytes(damaged)
    with pytest.raises(InputError, match=r"trajectory\.jsonl.*line 3.*not UTF-8"):
        read_trajectory(copy)
    traj.write_bytes(damaged)
    with pytest.raises(InputError, match="the trajectory changed"):
        _load(bench)
