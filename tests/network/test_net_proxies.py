"""Proxies (docs/design/0016): HTTP_PROXY/HTTPS_PROXY/NO_PROXY and the lower-case forms; an
http URL goes to the proxy in absolute form, an https URL through a CONNECT tunnel (TLS end
to end); loopback hosts go direct; proxy credentials go to the proxy only and are never
described; a certificate that does not verify is not retried."""

from __future__ import annotations

import asyncio
import base64

import pytest
from netservers import HOST, LoopbackProxy, RouteServer, self_signed

from memgauge.errors import ConfigError
from memgauge.models import GenerateConfig, Message, ModelError, ModelSettings, TextPart, _http
from memgauge.models._http import proxy_for
from memgauge.models.openai_compat import OpenAICompatModel

HELLO = [Message("user", [TextPart("hello")])]
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
              "no_proxy", "all_proxy", "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def _no_proxy_settings(monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


def _model(base: str, attempts: int = 3) -> OpenAICompatModel:
    return OpenAICompatModel("m", ModelSettings(base_url=base, max_attempts=attempts,
                                                retry_base_s=0.0))


async def _ask(model: OpenAICompatModel) -> str:
    try:
        return (await model.generate(HELLO, GenerateConfig(max_tokens=8))).text
    finally:
        await model.aclose()


def test_an_http_url_goes_to_the_proxy_in_absolute_form_with_its_credentials(monkeypatch):
    with RouteServer() as srv, LoopbackProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://user:p%40ss@127.0.0.1:{proxy.port}")
        model = _model(f"http://{HOST}:{srv.port}/v1")
        described = model.describe()
        assert asyncio.run(_ask(model)) == "red"
    line = f"POST http://{HOST}:{srv.port}/v1/chat/completions HTTP/1.1"
    assert proxy.log.request_lines == [line]
    assert proxy.log.proxy_auth == ["Basic " + base64.b64encode(b"user:p@ss").decode()]
    assert "proxy-authorization" not in srv.seen[0].headers  # for the proxy only
    assert srv.seen[0].path == "/v1/chat/completions"
    assert described["proxy"] == f"http://127.0.0.1:{proxy.port}"  # no credentials
    assert "p%40ss" not in str(described) and "user" not in str(described)


def test_an_https_url_goes_through_a_connect_tunnel_tls_end_to_end(monkeypatch, tmp_path):
    server_tls, cert = self_signed(tmp_path)
    trusting = _http._ssl_mod.create_default_context(cafile=str(cert))
    monkeypatch.setattr(_http, "_tls_context", trusting)
    with RouteServer(tls=server_tls) as srv, LoopbackProxy() as proxy:
        monkeypatch.setenv("https_proxy", proxy.url)  # the lower-case form
        assert asyncio.run(_ask(_model(f"https://{HOST}:{srv.port}/v1"))) == "red"
    assert proxy.log.to_test_host() == [f"CONNECT {HOST}:{srv.port} HTTP/1.1"]
    assert srv.seen[0].path == "/v1/chat/completions"  # the request went inside the tunnel


def test_a_certificate_that_does_not_verify_is_not_retried(monkeypatch, tmp_path):
    server_tls, _ = self_signed(tmp_path)  # the client does not trust it
    with RouteServer(tls=server_tls) as srv, LoopbackProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        with pytest.raises(ModelError) as info:
            asyncio.run(_ask(_model(f"https://{HOST}:{srv.port}/v1", attempts=5)))
    assert info.value.kind == "tls" and not info.value.retryable
    assert info.value.attempts == 1 and "not retried" in info.value.message
    assert len(proxy.log.to_test_host()) == 1  # one tunnel, one handshake, no retry
    assert srv.seen == []


def test_a_proxy_that_refuses_the_tunnel_is_named(monkeypatch):
    with LoopbackProxy(refuse_connect=403) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        with pytest.raises(ModelError) as info:
            asyncio.run(_ask(_model(f"https://{HOST}:443/v1", attempts=1)))
    assert info.value.kind == "connection"
    assert f"the proxy {proxy.url} refused to open a tunnel to {HOST}:443" in info.value.message
    assert "403" in info.value.message


def test_loopback_hosts_and_no_proxy_go_direct(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3129")
    monkeypatch.setenv("NO_PROXY", "internal.example,.corp.example")
    for url in ("http://127.0.0.1:8000/v1", "http://localhost:8000/v1", "http://[::1]:8000/v1",
                "https://127.0.0.5/v1", "http://internal.example/v1",
                "https://api.corp.example/v1"):
        assert proxy_for(url) is None, url
    assert proxy_for("http://api.example/v1").url == "http://proxy.example:3128"
    assert proxy_for("https://api.example/v1").url == "http://proxy.example:3129"
    monkeypatch.setenv("no_proxy", "*")  # the lower-case form wins, as in urllib
    assert proxy_for("https://api.example/v1") is None


def test_loopback_runs_work_with_a_proxy_set_that_does_not_exist(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    with RouteServer() as srv:
        assert asyncio.run(_ask(_model(f"{srv.url}/v1"))) == "red"
    assert "proxy" not in _model(f"{srv.url}/v1").describe()


def test_an_unsupported_proxy_scheme_is_a_config_error(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ConfigError, match="only an http:// proxy is supported"):
        _model("https://api.example/v1")
