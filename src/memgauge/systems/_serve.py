"""``memgauge serve-memory``: any registered system served over the memory protocol v1.1.

One asyncio server (``httptools`` parses the requests, as it parses replies in the model
client): each connection handles its requests in order, connections run concurrently, and
each episode has a lock, so calls for one episode run one at a time while several episodes
are in flight. Each ``/reset`` makes a fresh system instance from the factory (one per
episode, as the runner does); the least recently used episodes are dropped past
``max_episodes`` (the protocol has no "end of episode" call). Inline images are decoded to
content-addressed files in a temporary folder removed at exit, so the served system reads
them as it reads a benchmark's images (sizes, encoding, token counts alike).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import signal
import sys
import tempfile
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httptools
import orjson

from .. import __version__
from ..cache import ResponseCache
from ..errors import MemgaugeError
from ..media import ImagePolicy, ImageTooLarge, inline_image
from ..models import GenerateConfig, OwnTokenizer, create_model, release_if_releasable
from ..models._capabilities import Closable
from ..models._preflight import MODEL, Role, check
from ..registry import lookup
from ..schema import Ability, AnswerType, BenchmarkInfo, Episode, ImageRef, Question, Session, Turn
from ..tokens import TokenCounter
from ._base import SendsToEndpoints, SystemContext

PROTOCOL_VERSION = "1.1"  # namespaces (docs/memory-protocol.md)
MAX_NAMESPACE = 128
_EXT = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}


class BadRequest(MemgaugeError):
    """A request the protocol does not allow (the field named); answered with 400."""


def _field(obj: dict[str, Any], key: str, where: str, *kinds: type, null: bool = False) -> Any:
    value = obj.get(key)
    if value is None and null:
        return None
    if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
        names = " or ".join(k.__name__ for k in kinds) + (" or null" if null else "")
        raise BadRequest(f"{where}{key}: expected {names}, got "
                         f"{'null' if value is None else type(value).__name__}")
    return value


class MemoryService:
    """The protocol's four routes over one system factory."""

    def __init__(self, factory: Callable[[], Any], image_dir: Path, *, version: str,
                 max_episodes: int = 1024, allow_image_urls: bool = False) -> None:
        self.factory = factory
        # https image URLs reach the served system's model only when the operator says so:
        # a client's URL is fetched by whatever model the service uses, not by the client
        self.allow_image_urls = allow_image_urls
        probe = factory()
        self.info = {"name": probe.name, "version": version, "modality": probe.modality,
                     "protocol_version": PROTOCOL_VERSION}
        self.image_dir = image_dir
        self.max_episodes = max_episodes
        # (namespace, episode_id): two runs at once keep apart though their episode ids are
        # the same; a v1 client sends no namespace ("")
        self.episodes: OrderedDict[tuple[str, str], tuple[Any, asyncio.Lock, set[str]]] = \
            OrderedDict()

    async def handle(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        routes = {"/info": ("GET", None), "/reset": ("POST", self.reset),
                  "/ingest": ("POST", self.ingest), "/answer": ("POST", self.answer)}
        if path not in routes:
            return 404, _error(f"no route {path} (the protocol has {', '.join(routes)})")
        want, fn = routes[path]
        if method != want:
            return 405, _error(f"{path} takes {want}")
        if fn is None:
            return 200, self.info
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            return 400, _error(f"{path}: the body is not JSON")
        try:
            if not isinstance(obj, dict):
                raise BadRequest("the body: expected object")
            return await fn(obj)
        except BadRequest as exc:
            return 400, _error(f"{path}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a system bug is the client's system_error
            return 500, _error(f"{type(exc).__name__}: {exc}", "system_error")

    def _key(self, obj: dict[str, Any]) -> tuple[str, str]:
        """(namespace, episode_id) of a request; the namespace is "" for a v1 client."""
        namespace = _field(obj, "namespace", "", str, null=True) or ""
        if len(namespace) > MAX_NAMESPACE:
            raise BadRequest(f"namespace: over {MAX_NAMESPACE} characters")
        return namespace, _field(obj, "episode_id", "", str)

    def _episode(self, obj: dict[str, Any]) -> tuple[Any, asyncio.Lock, set[str]]:
        key = self._key(obj)
        found = self.episodes.get(key)
        if found is None:
            where = f" in namespace {key[0]!r}" if key[0] else ""
            raise BadRequest(f"episode_id: {key[1]!r} is not known here{where} (POST /reset "
                             "first)")
        self.episodes.move_to_end(key)
        return found

    async def reset(self, obj: dict[str, Any]) -> tuple[int, Any]:
        key = self._key(obj)
        system = self.factory()
        old = self.episodes.pop(key, None)
        lock = old[1] if old else asyncio.Lock()
        async with lock:
            await system.reset(Episode(episode_id=key[1], sessions=[], questions=[],
                                       benchmark=BenchmarkInfo(name="memory-protocol")))
            self.episodes[key] = (system, lock, set())
        while len(self.episodes) > self.max_episodes:
            self.episodes.popitem(last=False)
        return 200, {}

    async def ingest(self, obj: dict[str, Any]) -> tuple[int, Any]:
        system, lock, seen = self._episode(obj)
        session = self._session(_field(obj, "session", "", dict))
        async with lock:
            # a client resends after a timeout: a session already taken in is not taken twice
            if session.session_id not in seen:
                await system.ingest(session)
                seen.add(session.session_id)
        return 200, {}

    async def answer(self, obj: dict[str, Any]) -> tuple[int, Any]:
        system, lock, _ = self._episode(obj)
        question = self._question(_field(obj, "question", "", dict))
        async with lock:
            resp = await system.answer(question)
        if resp.error is not None:
            status = 503 if resp.error.retryable else 422
            return status, _error(f"{resp.error.kind}: {resp.error.message}", resp.error.kind)
        usage = resp.usage
        return 200, {
            "answer": resp.text or "",
            "retrieved": [{"session_id": r.pointer.session_id, "turn_id": r.pointer.turn_id,
                           "image_index": r.pointer.image_index, "score": r.score,
                           "chosen": r.chosen}
                          for r in resp.retrieved],
            "usage": None if usage.input_tokens is None and usage.output_tokens is None else
            {"prompt_tokens": usage.input_tokens or 0,
             "completion_tokens": usage.output_tokens or 0},
            "meta": {k: v for k, v in resp.meta.items()
                     if k in ("input_tokens", "dropped_sessions", "n_images")
                     and isinstance(v, int) or k in ("ingest", "memory") and isinstance(v, dict)}}

    # -- JSON to the data model ----------------------------------------------------------
    def _session(self, obj: dict[str, Any]) -> Session:
        w = "session."
        turns = []
        for i, t in enumerate(_field(obj, "turns", w, list)):
            at = f"{w}turns[{i}]."
            if not isinstance(t, dict):
                raise BadRequest(f"{at[:-1]}: expected object")
            role = _field(t, "role", at, str)
            if role not in ("user", "assistant"):
                raise BadRequest(f"{at}role: expected user or assistant, got {role!r}")
            turns.append(Turn(turn_id=_field(t, "turn_id", at, str), role=role,
                              text=_field(t, "text", at, str),
                              images=self._images(_field(t, "images", at, list), at)))
        return Session(session_id=_field(obj, "session_id", w, str),
                       date=_field(obj, "date", w, str, null=True), turns=turns)

    def _question(self, obj: dict[str, Any]) -> Question:
        w = "question."
        options = _field(obj, "options", w, list, null=True) or []
        if not all(isinstance(o, str) for o in options):
            raise BadRequest(f"{w}options: expected a list of str")
        return Question(question_id=_field(obj, "question_id", w, str),
                        text=_field(obj, "text", w, str), answer="",
                        answer_type=AnswerType.FREE_TEXT,
                        ability=Ability.INFORMATION_EXTRACTION,
                        question_date=_field(obj, "date", w, str, null=True),
                        images=self._images(_field(obj, "images", w, list, null=True) or [],
                                            w),
                        options=options)

    def _images(self, items: list[Any], where: str) -> list[ImageRef]:
        refs = []
        for i, im in enumerate(items):
            at = f"{where}images[{i}]."
            if not isinstance(im, dict):
                raise BadRequest(f"{at[:-1]}: expected object")
            sha = _field(im, "sha256", at, str)
            data_url = _field(im, "data_url", at, str, null=True)
            url = _field(im, "url", at, str, null=True)
            caption = _field(im, "caption", at, str, null=True)
            captions = {"gold": caption} if caption else {}
            if data_url is not None:  # the bytes themselves: `url` is not read then
                refs.append(self._decoded(data_url, sha, captions, at + "data_url"))
            elif url is not None and url.startswith("data:"):
                refs.append(self._decoded(url, sha, captions, at + "url"))
            elif url is not None:
                refs.append(ImageRef(source=self._https_url(url, at + "url"), url=url,
                                     sha256=sha, captions=captions))
            else:  # no bytes and no URL: the caption is all there is (a text prompt shows it)
                refs.append(ImageRef(source=f"sha256:{sha}", sha256=sha, captions=captions,
                                     meta={"caption_only": True}))
        return refs

    def _https_url(self, url: str, where: str) -> str:
        """``url`` if this service takes image URLs and it is https; else a 400 naming the
        field. A client's ``file:`` URL, path or link-local address would otherwise be read
        by the served system's model on this machine."""
        shown = url if len(url) <= 80 else url[:80] + "…"
        if not self.allow_image_urls:
            raise BadRequest(f"{where}: this service takes images as data: URLs only (start "
                             f"it with --allow-image-urls to accept https URLs), got {shown!r}")
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise BadRequest(f"{where}: expected an https:// URL or a data: URL, got {shown!r}")
        return url

    def _decoded(self, data_url: str, sha: str, captions: dict[str, str],
                 where: str) -> ImageRef:
        try:
            got = inline_image(data_url) if data_url.startswith("data:image/") else None
        except ImageTooLarge as exc:
            raise BadRequest(f"{where}: {exc}") from None
        if got is None:
            raise BadRequest(f"{where}: not a base64 data:image/... URL of a readable image")
        data, w, h = got
        import hashlib

        digest = hashlib.sha256(data).hexdigest()
        mime = data_url[5:data_url.find(";")] if ";" in data_url else "image/png"
        path = self.image_dir / f"{digest}{_EXT.get(mime, '.img')}"
        if not path.exists():
            tmp = path.with_suffix(".part")
            tmp.write_bytes(data)
            tmp.replace(path)
        return ImageRef(source=f"sha256:{sha}", path=str(path), sha256=sha, width=w,
                        height=h, captions=captions)


def _error(message: str, kind: str = "bad_request") -> dict[str, Any]:
    return {"error": {"message": message, "kind": kind}}


@dataclass(frozen=True)
class ServeLimits:
    """What one client may take of the service: a bounded body (refused as it streams in,
    never buffered past the limit), a request's head and body each within a time, an idle
    keep-alive connection closed, and a cap on connections open at once."""

    max_body: int = 32 << 20  # bytes of one request body; a session of inline photos fits
    header_timeout_s: float = 10.0  # from the request's first byte to its last header
    body_timeout_s: float = 60.0  # from the last header to the last body byte
    idle_timeout_s: float = 60.0  # a kept-alive connection with no request
    max_connections: int = 64

    def check(self) -> None:
        """A ``MemgaugeError`` naming the option for a limit that is not one."""
        for name, value in (("--max-body-mib", self.max_body),
                            ("--header-timeout", self.header_timeout_s),
                            ("--body-timeout", self.body_timeout_s),
                            ("--idle-timeout", self.idle_timeout_s),
                            ("--max-connections", self.max_connections)):
            if not value > 0:
                raise MemgaugeError(f"{name} {value:g}: must be more than 0")


@dataclass
class _Shared:
    """What every connection of one server reads: the service, its prefix, token and
    limits, and how many connections are open."""

    service: MemoryService
    prefix: str = ""
    token: str | None = None
    limits: ServeLimits = field(default_factory=ServeLimits)
    open: int = 0


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed by httptools, answered in order. A timer runs
    while a request is being read (head, then body) and while the connection is idle; when
    it fires the connection is closed, so a slow or silent client holds nothing for long."""

    def __init__(self, shared: _Shared) -> None:
        self.shared = shared
        self.limits = shared.limits
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.queue: asyncio.Queue[tuple[str, str, bytes, bool, str] | None] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.counted = False
        self._url = b""
        self._body: list[bytes] = []
        self._size = 0
        self._auth = ""
        self._declared = 0  # Content-Length
        self._refused = False  # a reply was sent mid-request (413, 400): read no more

    # -- the connection ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.shared.open >= self.limits.max_connections:
            # over the cap: answered at once, no parser, no task (a reply, not a hang)
            self._reply(503, _error(f"over {self.limits.max_connections} connections open; "
                                    "retry later", "overloaded"), keep_alive=False,
                        extra="Retry-After: 1\r\n")
            return
        self.shared.open += 1
        self.counted = True
        self.task = asyncio.get_running_loop().create_task(self._serve())
        self._arm(self.limits.idle_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.counted:
            self.shared.open -= 1
            self.counted = False
        self._disarm()
        self.queue.put_nowait(None)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._refuse(400, _error("malformed HTTP request"))

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self.timer = asyncio.get_running_loop().call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _timed_out(self) -> None:
        self.timer = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()  # a half-sent request or an idle connection: let it go

    def _refuse(self, status: int, obj: Any) -> None:
        """Answer now, mid-request, and close: nothing more of this client is read."""
        self._refused = True
        self._disarm()
        self._reply(status, obj, keep_alive=False)

    # -- httptools callbacks -----------------------------------------------------------
    def on_message_begin(self) -> None:
        self._url, self._body, self._size, self._auth, self._declared = b"", [], 0, "", 0
        self._arm(self.limits.header_timeout_s)

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"authorization":
            self._auth = value.decode("latin-1")
        elif name == b"content-length" and value.strip().isdigit():
            self._declared = int(value)  # httptools itself refuses a malformed one

    def on_headers_complete(self) -> None:
        if self._declared > self.limits.max_body:  # refused before a byte of it is read
            self._refuse(413, self._too_large())
            return
        self._arm(self.limits.body_timeout_s)

    def on_body(self, body: bytes) -> None:
        if self._refused:
            return
        self._size += len(body)
        if self._size > self.limits.max_body:  # chunked, or more than it declared
            self._body = []
            self._refuse(413, self._too_large())
            return
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        self._disarm()
        path = httptools.parse_url(self._url).path.decode("latin-1")
        method = self.parser.get_method().decode("latin-1")
        self.queue.put_nowait((method, path, b"".join(self._body),
                               self.parser.should_keep_alive(), self._auth))
        self._body = []

    def _too_large(self) -> dict[str, Any]:
        return _error(f"the body is over {self.limits.max_body:,} bytes (this service's "
                      "--max-body-mib)", "too_large")

    # -- answering ---------------------------------------------------------------------
    async def _serve(self) -> None:
        while (item := await self.queue.get()) is not None:
            method, path, body, keep, auth = item
            prefix = self.shared.prefix
            if prefix and path.startswith(prefix):
                path = path[len(prefix):] or "/"
            extra = ""
            if not self._authorized(auth):
                status, obj = 401, _error("this service wants `Authorization: Bearer <token>`"
                                          " (the token is not shown here)", "unauthorized")
                extra = 'WWW-Authenticate: Bearer realm="memgauge"\r\n'
            else:
                status, obj = await self.shared.service.handle(method, path, body)
            if self.transport is None or self.transport.is_closing():
                return
            self._reply(status, obj, keep_alive=keep, extra=extra)
            if not keep:
                return
            if self.queue.empty():
                self._arm(self.limits.idle_timeout_s)

    def _authorized(self, header: str) -> bool:
        token = self.shared.token
        if token is None:
            return True
        scheme, _, given = header.partition(" ")
        # compared in constant time: how long a refusal takes says nothing of the token
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode("utf-8", "replace"), token.encode())

    def _reply(self, status: int, obj: Any, keep_alive: bool, extra: str = "") -> None:
        if self.transport is None or self.transport.is_closing():
            return
        data = orjson.dumps(obj)
        reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
                  405: "Method Not Allowed", 413: "Content Too Large",
                  422: "Unprocessable Content", 500: "Internal Server Error",
                  503: "Service Unavailable"}.get(status, "")
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n{extra}"
                f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
        self.transport.write(head.encode("latin-1") + data)
        if not keep_alive:
            self.transport.close()


async def serve(service: MemoryService, host: str, port: int, prefix: str = "",
                ready: Callable[[str], None] | None = None,
                stop: asyncio.Event | None = None, *, token: str | None = None,
                limits: ServeLimits | None = None) -> None:
    """Serve until ``stop`` is set (or the task is cancelled); ``ready`` gets the URL. With
    ``token`` every route wants ``Authorization: Bearer <token>``."""
    loop = asyncio.get_running_loop()
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    shared = _Shared(service=service, prefix=prefix, token=token,
                     limits=limits or ServeLimits())
    server = await loop.create_server(lambda: _Connection(shared), host, port)
    bound = server.sockets[0].getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    url = f"http://{shown}:{bound[1]}{prefix}"
    if ready is not None:
        ready(url)
    stop = stop or asyncio.Event()
    try:
        await stop.wait()
    finally:
        server.close()
        await server.wait_closed()


def run_server(factory: Callable[[], Any], host: str, port: int, prefix: str,
               max_episodes: int, closers: list[Any], *,
               allow_image_urls: bool = False, token: str | None = None,
               limits: ServeLimits | None = None) -> None:
    """The blocking entry point of ``memgauge serve-memory``: prints the URL, stops
    cleanly on Ctrl-C or SIGTERM (the model's connections closed, the images removed)."""
    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            # no loop signal handlers on Windows or off the main thread (a test's server):
            # Ctrl-C then arrives as KeyboardInterrupt instead
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        with tempfile.TemporaryDirectory(prefix="memgauge-serve-") as tmp:
            service = MemoryService(factory, Path(tmp), version=__version__,
                                    max_episodes=max_episodes,
                                    allow_image_urls=allow_image_urls)

            def ready(url: str) -> None:
                print(f"serving {service.info['name']} over the memory protocol v1.1 at {url}",
                      flush=True)
                if token is None and not _loopback(host):
                    print(f"warning: {host} is not a loopback address and there is no "
                          "--token-env: anyone who can reach it can use this service",
                          file=sys.stderr, flush=True)

            try:
                await serve(service, host, port, prefix, ready, stop, token=token,
                            limits=limits)
            finally:
                for close in closers:
                    with contextlib.suppress(Exception):
                        await close()
        print("stopped", file=sys.stderr, flush=True)

    asyncio.run(main())


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_factory(config: Any) -> tuple[Callable[[], Any], list[Any]]:
    """The system factory ``serve-memory`` serves, made from a run-shaped configuration
    (``RunConfig``: the same checks, the same model, counter and context as ``memgauge
    run`` builds), and the closers of what it opened. Mistakes are ``ConfigError``s before
    anything listens; the model's endpoint is pre-flighted as a run's is."""
    c = config.resolved()
    policy = ImagePolicy(max_side=c.image_max_side, format=c.image_format)
    cache = ResponseCache(c.cache_path) if c.cache else None
    model = create_model(c.model, c.model_settings(policy, cache))
    closers: list[Any] = [model.aclose] if isinstance(model, Closable) else []
    try:
        if c.tokenizer == "model" and isinstance(model, OwnTokenizer):
            per_message, priming = model.template_overhead()
            counter = TokenCounter(tokenizer="model", image_formula=c.image_formula,
                                   count_fn=model.count_text, label=model.tokenizer_name,
                                   message_overhead=per_message, reply_priming=priming)
        else:
            counter = TokenCounter(tokenizer=c.tokenizer if c.tokenizer != "model"
                                   else "o200k_base", image_formula=c.image_formula)
        ctx = SystemContext(model=model, generate=GenerateConfig(
            max_tokens=c.max_tokens, temperature=c.temperature, top_p=c.top_p, seed=c.seed,
            extra_body=dict(c.extra_body)), counter=counter, image_policy=policy,
            context_mode=c.context_mode, instruction=c.instruction,
            label_images=c.label_images, max_context_tokens=c.max_context_tokens,
            overflow=c.overflow, count_tokens=c.count_tokens,
            options=c.effective_system_options(), cache=cache, api_key_env=c.api_key_env)
        factory: Any = lookup("system", c.system)(ctx)
        probe: Any = factory  # narrowed here only: the factory is returned as made
        endpoints = probe.endpoints() if isinstance(probe, SendsToEndpoints) else []
        check([(model, MODEL)] + [(e, Role(e.label, e.url_flag, e.key_flag))
                                  for e in endpoints],
              {})
    except BaseException:
        release_if_releasable(model)
        raise
    if cache is not None:
        closers.append(_closer(cache.close))
    return factory, closers


def _closer(fn: Callable[[], None]) -> Callable[[], Any]:
    async def close() -> None:
        fn()

    return close
