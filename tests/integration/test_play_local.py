"""``memgauge play crafter --player llm:local:smollm2``: one step against a real llama.cpp
server. SmolLM2-135M rarely names an action, so the check is the contract, not the play:
its reply is kept, and the step is either a parsed legal action or the flagged fallback.
Skipped without the local extra, the model, or the games extra."""

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


def test_a_local_model_plays_one_crafter_step(tmp_path):
    result = CliRunner().invoke(app, [
        "play", "crafter", "--player", "llm:local:smollm2", "--steps", "1", "--reasks", "0",
        "--model-option", "n_ctx=2048", "--cache-path", str(tmp_path / "cache.sqlite"),
        "--out", str(tmp_path / "t")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    meta, steps = read_trajectory(tmp_path / "t")
    assert meta.end == "step_cap" and len(steps) == 1
    trace = steps[0].player
    assert trace.raw is not None and trace.attempts == 1
    assert trace.fallback == (trace.parse_error is not None)
    from crafter import constants

    assert steps[0].action in constants.actions
