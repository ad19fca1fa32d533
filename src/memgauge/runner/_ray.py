"""Answering as Ray tasks (``--executor ray [--ray-address ...]``; design 0033).

The fork pool (``_workers.py``) on a cluster: the driver checks the folder, compacts it and
writes the first manifest, then submits N Ray tasks; task k answers part k of N of the
episodes (the episode stays the unit: a memory system is stateful per episode), builds its
own model, judge and response-cache connection from the run config, and appends its records
to the run folder's ``records.jsonl`` through the same locked, fsynced writer the fork
workers use. The folder must therefore be on storage every node sees at the same path.

A task whose worker dies (killed, out of memory, its node lost) is retried by Ray; the
retry skips what the earlier attempt wrote. A task that fails for good leaves what it wrote;
the driver finishes the manifest and raises, and a rerun answers the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigFieldError, FieldText, MemgaugeError, literal

if TYPE_CHECKING:
    from ._config import RunConfig
    from ._execute import Runner, RunResult

INSTALL_HINT = 'pip install "memgauge[ray]"'
TASK_RETRIES = 2  # Ray re-runs a task whose worker process died this many times
_POLL_S = 0.2
PHASES_ENV = "MEMGAUGE_RAY_PHASES"  # a file: the driver writes its and the tasks' stamps there


class Phases:
    """Wall-clock stamps (time.time(): tasks on other nodes have other monotonic clocks) of
    the steps of a Ray run, to see where its fixed cost goes (bench/ray_overhead.py)."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []

    def mark(self, name: str) -> None:
        self.marks.append((name, time.time()))

    def report(self, tasks: dict[int, list[tuple[str, float]]], warm_ups: int) -> None:
        """Written as JSON to the file MEMGAUGE_RAY_PHASES names, when it is set."""
        path = os.environ.get(PHASES_ENV)
        if not path:
            return
        import orjson

        stamps = {"driver": self.marks, "tasks": {str(k): v for k, v in sorted(tasks.items())},
                  "warm_ups": warm_ups}
        with contextlib.suppress(OSError):  # a diagnostic: never the run's failure
            Path(path).write_bytes(orjson.dumps(stamps))


def require_ray() -> None:
    """A ConfigError naming the extra when Ray is not installed (before anything runs).
    Found, not imported: ``import ray`` (about 0.5 s) happens on RayStart's thread."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise ConfigFieldError(f"{{executor}} ray needs Ray, which is not installed: "
                               f"{literal(INSTALL_HINT)}", "executor")


def check_ray_config(config: RunConfig) -> None:
    """What cannot work with Ray tasks, refused before the first request."""
    if config.executor not in ("local", "ray"):
        raise ConfigFieldError(f"{{executor}} {literal(repr(config.executor))}: use one of "
                               "local, ray", "executor")
    if config.executor == "local":
        if config.ray_address is not None:
            raise ConfigFieldError("{ray_address} applies to {executor} ray only",
                                   "ray_address", "executor")
        if config.ray_keep_warm_s is not None:
            raise ConfigFieldError("{ray_keep_warm_s} applies to {executor} ray only",
                                   "ray_keep_warm_s", "executor")
        return
    require_ray()
    from ._ray_warm import check_keep_warm

    check_keep_warm(config)
    address = config.ray_address
    if address is not None and address != "auto" and not address.startswith("ray://"):
        raise ConfigFieldError(f"{{ray_address}} {literal(repr(address))}: use auto (a "
                               "cluster started with `ray start` on this node) or "
                               "ray://HOST:PORT", "ray_address")
    if config.model.startswith("local:") or (config.judge or "").startswith("local:"):
        raise ConfigFieldError("{executor} ray: a local: model runs in this process's own "
                               "server; serve it over HTTP (llama.cpp, vLLM) and pass "
                               "{base_url}, or use {executor} local", "executor", "base_url")


def no_cluster_error(address: str | None, exc: BaseException) -> ConfigFieldError:
    """One line for a Ray cluster that is not there (Ray's own is a traceback that names
    its own CLI's flags): where the address came from and the ways out."""
    own = "drop {ray_address} to let this run start its own Ray"
    if address == "auto":
        return ConfigFieldError("{ray_address} auto: no Ray cluster is running on this node; "
                                f"start one with `ray start --head`, or {own}", "ray_address")
    reason = literal(" ".join(str(exc).split())[:200])
    if address is None:  # Ray read RAY_ADDRESS
        return ConfigFieldError(f"RAY_ADDRESS={literal(os.environ.get('RAY_ADDRESS', ''))}: "
                                f"no Ray cluster answers there ({reason}); start it, or unset "
                                "RAY_ADDRESS to let this run start its own Ray", "ray_address")
    return ConfigFieldError(f"{{ray_address}} {literal(address)}: no Ray cluster answers there "
                            f"({reason}); check the address, or {own}", "ray_address")


def task_path(run_dir: Path, k: int) -> Path:
    return run_dir / f".ray-task-{k}.json"


def run_with_ray(runner: Runner) -> RunResult:
    phases = Phases()
    phases.mark("run_with_ray")
    start = RayStart(runner.config, _task_count(runner.config)[0], phases)
    try:
        return _drive(runner, start, phases)
    finally:
        start.stop()
        phases.mark("ray.shutdown")
        phases.report(start.task_phases, start.warm_ups)


class RayStart:
    """``import ray`` on a thread started before the driver prepares the run (it takes about
    0.5 s, and the driver's checks of the folder and the endpoints wait on files and
    sockets meanwhile); then, on the driver's thread (where Ray sets its SIGTERM handler),
    ``ray.init`` and one warm-up task per part (design 0033)."""

    WARM_WAIT_S = 30.0  # a warm-up still queued then (a full cluster): submit anyway

    def __init__(self, config: RunConfig, tasks: int, phases: Phases) -> None:
        self.config, self.tasks, self.phases = config, tasks, phases
        self.started_here = False
        self.connected = False
        self.error: BaseException | None = None
        self.warm: list[Any] = []
        self.warm_ups = 0  # how many were submitted
        self.pool: Any = None  # --ray-keep-warm: the WarmPool of detached actors
        self.warm_actors: list[dict[str, Any]] = []
        self.task_phases: dict[int, list[tuple[str, float]]] = {}
        self._closer: threading.Thread | None = None
        self._thread = threading.Thread(target=self._import, name="ray-import", daemon=True)
        self._thread.start()

    def _import(self) -> None:
        try:
            import ray  # noqa: F401

            self.phases.mark("ray imported")
        except BaseException as exc:  # noqa: BLE001 - raised in the driver by connect()
            self.error = exc

    def connect(self) -> Any:
        """Ray, initialised, with the warm-up tasks submitted (once)."""
        import ray

        if self.connected:
            return ray
        self._thread.join()
        if self.error is not None:
            raise self.error
        if not ray.is_initialized():
            # address None: Ray's own default (RAY_ADDRESS, else a local instance)
            with _driver_task_events_off():
                try:
                    ray.init(address=self.config.ray_address, include_dashboard=False,
                             log_to_driver=True)
                except ConnectionError as exc:  # nothing asked yet: a mistake to name
                    raise no_cluster_error(self.config.ray_address, exc) from None
            self.started_here = True
        self.phases.mark("ray.init")
        self.connected = True
        # one per worker the parts can use at once: past the cluster's CPUs, more warm-ups
        # would only queue (--workers 400 on 100 CPUs)
        cpus = int(ray.cluster_resources().get("CPU", self.tasks))
        self.warm_ups = max(1, min(self.tasks, cpus))
        if self.config.ray_keep_warm_s is not None:
            from ._ray_warm import WarmPool

            self.pool = WarmPool(ray, self.config, self.warm_ups, TASK_RETRIES)
            return ray
        warm = ray.remote(num_cpus=1, max_retries=0)(warm_up)
        self.warm = [warm.remote(self.config) for _ in range(self.warm_ups)]
        return ray

    def ready(self) -> Any:
        """Ray, once the warm-up tasks are done (their workers idle: the parts land there)."""
        ray = self.connect()
        if self.pool is not None:
            self.warm_actors = self.pool.wait_warm(self.WARM_WAIT_S)
        if self.warm:
            ray.wait(self.warm, num_returns=len(self.warm), timeout=self.WARM_WAIT_S)
            self.warm = []  # no reference may outlive ray.shutdown()
        self.phases.mark("warm")
        return ray

    def release(self) -> None:
        """Disconnect on a thread while the driver writes the final manifest (0.25-0.3 s of
        Ray's own, measured). The caller holds no ObjectRef any more: one freed after the
        shutdown would end the process."""
        self.drop_refs()
        if self.started_here and self._closer is None:
            import ray

            self._closer = threading.Thread(target=ray.shutdown, name="ray-shutdown")
            self._closer.start()

    def drop_refs(self) -> None:
        """Free every ObjectRef and actor handle before Ray is shut down."""
        self.warm = []
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def stop(self) -> None:
        """Leave no Ray behind that this run started, also when the driver failed first.
        A failure before connect() (the folder's checks) does not wait for the import."""
        self.drop_refs()
        if self._closer is not None:
            self._closer.join()
        elif self.started_here:
            import ray

            ray.shutdown()


TASK_EVENTS_ENV = "RAY_task_events_report_interval_ms"


@contextlib.contextmanager
def _driver_task_events_off() -> Iterator[None]:
    """The driver's own task events off while Ray reads its config in ``ray.init``.

    Ray's core worker reports task state changes to the GCS for the dashboard and
    ``ray list tasks`` only; 0 turns the reporting off (Ray's ray_config_def.h). Left on,
    the driver's ``ray.shutdown()`` waits a further 0.25 s for that reporter in most runs
    (design 0033). On a cluster the driver joins, the tasks' workers keep reporting: they
    read their own node's settings. A Ray that ``ray.init`` starts for this run (no
    address) inherits the setting; it has no dashboard to show the events. A value the user
    set is kept, and the variable is restored afterwards, so that no process the driver
    starts later inherits it."""
    if TASK_EVENTS_ENV in os.environ:
        yield
        return
    os.environ[TASK_EVENTS_ENV] = "0"
    try:
        yield
    finally:
        os.environ.pop(TASK_EVENTS_ENV, None)


def warm_up(config: RunConfig) -> int:
    """A warm-up task: import what a part's task will use (memgauge, the benchmark's,
    system's and model's modules), in the worker process the part will then run in."""
    from ..registry import lookup
    from ._execute import Runner

    Runner(config)
    for kind, name in (("benchmark", config.bench), ("system", config.system),
                       ("model", config.model.partition(":")[0])):
        lookup(kind, name)
    return os.getpid()


def _task_count(config: RunConfig) -> tuple[int, FieldText | None]:
    """How many tasks (parts) to submit, and why fewer than asked (if so), naming fields."""
    if config.limit is not None and config.workers > 1:
        return 1, FieldText(f"{{workers}} {config.workers} ignored: {{limit}} counts "
                            "questions in file order, so a limited run answers in one Ray "
                            "task", "workers", "limit")
    asked = config.workers  # --workers N: N tasks (parts of the episodes) in flight
    if config.concurrency < asked:  # each task needs a request slot of its own
        return config.concurrency, FieldText(
            f"{asked} Ray tasks reduced to {config.concurrency}: {{concurrency}} "
            f"{config.concurrency} is the total", "concurrency")
    return asked, None


def _drive(runner: Runner, start: RayStart, phases: Phases) -> RunResult:
    from ..models.openai_compat import redact_urls
    from ._execute import RunResult
    from ._parts import hash_inputs, judge_earlier, merge_bench_manifest, merge_cache_stats

    config = runner.config
    n, why = _task_count(config)
    prep = runner.prepare()
    phases.mark("prepared")
    start.connect()  # the warm-up tasks' workers start while the driver sets up
    s = runner.setup(with_cache=False, survey=True)  # describes the run, checks the endpoints
    phases.mark("setup")
    manifest = runner.initial_manifest(s, prep)
    manifest["execution"] = {"executor": "ray", "tasks": n,
                             "ray_address": redact_urls(config.ray_address)}
    run_dir = runner.run_dir
    for k in range(n):
        task_path(run_dir, k).unlink(missing_ok=True)
    hashed: dict[str, Any] = {}
    hasher = threading.Thread(target=hash_inputs, args=(s, hashed), daemon=True)
    result = RunResult(run_dir=run_dir, skipped=len(prep.done_ok), workers=n,
                       total=runner.expected_todo(s.bench, prep))
    if why:
        result.notes.append(why)
    tail = _RecordTail(run_dir)
    ray = start.ready()
    if start.pool is not None:
        manifest["execution"]["keep_warm_s"] = config.ray_keep_warm_s
        manifest["execution"]["warm_actors"] = {
            "slots": start.warm_ups,
            "reused": sum(1 for a in start.warm_actors if a.get("calls", 0) > 1)}
    reports, lost, interrupted = _run_tasks(ray, runner, result, tail, prep.done_ok, n,
                                            hasher, phases, start.pool)
    phases.mark("tasks returned")
    start.task_phases = {k: r.get("phases", []) for k, r in reports.items()}
    start.release()  # nothing below needs Ray
    tail.progress(runner, result)
    for k in range(n):
        task_path(run_dir, k).unlink(missing_ok=True)

    ordered = [reports[k] for k in sorted(reports)]
    failures = [r["error"] for r in ordered if r.get("error")]
    first = [r["first_send_wall"] for r in ordered if r.get("first_send_wall")]
    if first:  # wall clocks: tasks on other nodes have other monotonic clocks
        result.first_request_s = min(first) - (time.time() - (time.perf_counter()
                                                              - prep.t_start))
    nodes = {r["node"] for r in ordered if r.get("node")}
    manifest["execution"]["nodes"] = len(nodes)
    hasher.join(timeout=0 if interrupted else None)
    manifest["packages"] = hashed.get("packages")
    complete = not failures and not lost and not interrupted and len(ordered) == n
    bench_manifest = merge_bench_manifest(hashed.get("manifest"), ordered) if complete else None
    if s.judging is not None and complete:
        asyncio.run(judge_earlier(runner, s, manifest, prep.done_ok))
    runner.finish(manifest, bench_manifest, cache=merge_cache_stats(ordered),
                  stopped=not complete)
    phases.mark("finished")
    result.wall_s = time.perf_counter() - prep.t_start
    if interrupted is not None:
        raise interrupted
    if failures:
        f = failures[0]
        raise MemgaugeError(f["message"]) if f["memgauge"] else \
            RuntimeError(f"a Ray task failed: {f['type']}: {f['message']}\n{f['traceback']}")
    if lost:
        raise RuntimeError(f"{len(lost)} Ray task(s) ended without a result ({'; '.join(lost)});"
                           " what they wrote is kept: rerun the same command to resume")
    return result


def _run_tasks(ray: Any, runner: Runner, result: RunResult, tail: _RecordTail,
               done_ok: frozenset[str], n: int, hasher: threading.Thread, phases: Phases,
               pool: Any = None,
               ) -> tuple[dict[int, dict[str, Any]], list[str], BaseException | None]:
    """Submit the n parts and wait for them: their reports, the ones lost, an interrupt.
    Every ObjectRef is local here, so none is left when Ray is shut down after."""
    config = runner.config
    remote = ray.remote(num_cpus=1, max_retries=TASK_RETRIES,
                        retry_exceptions=False)(answer_part)
    # the ids already done go into the object store once, not pickled into every task
    # (a resumed tier on 400 parts); Ray hands each task the value
    done_ref = ray.put(done_ok)
    # --concurrency is the run's total: each task keeps its share in flight
    if pool is not None:  # --ray-keep-warm: part k on slot actor k % slots, in order
        refs = [pool.submit(_task_config(config, k, n), done_ref, k, n) for k in range(n)]
    else:
        refs = [remote.remote(_task_config(config, k, n), done_ref, k, n) for k in range(n)]
    phases.mark("submitted")
    hasher.start()  # only now: reading and hashing the inputs slowed the workers' start
    reports: dict[int, dict[str, Any]] = {}
    lost: list[str] = []
    interrupted: BaseException | None = None
    pending = dict(zip(refs, range(n), strict=True))
    while pending:
        try:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=_POLL_S)
            for ref in ready:
                k = pending.pop(ref)
                try:
                    reports[k] = ray.get(ref)
                except ray.exceptions.RayError as exc:  # its worker died, retries spent
                    lost.append(f"task {k}: {type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}")
            tail.progress(runner, result)
        except BaseException as exc:  # noqa: BLE001 - Ctrl-C: cancel the tasks, finish
            interrupted = exc
            if pool is not None:
                pool.kill_all()
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            break
    return reports, lost, interrupted


def _task_config(config: RunConfig, k: int, n: int) -> RunConfig:
    share = config.concurrency // n + (1 if k < config.concurrency % n else 0)
    # a task answers in its own process: it must not start Ray or fork again
    return config.replace(concurrency=share, executor="local", ray_address=None,
                          ray_keep_warm_s=None, workers=1, progress=False)


def answer_part(config: RunConfig, done_ok: frozenset[str], k: int, n: int) -> dict[str, Any]:
    """One Ray task: answer part k of n (the body of the remote function)."""
    phases = Phases()
    phases.mark("task start")
    import traceback

    from ..io import set_background_hashing
    from ._execute import Runner, RunResult
    from ._parts import part_stats

    try:
        runner = Runner(config)
        path = task_path(runner.run_dir, k)
        if path.exists():  # a retry: its earlier attempt's records are on disk
            done_ok = done_ok | done_on_disk(runner.run_dir)
        _write_task_file(path, {"pid": os.getpid(), "node": _node_id()})
        set_background_hashing(False)  # the driver hashes the inputs
        phases.mark("task imported")
        setup = runner.setup()
        phases.mark("task setup")
        result = RunResult(run_dir=runner.run_dir)

        async def main() -> float | None:
            try:
                await runner.answer(setup, done_ok, result, part=(k, n))
            finally:
                first = await setup.close()
            return first

        first = asyncio.run(main())
        phases.mark("task answered")
        first_wall = None if first is None else time.time() - (time.monotonic() - first)
        if first_wall is not None:
            phases.marks.append(("task first send", first_wall))
        return {"first_send_wall": first_wall, "cache": setup.cache_summary(),
                "phases": sorted(phases.marks, key=lambda m: m[1]),
                "stats": part_stats(setup), "node": _node_id(),
                "counts": [result.done, result.ok, result.errors]}
    except Exception as exc:  # noqa: BLE001 - reported to the driver, which raises it
        return {"error": {"type": type(exc).__name__, "message": str(exc),
                          "memgauge": isinstance(exc, MemgaugeError),
                          "traceback": traceback.format_exc()}}


def done_on_disk(run_dir: Path) -> frozenset[str]:
    """The question ids answered ok in records.jsonl now (a torn line counts as not done)."""
    from ..runfolder import RECORDS, iter_record_lines

    path = run_dir / RECORDS
    if not path.exists():
        return frozenset()
    return frozenset(obj["question_id"] for _, obj in iter_record_lines(path)
                     if type(obj) is dict and obj.get("status") == "ok"
                     and isinstance(obj.get("question_id"), str))


def _write_task_file(path: Path, info: dict[str, Any]) -> None:
    import orjson

    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(info))
    os.replace(tmp, path)


def _node_id() -> str | None:
    with contextlib.suppress(Exception):
        import ray

        return ray.get_runtime_context().get_node_id()
    return None


class _RecordTail:
    """The driver's progress: the records the tasks append, read from the folder (the only
    state they share on a cluster)."""

    def __init__(self, run_dir: Path) -> None:
        from ..runfolder import RECORDS

        self.path = run_dir / RECORDS
        self.offset = self.path.stat().st_size if self.path.exists() else 0
        self.partial = b""

    def progress(self, runner: Runner, result: RunResult) -> None:
        import orjson

        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return
        if not chunk:
            return
        self.offset += len(chunk)
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        for line in lines:
            with contextlib.suppress(orjson.JSONDecodeError):
                obj = orjson.loads(line)
                result.done += 1
                if type(obj) is dict and obj.get("status") == "ok":
                    result.ok += 1
                else:
                    result.errors += 1
        if lines and runner.on_progress:
            runner.on_progress(result, None)
