"""A timeline's haystack comes from a larger world without its plans' keys, so many plans on
one timeline still leave image talk in the haystack and pass the indistinguishability gate
(design 0029); the per-question layout's haystack is drawn as before."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.benchmarks.synth._generate import Generator
from memgauge.benchmarks.synth._haystack import STYLE_WEIGHTS, haystack_session
from memgauge.benchmarks.synth._text import MAX_REPEATS
from memgauge.benchmarks.synth._timeline import (
    evidence_styles,
    timeline_plans,
    use_timeline_pool,
)
from memgauge.benchmarks.synth._world import BASE_WORLD, LARGE_WORLD, MORE_ENTITY_KINDS
from memgauge.benchmarks.synth.render import describe, render, validate
from memgauge.validation import indistinguishability
from memgauge.validation._gates import repeated_lines
from memgauge.validation.synth import gate_episodes, tier_episodes
from memgauge.validation.synth import validate as validate_benchmark


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
    # about 0.64 of a world's fillers are keyed (4,000 drawn); a pool of ~440 varies by
    # ±0.02 (generator 8's article reply draw moved this one from above 0.6 to 0.59)
    assert keyed / len(gen.pool.plans[False]) > 0.55


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


@pytest.fixture(scope="module")
def timelines(tmp_path_factory) -> dict[tuple[int, int, str], Path]:
    """The thirty-plan world at 64k and eleven plans at 32k (seeds as the tests use)."""
    out = {}
    for seed, plans, tier in WORLDS:
        root = tmp_path_factory.mktemp("timeline") / f"s{seed}-{plans}-{tier}"
        generate(SynthConfig(out=str(root), seed=seed, tiers=[tier], questions=plans,
                             layout="timeline"))
        out[(seed, plans, tier)] = root
    return out


WORLDS = [(0, 30, "64k"), (5, 11, "32k")]


def test_thirty_plans_on_one_timeline_pass_the_indistinguishability_gate(timelines):
    # before the larger world: AUC 0.612 (FAIL) for this seed and size
    gate = indistinguishability(gate_episodes(tier_episodes(timelines[WORLDS[0]], "64k")))
    assert gate.verdict == "PASS", gate.auc
    assert gate.n_evidence > 60 and gate.note is None  # interval inside the band's width


@pytest.mark.parametrize("world", WORLDS)
def test_a_timeline_says_no_line_more_than_twice_and_passes_validate(timelines, world):
    # generator 7 said a line 6 times in the thirty-plan world (the haystack's one article
    # reply) and 4 times in the eleven-plan one, and its repeats gate failed
    root, tier = timelines[world], world[2]
    conversation = tier_episodes(root, tier)
    repeats = repeated_lines(conversation)
    assert repeats.max_count <= MAX_REPEATS, repeats.worst
    results = validate_benchmark(root, ocr=False)
    assert results["tiers"][tier]["repeats"]["verdict"] == "PASS"
    assert results["indistinguishability"]["verdict"] == "PASS"
    assert results["passed"] is True, results
