"""Any OpenAI-compatible chat endpoint (vLLM, SGLang, Ollama, hosted APIs).

The wire protocol is OpenAI's chat completions; the transport is ``_http`` (h11 over asyncio).
We measured the ``openai`` SDK on this path: importing it costs ~1.3 s (it builds hundreds
of typed models), which alone breaks a 1 s time-to-first-request, and its per-request
layers (parameter transformation, typed responses, an httpx-style wrapper) cost more CPU
than the request itself at high concurrency. The body is serialised once with orjson; the
reply is parsed with orjson. Retries are ours: backoff with full jitter on 408/409/429/5xx,
timeouts and connection errors, honouring ``Retry-After`` (docs/design/0002).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..cache import ResponseCache, cache_key
from ..errors import ConfigError
from ..media import EncodedImage, ImageEncoder, ImagePolicy
from ..registry import model
from ..schema import Usage
from ._base import GenerateConfig, ImagePart, Message, ModelError, ModelOutput, TextPart
from ._http import HttpClient, HttpError

_CONTEXT_HINTS = ("context length", "context_length", "maximum context", "too long",
                  "max_model_len", "reduce the length", "exceeds")


@dataclass
class ModelSettings:
    """Options shared by model providers (from the command line)."""

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    timeout_s: float = 120.0
    max_attempts: int = 6
    retry_base_s: float = 0.5
    retry_cap_s: float = 30.0
    image_mode: str = "inline"  # inline (base64 data URLs) | url (send source URLs when known)
    image_policy: ImagePolicy = field(default_factory=ImagePolicy)
    encoder: ImageEncoder | None = None
    cache: ResponseCache | None = None


class OpenAICompatModel:
    def __init__(self, name: str, settings: ModelSettings) -> None:
        if settings.image_mode not in ("inline", "url"):
            raise ConfigError(f"unknown image mode {settings.image_mode!r}; use inline or url")
        self.name = name
        self.settings = settings
        self.encoder = settings.encoder or ImageEncoder(settings.image_policy)
        key = os.environ.get(settings.api_key_env)
        if not key and settings.base_url is None:
            raise ConfigError(f"no API key: set {settings.api_key_env} or pass --base-url "
                              "for a local server that needs none")
        base = (settings.base_url or "https://api.openai.com/v1").rstrip("/")
        if urlsplit(base).scheme not in ("http", "https") or not urlsplit(base).hostname:
            raise ConfigError(f"--base-url must be an http:// or https:// URL, got {base!r}")
        self._url = f"{base}/chat/completions"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._client: HttpClient | None = None
        # Inline images travel as markers through orjson and are spliced in as bytes; the
        # nonce keeps a marker from ever matching text in a prompt.
        nonce = uuid.uuid4().hex
        self._marker = f"@@img-{nonce}-"
        self._marker_bytes = self._marker.encode()
        self.first_send_at: float | None = None  # time.monotonic() of the first POST
        self._sem = asyncio.Semaphore(settings.concurrency)
        self.requests = 0
        self.retries = 0

    def _http(self) -> HttpClient:
        if self._client is None:
            self._client = HttpClient(self._url, self._headers, self.settings.timeout_s)
        return self._client

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {"provider": "openai", "model": self.name,
                "base_url": s.base_url or "https://api.openai.com/v1",
                "api_key_env": s.api_key_env, "concurrency": s.concurrency,
                "timeout_s": s.timeout_s, "max_attempts": s.max_attempts,
                "image_mode": s.image_mode, "image_policy": self.encoder.policy.describe()}

    async def _image(self, ref: Any) -> EncodedImage:
        hit = self.encoder.cached(ref)
        return hit if hit is not None else await asyncio.to_thread(self.encoder.encode, ref)

    async def _render(self, messages: list[Message], keyed_form: bool = True,
                      ) -> tuple[list[dict[str, Any]], list[Any], list[bytes]]:
        """Wire messages (inline images as numbered markers), the cache-key form (image
        hashes instead of bytes; only with ``keyed_form``, else empty), and the encoded images
        the markers stand for."""
        inline = self.settings.image_mode == "inline"
        refs = [p.image for m in messages for p in m.parts if isinstance(p, ImagePart)
                if inline or not p.image.url]
        # Images already encoded are taken as they are; the rest are encoded together, in
        # threads (a task per image only where there is work to wait for).
        cached = self.encoder.cached
        encoded: list[Any] = [cached(r) for r in refs]
        todo = [i for i, e in enumerate(encoded) if e is None]
        if todo:
            done = await asyncio.gather(*(asyncio.to_thread(self.encoder.encode, refs[i])
                                          for i in todo))
            for i, e in zip(todo, done):
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
                    if not inline and ref.url:
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
        cache = self.settings.cache
        wire, keyed, blobs = await self._render(messages, keyed_form=cache is not None)
        body: dict[str, Any] = {"model": self.name, "messages": wire,
                                "max_tokens": config.max_tokens,
                                "temperature": config.temperature}
        if config.top_p is not None:
            body["top_p"] = config.top_p
        if config.seed is not None:
            body["seed"] = config.seed
        body.update(config.extra_body)
        key = None
        if cache is not None:
            key = cache_key({"v": 1, "model": self.name, "base_url": self.settings.base_url,
                             "messages": keyed, "config": config.describe(),
                             "image_policy": self.encoder.policy.describe()})
            hit = cache.get(key)
            if hit is not None:
                return ModelOutput(text=hit["text"], usage=Usage(**hit["usage"]),
                                   finish_reason=hit.get("finish_reason"), cached=True)
        payload = self._splice(orjson.dumps(body), blobs)
        del wire, body, blobs
        out = await self._send(payload)
        if cache is not None and key is not None:
            cache.put(key, {"text": out.text, "usage": out.usage.model_dump(),
                            "finish_reason": out.finish_reason})
        return out

    async def _send(self, pieces: list[bytes | memoryview]) -> ModelOutput:
        s = self.settings
        for attempt in range(1, s.max_attempts + 1):
            retry_after: float | None = None
            try:
                async with self._sem:
                    self.requests += 1
                    if self.first_send_at is None:
                        self.first_send_at = time.monotonic()
                    resp = await self._http().post(pieces)
                body, status = resp.body, resp.status
                retry_after = _retry_after(resp.headers.get("retry-after"))
                if status < 400:
                    return _to_output(body, attempt)
                msg = _error_message(body)
                retryable = status in (408, 409, 429) or status >= 500
                kind = f"http_{status}"
                if status in (400, 413) and any(h in msg.lower() for h in _CONTEXT_HINTS):
                    kind = "context_overflow"
            except TimeoutError:
                kind, msg, retryable = "timeout", f"no reply within {s.timeout_s:g} s", True
            except HttpError as exc:
                kind, msg, retryable = "connection", str(exc), True
            if not retryable or attempt == s.max_attempts:
                raise ModelError(kind, msg, retryable=retryable, attempts=attempt)
            self.retries += 1
            delay = random.uniform(0, min(s.retry_cap_s, s.retry_base_s * 2 ** (attempt - 1)))
            await asyncio.sleep(max(delay, retry_after or 0.0))
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _to_output(raw: bytes, attempt: int) -> ModelOutput:
    """Parse a chat-completions reply (orjson; the SDK's typed models cost ~1 ms a reply)."""
    try:
        resp = orjson.loads(raw)
        choice = resp["choices"][0]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        raise ModelError("bad_response", f"not a chat completion: {raw[:200]!r}",
                         attempts=attempt) from None
    message = choice.get("message") or {}
    u = resp.get("usage") or {}
    usage = Usage(input_tokens=u.get("prompt_tokens"), output_tokens=u.get("completion_tokens"),
                  total_tokens=u.get("total_tokens"))
    return ModelOutput(text=message.get("content") or "", usage=usage,
                       finish_reason=choice.get("finish_reason"), attempts=attempt)


def _error_message(body: bytes) -> str:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:500].decode("utf-8", "replace")
    err = obj.get("error", obj) if isinstance(obj, dict) else obj
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:500]
    return str(obj)[:500]


def _retry_after(value: str | None) -> float | None:
    try:
        return min(float(value), 60.0) if value else None
    except ValueError:
        return None


@model("openai")
def openai_chat(name: str, settings: ModelSettings) -> OpenAICompatModel:
    """``--model openai:<model-name>``: any OpenAI-compatible chat-completions endpoint."""
    if not name:
        raise ConfigError("--model openai:<name> needs a model name")
    return OpenAICompatModel(name, settings)

