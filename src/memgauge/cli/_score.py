"""``memgauge score``: add LLM-judge scores to a finished run."""

from __future__ import annotations

from typing import Annotated

import typer

from ..api import ScoreConfig, ScoreSummary
from ..api import score as score_run
from ..errors import MemgaugeError
from ._cache import score_cache_lines
from ._common import EXIT_BUDGET, EXIT_SOME_FAILED, fail, parse_options, say
from ._config import CONFIG_HELP, config_callback
from ._execute import top_causes


def score(
    run_dir: Annotated[str, typer.Argument(help="Run folder to judge in place")],
    judge: Annotated[str, typer.Option(help="Judge model: openai:<name> or local:<name-or-path>")],
    judge_base_url: Annotated[str | None, typer.Option(
        help="OpenAI-compatible endpoint of the judge (e.g. a local vLLM server)")] = None,
    judge_model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: judge (repeatable): n_ctx, n_parallel, threads, ...")] = None,
    mode: Annotated[str, typer.Option(help="default | memlens-compat")] = "default",
    rubric: Annotated[str, typer.Option(
        help="auto (MemEye five levels on MemEye open-ended items, else MemLens) | memlens | "
             "memeye")] = "auto",
    name: Annotated[str, typer.Option(
        help="Score name, must contain 'judge' (a second judge: e.g. judge-b)")] = "judge",
    extract: Annotated[bool, typer.Option(
        help="Also score by LLM extraction then rule match ('extract-match')")] = False,
    label_errors: Annotated[bool, typer.Option(
        help="Ask the judge to label wrong answers the rules leave unlabelled")] = True,
    api_key_env: Annotated[str, typer.Option(
        help="Env var holding the judge's API key")] = "OPENAI_API_KEY",
    concurrency: Annotated[int, typer.Option(help="Judge calls in flight")] = 8,
    timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds")] = 120.0,
    prompt_file: Annotated[str | None, typer.Option(
        "--prompt-file", "--judge-prompt-file",
        help="The judge's prompt text from a file (as on run)")] = None,
    batch: Annotated[bool, typer.Option(
        help="Judge through the endpoint's Batch API (/files + /batches): submit, poll, "
             "record; an interrupted score resumes the same batch")] = False,
    batch_poll_s: Annotated[float, typer.Option(
        help="First wait between polls of a batch, seconds (it grows by half each poll)")] = 30.0,
    batch_window: Annotated[str, typer.Option(
        help="The batch's completion_window")] = "24h",
    prices: Annotated[str | None, typer.Option(
        "--prices", help="JSON or TOML file: model -> {input, output, cached_input} in $ "
                         "per 1M tokens; the judge is priced under its --judge spec or "
                         "name")] = None,
    budget_usd: Annotated[float | None, typer.Option(
        help="Stop judging once the run folder (answers and judges, every invocation) has "
             "spent this many dollars (needs --prices); rerun with a higher one to "
             "resume")] = None,
    max_tokens_total: Annotated[int | None, typer.Option(
        help="Stop judging once the run folder (answers and judges, every invocation) has "
             "spent this many tokens")] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Ask the judge again for every verdict: no reply is read from "
                           "or stored in the response cache")] = False,
    config_file: Annotated[str | None, typer.Option(
        "--config", help=CONFIG_HELP, is_eager=True, callback=config_callback)] = None,
) -> None:
    """Add LLM-judge scores to a finished run; a rerun only judges what is missing. Exits 3
    when some verdicts failed (recorded apart, never scored as 0; rerun to retry), as run."""
    try:
        summary = score_run(ScoreConfig(
            run_dir=run_dir, judge=judge, judge_base_url=judge_base_url,
            judge_model_options=parse_options(judge_model_option or [],
                                              "--judge-model-option"),
            api_key_env=api_key_env, concurrency=concurrency, timeout_s=timeout, name=name,
            rubric=rubric, mode=mode, extract=extract, label_errors=label_errors,
            prompt_file=prompt_file, batch=batch, batch_poll_s=batch_poll_s,
            batch_window=batch_window, prices=prices, budget_usd=budget_usd,
            max_tokens_total=max_tokens_total, cache=not no_cache), say=say)
    except MemgaugeError as exc:
        fail(exc)
    _print_outcome(run_dir, name, summary)
    _stop_with_status(summary)


def _print_outcome(run_dir: str, name: str, summary: ScoreSummary) -> None:
    """The verdicts by outcome (stdout), the cache's share of them, and the judge
    failures' commonest causes."""
    counts = summary.counts
    print(", ".join(f"{k.replace('_', '-')} {v}" for k, v in counts.items()))
    if summary.cache_hits is not None:  # --no-cache: nothing was looked up
        for line in score_cache_lines(run_dir, name, summary.cache_hits,
                                     summary.cache_misses or 0):
            print(line)
    if counts.get("failures"):
        why = top_causes(run_dir, "judge")
        if why:
            say("judge failures (recorded apart, never scored as 0; rerun to retry): "
                 + "; ".join(why), style="yellow")


def _stop_with_status(summary: ScoreSummary) -> None:
    """Exit 4 when a budget stopped the judging, 3 when verdicts are missing, as run."""
    if summary.budget_stop:
        say(f"stopped by the budget: {summary.budget_stop} (this run folder, answers and "
             "judges, every invocation counted). Nothing more was sent; what was in flight "
             "is recorded. Rerun with a higher budget to judge the rest.", style="yellow")
        raise typer.Exit(EXIT_BUDGET)
    if summary.failures:  # verdicts missing, as run's failed questions (design 0040)
        raise typer.Exit(EXIT_SOME_FAILED)
