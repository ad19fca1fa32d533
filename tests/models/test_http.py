"""The HTTP/1.1 transport (``memgauge.models._http``) against a raw asyncio TCP server.

Each test starts its own server on 127.0.0.1 inside its event loop, so it controls the exact
bytes of every reply. Covered: the request as it goes on the wire (request line with query,
Host with port, custom headers, Content-Length, a body in pieces on both the joined and the
piece-wise write paths); keep-alive reuse, sequential and concurrent; reply framings
(Content-Length, chunked across writes, read-until-close, ``Connection: close``, an interim
``100 Continue``, lower-cased headers); replacing a stale kept-alive connection; failures
(refused, closed mid-reply, garbage, protocol switch, timeout) and recovery after them;
constructor validation; ``aclose``; and the OpenAI-compatible model client on top of it
(a 503 retry, a refused connection as ``ModelError``).
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Self

import pytest

from memgauge.models import (
    GenerateConfig,
    Message,
    ModelError,
    ModelSettings,
    TextPart,
    _http,
    create_model,
)
from memgauge.models._http import HttpClient, HttpError

PATH = "/v1/chat/completions"


# -- a raw HTTP/1.1 server whose replies are scripted byte by byte ---------------------------


@dataclass
class Request:
    line: str
    headers: dict[str, str]  # lower-cased names
    head_lines: list[str]  # the header lines as sent, in order
    body: bytes


@dataclass
class ServerConn:
    """One accepted connection, handed to the test's handler coroutine."""

    index: int
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    requests: list[Request] = field(default_factory=list)
    saw_eof: asyncio.Event = field(default_factory=asyncio.Event)

    async def read_request(self) -> Request | None:
        """The next request on this connection, or None when the client closed it cleanly."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise
            self.saw_eof.set()
            return None
        line, *head_lines = head[:-4].decode("latin-1").split("\r\n")
        headers = {}
        for h in head_lines:
            name, _, value = h.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        req = Request(line, headers, head_lines, body)
        self.requests.append(req)
        return req

    async def wait_for_eof(self) -> bytes:
        """Read until the client closes; returns whatever (unexpected) bytes came first."""
        rest = await self.reader.read()
        self.saw_eof.set()
        return rest

    async def send(self, *parts: bytes, pause_s: float = 0.0) -> None:
        """Write ``parts`` as separate TCP writes, optionally pausing between them."""
        for i, part in enumerate(parts):
            if i and pause_s:
                await asyncio.sleep(pause_s)
            self.writer.write(part)
            await self.writer.drain()

    def close(self) -> None:
        self.writer.close()


Handler = Callable[[ServerConn], Awaitable[None]]


class RawServer:
    """``async with RawServer(handler) as srv``: runs ``handler(conn)`` per connection."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections: list[ServerConn] = []
        self.errors: list[BaseException] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"

    @property
    def requests(self) -> list[Request]:
        return [r for c in self.connections for r in c.requests]

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _on_connection(self, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
        conn = ServerConn(len(self.connections), reader, writer)
        self.connections.append(conn)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.append(task)
        try:
            await self.handler(conn)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away mid-script: some tests cause exactly that
        except asyncio.CancelledError:
            pass  # torn down by __aexit__ (ending normally keeps asyncio from logging it)
        except AssertionError as exc:  # a failed check in a handler must fail the test
            self.errors.append(exc)
        finally:
            writer.close()

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for conn in self.connections:
            conn.writer.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.errors and exc[0] is None:
            raise self.errors[0]


def reply(body: bytes = b"", status: int = 200, reason: str = "OK",
          headers: list[tuple[str, str]] | None = None) -> bytes:
    """A complete HTTP/1.1 reply framed by Content-Length."""
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers or []]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def serve(respond: Callable[[Request], bytes]) -> Handler:
    """A well-behaved keep-alive handler: answers every request with ``respond(request)``."""

    async def handler(conn: ServerConn) -> None:
        while (req := await conn.read_request()) is not None:
            await conn.send(respond(req))

    return handler


def echo(req: Request) -> bytes:
    return reply(b"echo:" + req.body)


def free_port() -> int:
    """A port with nothing listening on it (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the request on the wire -----------------------------------------------------------------


def _big_pieces() -> list[bytes]:
    rng = random.Random(7)
    return [b'{"messages": [', rng.randbytes(300 * 1024), b"\r\n\r\n0\r\n", rng.randbytes(99),
            b"]}"]


def _huge_pieces() -> list[bytes]:
    # more than loopback socket buffers take at once: the writer must wait for drains
    rng = random.Random(8)
    return [b'{"images": [', *(rng.randbytes(700 * 1024) for _ in range(12)), b"]}"]


@pytest.mark.parametrize("pieces,high_water", [
    pytest.param([b'{"a": ', b"", b'"\xe2\x82\xac\r\n"', b"}"], None, id="small-joined"),
    pytest.param(_big_pieces(), None, id="large-piece-by-piece"),
    pytest.param(_huge_pieces(), 4096, id="huge-with-flow-control"),
])
def test_body_pieces_arrive_byte_identical_with_the_request_head(
        pieces: list[bytes], high_water: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if high_water is not None:  # pause after every piece: each waits for a drain
        monkeypatch.setattr(_http, "_HIGH_WATER", high_water)
    size = sum(map(len, pieces))
    assert (size >= _http._JOIN_BELOW) == (size > 1000)  # the case takes the path it names

    async def go() -> None:
        async with RawServer(serve(lambda req: reply(b"ok"))) as srv:
            client = HttpClient(srv.url, {"Authorization": "Bearer tok",
                                          "X-Trace-Id": "abc-123"}, 5)
            resp = await client.post(pieces)
            await client.aclose()
        assert (resp.status, resp.body) == (200, b"ok")
        [req] = srv.requests
        assert req.line == f"POST {PATH} HTTP/1.1"
        assert req.body == b"".join(pieces)
        assert req.headers["content-length"] == str(size)
        assert req.headers["host"] == f"127.0.0.1:{srv.port}"
        assert "Authorization: Bearer tok" in req.head_lines
        assert "X-Trace-Id: abc-123" in req.head_lines
        assert len(req.head_lines) == 4  # Host, the two custom headers, Content-Length

    asyncio.run(go())


def test_query_string_is_kept_in_the_request_target() -> None:
    async def go() -> None:
        async with RawServer(serve(lambda req: reply(b"ok"))) as srv:
            client = HttpClient(f"{srv.url}?api-version=2024-06-01&x=1#frag", {}, 5)
            await client.post([b"{}"])
            bare = HttpClient(f"http://127.0.0.1:{srv.port}", {}, 5)
            await bare.post([b"{}"])
            await client.aclose()
            await bare.aclose()
        assert [r.line for r in srv.requests] == [
            f"POST {PATH}?api-version=2024-06-01&x=1 HTTP/1.1", "POST / HTTP/1.1"]

    asyncio.run(go())


# -- keep-alive ------------------------------------------------------------------------------


def test_sequential_posts_reuse_one_connection() -> None:
    async def go() -> None:
        async with RawServer(serve(echo)) as srv:
            client = HttpClient(srv.url, {}, 5)
            bodies = [(await client.post([b"req-%d" % i])).body for i in range(3)]
            assert client.connections_opened == 1
            await client.aclose()
        assert bodies == [b"echo:req-0", b"echo:req-1", b"echo:req-2"]
        assert len(srv.connections) == 1
        assert len(srv.connections[0].requests) == 3

    asyncio.run(go())


def test_concurrent_posts_open_several_connections_and_get_their_own_replies() -> None:
    async def slow_echo(conn: ServerConn) -> None:
        while (req := await conn.read_request()) is not None:
            n = int(req.body.rsplit(b"-", 1)[1])
            await asyncio.sleep(0.01 * (5 - n % 5))  # later requests are answered first
            await conn.send(echo(req))

    async def go() -> None:
        async with RawServer(slow_echo) as srv:
            client = HttpClient(srv.url, {}, 5)
            first = await asyncio.gather(*(client.post([b"req-%d" % i]) for i in range(5)))
            assert client.connections_opened == 5 and len(srv.connections) == 5
            # a second wave is served by the five pooled connections
            second = await asyncio.gather(*(client.post([b"req-%d" % i])
                                            for i in range(5, 10)))
            assert client.connections_opened == 5 and len(srv.connections) == 5
            await client.aclose()
        assert [r.body for r in first + second] == [b"echo:req-%d" % i for i in range(10)]
        assert all(len(c.requests) == 2 for c in srv.connections)

    asyncio.run(go())


# -- reply framings --------------------------------------------------------------------------


def test_content_length_reply_with_lower_cased_headers() -> None:
    raw = (b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
           b"Retry-After: 7\r\nX-Repeated: first\r\nX-REPEATED: last\r\n"
           b"Content-Length: 13\r\n\r\n{\"error\": {}}")

    async def go() -> None:
        async with RawServer(serve(lambda req: raw)) as srv:
            client = HttpClient(srv.url, {}, 5)
            resp = await client.post([b"{}"])
            await client.aclose()
        assert resp.status == 429
        assert resp.body == b'{"error": {}}'
        assert resp.headers == {"content-type": "application/json", "retry-after": "7",
                                "x-repeated": "last", "content-length": "13"}

    asyncio.run(go())


def test_chunked_reply_split_across_writes_and_connection_is_reused() -> None:
    async def chunked(conn: ServerConn) -> None:
        while (req := await conn.read_request()) is not None:
            await conn.send(
                b"HTTP/1.1 200 OK\r\nTransfer-Enc", b"oding: chunked\r\nX-Kind: chu",
                b"nked\r\n\r\n5\r\nhello\r\n",
                b"9\r", b"\n, wor", b"", b"ld, \r", b"\n",
                b"%x\r\n%s\r\n" % (len(req.body), req.body),
                b"0\r\n\r\n", pause_s=0.005)

    async def go() -> None:
        async with RawServer(chunked) as srv:
            client = HttpClient(srv.url, {}, 5)
            first = await client.post([b"one"])
            second = await client.post([b"two"])
            assert client.connections_opened == 1
            await client.aclose()
        assert first.body == b"hello, world, one"
        assert second.body == b"hello, world, two"
        assert first.headers["x-kind"] == "chunked"
        assert len(srv.connections) == 1

    asyncio.run(go())


def test_reply_without_framing_runs_until_close_and_next_post_reconnects() -> None:
    async def until_close(conn: ServerConn) -> None:
        req = await conn.read_request()
        assert req is not None
        await conn.send(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
                        b"part one, ", b"part two, ", req.body, pause_s=0.01)
        conn.close()

    async def go() -> None:
        async with RawServer(until_close) as srv:
            client = HttpClient(srv.url, {}, 5)
            first = await client.post([b"a"])
            second = await client.post([b"b"])
            assert client.connections_opened == 2
            await client.aclose()
        assert (first.status, first.body) == (200, b"part one, part two, a")
        assert second.body == b"part one, part two, b"
        assert len(srv.connections) == 2

    asyncio.run(go())


@pytest.mark.parametrize("same_write", [False, True], ids=["separate-writes", "one-write"])
def test_interim_100_continue_is_skipped(same_write: bool) -> None:
    interim = b"HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n"

    async def continue_then_reply(conn: ServerConn) -> None:
        while (req := await conn.read_request()) is not None:
            final = reply(b"done:" + req.body, headers=[("X-Final", "yes")])
            parts = [interim + final] if same_write else [interim, final]
            await conn.send(*parts, pause_s=0.01)

    async def go() -> None:
        async with RawServer(continue_then_reply) as srv:
            client = HttpClient(srv.url, {}, 5)
            first = await client.post([b"x"])
            second = await client.post([b"y"])
            assert client.connections_opened == 1
            await client.aclose()
        assert (first.status, first.body, second.body) == (200, b"done:x", b"done:y")
        assert first.headers["x-final"] == "yes" and "x-interim" not in first.headers

    asyncio.run(go())


def test_connection_close_on_content_length_reply_is_honoured() -> None:
    async def says_close(conn: ServerConn) -> None:
        req = await conn.read_request()
        assert req is not None
        await conn.send(reply(b"bye:" + req.body, headers=[("Connection", "close")]))
        # keep the socket open: the client must close it, not reuse it
        assert await conn.wait_for_eof() == b""

    async def go() -> None:
        async with RawServer(says_close) as srv:
            client = HttpClient(srv.url, {}, 5)
            first = await client.post([b"1"])
            second = await client.post([b"2"])
            assert client.connections_opened == 2
            await asyncio.wait_for(srv.connections[0].saw_eof.wait(), 1)
            await client.aclose()
        assert (first.body, second.body) == (b"bye:1", b"bye:2")
        assert [len(c.requests) for c in srv.connections] == [1, 1]

    asyncio.run(go())


# -- stale kept-alive connections ------------------------------------------------------------


def test_idle_connection_closed_by_server_is_replaced() -> None:
    async def one_then_close(conn: ServerConn) -> None:
        req = await conn.read_request()
        assert req is not None
        await conn.send(echo(req))  # says nothing about closing
        conn.close()

    async def go() -> None:
        async with RawServer(one_then_close) as srv:
            client = HttpClient(srv.url, {}, 5)
            first = await client.post([b"1"])
            await asyncio.sleep(0.05)  # the close reaches the idle connection
            second = await client.post([b"2"])
            third = await client.post([b"3"])  # immediately: the close may not be seen yet
            assert client.connections_opened == 3
            await client.aclose()
        assert [r.body for r in (first, second, third)] == [b"echo:1", b"echo:2", b"echo:3"]

    asyncio.run(go())


def test_reused_connection_closed_before_any_reply_byte_is_retried_once() -> None:
    async def second_request_unanswered(conn: ServerConn) -> None:
        req = await conn.read_request()
        assert req is not None
        await conn.send(echo(req))
        if conn.index == 0:
            assert await conn.read_request() is not None  # the request arrives...
            conn.close()  # ...and the server closes without a byte of reply
            return
        while (req := await conn.read_request()) is not None:
            await conn.send(echo(req))

    async def go() -> None:
        async with RawServer(second_request_unanswered) as srv:
            client = HttpClient(srv.url, {}, 5)
            first = await client.post([b"1"])
            second = await client.post([b"2"])
            assert client.connections_opened == 2
            await client.aclose()
        assert (first.body, second.body) == (b"echo:1", b"echo:2")
        assert [[r.body for r in c.requests] for c in srv.connections] == [[b"1", b"2"], [b"2"]]

    asyncio.run(go())


def test_reused_connection_closed_mid_reply_is_an_error_not_a_retry() -> None:
    async def second_reply_truncated(conn: ServerConn) -> None:
        req = await conn.read_request()
        assert req is not None
        await conn.send(echo(req))
        assert await conn.read_request() is not None
        await conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        conn.close()

    async def go() -> None:
        async with RawServer(second_reply_truncated) as srv:
            client = HttpClient(srv.url, {}, 5)
            await client.post([b"1"])
            with pytest.raises(HttpError, match="before the reply was complete"):
                await client.post([b"2"])
            assert client.connections_opened == 1  # a reply had begun: not replayed
            await client.aclose()

    asyncio.run(go())


# -- failures --------------------------------------------------------------------------------


def test_connection_refused_names_host_and_port() -> None:
    port = free_port()

    async def go() -> None:
        client = HttpClient(f"http://127.0.0.1:{port}{PATH}", {}, 5)
        with pytest.raises(HttpError, match=f"127.0.0.1:{port}"):
            await client.post([b"{}"])
        assert client.connections_opened == 0
        await client.aclose()

    asyncio.run(go())


@pytest.mark.parametrize("head", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789",
    # Transfer-coding names are case-insensitive (RFC 9112 7); "Chunked" frames the body as
    # surely as "chunked", so a close after the first chunk must not pass as a whole body.
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n",
], ids=["content-length", "capitalised-chunked"])
def test_close_mid_reply_on_fresh_connection_is_an_error(head: bytes) -> None:
    async def truncated(conn: ServerConn) -> None:
        assert await conn.read_request() is not None
        await conn.send(head)
        conn.close()

    async def go() -> None:
        async with RawServer(truncated) as srv:
            client = HttpClient(srv.url, {}, 5)
            try:
                with pytest.raises(HttpError):  # not passed off as a whole reply
                    await client.post([b"{}"])
            finally:
                await client.aclose()

    asyncio.run(go())


@pytest.mark.parametrize("garbage,match", [
    (b"NOT HTTP\r\n\r\n", "malformed HTTP reply"),
    (b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
     "switched protocols"),
], ids=["garbage", "upgrade"])
def test_unusable_reply_is_an_error_and_the_client_recovers(garbage: bytes, match: str) -> None:
    async def garbage_first(conn: ServerConn) -> None:
        while (req := await conn.read_request()) is not None:
            await conn.send(garbage if conn.index == 0 else echo(req))

    async def go() -> None:
        async with RawServer(garbage_first) as srv:
            client = HttpClient(srv.url, {}, 5)
            with pytest.raises(HttpError, match=match):
                await client.post([b"1"])
            assert (await client.post([b"2"])).body == b"echo:2"
            assert client.connections_opened == 2
            await client.aclose()

    asyncio.run(go())


def test_timeout_when_server_never_answers_then_client_recovers() -> None:
    async def first_connection_hangs(conn: ServerConn) -> None:
        if conn.index == 0:
            assert await conn.read_request() is not None
            assert await conn.wait_for_eof() == b""  # the client drops it on timeout
            return
        while (req := await conn.read_request()) is not None:
            await conn.send(echo(req))

    async def go() -> None:
        async with RawServer(first_connection_hangs) as srv:
            client = HttpClient(srv.url, {}, 0.3)
            start = time.monotonic()
            with pytest.raises(TimeoutError):
                await client.post([b"1"])
            elapsed = time.monotonic() - start
            assert 0.25 <= elapsed < 1.0
            await asyncio.wait_for(srv.connections[0].saw_eof.wait(), 1)
            assert (await client.post([b"2"])).body == b"echo:2"
            assert client.connections_opened == 2
            await client.aclose()

    asyncio.run(go())


# -- constructor and aclose ------------------------------------------------------------------


@pytest.mark.parametrize("url,headers", [
    ("ftp://x/y", {}),
    ("http:///no-host", {}),
    ("http://h/p", {"X-Evil": "a\r\nInjected: 1"}),
    ("http://h/p", {"X-Evil\n": "a"}),
    ("http://h/p", {"X-Nul": "a\0b"}),
])
def test_constructor_rejects_bad_urls_and_header_injection(url: str,
                                                           headers: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        HttpClient(url, headers, 1)


def test_aclose_closes_pooled_connections() -> None:
    async def go() -> None:
        async with RawServer(serve(echo)) as srv:
            client = HttpClient(srv.url, {}, 5)
            await asyncio.gather(client.post([b"1"]), client.post([b"2"]))
            assert len(srv.connections) == 2
            assert not any(c.saw_eof.is_set() for c in srv.connections)
            await client.aclose()
            await asyncio.wait_for(
                asyncio.gather(*(c.saw_eof.wait() for c in srv.connections)), 1)

    asyncio.run(go())


# -- through the OpenAI-compatible model client ----------------------------------------------


COMPLETION = json.dumps({
    "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


def test_model_client_retries_503_then_succeeds() -> None:
    async def busy_then_ok(conn: ServerConn) -> None:
        while (req := await conn.read_request()) is not None:
            assert json.loads(req.body)["model"] == "m"
            if len(srv.requests) == 1:
                await conn.send(reply(b'{"error": {"message": "busy"}}', 503,
                                      "Service Unavailable", [("Retry-After", "0")]))
            else:
                await conn.send(reply(COMPLETION, headers=[("Content-Type",
                                                            "application/json")]))

    srv = RawServer(busy_then_ok)

    async def go() -> None:
        async with srv:
            m = create_model("openai:m", ModelSettings(base_url=f"http://127.0.0.1:{srv.port}/v1",
                                                       retry_base_s=0.01, max_attempts=3))
            out = await m.generate([Message("user", [TextPart("q")])], GenerateConfig())
            assert out.text == "hi"
            assert out.attempts == 2
            assert m.retries == 1
            await m.aclose()
        assert len(srv.requests) == 2
        assert all(r.line == f"POST {PATH} HTTP/1.1" for r in srv.requests)

    asyncio.run(go())


def test_model_client_refused_connection_is_a_connection_model_error() -> None:
    port = free_port()

    async def go() -> None:
        m = create_model("openai:m", ModelSettings(base_url=f"http://127.0.0.1:{port}/v1",
                                                   retry_base_s=0.01, max_attempts=3))
        with pytest.raises(ModelError) as info:
            await m.generate([Message("user", [TextPart("q")])], GenerateConfig())
        err = info.value
        assert (err.kind, err.attempts, err.retryable) == ("connection", 3, True)
        assert f"127.0.0.1:{port}" in err.message
        assert m.retries == 2
        await m.aclose()

    asyncio.run(go())
