from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.longmemeval import longmemeval
from memgauge.errors import InputError
from memgauge.io import file_sha256
from memgauge.registry import lookup
from memgauge.schema import Ability, AnswerType, EvidenceRef

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "longmemeval"
MINI = FIX / "mini.json"


def load(path: Path | str, **kw):
    bench = longmemeval(BenchmarkOptions(data=str(path), **kw))
    return bench, list(bench.episodes())


def test_loads_with_session_ids_dates_and_types():
    assert lookup("benchmark", "longmemeval") is longmemeval
    bench, eps = load(MINI)
    assert [e.episode_id for e in eps] == ["e47becba", "gpt4_2655b836_abs", "0a995998"]
    e = eps[0]
    assert e.benchmark.name == "longmemeval"
    assert [s.session_id for s in e.sessions] == ["sharegpt_1", "answer_280352e9", "ultrachat_2"]
    assert e.sessions[1].date == "2023/05/22 (Mon) 14:00"
    assert e.sessions[1].turns[0].turn_id == "S2:1"
    q = e.questions[0]
    assert q.ability is Ability.INFORMATION_EXTRACTION and q.subtype == "single-session-user"
    assert q.answer_type is AnswerType.FREE_TEXT
    assert q.question_date == "2023/05/30 (Tue) 23:40"
    ms = eps[2].questions[0]
    assert ms.ability is Ability.MULTI_SESSION_REASONING
    assert ms.answer == "3"  # int answers become strings
    m = bench.manifest()
    assert m["counts"] == {"episodes": 3, "questions": 3, "images": 0, "missing_images": 0}
    assert m["inputs"] == {str(MINI): file_sha256(MINI)}


def test_evidence_session_and_turn_level():
    _, eps = load(MINI)
    ev = eps[0].questions[0].evidence
    assert EvidenceRef(session_id="answer_280352e9") in ev
    assert EvidenceRef(session_id="answer_280352e9", turn_id="S2:1") in ev
    assert len(ev) == 2
    assert eps[0].sessions[1].turns[0].meta == {"has_answer": True}
    ev3 = eps[2].questions[0].evidence
    assert [(r.session_id, r.turn_id) for r in ev3] == [
        ("x1", None), ("x2", None), ("x1", "S1:1"), ("x2", "S2:2")]


def test_abstention_mapping():
    _, eps = load(MINI)
    q = eps[1].questions[0]
    assert q.ability is Ability.ANSWER_REFUSAL
    assert q.answer_type is AnswerType.REFUSAL
    assert q.subtype == "temporal-reasoning"
    assert q.answer.startswith("The information provided is not enough")


def test_malformed_field():
    path = FIX / "malformed_content.json"
    with pytest.raises(InputError) as exc:
        load(path)
    err = exc.value
    assert (err.file, err.item, err.field) == (str(path), "0a995998",
                                               "haystack_sessions[1][1].content")
    assert "expected str, got list" in str(err)


def test_bad_type_and_missing_question(tmp_path):
    items = json.loads(MINI.read_text())
    items[0]["question_type"] = "single-session"
    p = tmp_path / "t.json"
    p.write_text(json.dumps(items))
    with pytest.raises(InputError) as exc:
        load(p)
    assert exc.value.field == "question_type" and exc.value.item == "e47becba"
    items = json.loads(MINI.read_text())
    del items[1]["question"]
    p.write_text(json.dumps(items))
    with pytest.raises(InputError) as exc:
        load(p)
    assert (exc.value.item, exc.value.field) == ("gpt4_2655b836_abs", "question")


def test_session_id_count_mismatch(tmp_path):
    items = json.loads(MINI.read_text())
    items[0]["haystack_session_ids"] = items[0]["haystack_session_ids"][:2]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(items))
    with pytest.raises(InputError, match="3 haystack_sessions"):
        load(p)


def test_fallback_session_ids_and_unknown_answer_session(tmp_path):
    items = json.loads(MINI.read_text())
    del items[0]["haystack_session_ids"]
    items[0]["answer_session_ids"] = ["2", "not-there"]
    p = tmp_path / "longmemeval_s.json"
    p.write_text(json.dumps(items[:1]))
    _, eps = load(p)
    e = eps[0]
    assert [s.session_id for s in e.sessions] == ["1", "2", "3"]
    assert e.benchmark.tier == "s"
    q = e.questions[0]
    assert [(r.session_id, r.turn_id) for r in q.evidence] == [("2", None), ("2", "S2:1")]
    assert q.meta["evidence_not_in_haystack"] == ["not-there"]


def test_subset_and_missing_ids(tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("0a995998\n")
    _, eps = load(MINI, question_ids=str(ids))
    assert [e.episode_id for e in eps] == ["0a995998"]
    ids.write_text("0a995998\nghost\n")
    with pytest.raises(InputError, match="ghost"):
        load(MINI, question_ids=str(ids))


def test_images_like_memlens(tmp_path):
    from PIL import Image

    Image.new("RGB", (8, 6), "red").save(tmp_path / "a.png")
    items = json.loads(MINI.read_text())
    items[0]["haystack_sessions"][0][0]["images"] = ["a.png"]
    p = tmp_path / "mm.json"
    p.write_text(json.dumps(items[:1]))
    bench, eps = load(p)
    img = eps[0].sessions[0].turns[0].images[0]
    assert (img.width, img.height) == (8, 6)
    assert bench.manifest()["counts"]["images"] == 1
