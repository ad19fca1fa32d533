"""A scorer from an outside package runs (issue 26): a throwaway distribution (a dist-info
with entry_points.txt on a temporary sys.path entry, as pip --target lays it out) registers
the scorer ``shout`` through the ``memgauge.scorers`` entry point; a run scores every record
with it, the report's summary lists it, and ``score`` (judge_run) adds it to the records of
a run made before the package was installed."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from helpers.datasets import colour_answer, write_memlens
from helpers.stub_server import StubServer

from memgauge import registry
from memgauge.analysis import summarize
from memgauge.models import ScriptedModel
from memgauge.runner import RunConfig, load_manifest, read_records, run
from memgauge.scoring import JudgeOptions, judge_run, registered_scorers

MODULE = '''
from memgauge.registry import scorer
from memgauge.schema import Score


class Shout:
    """1 when the reply is written in capitals."""

    name, version = "shout", "1"

    def score(self, question, prediction):
        if prediction is None:
            return None
        return Score(value=float(prediction.isupper()), scorer=self.name,
                     version=self.version, details={"length": len(prediction)})


@scorer("shout")
def shout():
    return Shout()
'''


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    (site / "shout_scorer").mkdir(parents=True)
    (site / "shout_scorer" / "__init__.py").write_text(MODULE)
    info = site / "shout_scorer-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shout-scorer\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[memgauge.scorers]\nshout = shout_scorer\n")
    (info / "RECORD").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_loaded_plugins", set())  # scan the entry points afresh
    registry._load_builtins()  # the built-ins register in the real table, not the copy
    monkeypatch.setitem(registry._REGISTRY, "scorer", dict(registry._REGISTRY["scorer"]))
    monkeypatch.delitem(sys.modules, "shout_scorer", raising=False)  # imported afresh, then gone
    return site


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _install(tmp_path, monkeypatch)


def _config(tmp_path: Path, base_url: str) -> RunConfig:
    data = write_memlens(tmp_path, 3)
    return RunConfig(bench="memlens", data=str(data), image_dir=str(tmp_path),
                     out=str(tmp_path / "run"), model="openai:stub-vlm", base_url=base_url,
                     progress=False, retry_base_s=0.01)


def _shouting(body: dict) -> str:
    return colour_answer(body).upper()


def test_the_plugin_scorer_is_registered_after_the_built_ins(installed) -> None:
    assert [s.name for s in registered_scorers()] == ["rule", "subem", "f1", "shout"]


def test_a_run_scores_every_record_with_the_plugin_scorer(installed, tmp_path) -> None:
    with StubServer(answer=_shouting) as stub:
        result = run(_config(tmp_path, stub.base_url))
    assert result.ok == 3
    records = list(read_records(tmp_path / "run").values())
    assert [r.scores["shout"] for r in records] == [1.0, 1.0, 1.0]
    assert all(r.score_details["shout"].details["length"] > 0 for r in records)
    manifest = load_manifest(tmp_path / "run")
    assert {"name": "shout", "version": "1"} in manifest["scorers"]
    assert "shout" in summarize(records).scorers


def test_score_adds_the_plugin_scorer_to_an_earlier_run(tmp_path, monkeypatch) -> None:
    with StubServer(answer=_shouting) as stub:
        run(_config(tmp_path, stub.base_url))  # before the package is installed
    run_dir = tmp_path / "run"
    assert all("shout" not in r.scores for r in read_records(run_dir).values())
    _install(tmp_path, monkeypatch)
    judge = ScriptedModel(fn=lambda messages, qid: "Score: 1")
    counts = asyncio.run(judge_run(run_dir, judge, options=JudgeOptions(label_errors=False)))
    assert counts["rule_scored"] == 3
    records = list(read_records(run_dir).values())
    assert [r.scores["shout"] for r in records] == [1.0, 1.0, 1.0]
    assert {"name": "shout", "version": "1"} in json.loads(
        (run_dir / "manifest.json").read_text())["scorers"]
    again = asyncio.run(judge_run(run_dir, judge, options=JudgeOptions(label_errors=False)))
    assert "rule_scored" not in again  # scored once: a rerun leaves the records be
