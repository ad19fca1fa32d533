"""``--config run.toml`` (the same keys as the flags; flags win) and ``./.env`` loading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.cli._config import load_env_file

runner = CliRunner()


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    from memgauge.benchmarks.synth import SynthConfig, generate

    generate(SynthConfig(out=str(tmp_path / "b"), questions=4, tiers=["4k"], seed=1))
    return tmp_path / "b"


def _toml(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_config_file_supplies_required_flags_and_flags_win(tmp_path: Path, bench: Path) -> None:
    cfg = _toml(tmp_path / "run.toml", f"""
bench = "synth"
data = "{bench}"
out = "{tmp_path / 'r'}"
model = "none:"
system = "oracle"
limit = 2
no-cache = true
""")
    got = runner.invoke(app, ["run", "--config", cfg])
    assert got.exit_code == 0, got.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["config"]["all"]["limit"] == 2
    assert manifest["config"]["all"]["cache"] is False
    got = runner.invoke(app, ["run", "--config", cfg, "--limit", "3"])  # the flag wins
    assert got.exit_code == 0, got.output
    assert len((tmp_path / "r" / "records.jsonl").read_text().splitlines()) == 3


def test_a_flat_file_leaves_other_commands_tables_to_them(tmp_path: Path, bench: Path) -> None:
    flat = f"""
bench = "synth"
data = "{bench}"
out = "{tmp_path / 'r'}"
model = "none:"
system = "oracle"
limit = 1
"""
    # a table named after another command (score) is that command's; any other table is a
    # key run does not take
    got = runner.invoke(app, ["run", "--config", _toml(tmp_path / "a.toml", flat
                                                       + '[score]\njudge = "openai:j"\n')])
    assert got.exit_code == 0, got.output
    got = runner.invoke(app, ["run", "--config", _toml(tmp_path / "b.toml", flat
                                                       + '[scores]\njudge = "openai:j"\n')])
    assert got.exit_code == 2 and "'scores' is not an option of `memgauge run`" in got.output


def test_a_command_table_and_key_value_tables(tmp_path: Path, bench: Path, stub) -> None:
    cfg = _toml(tmp_path / "all.toml", f"""
[run]
bench = "synth"
data = "{bench}"
out = "{tmp_path / 'r'}"
model = "openai:m"
base_url = "{stub.base_url}"
system = "rag-bm25"
system-option = {{ top_k = 1 }}

[score]
judge = "openai:j"
""")
    got = runner.invoke(app, ["run", "--config", cfg])
    assert got.exit_code == 0, got.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["config"]["all"]["system_options"] == {"top_k": "1"}


@pytest.mark.parametrize(("text", "says"), [
    ('bench = "synth"\ndatta = "x"\n', ("'datta' is not an option of `memgauge run` "
                                       "(did you mean 'data'?)")),
    ('limit = "many"\n', "limit = 'many'"),
    ('limit = [1, 2]\n', "limit takes one value, got a list"),
    ("limit = \n", "not valid TOML"),
    ('[run]\nconcurency = 2\n', "[run]: 'concurency' is not an option"),
])
def test_config_mistakes_name_the_file_and_key(tmp_path: Path, text: str, says: str) -> None:
    cfg = _toml(tmp_path / "bad.toml", text)
    got = runner.invoke(app, ["run", "--config", cfg])
    assert got.exit_code == 2
    flat = _flat(got.output)
    assert "bad.toml" in flat and says in flat, flat
    assert "Traceback" not in got.output


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_a_missing_or_binary_config_file(tmp_path: Path) -> None:
    got = runner.invoke(app, ["run", "--config", str(tmp_path / "none.toml")])
    assert got.exit_code == 2 and "no such file" in _flat(got.output)
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00bad")
    got = runner.invoke(app, ["run", "--config", str(tmp_path / "bin.toml")])
    assert got.exit_code == 2 and "not a UTF-8 text file" in _flat(got.output)


def test_score_takes_a_config_too(tmp_path: Path) -> None:
    cfg = _toml(tmp_path / "s.toml", '[score]\njudge = "openai:j"\ntimeout = 0\n')
    (tmp_path / "run").mkdir()
    got = runner.invoke(app, ["score", str(tmp_path / "run"), "--config", cfg])
    assert got.exit_code == 2
    assert "--timeout 0" in _flat(got.output)  # the file's value reached the command


def test_env_file_sets_what_the_environment_lacks(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MG_KEEP", "from-shell")
    monkeypatch.delenv("MG_NEW", raising=False)
    Path(".env").write_text("MG_NEW=from-file\nMG_KEEP=from-file\n# a comment\n")
    assert load_env_file() == ["MG_NEW"]
    assert os.environ["MG_NEW"] == "from-file"
    assert os.environ["MG_KEEP"] == "from-shell"  # the environment wins
    monkeypatch.delenv("MG_NEW")


def test_the_command_reads_dot_env_in_the_working_directory(tmp_path: Path, bench: Path) -> None:
    (tmp_path / ".env").write_text(f"MEMGAUGE_CACHE_DIR={tmp_path / 'from-env'}\n")
    env = {k: v for k, v in os.environ.items() if k != "MEMGAUGE_CACHE_DIR"}
    got = subprocess.run([sys.executable, "-m", "memgauge.cli", "run", "--bench", "synth",
                          "--data", str(bench), "--out", str(tmp_path / "r"), "--model",
                          "none:", "--system", "oracle"], cwd=tmp_path, env=env, check=False,
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "from-env" / "responses.sqlite").exists()
