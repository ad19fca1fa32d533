"""Tests for the validation gates, on small hand-built episodes, images and records."""

from __future__ import annotations

import dataclasses
import json

import pytest

from memgauge.analysis import retrieval_recall
from memgauge.report._gates_md import render_gates_markdown
from memgauge.schema import (
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    ImageRef,
    Labels,
    Question,
    Record,
    Response,
    Session,
    Turn,
)
from memgauge.validation import (
    accuracy_gate,
    caption_proof,
    near_duplicates,
    normalize_for_match,
    visual_necessity_gate,
)
from memgauge.validation._gates import overall_verdict

# ---------------------------------------------------------------------------------------
# helpers


def text_session(sid, role, text):
    return Session(session_id=sid, meta={"role": role, "topic": "t"},
                   turns=[Turn(turn_id=f"{sid}:1", role="user", text=text),
                          Turn(turn_id=f"{sid}:2", role="assistant", text="Okay.")])


def make_episode(qid, sessions, *, needed=(), x="X1", family="fam", evidence=None,
                 text="question?"):
    q = Question(question_id=qid, text=text, answer="a", answer_type="free_text",
                 ability="information_extraction", labels=Labels(x=x),
                 evidence=evidence or [], meta={"family": family, "needed": list(needed)})
    return Episode(episode_id=qid, sessions=sessions, questions=[q],
                   benchmark=BenchmarkInfo(name="t"))


# ---------------------------------------------------------------------------------------
# 1. indistinguishability: tests/analysis/test_indistinguishability.py


# ---------------------------------------------------------------------------------------
# 2. near duplicates


def draw(path, *, shift=0, dots=()):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (96, 96), "white")
    d = ImageDraw.Draw(img)
    d.rectangle([10 + shift, 10, 50 + shift, 60], fill="black")
    d.ellipse([55, 40, 90, 85], fill=(200, 30, 30))
    for x, y in dots:
        d.point((x, y), fill="black")
    img.save(path)
    return str(path)


def draw_other(path):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (96, 96), "black")
    d = ImageDraw.Draw(img)
    for i in range(0, 96, 12):
        d.line([(i, 0), (95 - i, 95)], fill="white", width=3)
    img.save(path)
    return str(path)


def test_near_duplicates_classifies_pairs(tmp_path):
    pytest.importorskip("imagehash")
    a = draw(tmp_path / "a.png")
    a_rerender = draw(tmp_path / "a2.png")  # identical pixels, same facts: fine
    b_same_pixels = draw(tmp_path / "b.png")  # identical pixels, different facts: a bug
    c_close = draw(tmp_path / "c.png", dots=[(70, 20), (71, 20)])  # look-alike
    other = draw_other(tmp_path / "d.png")
    items = [
        (a, "receipt", {"total": "1.00"}),
        (a, "receipt", {"total": "1.00"}),  # the same use twice: one entry
        (a_rerender, "receipt", {"total": "1.00"}),
        (b_same_pixels, "receipt", {"total": "2.00"}),
        (c_close, "receipt", {"total": "3.00"}),
        (other, "clock", {"time": "9:00"}),
        (str(tmp_path / "missing.png"), "clock", {"time": "1:00"}),
    ]
    res = near_duplicates(items)
    assert res.n_images == 7 and res.n_files == 5 and res.missing_files
    assert res.exact_different_facts == 2  # b vs a, b vs a2
    assert res.verdict == "FAIL"
    assert res.same_facts == 1  # a vs a2
    assert res.different_facts == 3  # c vs a, c vs a2, c vs b
    assert res.different_facts_by_kind == {"receipt": 3}
    assert {e["b"] for e in res.examples_exact_different_facts} == {b_same_pixels}
    json.dumps(res.to_dict())


def test_near_duplicates_passes_without_exact_duplicates(tmp_path):
    pytest.importorskip("imagehash")
    a = draw(tmp_path / "a.png")
    c = draw(tmp_path / "c.png", dots=[(70, 20)])
    res = near_duplicates([(a, "label", {"x": 1}), (c, "label", {"x": 2}),
                           (draw_other(tmp_path / "o.png"), "clock", {"x": 1})])
    assert res.verdict == "PASS" and res.exact_different_facts == 0
    assert res.different_facts == 1 and res.different_facts_by_kind == {"label": 1}
    assert res.examples_different_facts[0]["distance"] <= 4


def test_near_duplicates_one_file_with_two_fact_sets(tmp_path):
    pytest.importorskip("imagehash")
    a = draw(tmp_path / "a.png")
    res = near_duplicates([(a, "label", {"x": 1}), (a, "label", {"x": 2})])
    assert res.exact_different_facts == 1 and res.verdict == "FAIL"
    assert res.examples_exact_different_facts[0]["distance"] == 0


# ---------------------------------------------------------------------------------------
# 3. caption proof


def image_session(sid, sources):
    images = [ImageRef(source=s, path=f"/abs/{s}", meta={"kind": "ticket"}) for s in sources]
    return Session(session_id=sid, meta={"role": "evidence"},
                   turns=[Turn(turn_id=f"{sid}:1", role="user", text="<image> " * len(images),
                               images=images)])


def ptr(sid, k=None):
    return EvidenceRef(session_id=sid, turn_id=f"{sid}:1", image_index=k)


def caption_episodes():
    s1 = image_session("e1", ["img/1.png", "img/2.png"])
    s2 = image_session("e2", ["img/3.png"])
    return [
        # X1: both strings found across the two images, modulo case/spaces/dash kind.
        make_episode("q1", [s1], needed=["BA-2041", "Gate 9–5"], x="X1", family="ie",
                     evidence=[ptr("e1", 0), ptr("e1", 1)]),
        # X2: "Tom" is not in the OCR text.
        make_episode("q2", [s2], needed=["$12.50", "Tom"], x="X2", family="ie",
                     evidence=[ptr("e2", 0)]),
        # no needed strings: not counted
        make_episode("q3", [s2], needed=[], x="X3", evidence=[ptr("e2", 0)]),
        # needed strings but only a text pointer: counted, not surviving
        make_episode("q4", [s2], needed=["x"], x="X4", family="tr", evidence=[ptr("e2")]),
        # same image as q2, read only once; found
        make_episode("q5", [s2], needed=["12.50"], x="X2", family="tr",
                     evidence=[ptr("e2", 0)]),
    ]


def test_caption_proof_with_fake_ocr():
    texts = {"/abs/img/1.png": "FLIGHT ba 2041", "/abs/img/2.png": "gate 9-5",
             "/abs/img/3.png": "TOTAL$12.50"}
    calls = []

    def fake_ocr(path):
        calls.append(path)
        return texts[path]

    res = caption_proof(caption_episodes(), ocr=fake_ocr)
    assert sorted(calls) == sorted(texts)  # each image once
    assert res.n_questions == 4 and res.n_surviving == 2 and res.survival_rate == 0.5
    assert res.by_x == {"X1": {"n": 1, "surviving": 1, "rate": 1.0},
                        "X2": {"n": 2, "surviving": 1, "rate": 0.5},
                        "X4": {"n": 1, "surviving": 0, "rate": 0.0}}
    assert res.by_family["ie"] == {"n": 2, "surviving": 1, "rate": 0.5}
    assert res.by_family["tr"] == {"n": 2, "surviving": 1, "rate": 0.5}
    assert res.n_without_images == 1 and res.n_images == 3 and res.ocr_errors == 0
    assert {"question_id": "q2", "missing": ["Tom"]} in res.failures
    json.dumps(res.to_dict())


def test_caption_proof_counts_unreadable_images():
    def broken(path):
        raise OSError("cannot read")

    res = caption_proof(caption_episodes(), ocr=broken)
    assert res.n_surviving == 0 and res.ocr_errors == 3


def test_normalize_for_match():
    assert normalize_for_match("Gate 9–5, BA-2041!") == normalize_for_match("gate 9-5 ba 2041")
    assert normalize_for_match("Ünïcode ＡＢ") == "ünïcodeab"


def test_caption_proof_with_rapidocr(tmp_path):
    pytest.importorskip("rapidocr_onnxruntime")
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (320, 60), "white")
    try:
        font = ImageFont.truetype("DejaVuSans.ttf", 26)
    except OSError:
        font = ImageFont.load_default(size=26)
    ImageDraw.Draw(img).text((10, 12), "GATE B-17", fill="black", font=font)
    img.save(tmp_path / "t.png")
    s = Session(session_id="e", turns=[Turn(
        turn_id="e:1", role="user", text="<image>",
        images=[ImageRef(source="t.png")])])  # no path: resolved against root
    eps = [make_episode("q", [s], needed=["B-17"], evidence=[ptr("e", 0)])]
    res = caption_proof(eps, root=tmp_path)
    assert res.ocr_errors == 0 and res.n_surviving == 1, res.failures


# ---------------------------------------------------------------------------------------
# 4. oracle gates


def rec(qid, score, *, status="ok", dep="essential", answer_type="free_text"):
    return Record(question_id=qid, episode_id=qid, benchmark=BenchmarkInfo(name="t"),
                  status=status, ability="information_extraction", answer_type=answer_type,
                  labels=Labels(image_dependency=dep), question="q?", gold="g",
                  response=Response(text="a"), scores={} if score is None else {"rule": score})


def test_accuracy_gate():
    good = {f"q{i}": rec(f"q{i}", 1.0) for i in range(5)}
    res = accuracy_gate(good)
    assert res.verdict == "PASS" and res.accuracy == 1.0 and res.failing == [] and res.n == 5
    bad = [*good.values(), rec("qx", 0.0), rec("qe", None, status="error")]
    res = accuracy_gate(bad)
    assert res.verdict == "FAIL" and res.n_error == 1 and res.failing == ["qe", "qx"]
    assert res.accuracy == pytest.approx(5 / 7)
    assert accuracy_gate(bad, expect=0.7).verdict == "PASS"
    assert accuracy_gate([rec("qe", None, status="error")]).verdict == "FAIL"
    json.dumps(res.to_dict())


def test_visual_necessity_gate():
    recs = [rec(f"q{i}", 0.0) for i in range(60)]
    recs += [rec("lucky", 1.0),
             rec("text-q", 1.0, dep="text"),  # not image-essential: ignored
             rec("refuse", 1.0, answer_type="refusal"),  # refusals ignored
             rec("err", None, status="error")]
    res = visual_necessity_gate(recs)
    assert res.n == 61 and res.n_error == 1 and res.answered == ["lucky"]
    assert res.fraction == pytest.approx(1 / 61, abs=1e-6) and res.verdict == "PASS"
    res = visual_necessity_gate(recs, threshold=0.01)
    assert res.verdict == "FAIL"
    # Image-essential questions that all errored: nothing was checked, and that fails.
    assert visual_necessity_gate([rec("err", None, status="error")]).verdict == "FAIL"
    # A question that needs image and text facts (mixed) needs the image too: checked.
    res = visual_necessity_gate([rec("m", 1.0, dep="mixed")] + [rec(f"q{i}", 0.0)
                                                                  for i in range(9)])
    assert res.n == 10 and res.answered == ["m"] and res.verdict == "FAIL"


def test_gates_with_nothing_to_check_are_not_applicable(tmp_path):
    pytest.importorskip("imagehash")
    assert accuracy_gate([]).verdict == "N/A"
    assert visual_necessity_gate([]).verdict == "N/A"
    only_text = [rec("t", 1.0, dep="text"), rec("r", 1.0, answer_type="refusal")]
    assert visual_necessity_gate(only_text).verdict == "N/A"
    assert near_duplicates([]).verdict == "N/A"


def test_overall_verdict_fails_on_a_failure_only():
    na, ok = accuracy_gate([]).to_dict(), accuracy_gate([rec("q", 1.0)]).to_dict()
    bad = accuracy_gate([rec("q", 0.0)]).to_dict()
    assert overall_verdict({"a": ok, "b": na, "info": {"n": 3}}) == {
        "passed": True, "verdict": "PASS", "failed": [], "not_applicable": ["b"]}
    assert overall_verdict({"a": bad, "b": na}) == {
        "passed": False, "verdict": "FAIL", "failed": ["a"], "not_applicable": ["b"]}
    md = render_gates_markdown({**overall_verdict({"a": ok, "8k oracle": na}),
                                "tiers": {"8k": {"oracle": na}}})
    assert "**Overall: PASS** (N/A, nothing to check: 8k oracle)" in md
    assert "| 8k | oracle accuracy | – (0/0, 0 errors) | ≥ 100.0% | N/A |" in md


# ---------------------------------------------------------------------------------------
# 5. markdown


def test_render_gates_markdown():
    pytest.importorskip("bm25s")
    ep = make_episode("q1", [text_session("e", "evidence", "kitchen cabinets green"),
                             text_session("h", "haystack", "marathon training")],
                      text="kitchen cabinets?", evidence=[ptr("e")])
    results = {
        "benchmark": {"digest": "abc", "tiers": ["8k", "32k"], "generator_version": "1"},
        "passed": False,
        "tiers": {
            tier: {"oracle": accuracy_gate([rec("q1", 1.0)]),
                   "visual_necessity": dataclasses.asdict(
                       visual_necessity_gate([rec("q1", 1.0)])),
                   "retrieval": {"bm25": retrieval_recall([ep], ks=(1, 3))}}
            for tier in ("8k", "32k")},
        "indistinguishability": {"auc": 0.45, "auc_without_fillers": 0.52,
                                 "max_deviation": 0.1, "verdict": "PASS", "n_evidence": 10,
                                 "n_other": 30, "n_fillers": 12, "n_repeats": 2,
                                 "n_questions": 5, "n_groups": 7, "folds": 5, "note": None,
                                 "features_file": "indistinguishability_features.json"},
        "near_duplicates": {"n_images": 3, "n_files": 3, "max_distance": 4, "verdict": "PASS",
                            "same_facts": 0, "different_facts": 2,
                            "different_facts_by_kind": {"clock": 2}, "exact_different_facts": 0,
                            "examples_different_facts": [],
                            "examples_exact_different_facts": [], "missing_files": []},
        "caption_proof": caption_proof(caption_episodes(), ocr=lambda p: "ba 2041 gate 9-5"),
    }
    md = render_gates_markdown(results)
    assert "**Overall: FAIL**" in md
    assert "| 8k | oracle accuracy | 100.0% (1/1, 0 errors) | ≥ 100.0% | PASS |" in md
    assert "| 32k | text-only oracle on questions that need an image | 100.0% (1/1, 0 errors)" in md
    assert "FAIL answered: `q1`" in md
    assert "indistinguishability — PASS" in md and "**0.450**" in md
    assert "pass if |AUC − 0.5| ≤ 0.10, i.e. 0.40–0.60" in md
    assert "Without the fillers: 0.520" in md and "12 of them fillers" in md
    assert "`indistinguishability_features.json`" in md
    assert "questions: 5; cross-validation groups: 7" in md
    assert "| clock | 2 |" in md
    assert ("| tier | retriever | questions | sessions/episode | R@1 | R@3 | all@1 | all@3 "
            "| MRR |") in md
    assert "| 8k | bm25 | 1 | 2.0 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 |" in md
    assert "Caption-proof (OCR) — INFO" in md and "| X1 | 1 | 1 | 100.0% |" in md
    assert "| X2 | 2 | 0 | 0.0% |" in md
    skipped = render_gates_markdown({"caption_proof": {"skipped": "install memgauge[ocr]"}})
    assert "SKIPPED" in skipped and "install memgauge[ocr]" in skipped
    assert render_gates_markdown({}).startswith("# Validation gates")


# ---------------------------------------------------------------------------------------
# 3b. repeated lines (issue 27 §2, issue 28)


def chat_episode(qid, lines):
    """One session whose user turns say ``lines`` in order, each answered "Sure."."""
    turns = []
    for k, text in enumerate(lines):
        turns += [Turn(turn_id=f"{qid}:{2 * k}", role="user", text=text),
                  Turn(turn_id=f"{qid}:{2 * k + 1}", role="assistant", text=f"Sure {k}.")]
    return make_episode(qid, [Session(session_id=f"{qid}-s", turns=turns)])


def test_repeated_lines_fails_a_line_said_three_times_in_one_episode():
    """A 4k prompt said one filler line 9 times; a line counts the same whatever its case,
    spacing or image placeholder."""
    from memgauge.validation._gates import repeated_lines

    twice = chat_episode("ok", ["Look at this <image>", "look at  this", "Other."])
    thrice = chat_episode("bad", ["Look at this <image>", "LOOK AT THIS", "look at this <image>"])
    res = repeated_lines([twice, thrice])
    assert (res.verdict, res.max_count, res.n_episodes, res.n_over) == ("FAIL", 3, 2, 1)
    assert res.worst == [{"episode_id": "bad", "line": "look at this", "count": 3}]
    passing = repeated_lines([twice])
    assert (passing.verdict, passing.max_count, passing.worst) == ("PASS", 2, [])
    # The same line in two episodes is two episodes' worth, not a repeat.
    assert repeated_lines([twice, chat_episode("ok2", ["Look at this"])]).verdict == "PASS"
    assert repeated_lines([]).verdict == "N/A"
    assert repeated_lines([thrice], limit=3).verdict == "PASS"


def test_repeated_lines_show_in_the_gates_markdown():
    from memgauge.validation._gates import repeated_lines

    bad = chat_episode("bad", ["Same line."] * 4)
    md = render_gates_markdown({"tiers": {
        "4k": {"repeats": repeated_lines([chat_episode("ok", ["One.", "Two."])])},
        "8k": {"repeats": repeated_lines([bad]).to_dict()}}})
    assert "## Repeated lines — FAIL" in md and "pass if at most 2" in md
    assert "| 4k | 1 | 1 | 0 | PASS |" in md and "| 8k | 1 | 4 | 1 | FAIL |" in md
    assert "- 8k `bad`: 4× “same line.”" in md


def test_the_synth_generator_counts_lines_as_the_gate_does():
    from memgauge.benchmarks.synth._text import line_key
    from memgauge.validation._gates import normalize_line

    for text in ("Look at this <image>", "  Thanks!  Got it. ", "A<image> B", "ÉTÉ in Nara",
                 "<image>"):
        assert line_key(text) == normalize_line(text)
