"""``memgauge score --batch``: judging through the Batch API shape against a loopback
server, compared with online judging of the same run."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from helpers.batch_server import BatchServer

from memgauge.cache import ResponseCache
from memgauge.errors import ConfigError
from memgauge.models import ModelSettings, create_model
from memgauge.runner import load_manifest, read_records
from memgauge.schema import Ability, AnswerType, BenchmarkInfo, Labels, Record, Response
from memgauge.scoring import JudgeOptions, judge_run
from memgauge.scoring._batch import BatchApiError, BatchJudgeModel, batch_judge_run

A, T = Ability, AnswerType


def _rec(qid, gold, prediction, *, bench="memlens", dep=None):
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name=bench),
                  status="ok", ability=A.INFORMATION_EXTRACTION, subtype="entity",
                  answer_type=T.FREE_TEXT, labels=Labels(image_dependency=dep),
                  question=f"Question {qid}?", gold=gold, prediction=prediction,
                  response=Response(text=prediction), scores={"rule": 0.0})


def _write(run_dir, recs):
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text('{"config": {"identity": {}}}')
    (run_dir / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in recs))


def _answer(body):
    prompt = body["messages"][-1]["content"]
    if "kind of mistake" in prompt:
        return '{"label": "grounding_failure", "reason": "wrong colour"}'
    if "Question q_retry?" in prompt and "(Attempt 2" not in prompt:
        return "I think it is fine."  # unreadable: asked again, rephrased
    if "Question q_eye?" in prompt:
        return '{"score": 0.75, "reasoning": "mostly"}'
    return '{"score": 1}' if "Question q_right?" in prompt else '{"score": 0}'


def _run(tmp_path, name="run"):
    run_dir = tmp_path / name
    _write(run_dir, [_rec("q_right", "Paris", "Paris"),
                     _rec("q_wrong", "a red mug", "a blue mug", dep="essential"),
                     _rec("q_retry", "Rome", "Rome, I believe"),
                     _rec("q_eye", "a red mug", "a red cup", bench="memeye")])
    return run_dir


def _model(server, cache_path, batch=True):
    settings = ModelSettings(base_url=server.base_url, retry_base_s=0.01, max_attempts=2,
                             timeout_s=5, cache=ResponseCache(cache_path, kind="judge"))
    model = create_model("openai:judge-m", settings)
    return BatchJudgeModel.like(model) if batch else model


def _batch(server, run_dir, cache_path, say=None, **options):
    async def go():
        model = _model(server, cache_path)
        try:
            return await batch_judge_run(run_dir, model, options=JudgeOptions(**options),
                                         poll_s=0.01, say=say)
        finally:
            await model.aclose()
            model.staged.cache.close()
    return asyncio.run(go())


def _online(server, run_dir, cache_path, **options):
    async def go():
        model = _model(server, cache_path, batch=False)
        try:
            return await judge_run(run_dir, model, options=JudgeOptions(**options))
        finally:
            await model.aclose()
            model.settings.cache.close()
    return asyncio.run(go())


def _verdicts(run_dir):
    return {q: (r.scores, {k: s.model_dump() for k, s in r.score_details.items()},
                r.meta.get("judge_error_label"), r.meta.get("judge_error"),
                r.meta.get("judge_cache"))
            for q, r in read_records(run_dir).items()}


def test_extraction_through_batches_equals_online(tmp_path):
    online_run = _run(tmp_path, "online")
    batch_run = tmp_path / "batched"
    shutil.copytree(online_run, batch_run)
    with BatchServer(_answer) as server:
        # the extraction prompt gets no extraction: three unreadable replies, then a failure
        online = _online(server, online_run, tmp_path / "online.sqlite", extract=True)
        counts = _batch(server, batch_run, tmp_path / "batch.sqlite", extract=True)
    assert online["extract_failures"] == 4
    assert {k: counts[k] for k in online} == online
    assert _verdicts(batch_run) == _verdicts(online_run)
    assert [r.meta["extract_error"] for r in read_records(batch_run).values()] == \
        [r.meta["extract_error"] for r in read_records(online_run).values()]


def test_batch_gives_the_online_verdicts_and_fills_the_cache(tmp_path):
    online_run = _run(tmp_path, "online")
    batch_run = tmp_path / "batched"
    shutil.copytree(online_run, batch_run)
    with BatchServer(_answer) as server:
        online = _online(server, online_run, tmp_path / "online.sqlite")
        online_bodies = list(server.online)
        counts = _batch(server, batch_run, tmp_path / "batch.sqlite")
        assert len(server.online) == len(online_bodies)  # the batch made no online call
        assert _verdicts(batch_run) == _verdicts(online_run)
        assert {k: counts[k] for k in online} == online
        # round 1: four verdicts; 2: the rephrased retry and the labels of the two wrong
        # answers; 3: the label of the retried answer, wrong too
        assert counts["batches"] == 3 and counts["batch_requests"] == len(online_bodies) == 8
        assert [len(u["data"].splitlines()) for u in server.uploads] == [4, 3, 1]
        assert {u["purpose"] for u in server.uploads} == {"batch"}
        assert all(c["endpoint"] == "/v1/chat/completions" and c["completion_window"] == "24h"
                   for c in server.created)
        sent = b"".join(u["data"] for u in server.uploads)
        assert all(b'"body":' + raw + b"}" in sent for raw in online_bodies)  # byte for byte
        entry = load_manifest(batch_run)["judges"]["judge"]
        assert entry["batches"] == ["batch_1", "batch_2", "batch_3"] and entry["judged"] == 4
        # an online score of the same run reuses what the batch stored in the cache
        fresh = _run(tmp_path, "fresh")
        _online(server, fresh, tmp_path / "batch.sqlite")
        # all but the flaky answer's unreadable first reply, which is never cached (0043)
        assert len(server.online) == len(online_bodies) + 1
        want = {q: v[:4] for q, v in _verdicts(online_run).items()}
        assert {q: v[:4] for q, v in _verdicts(fresh).items()} == want
        assert sorted(v[4]["judge"]["misses"] for v in _verdicts(fresh).values()) == [0, 0, 0, 1]


def test_an_interrupted_score_polls_the_same_batch(tmp_path):
    run_dir = _run(tmp_path)

    class Interrupted(Exception):
        pass

    def stop_after_submit(line):
        if "submitted" in line:
            raise Interrupted(line)

    with BatchServer(_answer, polls_to_finish=3) as server:
        with pytest.raises(Interrupted):
            _batch(server, run_dir, tmp_path / "c.sqlite", say=stop_after_submit,
                   label_errors=False)
        state = json.loads((run_dir / "batch-judge" / "judge.json").read_text())
        assert state["batch_id"] == "batch_1" and not state["collected"]
        assert len(state["custom_ids"]) == 4 and server.polls == []
        counts = _batch(server, run_dir, tmp_path / "c.sqlite", label_errors=False)
        assert counts["judged"] == 4 and counts["failures"] == 0
        assert server.polls[:3] == ["batch_1"] * 3  # the same batch, polled to its end
        assert [c["input_file_id"] for c in server.created] == ["file-1", "file-3"]
        assert len(server.batches) == 2  # the second is the retry round, not a resend
        state = json.loads((run_dir / "batch-judge" / "judge.json").read_text())
        assert state["batch_id"] == "batch_2" and state["collected"]
        # nothing left: a rerun sends nothing
        assert _batch(server, run_dir, tmp_path / "c.sqlite",
                      label_errors=False)["batch_requests"] == 0
        assert len(server.batches) == 2


def test_poll_errors_are_retried_then_named_with_the_batch_kept(tmp_path):
    run_dir = _run(tmp_path)
    with BatchServer(_answer) as server:
        server.poll_plan = [503]  # an overloaded moment: polled again
        assert _batch(server, run_dir, tmp_path / "c.sqlite",
                      label_errors=False)["judged"] == 4
        assert server.polls[:2] == ["batch_1", "batch_1"]

    other = _run(tmp_path, "other")
    with BatchServer(_answer) as server:
        server.poll_plan = [404]  # not retried
        with pytest.raises(BatchApiError, match=r"polling batch batch_1 .* HTTP 404: planned "
                           r"404; batch batch_1 stays recorded in .*judge.json: rerun"):
            _batch(server, other, tmp_path / "d.sqlite", label_errors=False)
        assert len(server.polls) == 1
        assert _batch(server, other, tmp_path / "d.sqlite", label_errors=False)["judged"] == 4
        assert len(server.uploads) == 2  # the rerun collected batch 1, then the retry round
    assert all("judge" in r.scores for r in read_records(other).values())


def test_an_upload_whose_batch_was_refused_is_reused(tmp_path):
    run_dir = _run(tmp_path)
    with BatchServer(_answer) as server:
        server.refuse_create = True
        with pytest.raises(BatchApiError, match=r"creating a batch of file file-1 .* HTTP 400: "
                                                r"batch quota reached"):
            _batch(server, run_dir, tmp_path / "c.sqlite", label_errors=False)
        server.refuse_create = False
        assert _batch(server, run_dir, tmp_path / "c.sqlite",
                      label_errors=False)["judged"] == 4
        assert [c["input_file_id"] for c in server.created] == ["file-1", "file-1", "file-3"]
        assert len(server.uploads) == 2  # file-1 once, then the retry round's


def test_a_round_over_the_batch_limits_goes_in_several_batches(tmp_path, monkeypatch):
    import memgauge.scoring._batch as batch_module

    monkeypatch.setattr(batch_module, "MAX_BATCH_REQUESTS", 3)
    run_dir = _run(tmp_path)
    with BatchServer(_answer) as server:
        counts = _batch(server, run_dir, tmp_path / "c.sqlite", label_errors=False)
        assert counts["judged"] == 4 and counts["batch_requests"] == 5
        # three of the four verdicts, then the fourth (with the retry, when the retried
        # answer was among the three: the order is the custom ids')
        sizes = [len(u["data"].splitlines()) for u in server.uploads]
        assert sizes[0] == 3 and sum(sizes) == 5 and max(sizes) <= 3


def test_line_errors_are_judge_failures_and_a_rerun_sends_only_them(tmp_path):
    run_dir = _run(tmp_path)
    broken = {"Question q_right?": "error", "Question q_eye?": "http500"}

    def outcome(body):
        prompt = body["messages"][-1]["content"]
        return next((v for k, v in broken.items() if k in prompt), "ok")

    with BatchServer(_answer, outcome=outcome) as server:
        counts = _batch(server, run_dir, tmp_path / "c.sqlite", label_errors=False)
        assert counts["failures"] == 2 and counts["judged"] == 2
        recs = read_records(run_dir)
        for qid, kind in (("q_right", "server_error"), ("q_eye", "http_500")):
            assert "judge" not in recs[qid].scores  # never scored as wrong
            err = recs[qid].meta["judge_error"]
            assert err["kind"] == kind
            assert "batch batch_1, file file-3, line" in err["message"]
        assert recs["q_wrong"].scores["judge"] == 0.0
        broken.clear()
        again = _batch(server, run_dir, tmp_path / "c.sqlite", label_errors=False)
        assert again["judged"] == 2 and again["failures"] == 0 and again["skipped"] == 2
        assert len(server.uploads[-1]["data"].splitlines()) == 2  # only the two failed
    recs = read_records(run_dir)
    assert recs["q_right"].scores["judge"] == 1.0 and "judge_error" not in recs["q_right"].meta


def test_expired_and_failed_batches_leave_failures_not_scores(tmp_path):
    run_dir = _run(tmp_path)

    def outcome(body):
        return "expire" if "Question q_wrong?" in body["messages"][-1]["content"] else "ok"

    with BatchServer(_answer, outcome=outcome) as server:
        counts = _batch(server, run_dir, tmp_path / "c.sqlite", label_errors=False)
    recs = read_records(run_dir)
    assert counts["failures"] == 1
    assert recs["q_wrong"].meta["judge_error"]["kind"] == "batch_expired"
    assert "judge" not in recs["q_wrong"].scores

    other = _run(tmp_path, "other")
    with BatchServer(_answer) as server:
        server.fail_batch = True
        counts = _batch(server, other, tmp_path / "d.sqlite", label_errors=False)
    recs = read_records(other)
    assert counts["failures"] == 4 and counts["judged"] == 0
    err = recs["q_right"].meta["judge_error"]
    assert err["kind"] == "batch_failed" and "batch batch_1 failed: line 1: model not found" \
        in err["message"]


def test_malformed_output_names_the_batch_file_and_line(tmp_path):
    run_dir = _run(tmp_path)
    said: list[str] = []

    def outcome(body):
        prompt = body["messages"][-1]["content"]
        return ("junk" if "Question q_right?" in prompt else
                "wrong_body" if "Question q_eye?" in prompt else "ok")

    with BatchServer(_answer, outcome=outcome) as server:
        counts = _batch(server, run_dir, tmp_path / "c.sqlite", say=said.append,
                        label_errors=False)
    recs = read_records(run_dir)
    assert counts["failures"] == 2
    junk = recs["q_right"].meta["judge_error"]
    assert junk["kind"] == "batch_missing" and "file file-2, line" in junk["message"]
    assert any(line.startswith("unreadable batch output: batch batch_1, file file-2, line")
               for line in said)
    wrong = recs["q_eye"].meta["judge_error"]
    assert wrong["kind"] == "bad_response" and "batch batch_1, file file-2, line" \
        in wrong["message"]
    assert "judge" not in recs["q_right"].scores and "judge" not in recs["q_eye"].scores


def test_configuration_mistakes_come_before_any_request(tmp_path):
    run_dir = _run(tmp_path)
    with BatchServer(_answer) as server:
        with pytest.raises(ConfigError, match="--batch-window"):
            async def go():
                model = _model(server, tmp_path / "c.sqlite")
                try:
                    await batch_judge_run(run_dir, model, window="1d")
                finally:
                    await model.aclose()
            asyncio.run(go())
        assert server.uploads == [] and server.polls == []
        with pytest.raises(ConfigError, match="one --judge-base-url"):
            BatchJudgeModel("m", ModelSettings(base_url=f"{server.base_url},{server.base_url}"))
        with pytest.raises(ConfigError, match="--name '../judge'"):
            _batch(server, run_dir, tmp_path / "c.sqlite", name="../judge")
        (run_dir / "batch-judge").mkdir()
        (run_dir / "batch-judge" / "judge.json").write_text(json.dumps(
            {"batch_id": "batch_9", "model": "other-judge", "base_url": server.base_url,
             "custom_ids": [], "collected": False}))
        with pytest.raises(ConfigError, match="batch batch_9 was sent to judge 'other-judge'"):
            _batch(server, run_dir, tmp_path / "c.sqlite")
        assert server.polls == []


def test_cli_score_batch(tmp_path):
    from typer.testing import CliRunner

    from memgauge.cli import app

    run_dir = _run(tmp_path)
    with BatchServer(_answer) as server:
        res = CliRunner().invoke(app, [
            "score", str(run_dir), "--judge", "openai:j", "--judge-base-url", server.base_url,
            "--batch", "--batch-poll-s", "0.01"])
        assert res.exit_code == 0, res.output
        assert "judged 4" in res.output and "batches 3" in res.output
        assert "0 of 8 judge calls came from the cache this time" in res.output
        assert "0 of 4 verdicts came from the cache (0 of 8 judge calls)" in res.output
        assert len(server.batches) == 3 and server.online == []
        bad = CliRunner().invoke(app, [
            "score", str(run_dir), "--judge", "openai:j", "--judge-base-url", server.base_url,
            "--batch", "--batch-window", "soon"])
        assert bad.exit_code == 2 and "--batch-window" in bad.output
        bad = CliRunner().invoke(app, [
            "score", str(run_dir), "--judge", "openai:j", "--judge-base-url", server.base_url,
            "--batch", "--name", "judge/b"])
        assert bad.exit_code == 2 and "--name 'judge/b'" in bad.output
        bad = CliRunner().invoke(app, [
            "score", str(run_dir), "--judge", "local:smollm2", "--batch"])
        assert bad.exit_code == 2 and "openai:<name>" in bad.output
        assert len(server.batches) == 3
    assert all("judge" in r.scores for r in read_records(run_dir).values())
