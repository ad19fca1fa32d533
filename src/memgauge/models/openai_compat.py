"""Any OpenAI-compatible chat endpoint (vLLM, SGLang, Ollama, hosted APIs).

The wire protocol is OpenAI's chat completions; the transport is ``_http`` (httptools over
asyncio).
We measured the ``openai`` SDK on this path: importing it costs ~1.3 s (it builds hundreds
of typed models), which alone breaks a 1 s time-to-first-request, and its per-request
layers (parameter transformation, typed responses, an httpx-style wrapper) cost more CPU
than the request itself at high concurrency. The body is serialised once with orjson; the
reply is parsed with orjson. Retries are ours: backoff with full jitter on 408/409/429/5xx,
timeouts and connection errors, honouring ``Retry-After`` in seconds or as an HTTP date,
capped at 60 s (docs/design/0002). Never retried: a certificate that does not verify (kind
``tls``) and a redirect that was not followed (kind ``redirect``, naming the status, the
``Location`` and the ``--base-url`` to use; docs/design/0016).

Several base URLs (``--base-url`` repeated, or a comma list) are replicas of one model: the
questions of one episode go to one replica (the runner names the episode in
:data:`ROUTING_KEY`), so its history is computed once in that replica's prefix cache; a new
episode goes to the replica with the fewest requests in flight. ``--concurrency`` counts the
requests in flight over all replicas (docs/design/0031).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import email.utils
import math
import os
import random
import re
import time
import uuid
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import orjson

from .._secrets import redact_text, redact_url, redact_urls
from ..cache import ResponseCache, cache_key
from ..errors import ConfigError
from ..media import EncodedImage, ImageEncoder, ImagePolicy
from ..registry import model
from ..schema import Usage
from ._aimd import AdaptiveLimit, AimdSettings
from ._base import GenerateConfig, ImagePart, Message, ModelError, ModelOutput, TextPart
from ._http import HttpClient, HttpError, TlsVerifyError, proxy_for, redirect_advice

_CONTEXT_HINTS = ("context length", "context_length", "maximum context", "too long",
                  "max_model_len", "reduce the length", "exceeds", "context size")
# What servers say when they get image parts but serve a text-only model (llama.cpp without
# a projector, vLLM, SGLang, Ollama): no retry will change that.
_NO_VISION_HINTS = ("image input is not supported", "does not support image",
                    "not a multimodal model", "multimodal is not supported",
                    "does not support vision", "vision is not supported")
_NO_VISION_FIX = ("the model cannot read images: use --context-mode text or caption "
                  "(or, for a local VLM GGUF, --model-option mmproj=FILE)")
# "request (9047 tokens) exceeds the available context size (8192 tokens)" (llama.cpp);
# "maximum context length is 8192 tokens. However, you requested 9047 tokens" (vLLM, OpenAI)
_COUNTS = re.compile(r"(?:request \((\d+) tokens\).*?context size \((\d+) tokens\))|"
                     r"(?:maximum context length is (\d+) tokens.*?(?:requested|resulted in|"
                     r"have) (\d+) tokens)", re.IGNORECASE | re.DOTALL)
_DETERMINISTIC_HINTS = ("validation error", "template", "jinja", "not supported",
                        "unsupported", "invalid", "must be", "expected", "cannot be")
ERROR_TEXT_LIMIT = 300  # characters of a server's error text kept in a record
# Which replica a request goes to: the runner sets the episode id for an episode's task.
ROUTING_KEY: ContextVar[str | None] = ContextVar("memgauge_routing_key", default=None)
ROUTES_KEPT = 4096  # episodes whose replica is remembered (the oldest is forgotten first)


HOSTED_OPENAI = "https://api.openai.com/v1"
BASE_URL_ENV = "OPENAI_BASE_URL"  # read as the OpenAI SDK reads it: when no URL is given


def resolve_base_url(given: str | None) -> tuple[str | None, str]:
    """The base URL an ``openai:`` model talks to and where it came from: ``given`` (a
    flag) wins, else ``$OPENAI_BASE_URL``, else None (the hosted OpenAI API). A local
    evaluation set up through the variable must never go to the hosted API instead."""
    if given:
        return given, "flag"
    env = os.environ.get(BASE_URL_ENV, "").strip()
    if env:
        return env, BASE_URL_ENV
    return None, "hosted"


def split_base_urls(text: str | None) -> list[str]:
    """The base URLs in ``--base-url`` (one, or a comma list of replicas), without the
    trailing slash; an empty item is a ConfigError."""
    if text is None:
        return []
    urls = [u.strip().rstrip("/") for u in text.split(",")]
    if not all(urls):
        raise ConfigError(f"--base-url {redact_urls(text)!r}: an empty URL in the list "
                          "(give each replica once, comma-separated or with --base-url again)")
    return urls


@dataclass
class ModelSettings:
    """Options shared by model providers (from the command line)."""

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    # AIMD per replica between min_concurrency and concurrency (models/_aimd.py, 0034)
    adaptive_concurrency: bool = True
    min_concurrency: int = 1
    timeout_s: float = 120.0
    max_attempts: int = 6
    retry_base_s: float = 0.5
    retry_cap_s: float = 30.0
    image_mode: str = "inline"  # inline (base64 data URLs) | url (send source URLs when known)
    image_policy: ImagePolicy = field(default_factory=ImagePolicy)
    encoder: ImageEncoder | None = None
    cache: ResponseCache | None = None
    model_options: dict[str, str] = field(default_factory=dict)  # provider-specific (local:)
    options_field: str = "model_options"  # the config field that set them, named in errors


class OpenAICompatModel:
    def __init__(self, name: str, settings: ModelSettings) -> None:
        if settings.image_mode not in ("inline", "url"):
            raise ConfigError(f"unknown image mode {settings.image_mode!r}; use inline or url")
        self.name = name
        base_url, self.base_source = resolve_base_url(settings.base_url)
        if base_url != settings.base_url:  # from $OPENAI_BASE_URL: keyed and described so
            settings = replace(settings, base_url=base_url)
        self.settings = settings
        self.encoder = settings.encoder or ImageEncoder(settings.image_policy)
        key = os.environ.get(settings.api_key_env)
        if not key and settings.base_url is None:
            raise ConfigError(f"no API key: set {settings.api_key_env} or pass --base-url "
                              f"(or set {BASE_URL_ENV}) for a local server that needs none")
        self.bases = split_base_urls(settings.base_url) or [HOSTED_OPENAI]
        for base in self.bases:
            if urlsplit(base).scheme not in ("http", "https") or not urlsplit(base).hostname:
                raise ConfigError("--base-url must be an http:// or https:// URL, got "
                                  f"{redact_url(base)!r}")
        self._urls = [f"{base}/chat/completions" for base in self.bases]
        self._url = self._urls[0]
        self.base = self.bases[0]
        try:
            proxies = [proxy_for(url) for url in self._urls]
        except ValueError as exc:
            shown = redact_urls(settings.base_url or self.base)
            raise ConfigError(f"{exc} (for {shown})") from None
        self.proxy = proxies[0]
        # What the server says it serves (its /models entry for this name), set by the
        # run's pre-flight; part of the cache key once known (docs/design/0016).
        self.served: dict[str, Any] | None = None
        self.served_note: str | None = None
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._clients: list[HttpClient | None] = [None] * len(self._urls)
        self._secrets = [key, *(urlsplit(base).password for base in self.bases)]
        self._routes: OrderedDict[str, int] = OrderedDict()  # episode -> replica
        self._in_flight = [0] * len(self._urls)
        self._episodes = [0] * len(self._urls)  # episodes routed to each replica so far
        self._down: dict[int, dict[str, Any]] = {}  # replicas given up on: why
        self._moved = [0] * len(self._urls)  # episodes moved away from each replica
        # Inline images travel as markers through orjson and are spliced in as bytes; the
        # nonce keeps a marker from ever matching text in a prompt.
        nonce = uuid.uuid4().hex
        self._marker = f"@@img-{nonce}-"
        self._marker_bytes = self._marker.encode()
        self.first_send_at: float | None = None  # time.monotonic() of the first POST
        self._sem = asyncio.Semaphore(settings.concurrency)
        aimd = AimdSettings(ceiling=max(1, settings.concurrency),
                            floor=max(1, min(settings.min_concurrency, settings.concurrency)),
                            adaptive=settings.adaptive_concurrency)
        self._limits = [AdaptiveLimit(aimd) for _ in self._urls]
        self.requests = 0
        self.retries = 0
        # Why the endpoint refused ``response_format`` (the first refusal's words), after
        # which JSON schemas are asked for in the prompt only (design 0042).
        self.structured_refused: str | None = None

    def _http(self, replica: int = 0) -> HttpClient:
        client = self._clients[replica]
        if client is None:
            client = self._clients[replica] = HttpClient(self._urls[replica], self._headers,
                                                         self.settings.timeout_s)
        return client

    def _replica(self) -> int:
        """The replica for this request: the one its episode went to, else the one with the
        fewest requests in flight (among equals, the one given the fewest episodes)."""
        n = len(self._urls)
        if n == 1:
            return 0
        key = ROUTING_KEY.get()
        if key is not None and key in self._routes:
            self._routes.move_to_end(key)
            replica = self._routes[key]
            if replica not in self._down:
                return replica
            self._moved[replica] += 1  # its replica was given up on: move it once
        up = [i for i in range(n) if i not in self._down] or list(range(n))
        replica = min(up, key=lambda i: (self._in_flight[i], self._episodes[i], i))
        if key is not None:
            self._routes[key] = replica
            self._episodes[replica] += 1
            if len(self._routes) > ROUTES_KEPT:
                self._routes.popitem(last=False)
        return replica

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {"provider": "openai", "model": self.name,
                "base_url": redact_urls(s.base_url) or HOSTED_OPENAI,
                **({"replicas": len(self.bases)} if len(self.bases) > 1 else {}),
                "api_key_env": s.api_key_env, "concurrency": s.concurrency,
                "timeout_s": s.timeout_s, "max_attempts": s.max_attempts,
                "image_mode": s.image_mode, "image_policy": self.encoder.policy.describe(),
                **self._network_facts()}

    def concurrency_levels(self) -> list[int]:
        """Each replica's current level (the progress line)."""
        return [limit.level for limit in self._limits]

    def endpoint_report(self) -> list[dict[str, Any]]:
        """Each replica over the run (the manifest's ``endpoints``): its concurrency level,
        and, for a replica given up on, why and how many episodes moved away from it."""
        out = []
        for i, (base, limit) in enumerate(zip(self.bases, self._limits, strict=True)):
            entry: dict[str, Any] = {"base_url": redact_url(base),
                                     "concurrency": limit.describe()}
            if i in self._down:
                entry["down"] = self._down[i]
                entry["episodes_moved"] = self._moved[i]
            if self.structured_refused is not None:
                entry["structured_output"] = {"refused": self.structured_refused}
            out.append(entry)
        return out

    def _network_facts(self) -> dict[str, Any]:
        """The proxy (no credentials) and what the server said it serves, where known."""
        out: dict[str, Any] = {}
        if self.proxy is not None:
            out["proxy"] = self.proxy.url
        if self.served is not None:
            out["served"] = self.served
        if self.served_note:
            out["served_note"] = self.served_note
        return out

    def preflight_target(self) -> tuple[str, dict[str, str]] | None:
        """The base URL and request headers a pre-flight checks (models/_preflight.py);
        None where there is nothing to check."""
        return self.base, dict(self._headers)

    def sends_key(self) -> bool:
        """Whether its requests carry the API key (a local server's never do)."""
        return "Authorization" in self._headers

    def note_served(self, entry: dict[str, Any] | None, note: str | None = None) -> None:
        """Record the pre-flight's finding: the server's entry for this model, or why
        there is none (the cache is then keyed on the URL and name only)."""
        self.served, self.served_note = entry, note

    async def _image(self, ref: Any) -> EncodedImage:
        hit = self.encoder.cached(ref)
        return hit if hit is not None else await asyncio.to_thread(self.encoder.encode, ref)

    async def _render(self, messages: list[Message], keyed_form: bool = True,
                      ) -> tuple[list[dict[str, Any]], list[Any], list[bytes]]:
        """Wire messages (inline images as numbered markers), the cache-key form (image
        hashes instead of bytes; only with ``keyed_form``, else empty), and the encoded images
        the markers stand for."""
        inline = self.settings.image_mode == "inline"
        # An image goes by its URL in url mode, and in inline mode too when there is no
        # file to inline (a dataset that keeps only the photo's URL: never fetched here).
        refs = [p.image for m in messages for p in m.parts if isinstance(p, ImagePart)
                if not _by_url(p.image, inline)]
        # Images already encoded are taken as they are; the rest are encoded together, in
        # threads (a task per image only where there is work to wait for).
        cached = self.encoder.cached
        encoded: list[Any] = [cached(r) for r in refs]
        todo = [i for i, e in enumerate(encoded) if e is None]
        if todo:
            done = await asyncio.gather(*(asyncio.to_thread(self.encoder.encode, refs[i])
                                          for i in todo))
            for i, e in zip(todo, done, strict=True):
                encoded[i] = e
        by_ref = iter(encoded)
        blobs: list[bytes] = []
        wire: list[dict[str, Any]] = []
        keyed: list[Any] = []
        marker = self._marker
        for msg in messages:
            content: list[dict[str, Any]] = []
            kparts: list[Any] = []
            for part in msg.parts:
                if type(part) is TextPart:
                    content.append({"type": "text", "text": part.text})
                    if keyed_form:
                        kparts.append(part.text)
                elif isinstance(part, ImagePart):
                    ref = part.image
                    if _by_url(ref, inline):
                        content.append({"type": "image_url", "image_url": {"url": ref.url}})
                        kparts.append({"url": ref.url})
                    else:
                        enc = next(by_ref)
                        content.append({"type": "image_url",
                                        "image_url": {"url": f"{marker}{len(blobs)}@@"}})
                        blobs.append(enc.data_url)
                        kparts.append({"sha256": enc.sha256, "w": enc.width, "h": enc.height,
                                       "mime": enc.mime})
                elif isinstance(part, TextPart):  # a TextPart subclass
                    content.append({"type": "text", "text": part.text})
                    if keyed_form:
                        kparts.append(part.text)
            if all(c["type"] == "text" for c in content):
                # Text alone goes as a plain string: servers differ on arrays of text parts
                # (llama-cpp-python drops them or fails on a system array; some templates
                # cannot render them), and a string is what every server accepts.
                wire.append({"role": msg.role,
                             "content": "\n".join(c["text"] for c in content)})
            else:
                wire.append({"role": msg.role, "content": content})
            if keyed_form:
                keyed.append([msg.role, kparts])
        return wire, keyed, blobs

    def _splice(self, payload: bytes, blobs: list[bytes]) -> list[bytes | memoryview]:
        """The body as pieces, each encoded image in place of its marker: the base64 is
        never re-serialised (about 4 ms per 4.6 MB body, 40 ms per 256K-size body) nor
        copied into one buffer (the pieces go to the socket one by one)."""
        if not blobs:
            return [payload]
        # The markers sit in the body in order: find each from the last (memchr speed; a
        # regex split scanned the whole body ~3x slower) and cut zero-copy views.
        view = memoryview(payload)
        pieces: list[bytes | memoryview] = []
        pos = 0
        for i, blob in enumerate(blobs):
            marker = b"%s%d@@" % (self._marker_bytes, i)
            at = payload.find(marker, pos)
            if at < 0:
                raise AssertionError(f"image marker {i} missing from the request body")
            pieces.append(view[pos:at])
            pieces.append(blob)
            pos = at + len(marker)
        pieces.append(view[pos:])
        return pieces

    async def generate(self, messages: list[Message], config: GenerateConfig, *,
                       question_id: str | None = None) -> ModelOutput:
        if config.json_schema is not None and self.structured_refused is not None:
            config = dataclasses.replace(config, json_schema=None)  # refused: words only
        try:
            return await self._generate(messages, config)
        except ModelError as exc:
            if config.json_schema is None or not refuses_structured_output(exc):
                raise
            if self.structured_refused is None:
                self.structured_refused = bounded(exc.message, 200)
            # The same request without it (keyed as one: its reply is the unconstrained one).
            return await self._generate(messages, dataclasses.replace(config, json_schema=None))

    async def _generate(self, messages: list[Message], config: GenerateConfig) -> ModelOutput:
        cache = self.settings.cache
        wire, keyed, blobs = await self._render(messages, keyed_form=cache is not None)
        body: dict[str, Any] = {"model": self.name, "messages": wire,
                                "max_tokens": config.max_tokens,
                                "temperature": config.temperature}
        if config.top_p is not None:
            body["top_p"] = config.top_p
        if config.seed is not None:
            body["seed"] = config.seed
        if config.choices:
            body.update(self.choice_body(config.choices))
        if config.json_schema is not None:
            body["response_format"] = response_format(config.json_schema)
        body.update(config.extra_body)
        if cache is None:
            payload = self._splice(orjson.dumps(body), blobs)
            del wire, body, blobs
            return await self._send(payload, max_tokens=config.max_tokens)
        key = cache_key({"v": 1, **self.cache_identity(), "messages": keyed,
                         "config": config.describe(),
                         "image_policy": self.encoder.policy.describe()})
        # Single flight: two episodes ingesting one shared session at once send it once;
        # the second waits for the first's reply (design 0018, 2026-12-03).
        async with cache.single_flight(key) as hit:
            # a reply the caller cannot use (cached before design 0043) is asked again
            if hit is not None and config.keeps(hit["text"]):
                return ModelOutput(text=hit["text"], usage=Usage(**hit["usage"]),
                                   finish_reason=hit.get("finish_reason"), cached=True)
            payload = self._splice(orjson.dumps(body), blobs)
            del wire, body, blobs
            out = await self._send(payload, max_tokens=config.max_tokens)
            if config.keeps(out.text):
                cache.put(key, {"text": out.text, "usage": out.usage.model_dump(),
                                "finish_reason": out.finish_reason})
            return out

    def cache_identity(self) -> dict[str, Any]:
        """What names the model in cache keys (a local server overrides it: its port is new
        every run, its model file is what matters)."""
        ident: dict[str, Any] = {"model": self.name, "base_url": self.settings.base_url}
        if self.served is not None:  # a new checkpoint under the same name is a new model
            ident["served"] = self.served
        return ident

    # Whether ``GenerateConfig.choices`` is enforced while decoding. An OpenAI-compatible
    # endpoint has no one way to do it (llama.cpp takes a grammar, vLLM ``guided_choice``,
    # OpenAI a JSON schema whose reply is JSON), so the choices are only asked for in words.
    constrains_choices = False

    def choice_body(self, choices: tuple[str, ...]) -> dict[str, Any]:
        """Request fields that make the reply one of ``choices`` (none by default)."""
        return {}

    def request_timeout(self, body_bytes: int, max_tokens: int) -> float:
        """The timeout of one request (a local server scales it with the prompt)."""
        return self.settings.timeout_s

    def timeout_retryable(self) -> bool:
        """Whether a timed-out request is sent again. A remote service may have dropped
        it; a local server is still computing it, so resending would only pile up work."""
        return True

    def observe(self, reply: dict[str, Any]) -> None:
        """Hook: each successful reply (a local server learns its speed from them)."""

    async def _send(self, pieces: list[bytes | memoryview], max_tokens: int = 512) -> ModelOutput:
        while True:
            replica = self._replica()  # every attempt goes where the episode's prefix is
            self._in_flight[replica] += 1  # counted from the choice: the next choice sees it
            try:
                return await self._send_to(replica, pieces, max_tokens)
            except ModelError as exc:
                if not self._give_up_on(replica, exc):
                    raise
            finally:
                self._in_flight[replica] -= 1

    def _give_up_on(self, replica: int, exc: ModelError) -> bool:
        """After a replica failed a request through all its retries with a cause that
        retrying could have cured (refused, reset, timed out, 429, 5xx), mark it down for
        the rest of the run, so this request and its episode's later ones (and every other
        episode routed there) go to another replica. False: nothing to move to."""
        if len(self._urls) == 1 or not exc.retryable:
            return False
        if replica not in self._down:
            self._down[replica] = {"kind": exc.kind, "message": bounded(exc.message, 200),
                                   "attempts": exc.attempts}
        return len(self._down) < len(self._urls)

    async def _send_to(self, replica: int, pieces: list[bytes | memoryview],
                       max_tokens: int) -> ModelOutput:
        s = self.settings
        size = sum(map(len, pieces))
        last_error: tuple[int, str] | None = None
        limit = self._limits[replica]
        for attempt in range(1, s.max_attempts + 1):
            retry_after: float | None = None
            details: dict[str, Any] = {}
            timeout = self.request_timeout(size, max_tokens)
            epoch = -1
            try:
                async with limit.hold() as epoch, self._sem:
                    self.requests += 1
                    sent = time.monotonic()
                    if self.first_send_at is None:
                        self.first_send_at = sent
                    resp = await self._http(replica).post(pieces, timeout)
                body, status = resp.body, resp.status
                if status == 429:
                    limit.overload("429", epoch)
                elif status < 300:
                    limit.success(time.monotonic() - sent, epoch)
                retry_after = _retry_after(resp.headers.get("retry-after"))
                if status < 300:
                    return _to_output(body, attempt, self.observe)
                if status < 400:
                    raise ModelError("redirect", redact_text(redirect_advice(
                        resp, self._urls[replica], "/chat/completions"), self._secrets),
                        attempts=attempt)
                kind, msg, retryable, details = classify_error(status, body)
                msg = redact_text(msg, self._secrets)  # a server may echo the key back
                # A validation or template failure that repeats word for word is
                # deterministic: sending it a third time changes nothing. (A bare "Internal
                # Server Error" keeps its retries: overloads look like that too.)
                if (retryable and status == 500 and last_error == (status, msg)
                        and any(h in msg.lower() for h in _DETERMINISTIC_HINTS)):
                    retryable = False
                last_error = (status, msg)
            except TimeoutError:
                limit.overload("timeout", epoch)
                kind, msg = "timeout", f"no reply within {timeout:g} s"
                retryable = self.timeout_retryable()
            except TlsVerifyError as exc:
                kind, msg, retryable = "tls", f"{exc} (not retried)", False
            except HttpError as exc:
                kind, msg, retryable = "connection", str(exc), True
            if not retryable or attempt == s.max_attempts:
                raise ModelError(kind, msg, retryable=retryable, attempts=attempt,
                                 details=details)
            self.retries += 1
            delay = random.uniform(0, min(s.retry_cap_s, s.retry_base_s * 2 ** (attempt - 1)))
            await asyncio.sleep(max(delay, retry_after or 0.0))
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        closed: list[HttpClient | None] = [None] * len(self._urls)
        clients, self._clients = self._clients, closed
        for client in clients:
            if client is not None:
                await client.aclose()


def _by_url(ref: Any, inline: bool) -> bool:
    return bool(ref.url) and (not inline or ref.path is None)


def _to_output(raw: bytes, attempt: int, observe: Any = None) -> ModelOutput:
    """Parse a chat-completions reply (orjson; the SDK's typed models cost ~1 ms a reply).

    Only a reply that carries an answer becomes one: a missing, null, empty or non-text
    ``content`` is a :class:`ModelError` naming the field (never an empty answer scored
    0, never cached). A malformed ``usage`` is dropped, the answer kept.
    """
    try:
        resp = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ModelError("bad_response", f"not JSON: "
                                         f"{bounded(raw[:200].decode('utf-8', 'replace'))}",
                         attempts=attempt) from None
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ModelError("bad_response", "the reply has no `choices` (not a chat completion): "
                         f"{bounded(raw[:200].decode('utf-8', 'replace'))}", attempts=attempt)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelError("bad_response", "`choices[0].message` is "
                         f"{type(message).__name__}, not an object", attempts=attempt)
    text = _content_text(message.get("content"))
    if text is None:
        raise ModelError("bad_response", "`choices[0].message.content` is "
                         f"{type(message.get('content')).__name__}, not text", attempts=attempt)
    if not text.strip():
        reason = choice.get("finish_reason")
        raise ModelError("empty_answer", "the model returned no text (`content` "
                         f"{'null' if message.get('content') is None else 'empty'}, "
                         f"finish_reason {reason!r})", attempts=attempt)
    usage = _usage(resp.get("usage"))
    if observe is not None:
        observe(resp)
    return ModelOutput(text=text, usage=usage, finish_reason=choice.get("finish_reason"),
                       attempts=attempt)


def _content_text(content: Any) -> str | None:
    """The text of ``message.content``: a string, or a list of text parts joined; None for
    anything else. ``None`` content is "" (an empty completion)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
            isinstance(p, dict) and p.get("type") in ("text", "output_text")
            and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    return None


def _usage(u: Any) -> Usage:
    """Token counts the server reported; a field that is not a whole number is left out."""
    if not isinstance(u, dict):
        return Usage()

    def count(obj: Any, key: str) -> int | None:
        v = obj.get(key) if isinstance(obj, dict) else None
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

    return Usage(input_tokens=count(u, "prompt_tokens"),
                 output_tokens=count(u, "completion_tokens"),
                 total_tokens=count(u, "total_tokens"),
                 cached_tokens=count(u.get("prompt_tokens_details"), "cached_tokens"))


def classify_error(status: int, body: bytes) -> tuple[str, str, bool, dict[str, Any]]:
    """(kind, message, retryable, details) of an HTTP error reply. Over-length prompts and
    image parts sent to a text-only model get kinds of their own, with the counts."""
    obj: Any = None
    with contextlib.suppress(orjson.JSONDecodeError):  # a plain-text error body
        obj = orjson.loads(body)
    err = obj.get("error", obj) if isinstance(obj, dict) else None
    raw = (str(err["message"]) if isinstance(err, dict) and err.get("message")
           else body[:4000].decode("utf-8", "replace") if obj is None else str(obj)[:4000])
    low = raw.lower()
    details: dict[str, Any] = {}
    kind, retryable = f"http_{status}", status in (408, 409, 429) or status >= 500
    etype = str(err.get("type") or "") if isinstance(err, dict) else ""
    if etype == "exceed_context_size_error" or (
            status in (400, 413) and any(h in low for h in _CONTEXT_HINTS)):
        kind, retryable = "context_overflow", False
        tokens = limit = None
        if isinstance(err, dict) and isinstance(err.get("n_prompt_tokens"), int):
            tokens, limit = err.get("n_prompt_tokens"), err.get("n_ctx")
        else:
            m = _COUNTS.search(raw)
            if m and m.group(1):
                tokens, limit = int(m.group(1)), int(m.group(2))
            elif m:
                tokens, limit = int(m.group(4)), int(m.group(3))
        if tokens is not None:
            details = {"input_tokens": tokens, "context_tokens": limit}
            return (kind, (f"prompt has {tokens} tokens, over the server's context of {limit} "
                    "(--max-context-tokens with --overflow drop-oldest, a larger context, or "
                    "a smaller tier)"), False, details)
    elif any(h in low for h in _NO_VISION_HINTS):
        return "no_vision", f"{_NO_VISION_FIX} (server: {bounded(raw, 160)})", False, {}
    return kind, bounded(raw), retryable, details


# What an endpoint says when it takes no ``response_format`` (or not this schema): vLLM and
# SGLang without a guided-decoding backend, older llama.cpp, proxies that validate fields.
_STRUCTURED_HINTS = ("response_format", "json_schema", "schema", "grammar", "guided",
                     "structured output")


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's ``response_format`` for a reply that follows ``schema`` (not ``strict``:
    OpenAI's strict mode refuses keywords such as ``maxLength`` that bound a small model's
    reply, and llama.cpp, vLLM and SGLang enforce the schema either way)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "reply"))[:64]
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def refuses_structured_output(exc: ModelError) -> bool:
    """Whether a failed request was refused for its ``response_format``: a client error (or
    a deterministic server one) whose text names it. Anything else is the request's own."""
    if exc.kind in ("context_overflow", "no_vision", "tls", "redirect", "timeout",
                    "connection") or (exc.retryable and not exc.kind.startswith("http_4")):
        return False
    return any(h in exc.message.lower() for h in _STRUCTURED_HINTS)


def bounded(text: str, limit: int = ERROR_TEXT_LIMIT) -> str:
    """An error text fit for a record: white space folded, the start kept (the cause comes
    first), the rest counted."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}… ({len(flat) - limit} more characters)"


RETRY_AFTER_CAP_S = 60.0


def _retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (RFC 9110: a number of seconds, or an
    HTTP date), at most ``RETRY_AFTER_CAP_S``; a date in the past is 0; None when absent or
    unreadable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT, whatever zone it fails to name
            when = when.replace(tzinfo=datetime.UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


@model("openai")
def openai_chat(name: str, settings: ModelSettings) -> OpenAICompatModel:
    """``--model openai:<model-name>``: any OpenAI-compatible chat-completions endpoint."""
    if not name:
        raise ConfigError("--model openai:<name> needs a model name")
    return OpenAICompatModel(name, settings)

