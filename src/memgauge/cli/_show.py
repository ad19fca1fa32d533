"""``memgauge list`` (what can be named on the command line) and ``memgauge show`` (a run
at a glance, or one question as the system saw it); their workings are in ``_inspect``."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ..errors import MemgaugeError
from ..report import show_controls
from ._common import fail
from ._inspect import (
    catalogue,
    find_record,
    print_catalogue,
    question_view,
    read_run,
    rebuild_prompt,
    run_overview,
)


def list_(
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
) -> None:
    """Benchmarks, systems, models and scorers, with the options each takes."""
    if fmt not in ("text", "json"):
        fail(MemgaugeError(f"--format {fmt!r}: use text or json"))
    cat = catalogue()
    if fmt == "json":
        print(json.dumps(cat, indent=2))
    else:
        print_catalogue(cat)


def show(
    run_dir: Annotated[str, typer.Argument(help="Run folder")],
    question_id: Annotated[str | None, typer.Argument(
        help="One question: its prompt as the system saw it, the answer, each score, "
             "the error")] = None,
    full: Annotated[bool, typer.Option(help="Print long prompts whole")] = False,
    prompt: Annotated[bool, typer.Option(
        help="Rebuild the prompt from the run's input (nothing is sent)")] = True,
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
) -> None:
    """A run at a glance, or one question of it in full."""
    try:
        if fmt not in ("text", "json"):
            raise MemgaugeError(f"--format {fmt!r}: use text or json")
        manifest, records = read_run(run_dir)
        if question_id is None:
            print(show_controls(run_overview(manifest, records)))
            return
        record = find_record(records, question_id, run_dir)
        rebuilt = rebuild_prompt(manifest, record) if prompt else None
    except MemgaugeError as exc:
        fail(exc)
    if fmt == "json":
        doc = {"record": record.model_dump(mode="json"), "prompt": rebuilt}
        print(show_controls(json.dumps(doc, indent=2, ensure_ascii=False), json=True))
    else:
        print(show_controls(question_view(record, rebuilt, full=full)))
