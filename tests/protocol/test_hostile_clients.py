"""``serve-memory`` facing clients it should not trust: image URLs that would make its model
read this machine's files or a cloud metadata address, images that are not images."""

from __future__ import annotations

import base64
import contextlib
import http.client
import io
import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from helpers.memory_service import prompt_digest, served
from helpers.stub_server import StubServer
from PIL import Image


def call(url: str, route: str, obj: Any = None, headers: dict[str, str] | None = None,
         ) -> tuple[int, Any]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        body = None if obj is None else json.dumps(obj).encode()
        conn.request("GET" if obj is None else "POST", parts.path + route, body=body,
                     headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def png_data_url() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), "red").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def image(url: str | None = None, data_url: str | None = None) -> dict[str, Any]:
    return {"image_index": 0, "sha256": "0" * 64, "mime": "image/png", "data_url": data_url,
            "url": url, "caption": None}


def ingest(eid: str, images: list[dict[str, Any]]) -> dict[str, Any]:
    return {"episode_id": eid, "session": {"session_id": "s1", "date": None, "turns": [
        {"turn_id": "s1:1", "role": "user", "text": "look", "images": images}]}}


def question(images: list[dict[str, Any]]) -> dict[str, Any]:
    return {"question_id": "q1", "text": "What is in the picture?", "date": None,
            "images": images, "options": None}


HOSTILE = ["file:///etc/passwd", "../../etc/passwd", "/etc/passwd",
           "http://169.254.169.254/latest/meta-data/", "https://169.254.169.254.nip.io/x.png"]


@pytest.fixture
def model():
    with StubServer(answer=prompt_digest) as stub:
        yield stub


@pytest.mark.parametrize("image_mode", ["inline", "url"])
def test_image_urls_are_refused_without_the_opt_in(model, image_mode) -> None:
    with served("full-context", model="openai:stub", base_url=model.base_url,
                image_mode=image_mode) as url:
        assert call(url, "/reset", {"episode_id": "e"})[0] == 200
        for bad in HOSTILE:
            status, body = call(url, "/ingest", ingest("e", [image(url=bad)]))
            assert status == 400, (bad, body)
            assert "session.turns[0].images[0].url" in body["error"]["message"]
            status, body = call(url, "/answer", {"episode_id": "e",
                                                 "question": question([image(url=bad)])})
            assert status == 400 and "question.images[0].url" in body["error"]["message"]
    assert not any(bad in json.dumps(r) for r in model.requests for bad in HOSTILE)


def test_with_the_opt_in_only_https_urls_pass(model) -> None:
    with served("full-context", model="openai:stub", base_url=model.base_url,
                image_mode="url", service_options={"allow_image_urls": True}) as url:
        assert call(url, "/reset", {"episode_id": "e"})[0] == 200
        for bad in HOSTILE[:4]:
            status, body = call(url, "/ingest", ingest("e", [image(url=bad)]))
            assert status == 400 and "images[0].url" in body["error"]["message"], bad
        ok = "https://example.org/cat.png"
        assert call(url, "/ingest", ingest("e", [image(url=ok)]))[0] == 200
        status, _ = call(url, "/answer", {"episode_id": "e", "question": question([])})
        assert status == 200
    sent = json.dumps(model.requests)
    assert ok in sent and not any(bad in sent for bad in HOSTILE[:4])


def test_data_images_are_checked_and_a_url_beside_them_is_not_forwarded(model) -> None:
    with served("full-context", model="openai:stub", base_url=model.base_url,
                image_mode="url") as url:
        assert call(url, "/reset", {"episode_id": "e"})[0] == 200
        fake = "data:image/png;base64," + base64.b64encode(b"not an image").decode()
        status, body = call(url, "/ingest", ingest("e", [image(data_url=fake)]))
        assert status == 400 and "images[0].data_url" in body["error"]["message"]
        status, body = call(url, "/ingest", ingest("e", [image(url=fake)]))
        assert status == 400 and "images[0].url" in body["error"]["message"]
        real = png_data_url()
        both = image(url="file:///etc/passwd", data_url=real)
        assert call(url, "/ingest", ingest("e", [both]))[0] == 200
        status, _ = call(url, "/answer", {"episode_id": "e", "question": question([])})
        assert status == 200
    sent = json.dumps(model.requests)
    assert "file:///etc/passwd" not in sent and "data:image/png;base64," in sent


# -- bearer token ---------------------------------------------------------------------------

TOKEN = "s3cret-token-for-tests"


def test_with_a_token_every_route_wants_it_and_a_run_brings_it(synth, tmp_path, monkeypatch,
                                                               model) -> None:
    from memgauge.errors import ConfigError
    from memgauge.runfolder import read_records
    from memgauge.runner import RunConfig, Runner

    def config(out: str, **options: str) -> RunConfig:
        return RunConfig(bench="synth", data=str(synth), tier="4k", system=url, model="none:",
                         out=str(tmp_path / out), cache=False, progress=False,
                         system_options=options)

    monkeypatch.setenv("MEMORY_TOKEN", TOKEN)
    monkeypatch.setenv("WRONG_TOKEN", "not-it")
    with served("full-context", model="openai:stub", base_url=model.base_url,
                context_mode="text", serve_options={"token": TOKEN}) as url:
        for route, obj in (("/info", None), ("/reset", {"episode_id": "e"})):
            for headers in ({}, {"Authorization": "Bearer not-it"},
                            {"Authorization": f"Basic {TOKEN}"}):
                status, body = call(url, route, obj, headers)
                assert status == 401 and body["error"]["kind"] == "unauthorized"
                assert TOKEN not in json.dumps(body)
        assert call(url, "/info", None, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        with pytest.raises(ConfigError, match="token_env=NAME"):
            Runner(config("none")).run_sync()
        with pytest.raises(ConfigError, match="the token was refused"):
            Runner(config("wrong", token_env="WRONG_TOKEN")).run_sync()
        with pytest.raises(ConfigError, match="UNSET_TOKEN is not set"):
            Runner(config("unset", token_env="UNSET_TOKEN")).run_sync()
        Runner(config("right", token_env="MEMORY_TOKEN")).run_sync()
    records = read_records(tmp_path / "right")
    assert records and all(r.status == "ok" for r in records.values())
    written = "".join(p.read_text() for p in (tmp_path / "right").rglob("*") if p.is_file())
    assert TOKEN not in written and "MEMORY_TOKEN" in written  # the variable, not the secret


def test_serve_memory_refuses_an_unset_token_variable_before_listening() -> None:
    from typer.testing import CliRunner

    from memgauge.cli import app

    res = CliRunner().invoke(app, ["serve-memory", "--system", "full-context", "--no-cache",
                                   "--port", "0", "--token-env", "NO_SUCH_TOKEN_VAR"])
    assert res.exit_code == 2 and "NO_SUCH_TOKEN_VAR is not set" in res.output
    assert "Traceback" not in res.output
    for flag in ("--max-body-mib", "--header-timeout", "--max-connections"):
        res = CliRunner().invoke(app, ["serve-memory", "--system", "full-context",
                                       "--no-cache", "--port", "0", flag, "0"])
        assert res.exit_code == 2 and f"{flag} 0: must be more than 0" in res.output


# -- slow, oversized and too many clients ------------------------------------------------------

def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    return sock


def _read_reply(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (or 10 s pass)."""
    got = b""
    with contextlib.suppress(ConnectionResetError, TimeoutError):
        while chunk := sock.recv(65536):
            got += chunk
    return got


def _limited(**limits: Any) -> dict[str, Any]:
    from memgauge.systems._serve import ServeLimits

    return {"limits": ServeLimits(**limits)}


def test_a_body_over_the_limit_is_refused_before_it_is_read() -> None:
    with served("full-context", model="none:", serve_options=_limited(max_body=1 << 20)) as url:
        sock = _connect(url)
        sock.sendall(b"POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 200000000\r\n\r\n" + b"x" * 1000)
        t0 = time.monotonic()
        reply = _read_reply(sock)
        assert time.monotonic() - t0 < 5
        assert reply.startswith(b"HTTP/1.1 413 ") and b"1,048,576 bytes" in reply
        sock.close()
        # chunked (no length declared): refused once it passes the limit, the rest unread
        sock = _connect(url)
        sock.sendall(b"POST /ingest HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (64 << 10, b"y" * (64 << 10))
        sent = 0
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for _ in range(64):  # 4 MiB at most
                sock.sendall(chunk)
                sent += 1
        reply = _read_reply(sock)
        assert reply.startswith(b"HTTP/1.1 413 "), reply[:100]
        sock.close()
        assert call(url, "/info")[0] == 200  # and the service is still there


@pytest.mark.parametrize("half", [b"POST /reset HTTP/1.1\r\nHost: x\r\n",
                                  (b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 100"
                                   b"\r\n\r\n{\"episode_id\"")])
def test_a_half_sent_request_is_dropped_after_its_timeout(half: bytes) -> None:
    opts = _limited(header_timeout_s=0.5, body_timeout_s=0.5)
    with served("full-context", model="none:", serve_options=opts) as url:
        sock = _connect(url)
        sock.sendall(half)
        t0 = time.monotonic()
        assert _read_reply(sock) == b""  # closed, nothing answered
        assert 0.3 < time.monotonic() - t0 < 5
        sock.close()


def test_connections_past_the_cap_get_503_and_half_sent_ones_are_let_go() -> None:
    # timeouts long enough that none passes while the 200 connect, short enough to wait for
    opts = _limited(max_connections=20, header_timeout_s=4, idle_timeout_s=4)
    with served("full-context", model="none:", serve_options=opts) as url:
        held = [_connect(url) for _ in range(200)]  # bounded: 200 at once, as in the report
        for sock in held:
            with contextlib.suppress(OSError):
                sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        replies = [_read_reply(sock) for sock in held]
        over = [r for r in replies if r.startswith(b"HTTP/1.1 503 ")]
        assert len(over) == 180 and all(b"Retry-After: 1" in r for r in over)
        assert replies.count(b"") == 20  # the 20 taken in were closed at their timeout
        for sock in held:
            sock.close()
        assert call(url, "/info")[0] == 200  # their places are free again
