"""``--system http://HOST:PORT[/prefix]``: a memory system that runs as a service.

The wire protocol is the memgauge memory protocol v1 (``docs/memory-protocol.md``): ``GET
/info`` once before the first episode (the pre-flight), then per episode ``POST /reset``,
``POST /ingest`` per session and ``POST /answer`` per question, JSON both ways. The transport
is the model client's (``models/_http.py``); non-2xx replies and timeouts are retried as the
model client retries them (backoff with full jitter, ``Retry-After``), then become a
``system_error`` with the server's message. A reply that is not what the protocol says is an
error naming the route and the field, never an answer (docs/design/0024).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import mimetypes
import os
import random
import re
import secrets
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import orjson

from .._secrets import redact_url
from ..errors import ConfigError, MemgaugeError, option_error
from ..media import ImageEncoder
from ..models import ModelSettings
from ..models._http import ConnectError, HttpClient, HttpError, TlsVerifyError, redirect_advice
from ..models._preflight import PREFLIGHT_TIMEOUT_S, _run
from ..models.openai_compat import _retry_after, bounded, classify_error
from ..prompt import CAPTION_KINDS
from ..registry import Registration, memory_agent, no_needs
from ..schema import (
    Episode,
    ErrorInfo,
    EvidenceRef,
    ImageRef,
    Question,
    Response,
    RetrievedItem,
    Session,
    Usage,
)
from ._base import MemorySystem, SystemContext, SystemFactory

PROTOCOL_VERSION = "1.1"  # what this client speaks; it speaks "1" to a v1 service
MODALITIES = ("image", "caption", "text")
IMAGE_MODES = ("auto", "inline", "url", "none")
_DEFAULTS = ModelSettings()  # the model client's retry settings are this client's defaults
OPTIONS = {
    "timeout": (float, f"seconds per request (default {_DEFAULTS.timeout_s:g})"),
    "max_attempts": (int, f"attempts per request (default {_DEFAULTS.max_attempts})"),
    "retry_base": (float, f"seconds of the first backoff (default {_DEFAULTS.retry_base_s:g})"),
    "images": (str, ("auto (default: inline for an image service, none otherwise) | inline "
                     "(data URLs) | url (source URLs only) | none (captions only)")),
    "token_env": (str, "environment variable holding the service's bearer token"),
}
# How the service is reached, not what it is: left out of the system's identity in reports
# (design 0051), so a run with a longer timeout is the same system.
TRANSPORT_OPTIONS = frozenset({"timeout", "max_attempts", "retry_base", "token_env"})


def served_as(description: Any) -> str | None:
    """The memory service a run's manifest ``system`` entry describes, by its ``/info``
    name and version (``http:mem-x 1.2``); None when the entry is not an http service's.
    The URL and port it was reached at are where it ran, not what it is."""
    if not isinstance(description, dict) or description.get("name") != "http":
        return None
    server = description.get("server")
    if not isinstance(server, dict) or not server.get("name"):
        return None
    version = server.get("version")
    return f"http:{server['name']}" + (f" {version}" if version else "")


# Response.meta keys a server may send back (protocol extension `meta`): what records keep.
_META_INTS = ("input_tokens", "dropped_sessions", "n_images")
_META_COUNTS = ("ingest", "memory")  # the cost of memory (runner/_ingest_cost.py checks them)


class ProtocolError(MemgaugeError):
    """The service answered something the protocol does not allow (route and field named)."""


class ServiceError(MemgaugeError):
    """The service failed a request after the retries (its own message kept)."""

    def __init__(self, message: str, *, retryable: bool, attempts: int) -> None:
        super().__init__(message)
        self.retryable, self.attempts = retryable, attempts


def is_service_url(name: str) -> bool:
    return name.startswith(("http://", "https://"))


@dataclass
class _Service:
    """What every episode of a run shares: the base URL, settings, and the connections."""

    base: str
    timeout_s: float
    max_attempts: int
    retry_base_s: float
    retry_cap_s: float
    images: str  # inline | url | none (auto resolved against /info)
    encoder: ImageEncoder
    info: dict[str, Any] = field(default_factory=dict)
    # v1.1: this run's memories on the service are kept apart from any other run's under
    # this id; None for a v1 service (which keeps one memory per episode id)
    namespace: str | None = None
    token: str | None = None  # the bearer token (from --system-option token_env)
    lock: _RunLock | None = None  # v1: no other run of this machine on the service at once
    warnings: list[str] = field(default_factory=list)  # for the manifest
    # one client per route and event loop (a worker process or a second run has its own loop)
    _clients: dict[tuple[int, str], HttpClient] = field(default_factory=dict)
    requests: int = 0
    retries: int = 0

    def _client(self, route: str) -> HttpClient:
        key = (id(asyncio.get_running_loop()), route)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = HttpClient(
                self.base + route, _headers(self.token, json_body=True), self.timeout_s)
        return client

    async def call(self, route: str, payload: dict[str, Any]) -> Any:
        """POST ``payload`` to ``route``, retried like a model call; the reply's JSON. A v1.1
        service gets the run's ``namespace`` beside the episode id."""
        if self.namespace is not None:
            payload = {"namespace": self.namespace, **payload}
        body = orjson.dumps(payload)
        for attempt in range(1, self.max_attempts + 1):
            retry_after: float | None = None
            try:
                self.requests += 1
                resp = await self._client(route).post([body])
                retry_after = _retry_after(resp.headers.get("retry-after"))
                if resp.status < 300:
                    return _json(route, resp.body)
                if resp.status < 400:
                    msg = redirect_advice(resp, self.base + route, route)
                    retryable = False
                else:
                    _, said, retryable, _ = classify_error(resp.status, resp.body)
                    msg = f"HTTP {resp.status}: {said}"
            except TimeoutError:
                msg, retryable = f"no reply within {self.timeout_s:g} s", True
            except TlsVerifyError as exc:
                msg, retryable = f"{exc} (not retried)", False
            except HttpError as exc:
                msg, retryable = str(exc), True
            if not retryable or attempt == self.max_attempts:
                raise ServiceError(f"POST {route}: {msg} (after {attempt} attempt"
                                   f"{'s' if attempt > 1 else ''})",
                                   retryable=retryable, attempts=attempt)
            self.retries += 1
            delay = random.uniform(0, min(self.retry_cap_s,
                                          self.retry_base_s * 2 ** (attempt - 1)))
            await asyncio.sleep(max(delay, retry_after or 0.0))
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        loop = id(asyncio.get_running_loop())
        for key in [k for k in self._clients if k[0] == loop]:
            await self._clients.pop(key).aclose()
        if self.lock is not None:  # the run is over: another may use the v1 service now
            self.lock.release()

    # -- what goes on the wire ---------------------------------------------------------
    async def image(self, index: int, ref: ImageRef) -> dict[str, Any]:
        data_url: str | None = None
        sha, mime = ref.sha256, None
        if self.images == "inline" and ref.path is not None and not ref.missing:
            enc = self.encoder.cached(ref) or await asyncio.to_thread(self.encoder.encode, ref)
            data_url, sha, mime = enc.data_url.decode("ascii"), enc.sha256, enc.mime
        if sha is None:
            sha = await asyncio.to_thread(_sha256_of, ref)
        if mime is None:
            mime = mimetypes.guess_type(ref.path or ref.url or ref.source)[0] or \
                "application/octet-stream"
        return {"image_index": index, "sha256": sha, "mime": mime, "data_url": data_url,
                "url": ref.url if self.images != "none" else None,
                "caption": best_caption(ref)}

    async def images_of(self, refs: list[ImageRef]) -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(self.image(i, r) for i, r in enumerate(refs))))


def best_caption(ref: ImageRef) -> str | None:
    """The caption a text prompt would show for this image (the same order of kinds)."""
    return next((ref.captions[k] for k in CAPTION_KINDS if ref.captions.get(k)),
                next(iter(v for v in ref.captions.values() if v), None))


def _sha256_of(ref: ImageRef) -> str:
    """The image file's sha256; for an image known only by URL (no bytes here), the sha256
    of its URL (docs/memory-protocol.md says so)."""
    if ref.path is not None and not ref.missing and Path(ref.path).is_file():
        return hashlib.sha256(Path(ref.path).read_bytes()).hexdigest()
    return hashlib.sha256((ref.url or ref.source).encode()).hexdigest()


class HttpMemory:
    """One episode's memory, kept by the service; this object only talks to it. Calls for
    one episode are sent one at a time (the protocol's promise to servers), though the
    runner may answer questions asked at the same point concurrently."""

    def __init__(self, service: _Service) -> None:
        self.service = service
        self.name = f"http:{service.info.get('name', '?')}"
        self.modality = service.info.get("modality", "text")
        self.episode_id: str | None = None
        self._lock = asyncio.Lock()

    def describe(self) -> dict[str, Any]:
        s = self.service
        out = {"name": "http", "url": redact_url(s.base),
               "protocol": s.info.get("protocol_version", "1"),
               "server": {k: s.info[k] for k in ("name", "version", "modality",
                                                 "protocol_version") if k in s.info},
               "images": s.images, "timeout_s": s.timeout_s, "max_attempts": s.max_attempts,
               "auth": "bearer" if s.token else None}
        if s.namespace is not None:
            out["namespace"] = s.namespace
        if s.warnings:
            out["warnings"] = list(s.warnings)
        return out

    async def reset(self, episode: Episode) -> None:
        self.episode_id = episode.episode_id
        async with self._lock:
            _empty("/reset", await self.service.call("/reset", {"episode_id": episode.episode_id}))

    async def ingest(self, session: Session) -> None:
        s = self.service
        turns = [{"turn_id": t.turn_id, "role": t.role, "text": t.text,
                  "images": await s.images_of(t.images)} for t in session.turns]
        payload = {"episode_id": self.episode_id,
                   "session": {"session_id": session.session_id, "date": session.date,
                               "turns": turns}}
        async with self._lock:
            _empty("/ingest", await s.call("/ingest", payload))

    async def answer(self, question: Question) -> Response:
        s = self.service
        try:
            payload = {"episode_id": self.episode_id,
                       "question": {"question_id": question.question_id, "text": question.text,
                                    "date": question.question_date,
                                    "images": await s.images_of(question.images),
                                    "options": list(question.options) or None}}
        except (MemgaugeError, OSError) as exc:  # an image that cannot be read or encoded
            return Response(error=ErrorInfo(kind="bad_input", message=str(exc)))
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            async with self._lock:
                reply = await s.call("/answer", payload)
            return parse_answer(reply, latency_s=loop.time() - t0)
        except ServiceError as exc:
            return Response(latency_s=loop.time() - t0, error=ErrorInfo(
                kind="system_error", message=str(exc), retryable=exc.retryable,
                attempts=exc.attempts))
        except ProtocolError as exc:
            return Response(latency_s=loop.time() - t0,
                            error=ErrorInfo(kind="bad_response", message=str(exc)))

    async def aclose(self) -> None:
        await self.service.aclose()


# -- reading replies (strictly: a wrong type is an error naming the route and field) -------

def _json(route: str, raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        shown = bounded(raw[:200].decode("utf-8", "replace")) or "an empty body"
        raise ProtocolError(f"{route}: the reply is not JSON: {shown}") from None


def _type_name(value: Any) -> str:
    return {type(None): "null", bool: "bool", int: "int", float: "float", str: "str",
            list: "list", dict: "object"}.get(type(value), type(value).__name__)


def _want(route: str, where: str, value: Any, *kinds: str) -> Any:
    """``value`` if it has one of ``kinds`` (str, int, float, bool, list, object, null)."""
    got = _type_name(value)
    ok = got in kinds or (got == "int" and "float" in kinds)
    if not ok:
        raise ProtocolError(f"{route}: {where}: expected {' or '.join(kinds)}, got {got}")
    if got == "float" and not math.isfinite(value):
        raise ProtocolError(f"{route}: {where}: expected a finite number, got {value}")
    return value


def _object(route: str, obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ProtocolError(f"{route}: the reply: expected object, got {_type_name(obj)}")
    return obj


def _empty(route: str, obj: Any) -> None:
    _object(route, obj)  # {} (more fields are allowed and ignored)


def parse_info(obj: Any) -> dict[str, Any]:
    """The service's ``/info``; ``protocol_version`` is "1" when absent (a v1 service)."""
    r = "/info"
    obj = _object(r, obj)
    info = {k: _want(r, k, obj.get(k), "str") for k in ("name", "version", "modality")}
    if info["modality"] not in MODALITIES:
        raise ProtocolError(f"{r}: modality: expected one of {', '.join(MODALITIES)}, got "
                            f"{info['modality']!r}")
    version = _want(r, "protocol_version", obj.get("protocol_version", "1"), "str")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", version):
        raise ProtocolError(f"{r}: protocol_version: expected e.g. \"1.1\", got {version!r}")
    info["protocol_version"] = version
    return info


def speaks_namespaces(version: str) -> bool:
    """Whether a service of this protocol version keeps memories per namespace (1.1 on;
    minor versions only add)."""
    major, _, minor = version.partition(".")
    return int(major) == 1 and int(minor or 0) >= 1


def parse_answer(obj: Any, latency_s: float | None = None) -> Response:
    r = "/answer"
    obj = _object(r, obj)
    text = _want(r, "answer", obj.get("answer"), "str")
    if not text.strip():
        # as an empty model reply is: an error reported apart, never an answer scored 0
        return Response(latency_s=latency_s, error=ErrorInfo(
            kind="empty_answer", message=f"{r}: answer is {'empty' if not text else 'blank'}"
            " (a service with nothing to say should say so in words)"))
    items = _want(r, "retrieved", obj.get("retrieved", []), "list", "null") or []
    retrieved = []
    for i, item in enumerate(items):
        at = f"retrieved[{i}]"
        item = _want(r, at, item, "object")
        index = _want(r, f"{at}.image_index", item.get("image_index"), "int", "null")
        if index is not None and index < 0:
            raise ProtocolError(f"{r}: {at}.image_index: expected 0 or more, got {index}")
        score = _want(r, f"{at}.score", item.get("score"), "float", "null")
        chosen = _want(r, f"{at}.chosen", item.get("chosen", True), "bool")
        retrieved.append(RetrievedItem(chosen=chosen, pointer=EvidenceRef(
            session_id=_want(r, f"{at}.session_id", item.get("session_id"), "str"),
            turn_id=_want(r, f"{at}.turn_id", item.get("turn_id"), "str", "null"),
            image_index=index), score=None if score is None else float(score)))
    usage = Usage()
    raw_usage = _want(r, "usage", obj.get("usage"), "object", "null")
    if raw_usage is not None:
        counts = {}
        for key in ("prompt_tokens", "completion_tokens"):
            n = _want(r, f"usage.{key}", raw_usage.get(key), "int")
            if n < 0:
                raise ProtocolError(f"{r}: usage.{key}: expected 0 or more, got {n}")
            counts[key] = n
        usage = Usage(input_tokens=counts["prompt_tokens"],
                      output_tokens=counts["completion_tokens"],
                      total_tokens=counts["prompt_tokens"] + counts["completion_tokens"])
    meta: dict[str, Any] = {}
    extra = obj.get("meta")
    if isinstance(extra, dict):  # an optional extension: only counts records keep
        meta = {k: extra[k] for k in _META_INTS
                if isinstance(extra.get(k), int) and not isinstance(extra[k], bool)}
        meta.update({k: extra[k] for k in _META_COUNTS if isinstance(extra.get(k), dict)})
    return Response(text=text, retrieved=retrieved, usage=usage, latency_s=latency_s, meta=meta)


# -- the factory: settings, the pre-flight --------------------------------------------------

def _headers(token: str | None, *, json_body: bool = False) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if json_body:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def preflight(base: str, timeout_s: float, token: str | None = None) -> dict[str, Any]:
    """``GET /info`` before the first episode (each worker process asks once more: one
    loopback GET): nothing listening, no reply in time, an error status, a malformed reply
    or a protocol version this client does not speak is a ``ConfigError`` at once."""
    shown = redact_url(base) or base
    limit = min(timeout_s, PREFLIGHT_TIMEOUT_S)

    async def ask() -> Any:
        client = HttpClient(base + "/info", _headers(token), limit)
        try:
            return await client.get(base + "/info")
        finally:
            await client.aclose()

    try:
        resp = _run(ask())
    except ConnectError as exc:
        raise ConfigError(f"nothing answers at the memory service {shown}: {exc}; is it "
                          "running, and is --system right?") from None
    except TimeoutError:
        raise ConfigError(f"the memory service {shown} did not answer GET /info within "
                          f"{limit:g} s") from None
    except HttpError as exc:
        raise ConfigError(f"the memory service {shown}: GET /info failed: {exc}") from None
    if resp.status in (401, 403):
        _, said, _, _ = classify_error(resp.status, resp.body)
        hint = ("the token was refused" if token else
                "it wants a token: --system-option token_env=NAME names the variable holding it")
        raise ConfigError(f"the memory service {shown}: GET /info answered HTTP "
                          f"{resp.status}: {said} ({hint})")
    if resp.status != 200:
        _, said, _, _ = classify_error(resp.status, resp.body)
        raise ConfigError(f"the memory service {shown}: GET /info answered HTTP "
                          f"{resp.status}: {said}")
    try:
        info = parse_info(_json("/info", resp.body))
    except ProtocolError as exc:
        raise ConfigError(f"the memory service {shown} does not speak the memory protocol: "
                          f"{exc}") from None
    if int(info["protocol_version"].partition(".")[0]) != 1:
        raise ConfigError(f"the memory service {shown} speaks memory protocol version "
                          f"{info['protocol_version']}; this memgauge speaks 1 and "
                          f"{PROTOCOL_VERSION} (a newer memgauge may speak it)")
    return info


# the lock files a run holds, "path@pid" joined by os.pathsep: inherited by its workers
_LOCKS_ENV = "MEMGAUGE_V1_SERVICE_LOCKS"


class _RunLock:
    """An exclusive lock on a v1 service for one run on this machine: a v1 service keeps one
    memory per episode id, so a second run's ``/reset`` would wipe the first's memories. A
    lock file per service URL under the temporary folder, ``flock``ed for the run (released
    at its end, when the object is dropped, or by the kernel when the process dies). A
    worker process forked by the run finds the lock named in its environment and does not
    take it again."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._close = weakref.finalize(self, os.close, fd)  # a failed setup drops it too
        os.environ[_LOCKS_ENV] = os.pathsep.join(
            e for e in (os.environ.get(_LOCKS_ENV, ""), self._entry()) if e)

    def _entry(self) -> str:
        return f"{self.path}@{os.getpid()}"

    @staticmethod
    def path_for(base: str) -> Path:
        name = hashlib.sha256(base.encode()).hexdigest()[:24] + ".lock"
        return Path(tempfile.gettempdir()) / "memgauge-v1-services" / name

    @staticmethod
    def held_by_parent(path: Path) -> bool:
        """Whether a process this one descends from holds ``path`` for the same run."""
        held = [e.rpartition("@") for e in os.environ.get(_LOCKS_ENV, "").split(os.pathsep)]
        return any(p == str(path) and pid != str(os.getpid()) for p, _, pid in held)

    @staticmethod
    def take(path: Path, shown: str) -> _RunLock | None:
        """The lock, or None where this platform or folder cannot lock (the manifest says
        so); a ``ConfigError`` naming the other process when another run holds it."""
        try:
            import fcntl
        except ImportError:  # Windows: nothing to lock with
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise ConfigError(
                f"another memgauge run (process {owner}) is using the memory service {shown}, "
                "which speaks protocol v1: a v1 service keeps one memory per episode id, so "
                "two runs at once would wipe each other's memories. Wait for that run to end, "
                "or run a service that speaks v1.1 (namespaces)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        return _RunLock(path, fd)

    def release(self) -> None:
        if self._close.alive:
            self._close()  # closing the file drops the flock
            os.environ[_LOCKS_ENV] = os.pathsep.join(
                e for e in os.environ.get(_LOCKS_ENV, "").split(os.pathsep)
                if e and e != self._entry())


def _namespace() -> str:
    """A run-unique id (this process and 64 random bits): what a v1.1 service keeps this
    run's memories under, apart from every other run's."""
    return f"memgauge-{os.getpid()}-{secrets.token_hex(8)}"


def read_token(env: str, option: str) -> str:
    """The bearer token the variable ``env`` holds (``option`` names where it was given); a
    ``ConfigError`` before any request when it is unset, empty or cannot go in a header
    (never a run of 401s). Shared by the client and ``serve-memory``."""
    token = os.environ.get(env, "").strip()
    if not token:
        raise ConfigError(f"{option}: the environment variable {env} is not set (or is empty)")
    if any(ord(ch) < 0x21 or ord(ch) > 0x7e for ch in token):
        raise ConfigError(f"{option}: the token in {env} has spaces or characters a header "
                          "cannot carry")
    return token


def registration_for_url(url: str) -> Registration:
    """The registry's record of the service at ``url`` (what ``registration`` and
    ``lookup`` return for it): its options are ``OPTIONS``, it needs nothing of the run
    (the service answers) and is a memory agent."""
    return Registration("system", url, for_url(url), options=MappingProxyType(dict(OPTIONS)),
                        needs=no_needs, system_kind=memory_agent)


def for_url(url: str) -> Callable[[SystemContext], SystemFactory]:
    """The system factory for the service at ``url``."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        raise ConfigError(f"--system {url}: the port is not a number") from None
    if not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"--system {url}: use http://HOST:PORT[/prefix] (no query or "
                          "fragment)")
    base = url.rstrip("/")

    def build(ctx: SystemContext) -> SystemFactory:
        opts = ctx.typed_options("an http memory service", OPTIONS)
        timeout = opts.get("timeout", _DEFAULTS.timeout_s)
        attempts = opts.get("max_attempts", _DEFAULTS.max_attempts)
        images = opts.get("images", "auto")
        retry_base = opts.get("retry_base", _DEFAULTS.retry_base_s)
        if not timeout > 0:
            raise option_error("timeout", "must be more than 0", f"{timeout:g}")
        if attempts < 1:
            raise option_error("max_attempts", "must be at least 1", attempts)
        if images not in IMAGE_MODES:
            raise option_error("images", f"use one of {', '.join(IMAGE_MODES)}", repr(images))
        env = opts.get("token_env")
        token = read_token(env, f"--system-option token_env={env}") if env else None
        info = preflight(base, timeout, token)
        if images == "auto":
            images = "inline" if info["modality"] == "image" else "none"
        service = _Service(base=base, timeout_s=timeout, max_attempts=attempts,
                           retry_base_s=max(0.0, retry_base),
                           retry_cap_s=_DEFAULTS.retry_cap_s, images=images,
                           encoder=ImageEncoder(ctx.image_policy), info=info, token=token)
        if speaks_namespaces(info["protocol_version"]):
            service.namespace = _namespace()
        else:
            path = _RunLock.path_for(base)
            locked = _RunLock.held_by_parent(path)
            if not locked:
                service.lock = _RunLock.take(path, redact_url(base) or base)
                locked = service.lock is not None
            service.warnings.append(
                "the memory service speaks protocol v1 (no namespaces): it keeps one memory "
                "per episode id, so a run using it at the same time from another machine "
                "would wipe this run's memories undetected"
                + ("" if locked else "; runs on this machine could not be locked out either"))

        def make() -> MemorySystem:
            return HttpMemory(service)

        return make

    return build
