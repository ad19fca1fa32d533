"""The HTTP/1.1 transport under the model client: httptools parses, asyncio moves bytes.

Why not aiohttp (which this replaced, docs/design/0002): importing it costs ~0.3 s here (it
builds two TLS contexts at import), a third of the time a run may take to put its first
request on the wire, and its per-request machinery (tracing hooks, cookies, URL objects,
payload classes) was ~15 % of a run's CPU at 320 requests/s. We measured h11 too: correct
but pure Python, it cost more CPU per exchange than aiohttp. A chat-completions call is one
POST to one URL: the request head is a fixed string plus a length, and the reply is parsed
by httptools (llhttp, the parser of Node.js, in C), which handles Content-Length, chunked
and read-until-close bodies. A TLS context is made on the first ``https`` connection only.

Connections are kept alive and reused. A reused connection that the server closed in the
meantime (an idle timeout) is replaced once, transparently, when it failed before any byte
of the reply came back. Every other failure is an ``HttpError`` (or ``TimeoutError``); the
caller decides whether to retry.
"""

from __future__ import annotations

import asyncio
import ssl as _ssl_mod
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httptools

# A body this small is joined with its head and sent in one write (one syscall). A larger
# one is fed to the transport piece by piece, waiting for its buffer to drain below the
# high-water mark between pieces: the images are never copied into one joined buffer, and
# the transport's buffer stays small. (Handing a 37 MB body to the transport at once made it
# grow a bytearray by repeated reallocation, copying the body again and again: ~1.5 s with
# the event loop blocked on Python 3.11.)
_JOIN_BELOW = 1 << 18
_HIGH_WATER = 1 << 20
_tls_context: _ssl_mod.SSLContext | None = None


def _tls() -> _ssl_mod.SSLContext:
    global _tls_context
    if _tls_context is None:
        _tls_context = _ssl_mod.create_default_context()
    return _tls_context


class HttpError(Exception):
    """The exchange failed below HTTP status level: refused, reset, closed early, malformed."""


class _Stale(Exception):
    """A reused connection turned out closed before any byte of the reply arrived."""


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]  # lower-cased names; a repeated header keeps its last value
    body: bytes


class _Connection(asyncio.Protocol):
    """One kept-alive connection: at most one exchange at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.reusable = False
        self._waiter: asyncio.Future[HttpResponse] | None = None
        self._got_bytes = False
        self._reused = False
        self._status = 0
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._framed = False  # the reply says where its body ends (length or chunked)
        self._drained: asyncio.Future[None] | None = None  # set while writing is paused

    # -- flow control (the transport calls these) --------------------------------------
    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # -- asyncio.Protocol --------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.transport.set_write_buffer_limits(high=_HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        self._got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(HttpError("the server switched protocols"))
        except httptools.HttpParserError as exc:
            self._fail(HttpError(f"malformed HTTP reply: {exc}"))

    def eof_received(self) -> bool:
        self._closed_by_peer(None)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed_by_peer(exc)

    # -- httptools callbacks -----------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._status = self.parser.get_status_code()
        h = self._headers  # transfer-coding names are case-insensitive (RFC 9112)
        self._framed = "content-length" in h or "chunked" in h.get("transfer-encoding", "").lower()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        if 100 <= self._status < 200:  # 100 Continue and the like: the real reply follows
            self._status, self._headers, self._body = 0, {}, []
            return
        keep = self.parser.should_keep_alive()
        self._finish(keep)

    # -- our side ----------------------------------------------------------------------
    def _finish(self, keep_alive: bool) -> None:
        waiter, self._waiter = self._waiter, None
        self.reusable = keep_alive and not self.closed
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        if waiter is not None and not waiter.done():
            waiter.set_result(HttpResponse(self._status, self._headers, body))

    def _fail(self, exc: Exception) -> None:
        self.reusable = False
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.close()

    def _closed_by_peer(self, exc: Exception | None) -> None:
        already = self.closed
        self.closed = True
        self.reusable = False
        self.resume_writing()  # a body writer waiting to drain sees the closed flag
        if self._waiter is None or already:
            return
        if self._status and not self._framed:  # the body ran until the server closed
            self._finish(False)
        elif self._reused and not self._got_bytes:
            self._fail(_Stale())
        else:
            why = f"{type(exc).__name__}: {exc}" if exc else "the server closed the connection"
            self._fail(HttpError(f"{why} before the reply was complete"))

    async def exchange(self, head: bytes, pieces: list[bytes | memoryview], size: int,
                       reused: bool) -> HttpResponse:
        if self.closed or self.transport is None:
            raise _Stale() if reused else HttpError("connection closed")
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        self._reused, self._got_bytes = reused, False
        self._status, self._headers, self._body, self._framed = 0, {}, [], False
        self.reusable = False
        t = self.transport
        if size < _JOIN_BELOW:
            t.write(b"".join([head, *pieces]))
        else:
            t.write(head)
            for piece in pieces:
                if self._drained is not None:
                    await self._drained
                    if self.closed or waiter.done():  # failed, or replied early (e.g. 413)
                        resp = await waiter
                        self.reusable = False  # our request was cut short
                        return resp
                t.write(piece)
        return await waiter

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None:
            self.transport.close()


class HttpClient:
    """POSTs to one URL over a pool of kept-alive connections (no upper bound: the caller's
    semaphore bounds how many requests are in flight)."""

    def __init__(self, url: str, headers: dict[str, str], timeout_s: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = self.host if ":" not in self.host else f"[{self.host}]"
        if self.port != (443 if self.tls else 80):
            host = f"{host}:{self.port}"
        lines = [f"POST {target} HTTP/1.1", f"Host: {host}"]
        for name, value in headers.items():
            if any(c in f"{name}{value}" for c in "\r\n\0"):
                raise ValueError(f"header {name!r} holds a line break or NUL")
            lines.append(f"{name}: {value}")
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self.timeout_s = timeout_s
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self.connections_opened = 0

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        kwargs: dict[str, Any] = {}
        if self.tls:
            kwargs.update(ssl=_tls(), server_hostname=self.host)
        try:
            _, conn = await loop.create_connection(_Connection, self.host, self.port, **kwargs)
        except TimeoutError:
            raise
        except (OSError, _ssl_mod.SSLError) as exc:
            raise HttpError(f"cannot connect to {self.host}:{self.port}: "
                            f"{type(exc).__name__}: {exc}") from exc
        self.connections_opened += 1
        self._all.add(conn)
        return conn

    def _discard(self, conn: _Connection) -> None:
        self._all.discard(conn)
        conn.close()

    async def post(self, pieces: list[bytes | memoryview],
                   timeout_s: float | None = None) -> HttpResponse:
        """Send ``pieces`` (one body, in order) and read the whole reply, within the
        timeout (connecting included; ``timeout_s`` overrides the client's for this call)."""
        size = sum(map(len, pieces))
        head = self._head + b"%d\r\n\r\n" % size
        async with asyncio.timeout(timeout_s or self.timeout_s):
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    try:
                        return await self._exchange(conn, head, pieces, size, reused=True)
                    except _Stale:
                        break
                self._discard(conn)
            return await self._exchange(await self._connect(), head, pieces, size,
                                        reused=False)

    async def _exchange(self, conn: _Connection, head: bytes,
                        pieces: list[bytes | memoryview], size: int,
                        reused: bool) -> HttpResponse:
        try:
            resp = await conn.exchange(head, pieces, size, reused)
        except BaseException:
            self._discard(conn)  # mid-exchange (or cancelled): its state is unknown
            raise
        if conn.reusable:
            self._idle.append(conn)
        else:  # the server asked to close, or the body ran until it closed
            self._discard(conn)
        return resp

    async def aclose(self) -> None:
        conns, self._all, self._idle = list(self._all), set(), []
        for conn in conns:
            conn.close()
        await asyncio.sleep(0)  # let the transports run their close callbacks
