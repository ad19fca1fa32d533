"""The run folder: ``manifest.json`` plus append-only ``records.jsonl``.

Each finished question is one JSON line, written and fsynced before it is counted. Writes
are group-committed by one writer task (one fsync per batch), so durability does not cap
throughput. A line torn by a crash is dropped when the folder is next opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

try:
    import fcntl
except ImportError:  # Windows: one process writes (no --workers there)
    fcntl = None  # type: ignore[assignment]

from ..errors import InputError
from ..schema import Record

MANIFEST = "manifest.json"
RECORDS = "records.jsonl"


def _atomic_write(path: Path, chunks: Iterable[bytes]) -> None:
    """Write to a temp file in the same folder, fsync, then rename over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    _atomic_write(path, [data + b"\n"])


def iter_record_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(line number, parsed object or None when the line is torn/unparseable)."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, orjson.loads(line)
            except orjson.JSONDecodeError:
                yield n, None


def read_records(run_dir: str | os.PathLike[str]) -> dict[str, Record]:
    """The latest record per question id. A torn final line (a crash mid-write) is ignored;
    a bad line elsewhere is an error naming the line."""
    path = Path(run_dir) / RECORDS
    out: dict[str, Record] = {}
    if not path.exists():
        return out
    lines = list(iter_record_lines(path))
    for i, (n, obj) in enumerate(lines):
        if obj is None:
            if i == len(lines) - 1:
                break  # torn tail from a crash: that question simply is not done
            raise InputError("unparseable JSON line", file=str(path), item=f"line {n}")
        try:
            rec = Record.model_validate(obj)
        except Exception as exc:  # noqa: BLE001 - any failure is bad input at this line
            raise InputError(f"not a valid record ({_why(exc)})", file=str(path),
                             item=f"line {n}") from None
        out[rec.question_id] = rec
    return out


def _why(exc: Exception) -> str:
    """A validation failure in a line: the fields and what is wrong with them."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for e in errors()[:3]:
        where = ".".join(str(x) for x in e.get("loc", ())) or "record"
        parts.append(f"{where}: {e.get('msg', '?')}")
    more = len(errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def load_manifest(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    path = Path(run_dir) / MANIFEST
    if not path.exists():
        return None
    return orjson.loads(path.read_bytes())


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


class RecordWriter:
    """Appends records from many coroutines; each ``await write(rec)`` returns once the line
    is on disk (written, flushed, fsynced)."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / RECORDS
        self._f = open(self.path, "ab+")  # noqa: SIM115 - closed in close(); + to look at its end
        self._queue: asyncio.Queue[tuple[bytes, asyncio.Future[None]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.written = 0

    def _write_batch(self, lines: list[bytes]) -> None:
        # Worker processes append to the same file: a batch goes in whole, under a lock.
        fd = self._f.fileno()
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            _drop_torn_tail(fd)
            self._f.write(b"".join(lines))
            self._f.flush()
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
        os.fsync(fd)

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
                    await asyncio.to_thread(self._write_batch, [b for b, _ in batch])
                except Exception as exc:  # noqa: BLE001 - disk full etc.: every waiter sees it
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
        self._f.close()
