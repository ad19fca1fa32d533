"""The offline stand-in for image embeddings: perceptual hash + colour histogram.

No CLIP/SigLIP weights can be had offline (research/stack.md), so ``retriever=visual``
without an image embedder compares images by appearance: ``imagehash.phash`` (64 bits) and
a 4x4x4 RGB histogram. Two images' similarity is ``0.5 * (1 - hamming / 64) + 0.5 *
histogram intersection``, in [0, 1]; 1 for the same picture. It finds the same or a
near-duplicate photo, never what a photo *shows*: a text question has nothing to compare
by appearance, so it is matched against the images' captions instead (see rag.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..schema import ImageRef

STAND_IN = ("perceptual-hash + colour-histogram image similarity (offline stand-in for "
            "image embeddings; finds the same or near-duplicate pictures, not what they show)")


@dataclass(frozen=True)
class Look:
    bits: np.ndarray  # 64 booleans
    hist: np.ndarray  # 64 bins, summing to 1


_cache: dict[str, Look] = {}
_lock = threading.Lock()


def look(ref: ImageRef) -> Look | None:
    """An image's features, or None when it has no local file (a URL, a caption only).
    An unreadable file is an InputError naming it (docs/design/0004: images fail loudly)."""
    if ref.path is None:
        return None
    key = ref.sha256 or ref.path
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    import imagehash
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(ref.path) as im:
            rgb = im.convert("RGB")
    except (OSError, UnidentifiedImageError) as exc:
        raise InputError(f"cannot be read for the visual retriever "
                         f"({type(exc).__name__}: {exc})", file=ref.path,
                         item=ref.source) from None
    bits = np.asarray(imagehash.phash(rgb).hash, dtype=bool).ravel()
    small = np.asarray(rgb.resize((64, 64)), dtype=np.int64) // 64  # 4 levels per channel
    codes = small[..., 0] * 16 + small[..., 1] * 4 + small[..., 2]
    hist = np.bincount(codes.ravel(), minlength=64).astype(np.float64)
    out = Look(bits=bits, hist=hist / hist.sum())
    with _lock:
        if len(_cache) > 50_000:
            _cache.clear()
        _cache[key] = out
    return out


def similarity(a: Look, b: Look) -> float:
    hamming = int(np.count_nonzero(a.bits != b.bits))
    return 0.5 * (1.0 - hamming / a.bits.size) + 0.5 * float(np.minimum(a.hist, b.hist).sum())
