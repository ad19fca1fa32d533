"""Tiny real images for the captioner tests, and a MemLens-format item that shows them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from PIL import Image

from memgauge.benchmarks.synth.render import render_png

LABEL = {"product": "Oat Milk", "brand": "Nordic", "weight": "500 g",
         "best_before": "2024-05-01", "lot": "L42", "colour": "blue"}


def label_png(path: Path) -> str:
    """A synth product label (printed text RapidOCR reads); returns its sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = render_png("label", LABEL)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def colour_png(path: Path, colour: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (40, 30), colour).save(path, format="PNG")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_items(root: Path, images: list[str], n_questions: int = 1) -> Path:
    """``n_questions`` MemLens items, each with one session showing every image in
    ``images`` (paths relative to ``root``): the items share their haystack images."""
    items = [{
        "question_id": f"q{i}", "question": f"What was on the label? ({i})", "answer": "Nordic",
        "question_type": "information_extraction", "question_subtype": "previnfo",
        "question_date": "2024/03/01", "haystack_dates": ["2024/02/01"],
        "haystack_sessions": [[
            {"role": "user", "content": "Look at this " + " ".join("<image>" for _ in images),
             "images": images},
            {"role": "assistant", "content": "Noted."}]],
    } for i in range(n_questions)]
    data = root / "d.json"
    data.write_text(json.dumps(items))
    return data


def user_texts(body: dict) -> str:
    """Every text the request carries, joined (the caption appears as text in caption mode)."""
    out = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out.extend(p["text"] for p in content if p["type"] == "text")
    return "\n".join(out)
