"""The generator: tiers on target, determinism, stable questions, exports, oracles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.synth import SynthConfig, generate, parse_tier
from memgauge.benchmarks.synth._families import DEFAULT_FAMILIES
from memgauge.registry import lookup
from memgauge.runner import RunConfig, Runner, read_records
from memgauge.schema import AnswerType
from memgauge.scoring import is_refusal
from memgauge.validation.synth import tier_episodes

TIERS = ["4k", "8k"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("synth") / "b"
    manifest = generate(SynthConfig(out=str(root), seed=7, tiers=TIERS, questions=20))
    return root, manifest


def test_every_tier_is_within_three_percent_of_its_target(bench):
    root, manifest = bench
    for tier in TIERS:
        info = manifest["tiers"][tier]
        assert info["within_tolerance"] == info["questions"] == 20
        for ep in tier_episodes(root, tier):
            assert abs(ep.meta["tokens"] - parse_tier(tier)) <= 0.03 * parse_tier(tier)


def test_same_seed_same_bytes_other_seed_other_bytes(bench, tmp_path):
    root, manifest = bench
    again = generate(SynthConfig(out=str(tmp_path / "again"), seed=7, tiers=TIERS, questions=20))
    assert again["digest"] == manifest["digest"]
    for rel in manifest["files"]:
        assert (root / rel).read_bytes() == (tmp_path / "again" / rel).read_bytes()
    other = generate(SynthConfig(out=str(tmp_path / "other"), seed=8, tiers=["4k"], questions=5))
    assert other["digest"] != manifest["digest"]


def test_questions_and_evidence_are_identical_across_tiers_only_haystack_grows(bench):
    root, _ = bench
    small, large = tier_episodes(root, "4k"), tier_episodes(root, "8k")
    for a, b in zip(small, large, strict=True):
        assert a.questions == b.questions
        ev_a = [s for s in a.sessions if s.meta["role"] == "evidence"]
        ev_b = [s for s in b.sessions if s.meta["role"] == "evidence"]
        assert ev_a == ev_b
        assert len(b.sessions) > len(a.sessions)
        dates = [s.date for s in b.sessions]
        assert dates == sorted(dates)  # chronological, so chains keep their order
        assert all(s.date < a.questions[0].question_date for s in ev_a)


def test_families_labels_and_answer_types(bench):
    root, manifest = bench
    eps = tier_episodes(root, "4k")
    assert set(manifest["families"]) == {*DEFAULT_FAMILIES, "ar"}
    for ep in eps:
        q = ep.questions[0]
        assert q.labels.x and q.labels.y and q.labels.image_dependency
        if q.answer_type == AnswerType.REFUSAL:
            assert not q.evidence and not [s for s in ep.sessions if s.meta["role"] == "evidence"]
            continue
        assert q.evidence and any(p.image_index is not None for p in q.evidence)
        if q.meta["family"] == "ku_update":
            assert len(q.old_answers) == 3 and q.answer not in q.old_answers
        # the answer lives in an image, never in the conversation text
        text = " ".join(t.text for s in ep.sessions for t in s.turns)
        if q.meta["family"] in ("ie_previnfo", "ku_update", "tr_date", "msr_arithmetic"):
            assert str(q.answer) not in text


def test_memlens_export_loads_through_our_memlens_loader(bench):
    root, _ = bench
    for tier in TIERS:
        ours = {ep.episode_id: ep for ep in tier_episodes(root, tier)}
        ml = lookup("benchmark", "memlens")(BenchmarkOptions(
            data=str(root / "memlens" / f"dataset_{tier}.json"), image_dir=str(root)))
        loaded = list(ml.episodes())
        assert len(loaded) == len(ours)
        for ep in loaded:
            mine = ours[ep.episode_id]
            q, mq = ep.questions[0], mine.questions[0]
            assert (q.text, q.answer, q.ability, q.answer_type) == (mq.text, mq.answer, mq.ability,
                                                                   mq.answer_type)
            assert len(ep.sessions) == len(mine.sessions)
            n_images = sum(len(t.images) for s in ep.sessions for t in s.turns)
            assert n_images == sum(len(t.images) for s in mine.sessions for t in s.turns)
            # evidence comes back as session positions
            gold = {i for i, s in enumerate(mine.sessions) if s.meta["role"] == "evidence"}
            assert {int(p.session_id) - 1 for p in q.evidence} == gold


def _oracle(root: Path, tier: str, system: str, out: Path) -> dict:
    Runner(RunConfig(bench="synth", data=str(root), tier=tier, system=system, model="none:",
                     out=str(out), cache=False, progress=False)).run_sync()
    return read_records(out)


def test_oracle_answers_everything_and_text_only_oracle_cannot(bench, tmp_path):
    root, _ = bench
    full = _oracle(root, "8k", "oracle", tmp_path / "o")
    assert len(full) == 20 and all(r.status == "ok" and r.scores["rule"] == 1.0
                                   for r in full.values())
    blind = _oracle(root, "8k", "oracle-text", tmp_path / "t")
    for r in blind.values():
        if r.answer_type != AnswerType.REFUSAL:
            assert r.scores["rule"] == 0.0 and is_refusal(r.prediction)


def test_bad_tier_and_family_are_clear_errors(tmp_path):
    from memgauge.errors import ConfigError

    with pytest.raises(ConfigError, match="tier"):
        generate(SynthConfig(out=str(tmp_path / "x"), tiers=["lots"], questions=1))
    with pytest.raises(ConfigError, match="families"):
        generate(SynthConfig(out=str(tmp_path / "y"), tiers=["4k"], questions=1,
                             families=["nope"]))
    with pytest.raises(ConfigError, match="smaller than question"):
        generate(SynthConfig(out=str(tmp_path / "z"), tiers=["1k"], questions=4,
                             families=["msr_counting"]))


def test_runner_counts_the_same_tokens_the_generator_targeted(bench, tmp_path):
    from helpers.stub_server import StubServer

    root, _ = bench
    tokens = {ep.episode_id: ep.meta["tokens"] for ep in tier_episodes(root, "4k")}
    with StubServer(answer=lambda body: "Insufficient information") as stub:
        Runner(RunConfig(bench="synth", data=str(root), tier="4k", system="full-context",
                         model="openai:stub", base_url=stub.base_url, out=str(tmp_path / "r"),
                         count_tokens=True, cache=False, progress=False, limit=6)).run_sync()
        sent_images = sum(json.dumps(b).count("data:image/png") for b in stub.requests)
    records = read_records(tmp_path / "r")
    assert len(records) == 6
    for r in records.values():
        assert r.input_tokens == tokens[r.episode_id]
    assert sent_images > 0


def test_a_non_empty_folder_is_refused_unless_overwrite_which_clears_it(tmp_path):
    """An earlier benchmark's tiers and images must not survive under a new manifest
    (issue 11: `generate synth` into a non-empty folder)."""
    import pytest

    from memgauge.errors import ConfigError

    out = tmp_path / "b"
    generate(SynthConfig(out=str(out), seed=1, tiers=["8k", "32k"], questions=3))
    with pytest.raises(ConfigError, match="not empty; use --overwrite"):
        generate(SynthConfig(out=str(out), seed=2, tiers=["8k"], questions=3))
    stale = out / "images" / "stale.png"
    stale.parent.mkdir(exist_ok=True)
    stale.write_bytes(b"x")
    m = generate(SynthConfig(out=str(out), seed=2, tiers=["8k"], questions=3, overwrite=True))
    assert not (out / "tiers" / "32k").exists() and not stale.exists()
    assert list(m["tiers"]) == ["8k"]
    other = tmp_path / "notours"
    other.mkdir()
    (other / "thesis.tex").write_text("keep me")
    with pytest.raises(ConfigError, match="other than a generated benchmark"):
        generate(SynthConfig(out=str(other), tiers=["8k"], questions=3, overwrite=True))
    assert (other / "thesis.tex").read_text() == "keep me"
