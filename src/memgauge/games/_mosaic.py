"""Frames tiled into one picture, each under a label band with its step number (the label is
drawn outside the frame's pixels, so no frame is covered). A frame budget for models that
take few images: ``--bench-option frames=mosaic:K``."""

from __future__ import annotations

import hashlib
import io
import math
import os
from pathlib import Path

LABEL_BAND = 12  # pixels above each tile for "step N"


def mosaic_png(frames: list[tuple[int, Path]]) -> bytes:
    """``frames`` as (step, PNG path), tiled row by row, near-square."""
    from PIL import Image, ImageDraw, ImageFont

    images = []
    for _, path in frames:
        with Image.open(path) as im:
            images.append(im.convert("RGB"))
    width = max(im.width for im in images)
    height = max(im.height for im in images)
    cols = math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    canvas = Image.new("RGB", (cols * width, rows * (height + LABEL_BAND)), "white")
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default()
    for k, ((step, _), im) in enumerate(zip(frames, images, strict=True)):
        x, y = (k % cols) * width, (k // cols) * (height + LABEL_BAND)
        draw.text((x + 2, y), f"step {step}", fill="black", font=font)
        canvas.paste(im, (x, y + LABEL_BAND))
    buf = io.BytesIO()
    canvas.save(buf, format="PNG")
    return buf.getvalue()


def store_mosaic(frames: list[tuple[int, Path]], folder: Path) -> tuple[str, Path]:
    """Render and keep the mosaic under its content hash in ``folder``; (sha256, path)."""
    png = mosaic_png(frames)
    digest = hashlib.sha256(png).hexdigest()
    path = folder / f"{digest}.png"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(png)
        os.replace(tmp, path)
    return digest, path
