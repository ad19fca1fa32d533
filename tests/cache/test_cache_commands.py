"""memgauge cache info|clear|prune against real cache files (design 0018)."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from helpers.datasets import write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cache import ResponseCache, default_cache_dir
from memgauge.cli import app

cli = CliRunner()
DAY = 86400


def _fill(path, n, *, value_bytes=100, kind="chat", start=None):
    """``n`` entries, one second apart in age (the first oldest)."""
    cache = ResponseCache(path)
    try:
        for i in range(n):
            cache.put(f"{kind}-{i:05d}", {"text": "x" * value_bytes}, kind=kind)
    finally:
        cache.close()
    if start is not None:
        with sqlite3.connect(path) as db:
            db.execute("UPDATE responses SET created = ? + CAST(SUBSTR(key, -5) AS REAL) "
                       "WHERE kind = ?", (start, kind))


def _rows(path, where="1"):
    with sqlite3.connect(path) as db:
        return db.execute(f"SELECT COUNT(*) FROM responses WHERE {where}").fetchone()[0]


def _info(path):
    res = cli.invoke(app, ["cache", "info", "--cache-path", str(path), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_info_numbers_are_the_databases(tmp_path):
    path = tmp_path / "c.sqlite"
    _fill(path, 7, kind="chat", start=time.time() - 3 * DAY)
    _fill(path, 3, kind="judge", value_bytes=40)
    info = _info(path)
    with sqlite3.connect(path) as db:
        by_kind = dict(db.execute("SELECT kind, COUNT(*) FROM responses GROUP BY kind"))
        oldest, newest, stored = db.execute(
            "SELECT MIN(created), MAX(created), SUM(LENGTH(value)) FROM responses").fetchone()
    assert info["entries_by_kind"] == by_kind == {"chat": 7, "judge": 3}
    assert info["entries"] == 10
    assert (info["oldest"], info["newest"], info["value_bytes"]) == (oldest, newest, stored)
    assert info["database_bytes"] == path.stat().st_size and info["in_use"] is False
    text = cli.invoke(app, ["cache", "info", "--cache-path", str(path)]).output
    assert str(path) in text and "(--cache-path)" in text
    assert "7 model answers (chat), 3 judge replies (judge)" in text


def test_info_reads_the_cache_a_run_uses_from_the_environment(tmp_path):
    data = write_memlens(tmp_path, 3)
    with StubServer(answer=lambda body: "red") as stub:
        ran = cli.invoke(app, ["run", "--bench", "memlens", "--data", str(data), "--image-dir",
                               str(tmp_path), "--model", "openai:m", "--base-url",
                               stub.base_url, "--context-mode", "text", "--out",
                               str(tmp_path / "run")])
    assert ran.exit_code == 0, ran.output
    where = default_cache_dir() / "responses.sqlite"  # MEMGAUGE_CACHE_DIR (tests/conftest.py)
    res = cli.invoke(app, ["cache", "info"])
    assert res.exit_code == 0, res.output
    assert f"cache: {where}  (MEMGAUGE_CACHE_DIR)" in res.output
    assert "entries: 3: 3 model answers (chat)" in res.output
    empty = cli.invoke(app, ["cache", "info", "--cache-path", str(tmp_path / "none.sqlite")])
    assert empty.exit_code == 0 and "no cache file yet" in empty.output
    assert not (tmp_path / "none.sqlite").exists()  # looking never creates one


def test_prune_older_than_removes_exactly_the_old_entries(tmp_path):
    path = tmp_path / "c.sqlite"
    _fill(path, 5, start=time.time() - 40 * DAY)
    _fill(path, 4, kind="judge", start=time.time() - 10 * DAY)
    assert _rows(path) == 9
    res = cli.invoke(app, ["cache", "prune", "--older-than", "30d", "--cache-path", str(path)])
    assert res.exit_code == 0, res.output
    assert _rows(path) == 4 and _rows(path, "kind = 'chat'") == 0
    assert "removed 5 entries" in res.output and "4 kept" in res.output
    again = cli.invoke(app, ["cache", "prune", "--older-than", "2w", "--cache-path", str(path)])
    assert "removed 0 entries" in again.output and _rows(path) == 4


def test_prune_max_size_keeps_the_newest_within_the_size(tmp_path):
    path = tmp_path / "c.sqlite"
    _fill(path, 300, value_bytes=3000, start=time.time() - DAY)
    before = path.stat().st_size
    assert before > 900_000
    res = cli.invoke(app, ["cache", "prune", "--max-size", "300kB", "--cache-path", str(path)])
    assert res.exit_code == 0, res.output
    assert path.stat().st_size <= 300_000 < before
    kept = _rows(path)
    assert 0 < kept < 300
    with sqlite3.connect(path) as db:  # the newest were kept
        keys = [k for (k,) in db.execute("SELECT key FROM responses ORDER BY key")]
    assert keys == [f"chat-{i:05d}" for i in range(300 - kept, 300)]
    assert f"removed {300 - kept} entries" in res.output


def test_clear_asks_first_and_removes_everything(tmp_path):
    path = tmp_path / "c.sqlite"
    _fill(path, 6)
    no = cli.invoke(app, ["cache", "clear", "--cache-path", str(path)], input="n\n")
    assert no.exit_code == 1 and "Remove all 6 entries" in no.output
    assert _rows(path) == 6
    yes = cli.invoke(app, ["cache", "clear", "--cache-path", str(path)], input="y\n")
    assert yes.exit_code == 0, yes.output
    assert _rows(path) == 0 and "removed 6 entries" in yes.output
    _fill(path, 2)
    assert cli.invoke(app, ["cache", "clear", "--yes", "--cache-path", str(path)]).exit_code == 0
    assert _rows(path) == 0


def test_clear_and_prune_refuse_while_a_process_has_the_cache_open(tmp_path):
    path = tmp_path / "c.sqlite"
    _fill(path, 3, start=time.time() - 40 * DAY)
    held = ResponseCache(path)  # as a running `memgauge run` holds it
    try:
        assert _info(path)["in_use"] is True
        for args in (["clear", "--yes"], ["prune", "--older-than", "1d"]):
            res = cli.invoke(app, ["cache", *args, "--cache-path", str(path)])
            assert res.exit_code == 2, res.output
            assert "in use by a running memgauge process" in res.output
            assert _rows(path) == 3
    finally:
        held.close()
    assert cli.invoke(app, ["cache", "clear", "--yes", "--cache-path", str(path)]).exit_code == 0


@pytest.mark.parametrize("args, says", [
    (["prune", "--older-than", "banana"], "--older-than 'banana': use a number and a unit"),
    (["prune", "--older-than", "30"], "--older-than '30'"),
    (["prune", "--max-size", "lots"], "--max-size 'lots'"),
    (["prune", "--max-size", "0"], "--max-size '0'"),
    (["prune"], "prune needs --older-than"),
])
def test_bad_options_are_clear_errors(tmp_path, args, says):
    path = tmp_path / "c.sqlite"
    _fill(path, 2)
    res = cli.invoke(app, ["cache", *args, "--cache-path", str(path)])
    assert res.exit_code == 2 and says in res.output
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)
    assert _rows(path) == 2


def _not_a_cache(tmp_path, what):
    path = tmp_path / f"{what}.sqlite"
    if what == "text":
        path.write_text("these are my notes, not a cache\n")
    elif what == "corrupt":
        _fill(path, 50, value_bytes=2000)
        raw = bytearray(path.read_bytes())
        raw[100:4096] = b"\xff" * (4096 - 100)  # the schema page is garbage now
        path.write_bytes(bytes(raw))
    else:  # someone's own database
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE contacts (name TEXT)")
    return path


@pytest.mark.parametrize("what", ["text", "corrupt", "other-db"])
def test_a_file_that_is_not_a_memgauge_cache_is_named(tmp_path, what):
    path = _not_a_cache(tmp_path, what)
    original = path.read_bytes()
    for args in (["info"], ["clear", "--yes"], ["prune", "--older-than", "1d"]):
        res = cli.invoke(app, ["cache", *args, "--cache-path", str(path)])
        assert res.exit_code == 2, res.output
        assert f"file {path}" in res.output and "not a memgauge response cache" in res.output
        assert "Traceback" not in res.output
    assert path.read_bytes() == original  # never written into


@pytest.mark.parametrize("what", ["text", "corrupt", "other-db"])
def test_a_run_refuses_a_cache_path_that_is_not_a_cache_before_sending(tmp_path, what):
    path = _not_a_cache(tmp_path, what)
    original = path.read_bytes()
    data = write_memlens(tmp_path, 2)
    with StubServer(answer=lambda body: "red") as stub:
        res = cli.invoke(app, ["run", "--bench", "memlens", "--data", str(data), "--image-dir",
                               str(tmp_path), "--model", "openai:m", "--base-url",
                               stub.base_url, "--context-mode", "text", "--cache-path",
                               str(path), "--out", str(tmp_path / "run")])
        chat = [b for b in stub.requests if "messages" in b]
    assert res.exit_code == 2, res.output
    assert f"file {path}" in res.output and "not a memgauge response cache" in res.output
    assert chat == [] and path.read_bytes() == original
