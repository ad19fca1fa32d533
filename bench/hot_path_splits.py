#!/usr/bin/env python3
"""The two per-item hot paths issue 26's complexity splits could slow down, timed alone:
``prompt.turn_parts`` (a call per turn) and the JSON-array scanner behind
``io.iter_json_items`` (a loop step per item).

Each case runs ``--repeats`` times and the best CPU time (``time.process_time``) counts,
which keeps other load on a shared machine out of the figure as far as it can be kept out.
The scanner reads many small items (the worst case for per-item overhead: the parse of a
real episode is far larger than a function call), in json.dump's one-item-per-line layout
and in an indented layout. Runs against whichever ``memgauge`` is importable, so a checkout
of the base commit gives the "before" rows:

    PYTHONPATH=src python3 bench/hot_path_splits.py
    PYTHONPATH=<base checkout>/src python3 bench/hot_path_splits.py

Prints one JSON object per case (ns per call or per item).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memgauge.io import HashingReader, iter_json_items
from memgauge.prompt import turn_parts
from memgauge.schema import ImageRef

TEXT = "I went to the market on Sunday and bought a few things for the week. " * 20


def _turn_cases() -> dict[str, tuple[str, list[ImageRef], str, bool]]:
    two = [ImageRef(source=f"{i}.png", path=f"/img/{i}.png", captions={"gold": f"photo {i}"})
           for i in range(2)]
    return {
        "text turn": (TEXT, [], "image", False),
        "image turn, no placeholder": (TEXT, two, "image", False),
        "image turn, placeholders": (f"<image> {TEXT} <image>", two, "image", False),
        "labelled images": (f"<image> {TEXT}", two, "image", True),
        "caption mode": (TEXT, two, "caption", False),
        "text mode": (f"<image> {TEXT}", two, "text", False),
    }


def _best(run: Callable[[], None], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        run()
        best = min(best, time.process_time() - t0)
    return best


def time_turn_parts(calls: int, repeats: int) -> None:
    for name, (text, images, mode, label) in _turn_cases().items():
        def run(text: str = text, images: list[ImageRef] = images, mode: str = mode,
                label: bool = label) -> None:
            for _ in range(calls):
                turn_parts(text, images, mode, label, 0)

        ns = _best(run, repeats) / calls * 1e9
        print(json.dumps({"bench": "turn_parts", "case": name, "calls": calls,
                          "ns_per_call": round(ns)}))


def time_scanner(items: int, repeats: int, work: Path) -> None:
    rows = [{"question_id": f"q{i}", "answer": "a" * 40, "n": i} for i in range(items)]
    layouts = {"one item a line": json.dumps(rows).replace("}, {", "},\n{"),
               "indented": json.dumps(rows, indent=1)}
    for name, text in layouts.items():
        path = work / f"{name.replace(' ', '-')}.json"
        path.write_text(text)

        def run(path: Path = path) -> None:
            reader = HashingReader(path)
            try:
                n = sum(1 for _ in iter_json_items(reader))
            finally:
                reader.close()
            assert n == items, n

        ns = _best(run, repeats) / items * 1e9
        print(json.dumps({"bench": "json array scanner", "case": name, "items": items,
                          "ns_per_item": round(ns)}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=100_000, help="turn_parts calls per case")
    p.add_argument("--items", type=int, default=100_000, help="items per scanned file")
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args()
    time_turn_parts(a.calls, a.repeats)
    with tempfile.TemporaryDirectory() as work:
        time_scanner(a.items, a.repeats, Path(work))


if __name__ == "__main__":
    main()
