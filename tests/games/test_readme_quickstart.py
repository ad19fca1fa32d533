"""The games guide's quick-start runs as written (issue 24: `generate games … --horizon 50`
exited 2 because the TextWorld game of seed 2 is won at step 5, and SmolLM2 was handed
images it cannot read). The block is read from docs/guide/games.md (the README's games
section moved there, issue 26 §4) and each command is run with the
memgauge under test, in a fresh folder. Skips without the games extra (Crafter, TextWorld,
Jericho), the local extra, or SmolLM2."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import memgauge

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "games.md"
SECTION = "## Episodic memory from play"
COMMAND_TIMEOUT_S = 900  # the run answers 10 questions with a 135M model on two busy cores


def quickstart_commands(readme: str) -> list[list[str]]:
    """The first ```bash block under SECTION, one argument list per command (backslash
    continuations joined, comments dropped)."""
    section = readme[readme.index(SECTION):]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, f"no ```bash block under {SECTION!r} in docs/guide/games.md"
    text = block.group(1).replace("\\\n", " ")
    commands = (shlex.split(line, comments=True) for line in text.splitlines())
    return [command for command in commands if command]


def test_the_block_is_the_games_quickstart():
    """Runs without any extra: the extraction finds the commands the test below runs."""
    commands = quickstart_commands(GUIDE.read_text(encoding="utf-8"))
    assert [c[:2] for c in commands] == [
        ["memgauge", "play"], ["memgauge", "play"], ["memgauge", "play"],
        ["memgauge", "generate"], ["memgauge", "validate"], ["memgauge", "run"],
        ["memgauge", "report"]]
    assert commands[5][-2:] == ["--out", "games-run"]  # continued lines joined
    assert commands[0][-2:] == ["--out", "crafter-s0"]  # the comment after it is dropped


def test_the_readme_games_quickstart_runs_as_written(tmp_path):
    for module in ("crafter", "textworld", "jericho"):
        pytest.importorskip(module, reason=f"the games extra ({module}) is not installed")
    from memgauge.models._llama_server import engine_version
    from memgauge.models._local_files import is_pulled

    if engine_version() is None or not is_pulled("smollm2"):
        pytest.skip("needs the local extra and `memgauge models pull smollm2`")
    src = str(Path(memgauge.__file__).resolve().parents[1])  # this memgauge, not another
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    launcher = "import sys; from memgauge.cli import main; sys.argv[0] = 'memgauge'; main()"
    outputs = []
    for command in quickstart_commands(GUIDE.read_text(encoding="utf-8")):
        assert command[0] == "memgauge"
        done = subprocess.run([sys.executable, "-c", launcher, *command[1:]], cwd=tmp_path,
                              env=env, capture_output=True, text=True, check=False,
                              timeout=COMMAND_TIMEOUT_S)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{shlex.join(command)} exited {done.returncode}:\n{output}"
        assert "Traceback" not in output, output
        outputs.append(" ".join(output.split()))
    assert "tw-s2 ends at step 5: --horizon 50 is past its end" in outputs[3]
    info = json.loads((tmp_path / "games-bench" / "benchmark.json").read_text())
    assert {t["id"]: t["horizons"] for t in info["trajectories"]} == {
        "crafter-s0": [50, 200], "tw-s2": [5], "jr-s2": [5]}
    records = [json.loads(line) for line in
               (tmp_path / "games-run" / "records.jsonl").read_text().splitlines()]
    assert len(records) == 10 and all(r["status"] == "ok" for r in records), records
    assert "Constant answer" in outputs[4] or "constant" in outputs[4].lower(), outputs[4]
    assert "FAIL" not in outputs[4], outputs[4]
    assert "## Game memory" in outputs[6] and "Accuracy by ability × game" in outputs[6]
