"""All twelve X x Y cells: the families that fill them, their answers recomputed here from
the rendered facts, Y3 update chains (latest state gold, stale states in the history)."""

from __future__ import annotations

import random
from itertools import pairwise, product
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.synth import FAMILIES, SynthConfig, generate
from memgauge.benchmarks.synth._families import DEFAULT_FAMILIES, When
from memgauge.cli import app
from memgauge.registry import lookup

NEW = ["ie_instance", "msr_scenes", "msr_parcels", "ku_scene", "ku_instance", "ku_code"]
CELLS = {(f"X{x}", f"Y{y}") for x, y in product(range(1, 5), range(1, 4))}
Y3_NEW = ("ku_scene", "ku_instance", "ku_code")


def test_the_families_cover_all_twelve_cells_and_the_new_ones_fill_the_gaps():
    from datetime import date

    cells, old_cells = set(), set()
    for name, family in FAMILIES.items():
        plan = family.plan(random.Random(f"cells:{name}"), When(date(2025, 10, 1)))
        cell = (plan.labels.x, plan.labels.y)
        cells.add(cell)
        if name in DEFAULT_FAMILIES:
            old_cells.add(cell)
    assert cells == CELLS
    assert len(old_cells) == 6  # the default set is unchanged; the new families fill the rest


@pytest.fixture(scope="module")
def new_bench(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("xy") / "b"
    generate(SynthConfig(out=str(root), seed=11, tiers=["4k"], questions=18, families=NEW))
    return root


def _evidence_images(ep, q) -> list[dict]:
    """Image facts at the evidence pointers, in the episode's (chronological) session order."""
    pointed = {(p.session_id, p.turn_id, p.image_index) for p in q.evidence}
    out = []
    for s in ep.sessions:
        for t in s.turns:
            for k, im in enumerate(t.images):
                if (s.session_id, t.turn_id, k) in pointed:
                    out.append({"kind": im.meta["kind"], **im.meta["facts"], "date": s.date})
    return out


def _expected(family: str, images: list[dict]) -> str:
    """Each new family's answer, from what the images show (not through its solver)."""
    if family == "ie_instance":
        (shot,) = images
        return shot["body"]
    if family == "msr_scenes":
        return str(len({im["background"] for im in images}))
    if family == "msr_parcels":
        return str(sum(int(dict(im["fields"])["Items"]) for im in images))
    if family == "ku_scene":
        return images[-1]["background"]
    if family == "ku_instance":
        return images[-1]["body"]
    if family == "ku_code":
        return dict(images[-1]["fields"])["Code"]
    raise AssertionError(family)


def _state(family: str, image: dict) -> str:
    return {"ku_scene": lambda i: i["background"], "ku_instance": lambda i: i["body"],
            "ku_code": lambda i: dict(i["fields"])["Code"]}[family](image)


def test_each_new_family_answer_is_what_its_images_show(new_bench):
    eps = list(lookup("benchmark", "synth")(BenchmarkOptions(data=str(new_bench), tier="4k"))
               .episodes())
    seen = {}
    for ep in eps:
        (q,) = ep.questions
        family = q.meta["family"]
        if family == "ar":
            continue
        images = _evidence_images(ep, q)
        assert images, q.question_id
        assert q.answer == _expected(family, images), (q.question_id, family)
        assert q.labels.image_dependency == "essential"
        text = " ".join(t.text for s in ep.sessions for t in s.turns)
        if family == "ku_code":
            assert q.answer not in text  # the code is only in the pixels
        seen[family] = seen.get(family, 0) + 1
    assert set(seen) == set(NEW) and all(n >= 2 for n in seen.values())


def test_y3_chains_latest_state_is_gold_and_stale_states_are_in_the_history(new_bench):
    eps = list(lookup("benchmark", "synth")(BenchmarkOptions(data=str(new_bench), tier="4k"))
               .episodes())
    chains = 0
    for ep in eps:
        (q,) = ep.questions
        if q.meta["family"] not in Y3_NEW:
            continue
        chains += 1
        assert q.labels.y == "Y3"
        images = _evidence_images(ep, q)
        states = [_state(q.meta["family"], im) for im in images]
        assert [im["date"] for im in images] == sorted(im["date"] for im in images)
        assert len(states) >= 3 and len(set(states)) == len(states)  # every update changes it
        assert states[-1] == q.answer
        assert q.old_answers == states[:-1] and q.answer not in q.old_answers
        if q.meta["family"] == "ku_code":  # near-duplicates: one or two digits per update
            for a, b in pairwise(states):
                assert 1 <= sum(x != y for x, y in zip(a, b, strict=True)) <= 2
    assert chains >= 6


def test_new_families_are_deterministic_for_a_seed(new_bench, tmp_path):
    again = generate(SynthConfig(out=str(tmp_path / "again"), seed=11, tiers=["4k"],
                                 questions=18, families=NEW))
    first = (new_bench / "manifest.json").read_text(encoding="utf-8")
    import json

    assert json.loads(first)["digest"] == again["digest"]


def test_cli_accepts_the_new_families_and_names_an_unknown_one(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["generate", "synth", "--out", str(tmp_path / "ok"), "--tiers", "4k",
                             "--questions", "3", "--families", "ku_code,msr_scenes,ie_instance"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["generate", "synth", "--out", str(tmp_path / "bad"), "--tiers", "4k",
                              "--questions", "3", "--families", "ku_code,ku_colour"])
    assert bad.exit_code == 2
    assert "ku_colour" in bad.output and "Traceback" not in bad.output


def test_timeline_asks_the_new_chains_at_each_update_with_the_state_shown_then(tmp_path):
    root = tmp_path / "t"
    generate(SynthConfig(out=str(root), seed=5, tiers=["16k"], questions=3, layout="timeline",
                         families=list(Y3_NEW)))
    (ep,) = lookup("benchmark", "synth")(BenchmarkOptions(data=str(root), tier="16k")).episodes()
    at_steps = 0
    for q in ep.questions:
        family = q.meta["family"]
        if family not in Y3_NEW:
            continue
        states = [_state(family, im) for im in _evidence_images(ep, q)]
        assert q.answer == states[-1] and q.old_answers == states[:-1]
        if "-at" in q.question_id:  # asked right after the k-th update: the state shown then
            at_steps += 1
            k = int(q.question_id.rsplit("-at", 1)[1])
            assert len(states) == k + 1
            last = max(ep.sessions.index(s) for s in ep.sessions
                       if s.session_id in {p.session_id for p in q.evidence})
            assert q.asked_after == last
    assert at_steps >= 3
