"""A timeline's haystack comes from a larger world without its plans' keys, so many plans on
one timeline still leave image talk in the haystack and pass the indistinguishability gate
(design 0029); the per-question layout's haystack is drawn as before."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.benchmarks.synth._generate import Generator
from memgauge.benchmarks.synth._haystack import STYLE_WEIGHTS, haystack_session
from memgauge.benchmarks.synth._timeline import (
    evidence_styles,
    timeline_plans,
    use_timeline_pool,
)
from memgauge.benchmarks.synth._world import BASE_WORLD, LARGE_WORLD, MORE_ENTITY_KINDS
from memgauge.benchmarks.synth.render import describe, render, validate
from memgauge.validation import indistinguishability
from memgauge.validation.synth import gate_episodes, tier_episodes


def _generator(tmp_path, questions: int, tier: str = "64k") -> Generator:
    return Generator(SynthConfig(out=str(tmp_path / "g"), seed=0, tiers=[tier],
                                 questions=questions, layout="timeline"))


def test_the_base_world_is_the_name_lists_the_per_question_layout_always_drew_from():
    # the per-question pool draws the same sessions: same lists, same rng calls
    assert BASE_WORLD.without(set()) == BASE_WORLD
    for seed in range(40):
        a = haystack_session(random.Random(seed), with_image=seed % 2 == 0)
        b = haystack_session(random.Random(seed), with_image=seed % 2 == 0, world=BASE_WORLD,
                             weights=STYLE_WEIGHTS)
        assert a == b


def test_a_world_without_keys_never_draws_them_and_keeps_its_image_talk(tmp_path):
    gen = _generator(tmp_path, 30)
    plans = [plan for _, plan, _, _ in timeline_plans(gen)]
    taken = set().union(*(p.exclusive for p in plans))
    base_left = sum(not (keys & taken) and bool(keys) for _, keys in gen.pool.plans[False])
    use_timeline_pool(gen, plans)
    for with_image in (True, False):
        drawn = gen.pool.plans[with_image]
        assert all(not (keys & taken) for _, keys in drawn)
    keyed = sum(bool(keys) for _, keys in gen.pool.plans[False])
    # share-worded fillers: most were lost to the plans' keys in the base world, not here
    assert keyed > 2 * base_left
    assert keyed / len(gen.pool.plans[False]) > 0.6


def test_the_styles_follow_the_plans_evidence(tmp_path):
    gen = _generator(tmp_path, 30)
    plans = [plan for _, plan, _, _ in timeline_plans(gen)]
    counts = sum((evidence_styles(p) for p in plans), Counter())
    receipts = sum(len(p.sessions) for p in plans if p.family == "msr_arithmetic")
    assert counts["receipt"] == receipts > 0
    assert set(counts) <= set(STYLE_WEIGHTS)
    assert sum(counts.values()) == sum(len(p.sessions) for p in plans)


@pytest.mark.parametrize("kind", MORE_ENTITY_KINDS)
def test_the_larger_worlds_entity_kinds_render(kind):
    assert kind in LARGE_WORLD.entity_kinds and kind not in BASE_WORLD.entity_kinds
    facts = {"kind": kind, "body": "teal", "pattern": "dots", "pattern_colour": "white",
             "mark": "star", "mark_colour": "yellow", "name_tag": "Pip"}
    validate("entity", facts)
    assert render("entity", facts, variant=3).size == (384, 288)
    assert f"single {kind}" in describe("entity", facts)


def test_thirty_plans_on_one_timeline_pass_the_indistinguishability_gate(tmp_path):
    # before the larger world: AUC 0.612 (FAIL) for this seed and size
    root = tmp_path / "t"
    generate(SynthConfig(out=str(root), seed=0, tiers=["64k"], questions=30,
                         layout="timeline"))
    gate = indistinguishability(gate_episodes(tier_episodes(root, "64k")))
    assert gate.verdict == "PASS", gate.auc
    assert gate.n_evidence > 60
