from __future__ import annotations

import asyncio
import json

import pytest
from helpers.stub_server import StubServer, last_text

from memgauge.cache import ResponseCache
from memgauge.models import ModelSettings, create_model
from memgauge.runner import load_manifest, read_records
from memgauge.schema import Ability, AnswerType, BenchmarkInfo, ErrorInfo, Record, Response
from memgauge.scoring import (
    JUDGE_PROMPT_VERSION,
    build_prompt,
    default_scorers,
    judge_run,
    parse_reply,
    prepare,
    task_key,
)

A = Ability


@pytest.mark.parametrize(("ability", "subtype", "answer", "key"), [
    (A.INFORMATION_EXTRACTION, "previnfo", "bottom right", "IE_PreviousInfo"),
    (A.INFORMATION_EXTRACTION, "entity", "SCHOOL", "IE_Entity"),
    (A.INFORMATION_EXTRACTION, None, "SCHOOL", "IE_Entity"),
    (A.MULTI_SESSION_REASONING, "arithmetic", "$260", "MSR_Arithmetic"),
    (A.MULTI_SESSION_REASONING, "counting", "3", "MSR_Counting"),
    (A.MULTI_SESSION_REASONING, "something_else", "3", "MSR_Counting"),
    (A.MULTI_SESSION_REASONING, "entity_resolution", "Yes", "MSR_YesNo"),
    (A.MULTI_SESSION_REASONING, "entity_resolution", "No", "MSR_YesNo"),
    (A.MULTI_SESSION_REASONING, "entity_resolution", "4", "MSR_Counting"),
    (A.TEMPORAL_REASONING, "duration_comparison", "A", "TR_DurationComparison"),
    (A.TEMPORAL_REASONING, "order_ranking", "(2)(1)(3)", "TR_OrderRanking"),
    (A.TEMPORAL_REASONING, "temporal_info_extraction", "2024-03-05", "TR_DateExtraction"),
    (A.TEMPORAL_REASONING, None, "2024-03-05", "TR_DateExtraction"),
    (A.KNOWLEDGE_UPDATE, None, "brioche", "KU_KnowledgeUpdate"),
    (A.ANSWER_REFUSAL, "anything", "x", "AR_AnswerRefusal"),
    (A.SINGLE_HOP, None, "x", "IE_Entity"),
    ("multi_session_reasoning", "entity_resolution", ["Yes"], "MSR_YesNo"),
])
def test_task_key(ability, subtype, answer, key):
    assert task_key(ability, subtype, answer) == key


def test_build_prompt_case_block():
    p = build_prompt("Which bread now?", "brioche", "brioche", "KU_KnowledgeUpdate",
                     old_answer="sourdough")
    assert "Standard answer: brioche" in p and "Old (outdated) answer: sourdough" in p
    assert p.rstrip().endswith('{"score": 0 or 1, "reason": "..."}')
    ar = build_prompt("Where?", "Tokyo", "I don't know", "AR_AnswerRefusal")
    assert "Standard answer: Insufficient information" in ar and "Tokyo" not in ar
    with pytest.raises(ValueError):
        build_prompt("q", "a", "b", "NOPE")


def test_prepare_modes():
    words = "abcd " * 600  # 3,000 chars, 600 words
    compat, default = prepare(words, "memlens-compat"), prepare(words, "default")
    assert compat.auto_zero and not compat.truncated
    assert not default.auto_zero and default.text == words.strip()

    long = ("x" * 9 + " ") * 1000  # 10,000 chars, 1,000 words
    marker = "[...truncated earlier reasoning...]\n"
    compat, default = prepare(long, "memlens-compat"), prepare(long, "default")
    body = long.strip()
    assert compat.truncated and compat.text.startswith(marker)
    assert len(compat.text) - len(marker) == int(len(body) * 0.3) == 2999
    assert not compat.auto_zero  # ~300 words after truncation: judged
    assert default.text.startswith(marker) and len(default.text) - len(marker) == 6000
    assert default.text.endswith(body[-100:]) and not default.auto_zero

    assert prepare("<think>hmm</think> Paris", "default").text == "Paris"
    with pytest.raises(ValueError):
        prepare("x", "strict")


@pytest.mark.parametrize(("reply", "value"), [
    ('{"score": 1, "reason": "same"}', 1.0),
    ('{"score": 0}', 0.0),
    ('Sure.\n```json\n{"score": 1, "reason": "ok"}\n```', 1.0),
    ('[Score]: 1 points [JSON]: {"answer_score": 1}', 1.0),
    ('"answer_score": 0', 0.0),
    ('{"score": "1"}', 1.0),
    # not verdicts (a real small judge gave all three): never clamped, never read as 0
    ('{"score": 5}', None),
    ('{"score": -1}', None),
    ('{"score": "4", "reason": "good"}', None),
    ('{"score": 0 or 1, "reason": "..."}', None),
    ('Reply with one JSON object:\n{"score": 0 or 1, "reason": "..."}', None),
    ('"score": 0 or 1', None),
    ('{"score": 0.5}', None),
    ("The student deserves full marks.", None),
    ("", None),
    ('{"reason": "no score"}', None),
])
def test_parse_reply(reply, value):
    assert parse_reply(reply) == value


def test_judge_not_in_default_scorers():
    assert all(s.name != "judge" for s in default_scorers())


def _record(qid, ability, subtype, gold, prediction, status="ok", **meta):
    return Record(
        question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="memlens"),
        status=status, ability=ability, subtype=subtype, answer_type=AnswerType.FREE_TEXT,
        question=f"Question about {qid}?", gold=gold, prediction=prediction,
        response=Response(text=prediction,
                          error=ErrorInfo(kind="timeout", message="x") if status == "error"
                          else None),
        scores={"rule": 0.0}, meta=meta)


def _write_run(run_dir):
    run_dir.mkdir()
    # the least a run manifest holds (memgauge run writes much more)
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": "r1", "config": {"identity": {}}}))
    recs = [
        _record("q_right", A.INFORMATION_EXTRACTION, "entity", "Paris", "It is Paris."),
        _record("q_old", A.KNOWLEDGE_UPDATE, None, "brioche", "sourdough",
                old_answers=["rye", "sourdough"]),
        _record("q_flaky", A.MULTI_SESSION_REASONING, "counting", "3", "three"),
        _record("q_garbage", A.TEMPORAL_REASONING, "order_ranking", "(1)(2)", "(1)(2)"),
        _record("q_failed", A.ANSWER_REFUSAL, None, "x", None, status="error"),
    ]
    (run_dir / "records.jsonl").write_text(
        "".join(r.model_dump_json() + "\n" for r in recs))


def _answer(body):
    prompt = last_text(body)
    if "q_garbage" in prompt:
        return "I am not sure how to grade this."
    if "q_flaky" in prompt and "Attempt 2" not in prompt:
        return "Let me think about it..."
    if "q_old" in prompt:
        assert "Old (outdated) answer: sourdough" in prompt
        return '{"score": 0, "reason": "outdated"}'
    return '```json\n{"score": 1, "reason": "matches"}\n```'


async def _judge(stub, tmp_path, run_dir):
    settings = ModelSettings(base_url=stub.base_url, retry_base_s=0.01, max_attempts=3,
                             cache=ResponseCache(tmp_path / "judge-cache.sqlite"))
    model = create_model("openai:judge-stub", settings)
    try:
        return await judge_run(run_dir, model, concurrency=1)
    finally:
        await model.aclose()


def test_judge_run_end_to_end(tmp_path):
    run_dir = tmp_path / "run"
    _write_run(run_dir)
    with StubServer(answer=_answer) as stub:
        stub.plan = [500]
        counts = asyncio.run(_judge(stub, tmp_path, run_dir))
        assert counts == {"judged": 3, "skipped": 1, "failures": 1, "auto_zero": 0}
        # right 1 + old 1 + flaky 2 + garbage 3, plus the 500 that was retried
        assert len(stub.requests) == 8
        assert all(r["temperature"] == 0.0 for r in stub.requests)

        recs = read_records(run_dir)
        assert recs["q_right"].scores == {"rule": 0.0, "judge": 1.0}
        assert recs["q_old"].scores["judge"] == 0.0
        assert recs["q_flaky"].scores["judge"] == 1.0
        flaky = recs["q_flaky"].score_details["judge"]
        assert flaky.method == "judge" and flaky.version == JUDGE_PROMPT_VERSION
        assert flaky.details["task_key"] == "MSR_Counting" and flaky.details["attempts"] == 2
        assert flaky.details["mode"] == "default" and flaky.details["auto_zero"] is False
        assert "judge" not in recs["q_garbage"].scores
        assert recs["q_garbage"].meta["judge_error"]["kind"] == "unparseable_reply"
        assert "judge" not in recs["q_failed"].scores
        manifest = load_manifest(run_dir)
        assert manifest["run_id"] == "r1"
        assert manifest["judge"]["judged"] == 3 and manifest["judge"]["failures"] == 1
        assert manifest["judge"]["prompt_version"] == JUDGE_PROMPT_VERSION
        assert manifest["judge"]["model"]["model"] == "judge-stub"

        before = len(stub.requests)
        again = asyncio.run(_judge(stub, tmp_path, run_dir))
        # judged ones skipped; the unreadable one asked again, 3 attempts (design 0043)
        assert len(stub.requests) == before + 3
        assert again == {"judged": 0, "skipped": 4, "failures": 1, "auto_zero": 0}
        assert read_records(run_dir)["q_right"].scores["judge"] == 1.0


def test_judge_run_compat_auto_zero(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text('{"config": {"identity": {}}}')
    rec = _record("q_long", A.INFORMATION_EXTRACTION, "entity", "Paris", "abcd " * 600)
    (run_dir / "records.jsonl").write_text(rec.model_dump_json() + "\n")
    with StubServer(answer=_answer) as stub:
        model = create_model("openai:judge-stub", ModelSettings(base_url=stub.base_url))

        async def go():
            try:
                return await judge_run(run_dir, model, mode="memlens-compat")
            finally:
                await model.aclose()

        counts = asyncio.run(go())
        assert counts["auto_zero"] == 1 and counts["judged"] == 1
        assert stub.requests == []
    s = read_records(run_dir)["q_long"].score_details["judge"]
    assert s.value == 0.0 and s.details["auto_zero"] is True and s.details["reply"] is None


def test_cli_score(tmp_path):
    from typer.testing import CliRunner

    from memgauge.cli import app

    run_dir = tmp_path / "run"
    _write_run(run_dir)
    with StubServer(answer=_answer) as stub:
        res = CliRunner().invoke(app, ["score", str(run_dir), "--judge", "openai:j",
                                       "--judge-base-url", stub.base_url])
    assert res.exit_code == 3, res.output  # a verdict failed: as run's failed questions
    assert "judged 3" in res.output and "failures 1" in res.output
    # the failure's cause is named, not only counted
    assert "judge failures (recorded apart, never scored as 0" in res.output
    assert "unparseable_reply ×1" in res.output
    bad = CliRunner().invoke(app, ["score", str(run_dir), "--judge", "openai:j",
                                   "--mode", "lenient"])
    assert bad.exit_code == 2
