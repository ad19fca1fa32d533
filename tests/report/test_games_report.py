"""The game report (design 0032, "Scoring and report") on a hand-made run, numbers worked
out by hand.

Crafter (200-step trajectory), scorer ``rule``:
  c1 single_hop h[1,10] 1 · c2 single_hop h[1,40] 0 · c3 spatial h[1,200] 1 ·
  c4 adversarial NA, said NA, 1 · c5 adversarial NA, answered "5", 0 ·
  c6 single_hop h[1,10] answerable, said NA, 0 · c7 adversarial NA, error (excluded).
TextWorld (30 steps): t1 single_hop h[1,30] 1 · t2 adversarial NA, said NA, 1 ·
  t3 temporal h[5,20] 0.

Answerability ("not answerable" positive): crafter tp 1, fn 1, fp 1, tn 3 -> P = R = F1 = 1/2,
refused answerable 1/4; textworld tp 1, tn 2 -> P = R = F1 = 1; all tp 2, fn 1, fp 1, tn 5 ->
P = R = F1 = 2/3, refused answerable 1/6.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from helpers.report_runs import identity, write_run
from typer.testing import CliRunner

from memgauge.analysis import game_report
from memgauge.cli import app
from memgauge.schema import BenchmarkInfo, ErrorInfo, Record, Response

runner = CliRunner()


def grec(qid: str, score: float | None, *, env: str = "crafter", ability: str = "single_hop",
         horizon: tuple[int, int] = (1, 10), answerable: bool = True, steps: int = 200,
         prediction: str = "3", refused: bool = False, template: str = "crafter.inventory_at_step",
         error: bool = False) -> Record:
    game = {"template": template, "params": {}, "horizon": list(horizon), "evidence_steps": [1],
            "alternatives": [], "tolerance": None, "answerable": answerable,
            "answer_type": "integer", "env": env, "trajectory": f"traj-{env}",
            "trajectory_steps": steps}
    err = ErrorInfo(kind="timeout", message="slow") if error else None
    return Record(
        question_id=qid, episode_id=f"ep-{env}", benchmark=BenchmarkInfo(name="games"),
        status="error" if error else "ok", ability=ability,
        answer_type="integer" if answerable else "refusal", question="How many?",
        gold="3" if answerable else "not answerable",
        prediction=None if error else prediction,
        response=Response(text=None if error else prediction, error=err),
        scores={} if error or score is None else {"rule": score},
        refused=None if error else refused, meta={"game": game})


NA = {"answerable": False, "ability": "adversarial", "template": "crafter.first_increase_step"}


def game_run() -> list[Record]:
    return [
        grec("c1", 1.0),
        grec("c2", 0.0, horizon=(1, 40), prediction="4"),
        grec("c3", 1.0, ability="spatial", horizon=(1, 200), template="crafter.nav"),
        grec("c4", 1.0, horizon=(1, 50), prediction="Not answerable.", refused=True, **NA),
        grec("c5", 0.0, horizon=(1, 50), prediction="5", **NA),
        grec("c6", 0.0, prediction="Not answerable.", refused=True,
             template="crafter.first_increase_step"),
        grec("c7", None, error=True, **NA),
        grec("t1", 1.0, env="textworld", steps=30, horizon=(1, 30), template="text.room_at"),
        grec("t2", 1.0, env="textworld", steps=30, horizon=(1, 30), prediction="not answerable",
             refused=True, answerable=False, ability="adversarial", template="text.room_at"),
        grec("t3", 0.0, env="textworld", steps=30, ability="temporal", horizon=(5, 20),
             template="text.order"),
    ]


def test_answerability_against_hand_computed_values() -> None:
    report = game_report(game_run(), scorer="rule")
    assert report is not None
    crafter, text, every = (report.answerability[g] for g in ("crafter", "textworld", "all"))
    assert (crafter.true_pos, crafter.false_neg, crafter.false_pos, crafter.true_neg) == (1, 1, 1,
                                                                                          3)
    assert crafter.precision == crafter.recall == crafter.f1 == 0.5
    assert crafter.refusal_rate_answerable == 0.25
    assert text.precision == text.recall == text.f1 == 1.0
    assert text.refusal_rate_answerable == 0.0
    assert every.n == 9  # the error record is excluded, not counted as a prediction
    assert every.precision == pytest.approx(2 / 3) and every.recall == pytest.approx(2 / 3)
    assert every.f1 == pytest.approx(2 / 3)
    assert every.refusal_rate_answerable == pytest.approx(1 / 6)
    assert report.n_errors == 1 and report.n_records == 10


def test_an_all_not_answerable_predictor_gets_its_true_f1() -> None:
    # 4 answerable + 1 unanswerable, the model always refuses: P 1/5, R 1, F1 1/3 (the
    # reference gave 0). Errors and failed replies are not predictions of either class.
    records = [grec(f"a{i}", 0.0, prediction="Not answerable.", refused=True) for i in range(4)]
    records += [grec("u", 1.0, prediction="Not answerable.", refused=True, **NA),
                grec("e1", None, error=True, **NA), grec("e2", None, error=True)]
    a = game_report(records, scorer="rule").answerability["all"]  # type: ignore[union-attr]
    assert (a.precision, a.recall) == (pytest.approx(0.2), 1.0)
    assert a.f1 == pytest.approx(1 / 3)
    assert a.n == 5


def test_rates_without_a_class_are_undefined_not_zero() -> None:
    a = game_report([grec("c1", 1.0)], scorer="rule").answerability["all"]  # type: ignore[union-attr]
    assert math.isnan(a.precision) and math.isnan(a.recall) and math.isnan(a.f1)
    assert a.refusal_rate_answerable == 0.0


def test_accuracy_by_ability_game_horizon_trajectory_and_template() -> None:
    report = game_report(game_run(), scorer="rule")
    assert report is not None
    assert report.games == ["crafter", "textworld"]
    assert report.abilities == ["single_hop", "spatial", "temporal", "adversarial"]
    grid = report.by_ability_game
    assert (grid["single_hop"]["crafter"].n, grid["single_hop"]["crafter"].accuracy) == (3, 1 / 3)
    assert grid["single_hop"]["textworld"].accuracy == 1.0
    assert grid["single_hop"]["all"].accuracy == 0.5
    assert grid["adversarial"]["crafter"].accuracy == 0.5
    assert "textworld" not in grid["spatial"]
    assert grid["all"]["all"].n == 9 and grid["all"]["all"].accuracy == pytest.approx(5 / 9)
    low, high = grid["all"]["all"].ci_low, grid["all"]["all"].ci_high
    assert 0.0 <= low < 5 / 9 < high <= 1.0
    horizon = {k: (c.n, c.accuracy) for k, c in report.by_horizon.items()}
    assert horizon == {"1–10": (2, 0.5), "11–25": (1, 0.0), "26–50": (5, 0.6),
                       "101–200": (1, 1.0)}
    trajectory = {k: (c.n, c.accuracy) for k, c in report.by_trajectory.items()}
    assert trajectory == {"26–50": (3, pytest.approx(2 / 3)), "101–200": (6, 0.5)}
    assert report.by_template["crafter.first_increase_step"].n == 3
    assert report.by_template["text.order"].accuracy == 0.0


def test_no_game_records_no_game_report() -> None:
    plain = grec("c1", 1.0)
    plain.meta.clear()
    assert game_report([plain], scorer="rule") is None


def _write(tmp_path: Path, records: list[Record]) -> str:
    return write_run(tmp_path / "G", identity("full-context", "-"), records)


def test_markdown_report_has_the_game_sections(tmp_path: Path) -> None:
    run = _write(tmp_path, game_run())
    r = runner.invoke(app, ["report", run])
    assert r.exit_code == 0, r.output
    text = r.output
    for heading in ("## Game memory", "### Accuracy by ability × game",
                    "### Accuracy against horizon", "### Accuracy against trajectory length",
                    "### Accuracy per template", "### Answerability"):
        assert heading in text
    assert "Positive class: the model says *not answerable*" in text
    assert "| crafter | 6 | 2 | 2 | 50.0% | 50.0% | 50.0% | 25.0% |" in text
    assert "| all | 9 | 3 | 3 | 66.7% | 66.7% | 66.7% | 16.7% |" in text
    assert "| 26–50 | 5 | 60.0% |" in text


def test_json_report_has_the_games_key(tmp_path: Path) -> None:
    run = _write(tmp_path, game_run())
    r = runner.invoke(app, ["report", run, "--format", "json"])
    assert r.exit_code == 0, r.output
    payload: Any = json.loads(r.output)
    games = payload["runs"][0]["games"] if "runs" in payload else payload["games"]
    assert games["positive_class"] == "not answerable"
    assert games["answerability"]["all"]["f1"] == pytest.approx(2 / 3)
    assert games["answerability"]["all"]["true_pos"] == 2
    assert games["by_ability_game"]["single_hop"]["crafter"]["n"] == 3
    assert games["by_horizon"]["26–50"]["accuracy"] == pytest.approx(0.6)
    assert games["by_trajectory"]["101–200"]["n"] == 6


def test_reports_without_game_records_have_no_game_section(tmp_path: Path) -> None:
    plain = grec("c1", 1.0)
    plain.meta.clear()
    run = _write(tmp_path, [plain])
    md = runner.invoke(app, ["report", run])
    assert md.exit_code == 0 and "Game memory" not in md.output
    js = runner.invoke(app, ["report", run, "--format", "json"])
    assert js.exit_code == 0 and '"games"' not in js.output


def test_html_report_has_the_game_section(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = _write(tmp_path, game_run())
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", run, "--format", "html", "--out", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text(encoding="utf-8")
    assert '<section id="games">' in page and "Game memory" in page
    assert "66.7%" in page and "not answerable" in page


def test_a_few_game_questions_get_a_marked_wilson_interval() -> None:
    from memgauge.analysis import wilson_ci
    from memgauge.report import render_games_markdown

    # three wrong answers: a bootstrap would say [0.0, 0.0], as if it were certain
    report = game_report([grec(f"w{i}", 0.0) for i in range(3)], scorer="rule")
    assert report is not None
    cell = report.by_ability_game["single_hop"]["crafter"]
    assert (cell.ci_low, cell.ci_high) == wilson_ci(0, 3) and cell.small_n
    assert cell.to_dict()["ci_method"] == "wilson" and cell.to_dict()["small_n"] is True
    assert "0.0% [0.0, 56.1] (small n: Wilson) (n=3)" in render_games_markdown(report)
