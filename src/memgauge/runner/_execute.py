"""Run a system over a benchmark: stream episodes, answer, score, persist, resume.

Episodes stream from the loader and are worked on as they arrive (bounded in flight), so
the first request goes out before a large file has been read. A rerun of the same run
folder skips questions already done and retries those that failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._cache_hits import CacheHits, count_records
from ..models import EndpointReporting
from ..runfolder import StorageError, read_records, rewrite_records, write_manifest
from ..schema import RUN_FINISHED, RUN_STOPPED, Record
from ..scoring import JudgePipeline, judge_records, record_judging
from ._answer import Answering
from ._breaker import RunStopped
from ._budget import Budget, read_ledger
from ._config import RunConfig, in_shard, parse_shard
from ._manifest import package_versions
from ._prefix import PrefixReuse, count_reuse
from ._records import _scan_status, _status, make_record
from ._setup import Prepared


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (``timeout``, a closed session, a job scheduler) stops the run as Ctrl-C does:
    what is in flight is recorded and a folder left without a manifest is removed. Python's
    default would end the process at once, leaving an ``--out`` folder holding only
    ``.lock`` that ``report runs/*`` then trips over. Only from the main thread, and only
    when nobody set a SIGTERM handler."""
    import signal
    import threading

    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def as_interrupt(signum: int, frame: Any) -> None:
        handler = signal.getsignal(signal.SIGINT)  # asyncio's while a loop runs
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@dataclass
class RunResult:
    run_dir: Path
    done: int = 0  # questions finished in this invocation (ok or error)
    ok: int = 0
    errors: int = 0
    skipped: int = 0  # already done by an earlier invocation
    # Questions to do in this invocation: ``total`` once known (from the benchmark's own
    # count or an earlier full pass, else when the reader reaches the end); ``queued`` is
    # how many the reader has handed out so far.
    total: int | None = None
    queued: int = 0
    first_request_s: float | None = None
    wall_s: float = 0.0
    workers: int = 1
    notes: list[str] = field(default_factory=list)  # e.g. why fewer workers ran
    levels: list[int] = field(default_factory=list)  # each endpoint's concurrency level now
    budget_stop: str | None = None  # set when a budget stopped the run (rerun resumes)


class Runner(Answering):
    def __init__(self, config: RunConfig,
                 on_progress: Callable[[RunResult, Record | None], None] | None = None) -> None:
        self.config = config.resolved()
        self.on_progress = on_progress
        self._endpoints: dict[tuple[str, str], Any] = {}  # pre-flight findings, per endpoint
        self.run_dir = Path(config.out)
        self.budget: Budget | None = None  # made when answering starts (its spend read back)
        self._made_dir = False  # prepare() made the run folder (removed if left unused)

    async def run(self) -> RunResult:
        prep = self.prepare()
        try:
            return await self._run(prep)
        finally:
            self.unlock()

    async def _run(self, prep: Prepared) -> RunResult:
        s = self.setup(survey=True)
        manifest = self.initial_manifest(s, prep)
        result = RunResult(run_dir=self.run_dir, skipped=len(prep.done_ok),
                           total=self.expected_todo(s.bench, prep))
        if prep.torn_lines:
            result.notes.append(f"dropped {len(prep.torn_lines)} torn line(s) of records.jsonl "
                                f"(line {', '.join(map(str, prep.torn_lines[:5]))}): "
                                "fragments of a failed write; their questions are asked again")
        failed = False
        try:
            await self.answer(s, prep.done_ok, result, manifest=manifest)
            if s.judging is not None:
                await self.judge_earlier(s.judging, manifest, prep.done_ok)
                if self.budget is not None and self.budget.reason:  # reached judging (0034)
                    result.budget_stop = self.budget.reason
        except BaseException:
            failed = True
            raise
        finally:
            first = await s.close()
            if first is not None:  # when the first request went out
                result.first_request_s = first - prep.t_mono
            bench_manifest = None
            if s.captions is not None:
                manifest["captioner"] = s.captions.summary()
            if isinstance(s.model, EndpointReporting):  # each endpoint's level, failover (0034)
                manifest["endpoints"] = s.model.endpoint_report()
            if not failed:
                try:
                    bench_manifest = s.bench.manifest()
                except Exception:  # noqa: BLE001 - optional; must not fail a finished run
                    bench_manifest = None
            if failed:  # the first error is the one to report (a full disk fails this too)
                with contextlib.suppress(StorageError):
                    self.finish(manifest, bench_manifest, cache=s.cache_summary(),
                                stopped=True)
            else:
                self.finish(manifest, bench_manifest, cache=s.cache_summary(),
                            stopped=bool(result.budget_stop))
            result.wall_s = time.perf_counter() - prep.t_start
        return result

    def finish(self, manifest: dict[str, Any], bench_manifest: dict[str, Any] | None,
               cache: dict[str, Any] | None, *, stopped: bool = False) -> None:
        """After answering (in the parent when there are workers): the status counts and the
        final manifest. ``stopped``: the invocation ended before every planned question had
        a record (an interrupt, a failure, a budget), which a report must say (design
        0040)."""
        hits = CacheHits()  # from the records: every invocation's answers (design 0018)
        reuse = PrefixReuse()  # the server's prefix cache over the answers sent (0031)
        status = _scan_status(self.run_dir, hits, reuse)
        if status is None:  # duplicate or torn lines: compact (validating every record)
            final = read_records(self.run_dir)
            rewrite_records(self.run_dir, final.values())
            status = _status(final)
            hits = count_records(final.values())
            reuse = count_reuse(final.values())
        manifest["cache_hits"] = hits.to_dict()
        manifest["prefix_cache"] = reuse.to_dict()
        ledger = read_ledger(self.run_dir)  # tokens over every invocation (design 0034)
        manifest["ledger"] = ledger.to_dict(self.budget.price if self.budget else None,
                                            self.budget.prices if self.budget else None)
        if self.budget is not None and self.budget.active:
            manifest["budget"] = self.budget.describe(ledger)
        manifest["benchmark"] = bench_manifest or manifest.get("benchmark")
        manifest["status"] = status
        manifest["run_state"] = RUN_STOPPED if stopped else RUN_FINISHED
        planned = manifest.get("questions_planned")
        if not stopped and (planned is None or planned > status["records"]):
            # Through to the end, every planned question has its record: workers and Ray
            # (no single reader counted) take the count, and an estimate made before
            # reading (a benchmark's own count) cannot leave a finished run "incomplete".
            manifest["questions_planned"] = status["records"]
        if manifest.get("packages") is None:  # no episode was started
            manifest["packages"] = package_versions()
        manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if cache is not None:
            manifest["cache"] = cache
        write_manifest(self.run_dir, manifest)

    async def judge_earlier(self, judging: JudgePipeline, manifest: dict[str, Any],
                             earlier: frozenset[str]) -> None:
        """Judge what earlier invocations answered (``earlier``: their ok question ids) and
        this judge has not scored, then note the judge in the manifest (written on the way
        out). Answers of this invocation were judged as they came: a judge that failed on
        one is not asked again in the same run (the next rerun retries it)."""
        records = list(read_records(self.run_dir).values())
        todo = [r for r in records if r.question_id in earlier and judging.needs(r)]
        if todo:
            await judge_records(todo, judging, concurrency=self.config.concurrency,
                                budget=self.budget)
            rewrite_records(self.run_dir, records)
        record_judging(manifest, judging, records)

    def run_sync(self) -> RunResult:
        if self.config.executor == "ray":  # Ray's driver sets its own SIGTERM handler
            return self._run_sync()
        with _terminate_as_interrupt():
            return self._run_sync()

    def _run_sync(self) -> RunResult:
        if self.config.executor == "ray":
            from ._ray import run_with_ray

            try:
                return run_with_ray(self)
            finally:
                self.unlock()
        if self.config.workers <= 1:  # the usual case: the workers module is not imported
            return asyncio.run(self.run())
        from ._workers import run_with_workers, workers_for

        n, why = workers_for(self.config)
        if n > 1:
            try:
                result = run_with_workers(self, n)
            finally:
                self.unlock()
        else:
            result = asyncio.run(self.run())
        if why:
            result.notes.append(why)
        return result


def run(config: RunConfig, **kwargs: Any) -> RunResult:
    return asyncio.run(Runner(config, **kwargs).run())


__all__ = ["RunConfig", "RunResult", "RunStopped", "Runner", "asdict", "in_shard", "make_record",
           "parse_shard", "run"]
