"""Gates for labelled benchmarks: chance bounds, rotations, and the audits on sets built to
leak (they must flag it) and one built not to (issue 17)."""

from __future__ import annotations

import base64
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.scripted_server import ScriptedServer, completion
from PIL import Image
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.schema import Ability, AnswerType, BenchmarkInfo, Labels, Record, Response
from memgauge.validation._labelled_gates import (
    caption_proof_gain,
    chance_gate,
    chance_upper_limit,
    question_scores,
)
from memgauge.validation.labelled import LabelledValidation, validate_labelled

# the chance gate and the Wilson interval take scipy (the validate extra); without it these skip
pytest.importorskip("scipy.stats", reason="the validate extra (scipy) is not installed")

COLOURS = {"amber": (255, 191, 0), "olive": (128, 128, 0), "ivory": (255, 255, 240),
           "coral": (255, 127, 80)}  # names of equal length: no option is the longest
NAMES = list(COLOURS)
LETTERS = "ABCD"
N = 24


def write_set(root: Path, leak: str | None, *, wrong_image: int | None = None) -> Path:
    """A MemEye-format task of N questions, one session each, 4 rotations per question;
    ``leak`` puts the answer where one audit can see it: in the options' wording, the
    question, the clue round's text or its caption."""
    images = root / "image" / "Leak_Task"
    images.mkdir(parents=True)
    sessions, qas = [], []
    for i in range(N):
        gold = NAMES[(i * 7 + i // 4) % 4]
        drawn = NAMES[(NAMES.index(gold) + 1) % 4] if i == wrong_image else gold
        Image.new("RGB", (16, 16), COLOURS[drawn]).save(images / f"m{i}.png")
        user = (f"Here is my {gold} mug number {i}." if leak == "clue-text"
                else f"Here is a photo, number {i}.")
        caption = f"A {gold} mug on a desk." if leak == "caption" else "A mug on a desk."
        sessions.append({"session_id": f"D{i}", "date": f"2024-01-{i + 1:02d}", "dialogues": [
            {"round": f"D{i}:1", "user": user, "assistant": "Nice.",
             "input_image": [f"image/Leak_Task/m{i}.png"], "image_id": [f"I{i}"],
             "image_caption": [caption]},
            {"round": f"D{i}:2", "user": "Anything else?", "assistant": "No."}]})
        texts = [f"the {n} glazed one with a tiny chip" if leak == "options" and n == gold
                 else n for n in NAMES]
        gold_text = texts[NAMES.index(gold)]
        others = [t for t in texts if t != gold_text]
        rotations = []
        for r in range(4):  # the gold answer at A, B, C and D
            row = others[:r] + [gold_text] + others[r:]
            rotations.append({**dict(zip(LETTERS, row, strict=True)), "answer": LETTERS[r]})
        question = (f"Which mug, the {gold} one, was in photo {i}?" if leak == "question"
                    else f"What was the mug like in photo {i}?")
        qas.append({"question_id": f"q{i}", "point": [["X4" if i % 2 else "X1"], ["Y1"]],
                    "question": question, "answer": gold_text, "session_id": [f"D{i}"],
                    "clue": [f"D{i}:1"], "options": rotations})
    dialog = root / "dialog"
    dialog.mkdir()
    doc = {"character_profile": {"name": "Sam"}, "multi_session_dialogues": sessions,
           "human-annotated QAs": qas}
    (dialog / "Leak_Task.json").write_text(json.dumps(doc), encoding="utf-8")
    return root


def _validate(root: Path, **kw: Any) -> dict[str, Any]:
    return validate_labelled(LabelledValidation(bench="memeye", data=str(root),
                                                out=root / "validation", **kw))


# --- statistics ---------------------------------------------------------------------------


def test_upper_limit_is_the_binomial_95_percent_quantile_of_chance() -> None:
    for n in (4, 24, 100):
        cdf, c = 0.0, -1
        while cdf < 0.95:  # the smallest count a guesser at 1/4 reaches with prob >= 0.95
            c += 1
            cdf += math.comb(n, c) * 0.25 ** c * 0.75 ** (n - c)
        assert chance_upper_limit(0.25, n) == pytest.approx(c / n)


def _record(qid: str, value: float | None, *, base: str | None = None) -> Record:
    ok = value is not None
    return Record(question_id=qid, episode_id="e", benchmark=BenchmarkInfo(name="t"),
                  status="ok" if ok else "error", ability=Ability.INFORMATION_EXTRACTION,
                  answer_type=AnswerType.MCQ, question="?", gold="A",
                  labels=Labels(x="X2", y="Y3"),
                  response=Response(text="A" if ok else None),
                  scores={"rule": value} if ok else {},
                  meta={"options": ["a", "b", "c", "d"],
                        **({"base_question_id": base} if base else {})})


def test_rotations_are_one_question_debiased_and_all_rotations() -> None:
    recs = ([_record(f"t:q1:r{k}", 1.0) for k in range(1, 5)]
            + [_record(f"t:q2:r{k}", v) for k, v in zip(range(1, 5), (1, 0, 0, 0), strict=True)]
            + [_record("x1", 1.0, base="t:q3"), _record("x2", None, base="t:q3")])
    scores = {q.base_id: q for q in question_scores(recs)}
    assert set(scores) == {"t:q1", "t:q2", "t:q3"}
    assert scores["t:q2"].value == 0.25 and scores["t:q2"].all_right is False
    # an errored rotation makes the question incomplete: left out, never a wrong answer
    assert scores["t:q3"].value is None and scores["t:q3"].n_error == 1
    gate = chance_gate("g", recs)
    assert gate.accuracy == pytest.approx((1 + 0.25) / 2)
    assert gate.all_rotations == pytest.approx(1 / 2) and gate.n == 2
    assert gate.n_error == 1 and gate.n_incomplete == 1
    assert gate.upper_limit == pytest.approx(chance_upper_limit(0.25, 2))
    assert gate.leaking == ["t:q1"]
    lo, hi = gate.ci
    assert lo < gate.accuracy < hi


def test_a_question_missing_rotations_is_incomplete_not_debiased() -> None:
    """A run cut short (or under --limit) asked 3 of a question's 4 rotations: the mean over
    them is not its debiased EM (gold at D was never asked), so it is left out and counted."""
    from memgauge.analysis._xy import rotation_summary

    def rotation(base: str, k: int, value: float) -> Record:
        rec = _record(f"{base}:r{k}", value)
        rec.meta.update({"base_question_id": base, "rotation": k, "rotations": 4})
        return rec

    recs = ([rotation("t:q1", k, 1.0) for k in range(1, 5)]
            + [rotation("t:q2", k, 1.0) for k in range(1, 4)])
    scores = {q.base_id: q for q in question_scores(recs)}
    assert scores["t:q1"].value == 1.0 and scores["t:q2"].value is None
    assert chance_gate("g", recs).n_incomplete == 1
    summary = rotation_summary(recs, "rule")
    assert summary["n_questions"] == 1 and summary["incomplete_questions"] == 1
    assert summary["debiased_em"] == 1.0
    # records written before the count was kept: every rotation present is all there is
    for rec in recs:
        del rec.meta["rotations"]
    assert rotation_summary(recs, "rule")["incomplete_questions"] == 0


def test_all_errors_fail_and_no_options_is_not_applicable() -> None:
    assert chance_gate("g", [_record("q:r1", None)]).verdict == "FAIL"
    open_q = _record("q", 1.0).model_copy(update={"meta": {}})
    assert chance_gate("g", [open_q]).verdict == "N/A"


def test_caption_proof_gain_by_x_level_over_questions_in_every_arm() -> None:
    image = [_record("q1:r1", 1.0), _record("q2:r1", 1.0)]
    dense = [_record("q1:r1", 0.0), _record("q2:r1", None)]
    got = caption_proof_gain({"image": image, "dense": dense})
    assert got["n_questions"] == 1 and got["not_in_every_arm"] == ["q2"]
    assert got["by_x"]["X2"]["gain_over_dense"] == 1.0


# --- the audits on built sets ---------------------------------------------------------------


@pytest.mark.parametrize(("leak", "flagged"), [
    ("options", {"options-only"}),
    # every view but options-only shows the question
    ("question", {"question-only", "clue-text-only", "minimal-caption"}),
    ("clue-text", {"clue-text-only", "minimal-caption"}),  # a caption view shows the text too
    ("caption", {"minimal-caption"}),
])
def test_audits_flag_a_set_built_to_leak(tmp_path: Path, leak: str, flagged: set[str]) -> None:
    results = _validate(write_set(tmp_path, leak))
    failed = {name for name, g in results["audits"].items() if g["verdict"] == "FAIL"}
    assert failed == flagged
    assert results["passed"] is False
    for name in flagged:
        assert results["audits"][name]["accuracy"] == 1.0
        assert len(results["audits"][name]["leaking"]) == N


def test_audits_pass_a_set_built_not_to_leak(tmp_path: Path) -> None:
    results = _validate(write_set(tmp_path, None))
    for name, g in results["audits"].items():
        assert g["verdict"] == "PASS", name
        assert g["n"] == N and g["n_items"] == 4 * N and g["chance"] == 0.25
        assert g["accuracy"] <= g["upper_limit"]
    assert results["passed"] is True
    assert "skipped" in results["oracle_screening"]  # the offline baseline sees no image


def _nearest(rgb: tuple[int, int, int]) -> str:
    return min(COLOURS, key=lambda n: sum((a - b) ** 2 for a, b in zip(COLOURS[n], rgb,
                                                                        strict=True)))


def _pixel_model(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A stand-in for a model that sees images: the option naming the colour of the first
    image sent, else A."""
    parts = [p for m in body["messages"] if isinstance(m["content"], list)
             for p in m["content"]]
    urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
    text = "\n".join(p.get("text", "") for p in parts) + "\n".join(
        m["content"] for m in body["messages"] if isinstance(m["content"], str))
    if "Describe this image in detail" in text:  # the dense captioner: no colour
        return 200, completion("A mug on a desk.")
    rgb = (Image.open(io.BytesIO(base64.b64decode(urls[0].split(",", 1)[1])))
           .convert("RGB").getpixel((0, 0)) if urls else None)
    if rgb is not None and "questions about it will be asked" in text:  # task-aware
        return 200, completion(f"The mug is {_nearest(rgb)}.")
    if rgb is None:  # answering from text: a colour a caption names, else A
        named = re.findall(r"\[Image: The mug is (\w+)\.\]", text)
        if not named:
            return 200, completion("A")
        name = named[0]
    else:
        name = _nearest(rgb)
    letter = re.search(rf"^([A-D])\. .*\b{name}\b", text, re.MULTILINE)
    return 200, completion(letter.group(1) if letter else "A")


def test_oracle_screening_and_caption_proof_with_a_model(tmp_path: Path) -> None:
    root = write_set(tmp_path, None, wrong_image=5)
    with ScriptedServer([], after=_pixel_model) as server:
        results = _validate(root, model="openai:pixel", base_url=server.base_url)
    o = results["oracle_screening"]
    assert o["flagged"] == ["Leak_Task:q5"] and o["n"] == N
    c = results["caption_proof"]
    assert c["arms"] == ["image", "dense"]
    for level in ("X1", "X4"):
        row = c["by_x"][level]
        assert row["dense"] == 0.25  # A on every rotation: chance
        assert row["gain_over_dense"] == pytest.approx(row["image"] - 0.25)
    assert c["by_x"]["X1"]["image"] == 1.0
    assert c["by_x"]["X4"]["image"] == pytest.approx(11 / 12)  # q5 (X4) shows the wrong image
    assert "task-aware captions need --captioner openai:" in c["note"]


def test_a_local_model_without_a_projector_is_known_blind_before_any_request() -> None:
    def blind(model: str, **options: str) -> str | None:
        return LabelledValidation(bench="memeye", data=".", out=Path("."), model=model,
                                  model_options=options).blind

    assert "smollm2 has no projector" in (blind("local:smollm2") or "")
    assert "mmproj=FILE" in (blind("local:smollm2") or "")
    assert blind("local:vlm", mmproj="proj.gguf") is None
    assert blind("openai:m") is None  # an endpoint's vision shows only when asked
    assert "offline baseline" in (blind("none:") or "")


class _TextOnly(LabelledValidation):
    """An answerer known not to see images (as a local: GGUF without mmproj), served by the
    loopback server, so the gates run without starting a llama.cpp server."""

    @property
    def blind(self) -> str | None:
        return "needs a model that sees images: text-only"


def test_a_text_only_answerer_skips_the_image_arms_and_sends_no_image(tmp_path: Path) -> None:
    root = write_set(tmp_path, "caption")
    said: list[str] = []

    def text_only(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The option naming the colour a caption names (the set leaks it there), else A."""
        text = json.dumps(body["messages"])
        named = re.findall(r"A (\w+) mug on a desk", text)
        letter = re.search(rf"([A-D])\. {named[0]}\b", text) if named else None
        return 200, completion(letter.group(1) if letter else "A")

    with ScriptedServer([], after=text_only) as server:
        results = validate_labelled(_TextOnly(
            bench="memeye", data=str(root), out=root / "validation", model="openai:text",
            base_url=server.base_url), said.append)
        sent = server.requests
    assert said[0].startswith("oracle screening and Caption-Proof's image arm skipped")
    assert "oracle screening" not in said[1:]
    assert not [p for body in sent for m in body["messages"]
                if isinstance(m["content"], list) for p in m["content"]
                if p.get("type") == "image_url"]
    assert results["oracle_screening"] == {"skipped": "needs a model that sees images: "
                                                      "text-only"}
    c = results["caption_proof"]
    assert c["arms"] == ["dense"] and c["native"] is None
    assert c["image_arm"].startswith("skipped: needs a model that sees images")
    for row in c["by_x"].values():  # the data's captions name the colour: always right
        assert row["dense"] == 1.0 and not [k for k in row if k.startswith("gain_over")]
    md = (root / "validation" / "gates.md").read_text(encoding="utf-8")
    assert "| X1 | 12 | 100.0% |" in md and "image arm skipped" in md


def test_max_tokens_reaches_every_gates_answer(tmp_path: Path) -> None:
    """A small local model asked for one letter need not be given 512 tokens to ramble."""
    root = write_set(tmp_path, None)
    with ScriptedServer([], after=_pixel_model) as server:
        _validate(root, model="openai:pixel", base_url=server.base_url, max_tokens=8)
        sent = {body["max_tokens"] for body in server.requests}
    assert sent == {8}


def test_cli_validate_bench_data(tmp_path: Path) -> None:
    runner = CliRunner()
    leak = write_set(tmp_path / "leak", "options")
    res = runner.invoke(app, ["validate", "--bench", "memeye", "--data", str(leak)])
    assert res.exit_code == 1, res.output
    assert "options-only" in res.output and "FAIL" in res.output
    assert (leak / "validation" / "gates.json").exists()
    clean = write_set(tmp_path / "clean", None)
    res = runner.invoke(app, ["validate", "--bench", "memeye", "--data", str(clean),
                              "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "out" / "gates.json").read_text())["passed"] is True


def test_cli_validate_takes_allow_inconsistent(tmp_path: Path) -> None:
    """A rotation whose gold letter points off the gold text stops validate before its
    first gate; --allow-inconsistent runs the gates, the warning in each gate's manifest."""
    root = write_set(tmp_path / "set", None)
    path = root / "dialog" / "Leak_Task.json"
    doc = json.loads(path.read_text())
    doc["human-annotated QAs"][0]["options"][1]["answer"] = "A"  # the gold is at B
    path.write_text(json.dumps(doc))
    args = ["validate", "--bench", "memeye", "--data", str(root), "--out", str(tmp_path / "o")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "options[1].answer" in res.output, res.output
    assert "--allow-inconsistent" in res.output and not (tmp_path / "o").exists()
    res = CliRunner().invoke(app, [*args, "--allow-inconsistent"])
    assert res.exit_code in (0, 1), res.output  # the audits' verdict
    manifest = json.loads((tmp_path / "o" / "options-only" / "manifest.json").read_text())
    [warning] = manifest["benchmark"]["inconsistencies"]
    assert (warning["item"], warning["field"]) == ("Leak_Task:q0", "options[1].answer")


def test_cli_validate_mistakes_are_named_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["validate", "--bench", "memeye"])
    assert res.exit_code != 0 and "needs --data" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["validate", "--bench", "memeye", "--data", str(tmp_path / "no")])
    assert res.exit_code != 0 and "Traceback" not in res.output
    res = runner.invoke(app, ["validate"])
    assert res.exit_code != 0 and "benchmark folder" in res.output
    res = runner.invoke(app, ["validate", str(tmp_path / "a"), "--data", str(tmp_path / "b")])
    assert res.exit_code != 0 and "give the benchmark folder once" in res.output
    res = runner.invoke(app, ["validate", "--data", str(tmp_path), "--no-ocr"])  # synth
    assert res.exit_code != 0 and "no manifest.json" in res.output


def test_cli_validate_refuses_a_local_captioner_without_mmproj_before_the_audits(
        tmp_path: Path) -> None:
    """The caption arms run last; a captioner that cannot work must stop validate before the
    first audit, not after the audits were paid for."""
    root = write_set(tmp_path, None)
    res = CliRunner().invoke(app, ["validate", "--bench", "memeye", "--data", str(root),
                                   "--captioner", "local:smollm2"])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "--captioner-model-option mmproj=FILE" in res.output
    assert "shortcut audit" not in res.output and not (root / "validation").exists()
    res = CliRunner().invoke(app, ["validate", "--bench", "memeye", "--data", str(root),
                                   "--captioner-model-option", "mmproj=p.gguf"])
    assert res.exit_code != 0 and "local: captioner only" in res.output


def test_caption_proof_with_a_vlm_captioner_has_a_task_aware_arm(tmp_path: Path) -> None:
    root = write_set(tmp_path, None)
    with ScriptedServer([], after=_pixel_model) as server:
        results = _validate(root, model="openai:pixel", base_url=server.base_url,
                            captioner="openai:pixel", captioner_base_url=server.base_url)
    c = results["caption_proof"]
    assert c["arms"] == ["image", "dense", "task"] and "note" not in c
    for row in c["by_x"].values():
        assert (row["image"], row["dense"], row["task"]) == (1.0, 0.25, 1.0)
        assert row["gain_over_dense"] == 0.75 and row["gain_over_task"] == 0.0
    assert "| X1 | 12 | 100.0% | 25.0% | 100.0% | +75.0 pts | +0.0 pts |" in (
        root / "validation" / "gates.md").read_text(encoding="utf-8")


def test_markdown_says_how_many_questions_were_left_out() -> None:
    from memgauge.report._gates_md import render_labelled_markdown as render_markdown

    gate = chance_gate("options-only", [_record("q1:r1", 1.0), _record("q2:r1", None)])
    md = render_markdown({"benchmark": {"name": "t", "data": "d", "model": "none:"},
                          "verdict": "PASS", "audits": {"options-only": gate.to_dict()},
                          "oracle_screening": {"skipped": "x"},
                          "caption_proof": {"skipped": "y"}})
    assert "| 1 (1 questions left out) |" in md
    assert "options-only (PASS): right on every rotation: `q1`" in md  # listed under a pass
