"""Setting a run up: the run folder (identity, inputs, lock), the benchmark, model,
system, scorers and judge, the pre-flight requests and the read before the first request."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..benchmarks import BenchmarkOptions, PartReading, QuestionCounting, TakesOptions
from ..cache import ResponseCache
from ..errors import ConfigFieldError, literal
from ..media import ImagePolicy
from ..models import (
    GenerateConfig,
    ModelSettings,
    OwnTokenizer,
    SendClock,
    aclose_if_closable,
    create_model,
    release_if_releasable,
)
from ..registry import NEEDS_PROGRAM, lookup
from ..runfolder import (
    MANIFEST,
    RECORDS,
    load_manifest,
    read_records,
    rewrite_records,
    write_manifest,
)
from ..schema import RUN_RUNNING, Episode
from ..scoring import JudgePipeline, default_scorers
from ..systems import SendsToEndpoints, SystemContext
from ..tokens import TokenCounter
from ._config import RunConfig, in_shard
from ._lock import RunLock
from ._manifest import build_manifest, config_hash
from ._names import check_names, system_needs
from ._records import _history_cut
from ._survey import Survey, check, sizer, survey

if TYPE_CHECKING:
    from ..captioners import CaptionStage


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
        first = self.model.first_send_at if isinstance(self.model, SendClock) else None
        await aclose_if_closable(self.model)
        await aclose_if_closable(self.probe)  # a system's own connections (a memory service)
        if self.judging is not None:
            await aclose_if_closable(self.judging.model)
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


class Preparing:
    """The part of :class:`Runner` that prepares the folder and sets the run up."""

    config: RunConfig
    run_dir: Path
    _endpoints: dict[tuple[str, str], Any]
    _made_dir: bool
    _lock: RunLock | None = None  # held from prepare() to unlock()

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
            raise ConfigFieldError(f"{literal(self.run_dir)} holds a run with a different "
                                   f"configuration ({literal(', '.join(diff) or 'config hash')}"
                                   " differ); use a new {out} folder", "out")
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
        lock, self._lock = self._lock, None
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
        from ..io import file_sha256

        inputs = ((prior or {}).get("benchmark") or {}).get("inputs") or {}
        if not isinstance(inputs, dict) or not inputs:
            return
        for path, digest in inputs.items():
            if not isinstance(digest, str) or not Path(path).is_file():
                continue
            now = file_sha256(path)
            if now != digest:
                raise ConfigFieldError(f"{literal(self.run_dir)} was answered from "
                                       f"{literal(path)} with sha256 {digest[:16]}…, which is "
                                       f"now {now[:16]}…: the input changed; use a new {{out}} "
                                       "folder for the new data", "out")
        data = Path(self.config.data)
        if data.is_file() and str(data) not in inputs and str(data.resolve()) not in inputs:
            now = file_sha256(data)
            if now not in inputs.values():
                raise ConfigFieldError(f"{literal(self.run_dir)} was answered from "
                                       f"{literal(', '.join(sorted(inputs)))}, not "
                                       f"{literal(data)} (sha256 {now[:16]}…); use a new "
                                       "{out} folder for other data", "out")

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
        if c.bench_options and not (isinstance(bench, TakesOptions) and bench.options):
            raise ConfigFieldError(f"{{bench_options}}: {literal(c.bench)} takes no benchmark "
                                   "options", "bench_options")
        policy = ImagePolicy(max_side=c.image_max_side, format=c.image_format)
        cache = ResponseCache(c.cache_path) if c.cache and with_cache else None
        model = create_model(c.model, c.model_settings(policy, cache))
        setup: Setup | None = None
        try:
            if c.tokenizer == "model":
                if not isinstance(model, OwnTokenizer):
                    raise ConfigFieldError(f"{{tokenizer}} model needs a local: model "
                                           f"({literal(c.model)} has no tokenizer of its own "
                                           "to ask)", "tokenizer")
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
        """One request per distinct endpoint before the first question (models/_preflight.py).
        The findings are kept on the runner: a worker process's setup asks nothing again."""
        from ..captioners import ModelCaptioner
        from ..models._preflight import JUDGE, MODEL, Role, check

        models = [(s.model, MODEL)] + ([(s.judging.model, JUDGE)] if s.judging else [])
        if s.captions and isinstance(s.captions.captioner, ModelCaptioner):
            models.append((s.captions.captioner.model,
                           Role("captioner", "--captioner-base-url", "--api-key-env")))
        endpoints = s.new_system.endpoints() if isinstance(s.new_system, SendsToEndpoints) \
            else []
        for endpoint in endpoints:  # rag's embedders
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
        needs = system_needs(c)
        check(found, c, needs_program=NEEDS_PROGRAM in needs,
              tokenizer=s.counter.describe()["text_tokenizer"])
        return found

    def judge_pipeline(self, cache: ResponseCache | None) -> JudgePipeline | None:
        c = self.config
        if c.judge is None:
            return None
        if not c.judge.startswith(("openai:", "local:")):
            raise ConfigFieldError("{judge} must look like openai:<name> or "
                                   f"local:<name-or-path>, got {literal(repr(c.judge))}",
                                   "judge")
        settings = ModelSettings(base_url=c.judge_base_url, api_key_env=c.judge_api_key_env,
                                 concurrency=c.concurrency, timeout_s=c.timeout_s,
                                 max_attempts=c.max_attempts, retry_base_s=c.retry_base_s,
                                 cache=None if cache is None else cache.for_kind("judge"),
                                 model_options=dict(c.judge_model_options),
                                 options_field="judge_model_options")
        return JudgePipeline(create_model(c.judge, settings), c.judge_options, c.judge)


    def expected_todo(self, bench: Any, prep: Prepared) -> int | None:
        """How many questions this invocation will answer, when known before reading: the
        benchmark's own count (``question_count()``, e.g. a generated benchmark's manifest)
        or, on a rerun, the count of the earlier full pass. Unknown (None) under --shard or
        --limit, whose share of the file is only known by reading it."""
        c = self.config
        if c.shard is not None or c.limit is not None:
            return None
        count = bench.question_count() if isinstance(bench, QuestionCounting) else None
        if count is None:
            count = (prep.prior_manifest or {}).get("questions_in_input")
        if not isinstance(count, int) or count < len(prep.done_ok):
            return None
        return count - len(prep.done_ok)


    def _episodes(self, bench: Any, part: tuple[int, int] | None) -> Iterator[Episode]:
        if part is None:
            episodes = bench.episodes()
        elif isinstance(bench, PartReading) and bench.supports_parts:
            episodes = bench.episodes(part=part)
        else:  # every worker reads everything and keeps its share
            k, n = part
            episodes = (ep for i, ep in enumerate(bench.episodes()) if i % n == k)
        for episode in episodes:
            if in_shard(episode.episode_id, self.config.shard):
                yield episode


def _close_now(model: Any) -> None:
    """Release what a model holds without awaiting (setup runs inside the event loop, and
    nothing has been sent yet): a local model's server."""
    release_if_releasable(model)


def _holds_records(run_dir: Path) -> bool:
    try:
        return (run_dir / RECORDS).stat().st_size > 0
    except OSError:
        return False


def _jsonish(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value

