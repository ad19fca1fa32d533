"""Small MemLens-format datasets built on the fly for runner and client tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image

COLOURS = ["red", "green", "blue", "yellow", "purple", "orange"]


def make_png(path: Path, colour: str, size: tuple[int, int] = (40, 30)) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path, format="PNG")
    return path.read_bytes()


def memlens_items(root: Path, n: int) -> list[dict[str, Any]]:
    """``n`` items; item i asks the colour of the mug in its image (answer = that colour)."""
    items = []
    for i in range(n):
        colour = COLOURS[i % len(COLOURS)]
        make_png(root / "img" / f"mug{i}.png", colour)
        items.append({
            "question_id": f"q{i:03d}",
            "question": f"What colour was mug number {i}?",
            "answer": colour,
            "question_type": "information_extraction",
            "question_subtype": "previnfo",
            "question_date": "2024/03/01",
            "haystack_dates": ["2024/02/01"],
            "haystack_sessions": [
                [{"role": "user", "content": f"Here is mug {i} <image> nice?",
                  "images": [f"img/mug{i}.png"]},
                 {"role": "assistant", "content": "Lovely."}],
                {"date": "2024/02/10", "session": [
                    {"role": "user", "content": "Planning a trip to Lisbon."},
                    {"role": "assistant", "content": "Try tram 28."}]},
            ],
        })
    return items


def write_memlens(root: Path, n: int) -> Path:
    data = root / "dataset.json"
    data.write_text(json.dumps(memlens_items(root, n)), encoding="utf-8")
    return data


def colour_answer(body: dict[str, Any]) -> str:
    """A stub 'model' that reads the mug number from the question and answers its colour,
    wrong for every fifth mug, so scores are mixed."""
    from helpers.stub_server import question_of

    q = question_of(body)
    i = int(q.split("number ")[1].rstrip("?"))
    return COLOURS[(i + (1 if i % 5 == 4 else 0)) % len(COLOURS)]
