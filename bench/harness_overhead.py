#!/usr/bin/env python3
"""Harness overhead: how close ``memgauge run`` gets to the offered limit when images are tiny.

Workload: the ``small`` preset's shape (8 sessions x 10 turns, ~1,500 chars a turn, 8 images
per item) but with 16x16 PNGs, so image bytes do not matter and the harness's own per-item
cost (loading, prompt assembly, token counting, serialisation, HTTP, records) shows. The
stub answers every request after ``--latency-ms``; with ``--concurrency C`` the offered limit
is C / latency (64 / 0.2 s = 320 items/s). Target: >= 90 % of it.

``--no-cache`` and a fresh run folder make every item a real request. items/s is measured two
ways: over the whole process wall time (interpreter start to exit) and over the stub's active
window (first request in to last response out), which excludes start-up and shutdown.

    .venv/bin/python bench/harness_overhead.py            # 2,000 items, c=64, 200 ms
    .venv/bin/python bench/harness_overhead.py --items 4000 --concurrency 128
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

TARGET_PCT = 90.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_args(p, "harness_overhead")
    p.add_argument("--items", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--chars-per-turn", type=int, default=None,
                   help="override the preset's ~1,500 chars per turn (e.g. 100 for short text)")
    C.add_extra_arg(p)
    a = p.parse_args()
    C.require_tools()
    work = a.work.resolve()
    wl = C.workload_tiny(work, a.items, a.chars_per_turn)
    offered = a.concurrency / (a.latency_ms / 1000.0)
    rows = []
    for rep in range(a.repeats):
        tag = f"{a.name}_c{a.concurrency}_r{rep}"
        out = C.fresh_dir(work / "runs" / tag)
        with C.stub(work, a.latency_ms, tag) as s:
            cmd = [*C.memgauge_cmd(), *C.run_args(wl, s.base_url, out, a.concurrency,
                                                  extra=a.extra.split())]
            busy_before = C.wait_quiet(a.wait_quiet) if a.wait_quiet > 0 else None
            m = C.measure(cmd)
        st = s.final or {}
        rec = C.count_records(out)
        n = rec["ok"]
        window = st.get("active_window_s")
        row = {
            "run": rep + 1,
            "items": a.items,
            "concurrency": a.concurrency,
            "latency_ms": a.latency_ms,
            "ok": rec["ok"], "errors": rec["errors"], "error_kinds": rec["error_kinds"],
            "rc": m.rc,
            "wall_s": round(m.wall_s, 2),
            "items_per_s_wall": round(n / m.wall_s, 1),
            "pct_offered_wall": round(100 * n / m.wall_s / offered, 1),
            "active_window_s": window,
            # start-up before the first request plus the tail after the last reply
            "outside_window_s": round(m.wall_s - window, 2) if window else None,
            "items_per_s_window": round(st.get("requests", 0) / window, 1) if window else None,
            "pct_offered_window": (round(100 * st.get("requests", 0) / window / offered, 1)
                                   if window else None),
            "offered_items_per_s": offered,
            "max_rss_mb": round(m.max_rss_mb, 1) if m.max_rss_mb else None,
            "harness_cpu_s": round((m.user_s or 0) + (m.sys_s or 0), 2),
            "harness_cpu_ms_per_item": round(
                1000 * ((m.user_s or 0) + (m.sys_s or 0)) / max(1, n), 2),
            "cpu_pct": m.cpu_pct,
            "stub_requests": st.get("requests"),
            "stub_max_inflight": st.get("max_inflight"),
            "stub_inline_images": st.get("inline_images"),
            "stub_mb_in": st.get("mb_in"),
            "stub_cpu_s": round(st.get("cpu_user_s", 0) + st.get("cpu_sys_s", 0), 2),
            "host_cpu": m.extra.get("host_cpu"),
            "busy_before_pct": busy_before,
            "other_load_pct": C.foreign_load_pct(
                m.extra.get("host_cpu"), m.wall_s,
                (m.user_s or 0) + (m.sys_s or 0) + st.get("cpu_user_s", 0)
                + st.get("cpu_sys_s", 0)),
            "host_steal_pct": (m.extra.get("host_cpu") or {}).get("steal_pct"),
            "command": C.shell_quote(cmd),
        }
        C.note_failure(row, m)
        rows.append(row)

    best = max(rows, key=lambda r: r["items_per_s_wall"])
    result = {
        "bench": "harness_overhead",
        "machine": C.machine(),
        "workload": {"data": C.rel(wl.data), **wl.info},
        "offered_items_per_s": offered,
        "target_pct_of_offered": TARGET_PCT,
        "runs": rows,
        "target_met_wall": all(r["pct_offered_wall"] >= TARGET_PCT for r in rows),
        "target_met_window": all((r["pct_offered_window"] or 0) >= TARGET_PCT for r in rows),
        "expected_inline_images": 8 * a.items,
        "command_line": C.shell_quote([sys.executable, *sys.argv]),
    }
    path = C.write_result(work, a.name, result)
    cols = [("run", "run"), ("items", "items"), ("concurrency", "conc."), ("ok", "ok"),
            ("errors", "errors"), ("wall_s", "wall s"), ("items_per_s_wall", "items/s (wall)"),
            ("pct_offered_wall", "% of offered (wall)"), ("active_window_s", "stub window s"),
            ("outside_window_s", "outside window s"),
            ("items_per_s_window", "items/s (window)"), ("pct_offered_window", "% (window)"),
            ("max_rss_mb", "peak RSS MB"), ("harness_cpu_ms_per_item", "CPU ms/item"),
            ("cpu_pct", "CPU %"), ("stub_requests", "stub req."),
            ("stub_max_inflight", "max in-flight"),
            ("stub_inline_images", "inline images"), ("host_steal_pct", "steal %"),
            ("other_load_pct", "other load %")]
    table = C.md_table(rows, cols)
    verdict = (f"Offered limit {a.concurrency}/{a.latency_ms / 1000:g} s = {offered:.0f} items/s; "
               f"target >= {TARGET_PCT:.0f} % ({offered * TARGET_PCT / 100:.0f} items/s). "
               f"Best run: {best['items_per_s_wall']} items/s wall ({best['pct_offered_wall']} %), "
               f"{best['items_per_s_window']} items/s in the stub window "
               f"({best['pct_offered_window']} %). Target met (wall): "
               f"{'yes' if result['target_met_wall'] else 'NO'}; (window): "
               f"{'yes' if result['target_met_window'] else 'NO'}.")
    flags = f" (extra flags: {a.extra})" if a.extra else ""
    md = f"### {a.name}{flags}\n\n{table}\n\n{verdict}\n\nResult JSON: {C.rel(path)}\n"
    (work / f"{a.name}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
