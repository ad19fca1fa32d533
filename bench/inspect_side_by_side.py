#!/usr/bin/env python3
"""The same workload through Inspect (``inspect_ai``) and memgauge, interleaved.

Workload: the anchor workload (``make_memlens_like.py --preset small``: 200 items, 8 sessions x
10 turns, 8 images of 512x384 per item, ~4.6 MB per request), answered once per item by the
shared stub server (200 ms latency, a fresh stub per run) through an OpenAI-compatible
endpoint with 32 connections. Inspect runs bench/inspect_memlens_task.py (``openai-api``
provider, ``--max-connections 32``, its default log); memgauge runs ``memgauge run --bench
memlens --system full-context --concurrency 32 --no-cache``. The runs alternate (Inspect,
memgauge, Inspect, memgauge, ...) so a change in the machine's load falls on both.

Reported per run: items/s over the whole process wall time, harness CPU seconds, peak RSS,
what each wrote to disk (Inspect's log folder, memgauge's run folder) and, from the stub,
requests and inline images (both must be 1,600 images). The ratios are memgauge over Inspect,
from the medians. Nothing here is tuned against Inspect: its task is the plain one.

    pip install -e ".[bench]"            # inspect_ai, aiohttp (the stub), openai
    python bench/inspect_side_by_side.py                 # 2 rounds
    python bench/inspect_side_by_side.py --repeats 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

# Inspect takes a task file by a path relative to the working directory (main() moves to the
# repository root): an absolute path is read as a glob pattern and refused.
TASK = "bench/inspect_memlens_task.py"
CONCURRENCY = 32
ITEMS = 200
EXPECTED_IMAGES = 1600


def _folder_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6, 1)


def _inspect_cmd(log_dir: Path) -> list[str]:
    inspect = shutil.which("inspect", path=str(Path(sys.executable).parent)) or "inspect"
    return [inspect, "eval", TASK, "--model", "openai-api/stub/stub",
            "--max-connections", str(CONCURRENCY), "--log-dir", str(log_dir),
            "--display", "none"]


def _one(harness: str, wl: C.Workload, work: Path, latency_ms: float, tag: str) -> dict:
    out = C.fresh_dir(work / "runs" / tag)
    with C.stub(work, latency_ms, tag) as s:
        if harness == "inspect":
            cmd = _inspect_cmd(out)
            env = dict(os.environ, MEMLENS_DATA=str(wl.data), MEMLENS_IMAGES=str(wl.image_dir),
                       STUB_BASE_URL=s.base_url, STUB_API_KEY="EMPTY")
            m = C.measure(cmd, env=env)
        else:
            cmd = [*C.memgauge_cmd(), *C.run_args(wl, s.base_url, out, CONCURRENCY)]
            m = C.measure(cmd)
    st = s.final or {}
    answered = (st.get("by_status") or {}).get("200", 0)
    row: dict[str, Any] = {
        "harness": harness, "rc": m.rc, "wall_s": round(m.wall_s, 2),
        "items_per_s": round(ITEMS / m.wall_s, 2) if m.rc == 0 else None,
        "cpu_s": round((m.user_s or 0) + (m.sys_s or 0), 1),
        "max_rss_mb": round(m.max_rss_mb, 0) if m.max_rss_mb else None,
        "disk_mb": _folder_mb(out),
        "stub_requests": st.get("requests"), "stub_answered": answered,
        "inline_images": st.get("inline_images"),
        "images_ok": st.get("inline_images") == EXPECTED_IMAGES,
        "mb_sent": st.get("mb_in"), "max_inflight": st.get("max_inflight"),
    }
    if m.rc != 0:
        row["stderr_tail"] = m.stderr_tail[-800:]
    return row


def _median(rows: list[dict], harness: str, key: str) -> float | None:
    vals = [r[key] for r in rows if r["harness"] == harness and r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_args(p, "inspect_side_by_side", repeats=2)
    a = p.parse_args()
    C.require_tools()
    try:
        import inspect_ai
    except ImportError:
        sys.exit("bench: inspect_ai is not installed; pip install -e '.[bench]'")
    work = a.work.resolve()
    os.chdir(C.REPO)
    wl = C.workload_small(work)
    rows = []
    for rep in range(a.repeats):
        for harness in ("inspect", "memgauge"):
            row = _one(harness, wl, work, a.latency_ms, f"{a.name}_{harness}_r{rep}")
            row["run"] = rep + 1
            print(f"bench: {harness} run {rep + 1}: {row['items_per_s']} items/s, "
                  f"{row['cpu_s']} CPU s, {row['max_rss_mb']} MB peak, "
                  f"{row['disk_mb']} MB written, rc {row['rc']}", file=sys.stderr, flush=True)
            rows.append(row)
    ratios = {}
    for key, better in (("items_per_s", "higher"), ("cpu_s", "lower"),
                        ("max_rss_mb", "lower"), ("disk_mb", "lower")):
        i, m = _median(rows, "inspect", key), _median(rows, "memgauge", key)
        if i and m:
            ratios[key] = round(m / i if better == "higher" else i / m, 1)
    result = {
        "bench": "inspect_side_by_side", "machine": C.machine(),
        "inspect_ai": inspect_ai.__version__, "workload": {"data": C.rel(wl.data), **wl.info},
        "latency_ms": a.latency_ms, "concurrency": CONCURRENCY, "runs": rows,
        "ratios_memgauge_vs_inspect": ratios,
        "command_line": C.shell_quote([sys.executable, *sys.argv]),
    }
    path = C.write_result(work, a.name, result)
    cols = [("harness", "harness"), ("run", "run"), ("rc", "rc"), ("wall_s", "wall s"),
            ("items_per_s", "items/s"), ("cpu_s", "CPU s"), ("max_rss_mb", "peak RSS MB"),
            ("disk_mb", "written MB"), ("stub_answered", "answered"),
            ("inline_images", "inline images"), ("mb_sent", "MB sent"),
            ("max_inflight", "max in-flight")]
    lines = [C.md_table(rows, cols), "",
             "memgauge vs Inspect (medians): " + ", ".join(
                 f"{k} {v}x" for k, v in ratios.items())
             + " (items/s: memgauge/Inspect; CPU, RSS, disk: Inspect/memgauge)"]
    print(C.write_markdown(work, a.name, lines, path))


if __name__ == "__main__":
    main()
