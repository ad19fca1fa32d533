"""Shared machinery for the synthetic image renderers.

Everything here is deterministic: randomness comes from ``random.Random`` / numpy generators
seeded with a sha256 of a canonical JSON of ``(kind, facts, variant)``, never from ``hash()``.
Only the font bundled with Pillow (``ImageFont.load_default(size=...)``) is used.

Layout code works in *base units* of a 384x288 canvas; :class:`Frame` maps them onto the
requested size (uniform scale, centred) and, for shape-heavy kinds, onto a 2x supersampled
layer that is reduced afterwards for anti-aliasing.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NoReturn

import numpy as np
from PIL import Image, ImageChops, ImageDraw, ImageFont

BASE_W, BASE_H = 384, 288
LEVELS = ("X1", "X2", "X3", "X4")

RGB = tuple[int, int, int]

# ~16 clearly distinct named colours. Facts name colours only from this palette.
PALETTE: dict[str, RGB] = {
    "red": (214, 39, 40),
    "orange": (245, 130, 20),
    "yellow": (250, 212, 30),
    "green": (44, 160, 64),
    "teal": (0, 148, 148),
    "blue": (31, 97, 222),
    "navy": (22, 32, 104),
    "purple": (132, 52, 172),
    "pink": (244, 140, 190),
    "brown": (128, 78, 40),
    "black": (22, 22, 22),
    "white": (250, 250, 250),
    "grey": (140, 140, 140),
    "beige": (226, 206, 164),
    "maroon": (120, 20, 46),
    "olive": (122, 126, 30),
}

# Perceptually close palette neighbours: the "pixel-level" (X4) colour swaps.
CLOSE_COLOURS: dict[str, tuple[str, ...]] = {
    "red": ("maroon", "orange", "pink"),
    "orange": ("red", "yellow", "brown"),
    "yellow": ("beige", "orange"),
    "green": ("olive", "teal"),
    "teal": ("green", "blue"),
    "blue": ("navy", "teal", "purple"),
    "navy": ("blue", "black", "purple"),
    "purple": ("pink", "navy", "maroon"),
    "pink": ("red", "purple"),
    "brown": ("maroon", "orange", "olive"),
    "black": ("navy", "grey"),
    "white": ("beige", "grey"),
    "grey": ("white", "black"),
    "beige": ("white", "yellow"),
    "maroon": ("red", "brown", "purple"),
    "olive": ("green", "brown"),
}

# Currency display. The font bundled with Pillow (Aileron) has no glyphs for the euro, pound
# or yen signs, so only the dollar sign is drawn as a symbol; every other currency is shown by
# its ISO code (which stays unambiguous, unlike a bare "$" for CAD/AUD, hence USD only).
CURRENCY_SYMBOLS: dict[str, str] = {"USD": "$"}


def money_display(amount: str, currency: str) -> str:
    sym = CURRENCY_SYMBOLS.get(currency)
    return f"{sym}{amount}" if sym else f"{currency} {amount}"


# --------------------------------------------------------------------------------------------
# seeds, fonts, colours


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def seed_for(kind: str, facts: dict[str, Any], variant: int) -> int:
    digest = hashlib.sha256(canonical_json([kind, facts, variant]).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def stable_index(text: str, n: int) -> int:
    """A process-independent choice in ``range(n)`` derived from ``text``."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") % n


@lru_cache(maxsize=128)
def font_px(px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=max(4, int(px)))  # type: ignore[return-value]


def luminance(rgb: Sequence[int]) -> float:
    r, g, b = (c / 255 for c in rgb[:3])
    return 0.299 * r + 0.587 * g + 0.114 * b


def ink_for(rgb: Sequence[int]) -> RGB:
    """Dark or light text colour that contrasts with ``rgb``."""
    return (24, 24, 24) if luminance(rgb) > 0.55 else (250, 250, 250)


def mix(a: Sequence[int], b: Sequence[int], t: float) -> RGB:
    """Blend: t=0 -> a, t=1 -> b."""
    return tuple(round(a[i] + (b[i] - a[i]) * t) for i in range(3))  # type: ignore[return-value]


def shade(rgb: Sequence[int], f: float) -> RGB:
    """f<0 darkens toward black, f>0 lightens toward white."""
    return mix(rgb, (0, 0, 0), -f) if f < 0 else mix(rgb, (255, 255, 255), f)


def rgba(rgb: Sequence[int], a: int | None = None) -> tuple[int, int, int, int]:
    """An RGBA tuple; keeps the alpha of a 4-tuple unless ``a`` is given."""
    if a is None:
        a = int(rgb[3]) if len(rgb) > 3 else 255
    return (int(rgb[0]), int(rgb[1]), int(rgb[2]), a)


# --------------------------------------------------------------------------------------------
# geometry helpers (in base units)


def star_points(cx: float, cy: float, r: float, n: int = 5, inner: float = 0.45,
                rot: float = 0.0) -> list[tuple[float, float]]:
    pts = []
    for i in range(2 * n):
        rad = r if i % 2 == 0 else r * inner
        a = math.radians(rot) - math.pi / 2 + i * math.pi / n
        pts.append((cx + rad * math.cos(a), cy + rad * math.sin(a)))
    return pts


def heart_points(cx: float, cy: float, r: float, rot: float = 0.0,
                 steps: int = 48) -> list[tuple[float, float]]:
    pts = []
    k = r / 17.0
    for i in range(steps):
        t = 2 * math.pi * i / steps
        x = 16 * math.sin(t) ** 3
        y = -(13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t))
        pts.append((x * k, (y + 2.5) * k))
    return rotate_points(pts, rot, cx, cy)


def regular_polygon(cx: float, cy: float, r: float, n: int,
                    rot: float = 0.0) -> list[tuple[float, float]]:
    return [(cx + r * math.cos(math.radians(rot) - math.pi / 2 + 2 * math.pi * i / n),
             cy + r * math.sin(math.radians(rot) - math.pi / 2 + 2 * math.pi * i / n))
            for i in range(n)]


def ellipse_points(cx: float, cy: float, rx: float, ry: float, rot: float = 0.0,
                   steps: int = 40) -> list[tuple[float, float]]:
    pts = [(rx * math.cos(2 * math.pi * i / steps), ry * math.sin(2 * math.pi * i / steps))
           for i in range(steps)]
    return rotate_points(pts, rot, cx, cy)


def rotate_points(pts: Sequence[tuple[float, float]], deg: float, cx: float = 0.0,
                  cy: float = 0.0) -> list[tuple[float, float]]:
    """Rotate points (given relative to the origin) by ``deg`` and translate to (cx, cy)."""
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    return [(cx + x * c - y * s, cy + x * s + y * c) for x, y in pts]


def mark_points(mark: str, cx: float, cy: float, r: float) -> list[list[tuple[float, float]]]:
    """Polygons (one or more) of a small logo ``mark``: star/heart/moon/bolt/leaf."""
    if mark == "star":
        return [star_points(cx, cy, r)]
    if mark == "heart":
        return [heart_points(cx, cy, r)]
    if mark == "moon":  # crescent: outer arc + inner arc of a circle shifted right
        off = r * 0.45
        outer = [(cx + r * math.cos(math.radians(a)), cy + r * math.sin(math.radians(a)))
                 for a in range(60, 301, 10)]
        inner = [(cx + off + r * 0.85 * math.cos(math.radians(a)),
                  cy + r * 0.85 * math.sin(math.radians(a)))
                 for a in range(250, 109, -10)]
        return [outer + inner]
    if mark == "bolt":
        u = r / 10
        pts = [(2, -10), (-6, 1), (-0.5, 1), (-3, 10), (6, -2), (0.5, -2), (3, -10)]
        return [[(cx + x * u, cy + y * u) for x, y in pts]]
    if mark == "leaf":
        pts = []
        for i in range(21):
            t = math.pi * i / 20
            pts.append((cx + r * math.cos(t) * 1.0, cy - r * 0.55 * math.sin(t)))
        for i in range(21):
            t = math.pi * i / 20
            pts.append((cx - r * math.cos(t) * 1.0, cy + r * 0.55 * math.sin(t)))
        return [rotate_points([(x - cx, y - cy) for x, y in pts], -35, cx, cy)]
    raise ValueError(f"unknown mark {mark!r}")


# --------------------------------------------------------------------------------------------
# drawing surface


class Frame:
    """A drawing surface plus a base-unit -> pixel mapping.

    ``p(x, y) = (ox, oy) + s * (pivot + R(rot) @ ((x, y) - pivot))``: a uniform scale ``s``,
    an offset, and an optional rotation ``rot`` (degrees) about ``pivot`` (in units). Under a
    rotation, rectangles and ellipses are drawn as polygons; text glyphs stay upright (only their
    anchor moves), which is invisible at the few degrees used. RGB surfaces blend RGBA fills.
    """

    def __init__(self, img: Image.Image, s: float, ox: float = 0.0, oy: float = 0.0,
                 rot: float = 0.0, pivot: tuple[float, float] = (BASE_W / 2, BASE_H / 2)):
        self.img = img
        self.s = s
        self.ox = ox
        self.oy = oy
        self.rot = rot
        self.pivot = pivot
        self._c, self._sn = math.cos(math.radians(rot)), math.sin(math.radians(rot))
        self.draw = ImageDraw.Draw(img, "RGBA" if img.mode == "RGB" else None)

    @classmethod
    def canvas(cls, size: tuple[int, int], ss: int = 1, mode: str = "RGBA",
               fill: Sequence[int] | None = None, rot: float = 0.0,
               shift: tuple[float, float] = (0.0, 0.0)) -> Frame:
        W, H = size[0] * ss, size[1] * ss
        s = min(size[0] / BASE_W, size[1] / BASE_H) * ss
        if mode == "RGBA":
            img = Image.new("RGBA", (W, H), rgba(fill) if fill is not None else (0, 0, 0, 0))
        else:
            img = Image.new(mode, (W, H), tuple(int(c) for c in fill[:3]) if fill else 0)
        return cls(img, s, (W - BASE_W * s) / 2 + shift[0] * s, (H - BASE_H * s) / 2 + shift[1] * s,
                   rot=rot)

    def sub(self, img: Image.Image) -> Frame:
        """The same mapping on another surface (e.g. a mask)."""
        return Frame(img, self.s, self.ox, self.oy, self.rot, self.pivot)

    # coordinates
    def p(self, x: float, y: float) -> tuple[float, float]:
        if self.rot:
            px, py = self.pivot
            x, y = (px + self._c * (x - px) - self._sn * (y - py),
                    py + self._sn * (x - px) + self._c * (y - py))
        return (self.ox + x * self.s, self.oy + y * self.s)

    def pts(self, pts: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
        return [self.p(x, y) for x, y in pts]

    def box(self, x0: float, y0: float, x1: float, y1: float) -> list[float]:
        """Pixel box of an axis-aligned rectangle (only meaningful when ``rot == 0``)."""
        a, b = self.p(x0, y0)
        c, d = self.p(x1, y1)
        return [a, b, max(a, c), max(b, d)]

    def lw(self, v: float) -> int:
        return max(1, round(v * self.s))

    # fonts & text
    def font(self, size: float) -> ImageFont.FreeTypeFont:
        return font_px(round(size * self.s))

    def tw(self, text: str, size: float) -> float:
        """Text advance width in base units."""
        return self.font(size).getlength(text) / self.s

    def text(self, x: float, y: float, text: str, size: float, fill: Sequence[int],
             anchor: str = "la", bold: bool = False) -> None:
        f = self.font(size)
        col = rgba(fill)
        x0, y0 = self.p(x, y)
        self.draw.text((x0, y0), text, font=f, fill=col, anchor=anchor)
        if bold:  # fake bold: a second pass shifted by ~1/24 em (at least 1 px)
            self.draw.text((x0 + max(1, round(f.size / 24)), y0), text, font=f, fill=col,
                           anchor=anchor)

    def fit_size(self, text: str, size: float, max_w: float, min_size: float) -> float:
        while size > min_size and self.tw(text, size) > max_w:
            size -= 0.5
        return size

    # primitives
    def rect(self, x0, y0, x1, y1, fill=None, outline=None, width: float = 1.0,
             radius: float = 0.0) -> None:
        if self.rot:
            self.polygon(rrect_points(x0, y0, x1, y1, radius), fill=fill, outline=outline,
                         width=width)
            return
        kw = {"fill": rgba(fill) if fill is not None else None,
              "outline": rgba(outline) if outline is not None else None,
              "width": self.lw(width) if outline is not None else 0}
        b = self.box(x0, y0, x1, y1)
        if radius > 0:
            self.draw.rounded_rectangle(b, radius=max(1, round(radius * self.s)), **kw)
        else:
            self.draw.rectangle(b, **kw)

    def ellipse(self, cx, cy, rx, ry, fill=None, outline=None, width: float = 1.0) -> None:
        if self.rot and abs(rx - ry) > 1e-6:
            self.polygon(ellipse_points(cx, cy, rx, ry), fill=fill, outline=outline, width=width)
            return
        X, Y = self.p(cx, cy)
        self.draw.ellipse([X - rx * self.s, Y - ry * self.s, X + rx * self.s, Y + ry * self.s],
                          fill=rgba(fill) if fill is not None else None,
                          outline=rgba(outline) if outline is not None else None,
                          width=self.lw(width) if outline is not None else 0)

    def aa_ellipse(self, cx, cy, rx, ry, fill, outline=None, width: float = 1.0,
                   k: int = 4) -> None:
        """An anti-aliased ellipse (drawn on a small supersampled patch, then composited)."""
        X, Y = self.p(cx, cy)
        RX, RY = (rx + width) * self.s, (ry + width) * self.s
        ix0, iy0 = math.floor(X - RX) - 1, math.floor(Y - RY) - 1
        ix1, iy1 = math.ceil(X + RX) + 1, math.ceil(Y + RY) + 1
        patch = Image.new("RGBA", ((ix1 - ix0) * k, (iy1 - iy0) * k), (0, 0, 0, 0))
        d = ImageDraw.Draw(patch)
        d.ellipse([(X - rx * self.s - ix0) * k, (Y - ry * self.s - iy0) * k,
                   (X + rx * self.s - ix0) * k, (Y + ry * self.s - iy0) * k], fill=rgba(fill),
                  outline=rgba(outline) if outline is not None else None,
                  width=max(1, round(width * self.s * k)) if outline is not None else 0)
        patch = patch.reduce(k)
        if self.img.mode == "RGBA":
            self.img.alpha_composite(patch, (ix0, iy0))
        else:
            self.img.paste(patch, (ix0, iy0), patch)

    def polygon(self, pts, fill=None, outline=None, width: float = 1.0) -> None:
        self.draw.polygon(self.pts(pts), fill=rgba(fill) if fill is not None else None,
                          outline=rgba(outline) if outline is not None else None,
                          width=self.lw(width) if outline is not None else 0)

    def line(self, pts, fill, width: float = 1.0, joint: str | None = "curve") -> None:
        self.draw.line(self.pts(pts), fill=rgba(fill), width=self.lw(width), joint=joint)

    def hline_dashed(self, x0, x1, y, fill, dash: float = 4, gap: float = 3,
                     width: float = 1.0) -> None:
        x = x0
        while x < x1:
            self.line([(x, y), (min(x + dash, x1), y)], fill, width, joint=None)
            x += dash + gap

    def shadow(self, x0, y0, x1, y1, off: float = 3, radius: float = 0.0, alpha: int = 70) -> None:
        self.rect(x0 + off, y0 + off, x1 + off, y1 + off, fill=(0, 0, 0, alpha), radius=radius)


def rrect_points(x0: float, y0: float, x1: float, y1: float, r: float,
                 steps: int = 5) -> list[tuple[float, float]]:
    """Outline of a rounded rectangle as a polygon (for rotated drawing)."""
    r = max(0.0, min(r, (x1 - x0) / 2, (y1 - y0) / 2))
    if r == 0:
        return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    pts = []
    for cx, cy, a0 in ((x1 - r, y0 + r, -90), (x1 - r, y1 - r, 0), (x0 + r, y1 - r, 90),
                       (x0 + r, y0 + r, 180)):
        for i in range(steps + 1):
            a = math.radians(a0 + 90 * i / steps)
            pts.append((cx + r * math.cos(a), cy + r * math.sin(a)))
    return pts


# --------------------------------------------------------------------------------------------
# presentation (everything a variant may change)


@dataclass
class Presentation:
    variant: int
    rng: random.Random
    seed: int
    angle: float = 0.0  # degrees, |angle| <= 3
    dx: float = 0.0  # base units
    dy: float = 0.0
    noise: int = 0  # amplitude of per-pixel luminance noise
    light: float = 0.0  # strength of a lighting gradient
    light_dir: float = 0.0
    surface: int = 0  # index into the kind's surface list (0 = canonical)
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def plain(self) -> bool:
        return self.variant == 0

    @classmethod
    def make(cls, kind: str, facts: dict[str, Any], variant: int) -> Presentation:
        seed = seed_for(kind, facts, variant)
        rng = random.Random(seed)
        pres = cls(variant=variant, rng=rng, seed=seed)
        if variant != 0:
            pres.angle = rng.uniform(0.6, 3.0) * rng.choice((-1, 1))
            pres.dx = rng.uniform(-7, 7)
            pres.dy = rng.uniform(-5, 5)
            pres.noise = rng.randint(3, 7)
            pres.light = rng.uniform(0.04, 0.12)
            pres.light_dir = rng.uniform(0, 2 * math.pi)
            pres.surface = rng.randint(1, 1 << 30)
        return pres


# Incidental table/desk surfaces for "photographed" documents and screens.
DESK_SURFACES: tuple[RGB, ...] = ((178, 150, 116), (160, 164, 170), (116, 124, 138),
                                  (206, 198, 184), (142, 112, 86), (184, 198, 192),
                                  (96, 90, 86))
DESK_PLAIN: RGB = (200, 200, 196)


def desk_colour(pres: Presentation) -> RGB:
    if pres.plain:
        return DESK_PLAIN
    return DESK_SURFACES[pres.surface % len(DESK_SURFACES)]


def _rotate_content(fg: Image.Image, angle: float, dx: float,
                    dy: float) -> tuple[Image.Image, tuple[int, int]]:
    """Rotate only the non-transparent part of ``fg`` (cheaper than the whole layer)."""
    bbox = fg.getchannel("A").getbbox()
    if bbox is None:
        return fg, (0, 0)
    x0, y0, x1, y1 = bbox
    pad = 2
    x0, y0 = max(0, x0 - pad), max(0, y0 - pad)
    x1, y1 = min(fg.width, x1 + pad), min(fg.height, y1 + pad)
    part = fg.crop((x0, y0, x1, y1))
    rot = part.rotate(angle, resample=Image.Resampling.BILINEAR, expand=True)
    px = x0 - (rot.width - part.width) / 2 + dx
    py = y0 - (rot.height - part.height) / 2 + dy
    return rot, (round(px), round(py))


def photo_of(fr: Frame, pres: Presentation, size: tuple[int, int],
             surface: Sequence[int] | None = None) -> Image.Image:
    """A sheet/screen drawn on the RGBA layer ``fr`` (1x), lying on a desk: the variant moves
    and rotates it (<= 3 degrees) and then :func:`post` adds the photo texture."""
    base = tuple(int(c) for c in (surface or desk_colour(pres))[:3])
    out = Image.new("RGB", size, base)
    fg = fr.img
    if pres.plain:
        out.paste(fg, (0, 0), fg)
        return out
    s = min(size[0] / BASE_W, size[1] / BASE_H)
    part, pos = _rotate_content(fg, pres.angle, pres.dx * s, pres.dy * s)
    out.paste(part, pos, part)
    return post(out, pres)


def post(img: Image.Image, pres: Presentation, grain: float = 8.0) -> Image.Image:
    """Photo texture for variant != 0: a soft low-frequency grain, a lighting gradient and
    per-pixel noise, added as one luminance offset image. Variant 0 is returned unchanged."""
    if pres.plain:
        return img
    W, H = img.size
    gen = np.random.default_rng(pres.seed & 0xFFFFFFFF)
    off = 64
    w, h = max(2, W // 8), max(2, H // 8)
    ys = np.linspace(-1.0, 1.0, h, dtype=np.float32)[:, None]
    xs = np.linspace(-1.0, 1.0, w, dtype=np.float32)[None, :]
    freq = gen.uniform(4.0, 11.0)
    phase = gen.uniform(0, 6.28)
    wave = np.sin(ys * freq + np.sin(xs * 2.5 + phase) * 1.5) * (grain / 2)
    grad = (xs * math.cos(pres.light_dir) + ys * math.sin(pres.light_dir)) * (pres.light * 140)
    low = np.clip(off + wave + grad, 0, 255).astype(np.uint8)
    mod = Image.fromarray(low, "L").resize((W, H), Image.Resampling.BILINEAR)
    noise = gen.integers(0, 2 * pres.noise + 1, size=(H, W), dtype=np.uint8)
    mod = ImageChops.add(mod, Image.fromarray(noise, "L"), 1.0, -pres.noise)
    return ImageChops.add(img, mod.convert("RGB"), 1.0, -off)


# --------------------------------------------------------------------------------------------
# validation


class FactError(ValueError):
    """A facts dict that cannot be drawn (missing key, bad value); names kind and key."""


def _fail(kind: str, key: str, why: str) -> NoReturn:
    raise FactError(f"{kind}: fact {key!r} {why}")


DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TIME_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
MONEY_RE = re.compile(r"^\d+\.\d{2}$")


def check_str(kind, key, v):
    if not isinstance(v, str) or not v.strip():
        _fail(kind, key, f"must be a non-empty string, got {v!r}")


def check_date(kind, key, v):
    import datetime as _dt

    if not isinstance(v, str) or not DATE_RE.match(v):
        _fail(kind, key, f"must be 'YYYY-MM-DD', got {v!r}")
    try:
        _dt.date.fromisoformat(v)
    except ValueError:
        _fail(kind, key, f"is not a valid date: {v!r}")


def check_time(kind, key, v):
    if not isinstance(v, str) or not TIME_RE.match(v):
        _fail(kind, key, f"must be 'HH:MM', got {v!r}")


def check_money(kind, key, v):
    if not isinstance(v, str) or not MONEY_RE.match(v):
        _fail(kind, key, f"must be a decimal string with 2 decimals like '4.50', got {v!r}")


def check_int(kind, key, v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        _fail(kind, key, f"must be an int in [{lo}, {hi}], got {v!r}")


def check_colour(kind, key, v):
    if v not in PALETTE:
        _fail(kind, key, f"must be a palette colour ({', '.join(PALETTE)}), got {v!r}")


def check_enum(kind, key, v, options):
    if v not in options:
        _fail(kind, key, f"must be one of {list(options)}, got {v!r}")


def check_currency(kind, key, v):
    if not isinstance(v, str) or not re.match(r"^[A-Z]{3}$", v):
        _fail(kind, key, f"must be a 3-letter ISO currency code, got {v!r}")


def require(kind: str, facts: Any, keys: Sequence[str]) -> None:
    if not isinstance(facts, dict):
        raise FactError(f"{kind}: facts must be a dict, got {type(facts).__name__}")
    for key in keys:
        if key not in facts:
            raise FactError(f"{kind}: missing required fact {key!r}")


# --------------------------------------------------------------------------------------------
# near-duplicate helpers


def change_chars(text: str, rng: random.Random, n: int = 2) -> str:
    """Change up to ``n`` alphanumeric characters (digit->digit, letter->letter, same case)."""
    idx = [i for i, ch in enumerate(text) if ch.isascii() and ch.isalnum()]
    if not idx:
        return text + "X"
    chars = list(text)
    for i in rng.sample(idx, min(n, len(idx))):
        ch = chars[i]
        if ch.isdigit():
            pool = "0123456789"
        elif ch.isupper():
            pool = "ABCDEFGHJKLMNPRSTUVWXYZ"
        else:
            pool = "abcdefghjkmnprstuvwxyz"
        chars[i] = rng.choice([c for c in pool if c != ch])
    return "".join(chars)


def other_choice(rng: random.Random, pool: Sequence[Any], exclude: Sequence[Any]) -> Any:
    options = [p for p in pool if p not in exclude]
    if not options:
        raise ValueError("no alternative value available")
    return rng.choice(options)


_NAME_A = ("Red", "Oak", "Silver", "Little", "Golden", "Quiet", "Bright", "Cedar", "Harbour",
           "Willow", "North", "Amber")
_NAME_B = ("Door", "Leaf", "Lantern", "Anchor", "Bridge", "Garden", "Fox", "Mill", "Corner",
           "Pine", "Bay", "Field")


def alternative_name(rng: random.Random, pool: Sequence[str], current: str,
                     ok: Callable[[str], bool], suffix: str = "") -> str:
    """Another name from ``pool`` satisfying ``ok``; falls back to generated names."""
    options = [p for p in pool if p != current and ok(p)]
    if not options:
        options = [f"{a} {b}{suffix}" for a in _NAME_A for b in _NAME_B
                   if f"{a} {b}{suffix}" != current and ok(f"{a} {b}{suffix}")]
    if not options:
        raise ValueError("no alternative name available")
    return rng.choice(options)


def close_colour(rng: random.Random, colour: str, avoid: Sequence[str] = ()) -> str:
    return other_choice(rng, CLOSE_COLOURS[colour], [colour, *avoid])


def far_colour(rng: random.Random, colour: str, avoid: Sequence[str] = ()) -> str:
    return other_choice(rng, list(PALETTE), [colour, *CLOSE_COLOURS[colour], *avoid])


def shift_minutes(hhmm: str, rng: random.Random, lo: int, hi: int, keep_hour: bool = False) -> str:
    h, m = (int(x) for x in hhmm.split(":"))
    for _ in range(100):
        d = rng.randint(lo, hi) * rng.choice((-1, 1))
        if keep_hour:
            nm = m + d
            if 0 <= nm <= 59:
                return f"{h:02d}:{nm:02d}"
        else:
            t = (h * 60 + m + d) % (24 * 60)
            return f"{t // 60:02d}:{t % 60:02d}"
    nm = (m + lo) % 60
    return f"{h:02d}:{nm:02d}"


def replaced(facts: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(facts)
    out[key] = value
    return out


# --------------------------------------------------------------------------------------------
# registry


@dataclass
class KindSpec:
    name: str
    required: tuple[str, ...]
    validate: Callable[[dict[str, Any]], None]
    draw: Callable[[dict[str, Any], tuple[int, int], Presentation], Image.Image]
    describe: Callable[[dict[str, Any]], str]
    near: dict[str, Callable[[dict[str, Any], random.Random], dict[str, Any]]]
    near_doc: dict[str, str]
    example: dict[str, Any]


REGISTRY: dict[str, KindSpec] = {}


def register(spec: KindSpec) -> KindSpec:
    REGISTRY[spec.name] = spec
    return spec


def fmt_list(parts: Sequence[str]) -> str:
    parts = list(parts)
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def ordinal(n: int) -> str:
    suf = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suf}"
