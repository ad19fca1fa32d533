"""The run folder: ``manifest.json`` plus append-only ``records.jsonl``.

Each finished question is one JSON line, written and fsynced before it is counted. Writes
are group-committed by one writer task (one fsync per batch), so durability does not cap
throughput. A line torn by a crash is dropped when the folder is next opened.

A write that fails (a full disk, a quota, an I/O error) is cut back to the last whole line
and stops the run with a :class:`StorageError` naming the file and the free space left
(docs/design/0019): the file only ever holds whole lines, and rerunning the same command
once there is room resumes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

try:
    import fcntl
except ImportError:  # Windows: one process writes (no --workers there)
    fcntl = None  # type: ignore[assignment]

from ._json_limits import MAX_ITEM_BYTES, load_document
from ._secrets import redact_tree
from .errors import InputError, MemgaugeError
from .schema import Record

MANIFEST = "manifest.json"
RECORDS = "records.jsonl"

_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


class StorageError(MemgaugeError):
    """A run folder's file could not be written (a full disk, a quota, an I/O error). What
    is on disk is whole: rerunning the same command once the cause is fixed resumes."""

    def __init__(self, path: Path, exc: OSError) -> None:
        self.path, self.errno = path, exc.errno
        if exc.errno in _NO_SPACE:
            what = ("disk quota exceeded" if exc.errno != errno.ENOSPC
                    else "no space left on device")
            super().__init__(f"{what} writing {path} ({_free_text(path)} free on that disk); "
                             "free space and rerun the same command to resume")
        else:
            super().__init__(f"cannot write {path} ({exc.strerror or exc}); fix that and "
                             "rerun the same command to resume")


def _free_text(path: Path) -> str:
    try:
        st = os.statvfs(path.parent)
    except (OSError, AttributeError):  # Windows has no statvfs
        return "unknown space"
    free = st.f_bavail * st.f_frsize
    return f"{free:,} bytes"


def _atomic_write(path: Path, chunks: Iterable[bytes]) -> None:
    """Write to a temp file in the same folder, fsync, then rename over ``path``. On a
    failure (a full disk) ``path`` is left as it was and the temp file is removed."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as exc:
        raise StorageError(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise StorageError(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    _atomic_write(path, [data + b"\n"])


def write_manifest(run_dir: str | os.PathLike[str], manifest: dict[str, Any]) -> None:
    """Write ``manifest.json`` with every URL in it redacted (design 0016): whoever adds a
    URL-valued option later cannot leak its password or token through the manifest."""
    write_json_atomic(Path(run_dir) / MANIFEST, redact_tree(manifest))


def iter_record_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(line number, parsed object or None when the line is torn/unparseable). A line over
    ``MAX_ITEM_BYTES`` is refused before it is read whole (docs/design/0017)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror or exc})", file=str(path)) from None
    with f:
        n = 0
        while line := f.readline(MAX_ITEM_BYTES + 1):
            n += 1
            if len(line) > MAX_ITEM_BYTES:
                raise InputError(f"line over {MAX_ITEM_BYTES:,} bytes (refused: is it a run's "
                                 "records file?)", file=str(path), item=f"line {n}")
            if not line.strip():
                continue
            try:
                yield n, orjson.loads(line)
            except orjson.JSONDecodeError:
                yield n, None


def read_records(run_dir: str | os.PathLike[str],
                 torn: list[int] | None = None) -> dict[str, Record]:
    """The latest record per question id. A torn final line (a crash mid-write) is ignored;
    a bad line elsewhere is an error naming the line, unless ``torn`` is given: then a line
    that is not JSON is skipped and its number added to ``torn`` (resume does that: such a
    line is a fragment of a write that failed, and its question was never done)."""
    path = Path(run_dir) / RECORDS
    out: dict[str, Record] = {}
    if not path.exists():
        return out
    lines = list(iter_record_lines(path))
    for i, (n, obj) in enumerate(lines):
        if obj is None:
            if i == len(lines) - 1:
                break  # torn tail from a crash: that question simply is not done
            if torn is not None:
                torn.append(n)
                continue
            raise InputError("unparseable JSON line (a fragment of a failed write?); rerun "
                             "the same `memgauge run` command to drop it and resume",
                             file=str(path), item=f"line {n}")
        try:
            rec = Record.model_validate(obj)
        except Exception as exc:  # noqa: BLE001 - any failure is bad input at this line
            raise InputError(f"not a valid record ({_why(exc)})", file=str(path),
                             item=f"line {n}") from None
        out[rec.question_id] = rec
    return out


def _why(exc: Exception) -> str:
    """A validation failure in a line: the fields and what is wrong with them."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for e in exc.errors()[:3]:
        where = ".".join(str(x) for x in e.get("loc", ())) or "record"
        parts.append(f"{where}: {e.get('msg', '?')}")
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


GAMES_BENCHMARK = "benchmark.json"  # what `memgauge generate games` writes (no manifest.json)


def is_benchmark_manifest(obj: Any) -> bool:
    """A ``manifest.json`` that ``memgauge generate`` wrote (a benchmark's), not a run's."""
    return isinstance(obj, dict) and "generator_version" in obj and "config_hash" not in obj


def holds_benchmark(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` is a generated benchmark (synth's manifest.json, or a games
    benchmark's benchmark.json) rather than a run folder."""
    path = Path(folder)
    if (path / MANIFEST).is_file():
        try:
            head = (path / MANIFEST).read_bytes()
            return is_benchmark_manifest(orjson.loads(head))
        except (OSError, orjson.JSONDecodeError):
            return False
    return (path / GAMES_BENCHMARK).is_file()


def benchmark_not_run(folder: str | os.PathLike[str]) -> InputError:
    """The error of a command that reads a run folder and was given a benchmark."""
    return InputError(f"{folder} is a benchmark folder (written by `memgauge generate`), not a "
                      f"run folder: evaluate it with `memgauge run --data {folder} ... --out "
                      "RUN_DIR`, then pass RUN_DIR here")


def load_manifest(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    path = Path(run_dir) / MANIFEST
    if not path.exists():
        if (Path(run_dir) / GAMES_BENCHMARK).is_file():
            raise benchmark_not_run(run_dir)
        return None
    # a folder written before redaction covered every URL still shows none in a report
    return redact_tree(read_manifest(path))  # checks its shape: docs/design/0017


def rewrite_records(run_dir: str | os.PathLike[str], records: Iterable[Record]) -> None:
    """Atomically replace records.jsonl (used to compact: one line per question)."""
    _atomic_write(Path(run_dir) / RECORDS,
                  (rec.model_dump_json().encode() + b"\n" for rec in records))


def count_lines(run_dir: str | os.PathLike[str]) -> int:
    path = Path(run_dir) / RECORDS
    if not path.exists():
        return 0
    return sum(1 for _, obj in iter_record_lines(path) if obj is not None)


def _drop_torn_tail(fd: int) -> None:
    """Cut a partial last line off the file (under the writers' lock). Writers hold the lock
    until their batch is whole, so a file that does not end in a line break lost a writer
    mid-batch (a worker killed on its own): its fragment never counted as done, and
    appending after it would leave an unreadable line in the middle of the file."""
    if not hasattr(os, "pread"):  # Windows: one writer, nothing to cut
        return
    size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - (1 << 16))
        i = os.pread(fd, end - start, start).rfind(b"\n")
        if i >= 0:
            os.ftruncate(fd, start + i + 1)
            return
        end = start
    os.ftruncate(fd, 0)


def _write_all(fd: int, data: bytes) -> None:
    """``write(2)`` until all of ``data`` is written (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class RecordWriter:
    """Appends records from many coroutines; each ``await write(rec)`` returns once the line
    is on disk (written, flushed, fsynced).

    A batch is appended with ``write(2)`` on an ``O_APPEND`` descriptor, not through a
    buffered file: a buffered file that fails half-way keeps the rest of the batch in its
    buffer and writes it after the next batch's cut, leaving a fragment between whole lines.
    A failed write is cut back to where the batch began, and every later write raises the
    same :class:`StorageError`: the run stops."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / RECORDS
        try:  # read too: the torn-tail check looks at the file's end
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(self.path, exc) from None
        self._queue: asyncio.Queue[tuple[bytes, asyncio.Future[None]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.written = 0
        self.failure: StorageError | None = None  # set once a write failed: the run stops

    def _write_batch(self, lines: list[bytes]) -> None:
        # Worker processes append to the same file: a batch goes in whole, under a lock.
        fd = self._fd
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            _drop_torn_tail(fd)
            start = os.fstat(fd).st_size
            try:
                _write_all(fd, b"".join(lines))
            except OSError as exc:
                with contextlib.suppress(OSError):  # cannot fail on a full disk (it frees)
                    os.ftruncate(fd, start)
                raise StorageError(self.path, exc) from None
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
        try:
            os.fsync(fd)
        except OSError as exc:  # the lines are whole; whether they are durable is unknown
            raise StorageError(self.path, exc) from None

    async def _loop(self) -> None:
        while True:
            line, fut = await self._queue.get()
            batch = [(line, fut)]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            last = any(b is None for b, _ in batch)  # close() asked to finish
            batch = [(b, f) for b, f in batch if b is not None]
            if batch:
                try:
                    if self.failure is not None:  # nothing more after a failed write
                        raise self.failure
                    await asyncio.to_thread(self._write_batch, [b for b, _ in batch])
                except Exception as exc:  # noqa: BLE001 - disk full etc.: every waiter sees it
                    if isinstance(exc, StorageError) and self.failure is None:
                        self.failure = exc
                    for _, f in batch:
                        if not f.done():
                            f.set_exception(exc)
                    batch = []
                self.written += len(batch)
                for _, f in batch:
                    if not f.done():
                        f.set_result(None)
            if last:
                return

    async def write(self, record: Record) -> None:
        if self.failure is not None:
            raise self.failure
        if self._task is None:
            self._task = asyncio.create_task(self._loop())
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._queue.put((record.model_dump_json().encode() + b"\n", fut))
        await fut

    async def close(self) -> None:
        """Write every record handed over so far, then close. A record whose writer was
        cancelled while waiting (a run stopping) is still written: it was answered."""
        if self._task is not None and not self._task.done():
            self._queue.put_nowait((None, None))  # type: ignore[arg-type]
            try:
                await asyncio.shield(self._task)
            except asyncio.CancelledError:  # interrupted again: stop waiting
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


# What report, compare, merge, audit, score and a resumed run read from a manifest: each
# must have its type, so a hand-edited or foreign manifest is refused here by name, not
# met as a TypeError deep inside one of them.
_OBJECTS = ("benchmark", "status", "judges", "judge", "model", "system", "token_counter",
            "image_policy", "seeds", "cache")
_STRINGS = ("config_hash", "memgauge_version", "git_sha", "created", "updated", "python")
_IDENTITY_STRINGS = ("bench", "model", "system", "tier", "context_mode")


def read_manifest(path: str | Path) -> dict[str, Any]:
    """A run's ``manifest.json``, parsed within bounds and checked to have the shape the
    commands read; an :class:`InputError` naming the file and the field if not."""
    file = str(path)
    obj = load_document(path, what="a run manifest")
    if not isinstance(obj, dict):
        raise _expected(file, None, "a JSON object", obj)
    config = obj.get("config")
    if not isinstance(config, dict):
        raise _expected(file, "config", "an object", config)
    identity = config.get("identity")
    if not isinstance(identity, dict) and is_benchmark_manifest(obj):
        raise benchmark_not_run(Path(path).parent)
    if not isinstance(identity, dict):
        raise _expected(file, "config.identity", "an object", identity)
    _check_identity(identity, file)
    _check_sections(obj, file)
    return obj


def _expected(file: str, field: str | None, want: str, value: Any) -> InputError:
    got = "null" if value is None else type(value).__name__
    return InputError(f"expected {want}, got {got}", file=file, field=field)


def _check_identity(identity: dict[str, Any], file: str) -> None:
    """``config.identity``: its names are strings, its shard ``[i, N]``, its system
    options an object."""
    for key in _IDENTITY_STRINGS:
        if identity.get(key) is not None and not isinstance(identity[key], str):
            raise _expected(file, f"config.identity.{key}", "a string", identity[key])
    shard = identity.get("shard")
    if shard is not None and not (isinstance(shard, list) and len(shard) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in shard)
            and 0 <= shard[0] < shard[1]):
        raise InputError(f"expected [i, N] with 0 <= i < N, got {str(shard)[:80]}", file=file,
                         field="config.identity.shard")
    options = identity.get("system_options")
    if options is not None and not isinstance(options, dict):
        raise _expected(file, "config.identity.system_options", "an object", options)


def _check_sections(obj: dict[str, Any], file: str) -> None:
    """The top-level sections: each of its type when present; the benchmark's input
    digests strings; each judge an object."""
    for keys, want, kind in ((_OBJECTS, "an object", dict), (_STRINGS, "a string", str),
                             (("invocations", "merged_from"), "a list", list)):
        for key in keys:
            if obj.get(key) is not None and not isinstance(obj[key], kind):
                raise _expected(file, key, want, obj[key])
    inputs = (obj.get("benchmark") or {}).get("inputs")
    if inputs is not None:
        if not isinstance(inputs, dict):
            raise _expected(file, "benchmark.inputs", "an object", inputs)
        for name, digest in inputs.items():
            if digest is not None and not isinstance(digest, str):
                raise _expected(file, f"benchmark.inputs.{name}", "a sha256 string", digest)
    for name, judge in (obj.get("judges") or {}).items():
        if not isinstance(judge, dict):
            raise _expected(file, f"judges.{name}", "an object", judge)
