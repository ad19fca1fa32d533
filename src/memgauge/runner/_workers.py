"""Answering in several processes (``--workers N``).

One Python process answers at most about 250 small requests a second here: reading,
prompt assembly, serialisation, HTTP and scoring all hold the GIL. With ``--workers N`` the
run forks N worker processes after its setup: worker k answers items k, k+N, k+2N, ... of
the data file (a loader that supports parts converts only those; others are read whole by
each worker, which keeps its share). Each worker appends its records to the same
records.jsonl (each batch written under an exclusive lock, then fsynced), with its own
model connections and response-cache connection. The parent checks the folder, writes the
manifest, hashes the inputs while the workers run, shows their progress from a shared
memory block, and writes the final manifest and status once they are all done. A worker
that fails reports its error; the parent raises it after finishing the manifest, so what
the other workers answered is kept. Workers die with the parent (Linux) so that a killed
run leaves nothing running.

Fork happens before any thread or event loop exists in the parent. ``--limit`` counts
questions in file order across the whole file, so a run with a limit uses one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mmap
import os
import signal
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import FieldText, MemgaugeError, RunIncomplete
from ..models._capabilities import SendClock
from ._parts import hash_inputs, judge_earlier, merge_bench_manifest, merge_cache_stats, part_stats

if TYPE_CHECKING:
    from ._config import RunConfig
    from ._execute import Runner, RunResult
    from ._setup import Prepared

# Per worker, in the shared block: done, ok, errors (int64), first request (float64, 0 = none)
_SLOT = struct.Struct("<qqqd")
_GRACE_S = 5.0  # after an interrupt, how long workers get to stop before SIGKILL


def workers_for(config: RunConfig) -> tuple[int, FieldText | None]:
    """How many processes will answer, and why fewer than asked (if so), naming fields."""
    n = max(1, int(config.workers))
    if n == 1:
        return 1, None
    if config.limit is not None:
        return 1, FieldText(f"{{workers}} {n} ignored: {{limit}} counts questions in file "
                            "order, so a limited run answers in one process", "workers",
                            "limit")
    if config.model.startswith("local:") or (config.judge or "").startswith("local:"):
        return 1, FieldText(f"{{workers}} {n} ignored: a local model is computed by its "
                            "server's slots ({model_options[n_parallel]}=N), not by more "
                            "answering processes", "workers", "model_options")
    if not hasattr(os, "fork"):
        return 1, FieldText(f"{{workers}} {n} ignored: this platform cannot fork", "workers")
    if config.concurrency < n:  # each worker needs a request slot of its own
        c = max(1, config.concurrency)
        return c, FieldText(f"{{workers}} {n} reduced to {c}: {{concurrency}} "
                            f"{config.concurrency} is the total", "workers", "concurrency")
    return n, None


def _signal(pids: set[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # it has just exited
            os.kill(pid, sig)


def _report_path(run_dir: Path, k: int) -> Path:
    return run_dir / f".worker-{k}.json"


def run_with_workers(runner: Runner, n: int) -> RunResult:
    """Fork ``n`` workers after the setup, hash the inputs and show progress while they
    answer, then finish the manifest and raise what stopped any of them."""
    from ._execute import RunResult

    prep = runner.prepare()
    s = runner.setup(with_cache=False, survey=True)  # describes the run; the workers make
    # their own
    manifest = runner.initial_manifest(s, prep)
    manifest["execution"] = {"workers": n}
    run_dir = runner.run_dir
    for k in range(n):
        _report_path(run_dir, k).unlink(missing_ok=True)
    block = mmap.mmap(-1, _SLOT.size * n)
    pids = _fork_workers(runner, prep, n, block)

    # The parent: hash the inputs for the manifest while the workers answer.
    hashed: dict[str, Any] = {}
    hasher = threading.Thread(target=hash_inputs, args=(s, hashed), daemon=True)
    hasher.start()
    result = RunResult(run_dir=run_dir, skipped=len(prep.done_ok), workers=n,
                       total=runner.expected_todo(s.bench, prep))
    codes, interrupted = _wait_for_workers(runner, block, n, result, pids)
    _progress(runner, block, n, result)

    reports = [_read_report(run_dir, k) for k in range(n)]
    first = [r["first_send_at"] for r in reports if r.get("first_send_at")]
    if first:
        result.first_request_s = min(first) - prep.t_mono
    failures = [r["error"] for r in reports if r.get("error")]
    missing_reports = [k for k, r in enumerate(reports) if not r]
    hasher.join(timeout=0 if interrupted else None)  # after Ctrl-C, not for a hash
    manifest["packages"] = hashed.get("packages")
    bench_manifest = None
    if not failures and not missing_reports and not interrupted:
        bench_manifest = merge_bench_manifest(hashed.get("manifest"), reports)
    if s.judging is not None and not failures and not interrupted:
        asyncio.run(judge_earlier(runner, s, manifest, prep.done_ok))
    runner.finish(manifest, bench_manifest, cache=merge_cache_stats(reports),
                  stopped=bool(failures or missing_reports or interrupted))
    result.wall_s = time.perf_counter() - prep.t_start
    block.close()
    if interrupted is not None:
        raise interrupted
    if failures:
        raise _worker_failure(failures[0])
    if missing_reports:
        lost = "; ".join(_how_it_ended(k, pids[k], codes.get(pids[k])) for k in missing_reports)
        raise RunIncomplete(f"{lost}. {result.done} questions answered in this invocation "
                            "are recorded; rerun the same command to answer the rest")
    return result


def _fork_workers(runner: Runner, prep: Prepared, n: int, block: mmap.mmap) -> list[int]:
    sys.stdout.flush()
    sys.stderr.flush()
    pids = []
    for k in range(n):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which never returns
            _worker(runner, prep, k, n, block)
        pids.append(pid)
    return pids


def _wait_for_workers(runner: Runner, block: mmap.mmap, n: int, result: RunResult,
                      pids: list[int]) -> tuple[dict[int, int], BaseException | None]:
    """Reap the workers as they end, showing their progress meanwhile: each one's exit code,
    and the interrupt (Ctrl-C, a signal) that stopped the run, if one did."""
    interrupted: BaseException | None = None
    kill_at: float | None = None  # after an interrupt: when to stop asking and SIGKILL
    left = set(pids)
    codes: dict[int, int] = {}
    while left:
        try:
            _reap(left, codes)
            _progress(runner, block, n, result)
            if left and kill_at is not None and time.monotonic() > kill_at:
                _signal(left, signal.SIGKILL)
            if left:
                time.sleep(0.02)
        except BaseException as exc:  # noqa: BLE001 - Ctrl-C or a signal: stop workers, finish
            # First ask (SIGINT: the workers cancel and close their files); a worker stuck
            # outside its event loop, or a second interrupt, gets SIGKILL. Records already
            # written are on disk either way.
            if interrupted is None:
                interrupted = exc
                kill_at = time.monotonic() + _GRACE_S
                _signal(left, signal.SIGINT)
            else:
                _signal(left, signal.SIGKILL)
    return codes, interrupted


def _reap(left: set[int], codes: dict[int, int]) -> None:
    """Note the exit code of each worker in ``left`` that has ended, and drop it from there."""
    for pid in list(left):
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            left.discard(pid)
            codes[pid] = os.waitstatus_to_exitcode(status)


def _worker_failure(failure: dict[str, Any]) -> Exception:
    """What a worker's report says it failed with, to raise in the parent: the message of
    a memgauge error as it was; anything else as a RuntimeError with its traceback."""
    if failure["memgauge"]:
        return MemgaugeError(failure["message"])
    return RuntimeError(f"a worker failed: {failure['type']}: "
                        f"{failure['message']}\n{failure['traceback']}")


def _how_it_ended(k: int, pid: int, code: int | None) -> str:
    """'worker 1 (pid 4242) was killed by signal 9 (SIGKILL)': the OOM killer or a user."""
    if code is not None and code < 0:
        try:
            name = f" ({signal.Signals(-code).name})"
        except ValueError:
            name = ""
        return f"worker {k} (pid {pid}) was killed by signal {-code}{name}"
    return f"worker {k} (pid {pid}) ended with status {code} before it finished its share"


def _worker(runner: Runner, prep: Prepared, k: int, n: int, block: mmap.mmap) -> None:
    """A worker process: answer part k of n, write a report, exit (never returns)."""
    code = 0
    report: dict[str, Any] = {}
    try:
        _die_with_parent()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from ..io import set_background_hashing
        from ._execute import RunResult

        set_background_hashing(False)  # the parent hashes the inputs
        # --concurrency is the run's total: each worker keeps its share in flight
        total = runner.config.concurrency  # >= n (workers_for)
        share = total // n + (1 if k < total % n else 0)
        runner.config = runner.config.replace(concurrency=share)
        result = RunResult(run_dir=runner.run_dir)
        offset = k * _SLOT.size

        def tick(res: RunResult, record: Any) -> None:
            first = (setup.model.first_send_at if isinstance(setup.model, SendClock)
                     else None) or 0.0
            block[offset:offset + _SLOT.size] = _SLOT.pack(res.done, res.ok, res.errors, first)

        runner.on_progress = tick
        setup = runner.setup()

        async def main() -> float | None:
            try:
                await runner.answer(setup, prep.done_ok, result, part=(k, n))
            finally:
                first = await setup.close()
            return first

        first = asyncio.run(main())
        tick(result, None)
        report = {"first_send_at": first, "cache": setup.cache_summary(),
                  "stats": part_stats(setup)}
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        code = 1
        report = {"error": {"type": type(exc).__name__, "message": str(exc),
                            "memgauge": isinstance(exc, MemgaugeError),
                            "traceback": traceback.format_exc()}}
    finally:
        try:
            path = _report_path(runner.run_dir, k)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(report, default=str))
            os.replace(tmp, path)
        except BaseException:  # noqa: BLE001 - nothing more can be done
            code = 2
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _read_report(run_dir: Path, k: int) -> dict[str, Any]:
    path = _report_path(run_dir, k)
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    path.unlink(missing_ok=True)
    return report


def _progress(runner: Runner, block: mmap.mmap, n: int, result: RunResult) -> None:
    done = ok = errors = 0
    for k in range(n):
        d, o, e, _ = _SLOT.unpack_from(block, k * _SLOT.size)
        done, ok, errors = done + d, ok + o, errors + e
    if (done, ok, errors) != (result.done, result.ok, result.errors):
        result.done, result.ok, result.errors = done, ok, errors
        if runner.on_progress:
            runner.on_progress(result, None)


def _die_with_parent() -> None:
    """Linux: a worker gets SIGKILL when the parent dies (e.g. is killed) — no orphans
    writing on into the run folder."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    # no prctl in this libc: the worker simply is not tied to the parent
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
