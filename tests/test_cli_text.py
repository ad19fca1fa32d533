"""What a user reads: help that keeps its bracketed words and wraps only at the terminal's
width, ``--model`` naming every provider, and no internal issue or design numbers in help or
reports (design 0051)."""

from __future__ import annotations

import re
from typing import Any

import typer.main
from helpers.report_runs import three_runs
from typer.core import TyperGroup
from typer.testing import CliRunner

from memgauge.analysis import build_tables
from memgauge.cli import app
from memgauge.report import render_tables_markdown

runner = CliRunner()
WIDE = {"COLUMNS": "400", "TERM": "dumb"}


def _commands() -> list[tuple[list[str], Any]]:
    root = typer.main.get_command(app)
    out: list[tuple[list[str], Any]] = [([], root)]
    for name, cmd in root.commands.items():
        out.append(([name], cmd))
        if _is_group(cmd):
            out += [([name, sub], c) for sub, c in cmd.commands.items()]
    return out


def _is_group(cmd: Any) -> bool:
    return isinstance(cmd, TyperGroup)  # the top-level one included: its commands load lazily


def _help(path: list[str], env: dict[str, str] = WIDE) -> str:
    res = runner.invoke(app, [*path, "--help"], env=env)
    assert res.exit_code == 0, res.output
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())


def test_bracketed_words_in_option_help_are_shown():
    for path, cmd in _commands():
        shown = None
        for param in cmd.params:
            for word in re.findall(r"\\?\[[a-z]+\]", getattr(param, "help", None) or ""):
                shown = shown or _help(path)
                assert word.lstrip("\\") in shown, (path, param.name, word)
    assert "a [run] or [score] table holds one command's keys" in _help(["run"])


def test_command_lists_break_only_where_the_terminal_does():
    for path, cmd in _commands():
        if not _is_group(cmd):
            continue
        res = runner.invoke(app, [*path, "--help"], env=WIDE)
        for name, sub in cmd.commands.items():
            first = " ".join((sub.help or "").split("\n\n")[0].split())
            row = next(line for line in res.output.splitlines()
                       if re.match(rf"^│ {re.escape(name)} ", line))
            # 400 columns: the whole first paragraph on the command's own row
            assert first[:150] in " ".join(row.strip("│ ").split()), (path, name)


def test_model_help_names_every_provider():
    shown = _help(["run"])
    part = shown[shown.index("--model"):][:400]
    for provider in ("openai:", "local:", "replay:", "none:"):
        assert provider in part


def test_no_internal_issue_or_design_numbers_reach_the_user():
    internal = re.compile(r"\bissues? \d+|\bdesign \d{4}")
    for path, _ in _commands():
        assert not internal.search(_help(path)), path
    assert not internal.search(render_tables_markdown(build_tables(three_runs())))
