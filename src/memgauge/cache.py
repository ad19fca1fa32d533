"""A content-addressed response cache in SQLite (WAL), shared by model and judge calls.

Keys are sha256 digests of everything that determines a reply (model id, endpoint,
messages with image hashes in place of image bytes, generation settings), so a rerun of any
command makes no new model calls for work already done.

Every process that has the cache open holds a shared ``flock`` on ``<cache>.lock``;
``memgauge cache clear|prune`` take it exclusively and refuse while a run holds it
(design 0018).

Concurrent misses of one key are single-flight (:meth:`ResponseCache.single_flight`): the
first caller sends the request, the others, in this process or in another one using the
same file, wait for its reply; the lease is a POSIX record lock the kernel drops when its
holder dies (design 0018, 2026-12-03).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .errors import ConfigError, InputError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; clear/prune are not guarded there
    fcntl = None  # type: ignore[assignment]

SCHEMA_VERSION = 1
CACHE_FILE = "responses.sqlite"
COLUMNS = ("key", "kind", "value", "created")
# What each ``kind`` holds. Before design 0018 the judge's replies were stored as "chat" too.
KINDS = {"chat": "model answers", "judge": "judge replies"}
_SQLITE_MAGIC = b"SQLite format 3\x00"


def default_cache_dir() -> Path:
    env = os.environ.get("MEMGAUGE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memgauge"


def resolve_cache_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The cache file a command uses: ``--cache-path`` when given, else
    ``responses.sqlite`` in :func:`default_cache_dir`."""
    return Path(path) if path else default_cache_dir() / CACHE_FILE


def cache_key(payload: Any) -> str:
    """sha256 of a canonical JSON rendering (sorted keys) of ``payload``."""
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


# --- who used the cache: per judged record, across concurrent tasks ------------------------


@dataclass
class CacheUse:
    """Lookups made inside one :func:`counting_cache_use` block."""

    hits: int = 0
    misses: int = 0


_USE: ContextVar[CacheUse | None] = ContextVar("memgauge_cache_use", default=None)


@contextlib.contextmanager
def counting_cache_use() -> Iterator[CacheUse]:
    """Count the cache lookups made by the code inside (in this task, and in tasks it
    starts): how a judged record learns whether its verdict came from the cache while many
    records are judged at once over one shared cache."""
    use = CacheUse()
    token = _USE.set(use)
    try:
        yield use
    finally:
        _USE.reset(token)


# --- the cache a run reads and writes -----------------------------------------------------


def _check_is_cache(db: sqlite3.Connection, path: Path, *, empty_ok: bool) -> None:
    """A file that is not a memgauge cache is refused, naming it, before anything is written
    into it (a mistyped ``--cache-path`` must not add a table to someone's database)."""
    try:
        tables = {name: sql for name, sql in db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table'")}
        if "responses" not in tables:
            if empty_ok and not tables:
                return
            raise InputError("is an SQLite database but not a memgauge response cache (no "
                             "'responses' table); pass another --cache-path", file=str(path))
        columns = tuple(row[1] for row in db.execute("PRAGMA table_info(responses)"))
    except sqlite3.DatabaseError as exc:
        raise InputError(f"is not a memgauge response cache ({exc}); pass another "
                         "--cache-path, or remove the file", file=str(path)) from None
    if columns != COLUMNS:
        raise InputError(f"has a 'responses' table with columns {', '.join(columns)}, not "
                         f"{', '.join(COLUMNS)}: not a memgauge response cache", file=str(path))


def _check_header(path: Path) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except IsADirectoryError:
        raise InputError("is a folder, not a response cache file", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc}", file=str(path)) from None
    if head != _SQLITE_MAGIC:
        what = "is empty" if not head else "is not an SQLite database"
        raise InputError(f"{what}: not a memgauge response cache", file=str(path))


class _UseLock:
    """A shared flock on ``<cache>.lock`` while a process has the cache open."""

    def __init__(self, path: Path, exclusive: bool) -> None:
        self.fd = -1
        if fcntl is None:
            return
        try:
            self.fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:  # a read-only folder: the cache cannot be written there either
            return
        try:
            fcntl.flock(self.fd, (fcntl.LOCK_EX | fcntl.LOCK_NB) if exclusive else fcntl.LOCK_SH)
        except BlockingIOError:
            self.release()
            raise ConfigError(f"the response cache {path} is in use by a running memgauge "
                              "process (run, score, generate); wait for it to finish, then "
                              "try again") from None

    def release(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


# --- single flight: one request per key in flight, across tasks, threads and processes ------

# How long a waiter sleeps between looks at the cache and at the lease another process
# holds: from the first to the last, doubling (a reply takes far longer than the first).
_POLL_FIRST_S = 0.005
_POLL_MAX_S = 0.05


@dataclass
class _Flight:
    """A key being fetched in this process: the waiters to wake when it is done."""

    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=list)


_FLIGHTS: dict[tuple[str, str], _Flight] = {}  # (cache file, key) -> its flight
_FLIGHTS_LOCK = threading.Lock()
# One descriptor per lease file for the process's lifetime: closing any descriptor of a file
# drops every POSIX lock the process holds on it, so none is ever closed while in use.
_LEASE_FDS: dict[str, int] = {}


def _forget_flights_in_child() -> None:
    # A forked worker inherits the parent's table, but none of its tasks or leases.
    global _FLIGHTS_LOCK
    _FLIGHTS.clear()
    _FLIGHTS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_flights_in_child)


def _lease_fd(path: Path) -> int:
    name = f"{path}.flight"
    with _FLIGHTS_LOCK:
        fd = _LEASE_FDS.get(name)
        if fd is None:
            fd = _LEASE_FDS[name] = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
        return fd


class _Lease:
    """A byte of ``<cache>.flight`` locked (``fcntl.lockf``) while this process fetches a
    key: other processes wait on it; the kernel releases it if this process dies. The byte
    is the key's hash over 2**48 offsets: two keys sharing one only wait for each other,
    and only across processes."""

    def __init__(self, path: Path, key: str) -> None:
        self.offset = int.from_bytes(hashlib.sha256(key.encode()).digest()[:6], "big")
        self.fd = -1
        if fcntl is None:  # Windows: single-flight within the process only
            return
        try:
            self.fd = _lease_fd(path)
        except OSError:  # a read-only folder: no lease, as the cache cannot be written
            self.fd = -1

    def try_take(self) -> bool:
        if self.fd < 0 or fcntl is None:  # no lease taken (fcntl is there whenever one is)
            return True
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, self.offset)
        except OSError:  # held by another process (EAGAIN / EACCES)
            return False
        return True

    def release(self) -> None:
        if self.fd >= 0 and fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, self.offset)


def _wake(flight: _Flight) -> None:
    for loop, future in flight.waiters:
        def done(f: asyncio.Future[None] = future) -> None:
            if not f.done():
                f.set_result(None)

        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there
            loop.call_soon_threadsafe(done)


class ResponseCache:
    def __init__(self, path: str | os.PathLike[str] | None = None, kind: str = "chat") -> None:
        self.path = resolve_cache_path(path)
        self.kind = kind
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_file() and self.path.stat().st_size:  # an empty file becomes one
            _check_header(self.path)
        self._lock = threading.Lock()
        self._use_lock = _UseLock(self.path, exclusive=False)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            _check_is_cache(self._db, self.path, empty_ok=True)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, kind TEXT, "
                "value BLOB NOT NULL, created REAL NOT NULL)")
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            self._use_lock.release()
            raise InputError(f"cannot be opened as the response cache ({exc})",
                             file=str(self.path)) from None
        except BaseException:
            self._use_lock.release()
            raise
        self._owner = True
        self._views: list[ResponseCache] = []
        self.hits = 0
        self.misses = 0
        self.write_error: str | None = None  # set at the first failed write

    def for_kind(self, kind: str) -> ResponseCache:
        """The same cache (one connection) storing under another ``kind``, with counts of
        its own: the judge's view of a run's cache."""
        view = object.__new__(ResponseCache)
        view.__dict__.update(self.__dict__)
        view.kind, view.hits, view.misses, view._owner, view._views = kind, 0, 0, False, []
        self._views.append(view)
        return view

    def counts(self) -> tuple[int, int]:
        """(hits, misses) of this process, its views (the judge's) included."""
        return (self.hits + sum(v.hits for v in self._views),
                self.misses + sum(v.misses for v in self._views))

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._peek(key)
        self._count(hit=value is not None)
        return value

    def _peek(self, key: str) -> dict[str, Any] | None:
        """The stored reply, counting nothing."""
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else orjson.loads(row[0])

    def _count(self, *, hit: bool) -> None:
        use = _USE.get()
        if hit:
            self.hits += 1
            if use is not None:
                use.hits += 1
        else:
            self.misses += 1
            if use is not None:
                use.misses += 1

    @contextlib.asynccontextmanager
    async def single_flight(self, key: str) -> AsyncIterator[dict[str, Any] | None]:
        """The stored reply for ``key``, or ``None``: then the caller is the one fetching it
        and should :meth:`put` it before leaving the block. While it does, other callers
        of the same key (tasks of any event loop in this process, or other processes on
        this file) wait, then get the stored reply. A fetch that fails stores nothing: the
        next waiter fetches in turn. Counted as one lookup, a hit or a miss."""
        hit = self._peek(key)
        if hit is not None:
            self._count(hit=True)
            yield hit
            return
        name = (str(self.path), key)
        loop = asyncio.get_running_loop()
        while True:  # until the reply is stored, or this caller is the one to fetch it
            with _FLIGHTS_LOCK:
                flight = _FLIGHTS.get(name)
                if flight is None:
                    _FLIGHTS[name] = flight = _Flight()
                    break
                waiting: asyncio.Future[None] = loop.create_future()
                flight.waiters.append((loop, waiting))
            await waiting
            hit = self._peek(key)
            if hit is not None:
                self._count(hit=True)
                yield hit
                return
        lease = _Lease(self.path, key)
        try:
            hit = await self._take_lease(lease, key)
            if hit is not None:
                self._count(hit=True)
                yield hit
                return
            try:
                hit = self._peek(key)  # stored by another process just before the lease
                self._count(hit=hit is not None)
                yield hit
            finally:
                lease.release()
        finally:
            with _FLIGHTS_LOCK:
                if _FLIGHTS.get(name) is flight:
                    del _FLIGHTS[name]
            _wake(flight)

    async def _take_lease(self, lease: _Lease, key: str) -> dict[str, Any] | None:
        """Wait for the lease on ``key``; ``None`` once held, or the reply if the process
        holding it stored one meanwhile (the lease is then not taken)."""
        pause = _POLL_FIRST_S
        while not lease.try_take():
            hit = self._peek(key)
            if hit is not None:
                return hit
            await asyncio.sleep(pause)
            pause = min(_POLL_MAX_S, pause * 2)
        return None

    def put(self, key: str, value: dict[str, Any], kind: str | None = None) -> None:
        """Store a reply. A cache that cannot be written (a full disk, a read-only folder)
        never costs an answer: the first failure is reported once on stderr, and the run
        goes on without storing more."""
        if self.write_error is not None:
            return
        with self._lock:
            try:
                self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                                 (key, kind or self.kind, orjson.dumps(value), time.time()))
                self._db.commit()
            except (sqlite3.Error, OSError) as exc:
                self.write_error = f"{type(exc).__name__}: {exc}"
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                print(f"warning: the response cache {self.path} cannot be written "
                      f"({self.write_error}); going on without storing replies",
                      file=sys.stderr, flush=True)

    def close(self) -> None:
        if not self._owner:  # a view: the cache it shares closes the connection
            return
        with self._lock:
            self._db.close()
        self._use_lock.release()


# --- inspecting and trimming the cache file (memgauge cache info|clear|prune) ---------------


@dataclass(frozen=True)
class CacheInfo:
    path: Path
    exists: bool
    database_bytes: int = 0
    wal_bytes: int = 0  # the write-ahead log beside it (-wal)
    entries: dict[str, int] = field(default_factory=dict)  # by kind
    value_bytes: int = 0  # the stored replies themselves
    oldest: float | None = None  # unix time an entry was written
    newest: float | None = None
    in_use: bool | None = None  # a process has it open (None: cannot tell on this platform)

    @property
    def bytes_on_disk(self) -> int:
        return self.database_bytes + self.wal_bytes

    @property
    def n_entries(self) -> int:
        return sum(self.entries.values())

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "exists": self.exists,
                "bytes_on_disk": self.bytes_on_disk, "database_bytes": self.database_bytes,
                "wal_bytes": self.wal_bytes, "entries": self.n_entries,
                "entries_by_kind": dict(self.entries), "value_bytes": self.value_bytes,
                "oldest": self.oldest, "newest": self.newest, "in_use": self.in_use}


@dataclass(frozen=True)
class Removed:
    """What :func:`clear_cache` or :func:`prune_cache` took out."""

    entries: dict[str, int]  # by kind
    bytes_before: int
    bytes_after: int
    kept: int
    note: str | None = None  # e.g. a size limit below what an empty cache takes

    @property
    def n_entries(self) -> int:
        return sum(self.entries.values())

    def to_dict(self) -> dict[str, Any]:
        return {"removed": self.n_entries, "removed_by_kind": dict(self.entries),
                "kept": self.kept, "bytes_before": self.bytes_before,
                "bytes_after": self.bytes_after, "note": self.note}


def _disk_bytes(path: Path) -> tuple[int, int]:
    def size(p: Path) -> int:
        try:
            return p.stat().st_size
        except OSError:
            return 0

    # -shm (SQLite's shared-memory index, 32 KB while open, gone when the last connection
    # closes) is left out: it is not data, and counting it would make prune miss its target.
    return size(path), size(Path(f"{path}-wal"))


def _open_existing(path: Path) -> sqlite3.Connection:
    _check_header(path)
    try:
        db = sqlite3.connect(path, timeout=30)
    except sqlite3.Error as exc:
        raise InputError(f"cannot be opened ({exc})", file=str(path)) from None
    try:
        _check_is_cache(db, path, empty_ok=False)
    except BaseException:
        db.close()
        raise
    return db


def _in_use(path: Path) -> bool | None:
    if fcntl is None:
        return None
    try:
        _UseLock(path, exclusive=True).release()
    except ConfigError:
        return True
    return False


def inspect_cache(path: Path) -> CacheInfo:
    """Where the cache is and what it holds; never creates it."""
    if not path.exists():
        return CacheInfo(path=path, exists=False)
    db = _open_existing(path)
    try:
        entries = dict(db.execute("SELECT COALESCE(kind, '?'), COUNT(*) FROM responses "
                                  "GROUP BY kind ORDER BY kind").fetchall())
        value_bytes, oldest, newest = db.execute(
            "SELECT COALESCE(SUM(LENGTH(value)), 0), MIN(created), MAX(created) "
            "FROM responses").fetchone()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"cannot be read as a memgauge response cache ({exc})",
                         file=str(path)) from None
    finally:
        db.close()
    database, wal = _disk_bytes(path)
    return CacheInfo(path=path, exists=True, database_bytes=database, wal_bytes=wal,
                     entries=entries, value_bytes=value_bytes, oldest=oldest, newest=newest,
                     in_use=_in_use(path))


# What one row costs in the file beyond its reply, roughly (the key is stored twice: in the
# row and in the primary-key index; plus cell headers): only used to guess a first cut.
_ROW_OVERHEAD = 48
_MAX_ROUNDS = 5


def _row_cost_sql() -> str:
    return f"2 * LENGTH(key) + LENGTH(value) + COALESCE(LENGTH(kind), 0) + {_ROW_OVERHEAD}"


def _kinds(db: sqlite3.Connection, where: str, args: tuple[Any, ...]) -> dict[str, int]:
    return dict(db.execute(f"SELECT COALESCE(kind, '?'), COUNT(*) FROM responses WHERE {where} "
                           "GROUP BY kind", args).fetchall())


def _merge(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in sorted({*a, *b})}


def _compact(db: sqlite3.Connection) -> None:
    db.commit()
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def clear_cache(path: Path) -> Removed:
    """Remove every entry (refused while a process has the cache open)."""
    return prune_cache(path, clear=True)


def prune_cache(path: Path, *, older_than_s: float | None = None, max_bytes: int | None = None,
                clear: bool = False, now: float | None = None) -> Removed:
    """Remove entries written more than ``older_than_s`` seconds ago, then the oldest until
    the file takes at most ``max_bytes``; VACUUM. Refused (:class:`ConfigError`) while a
    process has the cache open."""
    if not path.exists():
        return Removed(entries={}, bytes_before=0, bytes_after=0, kept=0)
    db = _open_existing(path)
    lock = None
    try:
        lock = _UseLock(path, exclusive=True)
        before = sum(_disk_bytes(path))
        removed: dict[str, int] = {}
        if clear:
            removed = _kinds(db, "1", ())
            db.execute("DELETE FROM responses")
        if older_than_s is not None:
            cutoff = (time.time() if now is None else now) - older_than_s
            removed = _merge(removed, _kinds(db, "created < ?", (cutoff,)))
            db.execute("DELETE FROM responses WHERE created < ?", (cutoff,))
        _compact(db)
        note = None
        if max_bytes is not None:
            removed, note = _prune_to_size(db, path, max_bytes, removed)
        kept = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise InputError(f"cannot be pruned ({exc})", file=str(path)) from None
    finally:
        db.close()
        if lock is not None:
            lock.release()
    return Removed(entries=removed, bytes_before=before, bytes_after=sum(_disk_bytes(path)),
                   kept=kept, note=note)


def _prune_to_size(db: sqlite3.Connection, path: Path, max_bytes: int,
                   removed: dict[str, int]) -> tuple[dict[str, int], str | None]:
    """Drop the oldest rows until the (vacuumed) file fits: the first cut is guessed from
    the rows' sizes scaled to the pages they use; a guess that leaves the file too big is
    followed by a smaller one, at most a few times."""
    cost = _row_cost_sql()
    by_total = (f"rowid IN (SELECT rowid FROM (SELECT rowid, SUM({cost}) OVER (ORDER BY "
                "created DESC, rowid DESC) AS total FROM responses) WHERE total > ?)")
    oldest = "rowid = (SELECT rowid FROM responses ORDER BY created, rowid LIMIT ?)"
    for _ in range(_MAX_ROUNDS):
        size = sum(_disk_bytes(path))
        if size <= max_bytes:
            return removed, None
        rows_total = db.execute(f"SELECT COALESCE(SUM({cost}), 0) FROM responses").fetchone()[0]
        if not rows_total:
            break
        empty = 4 * db.execute("PRAGMA page_size").fetchone()[0]  # header, schema, roots
        where, arg = by_total, max(0, max_bytes - empty) * rows_total / max(1, size - empty)
        gone = _kinds(db, where, (arg,))
        if not gone:  # the guess keeps everything: take the oldest row at least
            where, arg = oldest, 1
            gone = _kinds(db, where, (arg,))
        removed = _merge(removed, gone)
        db.execute(f"DELETE FROM responses WHERE {where}", (arg,))
        _compact(db)
    size = sum(_disk_bytes(path))
    if size > max_bytes:
        left = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        why = ("an empty cache file takes that much" if not left
               else f"{left} entries are left after {_MAX_ROUNDS} rounds; run prune again")
        return removed, f"the file still takes {size:,} bytes, over {max_bytes:,}: {why}"
    return removed, None
