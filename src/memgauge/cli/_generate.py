"""``memgauge generate synth|games``: write a benchmark (the games generator is in
``_games``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..benchmarks.synth import SynthConfig, generate
from ..benchmarks.synth._memeye_cells import MEMEYE_QUESTIONS
from ..cache import ResponseCache
from ..errors import MemgaugeError
from ..models import ModelSettings, create_model
from ._common import err, fail
from ._games import generate_games

generate_app = typer.Typer(no_args_is_help=True, help="Generate benchmarks.")
generate_app.command("games")(generate_games)


@generate_app.command("synth")
def generate_synth(
    out_dir: Annotated[str, typer.Option("--out", help="Folder to write the benchmark to")],
    seed: Annotated[int, typer.Option(help="Random seed (same seed => same bytes)")] = 0,
    tiers: Annotated[str, typer.Option(
        help="Comma-separated token tiers, e.g. 8k,32k,128k")] = "8k,32k",
    questions: Annotated[int | None, typer.Option(
        help="Questions per tier (default 40; with --format memeye 24, 2 per X x Y cell, the "
             "most one timeline holds with every family)")] = None,
    text_tokens_per_image: Annotated[int, typer.Option(
        help="Haystack text tokens per image (ratio kept while filling)")] = 2000,
    families: Annotated[str | None, typer.Option(
        help="Comma-separated question families (default: all)")] = None,
    naturalize: Annotated[str | None, typer.Option(
        help="Rewrite the prose with this model (e.g. openai:<name>); needle facts are "
             "checked to survive. Off by default.")] = None,
    naturalize_base_url: Annotated[str | None, typer.Option(
        help="Endpoint for --naturalize")] = None,
    overwrite: Annotated[bool, typer.Option(
        help="Replace a benchmark already in --out (cleared first)")] = False,
    layout: Annotated[str | None, typer.Option(
        help="per-question: one episode per question (MemLens-compatible) | timeline: one "
             "conversation per tier, each question asked at its time (default: per-question; "
             "timeline with --format memeye)")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="memgauge | memeye: also MemEye release files in OUT/memeye (one task "
                         "per tier, MCQ with 4 rotations and the _Open twin; all 12 X x Y "
                         "cells by default)")] = "memgauge",
) -> None:
    """Procedural multimodal memory benchmark: rendered evidence, computed answers."""
    tier_list = [t.strip() for t in tiers.split(",") if t.strip()]
    if questions is None:
        questions = MEMEYE_QUESTIONS if fmt == "memeye" else 40
    try:
        naturalizer = None
        if naturalize:
            naturalizer = create_model(naturalize, ModelSettings(
                base_url=naturalize_base_url, cache=ResponseCache(), concurrency=16))
        config = SynthConfig(out=out_dir, seed=seed, tiers=tier_list, questions=questions,
                             text_tokens_per_image=text_tokens_per_image,
                             families=families.split(",") if families else None,
                             naturalizer=naturalizer, overwrite=overwrite,
                             layout=layout or ("timeline" if fmt == "memeye" else "per-question"),
                             format=fmt)
        progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), console=err.get(),
                            disable=not err.is_terminal)
        tasks = {t: progress.add_task(f"tier {t}", total=questions) for t in tier_list}
        with progress:
            manifest = generate(
                config, progress=lambda t, n: progress.update(tasks[t], completed=n))
    except MemgaugeError as exc:
        fail(exc)
    for tier, info in manifest["tiers"].items():
        err.print(f"tier {tier}: {info['questions']} questions, tokens {info['tokens_min']}–"
                  f"{info['tokens_max']} (target {info['target_tokens']}, "
                  f"{info['within_tolerance']} within ±3 %)", highlight=False)
    err.print(f"{manifest['images']} images; digest {manifest['digest'][:16]}; wrote {out_dir}",
              highlight=False)
    if "memeye" in manifest:
        cells = manifest["memeye"]
        err.print(f"MemEye tasks in {Path(out_dir) / 'memeye'}: {', '.join(cells['tasks'])}; "
                  f"questions per cell {cells['cells']}", highlight=False, soft_wrap=True)
        if cells["missing"]:
            err.print(f"[yellow]no questions in {', '.join(cells['missing'])}[/] (--families "
                      "has none of their families)", highlight=False)
