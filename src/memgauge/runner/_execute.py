"""Run a system over a benchmark: stream episodes, answer, score, persist, resume.

Episodes stream from the loader and are worked on as they arrive (bounded in flight), so
the first request goes out before a large file has been read. A rerun of the same run
folder skips questions already done and retries those that failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._cache_hits import CacheHits, count_records
from .._secrets import redact_tree
from ..benchmarks import BenchmarkOptions
from ..cache import ResponseCache
from ..errors import ConfigError, InputError
from ..media import ImageEncoder, ImagePolicy
from ..models import GenerateConfig, ModelSettings, create_model
from ..models._aimd import PRIORITY
from ..models.openai_compat import ROUTING_KEY
from ..registry import NEEDS_PROGRAM, lookup
from ..schema import (
    INGEST_FAILED,
    RUN_FINISHED,
    RUN_RUNNING,
    RUN_STOPPED,
    Cost,
    Episode,
    ErrorInfo,
    Question,
    Record,
    Response,
)
from ..scoring import (
    JudgeOptions,
    JudgePipeline,
    default_scorers,
    is_refusal,
    judge_records,
    record_judging,
    rule_scorers_for,
)
from ..systems import SystemContext
from ..tokens import TokenCounter
from ._budget import Budget, make_budget, read_ledger
from ._gc import quiet_gc, restore_gc
from ._ingest_cost import IngestMeter, Share
from ._lock import RunLock
from ._manifest import build_manifest, config_hash, package_versions
from ._names import check_names, system_needs
from ._prefix import (
    PrefixReuse,
    PriorityGate,
    Then,
    count_reuse,
    gate_slots,
    shares_prefix,
    warm_first,
)
from ._store import (
    MANIFEST,
    RECORDS,
    RecordWriter,
    StorageError,
    holds_benchmark,
    load_manifest,
    read_records,
    rewrite_records,
    write_manifest,
)
from ._survey import Survey, check, sizer, survey

if TYPE_CHECKING:
    from ..captioners import CaptionStage


# RunConfig fields given by flags that are system options of the same names (rag's)
EMBEDDER_FLAGS = ("embedder", "embedder_base_url", "image_embedder", "image_embedder_base_url")


@dataclass
class RunConfig:
    bench: str
    data: str
    out: str
    system: str = "full-context"
    system_options: dict[str, Any] = field(default_factory=dict)
    model: str = "replay:"
    image_dir: str | None = None
    allow_missing_images: bool = False
    allow_inconsistent: bool = False  # --allow-inconsistent: warnings in the manifest
    question_ids: str | None = None
    tier: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    # AIMD per endpoint between min_concurrency and concurrency (design 0034); not identity
    adaptive_concurrency: bool = True
    min_concurrency: int = 1
    # --prices, --budget-usd, --max-tokens-total: the ledger and the budget over the whole
    # run, every invocation's records included (runner/_budget.py); not identity
    prices: str | None = None
    budget_usd: float | None = None
    max_tokens_total: int | None = None
    limit: int | None = None
    shard: tuple[int, int] | None = None
    context_mode: str = "image"
    instruction: str = "direct"
    label_images: bool = False
    max_context_tokens: int | None = None
    overflow: str = "error"
    count_tokens: bool = False
    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    image_max_side: int | None = 800
    image_format: str = "keep"
    image_mode: str = "inline"
    tokenizer: str | None = None  # None: the model's own for local:, else o200k_base
    image_formula: str = "openai-tiles"
    timeout_s: float = 120.0
    max_attempts: int = 6
    retry_base_s: float = 0.5
    cache: bool = True
    cache_path: str | None = None
    workers: int = 1  # answering processes (see runner/_workers.py); not part of the identity
    # --executor ray: episodes answered as Ray tasks (runner/_ray.py); not part of the identity
    executor: str = "local"
    ray_address: str | None = None  # None: Ray's default (RAY_ADDRESS, else a local instance)
    # --ray-keep-warm S: parts run in named detached actors that outlive the run by S idle
    # seconds (runner/_ray_warm.py); opt-in, since they stay resident on the cluster
    ray_keep_warm_s: float | None = None
    progress: bool = True
    argv: list[str] = field(default_factory=list)
    # Judging while running; not part of the identity: a run can be judged later too.
    judge: str | None = None  # openai:<name>
    judge_base_url: str | None = None
    judge_api_key_env: str = "OPENAI_API_KEY"
    judge_options: JudgeOptions = field(default_factory=JudgeOptions)
    # --model-option / --judge-model-option (local: models: n_ctx, n_parallel, threads, ...)
    model_options: dict[str, str] = field(default_factory=dict)
    judge_model_options: dict[str, str] = field(default_factory=dict)
    # --captioner: text for images, for systems that read text (captioners/, design 0023)
    captioner: str | None = None
    captioner_base_url: str | None = None
    captioner_prompt: str = "dense"
    captioner_model_options: dict[str, str] = field(default_factory=dict)  # local: captioners
    # --protocol: online answers each question once its asked_after session is ingested;
    # offline ingests every session first (design 0029). Same for data without asked_after.
    protocol: str = "online"
    # --bench-option key=value: a loader's own choices (BenchmarkOptions.extra), e.g. locomo's
    # asked_after=evidence; in the identity only when given
    bench_options: dict[str, str] = field(default_factory=dict)
    # --embedder / --image-embedder (and their base URLs): the system options of the same
    # names, given as flags; merged into the system options (effective_system_options)
    embedder: str | None = None
    embedder_base_url: str | None = None
    image_embedder: str | None = None
    image_embedder_base_url: str | None = None

    # Fields that define what a run measures; a run folder refuses a different identity.
    IDENTITY = ("bench", "system", "system_options", "model", "base_url", "question_ids", "tier", "shard",
                "context_mode", "instruction", "label_images", "max_context_tokens",
                "overflow", "max_tokens", "temperature", "seed", "image_max_side",
                "image_format", "image_mode", "tokenizer", "image_formula")

    def identity(self) -> dict[str, Any]:
        ident = {k: getattr(self, k) for k in self.IDENTITY}
        # a flag and the system option it stands for measure the same: one identity
        ident["system_options"] = self.effective_system_options()
        for key in ("top_p", "extra_body"):  # only when given: earlier folders keep their hash
            if getattr(self, key):
                ident[key] = getattr(self, key)
        if self.model_options:  # only when given: earlier run folders keep their hash
            ident["model_options"] = dict(sorted(self.model_options.items()))
        if self.protocol != "online":  # online is what every earlier run did: same hash
            ident["protocol"] = self.protocol
        if self.bench_options:  # only when given: earlier run folders keep their hash
            ident["bench_options"] = dict(sorted(self.bench_options.items()))
        if self.captioner:  # only when given: earlier run folders keep their hash
            ident["captioner"] = self.captioner
            if self.captioner.startswith(("openai:", "local:")):
                ident["captioner_prompt"] = self.captioner_prompt
            from ..models.local import OUTPUT_OPTIONS

            output = {k: v for k, v in sorted(self.captioner_model_options.items())
                      if k in OUTPUT_OPTIONS}
            if output:  # only those that change the captions (design 0023)
                ident["captioner_model_options"] = output
        # a password or token is not what a run measures: the system, base URLs and every
        # URL-valued option are kept without theirs (design 0016)
        return redact_tree(ident)

    def effective_system_options(self) -> dict[str, Any]:
        """``--system-option``s with the embedder flags merged in; a flag and the option it
        stands for, given both, are a ConfigError naming both."""
        out = dict(self.system_options)
        for key in EMBEDDER_FLAGS:
            value = getattr(self, key)
            if value is None:
                continue
            if key in out:
                raise ConfigError(f"--{key.replace('_', '-')} {value} and --system-option "
                                  f"{key}={out[key]} say the same thing: give one of them")
            out[key] = value
        return out

    def check_embedders(self) -> None:
        """The embedder flags' specs, and that the system takes them (before the system is
        made, so the error names the flag)."""
        given = [k for k in EMBEDDER_FLAGS if getattr(self, k) is not None]
        if not given:
            return
        from ..retrieval import Flags, check_embedder_spec, check_image_embedder_spec

        options = self.effective_system_options()
        try:
            declared = getattr(lookup("system", self.system), "registry_options", None)
        except ConfigError:
            declared = None  # not a registered name (an http:// system): it says itself
        if declared is not None and (missing := [k for k in given if k not in declared]):
            raise ConfigError(f"--{missing[0].replace('_', '-')}: the system {self.system} "
                              "embeds nothing with it (rag does, with retriever=embed, "
                              "visual or hybrid; fact-memory and summary-memory with "
                              "retriever=embed)")
        if "embedder" in given or "embedder_base_url" in given:
            check_embedder_spec(options.get("embedder", "model2vec"),
                                options.get("embedder_base_url"),
                                Flags("--embedder", "--embedder-base-url"))
        if "image_embedder" in given or "image_embedder_base_url" in given:
            check_image_embedder_spec(options.get("image_embedder", ""),
                                      options.get("image_embedder_base_url"),
                                      Flags("--image-embedder", "--image-embedder-base-url"))

    def check(self) -> None:
        """Every option's value, before anything is read or sent: a mistake here must not
        become one error per question."""
        from ..systems._context import CONTEXT_MODES, INSTRUCTIONS

        choices = {"--context-mode": (self.context_mode, CONTEXT_MODES),
                   "--instruction": (self.instruction, tuple(INSTRUCTIONS)),
                   "--overflow": (self.overflow, ("error", "drop-oldest")),
                   "--image-format": (self.image_format, ("keep", "png", "jpeg")),
                   "--image-mode": (self.image_mode, ("inline", "url")),
                   "--protocol": (self.protocol, ("online", "offline"))}
        for flag, (value, allowed) in choices.items():
            if value not in allowed:
                raise ConfigError(f"{flag} {value!r}: use one of {', '.join(allowed)}")
        if self.out and holds_benchmark(self.out):
            raise ConfigError(f"--out {self.out} is a benchmark folder (written by `memgauge "
                              "generate`): a run writes a folder of its own; pass the "
                              f"benchmark as --data {self.out} and a new folder as --out "
                              "(e.g. --out runs/NAME)")
        at_least = {"--concurrency": (self.concurrency, 1), "--workers": (self.workers, 1),
                    "--min-concurrency": (self.min_concurrency, 1),
                    "--max-tokens-total": (self.max_tokens_total, 1),
                    "--limit": (self.limit, 1), "--max-tokens": (self.max_tokens, 1),
                    "--max-attempts": (self.max_attempts, 1),
                    "--max-context-tokens": (self.max_context_tokens, 1),
                    "--image-max-side": (self.image_max_side, 1)}
        for flag, (value, low) in at_least.items():
            if value is not None and value < low:
                raise ConfigError(f"{flag} {value}: must be at least {low}")
        if not self.timeout_s > 0:
            raise ConfigError(f"--timeout {self.timeout_s:g}: must be more than 0 seconds")
        self.check_budget()
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ConfigError(f"--top-p {self.top_p:g}: must be in (0, 1]")
        if not self.temperature >= 0:
            raise ConfigError(f"--temperature {self.temperature:g}: must be 0 or more")
        if self.tokenizer not in (None, "model") and (self.count_tokens
                                                        or self.max_context_tokens):
            from ..tokens import check_tokenizer

            check_tokenizer(self.tokenizer)
        self.check_embedders()
        self.check_captioner_options()
        if (self.executor != "local" or self.ray_address is not None
                or self.ray_keep_warm_s is not None):
            from ._ray import check_ray_config

            check_ray_config(self)

    def check_budget(self) -> None:
        """--min-concurrency, --budget-usd (a price for the model), --prices: before the
        first request."""
        if self.min_concurrency > self.concurrency:
            raise ConfigError(f"--min-concurrency {self.min_concurrency}: must not exceed "
                              f"--concurrency {self.concurrency}")
        if self.budget_usd is not None and not self.budget_usd > 0:
            raise ConfigError(f"--budget-usd {self.budget_usd:g}: must be more than 0")
        limited = self.budget_usd is not None or self.max_tokens_total is not None
        if limited and (self.workers > 1 or self.executor != "local"):
            raise ConfigError("--budget-usd and --max-tokens-total need --workers 1 and "
                              "--executor local (each worker process or Ray task would keep "
                              "a budget of its own)")
        if self.prices is not None or self.budget_usd is not None:
            make_budget(self.out, self.model, self.budget_usd, self.max_tokens_total,
                        self.prices, read_spent=False,
                        judges=[self.judge] if self.judge else [])

    def check_captioner_options(self) -> None:
        """--captioner-model-option: a local: captioner's server options, checked (keys,
        values, the projector file) before any server starts or any request is sent."""
        if not self.captioner_model_options:
            return
        flag = "--captioner-model-option"
        if not (self.captioner or "").startswith("local:"):
            raise ConfigError(f"{flag} applies to a local: captioner only (the captioner is "
                              f"{self.captioner or 'not set'})")
        from ..models.local import checked_options

        checked_options(self.captioner_model_options, flag)

    @property
    def is_local(self) -> bool:
        return self.model.startswith("local:")

    def model_settings(self, policy: ImagePolicy, cache: ResponseCache | None) -> ModelSettings:
        """The settings the run's model is made with (``memgauge run`` and ``serve-memory``
        alike)."""
        return ModelSettings(base_url=self.base_url, api_key_env=self.api_key_env,
                             concurrency=self.concurrency, timeout_s=self.timeout_s,
                             adaptive_concurrency=self.adaptive_concurrency,
                             min_concurrency=self.min_concurrency,
                             max_attempts=self.max_attempts, retry_base_s=self.retry_base_s,
                             image_mode=self.image_mode, image_policy=policy,
                             encoder=ImageEncoder(policy), cache=cache,
                             model_options=dict(self.model_options))

    def resolved(self) -> RunConfig:
        """Defaults that depend on the model, settled before the folder's identity is checked:
        a local model counts with its own tokenizer and is limited to its context (minus the
        room its answer needs); anything else counts with o200k_base and has no limit."""
        self.check()
        tokenizer = self.tokenizer or ("model" if self.is_local else "o200k_base")
        limit = self.max_context_tokens
        if self.is_local:
            from ..models.local import context_tokens

            n_ctx = context_tokens(self.model_options)
            if limit is None:
                limit = n_ctx - self.max_tokens
                if limit < 64:
                    raise ConfigError(f"--max-tokens {self.max_tokens} leaves no room for a "
                                      f"prompt in the local model's context of {n_ctx} tokens")
        elif self.model_options:
            raise ConfigError("--model-option applies to local: models only "
                              f"(the model is {self.model})")
        base_url = self.base_url
        if self.model.startswith("openai:"):  # $OPENAI_BASE_URL, as the model reads it: the
            from ..models.openai_compat import resolve_base_url  # identity names the server

            base_url = resolve_base_url(self.base_url)[0]
        return dataclasses.replace(self, tokenizer=tokenizer, max_context_tokens=limit,
                                   base_url=base_url)


@dataclass
class RunResult:
    run_dir: Path
    done: int = 0  # questions finished in this invocation (ok or error)
    ok: int = 0
    errors: int = 0
    skipped: int = 0  # already done by an earlier invocation
    # Questions to do in this invocation: ``total`` once known (from the benchmark's own
    # count or an earlier full pass, else when the reader reaches the end); ``queued`` is
    # how many the reader has handed out so far.
    total: int | None = None
    queued: int = 0
    first_request_s: float | None = None
    wall_s: float = 0.0
    workers: int = 1
    notes: list[str] = field(default_factory=list)  # e.g. why fewer workers ran
    levels: list[int] = field(default_factory=list)  # each endpoint's concurrency level now
    budget_stop: str | None = None  # set when a budget stopped the run (rerun resumes)


@dataclass(frozen=True)
class Prepared:
    """What :meth:`Runner.prepare` found: the earlier manifest, the questions done ok."""

    prior_manifest: dict[str, Any] | None
    done_ok: frozenset[str]
    t_start: float  # perf_counter() at the start
    t_mono: float  # time.monotonic() at the start (first_send_at is on this clock)
    torn_lines: tuple[int, ...] = ()  # fragments of failed writes dropped by the compaction


@dataclass
class Setup:
    """The objects a run answers with (each worker process makes its own)."""

    bench: Any
    cache: ResponseCache | None
    model: Any
    counter: TokenCounter
    policy: ImagePolicy
    new_system: Callable[[], Any]
    probe: Any
    scorers: list[Any]
    judging: JudgePipeline | None
    captions: CaptionStage | None = None  # --captioner
    # the read before the first request (design 0043); made in the parent process only
    survey: Survey | None = None

    async def close(self) -> float | None:
        """Close the model clients; returns when the first request went out (monotonic)."""
        first = getattr(self.model, "first_send_at", None)
        if hasattr(self.model, "aclose"):
            await self.model.aclose()
        if hasattr(self.probe, "aclose"):  # a system's own connections (a memory service)
            await self.probe.aclose()
        if self.judging is not None:
            await self.judging.model.aclose()
        if self.captions is not None:
            await self.captions.aclose()
        return first

    def cache_summary(self) -> dict[str, Any] | None:
        """The cache's counts for the manifest (and closes it)."""
        if self.cache is None:
            return None
        hits, misses = self.cache.counts()  # the model's and the judge's lookups
        out = {"enabled": True, "hits_this_invocation": hits, "misses_this_invocation": misses}
        if self.cache.write_error:
            out["write_error"] = self.cache.write_error
        self.cache.close()
        return out


def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"--shard must look like i/N (e.g. 0/4), got {text!r}") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"--shard {text}: need N >= 1 and 0 <= i < N")
    return i, n


def in_shard(episode_id: str, shard: tuple[int, int] | None) -> bool:
    if shard is None:
        return True
    digest = hashlib.sha256(episode_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % shard[1] == shard[0]


def missing_images(episode: Episode) -> list[str]:
    return [im.source for s in episode.sessions for t in s.turns for im in t.images
            if im.missing]


def evidence_depth(episode: Episode, question: Question) -> float | None:
    """How far back the question's evidence lies: the share of the history shown to the
    system that comes after the earliest evidence session (0 = the last session, towards 1 =
    the first of many). None when the question points at no known session."""
    n = len(episode.sessions)
    if question.asked_after is not None:
        n = min(n, question.asked_after + 1)
    wanted = {p.session_id for p in question.evidence}
    if not wanted or n == 0:
        return None
    positions = [i for i, s in enumerate(episode.sessions[:n]) if s.session_id in wanted]
    if not positions:
        return None
    return round((n - 1 - min(positions)) / n, 4)


def timeline_position(episode: Episode, question: Question) -> dict[str, int]:
    """For a question asked mid-history (``asked_after``): how many sessions existed when it
    was asked, and how many sessions came after its latest evidence session by then (0: the
    session just before the question). Not the protocol's: the question's own time."""
    if question.asked_after is None:
        return {}
    elapsed = max(0, min(len(episode.sessions), question.asked_after + 1))
    out = {"elapsed_sessions": elapsed}
    wanted = {p.session_id for p in question.evidence}
    seen = [i for i, s in enumerate(episode.sessions[:elapsed]) if s.session_id in wanted]
    if seen:
        out["evidence_distance"] = elapsed - 1 - max(seen)
    return out


def make_record(episode: Episode, question: Question, response: Response,
                scorers: list[Any], timings: dict[str, float],
                missing: list[str] | None = None, cost: Cost | None = None) -> Record:
    scores: dict[str, float] = {}
    details = {}
    refused = None
    status = "error" if response.error is not None else "ok"
    if status == "ok":
        prediction = response.text or ""
        refused = is_refusal(prediction)
        for scorer in rule_scorers_for(question, scorers):  # MemEye: letter or judge only
            s = scorer.score(question, prediction)
            if s is not None:
                scores[s.scorer] = s.value
                details[s.scorer] = s
    if missing is None:
        missing = missing_images(episode)
    return Record(
        question_id=question.question_id, episode_id=episode.episode_id,
        benchmark=episode.benchmark, status=status, ability=question.ability,
        subtype=question.subtype, answer_type=question.answer_type, labels=question.labels,
        question=question.text, gold=question.answer,
        prediction=response.text if status == "ok" else None,
        response=response, scores=scores, score_details=details, refused=refused,
        evidence=question.evidence,
        input_tokens=response.meta.get("input_tokens"),
        dropped_sessions=response.meta.get("dropped_sessions", 0),
        missing_images=missing, timings=timings, cost=cost,
        meta=_record_meta(episode, question, response))


def _session_positions(episode: Episode, question: Question,
                       response: Response) -> dict[str, int]:
    """Where the sessions of the evidence and the ranking lie in the episode (0 = first):
    what the clue diagnostics order clues by and the recency probe re-ranks by (design 0030)."""
    if not response.retrieved:  # nothing ranked: nothing to diagnose
        return {}
    named = {p.session_id for p in question.evidence}
    named |= {it.pointer.session_id for it in response.retrieved}
    return {s.session_id: i for i, s in enumerate(episode.sessions) if s.session_id in named}


def _record_meta(episode: Episode, question: Question,
                 response: Response | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if response is not None and (positions := _session_positions(episode, question, response)):
        meta["session_positions"] = positions
    if question.old_answers:
        meta["old_answers"] = question.old_answers
    if question.options:
        meta["options"] = question.options  # extract-then-match rescoring needs them
    if isinstance(question.meta.get("game"), dict):
        meta["game"] = question.meta["game"]  # game scoring and the game report (design 0032)
    for key in ("base_question_id", "rotation", "rotations", "xy_cells", "measure"):  # 0036
        if key in question.meta:
            meta[key] = question.meta[key]
    depth = evidence_depth(episode, question)
    if depth is not None:
        meta["evidence_depth"] = depth
    meta.update(timeline_position(episode, question))
    return meta


def _holds_records(run_dir: Path) -> bool:
    try:
        return (run_dir / RECORDS).stat().st_size > 0
    except OSError:
        return False


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (``timeout``, a closed session, a job scheduler) stops the run as Ctrl-C does:
    what is in flight is recorded and a folder left without a manifest is removed. Python's
    default would end the process at once, leaving an ``--out`` folder holding only
    ``.lock`` that ``report runs/*`` then trips over. Only from the main thread, and only
    when nobody set a SIGTERM handler."""
    import signal
    import threading

    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def as_interrupt(signum: int, frame: Any) -> None:
        handler = signal.getsignal(signal.SIGINT)  # asyncio's while a loop runs
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Runner:
    def __init__(self, config: RunConfig,
                 on_progress: Callable[[RunResult, Record], None] | None = None) -> None:
        self.config = config.resolved()
        self.on_progress = on_progress
        self._endpoints: dict[tuple[str, str], Any] = {}  # pre-flight findings, per endpoint
        self.run_dir = Path(config.out)
        self.budget: Budget | None = None  # made when answering starts (its spend read back)
        self._made_dir = False  # prepare() made the run folder (removed if left unused)

    def _check_identity(self) -> dict[str, Any] | None:
        prior = load_manifest(self.run_dir)
        if prior is None:
            return None
        want = config_hash(self.config.identity())
        if prior.get("config_hash") != want:
            theirs = prior.get("config", {}).get("identity", {})
            diff = sorted(k for k in self.config.IDENTITY
                          if _jsonish(theirs.get(k)) != _jsonish(getattr(self.config, k)))
            mine = self.config.identity()  # and the keys present only when given (protocol)
            diff += sorted(k for k in (set(mine) | set(theirs)) - set(self.config.IDENTITY)
                           if _jsonish(theirs.get(k)) != _jsonish(mine.get(k)))
            raise ConfigError(f"{self.run_dir} holds a run with a different configuration "
                              f"({', '.join(diff) or 'config hash'} differ); "
                              "use a new --out folder")
        return prior

    def prepare(self) -> Prepared:
        """Before answering (once per invocation, in the parent when there are workers):
        check the folder's identity, compact records.jsonl, note what is done."""
        self._made_dir = not self.run_dir.exists()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock = RunLock.acquire(self.run_dir)
        try:
            return self._prepare()
        except BaseException:
            self.unlock()
            raise

    def unlock(self) -> None:
        lock, self._lock = getattr(self, "_lock", None), None
        if lock is not None:
            lock.release()
            self._remove_unused_folder(lock.path)

    def _remove_unused_folder(self, lock_path: Path) -> None:
        """A folder this invocation made and left without a record (a mistake refused before
        the first request, a run stopped before its first answer) is removed: the corrected
        command must find no other configuration there (design 0043), and ``report runs/*``
        no folder that holds nothing to report (design 0051). Only the files a run writes
        first go; whatever else is there stays, and the folder with it."""
        if not self._made_dir or _holds_records(self.run_dir):
            return
        with contextlib.suppress(OSError):
            for name in (MANIFEST, RECORDS):
                (self.run_dir / name).unlink(missing_ok=True)
            lock_path.unlink()
            self.run_dir.rmdir()  # only when empty

    def _check_inputs(self, prior: dict[str, Any] | None) -> None:
        """A folder's records belong to the data they were answered from: a rerun whose input
        file changed (a regenerated benchmark, another data file) would mix two datasets in
        one run, so it is refused, naming the file and both digests."""
        from ..benchmarks._base import file_sha256

        inputs = ((prior or {}).get("benchmark") or {}).get("inputs") or {}
        if not isinstance(inputs, dict) or not inputs:
            return
        for path, digest in inputs.items():
            if not isinstance(digest, str) or not Path(path).is_file():
                continue
            now = file_sha256(path)
            if now != digest:
                raise ConfigError(f"{self.run_dir} was answered from {path} with sha256 "
                                  f"{digest[:16]}…, which is now {now[:16]}…: the input "
                                  "changed; use a new --out folder for the new data")
        data = Path(self.config.data)
        if data.is_file() and str(data) not in inputs and str(data.resolve()) not in inputs:
            now = file_sha256(data)
            if now not in inputs.values():
                raise ConfigError(f"{self.run_dir} was answered from "
                                  f"{', '.join(sorted(inputs))}, not {data} (sha256 "
                                  f"{now[:16]}…); use a new --out folder for other data")

    def _prepare(self) -> Prepared:
        prior_manifest = self._check_identity()
        self._check_inputs(prior_manifest)
        torn: list[int] = []
        prior = read_records(self.run_dir, torn=torn)
        records_path = self.run_dir / "records.jsonl"
        if prior or (records_path.exists() and records_path.stat().st_size):
            rewrite_records(self.run_dir, prior.values())  # compact; drops a torn tail line
        done_ok = frozenset(qid for qid, r in prior.items() if r.status == "ok")
        return Prepared(prior_manifest=prior_manifest, done_ok=done_ok,
                        t_start=time.perf_counter(), t_mono=time.monotonic(),
                        torn_lines=tuple(torn))

    def setup(self, *, with_cache: bool = True, survey: bool = False) -> Setup:
        """The benchmark, model, system factory, scorers and judge of this run; with
        ``survey`` (the parent process), the input read once before the first request."""
        c = self.config
        check_names(c)  # before a local model's server starts (minutes) or a file is read
        bench = self.make_bench()
        if c.bench_options and not getattr(bench, "options", None):
            raise ConfigError(f"--bench-option: {c.bench} takes no benchmark options")
        policy = ImagePolicy(max_side=c.image_max_side, format=c.image_format)
        cache = ResponseCache(c.cache_path) if c.cache and with_cache else None
        model = create_model(c.model, c.model_settings(policy, cache))
        setup: Setup | None = None
        try:
            if c.tokenizer == "model":
                if not hasattr(model, "count_text"):
                    raise ConfigError(f"--tokenizer model needs a local: model ({c.model} "
                                      "has no tokenizer of its own to ask)")
                per_message, priming = model.template_overhead()
                counter = TokenCounter(tokenizer="model", image_formula=c.image_formula,
                                       count_fn=model.count_text, label=model.tokenizer_name,
                                       message_overhead=per_message, reply_priming=priming)
            else:
                counter = TokenCounter(tokenizer=c.tokenizer or "o200k_base",
                                       image_formula=c.image_formula)
            setup = self._setup_rest(c, bench, policy, cache, model, counter)
            setup.captions = self._caption_stage(cache, policy)
            self._preflight(setup)
            if survey:
                setup.survey = self.survey(setup)
            return setup
        except BaseException:
            _close_now(model)  # a started local server must not outlive a failed setup
            if setup is not None and setup.captions is not None:
                _close_now(setup.captions.captioner)
            if setup is not None and setup.judging is not None:
                _close_now(setup.judging.model)
            raise

    def make_bench(self) -> Any:
        """A fresh reader of the run's benchmark."""
        c = self.config
        return lookup("benchmark", c.bench)(BenchmarkOptions(
            data=c.data, image_dir=c.image_dir, allow_missing_images=c.allow_missing_images,
            allow_inconsistent=c.allow_inconsistent, question_ids=c.question_ids, tier=c.tier,
            extra=dict(c.bench_options), protocol=c.protocol))

    def _caption_stage(self, cache: ResponseCache | None,
                       policy: ImagePolicy) -> CaptionStage | None:
        c = self.config
        if not c.captioner:
            return None
        from ..captioners import CaptionerSettings, CaptionStage, create_captioner

        settings = CaptionerSettings(
            base_url=c.captioner_base_url, api_key_env=c.api_key_env, prompt=c.captioner_prompt,
            concurrency=max(1, c.concurrency), timeout_s=c.timeout_s,
            max_attempts=c.max_attempts, retry_base_s=c.retry_base_s, image_policy=policy,
            model_options=dict(c.captioner_model_options))
        return CaptionStage(create_captioner(c.captioner, settings), cache)

    def _preflight(self, s: Setup) -> None:
        """One request per distinct endpoint before the first question (runner/_preflight.py).
        The findings are kept on the runner: a worker process's setup asks nothing again."""
        from ._preflight import JUDGE, MODEL, Role, check

        models = [(s.model, MODEL)] + ([(s.judging.model, JUDGE)] if s.judging else [])
        captioner_model = getattr(s.captions.captioner, "model", None) if s.captions else None
        if captioner_model is not None:
            models.append((captioner_model,
                           Role("captioner", "--captioner-base-url", "--api-key-env")))
        for endpoint in getattr(s.new_system, "endpoints", list)():  # rag's embedders
            models.append((endpoint, Role(endpoint.label, endpoint.url_flag, endpoint.key_flag)))
        check(models, self._endpoints)  # a failure: setup() releases the models

    def _setup_rest(self, c: RunConfig, bench: Any, policy: ImagePolicy,
                    cache: ResponseCache | None, model: Any, counter: TokenCounter) -> Setup:
        ctx = SystemContext(model=model, generate=GenerateConfig(
            max_tokens=c.max_tokens, temperature=c.temperature, top_p=c.top_p, seed=c.seed,
            extra_body=dict(c.extra_body)), counter=counter,
            image_policy=policy, context_mode=c.context_mode, instruction=c.instruction,
            label_images=c.label_images, max_context_tokens=c.max_context_tokens,
            overflow=c.overflow, count_tokens=c.count_tokens,
            options=c.effective_system_options(), cache=cache, api_key_env=c.api_key_env)
        new_system = lookup("system", c.system)(ctx)
        return Setup(bench=bench, cache=cache, model=model, counter=counter, policy=policy,
                     new_system=new_system, probe=new_system(), scorers=default_scorers(),
                     judging=self.judge_pipeline(cache))

    def initial_manifest(self, s: Setup, prep: Prepared) -> dict[str, Any]:
        manifest = build_manifest(self.config, model=s.model.describe(),
                                  system=s.probe.describe(), counter=s.counter.describe(),
                                  image_policy=s.policy.describe(), scorers=s.scorers,
                                  prior=prep.prior_manifest, packages=False)
        if s.captions is not None:
            manifest["captioner"] = s.captions.describe()
        # Known before the first request, so that a run stopped early (Ctrl-C, a budget,
        # a crash) says how much of it is missing (design 0040).
        manifest["run_state"] = RUN_RUNNING
        manifest["questions_planned"] = s.survey.planned if s.survey is not None else None
        write_manifest(self.run_dir, manifest)
        return manifest

    def survey(self, s: Setup) -> Survey:
        """Read the input once before the first request (design 0043): the exact plan,
        and a ConfigError for a mistake only the data shows (an id the data lacks, images
        without captions for --context-mode caption, questions an oracle cannot answer, a
        prompt over the model's context)."""
        c = self.config
        cut = functools.partial(_history_cut, c.protocol)
        found = survey(self._episodes(self.make_bench(), None), c.limit,
                       sizer(s.probe, c.overflow, c.max_context_tokens), cut)
        needs = system_needs(lookup("system", c.system), c)
        check(found, c, needs_program=NEEDS_PROGRAM in needs,
              tokenizer=s.counter.describe()["text_tokenizer"])
        return found

    async def run(self) -> RunResult:
        prep = self.prepare()
        try:
            return await self._run(prep)
        finally:
            self.unlock()

    async def _run(self, prep: Prepared) -> RunResult:
        s = self.setup(survey=True)
        manifest = self.initial_manifest(s, prep)
        result = RunResult(run_dir=self.run_dir, skipped=len(prep.done_ok),
                           total=self.expected_todo(s.bench, prep))
        if prep.torn_lines:
            result.notes.append(f"dropped {len(prep.torn_lines)} torn line(s) of records.jsonl "
                                f"(line {', '.join(map(str, prep.torn_lines[:5]))}): "
                                "fragments of a failed write; their questions are asked again")
        failed = False
        try:
            await self.answer(s, prep.done_ok, result, manifest=manifest)
            if s.judging is not None:
                await self.judge_earlier(s.judging, manifest, prep.done_ok)
                if self.budget is not None and self.budget.reason:  # reached judging (0034)
                    result.budget_stop = self.budget.reason
        except BaseException:
            failed = True
            raise
        finally:
            first = await s.close()
            if first is not None:  # when the first request went out
                result.first_request_s = first - prep.t_mono
            bench_manifest = None
            if s.captions is not None:
                manifest["captioner"] = s.captions.summary()
            report = getattr(s.model, "endpoint_report", None)
            if report is not None:  # each endpoint's adaptive level, failover (0034)
                manifest["endpoints"] = report()
            if not failed:
                try:
                    bench_manifest = s.bench.manifest()
                except Exception:  # noqa: BLE001 - optional; must not fail a finished run
                    bench_manifest = None
            if failed:  # the first error is the one to report (a full disk fails this too)
                with contextlib.suppress(StorageError):
                    self.finish(manifest, bench_manifest, cache=s.cache_summary(),
                                stopped=True)
            else:
                self.finish(manifest, bench_manifest, cache=s.cache_summary(),
                            stopped=bool(result.budget_stop))
            result.wall_s = time.perf_counter() - prep.t_start
        return result

    async def answer(self, s: Setup, done_ok: frozenset[str], result: RunResult, *,
                     manifest: dict[str, Any] | None = None,
                     part: tuple[int, int] | None = None) -> None:
        """Answer every question not yet done (of this ``part`` of the items, in a worker),
        writing each record as it finishes. ``manifest`` gets the package versions once the
        first request is out (the parent does that when there are workers)."""
        c = self.config
        scorers, judging, model, new_system = s.scorers, s.judging, s.model, s.new_system
        writer = RecordWriter(self.run_dir)
        gc_previous = quiet_gc()  # see runner/_gc.py
        prefix = shares_prefix(s.probe)  # its first question warms the server (design 0031)
        slots = gate_slots(c.concurrency, model, prefix)
        sem = PriorityGate(slots)
        episode_order = itertools.count()  # a question's gate key: (its episode's, its place)
        # A shared-prefix episode asked at several points (asked_after) frees the gate between
        # them; an episode started meanwhile would take the slot and evict its history from
        # the server's cache. So no more such episodes than slots (their ingest costs nothing).
        episodes_in_flight = asyncio.Semaphore(slots if prefix else max(2, c.concurrency * 2))
        tasks: set[asyncio.Task[None]] = set()
        budget = self.budget = make_budget(self.run_dir, c.model, c.budget_usd,
                                           c.max_tokens_total, c.prices,
                                           judges=[c.judge] if c.judge else [])
        if judging is not None:  # the judge's tokens count toward the budget too (0034)
            judging.on_spend = budget.add_judge
        levels = getattr(model, "concurrency_levels", None)

        async def answer_one(system: Any, episode: Episode, q: Question, share: Share,
                             rank: tuple[int, int] = (0, 0),
                             then: Then | None = None) -> Response | None:
            t0 = time.perf_counter()
            PRIORITY.set(rank)  # the endpoint's adaptive limit keeps the gate's order (0034)
            async with sem.hold(rank):
                if breaker.reason or budget.reason:  # the run is stopping: send nothing
                    return None  # more (no record: the question stays to do for a rerun)
                t_sent = time.perf_counter()
                try:
                    response = await system.answer(q)
                except Exception as exc:  # noqa: BLE001 - a system bug must not lose the item
                    response = Response(error=ErrorInfo(
                        kind="system_error", message=f"{type(exc).__name__}: {exc}"))
                answer_s = time.perf_counter() - t_sent
                if then is not None:  # warm_first: the followers queue before this slot frees
                    await then()
            record = make_record(episode, q, response, scorers,
                                 {"answer_s": round(time.perf_counter() - t0, 4)},
                                 missing.get(episode.episode_id),
                                 cost=share.cost(response, answer_s))
            breaker.observe(record)  # before any await: the next question must see a stop
            budget.add(record)
            if levels is not None:
                result.levels = levels()
            if judging is not None:
                t1 = time.perf_counter()
                await judging.apply(record)
                record.timings["judge_s"] = round(time.perf_counter() - t1, 4)
            await writer.write(record)
            written.add(q.question_id)
            result.done += 1
            if record.status == "ok":
                result.ok += 1
            else:
                result.errors += 1
            if self.on_progress:
                self.on_progress(result, record)
            if breaker.reason:
                raise RunStopped(breaker.reason)
            return response

        missing: dict[str, list[str]] = {}  # per episode, computed once
        written: set[str] = set()  # question ids with a record from this invocation
        breaker = _Breaker(c)

        async def do_episode(episode: Episode, todo: list[Question]) -> None:
            missing[episode.episode_id] = missing_images(episode)
            order = next(episode_order)
            ROUTING_KEY.set(episode.episode_id)  # this task's requests: one replica (0031)
            system: Any = None
            try:
                if s.captions is not None:  # once per distinct image, before any system reads
                    await s.captions.apply(episode)
                system = new_system()
                meter = IngestMeter()  # what ingest cost, shared among the questions (0027)
                with meter.timing():
                    await system.reset(episode)
                ingested = 0
                by_cut: dict[int, list[Question]] = {}
                for q in todo:
                    by_cut.setdefault(_history_cut(c.protocol, episode, q), []).append(q)
                for cut in sorted(by_cut):
                    if budget.reason:  # no more ingest calls either; a rerun goes on
                        break
                    while ingested < cut:
                        with meter.timing(sessions=1):
                            await system.ingest(episode.sessions[ingested])
                        ingested += 1
                    batch = by_cut[cut]
                    shares = meter.shares(len(batch))
                    if len(batch) == 1:  # the usual case: no extra task
                        answered = [await answer_one(system, episode, batch[0], shares[0],
                                                     (order, 0))]
                    elif prefix:
                        answered = await warm_first([
                            functools.partial(answer_one, system, episode, q, sh, (order, i))
                            for i, (q, sh) in enumerate(zip(batch, shares, strict=True))])
                    else:
                        answered = await asyncio.gather(*(
                            answer_one(system, episode, q, sh, (order, i))
                            for i, (q, sh) in enumerate(zip(batch, shares, strict=True))))
                    meter.answered(answered)
            except (RunStopped, StorageError):  # the run stops; its records cannot be written
                raise
            except Exception as exc:  # noqa: BLE001 - its unanswered questions become errors
                err = ErrorInfo(kind=getattr(exc, "error_kind", "system_error"),  # caption_error
                                message=f"{type(exc).__name__}: {exc}")
                for q in todo:
                    if q.question_id in written:
                        continue
                    await writer.write(make_record(episode, q, Response(error=err), scorers, {}))
                    written.add(q.question_id)
                    result.done += 1
                    result.errors += 1
            finally:
                missing.pop(episode.episode_id, None)
                episodes_in_flight.release()
                if hasattr(system, "end_episode"):  # frees what it holds on a server (letta)
                    await system.end_episode()

        # Episode tasks only raise when the run must stop (RunStopped, or an interrupt);
        # their exception is kept here as they finish, so the loop stops starting episodes.
        stopped: list[BaseException] = []

        def finished(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            if not task.cancelled() and task.exception() is not None and not stopped:
                stopped.append(task.exception())  # type: ignore[arg-type]

        remaining = c.limit
        started = False
        in_input = 0  # questions in the input (after --question-ids), done ones included
        selected = 0  # of those, the ones this run is meant to hold (--limit), done included
        spent = False  # a budget stopped the run: the reader only counts on
        try:
            for episode in self._episodes(s.bench, part):
                in_input += len(episode.questions)
                if remaining is not None and remaining <= 0:
                    break
                keep = episode.questions
                if remaining is not None:
                    # --limit counts questions (done ones included), in file order
                    keep = episode.questions[:remaining]
                    remaining -= len(keep)
                selected += len(keep)
                todo = [q for q in keep if q.question_id not in done_ok]
                if not todo or spent:
                    continue
                result.queued += len(todo)
                await episodes_in_flight.acquire()
                if stopped:  # an episode stopped the run: start nothing more
                    raise stopped[0]
                if budget.reason:  # spent: start nothing more (in-flight ones finish), but
                    episodes_in_flight.release()  # read on, so the run knows its size (0040)
                    spent = True
                    continue
                task = asyncio.create_task(do_episode(episode, todo))
                tasks.add(task)
                task.add_done_callback(finished)
                if not started:
                    # Get the first request on the wire before reading on (bounded wait).
                    started = True
                    deadline = time.monotonic() + 1.0
                    while (getattr(model, "first_send_at", 0) is None and not task.done()
                           and time.monotonic() < deadline):
                        await asyncio.sleep(0.001)
                    if manifest is not None:
                        manifest["packages"] = package_versions()
                        write_manifest(self.run_dir, manifest)
                await asyncio.sleep(0)  # let work start while the loader reads on
            if part is None:  # the reader is through: the to-do count is exact now
                result.total = result.queued
                if remaining is None and c.shard is None and manifest is not None:
                    manifest["questions_in_input"] = in_input  # a later rerun's total
                if manifest is not None:  # exact now: what a report counts the run against
                    manifest["questions_planned"] = selected
                if self.on_progress:
                    self.on_progress(result, None)
            if tasks:
                await asyncio.gather(*tasks)
            if stopped:
                raise stopped[0]
            result.budget_stop = budget.reason
            # episodes without a question count as nothing (a shard may be empty)
            if not in_input and part is None and c.shard is None:
                raise InputError("holds no questions"
                                 + (f" among --question-ids {c.question_ids}"
                                    if c.question_ids else "")
                                 + ": nothing to run", file=c.data)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            restore_gc(gc_previous)
            await writer.close()

    def finish(self, manifest: dict[str, Any], bench_manifest: dict[str, Any] | None,
               cache: dict[str, Any] | None, *, stopped: bool = False) -> None:
        """After answering (in the parent when there are workers): the status counts and the
        final manifest. ``stopped``: the invocation ended before every planned question had
        a record (an interrupt, a failure, a budget), which a report must say (design
        0040)."""
        hits = CacheHits()  # from the records: every invocation's answers (design 0018)
        reuse = PrefixReuse()  # the server's prefix cache over the answers sent (0031)
        status = _scan_status(self.run_dir, hits, reuse)
        if status is None:  # duplicate or torn lines: compact (validating every record)
            final = read_records(self.run_dir)
            rewrite_records(self.run_dir, final.values())
            status = _status(final)
            hits = count_records(final.values())
            reuse = count_reuse(final.values())
        manifest["cache_hits"] = hits.to_dict()
        manifest["prefix_cache"] = reuse.to_dict()
        ledger = read_ledger(self.run_dir)  # tokens over every invocation (design 0034)
        manifest["ledger"] = ledger.to_dict(self.budget.price if self.budget else None,
                                            self.budget.prices if self.budget else None)
        if self.budget is not None and self.budget.active:
            manifest["budget"] = self.budget.describe(ledger)
        manifest["benchmark"] = bench_manifest or manifest.get("benchmark")
        manifest["status"] = status
        manifest["run_state"] = RUN_STOPPED if stopped else RUN_FINISHED
        planned = manifest.get("questions_planned")
        if not stopped and (planned is None or planned > status["records"]):
            # Through to the end, every planned question has its record: workers and Ray
            # (no single reader counted) take the count, and an estimate made before
            # reading (a benchmark's own count) cannot leave a finished run "incomplete".
            manifest["questions_planned"] = status["records"]
        if manifest.get("packages") is None:  # no episode was started
            manifest["packages"] = package_versions()
        manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if cache is not None:
            manifest["cache"] = cache
        write_manifest(self.run_dir, manifest)

    def judge_pipeline(self, cache: ResponseCache | None) -> JudgePipeline | None:
        c = self.config
        if c.judge is None:
            return None
        if not c.judge.startswith(("openai:", "local:")):
            raise ConfigError(f"--judge must look like openai:<name> or local:<name-or-path>, "
                              f"got {c.judge!r}")
        settings = ModelSettings(base_url=c.judge_base_url, api_key_env=c.judge_api_key_env,
                                 concurrency=c.concurrency, timeout_s=c.timeout_s,
                                 max_attempts=c.max_attempts, retry_base_s=c.retry_base_s,
                                 cache=None if cache is None else cache.for_kind("judge"),
                                 model_options=dict(c.judge_model_options),
                                 options_flag="--judge-model-option")
        return JudgePipeline(create_model(c.judge, settings), c.judge_options, c.judge)

    async def judge_earlier(self, judging: JudgePipeline, manifest: dict[str, Any],
                             earlier: frozenset[str]) -> None:
        """Judge what earlier invocations answered (``earlier``: their ok question ids) and
        this judge has not scored, then note the judge in the manifest (written on the way
        out). Answers of this invocation were judged as they came: a judge that failed on
        one is not asked again in the same run (the next rerun retries it)."""
        records = list(read_records(self.run_dir).values())
        todo = [r for r in records if r.question_id in earlier and judging.needs(r)]
        if todo:
            await judge_records(todo, judging, concurrency=self.config.concurrency,
                                budget=self.budget)
            rewrite_records(self.run_dir, records)
        record_judging(manifest, judging, records)

    def expected_todo(self, bench: Any, prep: Prepared) -> int | None:
        """How many questions this invocation will answer, when known before reading: the
        benchmark's own count (``question_count()``, e.g. a generated benchmark's manifest)
        or, on a rerun, the count of the earlier full pass. Unknown (None) under --shard or
        --limit, whose share of the file is only known by reading it."""
        c = self.config
        if c.shard is not None or c.limit is not None:
            return None
        count = getattr(bench, "question_count", lambda: None)()
        if count is None:
            count = (prep.prior_manifest or {}).get("questions_in_input")
        if not isinstance(count, int) or count < len(prep.done_ok):
            return None
        return count - len(prep.done_ok)

    def run_sync(self) -> RunResult:
        if self.config.executor == "ray":  # Ray's driver sets its own SIGTERM handler
            return self._run_sync()
        with _terminate_as_interrupt():
            return self._run_sync()

    def _run_sync(self) -> RunResult:
        if self.config.executor == "ray":
            from ._ray import run_with_ray

            try:
                return run_with_ray(self)
            finally:
                self.unlock()
        if self.config.workers <= 1:  # the usual case: the workers module is not imported
            return asyncio.run(self.run())
        from ._workers import run_with_workers, workers_for

        n, why = workers_for(self.config)
        if n > 1:
            try:
                result = run_with_workers(self, n)
            finally:
                self.unlock()
        else:
            result = asyncio.run(self.run())
        if why:
            result.notes.append(why)
        return result

    def _episodes(self, bench: Any, part: tuple[int, int] | None) -> Iterator[Episode]:
        if part is None:
            episodes = bench.episodes()
        elif getattr(bench, "supports_parts", False):
            episodes = bench.episodes(part=part)
        else:  # every worker reads everything and keeps its share
            k, n = part
            episodes = (ep for i, ep in enumerate(bench.episodes()) if i % n == k)
        for episode in episodes:
            if in_shard(episode.episode_id, self.config.shard):
                yield episode


class RunStopped(ConfigError):
    """The run cannot succeed as configured (seen from its first answers); stopped early.
    What was answered is kept."""


class _Breaker:
    """Stops a run whose first answers show the configuration cannot work: image parts sent
    to a model that cannot see (at once), the first few prompts all over the length limit
    (a tier that does not fit the model), or the first few questions all failing with one
    and the same cause that no retry changes (a refused key, a wrong path, a redirect, a
    certificate, the same 400) before anything was answered."""

    OVERFLOW_STREAK = 3
    SAME_CAUSE_STREAK = 3
    # what the endpoint says about every request alike (not a question's own input)
    ENDPOINT_KINDS = ("http_", "redirect", "tls", "bad_response")

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.overflows = 0
        self.answered = 0
        self.reason: str | None = None  # set once the run must stop
        self.seen = 0
        self.cause: tuple[str, str] | None = None  # the latest non-retryable endpoint failure
        self.same = 0  # how many in a row had that cause

    def _limit_text(self) -> str:
        c = self.config
        if c.max_context_tokens is None:
            return "the server's context is smaller"
        text = f"limit {c.max_context_tokens}"
        if c.is_local:
            from ..models.local import context_tokens

            n_ctx = context_tokens(c.model_options)
            if c.max_context_tokens == n_ctx - c.max_tokens:
                text += f" (n_ctx {n_ctx} minus --max-tokens {c.max_tokens} for the answer)"
        return text

    def observe(self, record: Record) -> None:
        self.seen += 1
        err = record.response.error if record.response else None
        if err is None:
            self.answered += 1
            return
        if self.reason:
            return
        if err.kind == "no_vision":
            self.reason = f"stopped after {self.seen} question(s): {err.message}"
        elif (self.answered == 0 and not err.retryable
              and err.kind.startswith(self.ENDPOINT_KINDS)):
            cause = (err.kind, err.message)
            self.same = self.same + 1 if cause == self.cause else 1
            self.cause = cause
            if self.same >= self.SAME_CAUSE_STREAK:
                self.reason = (f"stopped: the first {self.same} questions all failed with "
                               f"the same cause, which no retry changes, and none was "
                               f"answered: {err.kind}: {err.message}")
        elif err.kind == "context_overflow" and self.answered == 0:
            self.overflows += 1
            if self.overflows >= self.OVERFLOW_STREAK and self.config.overflow == "error":
                c = self.config
                what = f"tier {c.tier} " if c.tier else ""
                server_ctx = record.response.meta.get("context_tokens")
                if server_ctx:  # the server counted and refused
                    last = (f"{record.input_tokens} tokens by the server's count; its context "
                            f"is {server_ctx}")
                else:
                    last = (f"{record.input_tokens} tokens counted with {c.tokenizer}; "
                            f"{self._limit_text()}")
                self.reason = (
                    f"stopped: the {what}prompts do not fit the model; the first "
                    f"{self.overflows} were all over the limit (the last: {last}). Use a "
                    "smaller tier, --overflow drop-oldest, a retrieval system, or a larger "
                    "context (--model-option n_ctx=N for local: models)")


def _history_cut(protocol: str, episode: Episode, q: Question) -> int:
    """How many of the episode's sessions are ingested before ``q`` is asked."""
    n = len(episode.sessions)
    return n if q.asked_after is None or protocol == "offline" else min(n, q.asked_after + 1)


def _close_now(model: Any) -> None:
    """Release what a model holds without awaiting (setup runs inside the event loop, and
    nothing has been sent yet): a local model's server."""
    release = getattr(model, "release", None)
    if release is not None:
        release()


def _scan_status(run_dir: Path, hits: CacheHits | None = None,
                 reuse: PrefixReuse | None = None) -> dict[str, int] | None:
    """The status counts from one cheap pass over records.jsonl (records this run wrote
    need no re-validation); None when the file needs compacting (a torn or repeated line),
    which the full :func:`read_records` path handles as before."""
    from ._store import RECORDS, iter_record_lines

    path = Path(run_dir) / RECORDS
    if not path.exists():
        return _status({})
    seen: set[Any] = set()
    ok = ingest_failed = 0
    for _, obj in iter_record_lines(path):
        if type(obj) is not dict:
            return None
        qid = obj.get("question_id")
        if qid in seen:
            return None
        seen.add(qid)
        ok += obj.get("status") == "ok"
        error = obj.get("response", {}).get("error") if obj.get("status") != "ok" else None
        ingest_failed += isinstance(error, dict) and error.get("kind") == INGEST_FAILED
        if hits is not None:
            hits.add_raw(obj)
        if reuse is not None:
            reuse.add_raw(obj)
    return _counts(len(seen), ok, ingest_failed)


def _status(records: dict[str, Record]) -> dict[str, int]:
    ok = sum(1 for r in records.values() if r.status == "ok")
    ingest_failed = sum(1 for r in records.values() if r.status != "ok" and r.response.error
                        is not None and r.response.error.kind == INGEST_FAILED)
    return _counts(len(records), ok, ingest_failed)


def _counts(records: int, ok: int, ingest_failed: int) -> dict[str, int]:
    """The manifest's ``status``; ``ingest_failed`` (errors: sessions a question needs
    failed to ingest, design 0042) only when there are some."""
    out = {"records": records, "ok": ok, "errors": records - ok}
    if ingest_failed:
        out["ingest_failed"] = ingest_failed
    return out


def _jsonish(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def run(config: RunConfig, **kwargs: Any) -> RunResult:
    return asyncio.run(Runner(config, **kwargs).run())


__all__ = ["RunConfig", "RunResult", "RunStopped", "Runner", "asdict", "in_shard", "make_record",
           "parse_shard", "run"]
