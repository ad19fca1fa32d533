"""``--model local:``: its options, the run defaults it implies, the early stop of runs that
cannot work, and the client's local behaviour (slots, cache identity, timeouts, vision,
shared servers) with llama.cpp's server replaced by a stub (no model, no xllamacpp)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.datasets import make_png, write_memlens
from helpers.scripted_server import LLAMA_NO_VISION, LLAMA_OVERFLOW, ScriptedServer
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cache import ResponseCache
from memgauge.cli import app
from memgauge.cli._common import flag_for
from memgauge.errors import ConfigError, ConfigFieldError
from memgauge.media import ImageResolver
from memgauge.models import (
    GenerateConfig,
    ImagePart,
    Message,
    ModelError,
    ModelSettings,
    TextPart,
    create_model,
    local,
)
from memgauge.models._llama_server import LlamaServer
from memgauge.runner import RunConfig, RunStopped, read_records, run
from memgauge.runner._manifest import config_hash

LONGMEMEVAL = Path(__file__).resolve().parents[1] / "fixtures" / "longmemeval" / "mini.json"


# -- options ---------------------------------------------------------------------------------

def test_parse_options_types_and_defaults():
    got = local.parse_options({"n_ctx": "2048", "n_parallel": "2", "threads": "0",
                               "flash_attn": "off", "chat_template": "chatml",
                               "mmproj": "/x/p.gguf"})
    assert got == {"n_ctx": 2048, "n_parallel": 2, "threads": 0, "flash_attn": "off",
                   "chat_template": "chatml", "mmproj": "/x/p.gguf"}
    assert local.parse_options({}) == {}
    assert local.context_tokens({}) == local.DEFAULT_N_CTX == 8192
    assert local.context_tokens({"n_ctx": "4096"}) == 4096


@pytest.mark.parametrize("raw, words", [
    ({"ctx": "2048"}, ["model_options ctx", "unknown option", "n_ctx"]),
    ({"n_ctx": "abc"}, ["model_options n_ctx='abc'", "whole number"]),
    ({"n_ctx": "100"}, ["n_ctx=100", "256"]),
    ({"n_parallel": "0"}, ["model_options n_parallel=0", "at least 1"]),
    ({"threads": "-1"}, ["threads=-1", "at least 0"]),
    ({"flash_attn": "maybe"}, ["model_options flash_attn='maybe'", "auto, on or off"]),
])
def test_parse_options_errors_name_the_field_and_key(raw, words):
    with pytest.raises(ConfigFieldError) as info:
        local.parse_options(raw)
    for w in words:
        assert w in str(info.value)
    assert "--" not in str(info.value)  # the library's caller gave no flag


def test_parse_options_names_the_field_it_is_given_and_the_cli_its_flag():
    with pytest.raises(ConfigFieldError) as info:
        local.parse_options({"n_parallel": "0"}, field="judge_model_options")
    assert str(info.value) == "judge_model_options n_parallel=0: must be at least 1"
    assert info.value.render(flag_for) == "--judge-model-option n_parallel=0: must be at least 1"


# -- run defaults for a local model ----------------------------------------------------------

def _cfg(**kw: Any) -> RunConfig:
    base = {"bench": "longmemeval", "data": str(LONGMEMEVAL), "out": "unused",
            "progress": False}
    return RunConfig(**{**base, **kw})


def test_local_model_counts_with_its_tokenizer_and_fits_its_context():
    r = _cfg(model="local:smollm2", max_tokens=64).resolved()
    assert r.tokenizer == "model" and r.max_context_tokens == 8192 - 64
    r = _cfg(model="local:smollm2", max_tokens=64, model_options={"n_ctx": "2048"}).resolved()
    assert r.max_context_tokens == 2048 - 64
    # what the user says wins
    r = _cfg(model="local:smollm2", tokenizer="o200k_base", max_context_tokens=1000).resolved()
    assert (r.tokenizer, r.max_context_tokens) == ("o200k_base", 1000)


def test_local_run_options_change_the_identity_only_when_given():
    plain = _cfg(model="local:smollm2").resolved().identity()
    small = _cfg(model="local:smollm2", model_options={"n_ctx": "2048"}).resolved().identity()
    assert "model_options" not in plain and small["model_options"] == {"n_ctx": "2048"}
    assert config_hash(plain) != config_hash(small)


def test_max_tokens_that_fill_the_context_are_refused():
    with pytest.raises(ConfigError, match="leaves no room"):
        _cfg(model="local:smollm2", max_tokens=2040, model_options={"n_ctx": "2048"}).resolved()


def test_bad_local_options_fail_before_anything_starts():
    with pytest.raises(ConfigFieldError, match="^model_options bogus: unknown option"):
        _cfg(model="local:smollm2", model_options={"bogus": "1"}).resolved()


def test_other_models_keep_o200k_and_no_limit():
    r = _cfg(model="openai:gpt-4o-mini").resolved()
    assert (r.tokenizer, r.max_context_tokens) == ("o200k_base", None)


def test_model_option_with_an_openai_model_is_an_error():
    # the library names its field; the command line names its flag (next test)
    with pytest.raises(ConfigError, match="model_options applies to local: models only"):
        _cfg(model="openai:gpt-4o-mini", model_options={"n_ctx": "2048"}).resolved()
    with pytest.raises(ConfigError, match="apply to local: models"):
        create_model("openai:m", ModelSettings(base_url="http://127.0.0.1:9/v1",
                                               model_options={"n_ctx": "2048"}))


def test_model_option_with_an_openai_model_exits_2_on_the_command_line(tmp_path):
    r = CliRunner().invoke(app, [
        "run", "--bench", "longmemeval", "--data", str(LONGMEMEVAL), "--out",
        str(tmp_path / "r"), "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
        "--model-option", "n_ctx=2048"])
    assert r.exit_code == 2 and "--model-option applies to local: models only" in r.output
    assert not (tmp_path / "r" / "records.jsonl").exists()


def test_identity_hash_of_other_runs_is_unchanged():
    # The hash of this configuration before local models existed (computed at the parent
    # commit): earlier run folders must keep resuming.
    c = RunConfig(bench="memlens", data="d.json", out="o", model="openai:gpt-4o-mini",
                  base_url="http://127.0.0.1:8000/v1", max_tokens=64, context_mode="text")
    ident = c.resolved().identity()
    assert "model_options" not in ident
    assert config_hash(ident) == "d1bd2cec5eb70eef"


def test_identity_hash_is_the_one_written_by_a_run(tmp_path):
    data = write_memlens(tmp_path, 1)
    with StubServer(answer=lambda b: "red") as stub:
        run(RunConfig(bench="memlens", data=str(data), image_dir=str(tmp_path),
                      out=str(tmp_path / "r"), model="openai:gpt-4o-mini",
                      base_url=stub.base_url, max_tokens=64, context_mode="text",
                      progress=False))
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    ident = manifest["config"]["identity"]
    assert "model_options" not in ident and ident["tokenizer"] == "o200k_base"
    assert manifest["config_hash"] == config_hash(ident)


def test_workers_fall_back_to_one_with_a_local_model():
    from memgauge.runner._workers import workers_for

    n, why = workers_for(_cfg(model="local:smollm2", workers=4, concurrency=8))
    assert n == 1 and why == ("workers 4 ignored: a local model is computed by its server's "
                              "slots (model_options n_parallel=N), not by more answering "
                              "processes")
    assert why.render(flag_for).startswith("--workers 4 ignored")  # the CLI's note
    assert "(--model-option n_parallel=N)" in why.render(flag_for)
    n, why = workers_for(_cfg(model="openai:m", judge="local:smollm2", workers=4,
                              concurrency=8))
    assert n == 1 and "n_parallel" in why


def test_tokenizer_model_needs_a_local_model(tmp_path):
    data = write_memlens(tmp_path, 1)
    with StubServer() as stub:
        with pytest.raises(ConfigFieldError, match="^tokenizer model needs a local: model"):
            run(_stub_cfg(tmp_path, data, stub.base_url, tokenizer="model"))
        assert stub.requests == []


# -- stopping runs that cannot work (through an HTTP server that answers errors) ------------

OK = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
      "choices": [{"index": 0, "finish_reason": "stop",
                   "message": {"role": "assistant", "content": "red"}}],
      "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}


def _stub_cfg(tmp_path: Path, data: Path, url: str, out: str = "run", **kw: Any) -> RunConfig:
    base = {"bench": "memlens", "data": str(data), "image_dir": str(data.parent),
            "out": str(tmp_path / out), "model": "openai:stub", "base_url": url,
            "progress": False, "retry_base_s": 0.01, "concurrency": 1,
            "context_mode": "text", "cache": False}
    return RunConfig(**{**base, **kw})


def _lines(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines() if x]


def test_run_stops_after_over_length_answers_and_keeps_them(tmp_path):
    data = write_memlens(tmp_path, 6)
    with ScriptedServer([], after=(400, LLAMA_OVERFLOW)) as srv, pytest.raises(RunStopped) as info:
        run(_stub_cfg(tmp_path, data, srv.base_url))
    assert isinstance(info.value, ConfigError)  # exit status 2 on the command line
    msg = str(info.value)
    assert re.search(r"the first \d+ were all over the limit", msg)
    assert "14550" in msg and "8192" in msg
    assert "n_ctx" in msg  # names the fix for local models
    recs = _lines(tmp_path / "run")
    assert len(recs) >= 3
    for rec in recs:
        assert rec["status"] == "error" and rec["scores"] == {}
        assert rec["response"]["error"]["kind"] == "context_overflow"
        assert rec["input_tokens"] == 14550  # the server's count
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"]["ok"] == 0 and manifest["status"]["records"] == len(recs)


def test_run_stops_on_prompts_over_our_own_limit_without_sending_anything(tmp_path):
    # counted before the first request (design 0043): refused, no record, no folder
    data = write_memlens(tmp_path, 5)
    with StubServer() as stub:
        with pytest.raises(ConfigFieldError, match="5 of the 5 counted are over "
                                                   "max_context_tokens 20"):
            run(_stub_cfg(tmp_path, data, stub.base_url, max_context_tokens=20))
        assert stub.requests == []
    assert not (tmp_path / "run").exists()


def test_a_run_with_an_ok_answer_first_is_not_stopped_by_later_overflows(tmp_path):
    data = write_memlens(tmp_path, 5)
    with ScriptedServer([(200, OK)], after=(400, LLAMA_OVERFLOW)) as srv:
        result = run(_stub_cfg(tmp_path, data, srv.base_url))
    assert (result.ok, result.errors) == (1, 4) and len(srv.requests) == 5


def test_overflow_policy_drop_oldest_is_never_stopped(tmp_path):
    data = write_memlens(tmp_path, 4)
    with ScriptedServer([], after=(400, LLAMA_OVERFLOW)) as srv:
        result = run(_stub_cfg(tmp_path, data, srv.base_url, overflow="drop-oldest",
                               max_context_tokens=100_000))
    assert (result.ok, result.errors) == (0, 4)


def test_run_stops_when_images_are_refused_by_a_text_only_model(tmp_path):
    data = write_memlens(tmp_path, 4)
    with ScriptedServer([], after=(500, LLAMA_NO_VISION)) as srv, \
            pytest.raises(RunStopped) as info:
        run(_stub_cfg(tmp_path, data, srv.base_url, context_mode="image"))
    assert "--context-mode" in str(info.value) and "stopped after" in str(info.value)
    recs = _lines(tmp_path / "run")
    assert recs and len(srv.requests) >= len(recs)
    for rec in recs:
        err = rec["response"]["error"]
        assert (err["kind"], err["attempts"], rec["scores"]) == ("no_vision", 1, {})


def test_answers_before_the_stop_are_kept_and_a_rerun_resumes(tmp_path):
    data = write_memlens(tmp_path, 4)
    with ScriptedServer([(200, OK)], after=(500, LLAMA_NO_VISION)) as srv:
        with pytest.raises(RunStopped):
            run(_stub_cfg(tmp_path, data, srv.base_url, context_mode="image"))
        recs = {r["question_id"]: r for r in _lines(tmp_path / "run")}
        assert recs["q000"]["status"] == "ok" and recs["q000"]["prediction"] == "red"
        assert recs["q001"]["response"]["error"]["kind"] == "no_vision"
        srv.after = lambda body: (200, OK)  # the server can see now; the folder resumes
        result = run(_stub_cfg(tmp_path, data, srv.base_url, context_mode="image"))
    assert (result.skipped, result.done, result.ok) == (1, 3, 3)
    assert len(read_records(tmp_path / "run")) == 4


def test_run_stopped_is_exit_2_on_the_command_line(tmp_path):
    data = write_memlens(tmp_path, 3)
    with ScriptedServer([], after=(500, LLAMA_NO_VISION)) as srv:
        r = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
            "--out", str(tmp_path / "r"), "--model", "openai:m", "--base-url", srv.base_url,
            "--concurrency", "1", "--no-cache"])
    assert r.exit_code == 2, r.output
    assert "error:" in r.output and "--context-mode" in r.output
    assert _lines(tmp_path / "r")[0]["response"]["error"]["kind"] == "no_vision"


# The stop comes at once: RunStopped raised in an episode task is kept as the task
# finishes, and the loop that starts episodes starts no more.
@pytest.mark.parametrize("scenario", ["server-overflow", "own-limit", "no-vision",
                                      "no-vision-then-ok"])
def test_the_stop_comes_at_once_and_sends_nothing_more(tmp_path, scenario):
    data = write_memlens(tmp_path, 8)
    replies: list[tuple[int, dict]] = []
    after: tuple[int, dict] = (400, LLAMA_OVERFLOW)
    kw: dict[str, Any] = {}
    expect_records, expect_requests = 3, 3
    stop: type[Exception] = RunStopped
    if scenario == "own-limit":  # refused before the first request (design 0043)
        kw, after, expect_requests, expect_records = {"max_context_tokens": 20}, (200, OK), 0, 0
        stop = ConfigError
    elif scenario.startswith("no-vision"):
        kw, expect_records, expect_requests = {"context_mode": "image"}, 1, 1
        if scenario == "no-vision-then-ok":
            replies, after = [(500, LLAMA_NO_VISION)], (200, OK)
        else:
            after = (500, LLAMA_NO_VISION)
    # one request at a time, so "nothing more" is exact (with more in flight, those already
    # sent finish and are recorded)
    kw["concurrency"] = 1
    with ScriptedServer(replies, after=after) as srv, pytest.raises(stop):
        run(_stub_cfg(tmp_path, data, srv.base_url, **kw))
    assert len(srv.requests) == expect_requests
    if scenario == "own-limit":
        assert not (tmp_path / "run").exists()
    else:
        assert len(_lines(tmp_path / "run")) == expect_records


# -- the local client, with llama.cpp's server replaced by a stub ---------------------------

class FakeLlama:
    """What LocalModel needs of a started LlamaServer, serving from a StubServer."""

    def __init__(self, options: Any, stub: StubServer, vision: bool = False) -> None:
        self.options, self.vision = options, vision
        self.address = stub.base_url.removesuffix("/v1")
        self.engine_version = "0.0-test"
        self._proc: Any = object()
        self.stops = 0
        self.start_limit_s = 30.0

    base_url = property(lambda self: f"{self.address}/v1")
    slots = property(lambda self: self.options.slots)
    n_ctx = property(lambda self: self.options.n_ctx)
    model_id = property(lambda self: self.options.model.name)

    def describe(self) -> dict[str, Any]:
        return {"engine": "fake", "engine_version": self.engine_version, "n_ctx": self.n_ctx,
                "slots": self.slots, "vision": self.vision}

    def stop(self) -> None:
        self._proc = None
        self.stops += 1

    def death(self) -> str | None:
        return None  # the stub never dies


@pytest.fixture
def fake_llama(monkeypatch):
    """``LlamaServer.start`` replaced: each start takes the next of ``.stubs`` (round robin)
    and is noted in ``.started``; ``.vision`` says whether the next ones can see."""
    servers = SimpleNamespace(stubs=[], started=[], vision=False)

    def start(options: Any, floor_s: float = 0.0) -> FakeLlama:
        stub = servers.stubs[len(servers.started) % len(servers.stubs)]
        server = FakeLlama(options, stub, vision=servers.vision)
        servers.started.append(server)
        return server

    monkeypatch.setattr(LlamaServer, "start", staticmethod(start))
    monkeypatch.setattr(local, "_SERVERS", {})
    return servers


def _gguf(path: Path, body: bytes = b"weights") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF" + body)
    return path


def _local(path: Path, **kw: Any) -> Any:
    return create_model(f"local:{path}", ModelSettings(retry_base_s=0.001, **kw))


def _chat(model: Any, messages: list[Message] | None = None, close: bool = True) -> Any:
    async def go() -> Any:
        try:
            return await model.generate(messages or [Message("user", [TextPart("hi")])],
                                        GenerateConfig(max_tokens=8))
        finally:
            if close:
                await model.aclose()

    return asyncio.run(go())


def test_local_model_describes_itself_and_caps_concurrency_at_its_slots(tmp_path, fake_llama,
                                                                        monkeypatch):
    import hashlib
    import time

    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent")
    f = _gguf(tmp_path / "m.gguf")
    lock = threading.Lock()
    busy = {"now": 0, "most": 0}

    def answer(body: dict) -> str:  # how many requests the "server" computes at once
        with lock:
            busy["now"] += 1
            busy["most"] = max(busy["most"], busy["now"])
        time.sleep(0.15)
        with lock:
            busy["now"] -= 1
        return "hello"

    async def six(m: Any) -> list[Any]:
        try:
            return await asyncio.gather(*(m.generate([Message("user", [TextPart(f"q{i}")])],
                                                     GenerateConfig(max_tokens=8))
                                          for i in range(6)))
        finally:
            await m.aclose()

    with StubServer(answer=answer) as stub:
        fake_llama.stubs = [stub]
        m = _local(f, concurrency=8, model_options={"n_parallel": "2", "n_ctx": "4096"})
        d = m.describe()
        outs = asyncio.run(six(m))
    assert [o.text for o in outs] == ["hello"] * 6
    assert busy["most"] == 2  # 8 asked for, 2 slots: the rest queued on our side
    assert d["provider"] == "local" and d["model"] == str(f) and d["file"] == "m.gguf"
    assert d["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert (d["n_ctx"], d["slots"], d["concurrency"], d["engine_version"]) == \
        (4096, 2, 2, "0.0-test")
    assert d["mmproj"] is None and "base_url" not in d
    assert all("Authorization" not in h for h in stub.headers)  # a user's key stays home
    assert len(stub.requests) == 7  # the speed probe at start, then the six questions
    assert fake_llama.started[0].stops == 1  # released on aclose


def test_cache_names_the_model_file_by_digest_not_by_port(tmp_path, fake_llama):
    cache = ResponseCache(tmp_path / "c.sqlite")
    a = _gguf(tmp_path / "a" / "m.gguf")
    b = _gguf(tmp_path / "b" / "copy.gguf")  # the same bytes elsewhere
    other = _gguf(tmp_path / "c" / "m.gguf", b"other weights")
    with StubServer(answer=lambda b: "x") as s1, StubServer(answer=lambda b: "y") as s2, \
            StubServer(answer=lambda b: "z") as s3:
        fake_llama.stubs = [s1, s2, s3]
        first = _chat(_local(a, cache=cache))
        again = _chat(_local(b, cache=cache))  # a new server on a new port
        third = _chat(_local(other, cache=cache))
    assert (first.text, first.cached) == ("x", False)
    assert (again.text, again.cached) == ("x", True)
    assert len(s2.requests) == 1  # only the speed probe
    assert (third.text, third.cached) == ("z", False)


def test_a_timed_out_request_is_not_resent(tmp_path, fake_llama):
    f = _gguf(tmp_path / "m.gguf")
    with StubServer(answer=lambda b: "late") as stub:
        fake_llama.stubs = [stub]
        m = _local(f, timeout_s=0.3, max_attempts=4)
        stub.plan, stub.hang_s = ["hang"], 1.5
        with pytest.raises(ModelError) as info:
            _chat(m)
    assert info.value.kind == "timeout" and info.value.attempts == 1
    assert len(stub.requests) == 2  # probe + one attempt


def test_request_timeout_grows_with_the_prompt(tmp_path, fake_llama):
    f = _gguf(tmp_path / "m.gguf")
    with StubServer() as stub:
        fake_llama.stubs = [stub]
        m = _local(f, timeout_s=5.0)
        m.prefill_tps, m.decode_tps = 300.0, 20.0
        assert m.request_timeout(300, 8) == 5.0  # short: the run's --timeout
        big = m.request_timeout(3_000_000, 32)  # ~1M tokens at 300/s, times the safety
        assert big > 10_000 and big == pytest.approx(
            local.TIMEOUT_SAFETY * (3_000_000 / local.BYTES_PER_TOKEN / 300 + 32 / 20))
        m.observe({"timings": {"prompt_n": 500, "prompt_per_second": 100.0,
                               "predicted_n": 20, "predicted_per_second": 10.0}})
        assert (m.prefill_tps, m.decode_tps) == (100.0, 10.0)  # the slowest seen
        m.observe({"timings": {"prompt_n": 500, "prompt_per_second": 900.0}})
        assert m.prefill_tps == 100.0
        asyncio.run(m.aclose())


def test_images_to_a_model_without_vision_fail_before_sending(tmp_path, fake_llama):
    make_png(tmp_path / "a.png", "red")
    ref = ImageResolver(tmp_path).resolve({"file": "a.png"}, file="f", item="i",
                                          field="images[0]")
    msgs = [Message("user", [ImagePart(ref), TextPart("what colour?")])]
    f = _gguf(tmp_path / "m.gguf")
    with StubServer(answer=lambda b: "red") as stub:
        fake_llama.stubs = [stub]
        m = _local(f)
        assert m.supports_images is False
        with pytest.raises(ModelError) as info:
            _chat(m, msgs)
        assert len(stub.requests) == 1  # the probe only: the image never left
        assert info.value.kind == "no_vision" and "--context-mode text or caption" in \
            info.value.message
        fake_llama.vision = True  # a server with a projector gets the image
        seeing = _local(f)
        assert _chat(seeing, msgs).text == "red"
    assert any(p.get("type") == "image_url" for p in stub.requests[-1]["messages"][0]["content"])


def test_model_and_judge_share_one_server_until_both_are_closed(tmp_path, fake_llama):
    f = _gguf(tmp_path / "m.gguf")
    with StubServer() as stub:
        fake_llama.stubs = [stub]
        a = _local(f, model_options={"n_ctx": "2048"})
        b = _local(f, model_options={"n_ctx": "2048"})
        assert len(fake_llama.started) == 1 and a.server is b.server
        c = _local(f, model_options={"n_ctx": "4096"})  # other options: a server of its own
        assert len(fake_llama.started) == 2 and c.server is not a.server
        asyncio.run(a.aclose())
        assert a.server.stops == 0  # b still uses it
        asyncio.run(a.aclose())  # closing twice does not release twice
        assert a.server.stops == 0
        asyncio.run(b.aclose())
        assert a.server.stops == 1
        asyncio.run(c.aclose())
        assert c.server.stops == 1
        d = _local(f, model_options={"n_ctx": "2048"})  # after the stop: a fresh server
        assert len(fake_llama.started) == 3 and d.server is not a.server
        asyncio.run(d.aclose())
    assert local._SERVERS == {}


def test_a_server_that_does_not_answer_its_probe_is_released(tmp_path, fake_llama):
    f = _gguf(tmp_path / "m.gguf")
    with StubServer() as stub:
        fake_llama.stubs = [stub]
        stub.plan = [500]
        with pytest.raises(ConfigError, match=r"refused a first request \(HTTP 500\): stub"):
            _local(f)
    assert fake_llama.started[0].stops == 1 and local._SERVERS == {}


def test_a_missing_model_fails_before_any_server_starts(tmp_path, fake_llama, monkeypatch):
    monkeypatch.setenv("MEMGAUGE_MODELS_DIR", str(tmp_path / "none"))
    with pytest.raises(ConfigError, match="memgauge models pull smollm2"):
        create_model("local:smollm2", ModelSettings())
    with pytest.raises(ConfigError, match="mmproj file"):
        _local(_gguf(tmp_path / "m.gguf"), model_options={"mmproj": str(tmp_path / "no.gguf")})
    assert fake_llama.started == []


def test_bad_judge_option_names_the_judge_field(tmp_path, fake_llama):
    data = write_memlens(tmp_path, 1)
    with StubServer() as stub, pytest.raises(ConfigFieldError,
                                             match="^judge_model_options bogus: unknown"):
        run(_stub_cfg(tmp_path, data, stub.base_url, judge="local:smollm2",
                      judge_model_options={"bogus": "1"}))


def test_a_failed_setup_releases_the_local_server(tmp_path, fake_llama):
    f = _gguf(tmp_path / "m.gguf")
    with StubServer() as stub:
        fake_llama.stubs = [stub]
        cfg = RunConfig(bench="longmemeval", data=str(LONGMEMEVAL), out=str(tmp_path / "r"),
                        model=f"local:{f}", tokenizer="o200k_base", progress=False,
                        judge="openai:judge-without-key")  # fails after the model started
        with pytest.raises(ConfigError, match="no API key"):
            run(cfg)
    assert len(fake_llama.started) == 1
    assert fake_llama.started[0].stops == 1 and local._SERVERS == {}


def test_choices_become_a_grammar_for_a_local_server_and_a_new_cache_key(tmp_path, fake_llama):
    """The llm game player's constrained choice (issue 24): a local model sends
    ``GenerateConfig.choices`` as a GBNF grammar llama.cpp holds its decoding to; a reply
    with and one without choices are cached apart; no choices, no grammar."""
    f = _gguf(tmp_path / "m.gguf")
    cache = ResponseCache(tmp_path / "c.sqlite")
    hi = [Message("user", [TextPart("hi")])]

    async def ask(m: Any) -> list[str]:
        try:
            free = await m.generate(hi, GenerateConfig(max_tokens=8))
            held = await m.generate(hi, GenerateConfig(max_tokens=8,
                                                       choices=("noop", 'say "hi"')))
            return [free.text, held.text]
        finally:
            await m.aclose()

    with StubServer(answer=lambda body: "grammar" if "grammar" in body else "free") as stub:
        fake_llama.stubs = [stub]
        model = _local(f, cache=cache)
        assert model.constrains_choices
        assert asyncio.run(ask(model)) == ["free", "grammar"]
    assert "grammar" not in stub.requests[1]
    assert stub.requests[2]["grammar"] == 'root ::= "noop" | "say \\"hi\\""'
    assert local.choice_grammar(("wood\\pickaxe",)) == 'root ::= "wood\\\\pickaxe"'
    cache.close()


def test_an_openai_compatible_endpoint_gets_no_grammar_it_may_not_know(tmp_path):
    """vLLM, OpenAI and llama.cpp each constrain differently: a generic endpoint gets the
    choices in the prompt only, never a field it may refuse."""
    with StubServer(answer=lambda body: "noop") as stub:
        model = create_model("openai:m", ModelSettings(base_url=stub.base_url,
                                                       retry_base_s=0.001))
        assert not model.constrains_choices

        async def go() -> str:
            try:
                return (await model.generate([Message("user", [TextPart("hi")])],
                                             GenerateConfig(choices=("noop",)))).text
            finally:
                await model.aclose()

        assert asyncio.run(go()) == "noop"
    assert set(stub.requests[-1]) == {"model", "messages", "max_tokens", "temperature"}
