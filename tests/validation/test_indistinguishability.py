"""The two-sided indistinguishability gate (evidence vs every other session, fillers
included), its top-features file, and N/A verdicts, on small hand-built episodes."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter

import numpy as np
import pytest
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.report._gates_md import render_gates_markdown
from memgauge.schema import BenchmarkInfo, Episode, Labels, Question, Session, Turn
from memgauge.validation import indistinguishability
from memgauge.validation.synth import FEATURES_FILE, indistinguishability_gate

pytest.importorskip("sklearn")

VOCAB = [f"w{i}" for i in range(60)]


def session(sid, role, text):
    return Session(session_id=sid, meta={"role": role},
                   turns=[Turn(turn_id=f"{sid}:1", role="user", text=text),
                          Turn(turn_id=f"{sid}:2", role="assistant", text="Okay.")])


def episode(qid, sessions):
    q = Question(question_id=qid, text="q?", answer="a", answer_type="free_text",
                 ability="information_extraction", labels=Labels())
    return Episode(episode_id=qid, sessions=sessions, questions=[q],
                   benchmark=BenchmarkInfo(name="t"))


def mixed(*, filler_tell: str = "", shared_tell: str = "", n_questions=40, seed=1):
    """Per question: 2 evidence, 3 haystack and 3 filler sessions of random VOCAB words.
    ``shared_tell`` is added to evidence and haystack (what image-sharing sessions say),
    never to fillers; ``filler_tell`` only to fillers."""
    rng = random.Random(seed)

    def words(n=120):  # long documents of one distribution: little chance separation
        return " ".join(rng.choice(VOCAB) for _ in range(n))

    eps = []
    for q in range(n_questions):
        ss = [session(f"q{q}:e{k}", "evidence", f"{words()} {shared_tell}") for k in range(2)]
        ss += [session(f"q{q}:h{k}", "haystack", f"{words()} {shared_tell}") for k in range(3)]
        ss += [session(f"q{q}:f{k}", "filler", f"{words()} {filler_tell}") for k in range(3)]
        eps.append(episode(f"q{q}", ss))
    return eps


def inverted(n_questions=40, seed=0):
    """Each question's evidence is about its own topic; its haystack is about the next
    questions' topics. Trained on other questions, a topic's words mean 'haystack', so the
    held-out evidence scores low: perfectly separable, with an out-of-fold AUC near 0."""
    rng = random.Random(seed)

    def text(topic):
        return " ".join([*(f"topic{topic}word{k}" for k in range(5)), *rng.choices(VOCAB, k=10)])

    return [episode(f"q{g}", [
        *(session(f"q{g}:e{k}", "evidence", text(g)) for k in range(2)),
        *(session(f"q{g}:h{k}", "haystack", text((g + 1 + k) % n_questions)) for k in range(4)),
    ]) for g in range(n_questions)]


def test_an_inverted_separation_fails_though_it_passed_the_one_sided_gate():
    res = indistinguishability(inverted())
    assert res.auc < 0.2  # would have passed the former "AUC <= 0.60"
    assert res.verdict == "FAIL"
    assert res.auc_without_fillers == res.auc and res.n_fillers == 0


def test_fillers_that_give_evidence_away_fail_only_when_included():
    # Evidence and haystack both share a receipt; the text-only fillers never do.
    res = indistinguishability(mixed(shared_tell="receipt attached " * 3))
    assert 0.4 <= res.auc_without_fillers <= 0.6  # the former comparison: would pass
    assert res.auc > 0.6 and res.verdict == "FAIL"
    assert res.n_evidence == 80 and res.n_other == 40 * 6 and res.n_fillers == 120
    assert res.top_features["evidence"][0]["ngram"] in {"receipt", "attached",
                                                        "receipt attached"}


def test_indistinguishable_sessions_pass_with_fillers_included():
    # 80 questions: chance alone moves this AUC by ~0.03 (one standard error).
    res = indistinguishability(mixed(n_questions=80))
    assert 0.4 <= res.auc <= 0.6 and 0.4 <= res.auc_without_fillers <= 0.6
    assert res.verdict == "PASS" and res.folds == 5 and res.n_groups == 80
    json.dumps(res.to_dict())
    assert dataclasses.asdict(res) == res.to_dict()


def test_shared_sessions_are_kept_once():
    eps = mixed()
    pool = [session(f"p{i}", "filler", "shared filler text") for i in range(3)]
    eps = [ep.model_copy(update={"sessions": [*ep.sessions, *pool]}) for ep in eps]
    res = indistinguishability(eps)
    assert res.n_fillers == 120 + 3 and res.n_repeats == 39 * 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_shared_pool_is_spread_over_the_folds(seed):
    # 20 questions of noise drawing on one pool of fillers. Kept in its first questions'
    # groups, the pool piled into a few folds and the pooled AUC fell to 0.35-0.45.
    rng = random.Random(seed)

    def words():
        return " ".join(rng.choice(VOCAB) for _ in range(120))

    pool = [session(f"f{i}", "filler", words()) for i in range(200)]
    eps = [episode(f"q{q}", [*(session(f"q{q}:e{k}", "evidence", words()) for k in range(3)),
                             *rng.sample(pool, 60)]) for q in range(20)]
    res = indistinguishability(eps)
    uses = Counter(s.session_id for ep in eps for s in ep.sessions if s.meta["role"] == "filler")
    shared = sum(n > 1 for n in uses.values())  # a session in one episode joins its question
    assert res.n_questions == 20 and res.n_groups == 20 + shared
    assert res.verdict == "PASS", res.auc


@pytest.mark.parametrize("eps", [
    mixed(n_questions=1),  # one question: nothing to cross-validate
    [episode("q0", [session("q0:h", "haystack", "a b c")]),
     episode("q1", [session("q1:h", "haystack", "d e f")])],  # no evidence
])
def test_nothing_to_check_is_not_applicable(eps):
    res = indistinguishability(eps)
    assert res.verdict == "N/A" and res.auc is None and res.folds == 0
    assert res.note.startswith("not applicable")


def test_features_file_holds_the_separating_word(tmp_path):
    gate = indistinguishability_gate(mixed(filler_tell="weather chat " * 3),
                                     tmp_path / "validation")
    assert gate["verdict"] == "FAIL" and gate["features_file"] == FEATURES_FILE
    saved = json.loads((tmp_path / "validation" / FEATURES_FILE).read_text(encoding="utf-8"))
    assert saved["auc"] == gate["auc"] and saved["n_fillers"] == 120
    assert len(saved["other"]) == 30 and len(saved["evidence"]) == 30
    top = saved["other"][0]
    assert top["ngram"] in {"weather", "chat", "weather chat"}
    assert top["weight"] < 0 and top["evidence_docs"] == 0 and top["other_docs"] == 120
    # The failing gate's report names the file and shows what gives it away.
    md = render_gates_markdown({"indistinguishability": gate})
    assert "indistinguishability — FAIL" in md and f"`{FEATURES_FILE}`" in md
    assert f"`{top['ngram']}` (0 evidence / 120 other)" in md
    passing = indistinguishability_gate(mixed(n_questions=80), tmp_path / "ok")
    assert "what gives evidence away" not in render_gates_markdown(
        {"indistinguishability": passing})


def test_validate_exits_0_when_gates_have_nothing_to_check(tmp_path):
    for module in ("imagehash", "bm25s", "model2vec"):
        pytest.importorskip(module)
    bench = tmp_path / "bench"
    runner = CliRunner()
    made = runner.invoke(app, ["generate", "synth", "--out", str(bench), "--questions", "1",
                               "--tiers", "8k"])
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["validate", str(bench), "--no-ocr"])
    assert result.exit_code == 0, result.output  # one question: nothing to cross-validate
    gates = json.loads((bench / "validation" / "gates.json").read_text(encoding="utf-8"))
    assert gates["indistinguishability"]["verdict"] == "N/A"
    assert "indistinguishability" in gates["not_applicable"]
    assert gates["passed"] and gates["verdict"] == "PASS" and gates["failed"] == []
    assert "Evidence/haystack indistinguishability — N/A" in result.output
    assert (bench / "validation" / FEATURES_FILE).is_file()


def test_our_generator_passes_with_fillers_included(tmp_path):
    from memgauge.benchmarks.synth import SynthConfig, generate
    from memgauge.benchmarks.synth._haystack import haystack_session
    from memgauge.validation.synth import tier_episodes

    generate(SynthConfig(out=str(tmp_path / "b"), seed=0, tiers=["8k"], questions=40))
    eps = tier_episodes(tmp_path / "b", "8k")
    fillers = [s for ep in eps for s in ep.sessions if s.meta["role"] == "filler"]
    assert fillers and not any(t.images or "<image>" in t.text for s in fillers for t in s.turns)
    res = indistinguishability(eps)
    assert res.n_fillers > 50 and res.verdict == "PASS", res.top_features["evidence"][:5]
    # Most fillers talk like an image session (its image left out), keys and all.
    rng = random.Random(0)
    plans = [haystack_session(rng, with_image=False) for _ in range(200)]
    worded = [keys for p, keys in plans
              if any(t.source.startswith("share_reply") for t in p.turns)]
    assert 0.6 * len(plans) < len(worded) < 0.9 * len(plans) and any(worded)
    assert not any(t.images or "<image>" in t.text for p, _ in plans for t in p.turns)


def test_the_gate_reports_a_bootstrap_interval_around_its_auc():
    """Issue 28: beside the AUC, its 95 % interval over resampled questions, so a marginal
    pass (an interval crossing 0.40 or 0.60) can be told from a clear one."""
    res = indistinguishability(mixed(n_questions=80))
    low, high = res.auc_interval
    assert low < res.auc < high and 0.03 < high - low < 0.25
    small = indistinguishability(mixed(n_questions=20))
    assert small.auc_interval[1] - small.auc_interval[0] > high - low  # fewer questions: wider
    text = render_gates_markdown({"indistinguishability": res.to_dict()})
    assert f"95 % bootstrap interval {low:.3f}–{high:.3f}" in text
    # the verdict still reads the AUC alone
    assert res.verdict == "PASS"


def test_an_interval_wider_than_the_band_says_the_verdict_is_largely_chance():
    """Few evidence sessions: the interval spans more than 0.40-0.60 and the gate says so
    (verdict unchanged); enough of them: no such note."""
    few = indistinguishability(mixed(n_questions=4, seed=3))
    low, high = few.auc_interval
    assert high - low > 0.2 and few.verdict in ("PASS", "FAIL")  # the rule reads the AUC
    assert few.note and few.note.startswith("too few evidence sessions (8)")
    assert f"{low:.3f}–{high:.3f}" in few.note
    text = render_gates_markdown({"indistinguishability": few.to_dict()})
    assert "- note: too few evidence sessions (8)" in text
    many = indistinguishability(mixed(n_questions=80))
    assert many.note is None and many.auc_interval[1] - many.auc_interval[0] <= 0.2


def test_rank_auc_matches_sklearn_with_ties():
    from sklearn.metrics import roc_auc_score

    from memgauge.validation._gates import _rank_auc

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    scores = np.round(rng.random(300) + 0.2 * y, 1)  # many ties
    assert _rank_auc(scores, y) == pytest.approx(roc_auc_score(y, scores))
    assert _rank_auc(scores, np.zeros(300, dtype=int)) is None


def test_auc_interval_resamples_whole_groups():
    from memgauge.validation._gates import auc_interval

    # Two groups, each perfectly ordered inside but not across: resampling sessions one by
    # one would give a narrow interval; whole groups show the spread.
    y = np.array([1, 0, 1, 0])
    scores = np.array([0.9, 0.1, 0.2, 0.8])
    low, high = auc_interval(scores, y, ["a", "a", "b", "b"], resamples=400)
    assert low <= 0.5 and high == 1.0


def families_corpus(*, with_family: bool, n_questions=40, seed=0, pool_size=200):
    """Evidence and haystack drawn alike: each session talks in one of 10 families' words
    (its share line, its subjects) plus noise. A question's 4 evidence sessions share its
    family; the ``pool_size`` haystack sessions form a pool every episode draws 40 from
    (200: nearly every one shared by several episodes; 10,000: nearly every one used by one
    episode only). Nothing tells evidence apart; only the folds can."""
    rng = random.Random(seed)

    def text(family):
        own = [f"fam{family}word{k}" for k in range(8)]
        return " ".join([*rng.choices(own, k=12), *rng.choices(VOCAB, k=30)])

    def meta(role, family):
        return {"role": role, **({"family": f"f{family}"} if with_family else {})}

    def pooled(i):
        family = i % 10
        return Session(session_id=f"p{i}", meta=meta("haystack", family),
                       turns=[Turn(turn_id=f"p{i}:1", role="user", text=text(family))])

    pool = [pooled(i) for i in range(pool_size)]
    eps = []
    for q in range(n_questions):
        own = [Session(session_id=f"q{q}:e{k}", meta=meta("evidence", q % 10),
                       turns=[Turn(turn_id=f"q{q}:e{k}:1", role="user", text=text(q % 10))])
               for k in range(4)]
        eps.append(episode(f"q{q}", [*own, *rng.sample(pool, 40)]))
    return eps


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_family_is_held_out_with_its_haystack(seed):
    """A question held out took a quarter of its family's evidence out of training while
    the family's haystack stayed in every fold: text with no tell scored well under 0.5
    (issue 28's seeds 9 and 18). Shared sessions now join a question of their family."""
    plain = indistinguishability(families_corpus(with_family=False, seed=seed))
    joined = indistinguishability(families_corpus(with_family=True, seed=seed))
    assert plain.auc < 0.45, plain.auc
    assert abs(joined.auc - 0.5) < 0.05, joined.auc
    assert joined.n_groups == 40 < plain.n_groups  # questions are never merged


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_haystack_used_once_is_held_out_with_its_family(seed):
    """A haystack session one episode uses stayed in that episode's question's group, of
    another family mostly, so the family's haystack again sat in every fold (at 40
    questions a third of the other sessions are used once; seed 15 scored 0.380, 0.456
    joined). Built corpus, nearly every haystack session used once: 0.35-0.40 before."""
    joined = indistinguishability(families_corpus(with_family=True, seed=seed,
                                                  pool_size=10_000))
    assert joined.n_repeats < 200  # nearly all used once
    assert abs(joined.auc - 0.5) < 0.08, joined.auc
    assert joined.n_groups == 40  # questions are never merged


def test_merge_by_family_keeps_questions_apart_and_leaves_unknown_families():
    from memgauge.validation._gates import merge_by_family

    # q1 and q3 are family x's questions, q2 family y's. "d" is q1's decoy (its own
    # question is of its family: it stays); "u" is used once by q2's episode but drawn as
    # family x (it joins an x question); "shared b" has a family no question has.
    groups = ["q1", "q1", "q2", "q3", "shared a", "shared b", "shared c", "q1", "q2"]
    families = ["x", "x", "y", "x", "x", "z", None, "x", "x"]
    labels = [1, 1, 1, 1, 0, 0, 0, 0, 0]
    names = ["e1", "e2", "e3", "e4", "shared a", "shared b", "shared c", "d", "u"]
    merged = merge_by_family(groups, families, labels, names)
    assert merged[:4] == groups[:4]  # questions keep their groups
    assert merged[4] in {"q1", "q3"} and merged[8] in {"q1", "q3"}
    assert merged[5:8] == ["shared b", "shared c", "q1"]
