"""``memgauge validate``: the validation gates of a generated or labelled benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import ConfigError, MemgaugeError
from ..report import show_controls
from ..validation._game_gates import validate_games
from ..validation.labelled import default_out, validate_from_cli
from ..validation.synth import validate as run_validate
from ._common import err, fail, parse_options


def validate(
    bench_dir: Annotated[str | None, typer.Argument(
        help="A folder written by `memgauge generate synth` (or --data)")] = None,
    ocr: Annotated[bool | None, typer.Option(
        "--ocr/--no-ocr",
        help="Caption-proof gate with offline OCR (default: if installed)")] = None,
    bench: Annotated[str, typer.Option(
        help="Benchmark loader; games: the constant-answer and blind gates of a "
             "`generate games` folder; others: the labelled-benchmark gates")] = "synth",
    data: Annotated[str | None, typer.Option(help="Data path for --bench")] = None,
    model: Annotated[str, typer.Option(
        help="Answering model of the gates (none: = the offline baselines)")] = "none:",
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: answerer (repeatable), e.g. mmproj=FILE: without a "
             "projector it sees no images (oracle screening skipped)")] = None,
    max_tokens: Annotated[int | None, typer.Option(
        help="Answer tokens per question for --model (default: as memgauge run); the "
             "audits ask for one letter", min=1)] = None,
    image_dir: Annotated[str | None, typer.Option(help="Image root for --bench")] = None,
    bench_option: Annotated[list[str] | None, typer.Option(
        help="key=value for the benchmark loader (repeatable)")] = None,
    allow_inconsistent: Annotated[bool, typer.Option(
        help="Load gold that contradicts itself with a warning per question in each "
             "gate's manifest, instead of stopping")] = False,
    captioner: Annotated[str | None, typer.Option(
        help="Captioner of the Caption-Proof arms (dense and task prompts)")] = None,
    captioner_base_url: Annotated[str | None, typer.Option(
        help="Endpoint of an openai: captioner")] = None,
    captioner_model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: captioner (repeatable); it needs mmproj=FILE")] = None,
    out: Annotated[str | None, typer.Option(
        help="Folder for the gates' runs and results (default: DATA/validation)")] = None,
) -> None:
    """Run the validation gates on a generated benchmark (synth; games: constant answer and
    blind baseline), or with --bench/--data on a labelled one (shortcut audits, oracle
    screening, Caption-Proof); exit 1 if a gate fails."""
    def say(message: str) -> None:
        err.print(message, highlight=False)

    try:
        if bench == "synth":
            bench_dir = _synth_dir(bench_dir, data)
            results = run_validate(bench_dir, ocr=ocr, progress=say)
            md = Path(bench_dir) / "validation" / "gates.md"
        elif bench == "games":
            games_dir = _synth_dir(bench_dir, data)
            given = [flag for flag, value in (("--model", model != "none:"),
                                              ("--base-url", base_url),
                                              ("--captioner", captioner)) if value]
            if given:
                raise ConfigError(f"{given[0]} does not apply to --bench games: its gates "
                                  "(constant answer, blind baseline) read the gold answers "
                                  "and need no model")
            target = Path(out) if out else default_out(games_dir)
            results = validate_games(games_dir, target, progress=say)
            md = target / "gates.md"
        else:
            results, md = validate_from_cli(
                bench, data or bench_dir, model=model, base_url=base_url, image_dir=image_dir,
                model_options=parse_options(model_option or [], "--model-option"),
                max_tokens=max_tokens,
                bench_options=parse_options(bench_option or [], "--bench-option"),
                captioner=captioner, captioner_base_url=captioner_base_url, out=out,
                captioner_model_options=parse_options(captioner_model_option or [],
                                                 "--captioner-model-option"),
                allow_inconsistent=allow_inconsistent, progress=say)
    except MemgaugeError as exc:
        fail(exc)
    print(show_controls(md.read_text(encoding="utf-8")))
    if not results["passed"]:
        err.print("[bold red]some gates failed[/]")
        raise typer.Exit(1)


def _synth_dir(bench_dir: str | None, data: str | None) -> str:
    if bench_dir and data and bench_dir != data:
        raise ConfigError(f"give the benchmark folder once ({bench_dir!r} and --data {data!r})")
    if not (bench_dir or data):
        raise ConfigError("validate needs a generated benchmark folder (or --bench NAME "
                          "--data PATH)")
    return str(bench_dir or data)
