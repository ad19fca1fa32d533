"""A response cache that cannot be written never costs an answer (issue 11, item 7)."""

from __future__ import annotations

import json
import sqlite3

from helpers.datasets import write_memlens
from helpers.scripted_server import ScriptedServer, completion

from memgauge.cache import ResponseCache
from memgauge.runner import RunConfig, read_records, run


class _FullDisk:
    """A sqlite connection whose writes fail as on a full disk (reads still work)."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real, self.writes = real, 0

    def execute(self, sql: str, *args):  # type: ignore[no-untyped-def]
        if sql.startswith("INSERT"):
            self.writes += 1
            raise sqlite3.OperationalError("database or disk is full")
        return self.real.execute(sql, *args)

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        return getattr(self.real, name)


def test_a_cache_that_cannot_be_written_keeps_the_answers_and_warns_once(tmp_path, capfd,
                                                                        monkeypatch):
    made: list[_FullDisk] = []
    real_init = ResponseCache.__init__

    def init(self, path=None):  # type: ignore[no-untyped-def]
        real_init(self, path)
        self._db = _FullDisk(self._db)
        made.append(self._db)

    monkeypatch.setattr(ResponseCache, "__init__", init)
    data = write_memlens(tmp_path, 4)
    with ScriptedServer([], after=(200, completion("red"))) as srv:
        result = run(RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                               out=str(tmp_path / "run"), model="openai:m",
                               base_url=srv.base_url, progress=False, context_mode="text",
                               cache_path=str(tmp_path / "c.sqlite")))
    assert (result.ok, result.errors) == (4, 0)
    assert all(r.prediction == "red" for r in read_records(tmp_path / "run").values())
    assert made[0].writes == 1  # the first failure turns writing off
    err = capfd.readouterr().err
    assert err.count("cannot be written") == 1 and "disk is full" in err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert "disk is full" in manifest["cache"]["write_error"]
