"""The run's configuration: :class:`RunConfig`, its checks and its identity, and the
shard a run takes."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any

from .._secrets import redact_tree
from ..cache import ResponseCache
from ..errors import ConfigError
from ..media import ImageEncoder, ImagePolicy
from ..models import ModelSettings
from ..registry import lookup
from ..scoring import JudgeOptions
from ._budget import make_budget
from ._store import holds_benchmark

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

