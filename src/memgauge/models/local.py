"""``--model local:<name-or-path>``: a GGUF model served by llama.cpp's own server.

memgauge starts the server for the run on 127.0.0.1 (``_llama_server``), talks to it with
the same OpenAI-compatible client as to any endpoint, and stops it at the end. What is
particular to a local server lives here:

- concurrency never exceeds the server's slots (``n_parallel``): requests queue on our side
  instead of piling up on two cores;
- a request's timeout scales with its prompt, from the prefill and decode rates measured at
  start and updated from every reply; a timed-out request is not resent (the server would
  still be computing it);
- the cache key names the model file by sha256, not the (new every run) port;
- prompt lengths can be counted with the model's own tokenizer (``/tokenize``);
- image parts sent to a model without a projector fail at once with the fix, unsent;
- ``GenerateConfig.choices`` becomes a GBNF grammar: the reply is one of the choices.

Options (``--model-option key=value``): ``n_ctx`` (tokens per request, default 8192),
``n_parallel`` (slots, default 1), ``threads`` (default: every core), ``mmproj`` (a
multimodal projector GGUF), ``flash_attn`` (auto|on|off), ``chat_template`` (a llama.cpp
built-in template name).
"""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ..errors import ConfigError, entry, option_error
from ..registry import model
from ._base import GenerateConfig, ImagePart, Message, ModelError, ModelOutput
from ._llama_server import LlamaServer, LlamaServerOptions, Tokenizer
from ._local_files import check_gguf, file_sha256_cached, resolve
from .openai_compat import ModelSettings, OpenAICompatModel, classify_error

DEFAULT_N_CTX = 8192
# Timeouts: this many times the expected compute time (prefill + decode at the slowest rates
# seen), never below the run's --timeout. Bytes per token is a low guess (text runs ~4
# characters a token), so prompts are over-estimated, never under.
TIMEOUT_SAFETY = 4.0
BYTES_PER_TOKEN = 3.0

OPTION_TYPES: dict[str, type] = {"n_ctx": int, "n_parallel": int, "threads": int,
                                 "mmproj": str, "flash_attn": str, "chat_template": str}
# The options that change what the model writes (the rest change only its speed or room).
OUTPUT_OPTIONS = ("mmproj", "chat_template")
OPTION_HELP: dict[str, str] = {  # memgauge list
    "n_ctx": "tokens per request (default 8192)", "n_parallel": "server slots (default 1)",
    "threads": "CPU threads (default: every core)", "mmproj": "a multimodal projector GGUF",
    "flash_attn": "auto | on | off", "chat_template": "a llama.cpp built-in template name"}


def parse_options(raw: dict[str, str], field: str = "model_options") -> dict[str, Any]:
    """Typed local-server options; every mistake is a ConfigFieldError naming ``field``
    (the run's ``model_options``, ``judge_model_options``...) and the key."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        kind = OPTION_TYPES.get(key)
        if kind is None:
            raise option_error(key, "unknown option for a local model; known: "
                               f"{', '.join(OPTION_TYPES)}", field=field)
        if kind is int:
            try:
                number = int(value)
            except ValueError:
                raise option_error(key, "must be a whole number", repr(value),
                                   field=field) from None
            least = 0 if key == "threads" else 1
            if number < least:
                raise option_error(key, f"must be at least {least}", value, field=field)
            out[key] = number
        else:
            out[key] = value
    if out.get("flash_attn", "auto") not in ("auto", "on", "off"):
        raise option_error("flash_attn", "use auto, on or off", repr(out["flash_attn"]),
                           field=field)
    if out.get("n_ctx", DEFAULT_N_CTX) < 256:
        raise option_error("n_ctx", "a context under 256 tokens cannot hold a prompt",
                           out["n_ctx"], field=field)
    return out


def choice_grammar(choices: tuple[str, ...]) -> str:
    """A llama.cpp GBNF grammar whose only sentences are ``choices``: the model can write
    nothing but one of them (a 135M model that continues the prompt instead of answering
    then still picks one)."""
    if not choices:
        raise ValueError("a choice grammar needs at least one choice")
    return "root ::= " + " | ".join(json.dumps(c, ensure_ascii=False) for c in choices)


def checked_options(raw: dict[str, str], field: str = "model_options") -> dict[str, Any]:
    """:func:`parse_options`, and the projector file is there and a GGUF: a run checks this
    before it starts any server or sends any request."""
    out = parse_options(raw, field)
    if out.get("mmproj"):
        check_gguf(Path(out["mmproj"]).expanduser(), entry(field, "mmproj"), field)
    return out


def context_tokens(raw: dict[str, str]) -> int:
    """The per-request context a local model will get (without starting it)."""
    return int(parse_options(raw).get("n_ctx", DEFAULT_N_CTX))


# One server per distinct (model file, options), shared by the run's model and judge.
_SERVERS: dict[LlamaServerOptions, list[Any]] = {}


def _acquire(options: LlamaServerOptions, floor_s: float = 0.0) -> LlamaServer:
    entry = _SERVERS.get(options)
    if entry is None or entry[0]._proc is None:
        entry = _SERVERS[options] = [LlamaServer.start(options, floor_s), 0]
    entry[1] += 1
    return entry[0]


def _release(server: LlamaServer) -> None:
    entry = _SERVERS.get(server.options)
    if entry is None or entry[0] is not server:
        server.stop()
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _SERVERS[server.options]
        server.stop()


class LocalModel(OpenAICompatModel):
    """A GGUF model behind a llama.cpp server this process started."""

    def __init__(self, spec: str, settings: ModelSettings) -> None:
        opts = parse_options(settings.model_options, settings.options_field)
        path = resolve(spec)
        mmproj = Path(opts["mmproj"]).expanduser() if opts.get("mmproj") else None
        if mmproj is not None:
            check_gguf(mmproj, "mmproj")
        self.spec = spec
        self.path = path
        self.sha256 = file_sha256_cached(path)
        self.mmproj_sha256 = file_sha256_cached(mmproj) if mmproj else None
        self.server_options = LlamaServerOptions(
            model=path.resolve(), n_ctx=opts.get("n_ctx", DEFAULT_N_CTX),
            slots=opts.get("n_parallel", 1), threads=opts.get("threads", 0),
            mmproj=mmproj.resolve() if mmproj else None,
            flash_attn=opts.get("flash_attn", "auto"), chat_template=opts.get("chat_template"))
        self.server = _acquire(self.server_options, settings.timeout_s)
        self.requested_concurrency = settings.concurrency
        try:
            local = dataclasses.replace(settings, base_url=self.server.base_url,
                                        concurrency=min(settings.concurrency, self.server.slots))
            super().__init__(self.server.model_id, local)
            self._headers.pop("Authorization", None)  # never hand a user's key to it
            self.tokenizer = Tokenizer(self.server.address, self.server.death)
            self.prefill_tps, self.decode_tps = self._measure()
        except BaseException:
            _release(self.server)
            raise
        self._released = False

    # -- what a run needs to know -----------------------------------------------------------

    @property
    def supports_images(self) -> bool:
        return self.server.vision

    @property
    def context_tokens(self) -> int:
        return self.server.n_ctx

    @property
    def tokenizer_name(self) -> str:
        return f"llama.cpp /tokenize of {self.path.name} (sha256 {self.sha256[:16]})"

    def count_text(self, text: str) -> int:
        return self.tokenizer.count(text)

    def template_overhead(self) -> tuple[int, int]:
        return self.tokenizer.template_overhead()

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {"provider": "local", "model": self.spec, "file": self.path.name,
                "sha256": self.sha256, "mmproj": (self.server_options.mmproj.name
                                                 if self.server_options.mmproj else None),
                "mmproj_sha256": self.mmproj_sha256, **self.server.describe(),
                "concurrency": s.concurrency,
                "prefill_tokens_per_s_at_start": round(self.prefill_tps, 1),
                "decode_tokens_per_s_at_start": round(self.decode_tps, 1),
                "timeout_s": s.timeout_s, "timeout_policy": "scaled with the prompt, not resent",
                "max_attempts": s.max_attempts, "image_policy": self.encoder.policy.describe()}

    # -- hooks of the OpenAI-compatible client ----------------------------------------------

    constrains_choices = True

    def choice_body(self, choices: tuple[str, ...]) -> dict[str, Any]:
        return {"grammar": choice_grammar(choices)}

    def cache_identity(self) -> dict[str, Any]:
        return {"model": f"gguf:{self.sha256}", "base_url": None,
                "mmproj": self.mmproj_sha256,
                "chat_template": self.server_options.chat_template}

    def request_timeout(self, body_bytes: int, max_tokens: int) -> float:
        tokens = body_bytes / BYTES_PER_TOKEN
        compute = tokens / self.prefill_tps + max_tokens / self.decode_tps
        return max(self.settings.timeout_s, TIMEOUT_SAFETY * compute * self.server.slots)

    def timeout_retryable(self) -> bool:
        return False

    def preflight_target(self) -> None:
        """Nothing to check: this process started the server and sent it a first request
        (``_measure``), and the cache names the model file by sha256."""
        return

    def observe(self, reply: dict[str, Any]) -> None:
        t = reply.get("timings")
        if not isinstance(t, dict):
            return
        # The slowest rates seen: long prompts prefill slower than the start-up probe.
        if (t.get("prompt_n") or 0) >= 64 and t.get("prompt_per_second"):
            self.prefill_tps = min(self.prefill_tps, float(t["prompt_per_second"]))
        if (t.get("predicted_n") or 0) >= 8 and t.get("predicted_per_second"):
            self.decode_tps = min(self.decode_tps, float(t["predicted_per_second"]))

    def _measure(self) -> tuple[float, float]:
        """Prefill and decode tokens/s from one short request at start (about a second on
        a 135M model with two cores)."""
        # ~13 tokens a sentence; a small context gets a shorter probe
        n = max(2, min(40, self.server.n_ctx // 52))
        text = " ".join(f"Note {i}: the blue box holds {i % 9} keys." for i in range(n))
        body = json.dumps({"model": self.name, "max_tokens": 16, "temperature": 0,
                           "messages": [{"role": "user", "content": text}]}).encode()
        req = urllib.request.Request(f"{self.server.base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        # as long as start-up was allowed: scaled to the load, at least --timeout
        limit = max(60.0, self.settings.timeout_s, self.server.start_limit_s)
        try:
            with urllib.request.urlopen(req, timeout=limit) as r:
                reply = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            reason = classify_error(exc.code, exc.read())[1]
            raise ConfigError(f"the local model {self.path.name} refused a first request "
                              f"(HTTP {exc.code}): {reason}") from None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"the local model {self.path.name} did not answer a first "
                              f"request within {limit:.0f} s: {exc}; rerun when the machine "
                              "is less busy, or allow more time with --timeout SECONDS") \
                from None
        wall = time.perf_counter() - t0
        t = reply.get("timings") or {}
        prefill = float(t.get("prompt_per_second") or 0) or 500.0 / max(wall, 1e-3)
        decode = float(t.get("predicted_per_second") or 0) or 16.0 / max(wall, 1e-3)
        return prefill, decode

    async def generate(self, messages: list[Message], config: GenerateConfig, *,
                       question_id: str | None = None) -> ModelOutput:
        if not self.server.vision and any(isinstance(p, ImagePart)
                                          for m in messages for p in m.parts):
            raise ModelError("no_vision", f"{self.path.name} has no vision (no mmproj): use "
                             "--context-mode text or caption, or --model-option mmproj=FILE "
                             "for a VLM GGUF")
        try:
            return await super().generate(messages, config, question_id=question_id)
        except ModelError as exc:
            died = self.server.death()  # "connection refused" hides the cause: say it
            if died is None:
                raise
            raise ModelError("server_died", died, retryable=True,
                             attempts=exc.attempts) from None

    def release(self) -> None:
        """Let go of the server (stopped when its last user lets go)."""
        if not self._released:
            self._released = True
            _release(self.server)

    async def aclose(self) -> None:
        await super().aclose()
        self.release()


@model("local")
def local_model(spec: str, settings: ModelSettings) -> LocalModel:
    """``--model local:<catalogue-name|path.gguf>``: llama.cpp's server, started for the run."""
    return LocalModel(spec, settings)
