#!/usr/bin/env python3
"""Ray executor overhead: the harness-overhead workload through Ray tasks vs the local runner.

Workload: ``harness_overhead.py``'s (the small preset's shape with 16x16 images, the shared
stub answering after ``--latency-ms``, ``--no-cache``, a fresh run folder each time). Per
repeat, in alternation so that the machine's other load falls on every mode alike:

- ``local``    one process (the local runner);
- ``local-w2`` ``--workers 2`` (the fork pool);
- ``ray-t1``   ``--executor ray --workers 1 --ray-address auto``: one Ray task;
- ``ray-t2``   ``--executor ray --workers 2 --ray-address auto``: two Ray tasks;
- ``ray-warm-t1`` / ``ray-warm-t2``: the same with ``--ray-keep-warm 900``: the parts run in
  the detached actors an earlier run left warm. One uncounted run per warm mode, before the
  repeats, creates the actors (it pays the worker start that the counted runs then skip).
  With a warm mode, the script's Ray gets 4 logical CPUs (not 2): the warm actors (slot 0,
  shared by both warm modes, and slot 1) hold one each, and the task modes still need two.

The ray modes join a Ray started once by this script (``ray start --head``), as a run on a
cluster joins the cluster: Ray's own start-up is not the harness's. One ``ray-cold`` run at
the end starts a Ray of its own (no address), to show that cost. Medians over the repeats.
Target: a Ray mode's wall time at most 10 % over its local counterpart's.

Each ray run writes its phase stamps (``MEMGAUGE_RAY_PHASES``, runner/_ray.py): the result
has the median time of every step, from the process start to its exit (``phases_s``).

``--cpu-bound``: the stub answers at once (latency 0), so the harness's own CPU per item, not
the stub's offered rate, bounds the run; this is where 1 -> 2 processes (local ``--workers``,
Ray tasks) can show scaling.

    python3 bench/ray_overhead.py                      # 2,000 items, c=64, 200 ms, 3 repeats
    python3 bench/ray_overhead.py --repeats 5 --wait-quiet 10
    python3 bench/ray_overhead.py --cpu-bound --repeats 3 --wait-quiet 10
    python3 bench/ray_overhead.py --modes local,ray-t1 --repeats 1   # a quick look
    python3 bench/ray_overhead.py --transport-only \
        bench/out/runs/ray_overhead_ray-t1_r0/records.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

TARGET_OVERHEAD_PCT = 10.0
MODES = {
    "local": [],
    "local-w2": ["--workers", "2"],
    "ray-t1": ["--executor", "ray", "--workers", "1", "--ray-address", "auto"],
    "ray-t2": ["--executor", "ray", "--workers", "2", "--ray-address", "auto"],
    "ray-warm-t1": ["--executor", "ray", "--workers", "1", "--ray-address", "auto",
                    "--ray-keep-warm", "900"],
    "ray-warm-t2": ["--executor", "ray", "--workers", "2", "--ray-address", "auto",
                    "--ray-keep-warm", "900"],
}
COLD = ("ray-cold", ["--executor", "ray", "--workers", "2"])
# the steps of a ray run, from consecutive stamps: (name, from, to); "start" is the process
# start, "exit" its end, "first send"/"answered" the earliest/latest over the tasks
STEPS = [("python, imports, config check", "start", "run_with_ray"),
         ("prepare the folder", "run_with_ray", "prepared"),
         ("ray.init (and the import's rest)", "prepared", "ray.init"),
         ("setup and pre-flight", "ray.init", "setup"),
         ("warm-up tasks done", "setup", "warm"),
         ("submit", "warm", "submitted"),
         ("to the first request", "submitted", "first send"),
         ("answering", "first send", "answered"),
         ("results to the driver", "answered", "tasks returned"),
         ("final manifest", "tasks returned", "finished"),
         ("ray.shutdown", "finished", "ray.shutdown"),
         ("interpreter exit", "ray.shutdown", "exit")]


def _ray_cli() -> str:
    ray = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    if not Path(ray).exists():
        sys.exit('bench: the ray command is missing: pip install "memgauge[ray]"')
    return ray


def _one(work: Path, wl: C.Workload, a: argparse.Namespace, mode: str, flags: list[str],
         rep: int) -> dict:
    tag = f"{a.name}_{mode}_r{rep}"
    out = C.fresh_dir(work / "runs" / tag)
    stamps = work / "runs" / f"{tag}.phases.json"
    stamps.unlink(missing_ok=True)
    with C.stub(work, a.latency_ms, tag) as s:
        cmd = [*C.memgauge_cmd(), *C.run_args(wl, s.base_url, out, a.concurrency, extra=flags)]
        if a.wait_quiet > 0:
            C.wait_quiet(a.wait_quiet)
        m = C.measure(cmd, env=dict(os.environ, MEMGAUGE_RAY_PHASES=str(stamps)))
    st = s.final or {}
    rec = C.count_records(out)
    window = st.get("active_window_s")
    row = {"mode": mode, "run": rep + 1, "ok": rec["ok"], "errors": rec["errors"], "rc": m.rc,
           "wall_s": round(m.wall_s, 2),
           "items_per_s_wall": round(rec["ok"] / m.wall_s, 1),
           "active_window_s": window,
           "outside_window_s": round(m.wall_s - window, 2) if window else None,
           **C.run_columns(m, st, rec["ok"]),
           "command": C.shell_quote(cmd)}
    if stamps.is_file():
        row["phases_s"] = _steps(json.loads(stamps.read_bytes()), m.t_start, m.t_start + m.wall_s)
    C.note_failure(row, m)
    print(f"{mode} r{rep + 1}: {row['wall_s']} s, {row['ok']} ok, window {window} s",
          flush=True)
    return row


def _steps(stamps: dict, t_start: float, t_end: float) -> dict[str, float | None]:
    """Seconds per step of STEPS from one run's stamps (driver's and tasks' wall clocks)."""
    at = {name: t for name, t in stamps["driver"]}
    tasks = [dict(marks) for marks in stamps["tasks"].values()]
    sends = [t["task first send"] for t in tasks if "task first send" in t]
    answered = [t["task answered"] for t in tasks if "task answered" in t]
    at |= {"start": t_start, "exit": t_end, "first send": min(sends, default=None),
           "answered": max(answered, default=None)}
    return {name: (round(at[b] - at[a], 3) if at.get(a) and at.get(b) else None)
            for name, a, b in STEPS}


def _transport(records: Path, repeats: int) -> dict:
    """How records could reach the folder, timed with one Ray task on this machine: (a) the
    task appends them (what the executor does), (b) it returns them and the driver appends
    them. The lines are a finished run's own records, appended as one group commit of
    RecordWriter does (whole, under flock, fsynced)."""
    import tempfile
    import time

    import ray

    lines = [x for x in records.read_bytes().splitlines(keepends=True) if x.strip()]

    def write_in_task(batch: list[bytes]) -> float:
        t = time.perf_counter()
        with tempfile.TemporaryDirectory() as d:
            _append_lines(d, batch)
        return time.perf_counter() - t

    def return_to_driver(batch: list[bytes]) -> list[bytes]:
        return batch

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        task_write, ship = ray.remote(write_in_task), ray.remote(return_to_driver)
        ray.get(task_write.remote(lines[:1]))  # a warm worker for both
        a_s, b_s = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            ray.get(task_write.remote(lines))
            a_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            got = ray.get(ship.remote(lines))
            with tempfile.TemporaryDirectory() as d:
                _append_lines(d, got)
            b_s.append(time.perf_counter() - t)
    finally:
        ray.shutdown()
    return {"records": len(lines), "bytes": sum(map(len, lines)),
            "task_writes_s": round(statistics.median(a_s), 3),
            "driver_writes_s": round(statistics.median(b_s), 3), "repeats": repeats}


def _append_lines(folder: str, lines: list[bytes]) -> None:
    """Append lines as the writer does for one group commit: whole, under flock, fsynced."""
    import fcntl
    import os

    fd = os.open(Path(folder) / "records.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"".join(lines))
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.fsync(fd)
    finally:
        os.close(fd)


def _median_steps(rows: list[dict]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, _, _ in STEPS:
        values = [r["phases_s"][name] for r in rows
                  if r.get("phases_s") and r["phases_s"].get(name) is not None]
        out[name] = round(statistics.median(values), 3) if values else None
    return out


def _median(rows: list[dict], mode: str, key: str) -> float | None:
    values = [r[key] for r in rows if r["mode"] == mode and r.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_args(p, "ray_overhead", repeats=3)
    p.add_argument("--items", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--cpu-bound", action="store_true",
                   help="stub latency 0: the harness's CPU bounds the run (1 -> 2 scaling)")
    p.add_argument("--modes", default=",".join([*MODES, COLD[0]]),
                   help="comma-separated subset of: " + ", ".join([*MODES, COLD[0]]))
    p.add_argument("--transport-only", type=Path, default=None, metavar="RECORDS",
                   help="only time the two ways records reach the folder, with these lines")
    a = p.parse_args()
    if a.transport_only:
        print(_transport(a.transport_only, 5))
        return
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - {*MODES, COLD[0]})
    if unknown:
        sys.exit(f"bench: unknown --modes {', '.join(unknown)}")
    if a.cpu_bound:
        a.latency_ms = 0.0
        if a.name == "ray_overhead":
            a.name = "ray_overhead_cpu"
    C.require_tools()
    ray = _ray_cli()
    work = a.work.resolve()
    wl = C.workload_tiny(work, a.items)
    rows: list[dict] = []
    joined = [m for m in MODES if m in modes]
    warm_modes = [m for m in joined if m.startswith("ray-warm")]
    cpus = "4" if warm_modes else "2"
    subprocess.run([ray, "start", "--head", "--num-cpus", cpus, "--include-dashboard=false",
                    "--disable-usage-stats"], check=True, capture_output=True)
    try:
        for mode in warm_modes:  # creates the actors; not counted
            _one(work, wl, a, mode, MODES[mode], -1)
        for rep in range(a.repeats):
            for mode in joined:
                rows.append(_one(work, wl, a, mode, MODES[mode], rep))
    finally:
        subprocess.run([ray, "stop"], check=False, capture_output=True)
    if COLD[0] in modes:
        rows.append(_one(work, wl, a, *COLD, 0))
    t1_records = work / "runs" / f"{a.name}_ray-t1_r0" / "records.jsonl"
    transport = _transport(t1_records, 5) if t1_records.is_file() else None

    summary = {mode: {"wall_s": _median(rows, mode, "wall_s"),
                      "window_s": _median(rows, mode, "active_window_s"),
                      "outside_window_s": _median(rows, mode, "outside_window_s"),
                      "cpu_ms_per_item": _median(rows, mode, "harness_cpu_ms_per_item")}
               for mode in modes}
    phases = {mode: _median_steps([r for r in rows if r["mode"] == mode])
              for mode in modes if mode.startswith("ray")}

    def over(ray_mode: str, local_mode: str, key: str) -> float | None:
        if ray_mode not in summary or local_mode not in summary:
            return None
        r, loc = summary[ray_mode][key], summary[local_mode][key]
        return round(100 * (r - loc) / loc, 1) if r and loc else None

    def scaling(one: str, two: str, key: str) -> float | None:
        if one not in summary or two not in summary:
            return None
        a1, a2 = summary[one][key], summary[two][key]
        return round(a1 / a2, 2) if a1 and a2 else None

    overhead = {f"{r} vs {loc}": {k: over(r, loc, k) for k in ("wall_s", "window_s")}
                for r, loc in (("ray-t1", "local"), ("ray-t2", "local-w2"),
                               ("ray-warm-t1", "local"), ("ray-warm-t2", "local-w2"))
                if r in summary and loc in summary}
    speedup = {"local 1 -> 2 workers": {k: scaling("local", "local-w2", k)
                                        for k in ("wall_s", "window_s")},
               "ray 1 -> 2 tasks": {k: scaling("ray-t1", "ray-t2", k)
                                    for k in ("wall_s", "window_s")}}
    result = {"bench": "ray_overhead", "machine": C.machine(),
              "workload": {"data": C.rel(wl.data), **wl.info}, "items": a.items,
              "concurrency": a.concurrency, "latency_ms": a.latency_ms,
              "offered_items_per_s": (a.concurrency / (a.latency_ms / 1000)
                                      if a.latency_ms > 0 else None),
              "cpu_bound": a.cpu_bound, "ray_cpus": int(cpus), "summary": summary,
              "overhead_pct": overhead,
              "speedup_1_to_2": speedup, "phases_s": phases,
              "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
              "target_overhead_pct": TARGET_OVERHEAD_PCT, "record_transport": transport,
              "runs": rows,
              "command_line": C.shell_quote([sys.executable, *sys.argv])}
    path = C.write_result(work, a.name, result)
    cols = [("mode", "mode"), ("run", "run"), ("ok", "ok"), ("errors", "errors"),
            ("wall_s", "wall s"), ("items_per_s_wall", "items/s (wall)"),
            ("active_window_s", "stub window s"), ("outside_window_s", "outside window s"),
            ("harness_cpu_ms_per_item", "CPU ms/item"), ("max_rss_mb", "peak RSS MB"),
            ("stub_max_inflight", "max in-flight"), ("other_load_pct", "other load %")]
    med = [{"mode": m, **v} for m, v in summary.items()]
    med_cols = [("mode", "mode"), ("wall_s", "median wall s"), ("window_s", "median window s"),
                ("outside_window_s", "median outside s"), ("cpu_ms_per_item", "CPU ms/item")]
    step_rows = [{"step": name, **{m: phases[m].get(name) for m in phases}}
                 for name, _, _ in STEPS]
    step_cols = [("step", "step (median s)"), *((m, m) for m in phases)]
    lines = [f"### {a.name}", "", C.md_table(rows, cols), "", C.md_table(med, med_cols), "",
             (f"Overhead (median, % over the local counterpart): {overhead}; "
              f"target <= {TARGET_OVERHEAD_PCT:g} %."), "",
             f"Speed-up 1 -> 2 processes (median 1 / median 2): {speedup}.", ""]
    if phases:
        lines += ["Where a ray run's time goes (median s per step, process start to exit):", "",
                  C.md_table(step_rows, step_cols), ""]
    if transport:
        lines.append(
            f"Records to the folder ({transport['records']} lines, {transport['bytes']:,} "
            f"bytes; median of {transport['repeats']}): the task appends them "
            f"{transport['task_writes_s']} s; returned to the driver, which appends them "
            f"{transport['driver_writes_s']} s.")
    print(C.write_markdown(work, a.name, lines, path))


if __name__ == "__main__":
    main()
