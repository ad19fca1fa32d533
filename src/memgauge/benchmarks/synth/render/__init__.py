"""Deterministic renderers: facts dict -> image, plus the gold caption and near-duplicates.

Every image is a pure function of ``(kind, facts, size, variant)``::

    from memgauge.benchmarks.synth.render import render, render_png, KINDS, describe
    img = render("clock", {"hour": 14, "minute": 20, "face_colour": "white"})
    png = render_png("clock", facts, variant=2)   # byte-identical across runs/processes
    describe("clock", facts)   # the gold caption: every fact, in words

``variant`` changes only incidental presentation (desk/backdrop, lighting, paper noise, a
small offset and a rotation of at most 3 degrees; for ``entity`` the pose); variant 0 is the
canonical, clean rendering. It never changes a fact, so ``describe`` ignores it.

Kinds and their facts (``?`` = optional)::

    receipt   store, date, time, items[{name, qty, price}], currency, total, payment?
    ticket    event, venue, date, time, seat, price, currency, code
    label     product, brand, weight, best_before, lot, colour
    calendar  year, month, marked_day, marker_colour, note?
    schedule  title, rows[{time, what}] (1-6 rows)
    clock     hour (0-23), minute, face_colour, label?
    chat      app, contact, messages[{from: me|them, text, time}] (1-5)
    app_ui    app, title, fields[[label, value]] (1-6), accent
    scene     background, objects[{shape, colour, col 0-3, row 0-2, size small|large}]
    entity    kind, body, pattern, pattern_colour, mark, mark_colour, name_tag?

Colours are names from :data:`PALETTE`. Some presentation follows from a fact so that one
fact changes the whole picture: a receipt's paper tint, header colour and logo follow from
``store``; a ticket's colour from ``event``; a chat's colours from ``app`` (see ``describe``).
Currencies: the bundled font has no euro/pound/yen glyphs, so only USD shows a symbol ("$");
others are shown by ISO code ("EUR 35.00").

:func:`near_duplicate` makes a decoy differing in exactly one fact at a granularity level:
X1 whole scene, X2 one region, X3 one instance attribute, X4 a pixel-level detail (2
small-print characters, a close palette colour, a 1-3 minute hand shift). See
:data:`NEAR_DUPLICATE_LEVELS` for what each kind changes at each level.
"""

from __future__ import annotations

import io
import random
from typing import Any

from PIL import Image

from . import _documents, _scenes, _symbolic  # noqa: F401  (registration)
from ._base import CLOSE_COLOURS, LEVELS, PALETTE, REGISTRY, Presentation, canonical_json, seed_for

KINDS: tuple[str, ...] = ("receipt", "ticket", "label", "calendar", "schedule", "clock", "chat",
                          "app_ui", "scene", "entity")
assert set(KINDS) == set(REGISTRY), (KINDS, sorted(REGISTRY))

#: kind -> level -> what that level changes.
NEAR_DUPLICATE_LEVELS: dict[str, dict[str, str]] = {k: dict(REGISTRY[k].near_doc) for k in KINDS}
#: kind -> one valid example facts dict.
EXAMPLES: dict[str, dict[str, Any]] = {k: REGISTRY[k].example for k in KINDS}


def _spec(kind: str):
    spec = REGISTRY.get(kind)
    if spec is None:
        raise ValueError(f"unknown image kind {kind!r}; known kinds: {', '.join(KINDS)}")
    return spec


def validate(kind: str, facts: dict[str, Any]) -> None:
    """Raise ``ValueError`` (naming the kind and the key) if ``facts`` is not renderable."""
    _spec(kind).validate(facts)


def render(kind: str, facts: dict[str, Any], *, size: tuple[int, int] = (384, 288),
           variant: int = 0) -> Image.Image:
    """Render ``facts`` of ``kind`` as an RGB image of ``size`` (deterministic)."""
    spec = _spec(kind)
    spec.validate(facts)
    size = (int(size[0]), int(size[1]))
    if size[0] < 16 or size[1] < 16:
        raise ValueError(f"{kind}: size {size} is too small")
    if isinstance(variant, bool) or not isinstance(variant, int) or variant < 0:
        raise ValueError(f"{kind}: variant must be a non-negative int, got {variant!r}")
    pres = Presentation.make(kind, facts, variant)
    img = spec.draw(facts, size, pres)
    if img.mode != "RGB":
        img = img.convert("RGB")
    return img


def render_png(kind: str, facts: dict[str, Any], *, size: tuple[int, int] = (384, 288),
               variant: int = 0) -> bytes:
    """PNG bytes of :func:`render` (no metadata, so identical input -> identical bytes)."""
    buf = io.BytesIO()
    # Level 1: photo-like grain barely compresses, and level 6 costs ~4x the encode time.
    render(kind, facts, size=size, variant=variant).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def describe(kind: str, facts: dict[str, Any]) -> str:
    """The gold caption: a faithful one-paragraph description of everything drawn."""
    spec = _spec(kind)
    spec.validate(facts)
    return spec.describe(facts)


def near_duplicate(kind: str, facts: dict[str, Any], level: str,
                   rng: random.Random) -> dict[str, Any]:
    """A deep copy of ``facts`` with exactly one (top-level) fact changed at ``level``.

    Levels: "X1" whole-scene, "X2" region, "X3" instance attribute, "X4" pixel-level detail.
    Raises ``ValueError`` for an unknown level or one the kind (or these facts) cannot make.
    """
    spec = _spec(kind)
    spec.validate(facts)
    if level not in LEVELS:
        raise ValueError(f"{kind}: unknown near-duplicate level {level!r}; use one of {LEVELS}")
    fn = spec.near.get(level)
    if fn is None:
        raise ValueError(f"{kind}: no fact to change at level {level}")
    out = fn(facts, rng)
    spec.validate(out)
    changed = [k for k in set(facts) | set(out) if facts.get(k) != out.get(k)]
    if len(changed) != 1:  # pragma: no cover - guards the per-kind helpers
        raise AssertionError(f"{kind} {level}: changed {changed}")
    return out


__all__ = [
    "CLOSE_COLOURS",
    "EXAMPLES",
    "KINDS",
    "NEAR_DUPLICATE_LEVELS",
    "PALETTE",
    "canonical_json",
    "describe",
    "near_duplicate",
    "render",
    "render_png",
    "seed_for",
    "validate",
]
