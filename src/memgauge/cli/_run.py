"""``memgauge run`` (evaluate a system on a benchmark; rerun to resume) and ``memgauge
merge`` (shard runs into one run folder): the commands that write a run folder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import MemgaugeError
from ..runfolder import count_lines
from ..runner import RunConfig, merge_runs, parse_shard
from ..scoring import JudgeOptions
from ._common import EXIT_INTERRUPTED, err, fail, json_object, parse_options, registry_help, say
from ._config import CONFIG_HELP, config_callback
from ._execute import execute_run

_EMBEDDER_HELP = ("The text embedder of systems that embed (rag with retriever=embed, visual, "
                  "hybrid; fact-memory, summary-memory with retriever=embed): model2vec | "
                  "model2vec:DIR | sentence-transformers:NAME | openai:MODEL (as "
                  "--system-option embedder=)")
_IMAGE_EMBEDDER_HELP = ("Image embeddings for rag's visual/hybrid retriever from an endpoint "
                        "you serve (CLIP, SigLIP): openai:MODEL; default: the offline "
                        "perceptual-hash stand-in (as --system-option image_embedder=)")


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
        "--config", help=CONFIG_HELP, is_eager=True, callback=config_callback)] = None,
) -> None:
    """Evaluate a system on a benchmark; rerun the same command to resume."""
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
        done = count_lines(out_dir) if Path(out_dir).is_dir() else 0
        say(f"interrupted: {done} questions recorded in {out_dir}; rerun the same command "
             "to resume")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def merge(
    run_dirs: Annotated[list[str], typer.Argument(help="Run folders to merge (e.g. shards)")],
    out_dir: Annotated[str, typer.Option("--out", help="Merged run folder")],
    partial: Annotated[bool, typer.Option(
        help="Merge even if some shards i/N are missing (the manifest lists them)")] = False,
) -> None:
    """Merge shard runs into one run folder."""
    try:
        status = merge_runs(run_dirs, out_dir, partial=partial)
    except MemgaugeError as exc:
        fail(exc)
    err.print(f"merged {len(run_dirs)} runs into {out_dir}: {status['records']} records "
              f"({status['ok']} ok, {status['errors']} errors)", highlight=False)
