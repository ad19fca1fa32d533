"""The timeline layout: one conversation per tier, each question asked at its time, the
gold oracle right at that time (and refusals right before their evidence exists)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgauge.analysis import RunData, build_tables
from memgauge.analysis._timeline import bin_labels, bin_of
from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.synth import REFUSAL, SynthConfig, generate, parse_tier
from memgauge.errors import ConfigError
from memgauge.registry import lookup
from memgauge.report import render_html, render_tables_markdown
from memgauge.runner import RunConfig, load_manifest, read_records, run
from memgauge.schema import AnswerType
from memgauge.validation.synth import validate

TIERS = ["40k", "56k"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("timeline") / "b"
    manifest = generate(SynthConfig(out=str(root), seed=5, tiers=TIERS, questions=11,
                                    layout="timeline"))
    return root, manifest


def _episode(root: Path, tier: str):
    [ep] = lookup("benchmark", "synth")(BenchmarkOptions(data=str(root), tier=tier)).episodes()
    return ep


def _index(ep):
    return {s.session_id: i for i, s in enumerate(ep.sessions)}


def test_one_episode_per_tier_within_three_percent_holding_every_question(bench):
    root, manifest = bench
    for tier in TIERS:
        ep, info = _episode(root, tier), manifest["tiers"][tier]
        assert abs(ep.meta["tokens"] - parse_tier(tier)) <= 0.03 * parse_tier(tier)
        assert info["within_tolerance"] == info["episodes"] == 1
        assert info["questions"] == len(ep.questions) > 10  # chain and refusal asks added
        assert [s.date for s in ep.sessions] == sorted(s.date for s in ep.sessions)
        assert [q.asked_after for q in ep.questions] == sorted(q.asked_after
                                                               for q in ep.questions)
    assert not (root / "memlens").exists()  # that format holds one question per history


def test_each_answerable_question_is_asked_right_after_its_latest_evidence(bench):
    ep = _episode(bench[0], TIERS[0])
    at = _index(ep)
    answerable = [q for q in ep.questions if q.answer_type != AnswerType.REFUSAL]
    later = [q for q in answerable if q.question_id.endswith("-later")]
    assert len(answerable) - len(later) >= 8 and later
    for q in answerable:
        latest = max(at[p.session_id] for p in q.evidence)
        assert ep.sessions[latest].date <= q.question_date
        if q in later:  # asked again long after: its first ask was right after the evidence
            first = next(o for o in answerable if o.question_id == q.question_id[:-6])
            assert first.asked_after == latest < q.asked_after
        else:
            assert q.asked_after == latest, q.question_id


def test_knowledge_update_chain_is_asked_updated_and_asked_again(bench):
    ep = _episode(bench[0], TIERS[0])
    chain = [q for q in ep.questions if q.meta["family"] == "ku_update"
             and not q.question_id.endswith("-later")]
    assert len(chain) == 3  # after updates 1 and 2, and the plan's own after the last
    golds = [q.answer for q in chain]
    assert len(set(golds)) == 3
    for k, q in enumerate(chain):
        assert q.old_answers == [*chain[0].old_answers[:1], *golds[:k]]  # every earlier value
    assert chain[-1].question_id + "-at1" == chain[0].question_id
    assert chain[0].asked_after < chain[1].asked_after < chain[2].asked_after


def test_refusals_before_their_evidence_and_never_answerable_ones(bench):
    ep = _episode(bench[0], TIERS[0])
    at = _index(ep)
    before = [q for q in ep.questions if q.question_id.endswith("-before")]
    never = [q for q in ep.questions if q.answer_type == AnswerType.REFUSAL and q not in before]
    assert before and never
    for q in before:
        assert q.answer == REFUSAL and not q.evidence
        later = q.meta["evidence_later"]["evidence"]
        assert later and q.asked_after < min(at[p["session_id"]] for p in later)
        # the same question, answerable, is asked later in the same conversation
        source = next(o for o in ep.questions if o.question_id == q.question_id[:-7])
        assert source.text == q.text and source.asked_after > q.asked_after
    for q in never:
        assert not q.evidence and not any(s.session_id.startswith(q.question_id + ":e")
                                          for s in ep.sessions)


def _oracle(root: Path, out: Path, protocol: str) -> dict:
    run(RunConfig(bench="synth", data=str(root), tier=TIERS[0], out=str(out), system="oracle",
                  model="none:", cache=False, progress=False, protocol=protocol))
    return read_records(out)


def test_the_gold_oracle_answers_each_question_right_at_its_time(bench, tmp_path):
    records = _oracle(bench[0], tmp_path / "on", "online")
    assert records and all(r.scores["rule"] == 1.0 for r in records.values())
    for qid, r in records.items():
        if qid.endswith("-before"):
            assert r.prediction == REFUSAL


def test_a_refusal_before_evidence_is_wrong_once_the_later_evidence_is_shown(bench, tmp_path):
    records = _oracle(bench[0], tmp_path / "off", "offline")
    wrong = {qid for qid, r in records.items() if r.scores["rule"] != 1.0}
    assert wrong and wrong == {qid for qid in records if qid.endswith("-before")}


def test_larger_tier_extends_the_smaller_one_same_seed_same_bytes(bench, tmp_path):
    root, manifest = bench
    small, large = _episode(root, TIERS[0]), _episode(root, TIERS[1])
    assert [q.question_id for q in small.questions] == [q.question_id for q in large.questions]
    fixed = [s for s in small.sessions if s.meta.get("question")]
    assert fixed == [s for s in large.sessions if s.meta.get("question")]
    hay = {s.session_id for s in small.sessions if not s.meta.get("question")
           and not s.session_id.startswith("timeline:")}
    assert hay <= {s.session_id for s in large.sessions}
    again = generate(SynthConfig(out=str(tmp_path / "again"), seed=5, tiers=TIERS,
                                 questions=11, layout="timeline"))
    assert again["digest"] == manifest["digest"]


def test_the_gates_run_on_a_timeline(bench):
    results = validate(bench[0], ocr=False)
    indist = results["indistinguishability"]
    assert indist["verdict"] != "N/A"
    # split per plan: a group per plan with sessions, each other session a unit of its own
    # (which the report once counted as 202 "questions")
    plans = {s.meta["question"] for s in _episode(bench[0], TIERS[-1]).sessions
             if s.meta.get("question")}
    assert indist["n_questions"] == len(plans) >= 10 and indist["n_groups"] > 100
    for tier in TIERS:
        assert results["tiers"][tier]["oracle"]["verdict"] == "PASS"
        assert results["tiers"][tier]["visual_necessity"]["n"] > 0
        assert results["tiers"][tier]["repeats"]["verdict"] == "PASS"  # generator 8 on
    # Its verdict is not asserted: eleven plans give 24 evidence sessions, and the gate on
    # this very benchmark with its texts shuffled (no signal at all) fails 23 % of the time
    # (design 0041, "Sixth round"). What it can tell at this size: no clear signal, the
    # bootstrap interval holds 0.5 (0.616, 0.44-0.76 here); the 30-plan world passes outright.
    low, high = indist["auc_interval"]
    assert low <= 0.5 <= high and indist["n_evidence"] >= 20
    assert indist["note"].startswith("too few evidence sessions")  # and validate says so
    assert json.loads((bench[0] / "validation" / "gates.json").read_text())[
        "indistinguishability"]["auc_interval"] == [low, high]


def test_too_small_a_tier_and_a_bad_layout_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"smaller than the evidence of 11 questions .* "
                                          r"use tiers of at least \d+k"):
        generate(SynthConfig(out=str(tmp_path / "a"), tiers=["8k"], questions=11,
                             layout="timeline"))
    # the images rendered before the check are gone, so the same --out takes the next try
    # (a folder without a manifest is refused, even with --overwrite); a folder that was
    # there before stays, empty
    assert not (tmp_path / "a").exists()
    (tmp_path / "c").mkdir()
    with pytest.raises(ConfigError, match="smaller than the evidence"):
        generate(SynthConfig(out=str(tmp_path / "c"), tiers=["8k"], questions=11,
                             layout="timeline"))
    assert (tmp_path / "c").is_dir() and not any((tmp_path / "c").iterdir())
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep.txt").write_text("x")
    with pytest.raises(ConfigError, match="--layout 'calendar'"):
        generate(SynthConfig(out=str(tmp_path / "b"), layout="calendar", overwrite=True))
    assert (tmp_path / "b" / "keep.txt").exists()  # refused before anything was cleared


def test_the_report_bins_accuracy_by_sessions_when_asked_and_since_the_evidence(bench, tmp_path):
    runs = []
    for protocol in ("online", "offline"):
        records = _oracle(bench[0], tmp_path / protocol, protocol)
        ident = load_manifest(tmp_path / protocol)["config"]["identity"]
        runs.append(RunData(protocol, ident, list(records.values())))
    tables = build_tables(runs)
    online, offline = (tables.timeline[s.label] for s in tables.systems)
    n = len(runs[0].records)
    assert sum(c.n for c in online["elapsed_sessions"].values()) == n
    assert all(c.accuracy == 1.0 for axis in online.values() for c in axis.values())
    # offline shows the future: the bins holding the refusals asked before their evidence drop
    before = {bin_of("elapsed_sessions", r.meta["elapsed_sessions"])
              for r in runs[1].records if r.question_id.endswith("-before")}
    assert before and all(offline["elapsed_sessions"][b].accuracy < 1 for b in before)
    with_evidence = [r for r in runs[0].records if r.evidence]
    assert sum(c.n for c in online["evidence_distance"].values()) == len(with_evidence)
    assert len(online["evidence_distance"]) >= 2  # asked right after, and long after
    md = render_tables_markdown(tables)
    assert "### Accuracy over the timeline" in md and "Sessions since the latest evidence" in md
    assert 'id="timeline"' in render_html(tables, title="t")
    assert "timeline" in tables.to_dict()


def test_bins_edges_by_hand():
    assert bin_labels("evidence_distance") == ["0", "1–4", "5–19", "20–49", "50–99", "100+"]
    assert [bin_of("evidence_distance", v) for v in (0, 1, 4, 5, 99, 100)] == [
        "0", "1–4", "1–4", "5–19", "50–99", "100+"]
    assert bin_of("elapsed_sessions", 1) == "1–10" and bin_of("elapsed_sessions", 401) == "401+"
    assert bin_of("elapsed_sessions", None) is None and bin_of("elapsed_sessions", True) is None
    assert bin_of("evidence_distance", -1) is None and bin_of("evidence_distance", 2.0) is None


def test_an_asked_after_beyond_the_history_is_bad_input_naming_the_field(bench, tmp_path):
    from memgauge.errors import InputError

    line = (bench[0] / "tiers" / TIERS[0] / "episodes.jsonl").read_text()
    ep = json.loads(line)
    ep["questions"][3]["asked_after"] = len(ep["sessions"])
    bad = tmp_path / "episodes.jsonl"
    bad.write_text(json.dumps(ep) + "\n")
    with pytest.raises(InputError, match=r"asked_after \d+ names no session") as info:
        list(lookup("benchmark", "synth")(BenchmarkOptions(data=str(bad))).episodes())
    assert "questions[3].asked_after" in str(info.value) and "line 1" in str(info.value)


def test_generate_synth_layout_on_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from memgauge.cli import app

    out = tmp_path / "cli"
    ok = CliRunner().invoke(app, ["generate", "synth", "--out", str(out), "--tiers", "32k",
                                  "--questions", "6", "--layout", "timeline"])
    assert ok.exit_code == 0, ok.output
    assert json.loads((out / "manifest.json").read_text())["config"]["layout"] == "timeline"
    assert len((out / "tiers" / "32k" / "episodes.jsonl").read_text().splitlines()) == 1
    bad = CliRunner().invoke(app, ["generate", "synth", "--out", str(tmp_path / "x"),
                                   "--layout", "diary"])
    assert bad.exit_code == 2 and "--layout 'diary'" in bad.output
