#!/usr/bin/env python3
"""Loading the 786 MB 256K-like file (789 items, 40 sessions x 12 turns, 64 images each).

(a) Time to first request: ``memgauge run ... --limit 20`` against the stub. Measured from
    outside: the wall clock just before the child process is started, to the first moment
    the stub's ``GET /stats`` shows ``requests >= 1`` (polled every 10 ms from this process),
    so it includes interpreter start, imports, streaming the first item, prompt assembly,
    token counting and image encoding. Target: <= 1 s.
(b) Prompt assembly for all 789 items, in a fresh interpreter: stream ``episodes()`` and call
    ``build_prompt(episode.sessions, question)`` per question with no token counter, under
    the garbage-collector settings ``memgauge run`` uses (runner/_gc.py); time and peak RSS
    (``ru_maxrss``). Target: <= 3 s and <= 200 MB.
(c) The same with ``counter=TokenCounter()`` (exact o200k_base text tokens + image tiles),
    to show what exact cross-modal counting costs. Reported separately; no target.

Reference (perf-anchors.md 3b/3c): ``data.load_data`` 7.92 s / 1,969 MB; ``json.load`` 4.47 s /
1,638 MB; streaming lower bounds: ijson alone 0.75 s / 15.6 MB, ijson + the reference
``build_messages`` per item 2.45 s / 21.9 MB.

    .venv/bin/python bench/load_256k.py                  # (a) x3, (b), (c)
    .venv/bin/python bench/load_256k.py --skip-counter   # (a) and (b) only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

REFERENCE = {
    "json.load": {"s": 4.47, "wall_s": 4.55, "rss_mb": 1638},
    "reference data.load_data": {"s": 7.92, "wall_s": 8.10, "rss_mb": 1969},
    "orjson.loads": {"s": 3.14, "wall_s": 3.24, "rss_mb": 2424},
    "ijson.items (lower bound)": {"s": 0.75, "wall_s": 0.79, "rss_mb": 15.6},
    "ijson + reference build_messages": {"s": 2.45, "wall_s": 2.52, "rss_mb": 21.9},
}
# which anchor row each calibration probe reproduces
PROBE_ANCHOR = {"json": "json.load", "ijson": "ijson.items (lower bound)",
                "ijson_ref": "ijson + reference build_messages",
                "refload": "reference data.load_data"}
TARGET_FIRST_REQUEST_S = 1.0
TARGET_ASSEMBLY_S = 3.0
TARGET_ASSEMBLY_MB = 200.0


# --------------------------------------------------------------------------------------------
# (b)/(c) worker: runs in its own interpreter so its peak RSS is its own

def assemble_worker(data: str, image_dir: str, with_counter: bool, parts: int = 1) -> None:
    """Assemble every prompt; with ``parts`` > 1, in that many forked processes, each
    taking every n-th item as `memgauge run --workers n` does (``episodes(part=...)``)."""
    t_import = time.perf_counter()
    from memgauge.benchmarks import BenchmarkOptions
    from memgauge.media import ImagePolicy
    from memgauge.registry import lookup
    from memgauge.runner._gc import quiet_gc
    from memgauge.systems import build_prompt
    from memgauge.tokens import TokenCounter

    import_s = time.perf_counter() - t_import
    counter = TokenCounter() if with_counter else None
    policy = ImagePolicy()  # the run's default (max side 800): the size that would be sent

    def image_size(part):  # as FullContext does
        im = part.image
        return policy.target_size(im.width, im.height) if im.width and im.height else (0, 0)

    def assemble(part: tuple[int, int] | None) -> dict:
        bench = lookup("benchmark", "memlens")(BenchmarkOptions(data=data, image_dir=image_dir))
        n = dict.fromkeys(("items", "questions", "messages", "images", "tokens"), 0)
        t_first = None
        for ep in (bench.episodes() if part is None else bench.episodes(part=part)):
            if t_first is None:
                t_first = time.perf_counter() - t0
            n["items"] += 1
            for q in ep.questions:
                prompt = build_prompt(ep.sessions, q, counter=counter,
                                      image_size=image_size if counter is not None else None)
                n["questions"] += 1
                n["messages"] += len(prompt.messages)
                n["images"] += len(prompt.images)
                n["tokens"] += prompt.tokens or 0
        counts = bench.stats()["counts"] if part is not None else bench.manifest().get("counts")
        return {**n, "first_episode_s": t_first, "counts": counts}

    quiet_gc()  # the collector settings `memgauge run` assembles prompts under
    t0 = time.perf_counter()
    hasher = None
    if parts > 1:
        # As `memgauge run --workers n`: the parts do not hash the input; the parent does,
        # once, on a thread (started after the fork, as there).
        from memgauge.io import file_sha256, set_background_hashing

        set_background_hashing(False)
    pipes = []
    for k in range(1, parts):
        r, w = os.pipe()
        if os.fork() == 0:  # a part: report its counts and peak RSS, then exit
            os.close(r)
            out = assemble((k, parts))
            out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            os.write(w, json.dumps(out).encode())
            os._exit(0)
        os.close(w)
        pipes.append(r)
    if parts > 1:
        import threading

        hasher = threading.Thread(target=file_sha256, args=(data,), daemon=True)
        hasher.start()
    mine = assemble((0, parts) if parts > 1 else None)
    others = []
    for r in pipes:
        with os.fdopen(r, "rb") as f:
            others.append(json.loads(f.read()))
        os.wait()
    if hasher is not None:
        hasher.join()
    total = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    sums = {k: mine[k] + sum(o[k] for o in others)
            for k in ("items", "questions", "messages", "images", "tokens")}
    counts = {k: mine["counts"][k] + sum(o["counts"][k] for o in others) for k in mine["counts"]}
    rss = [ru.ru_maxrss / 1024, *(o["max_rss_mb"] for o in others)]
    print(json.dumps({
        "with_counter": with_counter, "parts": parts, **sums,
        "tokens": sums["tokens"] if with_counter else None,
        "import_s": round(import_s, 3), "first_episode_s": round(mine["first_episode_s"] or 0, 3),
        "in_process_s": round(total, 3),
        # the largest process, and all of them together (what the machine holds at most)
        "max_rss_mb": round(max(rss), 1), "sum_rss_mb": round(sum(rss), 1),
        "cpu_s": round(ru.ru_utime + ru.ru_stime + kids.ru_utime + kids.ru_stime, 2),
        "manifest_counts": counts,
    }))


def probe_worker(kind: str, data: str, image_dir: str) -> None:
    """Machine calibration: the reference's probes (perf-anchors.md 3b/3c), on this machine.
    ``ijson_ref`` and ``refload`` build the reference's messages with the re-implementation in
    reference_proxy.py, so the reference's own assembly cost is measured here too."""
    t0 = time.perf_counter()
    if kind == "json":
        with open(data, encoding="utf-8") as f:
            items = json.load(f)
        n = len(items)
    elif kind == "refload":  # json.load + build_context + build_messages for every item
        import reference_proxy

        n = len(reference_proxy.load_data(data, image_dir))
    else:  # ijson streaming, touching every turn and image entry (+ messages for ijson_ref)
        import ijson

        build = None
        if kind == "ijson_ref":
            import reference_proxy

            build = reference_proxy.build_messages
        n = turns = imgs = 0
        with open(data, "rb") as f:
            for item in ijson.items(f, "item"):
                n += 1
                if build is not None:
                    build(item, image_dir)  # nothing retained
                    continue
                for session in item["haystack_sessions"]:
                    for turn in session:
                        turns += 1
                        imgs += len(turn.get("images") or ())
    total = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"probe": kind, "items": n, "in_process_s": round(total, 3),
                      "max_rss_mb": round(ru.ru_maxrss / 1024, 1),
                      "cpu_s": round(ru.ru_utime + ru.ru_stime, 2)}))


def _timed_child(cmd: list[str],
                 wait_quiet: float) -> tuple[Any, float, dict | None, float | None]:
    busy_before = C.wait_quiet(wait_quiet) if wait_quiet > 0 else None
    cpu0 = C.host_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    return proc, wall, C.host_cpu_delta(cpu0, C.host_cpu()), busy_before


def _annotate(out: dict, wall: float, host: dict | None, busy_before: float | None) -> None:
    out["wall_s"] = round(wall, 3)
    out["host_cpu"] = host
    out["busy_before_pct"] = busy_before
    out["other_load_pct"] = C.foreign_load_pct(host, wall, out.get("cpu_s") or 0.0)


def run_probe(wl: C.Workload, kind: str, wait_quiet: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--probe", kind, "--data", str(wl.data),
           "--image-dir", str(wl.image_dir)]
    proc, wall, host, busy_before = _timed_child(cmd, wait_quiet)
    if proc.returncode != 0:
        return {"probe": kind, "rc": proc.returncode, "stderr": proc.stderr[-2000:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    _annotate(out, wall, host, busy_before)
    out["reference_s"] = REFERENCE[PROBE_ANCHOR[kind]]["s"]
    out["command"] = C.shell_quote(cmd)
    return out


def run_assembly(wl: C.Workload, with_counter: bool, wait_quiet: float, parts: int = 1) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--assemble-worker",
           "--data", str(wl.data), "--image-dir", str(wl.image_dir), "--parts", str(parts)]
    if with_counter:
        cmd.append("--counter")
    proc, wall, host, busy_before = _timed_child(cmd, wait_quiet)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return {"with_counter": with_counter, "rc": proc.returncode, "stderr": proc.stderr[-4000:],
                "command": C.shell_quote(cmd)}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    _annotate(out, wall, host, busy_before)
    out["command"] = C.shell_quote(cmd)
    return out


def _same_machine(calibration: list[dict], best: dict) -> dict | None:
    """Our best assembly against the reference's streaming assembly measured in the same
    minutes (``ijson_ref``): the anchor was taken on another machine, so its 2.45 s (and the
    3 s target set from it) are scaled by how much slower the same probe runs here."""
    ref = next((r for r in calibration if r.get("probe") == "ijson_ref" and "in_process_s" in r),
               None)
    ours = best.get("in_process_s")
    if ref is None or not ours:
        return None
    anchor = REFERENCE[PROBE_ANCHOR["ijson_ref"]]["s"]
    factor = ref["in_process_s"] / anchor
    return {"reference_here_s": ref["in_process_s"], "reference_anchor_s": anchor,
            "machine_factor": round(factor, 2), "ours_s": ours,
            "ours_vs_reference": round(ours / ref["in_process_s"], 2),
            "target_scaled_s": round(TARGET_ASSEMBLY_S * factor, 2),
            "met_scaled": ours <= TARGET_ASSEMBLY_S * factor}


# --------------------------------------------------------------------------------------------
# (a) time to first request

def first_request(wl: C.Workload, work: Path, latency_ms: float, limit: int, conc: int,
                  rep: int, wait_quiet: float) -> dict:
    tag = f"load256k_first_r{rep}"
    out = C.fresh_dir(work / "runs" / tag)
    with C.stub(work, latency_ms, tag) as s:
        poller = C.FirstRequestPoller(s, 0.01)
        cmd = [*C.memgauge_cmd(), *C.run_args(wl, s.base_url, out, conc, limit=limit)]
        busy_before = C.wait_quiet(wait_quiet) if wait_quiet > 0 else None
        m = C.measure(cmd, on_start=lambda t: poller.start())
        poller.stop()
    st = s.final or {}
    rec = C.count_records(out)
    first = (poller.t_first - m.t_start) if poller.t_first else None
    row = {
        "run": rep + 1, "limit": limit, "concurrency": conc, "rc": m.rc,
        "first_request_s": round(first, 3) if first is not None else None,
        "poll_interval_s": 0.01, "polls": poller.polls,
        "wall_s": round(m.wall_s, 2), "ok": rec["ok"], "errors": rec["errors"],
        "max_rss_mb": round(m.max_rss_mb, 1) if m.max_rss_mb else None,
        "harness_cpu_s": round((m.user_s or 0) + (m.sys_s or 0), 2),
        "stub_requests": st.get("requests"), "stub_inline_images": st.get("inline_images"),
        "stub_mb_in": st.get("mb_in"), "stub_max_inflight": st.get("max_inflight"),
        "meets_target": first is not None and first <= TARGET_FIRST_REQUEST_S,
        "host_cpu": m.extra.get("host_cpu"),
        "busy_before_pct": busy_before,
        "other_load_pct": C.foreign_load_pct(
            m.extra.get("host_cpu"), m.wall_s,
            (m.user_s or 0) + (m.sys_s or 0) + st.get("cpu_user_s", 0) + st.get("cpu_sys_s", 0)),
        "host_steal_pct": (m.extra.get("host_cpu") or {}).get("steal_pct"),
        "command": C.shell_quote(cmd),
    }
    C.note_failure(row, m)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_args(p, "load_256k", repeats=3)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--concurrency", type=int, default=8, help="memgauge's default")
    p.add_argument("--skip-first-request", action="store_true")
    p.add_argument("--skip-counter", action="store_true", help="skip (c)")
    p.add_argument("--skip-calibration", action="store_true",
                   help="skip the plain json.load / ijson probes on this machine")
    p.add_argument("--assemble-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--probe", choices=list(PROBE_ANCHOR), help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--image-dir", help=argparse.SUPPRESS)
    p.add_argument("--counter", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--parts", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--assembly-workers", default="1,2",
                   help="assemble in these process counts (as `memgauge run --workers N`)")
    a = p.parse_args()
    if a.assemble_worker:
        assemble_worker(a.data, a.image_dir, a.counter, a.parts)
        return
    if a.probe:
        probe_worker(a.probe, a.data, a.image_dir)
        return
    C.require_tools()
    work = a.work.resolve()
    wl = C.workload_256k(work)

    first_rows = [] if a.skip_first_request else [
        first_request(wl, work, a.latency_ms, a.limit, a.concurrency, rep, a.wait_quiet)
        for rep in range(a.repeats)]
    assembly = [run_assembly(wl, False, a.wait_quiet, int(n))
                for n in a.assembly_workers.split(",")]
    if not a.skip_counter:
        assembly.append(run_assembly(wl, True, a.wait_quiet))

    calibration = [] if a.skip_calibration else [run_probe(wl, kind, a.wait_quiet)
                                                  for kind in PROBE_ANCHOR]

    firsts = [r["first_request_s"] for r in first_rows if r["first_request_s"] is not None]
    b = min(assembly, key=lambda r: r.get("in_process_s", 1e9))  # the best process count
    same_machine = _same_machine(calibration, b)
    result = {
        "bench": "load_256k",
        "machine": C.machine(),
        "workload": {"data": C.rel(wl.data), **wl.info},
        "first_request": first_rows,
        "first_request_median_s": statistics.median(firsts) if firsts else None,
        "assembly": assembly,
        "calibration": calibration,
        "same_machine": same_machine,
        "targets": {
            "first_request_s": TARGET_FIRST_REQUEST_S,
            "assembly_s": TARGET_ASSEMBLY_S, "assembly_rss_mb": TARGET_ASSEMBLY_MB,
            "first_request_met": bool(firsts) and all(f <= TARGET_FIRST_REQUEST_S for f in firsts),
            "assembly_time_met": b.get("in_process_s", 1e9) <= TARGET_ASSEMBLY_S,
            "assembly_time_met_wall": b.get("wall_s", 1e9) <= TARGET_ASSEMBLY_S,
            "assembly_rss_met": b.get("sum_rss_mb", 1e9) <= TARGET_ASSEMBLY_MB,
        },
        "reference": REFERENCE,
        "command_line": C.shell_quote([sys.executable, *sys.argv]),
    }
    path = C.write_result(work, a.name, result)

    lines = [(f"### load_256k ({wl.info.get('mb')} MB, {wl.info.get('items')} items, "
              f"{wl.info.get('image_refs')} image refs)"), ""]
    if first_rows:
        lines += [("(a) time to first request (`memgauge run --limit "
                   f"{a.limit} --concurrency {a.concurrency}`, stub {a.latency_ms:g} ms; measured "
                   "from process start to the stub's first counted request, 10 ms polling)"), "",
                  C.md_table(first_rows, [
                      ("run", "run"), ("first_request_s", "first request s"),
                      ("wall_s", "wall s"), ("ok", "ok"), ("errors", "err."),
                      ("max_rss_mb", "peak RSS MB"), ("harness_cpu_s", "CPU s"),
                      ("stub_requests", "stub req."), ("stub_inline_images", "inline images"),
                      ("stub_mb_in", "MB sent"), ("other_load_pct", "other load %"),
                      ("meets_target", f"<= {TARGET_FIRST_REQUEST_S:g} s")]),
                  ""]
    lines += [("(b)/(c) prompt assembly for every item in a fresh interpreter "
               "(stream `episodes()`, `build_prompt` per question, nothing kept; the run's "
               "collector settings, runner/_gc.py)"), "",
              C.md_table(assembly, [
                  ("with_counter", "TokenCounter"), ("parts", "processes"), ("items", "items"),
                  ("messages", "messages"), ("images", "images"), ("tokens", "tokens"),
                  ("first_episode_s", "first episode s"), ("in_process_s", "in-process s"),
                  ("wall_s", "wall s (incl. start)"), ("max_rss_mb", "peak RSS MB"),
                  ("sum_rss_mb", "all processes MB"),
                  ("cpu_s", "CPU s"), ("other_load_pct", "other load %")]), "",
              *([("Machine calibration: the reference's plain probes run here (this machine vs "
                  "the anchors' machine)"), "",
                 C.md_table(calibration, [("probe", "probe"), ("in_process_s", "in-process s here"),
                                          ("reference_s", "anchor s"), ("wall_s", "wall s here"),
                                          ("max_rss_mb", "peak RSS MB here"),
                                          ("other_load_pct", "other load %")]), ""]
                if calibration else []),
              *([("Same machine, same minutes: the reference's streaming assembly "
                  f"(ijson + its build_messages) took {same_machine['reference_here_s']} s here "
                  f"against {same_machine['reference_anchor_s']} s on the anchors' machine "
                  f"(x{same_machine['machine_factor']}); memgauge's "
                  f"{same_machine['ours_s']} s is x{same_machine['ours_vs_reference']} of it. "
                  f"The {TARGET_ASSEMBLY_S:g} s target scaled by the same factor is "
                  f"{same_machine['target_scaled_s']} s: "
                  f"{'met' if same_machine['met_scaled'] else 'NOT met'}."), ""]
                if same_machine else []),
              "Reference (perf-anchors.md 3b/3c):", "",
              C.md_table([{"probe": k, **v} for k, v in REFERENCE.items()],
                         [("probe", "probe"), ("s", "in-process s"), ("wall_s", "wall s"),
                          ("rss_mb", "peak RSS MB")]), ""]
    t = result["targets"]
    lines.append(
        f"Targets: first request <= {TARGET_FIRST_REQUEST_S:g} s: "
        f"{'met' if t['first_request_met'] else 'NOT met'} (median "
        f"{result['first_request_median_s']} s); assembly <= {TARGET_ASSEMBLY_S:g} s: "
        f"{'met' if t['assembly_time_met'] else 'NOT met'} ({b.get('in_process_s')} s in-process, "
        f"{b.get('wall_s')} s wall, {b.get('parts')} process(es)); assembly <= "
        f"{TARGET_ASSEMBLY_MB:g} MB: "
        f"{'met' if t['assembly_rss_met'] else 'NOT met'} ({b.get('sum_rss_mb')} MB in all).")
    print(C.write_markdown(work, a.name, lines, path))


if __name__ == "__main__":
    main()
