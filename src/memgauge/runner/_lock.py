"""One process at a time per run folder.

Two ``memgauge run`` on one ``--out`` would each compact and append records.jsonl and
overwrite the manifest, losing acknowledged answers. The first takes an exclusive
``flock`` on ``<run>/.lock``; a second is refused at start with the holder's pid, host and
start time. The kernel drops the lock when its process ends however it ends (kill -9
included), so a lock file left behind by a dead process is simply taken over. Worker
processes inherit the parent's lock.

Example::

    lock = RunLock.acquire(run_dir)   # ConfigError if another process holds it
    ...
    lock.release()
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path

from ..errors import ConfigError
from ..runfolder import StorageError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; runs are not guarded there
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".lock"


class RunLock:
    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path

    @classmethod
    def acquire(cls, run_dir: Path) -> RunLock:
        path = Path(run_dir) / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a full disk (no inode left), a read-only folder

            raise StorageError(path, exc) from None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise ConfigError(f"{run_dir} is in use by another memgauge process "
                                  f"({holder}); wait for it to finish or use another --out "
                                  "folder") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        # Who holds it is a courtesy for the refusal message: on a full disk the lock is held
        # all the same, and the run's own writes report the disk.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        return cls(fd, path)

    def release(self) -> None:
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing drops the flock (a forked worker's copy does not matter then)


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "its pid is not recorded yet"
