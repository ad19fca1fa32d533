#!/usr/bin/env python3
"""Write a pool of tiny PNGs (default 16x16) as ``<image-dir>/haystack_images/hs_NNNNN.png``.

``make_memlens_like.py --image-size`` cannot draw images smaller than ~82 px (its random
blocks need a side over 80), but it skips pool files that already exist. So the tiny-image
workload is made in two steps: this script writes the pool, then ``make_memlens_like.py`` is
run with the same ``--image-dir`` and writes MemLens-format items whose 8 images per item
point into this pool (same text, sessions and placeholders as the anchor presets).

    python bench/make_tiny_images.py --image-dir bench/out/data/tiny_images --size 16x16
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path


def make_pool(image_dir: Path, n: int = 200, size: tuple[int, int] = (16, 16),
              seed: int = 0) -> int:
    from PIL import Image

    sub = image_dir / "haystack_images"
    sub.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    w, h = size
    made = 0
    for i in range(n):
        path = sub / f"hs_{i:05d}.png"
        if path.is_file():
            with Image.open(path) as im:
                if im.size == (w, h):
                    continue
        img = Image.frombytes("RGB", (w, h), rng.randbytes(w * h * 3))
        img.save(path, format="PNG")
        made += 1
    return made


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image-dir", type=Path, required=True)
    p.add_argument("--pool", type=int, default=200)
    p.add_argument("--size", default="16x16")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    w, h = (int(x) for x in a.size.lower().split("x"))
    made = make_pool(a.image_dir, a.pool, (w, h), a.seed)
    print(f"{made} written, {a.pool - made} already there, under {a.image_dir / 'haystack_images'}")


if __name__ == "__main__":
    main()
