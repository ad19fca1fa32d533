"""Deterministic renderers for the synthetic multimodal memory benchmark."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import random
import subprocess
import sys
import time

import pytest
from PIL import Image, ImageChops

from memgauge.benchmarks.synth.render import (
    EXAMPLES,
    KINDS,
    NEAR_DUPLICATE_LEVELS,
    PALETTE,
    describe,
    near_duplicate,
    render,
    render_png,
)
from memgauge.benchmarks.synth.render._base import REGISTRY, seed_for

SIZE = (384, 288)


def _differs(a: Image.Image, b: Image.Image) -> bool:
    return ImageChops.difference(a, b).getbbox() is not None


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _png_chunks(png: bytes):
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos = 8
    while pos < len(png):
        length = int.from_bytes(png[pos:pos + 4], "big")
        yield png[pos + 4:pos + 8]
        pos += 12 + length


def test_kinds_and_palette():
    assert KINDS == ("receipt", "ticket", "label", "calendar", "schedule", "clock", "chat",
                     "app_ui", "scene", "entity")
    assert len(PALETTE) == 16
    cols = list(PALETTE.values())
    for i, a in enumerate(cols):
        for b in cols[i + 1:]:
            assert sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5 > 40


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_renders(kind, tmp_path):
    img = render(kind, EXAMPLES[kind])
    assert img.mode == "RGB" and img.size == SIZE
    assert len(img.getcolors(1 << 16) or range(1 << 16)) > 8  # not a blank canvas
    size = (512, 384) if KINDS.index(kind) % 2 else (300, 300)
    other = render(kind, EXAMPLES[kind], size=size, variant=1)
    assert other.mode == "RGB" and other.size == size
    png = render_png(kind, EXAMPLES[kind])
    (tmp_path / f"{kind}.png").write_bytes(png)
    with Image.open(io.BytesIO(png)) as im:
        assert im.size == SIZE and im.mode == "RGB"
    assert set(_png_chunks(png)) == {b"IHDR", b"IDAT", b"IEND"}  # no tIME/tEXt/eXIf


@pytest.mark.parametrize("kind", KINDS)
def test_png_is_deterministic_and_variants_differ(kind):
    facts = EXAMPLES[kind]
    assert render_png(kind, facts) == render_png(kind, copy.deepcopy(facts))
    assert render_png(kind, facts, variant=3) == render_png(kind, facts, variant=3)
    v0, v1 = render(kind, facts, variant=0), render(kind, facts, variant=1)
    assert _differs(v0, v1)
    # describe() takes no variant: the caption of every variant is the same text
    assert describe(kind, facts) == describe(kind, copy.deepcopy(facts))


_CHILD = """
import hashlib, json, sys
from memgauge.benchmarks.synth.render import EXAMPLES, KINDS, render_png
out = {f"{k}/{v}": hashlib.sha256(render_png(k, EXAMPLES[k], variant=v)).hexdigest()
       for k in KINDS for v in (1,)}
sys.stdout.write(json.dumps(out))
"""


def test_png_bytes_identical_in_a_fresh_process():
    here = {f"{k}/{v}": hashlib.sha256(render_png(k, EXAMPLES[k], variant=v)).hexdigest()
            for k in KINDS for v in (1,)}
    env = dict(os.environ, PYTHONHASHSEED="4242")
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    assert json.loads(proc.stdout) == here


def test_seed_is_sha256_of_canonical_json():
    facts = {"b": 1, "a": [1, 2]}
    expect = int.from_bytes(hashlib.sha256(
        json.dumps(["x", facts, 3], sort_keys=True, ensure_ascii=False,
                   separators=(",", ":")).encode()).digest()[:8], "big")
    assert seed_for("x", facts, 3) == expect
    assert seed_for("x", {"a": [1, 2], "b": 1}, 3) == expect  # key order is irrelevant


@pytest.mark.parametrize("kind,key,value", [
    ("receipt", "total", "13.25"),
    ("receipt", "currency", "DKK"),
    ("ticket", "code", "TK-48218"),
    ("label", "lot", "L2403-18"),
    ("calendar", "marked_day", 15),
    ("clock", "minute", 21),
    ("clock", "hour", 2),  # same hands as 14:xx, but the AM/PM window differs
    ("entity", "pattern", "dots"),
    ("entity", "mark_colour", "yellow"),
    ("scene", "background", "grey"),
])
def test_different_facts_give_different_pixels(kind, key, value):
    facts = EXAMPLES[kind]
    other = dict(facts, **{key: value})
    assert other != facts
    for v in (0, 1):
        assert _differs(render(kind, facts, variant=v), render(kind, other, variant=v))
    assert describe(kind, facts) != describe(kind, other)


@pytest.mark.parametrize("kind", KINDS)
def test_missing_key_raises_naming_kind_and_key(kind):
    for key in REGISTRY[kind].required:
        facts = dict(EXAMPLES[kind])
        del facts[key]
        # The lambdas run within this iteration, so capturing the loop's facts is intended.
        for fn in (lambda: render(kind, facts), lambda: describe(kind, facts),  # noqa: B023
                   lambda: near_duplicate(kind, facts, "X1", random.Random(0))):  # noqa: B023
            with pytest.raises(ValueError) as err:
                fn()
            assert kind in str(err.value) and repr(key) in str(err.value)


def test_bad_inputs_raise_value_error():
    with pytest.raises(ValueError, match="unknown image kind 'poster'"):
        render("poster", {})
    with pytest.raises(ValueError, match="marker_colour"):
        render("calendar", dict(EXAMPLES["calendar"], marker_colour="chartreuse"))
    with pytest.raises(ValueError, match="marked_day"):
        render("calendar", dict(EXAMPLES["calendar"], month=2, marked_day=30))
    scene = copy.deepcopy(EXAMPLES["scene"])
    scene["objects"].append(dict(scene["objects"][0], shape="star"))
    with pytest.raises(ValueError, match="two objects in cell"):
        render("scene", scene)
    with pytest.raises(ValueError, match="time"):
        render("receipt", dict(EXAMPLES["receipt"], time="2pm"))
    with pytest.raises(ValueError, match="level"):
        near_duplicate("clock", EXAMPLES["clock"], "X9", random.Random(0))


@pytest.mark.parametrize("kind", KINDS)
def test_describe_mentions_every_fact(kind):
    facts = EXAMPLES[kind]
    text = describe(kind, facts)
    for s in _strings(facts):
        assert s in text, (s, text)
    if kind == "clock":
        assert f"{facts['hour']:02d}:{facts['minute']:02d}" in text
    if kind == "calendar":
        assert "March 2024" in text and "2024-03" in text and f"Day {facts['marked_day']}" in text
    if kind == "receipt":
        assert "2 x Latte" in text and "TOTAL $12.25" in text
    if kind == "scene":
        assert "top-left" in text and "2 red circles" in text and "small blue star" in text


@pytest.mark.parametrize("kind", KINDS)
def test_near_duplicate_changes_exactly_one_fact(kind):
    facts = EXAMPLES[kind]
    base = render(kind, facts)
    levels = NEAR_DUPLICATE_LEVELS[kind]
    assert set(levels) <= {"X1", "X2", "X3", "X4"} and levels
    for level in levels:
        for seed in range(3):
            before = copy.deepcopy(facts)
            out = near_duplicate(kind, facts, level, random.Random(seed))
            assert facts == before  # the input is not mutated
            changed = [k for k in set(facts) | set(out) if facts.get(k) != out.get(k)]
            assert len(changed) == 1, (level, changed)
            assert describe(kind, out) != describe(kind, facts)
            if seed == 0:
                assert _differs(base, render(kind, out)), (kind, level, out)
        # same rng state -> same decoy
        assert (near_duplicate(kind, facts, level, random.Random(7))
                == near_duplicate(kind, facts, level, random.Random(7)))


def test_near_duplicate_levels_are_what_they_claim():
    rng = random.Random(1)
    lab = near_duplicate("label", dict(EXAMPLES["label"]), "X1", rng)
    assert lab["colour"] != "teal"
    cal = EXAMPLES["calendar"]
    x4 = near_duplicate("calendar", cal, "X4", random.Random(0))
    from memgauge.benchmarks.synth.render import CLOSE_COLOURS
    assert x4["marker_colour"] in CLOSE_COLOURS[cal["marker_colour"]]
    t = near_duplicate("ticket", EXAMPLES["ticket"], "X4", random.Random(0))
    a, b = EXAMPLES["ticket"]["code"], t["code"]
    assert len(a) == len(b) and 1 <= sum(x != y for x, y in zip(a, b, strict=True)) <= 2
    full = dict(EXAMPLES["scene"], objects=[
        {"shape": "circle", "colour": "red", "col": c, "row": r, "size": "small"}
        for c in range(4) for r in range(3)])
    with pytest.raises(ValueError, match="empty cell"):
        near_duplicate("scene", full, "X2", random.Random(0))


def test_entity_variants_keep_identity():
    facts = EXAMPLES["entity"]
    imgs = [render("entity", facts, variant=v) for v in range(3)]
    assert _differs(imgs[0], imgs[1]) and _differs(imgs[1], imgs[2])
    combos = (("zigzag", "moon"), ("none", "bolt"), ("dots", "leaf"), ("stripes", "heart"))
    for i, k in enumerate(("mug", "dog", "plant", "bottle", "sneaker", "backpack", "lamp")):
        pattern, mark = combos[i % len(combos)]
        f = dict(facts, kind=k, pattern=pattern, mark=mark, body="white",
                 pattern_colour="white")  # a same-colour pattern is still drawn (with an edge)
        plain = dict(f, pattern="none")
        if pattern != "none":
            assert _differs(render("entity", f), render("entity", plain))


def test_render_speed(capsys):
    """Prints (does not assert) the mean wall and CPU time per render for each kind."""
    rows = []
    for kind in KINDS:
        render(kind, EXAMPLES[kind])  # warm the font cache
        w0, c0 = time.perf_counter(), time.process_time()
        for v in range(10):
            render(kind, EXAMPLES[kind], variant=v)
        wall = (time.perf_counter() - w0) / 10 * 1000
        cpu = (time.process_time() - c0) / 10 * 1000
        rows.append(f"{kind}={wall:.1f}ms (cpu {cpu:.1f})")
    with capsys.disabled():
        print("\nmean render time per kind (384x288, variants 0-9): " + ", ".join(rows))
