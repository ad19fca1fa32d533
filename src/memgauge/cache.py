"""A content-addressed response cache in SQLite (WAL), shared by model and judge calls.

Keys are sha256 digests of everything that determines a reply (model id, endpoint,
messages with image hashes in place of image bytes, generation settings), so a rerun of any
command makes no new model calls for work already done.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

SCHEMA_VERSION = 1


def default_cache_dir() -> Path:
    env = os.environ.get("MEMGAUGE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memgauge"


def cache_key(payload: Any) -> str:
    """sha256 of a canonical JSON rendering (sorted keys) of ``payload``."""
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


class ResponseCache:
    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path else default_cache_dir() / "responses.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, kind TEXT, "
            "value BLOB NOT NULL, created REAL NOT NULL)")
        self._db.commit()
        self.hits = 0
        self.misses = 0
        self.write_error: str | None = None  # set at the first failed write

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return orjson.loads(row[0])

    def put(self, key: str, value: dict[str, Any], kind: str = "chat") -> None:
        """Store a reply. A cache that cannot be written (a full disk, a read-only folder)
        never costs an answer: the first failure is reported once on stderr, and the run
        goes on without storing more."""
        if self.write_error is not None:
            return
        with self._lock:
            try:
                self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                                 (key, kind, orjson.dumps(value), time.time()))
                self._db.commit()
            except (sqlite3.Error, OSError) as exc:
                self.write_error = f"{type(exc).__name__}: {exc}"
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                print(f"warning: the response cache {self.path} cannot be written "
                      f"({self.write_error}); going on without storing replies",
                      file=sys.stderr, flush=True)

    def close(self) -> None:
        with self._lock:
            self._db.close()
