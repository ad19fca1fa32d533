"""``memgauge play crafter --player llm:local:smollm2`` against a real llama.cpp server.
SmolLM2-135M continues the prompt instead of naming an action (it fell back on every step),
so a local model's choice is held to the legal actions by a grammar (issue 24): every step
is then a legal action the model wrote, none a fallback. Skipped without the local extra,
the model, or the games extra."""

from __future__ import annotations

import pytest

pytest.importorskip("xllamacpp", reason="the local extra (xllamacpp) is not installed")
pytest.importorskip("crafter", reason="the games extra (crafter) is not installed")

from memgauge.models._local_files import is_pulled

if not is_pulled("smollm2"):
    pytest.skip("SmolLM2 is not on this machine: run `memgauge models pull smollm2`",
                allow_module_level=True)

from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.games import read_trajectory


def test_a_local_model_plays_crafter_steps_without_a_fallback(tmp_path):
    result = CliRunner().invoke(app, [
        "play", "crafter", "--player", "llm:local:smollm2", "--steps", "2", "--reasks", "0",
        "--model-option", "n_ctx=2048", "--cache-path", str(tmp_path / "cache.sqlite"),
        "--out", str(tmp_path / "t")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    meta, steps = read_trajectory(tmp_path / "t")
    assert meta.end == "step_cap" and len(steps) == 2
    assert meta.player_options["constrained_choice"] is True
    from crafter import constants

    for step in steps:
        trace = step.player
        assert trace.attempts == 1 and not trace.fallback and trace.parse_error is None
        assert step.action in constants.actions and trace.raw.strip() == step.action
    assert "fallback action on 0 of 2 steps (0%)" in " ".join(result.output.split())
