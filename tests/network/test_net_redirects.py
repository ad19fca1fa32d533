"""Redirects in the transport and the model client (docs/design/0016): 307/308 followed with
method and body, 301/302/303 on a POST named (status, Location, ``--base-url``) and not
re-sent, a bounded number of hops, ``Authorization`` never carried to another host, GETs
following every kind, relative Locations."""

from __future__ import annotations

import asyncio
import json

import pytest
from netservers import RouteServer, Seen, completion, json_reply

from memgauge.models import GenerateConfig, Message, ModelError, ModelSettings, TextPart
from memgauge.models._http import MAX_REDIRECTS, HttpClient
from memgauge.models.openai_compat import OpenAICompatModel

HELLO = [Message("user", [TextPart("hello")])]


def _model(base: str, monkeypatch: pytest.MonkeyPatch, key: str | None = None,
           attempts: int = 3) -> OpenAICompatModel:
    if key:
        monkeypatch.setenv("MEMGAUGE_NET_KEY", key)
    return OpenAICompatModel("m", ModelSettings(base_url=base, api_key_env="MEMGAUGE_NET_KEY",
                                                max_attempts=attempts, retry_base_s=0.0))


async def _ask(model: OpenAICompatModel) -> str:
    try:
        return (await model.generate(HELLO, GenerateConfig(max_tokens=8))).text
    finally:
        await model.aclose()


def _moved(status: int, location: str) -> tuple[int, dict[str, str], bytes]:
    return status, {"Location": location}, b""


@pytest.mark.parametrize("status", [307, 308])
def test_307_and_308_are_followed_with_the_same_method_and_body(monkeypatch, status):
    with RouteServer() as new, RouteServer(lambda s: _moved(
            status, f"{new.url}/v2/chat/completions")) as old:
        text = asyncio.run(_ask(_model(f"{old.url}/v1", monkeypatch)))
    assert text == "red"
    assert [(s.method, s.path) for s in old.seen] == [("POST", "/v1/chat/completions")]
    assert [(s.method, s.path) for s in new.seen] == [("POST", "/v2/chat/completions")]
    assert new.seen[0].body == old.seen[0].body and json.loads(new.seen[0].body)["model"] == "m"


@pytest.mark.parametrize("status", [301, 302, 303])
def test_301_302_303_on_a_post_are_not_followed_and_the_error_names_the_fix(monkeypatch,
                                                                              status):
    with RouteServer() as new, RouteServer(lambda s: _moved(
            status, f"{new.url}/api/v1/chat/completions")) as old, \
            pytest.raises(ModelError) as info:
        asyncio.run(_ask(_model(f"{old.url}/v1", monkeypatch)))
    err = info.value
    assert err.kind == "redirect" and not err.retryable and err.attempts == 1
    assert f"HTTP {status}" in err.message
    assert f"to {new.url}/api/v1/chat/completions" in err.message
    assert f"use --base-url {new.url}/api/v1" in err.message
    assert len(old.seen) == 1 and new.seen == []  # not re-sent, not turned into a GET


def test_a_redirect_to_another_host_does_not_carry_the_key(monkeypatch):
    with RouteServer() as other, RouteServer(lambda s: _moved(
            307, f"{other.url}/v1/chat/completions")) as first:
        asyncio.run(_ask(_model(f"{first.url}/v1", monkeypatch, key="sk-secret-key-123")))
    assert first.seen[0].headers["authorization"] == "Bearer sk-secret-key-123"
    assert "authorization" not in other.seen[0].headers  # another port: another origin
    assert json.loads(other.seen[0].body)["messages"]  # the request itself went on


def test_a_redirect_on_the_same_host_keeps_the_key_and_a_relative_location_resolves(
        monkeypatch):
    def handle(seen: Seen):
        if seen.path == "/v1/chat/completions":
            return _moved(308, "/v2/chat/completions")  # relative to the URL that answered
        return json_reply(200, completion("moved"))

    with RouteServer(handle) as srv:
        text = asyncio.run(_ask(_model(f"{srv.url}/v1", monkeypatch, key="sk-secret-key-123")))
    assert text == "moved"
    assert [s.path for s in srv.seen] == ["/v1/chat/completions", "/v2/chat/completions"]
    assert all(s.headers["authorization"] == "Bearer sk-secret-key-123" for s in srv.seen)


def test_the_number_of_hops_is_bounded(monkeypatch):
    with RouteServer(lambda s: _moved(307, s.path)) as loop, \
            pytest.raises(ModelError) as info:  # it redirects to itself, forever
        asyncio.run(_ask(_model(f"{loop.url}/v1", monkeypatch)))
    assert info.value.kind == "redirect" and not info.value.retryable
    assert f"more than {MAX_REDIRECTS} redirects" in info.value.message
    assert len(loop.seen) == MAX_REDIRECTS + 1


def test_a_3xx_without_location_is_an_error_not_an_empty_answer(monkeypatch):
    with RouteServer(lambda s: (302, {}, b"")) as srv, pytest.raises(ModelError) as info:
        asyncio.run(_ask(_model(f"{srv.url}/v1", monkeypatch)))
    assert info.value.kind == "redirect" and "without a Location" in info.value.message


def test_a_get_follows_a_302_and_reports_the_hops():
    async def go(url: str) -> tuple[int, str | None, tuple]:
        client = HttpClient(f"{url}/v1/chat/completions", {}, 5.0)
        try:
            resp = await client.get(f"{url}/v1/models")
            return resp.status, resp.url, resp.redirects
        finally:
            await client.aclose()

    def handle(seen: Seen):
        if seen.path == "/v1/models":
            return _moved(302, "/v2/models")
        return json_reply(200, {"data": []})

    with RouteServer(handle) as srv:
        status, url, hops = asyncio.run(go(srv.url))
    assert status == 200 and url == f"{srv.url}/v2/models"
    assert hops == ((302, f"{srv.url}/v2/models"),)
    assert [s.method for s in srv.seen] == ["GET", "GET"]
