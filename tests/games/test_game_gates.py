"""The games benchmark's gates (design 0039): a constant answer and a blind (no-history)
answerer must stay near chance."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.validation._game_gates import blind_baseline, constant_answer_gate


def row(template: str, answer: Any, trajectory: str = "a", text: str = "Q at step 3?",
        alternatives: list[Any] | None = None) -> SimpleNamespace:
    return SimpleNamespace(template=template, answer=answer, answerable=answer != "not answerable",
                           alternatives=alternatives or [], trajectory=trajectory, text=text)


YES_NO = {"t.closed": ("yes", "no")}


def test_a_one_sided_closed_template_fails_the_constant_answer_gate():
    rows = [row("t.closed", "no") for _ in range(12)]
    gate = constant_answer_gate(rows, YES_NO)
    t = gate["templates"]["t.closed"]
    assert (t["constant"], t["accuracy"], t["chance"], t["verdict"]) == ("no", 1.0, 0.5, "FAIL")
    assert gate["verdict"] == "FAIL" and gate["failed_templates"] == ["t.closed"]


def test_a_balanced_closed_template_passes_and_too_few_questions_are_not_judged():
    rows = [row("t.closed", v) for v in ["yes"] * 6 + ["no"] * 6]
    rows += [row("t.small", "no") for _ in range(3)]
    gate = constant_answer_gate(rows, {**YES_NO, "t.small": ("yes", "no")})
    assert gate["templates"]["t.closed"]["verdict"] == "PASS"
    assert gate["templates"]["t.small"]["verdict"] == "N/A"


def test_an_open_template_with_a_dominant_answer_fails_like_a_closed_one():
    """Design 0039: "0" right for 97 % of `text.score_after_step` was only listed (WARN)."""
    rows = [row("t.open", 0) for _ in range(9)] + [row("t.open", n) for n in (1, 2, 3)]
    rows += [row("t.closed", v) for v in ["yes", "no"] * 6]
    gate = constant_answer_gate(rows, YES_NO)
    assert gate["templates"]["t.open"]["verdict"] == "FAIL"
    assert gate["failed_templates"] == ["t.open"] and gate["templates"]["t.open"]["chance"] == 0.25
    assert "warned_templates" not in gate
    # overall: "0" answers 9 of 24; chance weighs 12 at 1/4 and 12 at 1/2
    assert gate["overall"]["accuracy"] == 0.375 and gate["overall"]["chance"] == 0.375
    assert gate["overall"]["verdict"] == "PASS" and gate["verdict"] == "FAIL"
    varied = [row("t.open", n % 4) for n in range(12)]  # "0" right 3 of 12 against 1/4
    assert constant_answer_gate(varied, {})["verdict"] == "PASS"


def test_an_open_template_with_one_answer_is_not_passed_by_a_chance_of_100_percent():
    """With k = 1 the chance was 1/1 and a template always answered "0" passed."""
    gate = constant_answer_gate([row("t.open", 0) for _ in range(12)], {})
    t = gate["templates"]["t.open"]
    assert (t["accuracy"], t["chance"], t["verdict"]) == (1.0, 0.5, "FAIL")


def test_an_adversarial_template_is_judged_with_the_template_it_is_worded_as():
    """`text.adv_path_length` is always "not answerable" but worded as `text.path_length`:
    an answerer cannot tell them apart, so the gate measures the family."""
    rows = [row("t.adv", "not answerable") for _ in range(4)]
    rows += [row("t.twin", n) for n in (1, 2, 3, 4, 1, 2, 3, 4)]
    alone = constant_answer_gate(rows, {})["templates"]
    assert alone["t.adv"]["verdict"] == "N/A" and alone["t.twin"]["verdict"] == "N/A"
    family = constant_answer_gate(rows, {}, {"t.adv": "t.twin"})["templates"]
    assert set(family) == {"t.twin"} and family["t.twin"]["members"] == ["t.adv", "t.twin"]
    assert family["t.twin"]["n"] == 12 and family["t.twin"]["verdict"] == "FAIL"  # 4/12 > 0.3
    rows = rows[1:] + [row("t.twin", 5)]  # 3 of 12 against 1/5 + 10 points
    assert constant_answer_gate(rows, {}, {"t.adv": "t.twin"})["verdict"] == "PASS"


def test_alternatives_and_not_answerable_are_constants_too():
    rows = [row("t.open", "kitchen", alternatives=["hall"]), row("t.open", "hall"),
            row("t.open", "not answerable")]
    templates = constant_answer_gate(rows, {})["templates"]
    assert templates["t.open"]["constant"] == "hall"
    assert templates["t.open"]["accuracy"] == round(2 / 3, 4)


def test_blind_baseline_learns_only_from_other_trajectories():
    # the same wording always has the same answer: a blind answerer gets every one right
    leaky = [row("t.closed", "no", trajectory=tr) for tr in "abc" for _ in range(4)]
    assert blind_baseline(leaky, 0.5)["verdict"] == "FAIL"
    # answers that flip between trajectories cannot be learnt from the question
    fair = [row("t.closed", "yes" if tr == "a" else "no", trajectory=tr) for tr in "ab"
            for _ in range(4)]
    assert blind_baseline(fair, 0.5)["accuracy"] == 0.0
    assert blind_baseline(fair[:4], 0.5)["verdict"] == "N/A"  # one trajectory only


def test_validate_games_writes_the_gates_and_exits_by_the_verdict(tmp_path):
    from memgauge.games import TrajectoryMeta, TrajectoryWriter
    from memgauge.games._generate import GamesConfig, generate_games

    from .text_fixtures import house

    meta, steps = house()
    trajectories = []
    for name in ("house-1", "house-2"):
        writer = TrajectoryWriter(tmp_path / name, TrajectoryMeta(env="textworld", player="x"))
        writer.start(meta.initial)
        for step in steps:
            writer.add(step)
        writer.finish(end="step_cap")
        trajectories.append(tmp_path / name)
    generate_games(GamesConfig(trajectories, tmp_path / "bench", horizons=[5]))
    result = CliRunner().invoke(app, ["validate", "--bench", "games", "--data",
                                      str(tmp_path / "bench"), "--out", str(tmp_path / "v")])
    gates = json.loads((tmp_path / "v" / "gates.json").read_text())
    assert result.exit_code == (0 if gates["passed"] else 1), result.output
    assert {"constant_answer", "blind_baseline"} <= set(gates)
    # two copies of one trajectory: the blind answerer learns every answer from the other
    assert gates["blind_baseline"]["verdict"] == "FAIL" and result.exit_code == 1
    assert "Constant answer" in (tmp_path / "v" / "gates.md").read_text()


def test_validate_games_on_a_folder_that_is_not_a_games_benchmark(tmp_path):
    result = CliRunner().invoke(app, ["validate", "--bench", "games", "--data", str(tmp_path)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "benchmark.json" in result.output


def test_validate_games_refuses_a_model_it_would_not_use(tmp_path):
    result = CliRunner().invoke(app, ["validate", "--bench", "games", "--data", str(tmp_path),
                                      "--model", "openai:gpt-4o"])
    assert result.exit_code != 0 and "--model does not apply to --bench games" in result.output
