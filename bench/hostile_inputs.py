"""What 400 KB of nested brackets costs, before (ijson as the loaders called it) and now
(memgauge's readers), and what the depth count costs ijson's path on a normal file.

    PYTHONPATH=src python3 bench/hostile_inputs.py

Each hostile parse runs in its own process under a 4 GiB address-space limit (the
unbounded one would otherwise grow until the kernel kills it); peak RSS from getrusage.
"""

from __future__ import annotations

import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LEVELS = 200_000  # 200k "[" then 200k "]": 400 KB
LAYOUTS = {
    "list": "[" * LEVELS + "]" * LEVELS,
    "data": '{"data": ' + "[" * LEVELS + "]" * LEVELS + "}",
    "field": '[{"question_id": "q", "x": ' + "[" * LEVELS + "]" * LEVELS + "}]",
}

CHILD = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
mode, path, prefix = sys.argv[1:4]
try:
    if mode == "ijson":
        import ijson
        with open(path, "rb") as f:
            for _ in ijson.items(f, prefix, use_float=True):
                pass
    else:
        from memgauge.io import HashingReader, iter_json_items
        for _ in iter_json_items(HashingReader(path)):
            pass
    outcome = "accepted"
except MemoryError:
    outcome = "MemoryError at the 4 GiB limit"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {str(exc)[-60:]}"
print(f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}|{outcome}")
"""


def hostile() -> None:
    print("| layout | reader | peak RSS MB | wall s | outcome |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in LAYOUTS.items():
            path = Path(tmp) / f"{name}.json"
            path.write_text(text)
            prefix = "data.item" if name == "data" else "item"
            for mode in ("ijson", "memgauge"):
                t0 = time.perf_counter()
                out = subprocess.run([sys.executable, "-c", CHILD, mode, str(path), prefix],
                                     capture_output=True, text=True, timeout=600, check=False)
                wall = time.perf_counter() - t0
                rss, _, outcome = out.stdout.strip().partition("|")
                print(f"| {name} | {mode} | {rss or '?'} | {wall:.1f} | "
                      f"{outcome or out.stderr.strip()[-80:]} |")


def overhead() -> None:
    import ijson

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from datasets import memlens_items

    from memgauge._json_limits import BoundedStream

    with tempfile.TemporaryDirectory() as tmp:
        item = memlens_items(Path(tmp), 1)[0]
        item["haystack_sessions"] = item["haystack_sessions"] * 20
        raw = json.dumps({"data": [dict(item, question_id=f"q{i}") for i in range(3000)]})
    data = raw.encode()

    def timed(wrap: bool) -> float:
        t0 = time.perf_counter()
        src = io.BytesIO(data)
        for _ in ijson.items(BoundedStream(src) if wrap else src, "data.item", use_float=True):
            pass
        return time.perf_counter() - t0

    plain = statistics.median(timed(False) for _ in range(5))
    bounded = statistics.median(timed(True) for _ in range(5))
    print(f"\nijson path, {len(data) / 1e6:.1f} MB {{\"data\": [...]}} file (median of 5): "
          f"plain {plain:.3f} s, with the depth and size count {bounded:.3f} s "
          f"(+{100 * (bounded / plain - 1):.0f} %)")


if __name__ == "__main__":
    hostile()
    overhead()
