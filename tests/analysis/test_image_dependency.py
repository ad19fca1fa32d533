"""Every question gets an image-dependency label (issue 12), so wrong answers fold into all
five error categories: computed from the facts a generated answer needs, inferred from the
evidence turns elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.datasets import make_png
from typer.testing import CliRunner

from memgauge.analysis import error_breakdown
from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.cli import app
from memgauge.registry import lookup
from memgauge.runner import read_records

runner = CliRunner()


def _load(bench: str, data: Path, **kw) -> list:
    loader = lookup("benchmark", bench)(BenchmarkOptions(data=str(data), **kw))
    return [q for ep in loader.episodes() for q in ep.questions]


def test_synth_labels_come_from_the_facts_the_answer_needs(tmp_path: Path) -> None:
    generate(SynthConfig(out=str(tmp_path / "b"), questions=11, tiers=["4k"], seed=5))
    questions = _load("synth", tmp_path / "b")
    by_family = {q.meta["family"]: q.labels for q in questions}
    # the brand is read off the label photo, its origin from a text: both are needed
    assert by_family["ie_entity"].image_dependency == "mixed"
    assert by_family["ie_scene"].image_dependency == "essential"
    assert all(not labels.image_dependency_inferred for labels in by_family.values())
    assert {q.labels.image_dependency for q in questions} == {"mixed", "essential"}
    # the same benchmark in the MemLens layout: inferred from its evidence sessions, alike
    exported = _load("memlens", tmp_path / "b" / "memlens" / "dataset_4k.json",
                     image_dir=str(tmp_path / "b"))
    for q, again in zip(questions, exported, strict=True):
        if q.meta["family"] == "ar":
            continue  # a refusal's evidence is left out of its history
        assert again.labels.image_dependency == q.labels.image_dependency, q.meta["family"]
        assert again.labels.image_dependency_inferred


def _memlens_item(qid: str, gold: str, sessions: list, evidence: list[int],
                  qtype: str = "information_extraction") -> dict:
    return {"question_id": qid, "question": f"Question {qid}?", "answer": gold,
            "question_type": qtype, "question_subtype": "entity", "question_date": "2024/05/01",
            "haystack_dates": ["2024/01/01"] * len(sessions), "haystack_sessions": sessions,
            "answer_session_ids": evidence}


def test_every_error_category_occurs(tmp_path: Path, stub) -> None:
    make_png(tmp_path / "red.png", "red")
    pic = [{"role": "user", "content": "<image> my mug", "images": ["red.png"]},
           {"role": "assistant", "content": "Nice."}]
    words = [{"role": "user", "content": "My sister lives in Lyon."},
             {"role": "assistant", "content": "Lovely city."}]
    items = [
        _memlens_item("visual", "red", [pic, words], [0]),
        _memlens_item("textual", "Lyon", [pic, words], [1]),
        _memlens_item("mixed", "red Lyon", [pic, words], [0, 1]),
        _memlens_item("output", "red", [pic, words], [0]),
        _memlens_item("reasoning", "x", [pic, words], [0], qtype="answer_refusal"),
        _memlens_item("unknown", "red", [pic, words], []),
    ]
    data = tmp_path / "dataset_32k.json"
    data.write_text(json.dumps(items))
    labels = {q.question_id: q.labels for q in _load("memlens", data)}
    assert labels["visual"].image_dependency == "essential"
    assert labels["textual"].image_dependency == "text"
    assert labels["mixed"].image_dependency == "mixed"
    assert labels["unknown"].image_dependency is None
    assert labels["visual"].image_dependency_inferred

    def answer(body: dict) -> str:  # wrong everywhere; a degenerate loop for "output"
        last = body["messages"][-1]["content"]
        text = last if isinstance(last, str) else last[-1]["text"]
        return "the the the " * 60 if "Question output?" in text else "blue"

    stub.answer = answer
    got = runner.invoke(app, ["run", "--bench", "memlens", "--data", str(data), "--out",
                              str(tmp_path / "r"), "--model", "openai:m", "--base-url",
                              stub.base_url])
    assert got.exit_code == 0, got.output
    records = list(read_records(tmp_path / "r").values())
    out = error_breakdown(records)
    assert out["by_category"] == {"visual": 1, "textual": 1, "mixed": 1, "output": 1,
                                  "reasoning": 1, "unknown": 1}


LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo10"


def test_locomo_labels_follow_caption_bearing_evidence() -> None:
    if not LOCOMO.is_dir():
        pytest.skip("shared LoCoMo data (../shared/data/locomo10) is absent")
    loader = lookup("benchmark", "locomo")(BenchmarkOptions(data=str(LOCOMO)))
    seen: dict[str | None, int] = {}
    for ep in loader.episodes():
        turns = {t.turn_id: t for s in ep.sessions for t in s.turns}
        for q in ep.questions:
            dep = q.labels.image_dependency
            seen[dep] = seen.get(dep, 0) + 1
            with_photo = [bool(turns[p.turn_id].images) for p in q.evidence
                          if p.turn_id in turns]
            if dep == "essential":
                assert with_photo and all(with_photo)
            elif dep == "text":
                assert with_photo and not any(with_photo)
            elif dep == "mixed":
                assert any(with_photo) and not all(with_photo)
            else:
                assert not with_photo  # no usable evidence: left unknown
    assert all(seen.get(k, 0) > 100 for k in ("essential", "mixed", "text"))
