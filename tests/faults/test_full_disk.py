"""A full disk while running: records.jsonl keeps whole lines only, the run stops with one
clear error (exit status 2, no traceback), and rerunning once there is room completes it,
every question exactly once (issue 11, item 1; docs/design/0019)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from helpers.datasets import colour_answer, write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge import runfolder as _store
from memgauge.cli import app
from memgauge.runfolder import RECORDS, RecordWriter, StorageError
from memgauge.schema import BenchmarkInfo, Record, Response


class FullDisk:
    """Stands in for ``os`` inside the record store: writes to records.jsonl succeed until
    ``room`` bytes are used, the write that crosses it is short (as write(2) is at the
    edge of a full disk), and every write after that fails with ENOSPC."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.failed_writes = 0

    def __getattr__(self, name: str):
        return getattr(os, name)

    def write(self, fd: int, data) -> int:
        if self.room <= 0:
            self.failed_writes += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = min(len(data), self.room)
        n = os.write(fd, bytes(data[:n]))
        self.room -= n
        return n


def _whole_lines(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"records.jsonl ends in a fragment: {data[-80:]!r}"
    return [orjson.loads(line) for line in data.splitlines()]


def _record(i: int) -> Record:
    return Record(question_id=f"q{i}", episode_id=f"e{i}", benchmark=BenchmarkInfo(name="t"),
                  status="ok", ability="information_extraction", answer_type="free_text",
                  question="q?", gold="x", prediction="x", response=Response(text="x"))


def test_a_failed_write_is_cut_back_to_the_last_whole_line(tmp_path, monkeypatch):
    async def go() -> tuple[StorageError, StorageError]:
        writer = RecordWriter(tmp_path)
        await writer.write(_record(0))
        monkeypatch.setattr(_store, "os", FullDisk(room=40))  # less than one record
        with pytest.raises(StorageError) as first:
            await writer.write(_record(1))
        monkeypatch.setattr(_store, "os", os)  # room again: the writer still refuses
        with pytest.raises(StorageError) as later:
            await writer.write(_record(2))
        await writer.close()
        return first.value, later.value

    first, later = asyncio.run(go())
    assert [r["question_id"] for r in _whole_lines(tmp_path / RECORDS)] == ["q0"]
    assert str(first).startswith(f"no space left on device writing {tmp_path / RECORDS} (")
    assert "bytes free on that disk); free space and rerun the same command to resume" in \
        str(first)
    assert later is first  # one failure stops the writer: nothing lands after a gap


def _quiet(stub: StubServer) -> StubServer:
    """The stub's threads print a traceback when a stopping run drops a connection mid-reply;
    that is the test server's, and CliRunner would mix it into memgauge's output."""
    stub._server.handle_error = lambda request, address: None
    return stub


def _run_args(data: Path, base_url: str, out: Path) -> list[str]:
    return ["run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
            "--model", "openai:stub", "--base-url", base_url, "--out", str(out),
            "--concurrency", "4", "--no-cache"]


def _check_complete(out: Path, n: int) -> None:
    lines = _whole_lines(out / RECORDS)
    ids = [r["question_id"] for r in lines]
    assert sorted(ids) == [f"q{i:03d}" for i in range(n)]  # each exactly once
    assert all(r["status"] == "ok" for r in lines)
    for r in lines:  # colour_answer is wrong for every fifth mug: scores stay right
        i = int(r["question_id"][1:])
        assert r["scores"]["rule"] == (0.0 if i % 5 == 4 else 1.0), r


def test_disk_full_mid_run_stops_cleanly_and_a_rerun_completes(tmp_path, monkeypatch):
    data = write_memlens(tmp_path / "data", 40)
    out = tmp_path / "run"
    disk = FullDisk(room=12_000)  # a few records' worth
    with StubServer(answer=colour_answer) as stub:
        _quiet(stub)
        monkeypatch.setattr(_store, "os", disk)
        res = CliRunner().invoke(app, _run_args(data, stub.base_url, out))
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output
        assert f"no space left on device writing {out / RECORDS}" in res.output
        assert "free space and rerun the same command to resume" in res.output
        assert disk.failed_writes >= 1
        kept = _whole_lines(out / RECORDS)
        assert 0 < len(kept) < 40
        assert json.loads((out / "manifest.json").read_text())["status"]["records"] == len(kept)

        monkeypatch.setattr(_store, "os", os)  # space freed
        asked_before = len(stub.requests)
        res = CliRunner().invoke(app, _run_args(data, stub.base_url, out))
        assert res.exit_code == 0, res.output
    _check_complete(out, 40)
    assert len(stub.requests) - asked_before == 40 - len(kept)  # only what was not done


def test_a_fragment_between_whole_lines_is_dropped_on_resume(tmp_path):
    """A folder damaged by an older writer (a fragment in the middle of the file): report
    names the line and how to repair it; a rerun drops it and asks that question again."""
    data = write_memlens(tmp_path / "data", 6)
    out = tmp_path / "run"
    with StubServer(answer=colour_answer) as stub:
        _quiet(stub)
        assert CliRunner().invoke(app, _run_args(data, stub.base_url, out)).exit_code == 0
        lines = (out / RECORDS).read_bytes().splitlines(keepends=True)
        # what the buffered writer used to leave: the rest of a failed batch's last line,
        # written after the next batch's cut
        (out / RECORDS).write_bytes(b"".join([lines[0], lines[1][70:], *lines[2:]]))
        rep = CliRunner().invoke(app, ["report", str(out)])
        assert rep.exit_code == 2 and "line 2" in rep.output
        assert "rerun the same `memgauge run` command" in rep.output
        res = CliRunner().invoke(app, _run_args(data, stub.base_url, out))
        assert res.exit_code == 0, res.output
        assert "dropped 1 torn line(s) of records.jsonl (line 2)" in res.output
        assert len(stub.requests) == 7  # the torn line's question, asked again
    _check_complete(out, 6)
    assert CliRunner().invoke(app, ["report", str(out)]).exit_code == 0


# -- a real full disk: a small tmpfs, where this machine lets the test mount one ------------

@pytest.fixture
def small_disk(tmp_path):
    mount = shutil.which("mount")
    where = tmp_path / "disk"
    where.mkdir()
    if mount is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    made = subprocess.run([mount, "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(where)],
                          check=False, capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def test_a_real_full_disk(tmp_path, small_disk):
    data = write_memlens(tmp_path / "data", 120)
    out = small_disk / "run"
    with StubServer(answer=colour_answer) as stub:
        _quiet(stub)
        res = CliRunner().invoke(app, _run_args(data, stub.base_url, out))
        assert res.exit_code == 2, res.output
        assert f"no space left on device writing {out}" in res.output
        assert "Traceback" not in res.output
        kept = _whole_lines(out / RECORDS)
        assert len(kept) < 120

        again = CliRunner().invoke(app, _run_args(data, stub.base_url, out))  # still full
        assert again.exit_code == 2 and "no space left on device" in again.output
        assert _whole_lines(out / RECORDS) == kept

        subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
        res = CliRunner().invoke(app, _run_args(data, stub.base_url, out))
        assert res.exit_code == 0, res.output
    _check_complete(out, 120)


def test_a_lock_file_that_cannot_be_written_is_a_storage_error_or_harmless(tmp_path, monkeypatch):
    """Taking the run lock on a full disk: creating the file fails → a StorageError naming
    it (exit 2 in the CLI); writing the holder's details fails → the lock is held anyway."""
    import errno as _errno
    import os as _os

    import pytest as _pytest

    from memgauge.runfolder import StorageError
    from memgauge.runner._lock import RunLock

    real_open, real_pwrite = _os.open, _os.pwrite

    def full_open(path, flags, mode=0o777):
        if str(path).endswith(".lock") and flags & _os.O_CREAT:
            raise OSError(_errno.ENOSPC, "No space left on device")
        return real_open(path, flags, mode)

    monkeypatch.setattr(_os, "open", full_open)
    with _pytest.raises(StorageError, match="no space left on device writing .*\\.lock"):
        RunLock.acquire(tmp_path)
    monkeypatch.setattr(_os, "open", real_open)

    def full_pwrite(fd, data, offset):
        raise OSError(_errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_os, "pwrite", full_pwrite)
    lock = RunLock.acquire(tmp_path)
    monkeypatch.setattr(_os, "pwrite", real_pwrite)
    from memgauge.errors import ConfigError

    with _pytest.raises(ConfigError, match="in use by another memgauge process"):
        RunLock.acquire(tmp_path)  # still held
    lock.release()
