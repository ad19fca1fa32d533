"""memgauge as a library: :func:`run` answers a benchmark with a system and writes a run
folder; :func:`score` adds LLM-judge scores to one. The CLI's ``memgauge run`` and
``memgauge score`` parse their flags and call these.

A configuration mistake raises :class:`~memgauge.errors.ConfigError` (a bad value:
:class:`~memgauge.errors.ConfigFieldError`, naming the field) before the first request;
questions that fail are recorded and counted in the result, never raised. Runnable as it
stands (no model: the oracle system reads a generated benchmark's gold program)::

    import memgauge
    from memgauge.benchmarks.synth import SynthConfig, generate

    generate(SynthConfig(out="bench/synth", questions=6, tiers=["4k"], seed=3))
    summary = memgauge.run(bench="synth", data="bench/synth", out="runs/oracle",
                           system="oracle", model="none:", progress=False)
    print(summary.status, summary.records, summary.ok)  # finished 6 6

More in docs/guide/api.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError, ConfigFieldError

if TYPE_CHECKING:
    from .runner import RunConfig, RunResult
    from .schema import Record
    from .scoring._batch import StagedCache


@dataclass
class RunSummary:
    """What :func:`run` did: the run folder and its counts. ``done``/``ok``/``errors`` are
    this call's; ``records`` (and ``status``) the whole folder's, earlier calls included."""

    run_dir: Path
    status: str  # "finished", or "stopped" (a budget stopped it; rerunning resumes)
    records: int  # questions with a record in the folder (ok or error)
    ok_records: int
    done: int  # answered by this call (ok or error)
    ok: int
    errors: int
    skipped: int  # already done by an earlier call
    wall_s: float
    budget_stop: str | None = None
    notes: list[str] = field(default_factory=list)
    result: RunResult = field(repr=False, kw_only=True)  # the runner's own result


def run(config: RunConfig | None = None, /, *,
        on_progress: Callable[[RunResult, Record | None], None] | None = None,
        on_checked: Callable[[RunConfig], None] | None = None,
        **fields: Any) -> RunSummary:
    """Run ``config`` (a :class:`~memgauge.runner.RunConfig`, or its fields given flat as
    keywords) and return a :class:`RunSummary`. Calling it again with the same
    configuration resumes: questions done ok are skipped, failed ones asked again.

    ``on_checked`` is called once the configuration is checked, before the first request;
    ``on_progress`` after each record. Raises :class:`~memgauge.errors.ConfigError` for a
    configuration mistake (nothing is sent) and
    :class:`~memgauge.errors.InputError` for bad data."""
    from .runner import RunConfig, Runner, load_manifest

    if config is None:
        config = RunConfig(**fields)
    elif fields:
        raise ConfigError("give a RunConfig or its fields as keywords, not both")
    runner = Runner(config, on_progress=on_progress)  # checks it: nothing is sent before
    if on_checked is not None:
        on_checked(runner.config)
    result = runner.run_sync()
    manifest = load_manifest(result.run_dir) or {}
    counts = manifest.get("status") or {}
    return RunSummary(run_dir=result.run_dir,
                      status="stopped" if result.budget_stop else "finished",
                      records=int(counts.get("records", 0)), ok_records=int(counts.get("ok", 0)),
                      done=result.done, ok=result.ok, errors=result.errors,
                      skipped=result.skipped, wall_s=result.wall_s,
                      budget_stop=result.budget_stop, notes=list(result.notes), result=result)


class ScoreConfig(BaseModel):
    """How :func:`score` judges a run folder (the fields of ``memgauge score``)."""

    model_config = ConfigDict(extra="forbid")

    run_dir: str
    judge: str  # openai:<name> or local:<name-or-path>
    judge_base_url: str | None = None
    judge_model_options: dict[str, str] = Field(default_factory=dict)  # local: judges
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = Field(default=8, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    # the judge's own choices (scoring.JudgeOptions)
    name: str = "judge"
    rubric: str = "auto"
    mode: str = "default"
    extract: bool = False
    label_errors: bool = True
    prompt_file: str | None = None
    # the endpoint's Batch API instead of one request per verdict
    batch: bool = False
    batch_poll_s: float = 30.0
    batch_window: str = "24h"
    # the budget over the run folder's spend, answers and judges (design 0034)
    prices: str | None = None
    budget_usd: float | None = Field(default=None, gt=0)
    max_tokens_total: int | None = Field(default=None, ge=1)
    cache: bool = True

    def __init__(self, **fields: Any) -> None:
        try:
            super().__init__(**fields)
        except ValidationError as exc:
            from .runner._config import _field_error

            raise _field_error(exc) from None

    @field_validator("judge")
    @classmethod
    def _judge_spec(cls, judge: str) -> str:
        if not judge.startswith(("openai:", "local:")):
            shown = repr(judge).replace("{", "{{").replace("}", "}}")
            raise ConfigFieldError("{judge} must look like openai:<name> or "
                                   f"local:<name-or-path>, got {shown}", "judge")
        return judge


@dataclass
class ScoreSummary:
    """What :func:`score` did: the judge's counts (``judged``, ``failures``, ...), the cache's
    hits and misses (None without a cache) and why a budget stopped it, if it did."""

    run_dir: Path
    counts: dict[str, int]
    budget_stop: str | None = None
    cache_hits: int | None = None
    cache_misses: int | None = None

    @property
    def failures(self) -> int:
        return int(self.counts.get("failures", 0))


def score(config: ScoreConfig | None = None, /, *,
          say: Callable[[str], None] | None = None, **fields: Any) -> ScoreSummary:
    """Judge the run folder of ``config`` (a :class:`ScoreConfig`, or its fields as
    keywords); a second call judges only what is missing. Raises
    :class:`~memgauge.errors.ConfigError` before any request for a configuration mistake;
    verdicts that fail are counted (``failures``), never scored as 0. ``say`` receives the
    batch mode's progress lines."""
    from .cache import ResponseCache
    from .models import ModelSettings, create_model
    from .scoring import JudgeOptions

    if config is None:
        config = ScoreConfig(**fields)
    elif fields:
        raise ConfigError("give a ScoreConfig or its fields as keywords, not both")
    c = config
    options = JudgeOptions(name=c.name, rubric=c.rubric, mode=c.mode, extract=c.extract,
                           label_errors=c.label_errors, prompt_file=c.prompt_file)
    options.check()
    _check_run_folder(c)
    cache = ResponseCache(kind="judge") if c.cache else None
    model = create_model(c.judge, ModelSettings(
        base_url=c.judge_base_url, api_key_env=c.api_key_env, concurrency=c.concurrency,
        timeout_s=c.timeout_s, cache=cache, model_options=dict(c.judge_model_options),
        options_field="judge_model_options"))
    counted: ResponseCache | StagedCache | None = cache  # the judge's cache hits and misses
    try:
        if c.batch:
            from .scoring._batch import BatchJudgeModel

            batch = BatchJudgeModel.like(model)
            # a batch replays each call once per round: its staged view counts each once
            model, counted = batch, batch.staged or cache
        from .models._preflight import Role
        from .models._preflight import check as preflight
        from .runner import load_manifest, read_records

        # the folder first (a mistake there is named before any request), then the
        # judge's endpoint, before the first verdict, as run's are
        budget = _score_budget(c, load_manifest(c.run_dir))
        read_records(c.run_dir)
        if not budget.reason:  # spent already: nothing is sent, not even a probe
            preflight([(model, Role("judge", "--judge-base-url", "--api-key-env"))], {})
        counts = asyncio.run(_judge(c, model, options, budget, say))
    finally:
        if cache is not None:
            cache.close()
    return ScoreSummary(run_dir=Path(c.run_dir), counts=counts, budget_stop=budget.reason,
                        cache_hits=None if counted is None else counted.hits,
                        cache_misses=None if counted is None else counted.misses)


def _check_run_folder(c: ScoreConfig) -> None:
    if not (Path(c.run_dir) / "manifest.json").exists():
        from .runfolder import benchmark_not_run, holds_benchmark

        if holds_benchmark(c.run_dir):
            raise benchmark_not_run(c.run_dir)
        raise ConfigError(f"{c.run_dir} is not a run folder (no manifest.json)")
    if c.batch:
        from .scoring._batch import check_batch_options

        check_batch_options(c.judge, c.batch_poll_s, c.batch_window, c.name)


async def _judge(c: ScoreConfig, model: Any, options: Any, budget: Any,
                 say: Callable[[str], None] | None) -> dict[str, Any]:
    from .scoring import judge_run

    try:
        if c.batch:
            from .scoring._batch import batch_judge_run

            return await batch_judge_run(c.run_dir, model, options=options,
                                         poll_s=c.batch_poll_s, window=c.batch_window,
                                         say=say or (lambda _line: None), budget=budget)
        return await judge_run(c.run_dir, model, concurrency=c.concurrency, options=options,
                               spec=c.judge, budget=budget)
    finally:
        await model.aclose()


def _score_budget(c: ScoreConfig, manifest: dict[str, Any] | None) -> Any:
    """score's budget over the run folder's spend (design 0034), checked before any
    request: the judge needs a price for a dollar budget, and so does the run's model when
    its answers spent tokens."""
    from .runner._budget import make_budget

    identity = ((manifest or {}).get("config") or {}).get("identity") or {}
    return make_budget(c.run_dir, str(identity.get("model") or ""), c.budget_usd,
                       c.max_tokens_total, c.prices, judges=[c.judge], answering=False)


__all__ = ["RunSummary", "ScoreConfig", "ScoreSummary", "run", "score"]
