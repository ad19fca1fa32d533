"""`memgauge probe recency`: re-ranking a crafted run folder's stored pools (design 0030)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.report_runs import identity, write_run
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.cli._probe import parse_alphas
from memgauge.errors import ConfigError
from memgauge.schema import BenchmarkInfo, EvidenceRef, Record, Response, RetrievedItem

runner = CliRunner()


def rec(qid: str, pool: list[tuple[str, float]], evidence: list[str], score: float,
        positions: dict[str, int] | None) -> Record:
    retrieved = [RetrievedItem(pointer=EvidenceRef(session_id=s), score=v, chosen=i == 0)
                 for i, (s, v) in enumerate(pool)]
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="t"),
                  status="ok", ability="knowledge_update", answer_type="free_text",
                  question="?", gold="x", prediction="x",
                  response=Response(text="x", retrieved=retrieved), scores={"rule": score},
                  evidence=[EvidenceRef(session_id=s) for s in evidence],
                  meta={} if positions is None else {"session_positions": positions})


def crafted_run(root: Path) -> str:
    # r1: latest clue s3 is the oldest-scored but newest session; wrong answer.
    # r2: clue s1 in the pool, latest clue s7 outside it (never ranked).
    # r3: written before session positions existed: cannot be re-ranked.
    records = [
        rec("r1", [("s1", 1.0), ("s2", 0.5), ("s3", 0.0)], ["s3"], 0.0,
            {"s1": 0, "s2": 5, "s3": 10}),
        rec("r2", [("s1", 1.0), ("s4", 0.2)], ["s1", "s7"], 1.0,
            {"s1": 0, "s4": 9, "s7": 12}),
        rec("r3", [("s1", 1.0), ("s2", 0.5)], ["s2"], 1.0, None),
    ]
    return write_run(root / "run", identity("rag", "8k"), records)


def probe_json(run: str, *args: str) -> dict:
    result = runner.invoke(app, ["probe", "recency", run, "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _all(row: dict, metric: str) -> float | None:
    return row["groups"]["all"][metric]["value"]


def test_recency_moves_the_diagnostics(tmp_path: Path) -> None:
    data = probe_json(crafted_run(tmp_path), "--alpha", "0,1")
    [run] = data["runs"]
    assert run["n_records"] == 3 and run["n_reranked"] == 2 and run["n_skipped"] == 1
    assert run["clues_outside_pool"] == {"n": 1, "of": 3}
    as_run, zero, one = run["rows"]
    assert [r["alpha"] for r in run["rows"]] == ["as run", 0.0, 1.0]
    assert _all(as_run, "latest_clue_recall") == 0.0 == _all(zero, "latest_clue_recall")
    # α = 1: r1's s3 (newest) goes first; r2's s4 (newer than s1) pushes s1 out
    assert _all(one, "latest_clue_recall") == 0.5
    assert _all(one, "any_clue_recall") == 0.5
    assert zero["groups"]["all"]["failures"] == {"retrieval": 1, "comprehension": 0,
                                                  "n_wrong": 1, "k": 1}
    assert one["groups"]["all"]["failures"]["comprehension"] == 1
    assert one["groups"]["knowledge_update"]["latest_clue_recall"]["n"] == 2


def test_k_is_applied_to_the_reranked_pool(tmp_path: Path) -> None:
    data = probe_json(crafted_run(tmp_path), "--alpha", "0", "--k", "3")
    zero = data["runs"][0]["rows"][1]
    assert data["k"] == 3
    assert _all(zero, "latest_clue_recall") == 0.5  # r1's s3 is within the top 3
    assert zero["groups"]["all"]["latest_clue_recall"]["k"] == 3


def test_markdown_says_unranked_clues_cannot_be_recovered(tmp_path: Path) -> None:
    result = runner.invoke(app, ["probe", "recency", crafted_run(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "1 of 3 clues lie outside their stored pool" in out
    assert "cannot recover" in out
    assert "2 of 3 records with clues and a ranking re-ranked; 1 skipped" in out
    assert "| 0.7 | 2 |" in out and "| as run | 2 |" in out


@pytest.mark.parametrize(("alpha", "words"), [("0,2", "outside [0, 1]"),
                                              ("0,x", "'x' is not a number")])
def test_bad_alpha_is_a_clear_error(tmp_path: Path, alpha: str, words: str) -> None:
    result = runner.invoke(app, ["probe", "recency", crafted_run(tmp_path), "--alpha", alpha])
    assert result.exit_code == 2
    assert words in result.output and "--alpha" in result.output
    assert "Traceback" not in result.output


def test_not_a_run_folder(tmp_path: Path) -> None:
    result = runner.invoke(app, ["probe", "recency", str(tmp_path)])
    assert result.exit_code == 2 and "not a run folder" in result.output


def test_parse_alphas_keeps_order_once() -> None:
    assert parse_alphas("1, 0.5,1,0") == [1.0, 0.5, 0.0]
    with pytest.raises(ConfigError):
        parse_alphas("")
