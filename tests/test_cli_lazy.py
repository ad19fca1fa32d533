"""Each command's module is imported when the command is named, not at start-up (design
0046): ``memgauge models path`` does not import the runner, the games or the validators."""

from __future__ import annotations

import json
import subprocess
import sys

import typer.main
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.cli._app import COMMANDS

COMMAND_MODULES = {f"memgauge.cli.{where.partition(':')[0]}" for where in COMMANDS.values()}


def _loaded_after(args: list[str]) -> tuple[int, str, set[str]]:
    """Exit status, output and the memgauge modules a fresh interpreter holds after ``args``."""
    code = ("import json, sys\nfrom typer.testing import CliRunner\n"
            "from memgauge.cli import app\n"
            f"r = CliRunner().invoke(app, {args!r})\n"
            "print(json.dumps([r.exit_code, r.output, "
            "sorted(m for m in sys.modules if m.startswith('memgauge'))]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    status, output, modules = json.loads(done.stdout.splitlines()[-1])
    return status, output, set(modules)


def test_a_command_imports_its_own_module_and_no_other():
    status, output, modules = _loaded_after(["models", "path", "no-such-model"])
    assert status == 2 and "no-such-model" in output
    assert modules & COMMAND_MODULES == {"memgauge.cli._models"}
    assert not {"memgauge.runner", "memgauge.games", "memgauge.validation"} & modules


def test_a_mistyped_command_is_named_without_importing_any_command():
    status, output, modules = _loaded_after(["reprot"])
    assert status == 2 and "Did you mean 'report'?" in output
    assert not modules & COMMAND_MODULES


def test_every_command_loads_under_its_name_in_the_order_help_lists_them():
    root = typer.main.get_command(app)
    assert list(root.commands) == list(COMMANDS)
    for name in COMMANDS:
        assert root.commands[name].name == name
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    rows = [line.split()[1] for line in shown.splitlines()
            if line.startswith("│ ") and len(line.split()) > 1 and line.split()[1] in COMMANDS]
    assert rows == list(COMMANDS)
