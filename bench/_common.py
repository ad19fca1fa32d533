"""Shared plumbing for the bench scripts: the shared stub server and workload generator,
running ``memgauge run`` as a measured subprocess, and result output.

The stub (``stub_server.py``) and the generator (``make_memlens_like.py``) live in
``../shared/tools`` next to the repository (they produced the reference anchors in
``../shared/research/perf-anchors.md``). They are not part of this repository; when they are
absent every bench script stops with a message saying so.

Nothing here hard-codes a machine path: the work dir defaults to ``bench/out/`` (git-ignored)
and can be moved with ``--work DIR``.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
TOOLS = Path(__file__).resolve().parents[1].parent / "shared" / "tools"
DEFAULT_WORK = BENCH_DIR / "out"
PY = sys.executable
TIME_BIN = "/usr/bin/time"  # GNU time; its -v output has wall time and peak RSS

PRESET_SMALL = "small"
PRESET_256K = "256k"


# --------------------------------------------------------------------------------------------
# Shared tools

def tool(name: str) -> Path:
    """Path of a shared tool; exits with a clear message when ../shared/tools is absent."""
    path = TOOLS / name
    if not path.is_file():
        sys.exit(f"bench: {name} not found at {path}.\n"
                 "These benchmarks use the shared reference tools (make_memlens_like.py, "
                 "stub_server.py) from ../shared/tools next to the repository root; they are not "
                 "part of the repository. Put them there to run the benchmarks.")
    return path


def require_tools() -> None:
    tool("make_memlens_like.py")
    tool("stub_server.py")
    ensure_bytecode()
    try:
        import aiohttp  # noqa: F401  (the stub needs it; fail here rather than in a child)
    except ImportError:
        sys.exit(f"bench: the stub server needs aiohttp; install it into {sys.prefix} "
                 "(pip install -e '.[bench]').")


def ensure_bytecode() -> None:
    """Compile memgauge's modules to bytecode before measuring. A normal install has it (pip
    compiles what it installs; Python writes the cache of an editable install on first
    import), but with PYTHONDONTWRITEBYTECODE set (as in some sandboxes and CI images) every
    start would compile ~70 modules from source: ~0.25 s that no user pays."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("memgauge")
    for where in (spec.submodule_search_locations or []) if spec else []:
        compileall.compile_dir(where, quiet=1)


# --------------------------------------------------------------------------------------------
# Workloads

@dataclass
class Workload:
    data: Path
    image_dir: Path
    info: dict[str, Any]


def _generate(out: Path, image_dir: Path, args: list[str]) -> Workload:
    """Run make_memlens_like.py unless ``out`` already exists with the same arguments."""
    sidecar = out.with_suffix(out.suffix + ".gen.json")
    if out.is_file() and sidecar.is_file():
        prior = json.loads(sidecar.read_text())
        if prior.get("args") == args:
            return Workload(out, image_dir, prior["info"])
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [PY, str(tool("make_memlens_like.py")), *args, "--out", str(out),
           "--image-dir", str(image_dir)]
    print(f"bench: generating {out.name} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench: workload generation failed ({proc.returncode}):\n{proc.stderr}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    info["generate_wall_s"] = round(time.perf_counter() - t0, 2)
    sidecar.write_text(json.dumps({"args": args, "info": info}, indent=2) + "\n")
    return Workload(out, image_dir, info)


def workload_small(work: Path) -> Workload:
    """The anchor workload: 200 items x 8 images (512x384), ~26 MB."""
    d = work / "data"
    return _generate(d / "dataset_small.json", d / "images", ["--preset", PRESET_SMALL])


def workload_256k(work: Path) -> Workload:
    """The 786 MB file: 789 items x 40 sessions x 12 turns, 64 images each (same image pool)."""
    d = work / "data"
    return _generate(d / "dataset_256k_like.json", d / "images", ["--preset", PRESET_256K])


def workload_tiny(work: Path, items: int, chars_per_turn: int | None = None) -> Workload:
    """The small preset's shape (8 sessions x 10 turns, 8 images per item) with 16x16 PNGs,
    so a request is mostly text and the harness's own per-item cost shows.

    make_memlens_like.py cannot draw images under ~82 px, but it skips pool files that
    exist: make_tiny_images.py writes the 16x16 pool first, then the generator writes items
    pointing into it."""
    from make_tiny_images import make_pool

    d = work / "data"
    image_dir = d / "tiny_images"
    make_pool(image_dir, n=200, size=(16, 16))
    args = ["--preset", PRESET_SMALL, "--items", str(items), "--image-pool", "200"]
    name = f"dataset_tiny_{items}"
    if chars_per_turn is not None:
        args += ["--chars-per-turn", str(chars_per_turn)]
        name += f"_c{chars_per_turn}"
    wl = _generate(d / f"{name}.json", image_dir, args)
    if wl.info.get("images_generated"):
        sys.exit("bench: make_memlens_like.py drew images into the tiny pool; expected it to "
                 "reuse the 16x16 files")
    wl.info["image_size"] = "16x16 (bench/make_tiny_images.py)"
    return wl


# --------------------------------------------------------------------------------------------
# The stub server

class Stub:
    """The shared stub on 127.0.0.1, on a free port. Stop with SIGTERM (to its PID only); on
    SIGTERM it writes its stats file (requests, inline_images, mb_in, max_inflight, ...)."""

    def __init__(self, work: Path, latency_ms: float, tag: str) -> None:
        self.dir = work / "stub"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ready = self.dir / f"{tag}.ready"
        self.stats_file = self.dir / f"{tag}.stats.json"
        self.log = self.dir / f"{tag}.log"
        for p in (self.ready, self.stats_file):
            p.unlink(missing_ok=True)
        self.latency_ms = latency_ms
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.final: dict[str, Any] | None = None

    def start(self, timeout_s: float = 20.0) -> Stub:
        cmd = [PY, str(tool("stub_server.py")), "--host", "127.0.0.1", "--port", "0",
               "--latency-ms", str(self.latency_ms), "--ready-file", str(self.ready),
               "--stats-file", str(self.stats_file)]
        self._log = open(self.log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.ready.is_file() and self.ready.read_text().strip():
                self.port = int(self.ready.read_text().strip().rsplit(":", 1)[1])
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        sys.exit(f"bench: the stub server did not start; see {self.log}")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """Live counters from GET /stats."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5) as r:
            return json.loads(r.read())

    def stop(self) -> dict[str, Any] | None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()
        if self.stats_file.is_file():
            self.final = json.loads(self.stats_file.read_text())
        return self.final


@contextmanager
def stub(work: Path, latency_ms: float, tag: str) -> Iterator[Stub]:
    s = Stub(work, latency_ms, tag).start()
    try:
        yield s
    finally:
        s.stop()


# --------------------------------------------------------------------------------------------
# Running memgauge as a measured subprocess

def memgauge_cmd() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m memgauge.cli``."""
    script = Path(PY).parent / "memgauge"
    return [str(script)] if script.is_file() else [PY, "-m", "memgauge.cli"]


def run_args(wl: Workload, base_url: str, out: Path, concurrency: int, *,
             limit: int | None = None, extra: list[str] | None = None) -> list[str]:
    args = ["run", "--bench", "memlens", "--data", str(wl.data), "--image-dir", str(wl.image_dir),
            "--system", "full-context", "--model", "openai:stub", "--base-url", base_url,
            "--out", str(out), "--concurrency", str(concurrency), "--no-cache"]
    if limit is not None:
        args += ["--limit", str(limit)]
    return args + list(extra or [])


@dataclass
class Measured:
    cmd: list[str]
    rc: int
    wall_s: float  # our own clock around the child: includes interpreter start and exit
    max_rss_mb: float | None
    user_s: float | None
    sys_s: float | None
    cpu_pct: str | None
    rss_source: str
    stderr_tail: str
    t_start: float  # time.time() just before the child was started
    extra: dict[str, Any] = field(default_factory=dict)


_TIME_FIELDS = {
    "Maximum resident set size (kbytes)": "max_rss_kb",
    "User time (seconds)": "user_s",
    "System time (seconds)": "sys_s",
    "Percent of CPU this job got": "cpu_pct",
}


def _parse_time_v(text: str) -> tuple[dict[str, str], str]:
    found: dict[str, str] = {}
    keep = []
    for line in text.splitlines():
        s = line.strip()
        hit = False
        for label, key in _TIME_FIELDS.items():
            if s.startswith(label + ":"):
                found[key] = s.split(":", 1)[1].strip()
                hit = True
        if not hit and not s.startswith(("Command being timed", "Elapsed", "Average",
                                         "Major", "Minor", "Voluntary", "Involuntary", "Swaps",
                                         "File system", "Socket", "Signals", "Page size",
                                         "Exit status", "Maximum resident")):
            keep.append(line)
    return found, "\n".join(keep)


def host_cpu() -> list[int] | None:
    """The aggregate ``cpu`` line of /proc/stat (jiffies), or None off Linux."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def host_cpu_delta(before: list[int] | None, after: list[int] | None) -> dict[str, float] | None:
    """Whole-machine CPU use between two snapshots, in % of all CPUs: busy (user+nice+system+
    irq+softirq), iowait, idle and steal (time the hypervisor gave to someone else)."""
    if not before or not after:
        return None
    d = [a - b for a, b in zip(after, before, strict=True)]
    total = sum(d[:8]) or 1
    busy = d[0] + d[1] + d[2] + d[5] + d[6]
    return {"busy_pct": round(100 * busy / total, 1), "iowait_pct": round(100 * d[4] / total, 1),
            "idle_pct": round(100 * d[3] / total, 1),
            "steal_pct": round(100 * (d[7] if len(d) > 7 else 0) / total, 1)}


def foreign_load_pct(host: dict[str, float] | None, wall_s: float,
                     own_cpu_s: float) -> float | None:
    """CPU used during a measurement by processes other than ours (harness + stub), in % of
    the whole machine: host busy core-seconds minus our CPU seconds. On a shared machine a
    high value means the figure was measured under someone else's load."""
    if not host or wall_s <= 0:
        return None
    cores = os.cpu_count() or 1
    busy_core_s = host["busy_pct"] / 100 * cores * wall_s
    return round(max(0.0, busy_core_s - own_cpu_s) / (cores * wall_s) * 100, 1)


def wait_quiet(max_wait_s: float, threshold_pct: float = 10.0) -> float | None:
    """Wait (up to ``max_wait_s``) until the machine's CPU use over 1 s is below
    ``threshold_pct``; returns the last reading (None off Linux). Other people's jobs on a
    shared machine would otherwise distort a measurement."""
    deadline = time.monotonic() + max_wait_s
    while True:
        a = host_cpu()
        time.sleep(1.0)
        d = host_cpu_delta(a, host_cpu())
        if d is None:
            return None
        if d["busy_pct"] < threshold_pct or time.monotonic() >= deadline:
            if d["busy_pct"] >= threshold_pct:
                print(f"bench: machine still {d['busy_pct']:.0f} % busy after waiting "
                      f"{max_wait_s:.0f} s; measuring anyway", file=sys.stderr, flush=True)
            return d["busy_pct"]


def measure(cmd: list[str], *, env: dict[str, str] | None = None,
            on_start: Any = None) -> Measured:
    """Run ``cmd`` under ``/usr/bin/time -v`` (or, without it, read RUSAGE_CHILDREN) and return
    wall time, peak RSS and CPU. ``on_start(t_start)`` is called right after the child starts."""
    use_time = os.path.isfile(TIME_BIN) and os.access(TIME_BIN, os.X_OK)
    full = [TIME_BIN, "-v", *cmd] if use_time else list(cmd)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = host_cpu()
    t_start = time.time()
    t0 = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if on_start is not None:
        on_start(t_start)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    host = host_cpu_delta(cpu0, host_cpu())
    text = err.decode("utf-8", "replace") + out.decode("utf-8", "replace")
    if use_time:
        found, rest = _parse_time_v(text)
        rss = float(found["max_rss_kb"]) / 1024 if "max_rss_kb" in found else None
        user = float(found["user_s"]) if "user_s" in found else None
        sys_ = float(found["sys_s"]) if "sys_s" in found else None
        pct = found.get("cpu_pct")
        source = "/usr/bin/time -v"
    else:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # ru_maxrss of children is the max over every child waited for so far (the stub is
        # still running, so it is not included); good enough without GNU time.
        rss = after.ru_maxrss / 1024
        user = after.ru_utime - before.ru_utime
        sys_ = after.ru_stime - before.ru_stime
        pct = f"{100 * (user + sys_) / wall:.0f}%" if wall > 0 else None
        rest = text
        source = "getrusage(RUSAGE_CHILDREN)"
    return Measured(cmd=list(cmd), rc=proc.returncode, wall_s=wall, max_rss_mb=rss, user_s=user,
                    sys_s=sys_, cpu_pct=pct, rss_source=source, stderr_tail=rest[-3000:],
                    t_start=t_start, extra={"host_cpu": host})


def count_records(run_dir: Path) -> dict[str, int]:
    path = run_dir / "records.jsonl"
    ok = errors = 0
    kinds: dict[str, int] = {}
    if path.is_file():
        with open(path, "rb") as f:
            for line in f:
                if not line.strip():
                    continue
                rec = json.loads(line)
                if rec.get("status") == "ok":
                    ok += 1
                else:
                    errors += 1
                    kind = ((rec.get("response") or {}).get("error") or {}).get("kind", "?")
                    kinds[kind] = kinds.get(kind, 0) + 1
    return {"records": ok + errors, "ok": ok, "errors": errors, "error_kinds": kinds}


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# --------------------------------------------------------------------------------------------
# A 10 ms poller of the stub's request counter (for time to first request)

class FirstRequestPoller:
    def __init__(self, stub: Stub, interval_s: float = 0.01) -> None:
        self.stub = stub
        self.interval_s = interval_s
        self.t_first: float | None = None  # time.time() when requests >= 1 was first seen
        self.polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> FirstRequestPoller:
        self._thread.start()
        return self

    def _run(self) -> None:
        url = f"http://127.0.0.1:{self.stub.port}/stats"
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    n = json.loads(r.read()).get("requests", 0)
            except OSError:
                n = 0
            self.polls += 1
            if n >= 1:
                self.t_first = time.time()
                return
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


# --------------------------------------------------------------------------------------------
# Output

def src_digest() -> str:
    """sha256 over src/memgauge/**/*.py (paths and contents): which code was measured, since
    the working tree may differ from any commit."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted((REPO / "src" / "memgauge").rglob("*.py")):
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                            "platform": platform.platform(), "src_digest": src_digest(),
                            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        with open("/proc/meminfo") as f:
            total = next(line for line in f if line.startswith("MemTotal"))
        info["mem_total_gib"] = round(int(re.findall(r"\d+", total)[0]) / 1024 / 1024, 1)
    except (OSError, StopIteration, IndexError):
        pass
    try:
        from importlib import metadata
        info["packages"] = {p: metadata.version(p) for p in
                            ("memgauge", "orjson", "ijson", "pydantic", "httptools",
                             "aiohttp", "pillow", "bpe-openai")}
    except Exception:  # noqa: BLE001, S110 - informational only
        pass
    return info


def md_table(rows: list[dict[str, Any]], cols: list[tuple[str, str]]) -> str:
    head = "| " + " | ".join(title for _, title in cols) + " |"
    sep = "|" + "|".join("---" for _ in cols) + "|"
    body = ["| " + " | ".join(_fmt(r.get(key)) for key, _ in cols) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v == int(v) and abs(v) >= 10:
            return f"{v:.0f}"
        return f"{v:.3f}" if abs(v) < 1 else f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def write_result(work: Path, name: str, obj: dict[str, Any]) -> Path:
    path = work / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=str) + "\n")
    return path


def shell_quote(cmd: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(c) for c in cmd)


def rel(path: Path | str) -> str:
    """A path relative to the repo root when inside it (for printed commands)."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(REPO))
    except ValueError:
        return str(p)


def add_common_args(p: Any, name: str, *, repeats: int = 1) -> None:
    """Options every measured bench shares (work dir, result name, stub latency, repeats,
    waiting for a quiet machine)."""
    p.add_argument("--work", type=Path, default=DEFAULT_WORK, help="work dir (default bench/out)")
    p.add_argument("--name", default=name, help="result file stem under the work dir")
    p.add_argument("--latency-ms", type=float, default=200.0)
    p.add_argument("--repeats", type=int, default=repeats)
    p.add_argument("--wait-quiet", type=float, default=30.0,
                   help="before each measurement wait up to S s for the machine to be idle "
                        "(< 10 %% CPU); 0 = do not wait")


def add_extra_arg(p: Any) -> None:
    p.add_argument("--extra", default="",
                   help="extra memgauge run flags, space-separated; write --extra=--flag")


def write_markdown(work: Path, name: str, lines: list[str], result_json: Path) -> str:
    """Finish a bench's Markdown summary, save it beside the JSON and return it."""
    md = "\n".join([*lines, "", f"Result JSON: {rel(result_json)}", ""])
    (work / f"{name}.md").write_text(md)
    return md


def run_columns(m: Any, st: dict, n: int) -> dict[str, Any]:
    """The columns every measured run against the stub reports: the harness's CPU, what the
    stub saw, and the machine's load. ``m`` is a :class:`Measured`, ``st`` the stub's final
    stats, ``n`` the items answered."""
    cpu = (m.user_s or 0) + (m.sys_s or 0)
    stub_cpu = st.get("cpu_user_s", 0) + st.get("cpu_sys_s", 0)
    host = m.extra.get("host_cpu")
    return {
        "max_rss_mb": round(m.max_rss_mb, 1) if m.max_rss_mb else None,
        "harness_cpu_s": round(cpu, 2),
        "harness_cpu_ms_per_item": round(1000 * cpu / max(1, n), 1),
        "cpu_pct": m.cpu_pct,
        "stub_requests": st.get("requests"),
        "stub_by_status": st.get("by_status"),
        "stub_max_inflight": st.get("max_inflight"),
        "stub_inline_images": st.get("inline_images"),
        "stub_mb_in": round(st.get("mb_in", 0), 1),
        "stub_window_s": st.get("active_window_s"),
        "stub_cpu_s": round(stub_cpu, 2),
        "host_cpu": host,
        "other_load_pct": foreign_load_pct(host, m.wall_s, cpu + stub_cpu),
        "host_steal_pct": (host or {}).get("steal_pct"),
    }


def note_failure(row: dict, m: Any) -> None:
    """Keep a failed ``memgauge run``'s stderr tail in its result row, and say so."""
    if m.rc != 0:
        row["stderr_tail"] = m.stderr_tail
        print(f"memgauge run failed (rc {m.rc}):\n{m.stderr_tail}", file=sys.stderr)
