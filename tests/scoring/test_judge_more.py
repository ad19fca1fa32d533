"""The five-level MemEye rubric, judge error labels, extract-then-match, judge timeouts,
and judging while running (``run --judge``), all against the local stub server."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from helpers.datasets import colour_answer, write_memlens
from helpers.stub_server import StubServer, last_text

from memgauge.analysis import error_breakdown, label_error
from memgauge.cache import ResponseCache
from memgauge.models import ModelSettings, create_model
from memgauge.runner import RunConfig, load_manifest, read_records, run
from memgauge.schema import Ability, AnswerType, BenchmarkInfo, Labels, Record, Response
from memgauge.scoring import (
    JUDGE_PROMPT_VERSION,
    JudgeOptions,
    MemEyeRubric,
    judge_run,
    parse_level,
)

A, T = Ability, AnswerType


@pytest.mark.parametrize(("reply", "value"), [
    ('{"score": 0.25, "reasoning": "x"}', 0.25),
    ('{"score": 0.75}', 0.75),
    ('{"score": "0.5"}', 0.5),
    ('{"score": 0.74}', 0.75),  # within 0.05 of a level
    ('{"score": 1}', 1.0),
    ('{"score": 0}', 0.0),
    ('{"score": 0.6}', None),  # between levels: unreadable, asked again
    ('{"score": 3}', None),
    ('{"score": -1}', None),
    ("no json", None),
    ('{"score": 0 or 0.25 or 0.5 or 0.75 or 1, "reasoning": "..."}', None),  # the template
])
def test_memeye_levels_are_kept(reply, value):
    assert parse_level(reply) == value


def test_prompt_versions_carry_a_digest():
    assert re.fullmatch(r"2\.[0-9a-f]{8}", JUDGE_PROMPT_VERSION)
    assert re.fullmatch(r"2\.[0-9a-f]{8}", MemEyeRubric.version)
    assert MemEyeRubric.version != JUDGE_PROMPT_VERSION


def _rec(qid, gold, prediction, *, answer_type=T.FREE_TEXT, ability=A.INFORMATION_EXTRACTION,
         subtype="entity", bench="memlens", rule=0.0, dep=None, **meta):
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name=bench),
                  status="ok", ability=ability, subtype=subtype, answer_type=answer_type,
                  labels=Labels(image_dependency=dep), question=f"Question {qid}?", gold=gold,
                  prediction=prediction, response=Response(text=prediction),
                  scores={"rule": rule}, meta=meta)


def _write(run_dir, recs):
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text('{"config": {"identity": {}}}')
    (run_dir / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in recs))


def _judge(stub, tmp_path, run_dir, **options):
    async def go():
        model = create_model("openai:judge-stub", ModelSettings(
            base_url=stub.base_url, retry_base_s=0.01, max_attempts=2, timeout_s=0.5,
            cache=ResponseCache(tmp_path / "cache.sqlite")))
        try:
            return await judge_run(run_dir, model, concurrency=2,
                                   options=JudgeOptions(**options))
        finally:
            await model.aclose()
    return asyncio.run(go())


def _prompt(body):
    return last_text(body)


def test_memeye_five_levels_end_to_end(tmp_path):
    run_dir = tmp_path / "run"
    levels = {"q0": 0.0, "q1": 0.25, "q2": 0.5, "q3": 0.75, "q4": 1.0}
    _write(run_dir, [_rec(q, "a red mug", "some answer", bench="memeye") for q in levels]
           + [_rec("q_lens", "Paris", "Paris")])  # a MemLens item in the same run: binary

    def answer(body):
        p = _prompt(body)
        if "Question q_lens?" in p:
            assert "grading teacher" in p
            return '{"score": 1, "reason": "same"}'
        assert "five-level scale" in p
        qid = re.search(r"Question (q\d)\?", p).group(1)
        if "kind of mistake" in p:
            return '{"label": "grounding_failure", "reason": "misread"}'
        return json.dumps({"score": levels[qid], "reasoning": "r"})

    with StubServer(answer=answer) as stub:
        counts = _judge(stub, tmp_path, run_dir, label_errors=False)
    assert counts["judged"] == 6 and counts["failures"] == 0
    recs = read_records(run_dir)
    got = {q: recs[q].scores["judge"] for q in levels}
    assert got == levels  # 0.25 and 0.75 are not snapped to 0.5 and 1
    assert sum(got.values()) / 5 == 0.5  # the reference's collapse would give 0.65
    assert recs["q1"].score_details["judge"].details["rubric"] == "memeye"
    assert recs["q_lens"].score_details["judge"].details["rubric"] == "memlens"


def test_memeye_rotations_are_never_judged_and_a_failed_open_one_is_a_judge_error(tmp_path):
    """Issue 24: the letter alone measures a rotation, the judge alone an open question."""
    run_dir = tmp_path / "run"
    rotations = [_rec(f"t:q1:r{k}", g, g, answer_type=T.MCQ, bench="memeye", rule=1.0,
                      base_question_id="t:q1", rotation=k, rotations=2, measure="letter")
                 for k, g in ((1, "A"), (2, "B"))]
    legacy = _rec("t:q0:r1", "C", "C", answer_type=T.MCQ, bench="memeye", rule=1.0,
                  base_question_id="t:q0", rotation=1)  # recorded before meta.measure
    opened = [_rec(q, "a red mug", "red", bench="memeye", base_question_id=q[:-5],
                   measure="judge") for q in ("t:q1:open", "t:q2:open")]
    _write(run_dir, [*rotations, legacy, *opened])
    asked: list[str] = []

    def answer(body):
        p = _prompt(body)
        asked.append(re.search(r"Question (\S+)\?", p).group(1))
        return "unreadable" if "t:q2:open" in p else '{"score": 0.75, "reasoning": "r"}'

    with StubServer(answer=answer) as stub:
        counts = _judge(stub, tmp_path, run_dir, label_errors=False)
    assert set(asked) == {"t:q1:open", "t:q2:open"}  # no rotation reached the judge
    assert counts["judged"] == 1 and counts["failures"] == 1
    recs = read_records(run_dir)
    assert recs["t:q1:open"].scores["judge"] == 0.75
    failed = recs["t:q2:open"]
    assert "judge" not in failed.scores and failed.meta["judge_error"]["scorer"] == "judge"
    assert all("judge" not in recs[q].scores for q in ("t:q1:r1", "t:q1:r2", "t:q0:r1"))
    manifest = load_manifest(run_dir)
    assert (manifest["judge"]["judged"], manifest["judge"]["failures"]) == (1, 1)


def test_judge_labels_wrong_answers_the_rules_leave(tmp_path):
    run_dir = tmp_path / "run"
    _write(run_dir, [
        _rec("q_misread", "a red mug", "a blue mug", dep="essential"),
        _rec("q_made_up", "a red mug", "You bought a bicycle.", dep="text"),
        _rec("q_stale", "brioche", "sourdough", ability=A.KNOWLEDGE_UPDATE,
             old_answers=["sourdough"]),  # the rules name it: no label call
        _rec("q_right", "Paris", "Paris", rule=1.0),
    ])

    def answer(body):
        p = _prompt(body)
        if "kind of mistake" in p:
            if "bicycle" in p:
                return '{"label": "unsupported_answer", "reason": "invented"}'
            return 'Sure: {"label": "grounding_failure", "reason": "wrong colour"}'
        return '{"score": 1}' if "Question q_right?" in p else '{"score": 0}'

    with StubServer(answer=answer) as stub:
        counts = _judge(stub, tmp_path, run_dir)
        assert counts["labelled"] == 2 and counts["judged"] == 4
        assert sum("kind of mistake" in _prompt(b) for b in stub.requests) == 2
        recs = read_records(run_dir)
        misread = label_error(recs["q_misread"], scorer="judge")
        assert (misread.label, misread.category) == ("grounding_failure", "visual")
        made_up = label_error(recs["q_made_up"], scorer="judge")
        assert (made_up.label, made_up.category) == ("unsupported_answer", "textual")
        assert label_error(recs["q_stale"], scorer="judge").label == "stale_answer"
        assert "judge_error_label" not in recs["q_stale"].meta
        breakdown = error_breakdown(recs.values(), scorer="judge")
        assert breakdown["by_label"] == {"grounding_failure": 1, "unsupported_answer": 1,
                                         "stale_answer": 1}
        before = len(stub.requests)
        again = _judge(stub, tmp_path, run_dir)
        assert len(stub.requests) == before and again["judged"] == 0


def test_extract_then_match(tmp_path):
    run_dir = tmp_path / "run"
    reasoning = "First I counted 2 mugs, then 5 more on Tuesday... no wait. "
    _write(run_dir, [
        _rec("q_count", "3", reasoning + "So the total is three.", answer_type=T.INTEGER,
             ability=A.MULTI_SESSION_REASONING, subtype="counting"),
        _rec("q_refuse", "Insufficient information", "I can't tell from our chats.",
             answer_type=T.REFUSAL, ability=A.ANSWER_REFUSAL, subtype=None),
        _rec("q_vague", "2024-03-05", "Sometime in spring, maybe.", answer_type=T.DATE,
             ability=A.TEMPORAL_REASONING, subtype="date"),
        _rec("q_date", "2024-03-05", "It was on March 5th, 2024.", answer_type=T.DATE,
             ability=A.TEMPORAL_REASONING, subtype="date"),
        _rec("q_broken", "B", "B", answer_type=T.CHOICE, ability=A.TEMPORAL_REASONING,
             subtype="duration_comparison"),
    ])

    def answer(body):
        p = _prompt(body)
        if "extract the final answer" not in p:
            return '{"score": 1}'
        if "q_count" in p:
            assert "digits only" in p
            return '{"answer": "3"}'
        if "q_refuse" in p:
            return '{"answer": "REFUSED"}'
        if "q_vague" in p:
            return '{"answer": "NO_CLEAR_ANSWER"}'
        if "q_date" in p:
            assert "YYYY/MM/DD" in p
            return '```json\n{"answer": "2024/03/05"}\n```'
        return "I cannot do that"

    with StubServer(answer=answer) as stub:
        counts = _judge(stub, tmp_path, run_dir, extract=True, label_errors=False)
    assert counts["extracted"] == 4 and counts["extract_failures"] == 1
    recs = read_records(run_dir)
    assert {q: recs[q].scores.get("extract-match") for q in recs} == {
        "q_count": 1.0, "q_refuse": 1.0, "q_vague": 0.0, "q_date": 1.0, "q_broken": None}
    assert recs["q_count"].score_details["extract-match"].details["extracted"] == "3"
    assert recs["q_broken"].meta["extract_error"]["kind"] == "unparseable_reply"
    assert recs["q_broken"].scores["judge"] == 1.0  # the judge itself still scored it


def test_judge_timeout_is_a_judge_error_not_a_zero(tmp_path):
    run_dir = tmp_path / "run"
    _write(run_dir, [_rec("q1", "Paris", "Paris")])
    with StubServer(answer=lambda body: '{"score": 1}') as stub:
        stub.hang_s = 2.0
        stub.plan = ["hang", "hang"]
        counts = _judge(stub, tmp_path, run_dir)
    assert counts["failures"] == 1 and counts["judged"] == 0
    rec = read_records(run_dir)["q1"]
    assert "judge" not in rec.scores and rec.meta["judge_error"]["kind"] == "timeout"


def test_two_judges_and_bad_names(tmp_path):
    run_dir = tmp_path / "run"
    _write(run_dir, [_rec("q1", "Paris", "Paris")])
    with StubServer(answer=lambda body: '{"score": 1}') as stub:
        _judge(stub, tmp_path, run_dir)
        _judge(stub, tmp_path, run_dir, name="judge-b", mode="memlens-compat")
    rec = read_records(run_dir)["q1"]
    assert rec.scores["judge"] == 1.0 and rec.scores["judge-b"] == 1.0
    manifest = load_manifest(run_dir)
    assert set(manifest["judges"]) == {"judge", "judge-b"}
    assert manifest["judges"]["judge-b"]["mode"] == "memlens-compat"
    from memgauge.errors import InputError
    with pytest.raises(InputError, match="contain 'judge'"):
        JudgeOptions(name="grader").check()
    with pytest.raises(InputError, match="rubric"):
        JudgeOptions(rubric="lenient").check()


def test_run_with_judge_then_rerun_makes_no_calls(tmp_path):
    data = write_memlens(tmp_path, 5)
    judged: list[str] = []

    def judge_answer(body):
        p = _prompt(body)
        judged.append(p)
        if "kind of mistake" in p:
            return '{"label": "grounding_failure", "reason": "wrong colour"}'
        pred = p.split("Student answer: ")[1].split("\n")[0]
        gold = p.split("Standard answer: ")[1].split("\n")[0]
        return json.dumps({"score": int(pred == gold), "reason": "compared"})

    def config(out, **kw):
        return RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                         out=str(tmp_path / out), model="openai:stub-vlm",
                         base_url=model_stub.base_url, progress=False, retry_base_s=0.01,
                         cache_path=str(tmp_path / "cache.sqlite"), **kw)

    with StubServer(answer=colour_answer) as model_stub, \
            StubServer(answer=judge_answer) as judge_stub:
        # first without a judge, then the same run with one: earlier answers get judged
        first = run(config("run", limit=3))
        assert first.ok == 3 and judge_stub.requests == []
        result = run(config("run", judge="openai:judge-stub", judge_base_url=judge_stub.base_url))
        assert result.ok == 2 and result.skipped == 3
        recs = read_records(tmp_path / "run")
        assert all("judge" in r.scores for r in recs.values())
        assert recs["q004"].scores == {**recs["q004"].scores, "rule": 0.0, "judge": 0.0}
        assert recs["q004"].meta["judge_error_label"]["label"] == "grounding_failure"
        assert recs["q000"].scores["judge"] == 1.0
        assert "judge_s" in recs["q003"].timings
        manifest = load_manifest(tmp_path / "run")
        assert manifest["judge"]["judged"] == 5 and manifest["judge"]["model"]["model"] == \
            "judge-stub"
        assert "judge" not in manifest["config"]["identity"]
        n_model, n_judge = len(model_stub.requests), len(judge_stub.requests)
        assert n_judge == 6  # five verdicts and one label
        again = run(config("run", judge="openai:judge-stub", judge_base_url=judge_stub.base_url))
        assert again.skipped == 5
        assert (len(model_stub.requests), len(judge_stub.requests)) == (n_model, n_judge)
    from typer.testing import CliRunner

    from memgauge.cli import app

    rep = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    assert rep.exit_code == 0, rep.output
    assert "Primary scorer:** `judge`" in rep.output
    assert f"judge = openai:judge-stub at {judge_stub.base_url} (rubric auto" in rep.output
    assert "5 judged, 0 judge failures" in rep.output
    assert "| grounding_failure | 1 |" in rep.output


def test_cli_run_and_score_with_judge_options(tmp_path):
    from typer.testing import CliRunner

    from memgauge.cli import app

    data = write_memlens(tmp_path, 3)
    with StubServer(answer=colour_answer) as model_stub, \
            StubServer(answer=lambda body: '{"score": 1, "reason": "ok"}') as judge_stub:
        res = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
            "--model", "openai:m", "--base-url", model_stub.base_url,
            "--out", str(tmp_path / "run"), "--judge", "openai:j",
            "--judge-base-url", judge_stub.base_url, "--judge-rubric", "memeye"])
        assert res.exit_code == 0, res.output
        recs = read_records(tmp_path / "run")
        # memeye forced on every item, replies read on its scale
        assert {r.score_details["judge"].details["rubric"] for r in recs.values()} == {"memeye"}
        res = CliRunner().invoke(app, [
            "score", str(tmp_path / "run"), "--judge", "openai:j2", "--judge-base-url",
            judge_stub.base_url, "--name", "judge-b", "--extract"])
        assert res.exit_code == 0, res.output
        assert "judged 3" in res.output and "extract-failures 3" in res.output
    recs = read_records(tmp_path / "run")
    assert all(r.scores["judge-b"] == 1.0 and "extract_error" in r.meta for r in recs.values())
    bad = CliRunner().invoke(app, ["score", str(tmp_path / "run"), "--judge", "openai:j",
                                   "--name", "grader"])
    assert bad.exit_code == 2 and "contain 'judge'" in bad.output
    bad = CliRunner().invoke(app, [
        "run", "--bench", "memlens", "--data", str(data), "--model", "openai:m",
        "--out", str(tmp_path / "run2"), "--judge", "openai:j", "--judge-rubric", "nope"])
    assert bad.exit_code == 2 and "rubric" in bad.output


def test_every_judge_keeps_its_own_failure(tmp_path):
    # Two judges fail on the same record: both errors are kept, not just the last one's;
    # a later verdict of one clears its own and leaves the other's.
    run_dir = tmp_path / "run"
    _write(run_dir, [_rec("q1", "Paris", "Paris")])
    with StubServer(answer=lambda body: "I cannot grade this") as stub:
        _judge(stub, tmp_path / "a", run_dir, label_errors=False)
        _judge(stub, tmp_path / "b", run_dir, name="judge-b", label_errors=False)
    rec = read_records(run_dir)["q1"]
    assert set(rec.meta["judge_errors"]) == {"judge", "judge-b"}
    assert {e["kind"] for e in rec.judge_errors().values()} == {"unparseable_reply"}
    assert load_manifest(run_dir)["judges"]["judge"]["failures"] == 1
    with StubServer(answer=lambda body: '{"score": 1}') as stub:
        _judge(stub, tmp_path / "c", run_dir, label_errors=False)
    rec = read_records(run_dir)["q1"]
    assert rec.scores["judge"] == 1.0 and set(rec.judge_errors()) == {"judge-b"}
    # the legacy field names one still failing
    assert rec.meta["judge_error"]["scorer"] == "judge-b"
    assert load_manifest(run_dir)["judges"]["judge"]["failures"] == 0
