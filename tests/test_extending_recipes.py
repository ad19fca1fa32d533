"""docs/extending.md's recipes run as written (issue 26 §4): every ``# my_memgauge/<file>``
block of the page becomes a module of a throwaway package whose entry points are the page's
own ``pyproject.toml`` block (a dist-info on PYTHONPATH, as pip lays one out), and the page's
commands run against it in a fresh process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memgauge

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "extending.md"
MODULE_BLOCK = re.compile(r"```python\n# my_memgauge/(\w+\.py)\n(.*?)```", re.DOTALL)


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def entry_points(text: str) -> str:
    """The page's ``[project.entry-points."memgauge.<kind>s"]`` tables as entry_points.txt."""
    toml = re.search(r"```toml\n(.*?)```", text, re.DOTALL)
    assert toml, "no pyproject.toml block in docs/extending.md"
    out = []
    for line in toml.group(1).splitlines():
        if m := re.match(r'\[project\.entry-points\."(memgauge\.\w+)"\]', line):
            out.append(f"[{m.group(1)}]")
        elif m := re.match(r'(\S+) = "(\S+)"', line):
            out.append(f"{m.group(1)} = {m.group(2)}")
    return "\n".join(out) + "\n"


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    text = page()
    site = tmp_path / "site"
    package = site / "my_memgauge"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    modules = MODULE_BLOCK.findall(text)
    for name, source in modules:
        (package / name).write_text(source, encoding="utf-8")
    info = site / "my_memgauge-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-memgauge\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points(text))
    (info / "RECORD").write_text("")
    assert sorted(n for n, _ in modules) == sorted(
        f"{m}.py" for m in re.findall(r"my_memgauge\.(\w+)", entry_points(text)))
    src = str(Path(memgauge.__file__).resolve().parents[1])  # this memgauge, not another
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), src])}


def memgauge_cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memgauge", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=300)


def page_commands(text: str) -> list[list[str]]:
    """The ``memgauge …`` lines of the page's bash block (continuations joined)."""
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL)
    assert block, "no bash block in docs/extending.md"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    return [line.split("#")[0].split()[1:] for line in lines if line.startswith("memgauge ")]


def test_the_recipes_register_through_entry_points_and_run(tmp_path, plugin_env):
    text = page()
    data = re.search(r"echo '(.*?)' > tiny\.json", text)
    assert data, "the page no longer writes tiny.json"
    (tmp_path / "tiny.json").write_text(data.group(1))
    commands = page_commands(text)
    assert [c[0] for c in commands] == ["list", "run", "run"], commands
    listed = memgauge_cli(commands[0], plugin_env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    for name in ("tiny", "recency", "exact", "echo"):
        assert re.search(rf"^\s+{name}\s+\S", listed.stdout, re.MULTILINE), (name, listed.stdout)
    predictions = []
    for command in commands[1:]:
        done = memgauge_cli(command, plugin_env, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        out = tmp_path / command[command.index("--out") + 1]
        [record] = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
        assert record["status"] == "ok", record
        predictions.append(record["prediction"])
    assert predictions[0] == "I moved to Lyon."  # recency: the last turn it ingested
    assert predictions[1] == "Question: Where do I live?"  # echo: the prompt's last line


def test_a_bad_file_is_a_named_error_not_a_traceback(tmp_path, plugin_env):
    (tmp_path / "bad.json").write_text('{"facts": []}')
    done = memgauge_cli(["run", "--bench", "tiny", "--data", "bad.json", "--system", "recency",
                         "--model", "none:", "--out", "r"], plugin_env, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "file bad.json, item e0, field 'question': missing" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_scorer_and_the_captioner_recipes(tmp_path, plugin_env):
    script = """
import asyncio
from memgauge import registry
from memgauge.captioners import create_captioner
from memgauge.schema import Ability, AnswerType, ImageRef, Question
q = Question(question_id="q", text="?", answer="Lyon", answer_type=AnswerType.FREE_TEXT,
             ability=Ability.INFORMATION_EXTRACTION)
exact = registry.lookup("scorer", "exact")()
print(exact.score(q, "Lyon").value, exact.score(q, "Paris").value, exact.score(q, None))
captioner = create_captioner("filename")
caption = asyncio.run(captioner.caption(ImageRef(source="a/receipt_03.png"), None))
print(caption.kind, caption.text)
"""
    done = subprocess.run([sys.executable, "-c", script], env=plugin_env, cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1.0 0.0 None", "dense a picture named receipt_03"]
