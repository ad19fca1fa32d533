"""The HTTP/1.1 transport under the model client: httptools parses, asyncio moves bytes.

Why not aiohttp (which this replaced, docs/design/0002): importing it costs ~0.3 s here (it
builds two TLS contexts at import), a third of the time a run may take to put its first
request on the wire, and its per-request machinery (tracing hooks, cookies, URL objects,
payload classes) was ~15 % of a run's CPU at 320 requests/s. We measured h11 too: correct
but pure Python, it cost more CPU per exchange than aiohttp. A chat-completions call is one
POST to one URL: the request head is a fixed string plus a length, and the reply is parsed
by httptools (llhttp, the parser of Node.js, in C), which handles Content-Length, chunked
and read-until-close bodies. A TLS context is made on the first ``https`` connection only.
Redirects, proxies and TLS failures were added for real networks (docs/design/0016), and
moving to httpx or aiohttp for them was measured and not taken (bench/transport_choice.py).

Connections are kept alive and reused. A reused connection that the server closed in the
meantime (an idle timeout) is replaced once, transparently, when it failed before any byte
of the reply came back. Every other failure is an ``HttpError`` (or ``TimeoutError``); the
caller decides whether to retry, except that :class:`TlsVerifyError` (a certificate that
does not verify) is a promise that retrying cannot help.

Redirects (what a test may rely on):

- 307 and 308 are followed for every method, with the same method and the same body;
- 301, 302 and 303 are followed for GET only. A POST that gets one is *not* re-sent (most
  clients turn it into a GET, which is no chat call): the 3xx reply itself is returned, and
  :func:`redirect_advice` words the error (status, Location, ``--base-url``);
- at most ``MAX_REDIRECTS`` hops; past that the last 3xx reply is returned;
- a relative ``Location`` is resolved against the URL that answered; a 3xx without a
  ``Location`` (or one that is not http/https) is returned as it is;
- ``Authorization`` goes only where the first request went: it is dropped, for this and every
  later hop, once a hop leads to another host or port, or from https to http (http to https
  on the same host keeps it: the same server, now encrypted);
- the whole chain runs within the request's one timeout; nothing is remembered between
  requests (each starts at the configured URL again; the pre-flight tells the user to fix
  the URL instead).

Proxies: ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY`` (and the lower-case forms, which win,
as in urllib) are read when a client is made. An ``http`` URL through a proxy is sent in
absolute form to the proxy; an ``https`` URL goes through a ``CONNECT`` tunnel, TLS end to
end. Loopback hosts (localhost, 127.0.0.0/8, ::1) never use a proxy. Credentials in the
proxy URL become ``Proxy-Authorization: Basic`` (sent to the proxy only, never described).
Only ``http://`` proxies are supported; anything else is a ``ValueError`` at construction.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import ssl as _ssl_mod
import urllib.request
from dataclasses import dataclass, replace
from typing import Any, cast
from urllib.parse import unquote, urljoin, urlsplit

import httptools

# A body this small is joined with its head and sent in one write (one syscall). A larger
# one is fed to the transport piece by piece, waiting for its buffer to drain below the
# high-water mark between pieces: the images are never copied into one joined buffer, and
# the transport's buffer stays small. (Handing a 37 MB body to the transport at once made it
# grow a bytearray by repeated reallocation, copying the body again and again: ~1.5 s with
# the event loop blocked on Python 3.11.)
_JOIN_BELOW = 1 << 18
_HIGH_WATER = 1 << 20
MAX_REDIRECTS = 5
REDIRECTS = frozenset((301, 302, 303, 307, 308))
_SAME_METHOD = frozenset((307, 308))  # followed for any method, the body sent again
_tls_context: _ssl_mod.SSLContext | None = None


def _tls() -> _ssl_mod.SSLContext:
    global _tls_context
    if _tls_context is None:
        _tls_context = _ssl_mod.create_default_context()
    return _tls_context


class HttpError(Exception):
    """The exchange failed below HTTP status level: refused, reset, closed early, malformed."""


class ConnectError(HttpError):
    """No connection could be made: refused, a name that does not resolve, unreachable, or a
    proxy that refused the tunnel. ``target`` is ``host:port`` (the proxy's, via a proxy)."""

    def __init__(self, message: str, target: str) -> None:
        super().__init__(message)
        self.target = target


class TlsVerifyError(ConnectError):
    """The server's certificate did not verify (unknown issuer, wrong host, expired): no
    retry can change that, so callers never retry it."""


class _Stale(Exception):
    """A reused connection turned out closed before any byte of the reply arrived."""


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]  # lower-cased names; a repeated header keeps its last value
    body: bytes
    url: str | None = None  # the URL that gave this reply; None: the one asked for
    redirects: tuple[tuple[int, str], ...] = ()  # (status, absolute Location) of each hop


@dataclass(frozen=True)
class Proxy:
    host: str
    port: int
    url: str  # http://host:port, without credentials: fit to print and record
    authorization: str | None = None  # the Proxy-Authorization value, from the URL's userinfo


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def proxy_for(url: str) -> Proxy | None:
    """The proxy the environment names for ``url`` (None: go direct). A loopback host, or one
    ``NO_PROXY`` matches, goes direct. ``ValueError`` for a proxy URL we cannot use."""
    parts = urlsplit(url)
    if is_loopback(parts.hostname):
        return None
    proxies = urllib.request.getproxies_environment()
    raw = proxies.get(parts.scheme)
    if not raw:
        return None
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    # undocumented in urllib and so absent from typeshed, though public since Python 3.4
    if urllib.request.proxy_bypass_environment(  # pyright: ignore[reportAttributeAccessIssue]
            netloc, proxies):
        return None
    return parse_proxy(raw, f"{parts.scheme.upper()}_PROXY")


def parse_proxy(raw: str, source: str = "the proxy setting") -> Proxy:
    p = urlsplit(raw if "://" in raw else f"http://{raw}")
    if p.scheme != "http" or not p.hostname:
        raise ValueError(f"{source}: only an http:// proxy is supported, got "
                         f"{p.scheme}://{p.hostname or ''}")
    try:
        port = p.port or 80
    except ValueError:
        raise ValueError(f"{source}: the proxy's port is not a number") from None
    auth = None
    if p.username is not None:
        pair = f"{unquote(p.username)}:{unquote(p.password or '')}".encode()
        auth = "Basic " + base64.b64encode(pair).decode("ascii")
    host = p.hostname if ":" not in p.hostname else f"[{p.hostname}]"
    return Proxy(p.hostname, port, f"http://{host}:{port}", auth)


@dataclass(frozen=True)
class _Route:
    """Where one URL's requests go: the origin, the request target, the proxy if any."""

    url: str
    tls: bool
    host: str
    port: int
    target: str  # origin form (/path?q), or absolute form for an http URL through a proxy
    host_header: str
    proxy: Proxy | None

    @property
    def key(self) -> tuple[Any, ...]:
        """Connections are shared by routes with the same key."""
        if self.proxy is not None and not self.tls:
            return (False, self.proxy.host, self.proxy.port, None)  # one pool per proxy
        return (self.tls, self.host, self.port, self.proxy)


def _route(url: str) -> _Route:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    tls = parts.scheme == "https"
    default = 443 if tls else 80
    try:
        port = parts.port or default
    except ValueError:
        raise ValueError(f"not an http(s) URL (bad port): {url!r}") from None
    host = parts.hostname
    host_header = host if ":" not in host else f"[{host}]"
    if port != default:
        host_header = f"{host_header}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    proxy = proxy_for(url)
    if proxy is not None and not tls:
        target = f"http://{host_header}{target}"
    return _Route(url, tls, host, port, target, host_header, proxy)


def _keeps_auth(first: _Route, hop: _Route) -> bool:
    """Whether a redirect hop may carry the first request's Authorization: the same host and
    port, or the same host moving from http:80 to https:443; never a downgrade to http."""
    if first.host != hop.host or (first.tls and not hop.tls):
        return False
    if first.tls == hop.tls:
        return first.port == hop.port
    return first.port == 80 and hop.port == 443


def redirect_advice(resp: HttpResponse, asked: str, suffix: str = "") -> str:
    """The error text for a 3xx reply that was not followed: the status, the Location, and
    the ``--base-url`` to use (the Location less ``suffix``, e.g. ``/chat/completions``)."""
    where = resp.url or asked
    location = resp.headers.get("location")
    if not location:
        return f"HTTP {resp.status} redirect from {where} without a Location header"
    target = urljoin(where, location)
    if len(resp.redirects) >= MAX_REDIRECTS and resp.status in REDIRECTS:
        head = (f"more than {MAX_REDIRECTS} redirects from {asked} (the last: HTTP {resp.status} "
                f"to {target})")
    else:
        head = f"HTTP {resp.status} redirect from {where} to {target}"
        if resp.status not in _SAME_METHOD:
            head += (" (not followed: a POST is not re-sent across a 301/302/303, which "
                     "clients turn into a GET)")
    base = target[:-len(suffix)] if suffix and target.endswith(suffix) else target
    return f"{head}; use --base-url {base.rstrip('/')}"


class _Tunnel(asyncio.Protocol):
    """A connection to a proxy until its reply to CONNECT has come (then TLS takes over)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._buf = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._buf += data
        end = self._buf.find(b"\r\n\r\n")
        if self.reply.done():
            return
        if end >= 0:
            assert self.transport is not None
            self.transport.pause_reading()
            self.reply.set_result(bytes(self._buf[:end]))
        elif len(self._buf) > 65536:
            self.reply.set_exception(HttpError("the proxy's reply to CONNECT has no end"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.reply.done():
            self.reply.set_exception(HttpError("the proxy closed the connection during CONNECT"))


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
        stream = cast(asyncio.Transport, transport)  # a TCP connection's: a stream transport
        self.transport = stream
        stream.set_write_buffer_limits(high=_HIGH_WATER)

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


class _Pool:
    """Kept-alive connections to one origin (or one proxy), no upper bound: the caller's
    semaphore bounds how many requests are in flight."""

    def __init__(self, route: _Route) -> None:
        self.route = route
        self.idle: list[_Connection] = []
        self.all: set[_Connection] = set()
        self.opened = 0

    async def send(self, head: bytes, pieces: list[bytes | memoryview],
                   size: int) -> HttpResponse:
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                try:
                    return await self._exchange(conn, head, pieces, size, reused=True)
                except _Stale:
                    break
            self._discard(conn)
        return await self._exchange(await self._connect(), head, pieces, size, reused=False)

    async def _connect(self) -> _Connection:
        r = self.route
        loop = asyncio.get_running_loop()
        proxy = r.proxy
        host, port = (proxy.host, proxy.port) if proxy else (r.host, r.port)
        via = f" through the proxy {proxy.url}" if proxy else ""
        try:
            if proxy is None:
                kwargs: dict[str, Any] = {}
                if r.tls:
                    kwargs.update(ssl=_tls(), server_hostname=r.host)
                _, conn = await loop.create_connection(_Connection, host, port, **kwargs)
            elif not r.tls:
                _, conn = await loop.create_connection(_Connection, host, port)
            else:
                conn = await self._tunnel(loop, proxy)
        except TimeoutError:
            raise
        except _ssl_mod.SSLCertVerificationError as exc:
            raise TlsVerifyError(f"TLS certificate of {r.host}:{r.port} did not verify{via}: "
                                 f"{exc.verify_message or exc}", f"{r.host}:{r.port}") from exc
        except HttpError:
            raise
        except (OSError, _ssl_mod.SSLError) as exc:
            what = f"the proxy {proxy.url}" if proxy else f"{host}:{port}"
            raise ConnectError(f"cannot connect to {what}: {type(exc).__name__}: {exc}",
                               f"{host}:{port}") from exc
        self.opened += 1
        self.all.add(conn)
        return conn

    async def _tunnel(self, loop: asyncio.AbstractEventLoop, proxy: Proxy) -> _Connection:
        r = self.route
        transport, tunnel = await loop.create_connection(_Tunnel, proxy.host, proxy.port)
        try:
            host = r.host if ":" not in r.host else f"[{r.host}]"
            lines = [f"CONNECT {host}:{r.port} HTTP/1.1", f"Host: {host}:{r.port}"]
            if proxy.authorization:
                lines.append(f"Proxy-Authorization: {proxy.authorization}")
            transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            head = await tunnel.reply
            status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or not parts[1].startswith("2"):
                raise ConnectError(f"the proxy {proxy.url} refused to open a tunnel to "
                                   f"{r.host}:{r.port}: {status_line or 'no reply'}",
                                   f"{proxy.host}:{proxy.port}")
            conn = _Connection()
            tls_transport = await loop.start_tls(transport, conn, _tls(),
                                                 server_hostname=r.host)
            if tls_transport is None:
                raise HttpError(f"TLS through the proxy {proxy.url} did not start")
            conn.connection_made(tls_transport)
            return conn
        except BaseException:
            transport.close()
            raise

    def _discard(self, conn: _Connection) -> None:
        self.all.discard(conn)
        conn.close()

    async def _exchange(self, conn: _Connection, head: bytes,
                        pieces: list[bytes | memoryview], size: int,
                        reused: bool) -> HttpResponse:
        try:
            resp = await conn.exchange(head, pieces, size, reused)
        except BaseException:
            self._discard(conn)  # mid-exchange (or cancelled): its state is unknown
            raise
        if conn.reusable:
            self.idle.append(conn)
        else:  # the server asked to close, or the body ran until it closed
            self._discard(conn)
        return resp

    def close(self) -> None:
        conns, self.all, self.idle = list(self.all), set(), []
        for conn in conns:
            conn.close()


class HttpClient:
    """POSTs to one URL (and GETs near it) over pools of kept-alive connections.

    ``proxy`` is the proxy this URL goes through (None: direct). Redirects follow the rules
    in this module's docstring."""

    def __init__(self, url: str, headers: dict[str, str], timeout_s: float) -> None:
        for name, value in headers.items():
            if any(c in f"{name}{value}" for c in "\r\n\0"):
                raise ValueError(f"header {name!r} holds a line break or NUL")
        self._route = _route(url)
        self.url = url
        self.proxy = self._route.proxy
        self.tls, self.host, self.port = self._route.tls, self._route.host, self._route.port
        self._headers = dict(headers)
        self._pools: dict[tuple[Any, ...], _Pool] = {}
        self._main = self._pool(self._route)
        self._head = self._head_for("POST", self._route, with_auth=True)
        self.timeout_s = timeout_s

    @property
    def connections_opened(self) -> int:
        return sum(p.opened for p in self._pools.values())

    def _pool(self, route: _Route) -> _Pool:
        pool = self._pools.get(route.key)
        if pool is None:
            pool = self._pools[route.key] = _Pool(route)
        return pool

    def _head_for(self, method: str, route: _Route, with_auth: bool) -> bytes:
        """The request head up to the Content-Length value."""
        lines = [f"{method} {route.target} HTTP/1.1", f"Host: {route.host_header}"]
        for name, value in self._headers.items():
            if with_auth or name.lower() != "authorization":
                lines.append(f"{name}: {value}")
        if route.proxy is not None and not route.tls and route.proxy.authorization:
            lines.append(f"Proxy-Authorization: {route.proxy.authorization}")
        return ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")

    async def post(self, pieces: list[bytes | memoryview],
                   timeout_s: float | None = None) -> HttpResponse:
        """Send ``pieces`` (one body, in order) and read the whole reply, within the
        timeout (connecting and redirects included; ``timeout_s`` overrides the client's
        for this call)."""
        size = sum(map(len, pieces))
        async with asyncio.timeout(timeout_s or self.timeout_s):
            resp = await self._main.send(self._head + b"%d\r\n\r\n" % size, pieces, size)
            if resp.status in REDIRECTS:
                resp = await self._follow("POST", resp, pieces, size)
            return resp

    async def get(self, url: str, timeout_s: float | None = None) -> HttpResponse:
        """GET ``url`` (the client's headers; Authorization only where the client's own URL
        may have it); every redirect kind is followed."""
        route = _route(url)
        async with asyncio.timeout(timeout_s or self.timeout_s):
            head = self._head_for("GET", route, _keeps_auth(self._route, route)) + b"0\r\n\r\n"
            resp = await self._pool(route).send(head, [], 0)
            if resp.status in REDIRECTS:
                resp = await self._follow("GET", resp, [], 0, route)
            return resp

    async def _follow(self, method: str, resp: HttpResponse, pieces: list[bytes | memoryview],
                      size: int, start: _Route | None = None) -> HttpResponse:
        route = start or self._route
        auth = _keeps_auth(self._route, route)
        hops: list[tuple[int, str]] = []
        while resp.status in REDIRECTS and len(hops) < MAX_REDIRECTS:
            location = resp.headers.get("location")
            if not location or (method != "GET" and resp.status not in _SAME_METHOD):
                break
            target = urljoin(route.url, location)
            try:
                hop = _route(target)
            except ValueError:
                break
            hops.append((resp.status, target))
            auth = auth and _keeps_auth(self._route, hop)
            head = self._head_for(method, hop, auth) + b"%d\r\n\r\n" % size
            resp = await self._pool(hop).send(head, pieces, size)
            route = hop
        if not hops:
            return resp
        return replace(resp, url=route.url, redirects=tuple(hops))

    async def aclose(self) -> None:
        for pool in self._pools.values():
            pool.close()
        await asyncio.sleep(0)  # let the transports run their close callbacks
