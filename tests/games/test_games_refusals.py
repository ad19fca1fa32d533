"""An option that cannot work with the benchmark is refused before the first request, naming
the option to drop (design 0051): rag's oracle reader on game questions, which carry no gold
program, used to error on every question and exit 3."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.games._generate import GamesConfig, generate_games

from .gamebench_fixtures import Timeline, register_test_templates, write_trajectory


@pytest.fixture
def bench(tmp_path, monkeypatch) -> Path:
    register_test_templates(monkeypatch)
    out = tmp_path / "bench"
    generate_games(GamesConfig(trajectories=[write_trajectory(tmp_path / "traj-a")], out=out,
                               horizons=[4], make_timeline=Timeline))
    return out


@pytest.mark.parametrize("system", ["rag", "rag-bm25"])
def test_an_oracle_reader_on_games_is_refused_naming_the_option(bench, tmp_path, system):
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "--bench", "games", "--data", str(bench),
                                   "--system", system, "--system-option", "reader=oracle",
                                   "--system-option", "top_k=3", "--model", "none:",
                                   "--out", str(out)])
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert f"--system {system} --system-option reader=oracle answers from" in said
    assert "drop reader=oracle, or use --bench synth" in said
    assert "top_k" not in said and "Rerun" not in said and not out.exists()
