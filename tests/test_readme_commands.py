"""The README's two commands (issue 29 §4): on Debian's and Ubuntu's own Python, `pip
install` outside a virtual environment fails (externally-managed-environment), so each
command makes and activates one first and runs pip and pytest with its Python; CI
(`.ci/run`) runs exactly the test command."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Two commands"
VENV = "python3 -m venv .venv && . .venv/bin/activate && "


def two_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index(SECTION)
    section = readme[start:readme.index("\n## ", start + 1)]
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", section, re.DOTALL)]


def test_exactly_two_one_line_commands_each_in_a_virtual_environment():
    commands = two_commands()
    assert len(commands) == 2, commands
    for command in commands:
        assert "\n" not in command
        assert command.startswith(VENV), command
        rest = command.removeprefix(VENV)
        # after activation, `python` is the environment's: `python3` could be the system's
        assert "python3" not in rest and "python -m pip install" in rest, rest
        assert subprocess.run(["bash", "-n"], input=command, text=True,
                              check=False).returncode == 0
    main, tests = commands
    assert main.endswith("memgauge models pull smollm2 && memgauge demo")
    assert "memgauge models pull smollm2 && " in tests and tests.endswith(" && python -m pytest")
    # the lint and the type check run in the same chain, before the tests (design 0048)
    assert " && ruff check src tests bench && " in tests
    assert " && basedpyright --warnings && " in tests
    assert " && lint-imports && " in tests


def test_ci_runs_exactly_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    last = [ln for ln in script.splitlines() if ln.strip() and not ln.startswith("#")][-1]
    assert last == two_commands()[1]


def test_the_virtual_environment_is_not_committed():
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert ".venv/" in ignored
