"""The run's configuration: :class:`RunConfig`, its checks and its identity, and the
shard a run takes."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .._secrets import redact_tree
from ..cache import ResponseCache
from ..errors import ConfigError, ConfigFieldError
from ..media import ImageEncoder, ImagePolicy
from ..models import ModelSettings
from ..registry import registration
from ..runfolder import holds_benchmark
from ..scoring import JudgeOptions
from ._budget import make_budget

# RunConfig fields given by flags that are system options of the same names (rag's)
EMBEDDER_FLAGS = ("embedder", "embedder_base_url", "image_embedder", "image_embedder_base_url")


class _Section(BaseModel):
    """A group of RunConfig's fields; a mistake in one is a ConfigFieldError naming it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True,
                              arbitrary_types_allowed=True)


class DataConfig(_Section):
    """What is read: the benchmark, its file, which of its questions, and when they are
    asked."""

    bench: str
    data: str
    image_dir: str | None = None
    allow_missing_images: bool = False
    allow_inconsistent: bool = False  # warnings in the manifest instead of an error
    question_ids: str | None = None
    tier: str | None = None
    limit: int | None = Field(default=None, ge=1)
    shard: tuple[int, int] | None = None
    # online answers each question once its asked_after session is ingested; offline
    # ingests every session first (design 0029). Same for data without asked_after.
    protocol: Literal["online", "offline"] = "online"
    # a loader's own choices (BenchmarkOptions.extra), e.g. locomo's asked_after=evidence;
    # in the identity only when given
    bench_options: dict[str, str] = Field(default_factory=dict)

    @field_validator("shard")
    @classmethod
    def _shard_in_range(cls, shard: tuple[int, int] | None) -> tuple[int, int] | None:
        if shard is not None and (shard[1] < 1 or not 0 <= shard[0] < shard[1]):
            raise ConfigFieldError(f"{{shard}} {shard[0]}/{shard[1]}: need N >= 1 and "
                                   "0 <= i < N", "shard")
        return shard


class SystemSetup(_Section):
    """The system under evaluation and its options."""

    system: str = "full-context"
    system_options: dict[str, Any] = Field(default_factory=dict)
    # the system options of the same names, given as fields of their own (the CLI's embedder
    # flags); merged into the system options (effective_system_options)
    embedder: str | None = None
    embedder_base_url: str | None = None
    image_embedder: str | None = None
    image_embedder_base_url: str | None = None


class GenerationConfig(_Section):
    """The answering model, its endpoint and how it generates."""

    model: str = "replay:"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    # local: models' server options: n_ctx, n_parallel, threads, ...
    model_options: dict[str, str] = Field(default_factory=dict)
    max_tokens: int = Field(default=512, ge=1)
    temperature: float = Field(default=0.0, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    max_attempts: int = Field(default=6, ge=1)
    retry_base_s: float = 0.5


class ContextConfig(_Section):
    """What the system is shown: how the history becomes a prompt, and its images."""

    context_mode: str = "image"
    instruction: str = "direct"
    label_images: bool = False
    max_context_tokens: int | None = Field(default=None, ge=1)
    overflow: Literal["error", "drop-oldest"] = "error"
    count_tokens: bool = False
    image_max_side: int | None = Field(default=800, ge=1)
    image_format: Literal["keep", "png", "jpeg"] = "keep"
    image_mode: Literal["inline", "url"] = "inline"
    tokenizer: str | None = None  # None: the model's own for local:, else o200k_base
    image_formula: str = "openai-tiles"

    @field_validator("context_mode")
    @classmethod
    def _known_context_mode(cls, value: str) -> str:
        from ..prompt import CONTEXT_MODES

        return _one_of("context_mode", value, CONTEXT_MODES)

    @field_validator("instruction")
    @classmethod
    def _known_instruction(cls, value: str) -> str:
        from ..prompt import INSTRUCTIONS

        return _one_of("instruction", value, tuple(INSTRUCTIONS))


class ExecutionConfig(_Section):
    """Where the run is written and how it is worked on; none of it is in the identity."""

    out: str
    concurrency: int = Field(default=8, ge=1)
    # AIMD per endpoint between min_concurrency and concurrency (design 0034)
    adaptive_concurrency: bool = True
    min_concurrency: int = Field(default=1, ge=1)
    workers: int = Field(default=1, ge=1)  # answering processes (runner/_workers.py)
    executor: str = "local"  # ray: episodes answered as Ray tasks (runner/_ray.py)
    ray_address: str | None = None  # None: Ray's default (RAY_ADDRESS, else a local instance)
    # parts run in named detached actors that outlive the run by this many idle seconds
    # (runner/_ray_warm.py); opt-in, since they stay resident on the cluster
    ray_keep_warm_s: float | None = None
    cache: bool = True
    cache_path: str | None = None
    progress: bool = True
    argv: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _floor_under_ceiling(self) -> ExecutionConfig:
        if self.min_concurrency > self.concurrency:
            raise ConfigFieldError(f"{{min_concurrency}} {self.min_concurrency}: must not "
                                   f"exceed {{concurrency}} {self.concurrency}",
                                   "min_concurrency", "concurrency")
        return self


class BudgetConfig(_Section):
    """The ledger and the budget over the whole run, every invocation's records included
    (runner/_budget.py); not in the identity."""

    prices: str | None = None
    budget_usd: float | None = Field(default=None, gt=0)
    max_tokens_total: int | None = Field(default=None, ge=1)


class JudgeConfig(_Section):
    """Judging while running; not in the identity: a run can be judged later too."""

    judge: str | None = None  # openai:<name> or local:<name-or-path>
    judge_base_url: str | None = None
    judge_api_key_env: str = "OPENAI_API_KEY"
    judge_options: JudgeOptions = Field(default_factory=JudgeOptions)
    judge_model_options: dict[str, str] = Field(default_factory=dict)


class CaptionerConfig(_Section):
    """Text for images, for systems that read text (captioners/, design 0023)."""

    captioner: str | None = None
    captioner_base_url: str | None = None
    captioner_prompt: str = "dense"
    captioner_model_options: dict[str, str] = Field(default_factory=dict)  # local: ones


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigFieldError(f"{{{name}}} {value!r}: use one of {', '.join(allowed)}", name)
    return value


# RunConfig's sections: attribute name -> the model of that group of fields
SECTIONS: dict[str, type[_Section]] = {
    "dataset": DataConfig, "system_setup": SystemSetup, "generation": GenerationConfig,
    "context": ContextConfig, "execution": ExecutionConfig, "budget": BudgetConfig,
    "judging": JudgeConfig, "captioning": CaptionerConfig}
# every field's flat name -> its section's attribute
SECTION_OF: dict[str, str] = {name: section for section, model in SECTIONS.items()
                              for name in model.model_fields}


class RunConfig(BaseModel):
    """A run's configuration: typed sections whose constraints are checked when it is made
    (a bad value is a :class:`~memgauge.errors.ConfigFieldError` naming the field).

    Made flat, as the CLI and most callers do (each field goes to its section), or by
    sections; every field reads flat too (``config.concurrency``)::

        >>> c = RunConfig(bench="synth", data="bench/", out="runs/a", concurrency=4)
        >>> c.execution.concurrency, c.concurrency
        (4, 4)
        >>> RunConfig(bench="synth", data="bench/", out="runs/a", concurrency=0)
        Traceback (most recent call last):
        ...
        memgauge.errors.ConfigFieldError: concurrency 0: must be at least 1
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    dataset: DataConfig
    system_setup: SystemSetup = Field(default_factory=SystemSetup)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    execution: ExecutionConfig
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    judging: JudgeConfig = Field(default_factory=JudgeConfig)
    captioning: CaptionerConfig = Field(default_factory=CaptionerConfig)

    def __init__(self, **fields: Any) -> None:
        try:
            super().__init__(**_by_section(fields))
        except ValidationError as exc:
            raise _field_error(exc) from None

    def __getattr__(self, name: str) -> Any:
        section = SECTION_OF.get(name)
        if section is None:
            return super().__getattr__(name)  # type: ignore[misc]
        return getattr(getattr(self, section), name)

    def __setattr__(self, name: str, value: Any) -> None:
        section = SECTION_OF.get(name)
        if section is None:
            super().__setattr__(name, value)
            return
        try:
            setattr(getattr(self, section), name, value)
        except ValidationError as exc:
            raise _field_error(exc) from None

    @model_validator(mode="after")
    def _budget_in_one_process(self) -> RunConfig:
        b, x = self.budget, self.execution
        limited = b.budget_usd is not None or b.max_tokens_total is not None
        if limited and (x.workers > 1 or x.executor != "local"):
            raise ConfigFieldError(
                "{budget_usd} and {max_tokens_total} need {workers} 1 and {executor} local "
                "(each worker process or Ray task would keep a budget of its own)",
                "budget_usd", "max_tokens_total", "workers", "executor")
        return self

    def flat(self) -> dict[str, Any]:
        """Every field by its flat name (what ``RunConfig(**flat)`` takes back)."""
        return {name: getattr(getattr(self, section), name)
                for name, section in SECTION_OF.items()}

    def flat_dict(self) -> dict[str, Any]:
        """:meth:`flat` as plain data (the manifest's ``config.all``)."""
        out = copy.deepcopy(self.flat())
        out["judge_options"] = dataclasses.asdict(self.judge_options)
        return out

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with ``changes`` (flat names), checked like a new one."""
        return RunConfig(**{**self.flat(), **changes})

    @staticmethod
    def field_names() -> tuple[str, ...]:
        return tuple(SECTION_OF)

    # Fields that define what a run measures; a run folder refuses a different identity.
    IDENTITY: ClassVar[tuple[str, ...]] = (
                "bench", "system", "system_options", "model", "base_url", "question_ids",
                "tier", "shard",
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
                raise ConfigFieldError(f"{{{key}}} {_esc(value)} and {{system_options}} "
                                       f"{key}={_esc(out[key])} say the same thing: give one "
                                       "of them", key, "system_options")
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
            declared = registration("system", self.system).options
        except ConfigError:
            declared = None  # not a registered name (an http:// system): it says itself
        if declared is not None and (missing := [k for k in given if k not in declared]):
            raise ConfigFieldError(f"{{{missing[0]}}}: the system {_esc(self.system)} "
                                   "embeds nothing with it (rag does, with retriever=embed, "
                                   "visual or hybrid; fact-memory and summary-memory with "
                                   "retriever=embed)", missing[0])
        if "embedder" in given or "embedder_base_url" in given:
            check_embedder_spec(options.get("embedder", "model2vec"),
                                options.get("embedder_base_url"),
                                Flags("--embedder", "--embedder-base-url"))
        if "image_embedder" in given or "image_embedder_base_url" in given:
            check_image_embedder_spec(options.get("image_embedder", ""),
                                      options.get("image_embedder_base_url"),
                                      Flags("--image-embedder", "--image-embedder-base-url"))

    def check(self) -> None:
        """What the field constraints cannot see, before anything is read or sent: the
        folders and files named, the tokenizer, embedders, captioner options and Ray (a
        mistake here must not become one error per question)."""
        if self.out and holds_benchmark(self.out):
            raise ConfigFieldError(
                f"{{out}} {self.out} is a benchmark folder (written by `memgauge generate`): "
                f"a run writes a folder of its own; pass the benchmark as {{data}} {self.out} "
                "and a new folder as {out} (e.g. runs/NAME)", "out", "data")
        if self.prices is not None or self.budget_usd is not None:  # a price for the model
            make_budget(self.out, self.model, self.budget_usd, self.max_tokens_total,
                        self.prices, read_spent=False,
                        judges=[self.judge] if self.judge else [])
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

    def check_captioner_options(self) -> None:
        """captioner_model_options: a local: captioner's server options, checked (keys,
        values, the projector file) before any server starts or any request is sent."""
        if not self.captioner_model_options:
            return
        if not (self.captioner or "").startswith("local:"):
            raise ConfigFieldError("{captioner_model_options} applies to a local: captioner "
                                   f"only (the captioner is {_esc(self.captioner or 'not set')})",
                                   "captioner_model_options")
        from ..models.local import checked_options

        checked_options(self.captioner_model_options, "captioner_model_options")

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
                    raise ConfigFieldError(f"{{max_tokens}} {self.max_tokens} leaves no room "
                                           "for a prompt in the local model's context of "
                                           f"{n_ctx} tokens", "max_tokens")
        elif self.model_options:
            raise ConfigFieldError("{model_options} applies to local: models only "
                                   f"(the model is {_esc(self.model)})", "model_options")
        base_url = self.base_url
        if self.model.startswith("openai:"):  # $OPENAI_BASE_URL, as the model reads it: the
            from ..models.openai_compat import resolve_base_url  # identity names the server

            base_url = resolve_base_url(self.base_url)[0]
        return self.replace(tokenizer=tokenizer, max_context_tokens=limit, base_url=base_url)


def _esc(value: object) -> str:
    """A value shown in a ConfigFieldError's template (its braces kept as they are)."""
    return str(value).replace("{", "{{").replace("}", "}}")


def _by_section(fields: dict[str, Any]) -> dict[str, Any]:
    """Flat fields grouped into their sections; a section given whole stays as it is (and
    anything else is left for the model to refuse)."""
    grouped: dict[str, Any] = {}
    for name, value in fields.items():
        section = SECTION_OF.get(name)
        if section is None:
            grouped[name] = value
            continue
        into = grouped.setdefault(section, {})
        if isinstance(into, BaseModel):  # a section given whole and a field of it flat
            into = grouped[section] = dict(into)
        into[name] = value
    return grouped


# a bound said as a person would (the field constraints stay in the schema)
_BOUNDS = ("greater_than_equal", "greater_than", "less_than_equal")
_WORDING = {"timeout_s": "must be more than 0 seconds", "temperature": "must be 0 or more",
            "top_p": "must be in (0, 1]"}


def _field_error(exc: ValidationError) -> ConfigFieldError:
    """Pydantic's first complaint as a ConfigFieldError naming the field, worded like the
    rest of memgauge's errors."""
    error = exc.errors()[0]
    names = [str(p) for p in error["loc"] if isinstance(p, str)]
    name = next((n for n in reversed(names) if n in SECTION_OF), names[-1] if names else "config")
    value, ctx, kind = error.get("input"), error.get("ctx") or {}, error["type"]
    if kind == "missing":
        return ConfigFieldError(f"{{{name}}}: required", name)
    if kind == "extra_forbidden":
        return ConfigFieldError(f"{{{name}}}: not a field of the run's configuration", name)
    bound = {k: f"{v:g}" if isinstance(v, float) else v for k, v in ctx.items()}
    problem = {"greater_than_equal": f"must be at least {bound.get('ge')}",
               "greater_than": f"must be more than {bound.get('gt')}",
               "less_than_equal": f"must be at most {bound.get('le')}",
               "literal_error": "use one of " + str(ctx.get("expected", "")).replace(
                   "'", "").replace(" or ", ", ")}.get(kind, error["msg"])
    problem = _WORDING.get(name, problem) if kind in _BOUNDS else problem
    shown = (repr(value) if isinstance(value, str)
             else f"{value:g}" if isinstance(value, float) else str(value))
    return ConfigFieldError(f"{{{name}}} {_esc(shown)}: "
                            f"{problem}", name)


def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigFieldError(f"{{shard}} must look like i/N (e.g. 0/4), got {_esc(repr(text))}",
                               "shard") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigFieldError(f"{{shard}} {_esc(text)}: need N >= 1 and 0 <= i < N", "shard")
    return i, n


def in_shard(episode_id: str, shard: tuple[int, int] | None) -> bool:
    if shard is None:
        return True
    digest = hashlib.sha256(episode_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % shard[1] == shard[0]

