"""The issue's offline end to end, through the commands a user types: scripted Crafter,
TextWorld and the same TextWorld game through Jericho -> `generate games` -> `run --bench
games` with a built-in system -> `report`. Gold predictions: every answer key, as the loader
states it, must score 1 under the rule scorer, and the report must show every game."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memgauge.benchmarks.games import answer_text
from memgauge.cli import app

pytest.importorskip("crafter")
pytest.importorskip("textworld")
pytest.importorskip("jericho")

runner = CliRunner()


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_three_games_from_play_to_report(tmp_path):
    crafter, tw, jr = tmp_path / "crafter-s1", tmp_path / "tw-s2", tmp_path / "jr-s2"
    _ok("play", "crafter", "--player", "scripted", "--steps", "40", "--seed", "1",
        "--out", str(crafter))
    _ok("play", "textworld", "--player", "scripted", "--seed", "2", "--out", str(tw))
    _ok("play", "jericho", "--player", "scripted", "--rom", str(tw / "game" / "game.z8"),
        "--out", str(jr))
    bench = tmp_path / "bench"
    _ok("generate", "games", str(crafter), str(tw), str(jr), "--horizon", "3",
        "--out", str(bench))
    rows = [json.loads(line) for line in (bench / "questions.jsonl").open()]
    assert {r["trajectory"] for r in rows} == {"crafter-s1", "tw-s2", "jr-s2"}
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"question_id": r["id"],
                                         "prediction": answer_text(r["answer"])}) + "\n"
                             for r in rows))
    out = tmp_path / "run"
    _ok("run", "--bench", "games", "--data", str(bench), "--system", "rag",
        "--model", f"replay:{preds}", "--out", str(out))
    records = [json.loads(line) for line in (out / "records.jsonl").open()]
    assert len(records) == len(rows) and all(r["status"] == "ok" for r in records)
    wrong = [(r["question_id"], r["gold"]) for r in records if r["scores"]["rule"] != 1]
    assert wrong == []
    report = json.loads(_ok("report", str(out), "--format", "json"))["games"]
    assert set(report["games"]) == {"crafter", "textworld", "jericho"}
    assert report["answerability"]["all"]["f1"] == 1.0
    assert "Game memory" in _ok("report", str(out))
