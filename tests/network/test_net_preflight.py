"""The pre-flight (runner/_preflight.py): one GET <base>/models per endpoint before the first
question. Endpoints that cannot work stop the run at once with exit status 2 and nothing
sent; endpoints without /models go on with a warning; replay/none models ask nothing."""

from __future__ import annotations

import asyncio
import socket

import pytest
from helpers.datasets import write_memlens
from helpers.stub_server import StubServer
from netservers import HOST, LoopbackProxy, RouteServer, Seen, completion, json_reply, self_signed
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import ConfigError
from memgauge.models import _http
from memgauge.models._preflight import MODEL, Listing, check, check_endpoint

LIST = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "me"}]}


def _run(tmp_path, base: str, *extra: str, n: int = 3):
    data = write_memlens(tmp_path, n)
    return CliRunner().invoke(app, [
        "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
        "--model", "openai:m", "--base-url", base, "--out", str(tmp_path / "r"),
        "--concurrency", "1", "--no-cache", *extra])


def _flat(text: str) -> str:
    return " ".join(text.split())


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def test_nothing_listening_is_a_config_error_at_once_naming_the_url(tmp_path):
    base = f"http://127.0.0.1:{_refused_port()}/v1"
    res = _run(tmp_path, base)
    assert res.exit_code == 2, res.output
    out = _flat(res.output)
    assert f"nothing answers at the model endpoint {base}" in out and "--base-url" in out
    assert "Traceback" not in res.output
    assert not (tmp_path / "r" / "records.jsonl").exists()


def test_a_refused_key_is_named_and_nothing_is_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-refused-key-0001")
    def handle(seen: Seen):
        return json_reply(401, {"error": {"message": "Incorrect API key sk-refused-key-0001"}})
    with RouteServer(handle) as srv:
        res = _run(tmp_path, f"{srv.url}/v1")
    assert res.exit_code == 2, res.output
    out = _flat(res.output)
    assert "the key was refused" in out and "HTTP 401" in out and "$OPENAI_API_KEY" in out
    assert "sk-refused-key-0001" not in out  # the echoed key is redacted
    assert [s.method for s in srv.seen] == ["GET"]


def test_a_missing_key_on_a_server_that_wants_one_says_so(tmp_path):
    with RouteServer(lambda s: json_reply(403, {"error": {"message": "forbidden"}})) as srv:
        res = _run(tmp_path, f"{srv.url}/v1")
    assert res.exit_code == 2
    assert "needs an API key (HTTP 403" in _flat(res.output)


def test_a_base_without_v1_is_told_to_add_it(tmp_path):
    def handle(seen: Seen):
        if seen.path == "/v1/models":
            return json_reply(200, LIST)
        return json_reply(404, {"error": {"message": "not found"}})
    with RouteServer(handle) as srv:
        res = _run(tmp_path, srv.url)
    assert res.exit_code == 2, res.output
    assert f"did you mean --base-url {srv.url}/v1?" in _flat(res.output)
    assert all(s.method == "GET" for s in srv.seen)


@pytest.mark.parametrize("status", [404, 405])
def test_a_server_without_models_is_not_refused(tmp_path, status):
    def handle(seen: Seen):
        if seen.method == "GET":
            return json_reply(status, {"error": {"message": "no such route"}})
        return json_reply(200, completion("red"))
    with RouteServer(handle) as srv:
        res = _run(tmp_path, srv.url, n=2)
    assert res.exit_code == 0, res.output
    assert f"GET {srv.url}/models answered HTTP {status}" in _flat(res.output)
    assert sum(s.method == "POST" for s in srv.seen) == 2


def test_the_test_stub_without_models_still_runs(tmp_path):
    with StubServer() as stub:  # answers a GET with 501, as before
        res = _run(tmp_path, stub.base_url, n=2)
    assert res.exit_code == 0, res.output
    assert len(stub.requests) == 2 and stub.gets == ["/v1/models"]


def test_a_301_on_models_stops_the_run_naming_the_new_base(tmp_path):
    with RouteServer(lambda s: json_reply(200, LIST)) as new, RouteServer(
            lambda s: (301, {"Location": f"{new.url}/api/v1/models"}, b"")) as old:
        res = _run(tmp_path, f"{old.url}/v1")
    assert res.exit_code == 2, res.output
    out = _flat(res.output)
    assert "HTTP 301" in out and f"use --base-url {new.url}/api/v1" in out


def test_a_307_on_models_goes_on_with_a_warning(tmp_path):
    with RouteServer(lambda s: json_reply(200, LIST) if s.method == "GET"
                     else json_reply(200, completion("red"))) as new, RouteServer(
            lambda s: (307, {"Location": f"{new.url}{s.path}"}, b"")) as old:
        res = _run(tmp_path, f"{old.url}/v1", n=2)
    assert res.exit_code == 0, res.output
    assert f"--base-url {new.url}/v1 avoids it" in _flat(res.output)


def test_the_judge_endpoint_is_checked_too_and_named(tmp_path):
    base = f"http://127.0.0.1:{_refused_port()}/v1"
    with StubServer() as stub:
        res = _run(tmp_path, stub.base_url, "--judge", "openai:j", "--judge-base-url", base)
    assert res.exit_code == 2, res.output
    out = _flat(res.output)
    assert f"nothing answers at the judge endpoint {base}" in out and "--judge-base-url" in out
    assert stub.requests == []


def test_a_certificate_that_does_not_verify_stops_the_run_at_once(tmp_path):
    server_tls, _ = self_signed(tmp_path)
    with RouteServer(tls=server_tls) as srv, \
            pytest.raises(ConfigError, match="did not verify") as info:
        asyncio.run(check_endpoint(f"https://127.0.0.1:{srv.port}/v1", {}))
    assert "never retried" in str(info.value)
    assert srv.seen == []


def test_a_hosted_https_url_without_a_key_warns(tmp_path, monkeypatch):
    server_tls, cert = self_signed(tmp_path)
    monkeypatch.setattr(_http, "_tls_context",
                        _http._ssl_mod.create_default_context(cafile=str(cert)))
    with RouteServer(lambda s: json_reply(200, LIST), tls=server_tls) as srv, \
            LoopbackProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        keyless = asyncio.run(check_endpoint(f"https://{HOST}:{srv.port}/v1", {}))
        keyed = asyncio.run(check_endpoint(f"https://{HOST}:{srv.port}/v1",
                                           {"Authorization": "Bearer sk-some-key-123"}))
    assert len(keyless.warnings) == 1 and "no API key for the model" in keyless.warnings[0]
    assert keyed.warnings == [] and keyed.entries == LIST["data"]


def test_models_without_an_endpoint_are_not_checked():
    class Replayish:
        name = "replay:x"

    class Localish:  # as LocalModel: its server was started and asked already
        name = "local"

        def preflight_target(self):
            return None

    known: dict = {}
    check([(Replayish(), MODEL), (Localish(), MODEL)], known)
    assert known == {}


def test_each_endpoint_is_asked_once_and_a_worker_asks_nothing(monkeypatch):
    from memgauge.models import ModelSettings
    from memgauge.models.openai_compat import OpenAICompatModel

    with StubServer() as stub:
        stub.models = LIST["data"]
        model = OpenAICompatModel("m", ModelSettings(base_url=stub.base_url))
        judge = OpenAICompatModel("m", ModelSettings(base_url=stub.base_url))
        known: dict = {}
        check([(model, MODEL), (judge, MODEL)], known, warn=lambda text: None)
        assert stub.gets == ["/v1/models"]
        again = OpenAICompatModel("m", ModelSettings(base_url=stub.base_url))
        check([(again, MODEL)], known, warn=lambda text: None)  # as a worker's setup does
    assert stub.gets == ["/v1/models"]
    assert model.served == judge.served == again.served == {"id": "m", "owned_by": "me"}
    assert isinstance(next(iter(known.values())), Listing)


def test_score_checks_the_judge_endpoint_before_judging(tmp_path):
    with StubServer(answer=lambda body: "red") as stub:
        res = _run(tmp_path, stub.base_url, n=2)
    assert res.exit_code in (0, 3), res.output
    before = (tmp_path / "r" / "records.jsonl").read_text()
    base = f"http://127.0.0.1:{_refused_port()}/v1"
    res = CliRunner().invoke(app, ["score", str(tmp_path / "r"), "--judge", "openai:j",
                                   "--judge-base-url", base])
    assert res.exit_code == 2, res.output
    out = _flat(res.output)
    assert f"nothing answers at the judge endpoint {base}" in out and "--judge-base-url" in out
    assert (tmp_path / "r" / "records.jsonl").read_text() == before  # nothing judged or lost
