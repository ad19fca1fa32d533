"""``memgauge generate games TRAJ_DIR... --out BENCH_DIR``: questions with computed answers
from trajectory folders (design 0032, "Generator and loader")."""

from __future__ import annotations

from typing import Annotated

import typer

from ..cache import ResponseCache
from ..errors import MemgaugeError
from ..games._generate import GamesConfig
from ..games._generate import generate_games as generate
from ..models import ModelSettings, create_model
from ._common import err, fail


def generate_games(
    trajectories: Annotated[list[str], typer.Argument(
        help="Trajectory folders written by `memgauge play`")],
    out_dir: Annotated[str, typer.Option("--out", help="Folder to write the benchmark to")],
    seed: Annotated[int, typer.Option(help="Random seed (same inputs and seed => same bytes)")] = 0,
    max_per_template: Annotated[int, typer.Option(
        help="At most this many questions per template, trajectory and horizon")] = 3,
    horizon: Annotated[list[int] | None, typer.Option(
        help="Also ask about steps 1..N only (repeatable). The whole trajectory is always "
             "asked about too; a trajectory that ends before step N is asked about whole, "
             "and the command says so")] = None,
    paraphrase: Annotated[str | None, typer.Option(
        help="Reword the questions with this model (e.g. openai:<name>); numbers, step "
             "indices and named entities are checked to survive, else the original stays")] = None,
    paraphrase_base_url: Annotated[str | None, typer.Option(
        help="Endpoint for --paraphrase")] = None,
    overwrite: Annotated[bool, typer.Option(
        help="Replace a games benchmark already in --out")] = False,
    cross_episode: Annotated[bool, typer.Option(
        "--cross-episode", help="Also ask across the trajectories of each game kind, as games "
        "played one after another in the order given (asked after the last)")] = False,
) -> None:
    """Game trajectories -> verifiable questions (a folder for `memgauge run --bench games`)."""
    try:
        paraphraser = None
        if paraphrase:
            paraphraser = create_model(paraphrase, ModelSettings(
                base_url=paraphrase_base_url, cache=ResponseCache(), concurrency=8))
        summary = generate(GamesConfig(trajectories=trajectories, out=out_dir, seed=seed,
                                       max_per_template=max_per_template,
                                       horizons=horizon or [], overwrite=overwrite,
                                       paraphraser=paraphraser,
                                       cross_episode=cross_episode))
    except MemgaugeError as exc:
        fail(exc)
        return

    counts = summary["counts"]
    share = counts["answerable_share"]
    err.print(f"{counts['questions']} questions from {len(summary['trajectories'])} "
              f"trajectories ({len(counts['per_template'])} templates, "
              f"{share:.0%} answerable); wrote {out_dir}", highlight=False)
    for entry in summary["trajectories"]:
        if entry.get("horizons_past_end"):
            past = ", ".join(str(n) for n in entry["horizons_past_end"])
            err.print(f"{entry['id']} ends at step {entry['steps']}: --horizon {past} is past "
                      f"its end, so its questions cover the whole trajectory (steps "
                      f"1–{entry['steps']})", highlight=False)
    para = summary["options"]["paraphrase"]
    if para:
        err.print(f"paraphrased: {para['kept']} kept, {para['rejected']} rejected (original "
                  f"kept), {para['errors']} errors", highlight=False)
