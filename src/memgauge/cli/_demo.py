"""``memgauge demo``: offline end to end, a fresh benchmark to a report."""

from __future__ import annotations

from typing import Annotated

import typer

from ..demo import DemoConfig, closing_commands, run_demo
from ..errors import MemgaugeError
from ._common import err, fail


def demo(
    out_dir: Annotated[str, typer.Option("--out",
                                         help="Where to write everything")] = "memgauge-demo",
    seed: Annotated[int, typer.Option(help="Seed for the generated benchmark")] = 0,
    questions: Annotated[int, typer.Option(help="Questions per tier")] = 30,
    tiers: Annotated[str, typer.Option(
        help="Two (or more) token tiers; the real model reads the first")] = "4k,8k,32k",
    model: Annotated[str, typer.Option(
        help="The real model's runs: local:smollm2 (or another local: GGUF), or none")] =
        "local:smollm2",
    model_questions: Annotated[int, typer.Option(
        help="Questions per real-model run, the same for every system (SmolLM2 takes ~15 s "
             "a 4K prompt on 2 cores, and the memory agent ~16 ingest calls a question)")] = 4,
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Seconds the real model may take to start and to answer one "
                          "request, at least (both also scale with the machine's load)")] = 120.0,
) -> None:
    """Offline end to end: generate a fresh benchmark, validate it, run the offline
    baselines, then full context, retrieval and an LLM memory agent on the same questions
    with a real local model (SmolLM2 through llama.cpp), and write a report that opens with
    the answer (no network, no keys). Exits 3 when a real-model run fails."""
    tier_list = tuple(t.strip() for t in tiers.split(",") if t.strip())
    try:
        if model_questions < 1:
            raise MemgaugeError("--model-questions must be at least 1")
        if not timeout > 0:
            raise MemgaugeError(f"--timeout {timeout:g}: must be more than 0 seconds")
        root = run_demo(DemoConfig(out=out_dir, seed=seed, tiers=tier_list, questions=questions,
                                   model=model, model_questions=model_questions,
                                   timeout_s=timeout),
                        say=lambda m: err.print(m, highlight=False, markup=False))
    except MemgaugeError as exc:
        fail(exc)
    bench = root / "benchmark"
    err.print(f"\n[bold]Report:[/] {root / 'report.md'}", highlight=False)
    if (root / "report.html").exists():
        err.print(f"[bold]Browsable report:[/] {root / 'report.html'}", highlight=False)
    err.print("")
    err.print(closing_commands(bench, tier_list), highlight=False, markup=False,
              soft_wrap=True)
