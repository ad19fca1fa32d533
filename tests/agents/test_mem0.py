"""``--system mem0`` (systems/mem0_system.py) against a scripted model: what Mem0 is given at
ingest, what the run's model is asked, what is recorded; options and setup mistakes; no
network. Skipped when the ``agents`` extra (mem0ai, faiss-cpu, model2vec) is absent."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

for _module in ("mem0", "faiss", "model2vec", "static_model"):
    pytest.importorskip(_module, reason="the agents extra is not installed")

from helpers.memory_history import play

from memgauge.errors import ConfigError
from memgauge.models import GenerateConfig, Message, ModelError, ModelOutput, TextPart
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.schema import (
    Response,
    Session,
    Usage,
)
from memgauge.systems import SystemContext

NEW = re.compile(r"## New Messages\n(.*?)\n\n## ", re.DOTALL)


def extraction_reply(messages: list[Message]) -> str | None:
    """Mem0's fact-extraction call gets one memory per user message; None for other calls."""
    user = messages[-1].parts[-1].text
    found = NEW.search(user)
    if found is None:
        return None
    facts = re.findall(r"^user: (.*)$", found.group(1), re.MULTILINE)
    return json.dumps({"memory": [{"id": str(i), "text": f, "attributed_to": "user"}
                                  for i, f in enumerate(facts)]})


class Recording(ScriptedModel):
    """A scripted model that also keeps each call's GenerateConfig."""

    def __init__(self, fn: Any, usage: Usage | None = None, **kw: Any) -> None:
        super().__init__(fn=fn, **kw)
        self.configs: list[GenerateConfig] = []
        self.usage = usage or Usage(input_tokens=100, output_tokens=10)

    async def generate(self, messages: list[Message], config: GenerateConfig, *,
                       question_id: str | None = None) -> ModelOutput:
        self.configs.append(config)
        out = await super().generate(messages, config, question_id=question_id)
        return ModelOutput(text=out.text, usage=self.usage)


def default_fn(messages: list[Message], qid: str | None) -> str:
    reply = extraction_reply(messages)
    return reply if reply is not None else "Rex"




def run(model: Any, options: dict[str, str] | None = None,
        history: list[Session] | None = None) -> tuple[Response, Any]:
    ctx = SystemContext(model=model, options=options or {})
    system = lookup("system", "mem0")(ctx)()
    return asyncio.run(play(system, history)), system


def user_text(messages: list[Message]) -> str:
    return "\n".join(p.text for m in messages if m.role == "user" for p in m.parts
                     if isinstance(p, TextPart))


def test_each_session_is_one_add_with_dates_captions_and_session_pointers():
    model = Recording(default_fn)
    response, system = run(model)
    # Two sessions: two extraction calls, in order, through the run's model; then the answer.
    assert len(model.calls) == 3 and [q for _, q in model.calls] == [None, None, "q1"]
    first, second = (NEW.search(user_text(m)).group(1) for m, _ in model.calls[:2])
    assert "[2023/05/01] My dog is called Rex." in first and "Lisbon" not in first
    assert "[2023/06/01] I moved to Lisbon in June. [Image: a red bicycle]" in second
    assert "[2023/05/01] What a fine name." in first  # the assistant's turn goes in too
    for config in model.configs[:2]:  # what Mem0 asks for, within our reply budget
        assert config.extra_body["response_format"] == {"type": "json_object"}
        assert config.max_tokens == 1024 and config.temperature == 0.0
    assert "response_format" not in model.configs[2].extra_body
    # What Mem0 retrieved, as session pointers: the dog's session first.
    assert [r.pointer.session_id for r in response.retrieved] == ["s1", "s2"]
    assert all(r.chosen for r in response.retrieved)
    assert response.retrieved[0].score > response.retrieved[1].score
    assert response.text == "Rex" and response.error is None
    mems = response.meta["mem0"]["memories"]
    assert [m["session_id"] for m in mems] == ["s1", "s2"]
    assert mems[0]["memory"] == "[2023/05/01] My dog is called Rex."
    assert mems[0]["session_date"] == "2023/05/01"
    # The answer prompt lists the memories with their session dates, then the question.
    prompt = user_text(model.calls[2][0])
    assert "- [2023/05/01] My dog is called Rex. [2023/05/01] (relevance " in prompt
    assert prompt.index("My dog") < prompt.index("Lisbon") < prompt.index("Question: What is")
    assert "Question Date: 2023/07/01" in prompt
    # Ingest cost and memory size, in the keys the runner reads (design 0027).
    assert response.meta["ingest"] == {"calls": 2, "cached": 0, "prompt_tokens": 200,
                                       "completion_tokens": 20}
    stored = [m["memory"] for m in mems]
    assert response.meta["memory"] == {"items": 2,
                                       "bytes": sum(len(t.encode()) for t in stored)}
    assert response.meta["mem0"]["unparsed_replies"] == 0
    assert system.describe()["embedding_dims"] == 64


def test_top_k_limits_the_prompt_and_the_rest_of_the_ranking_is_recorded_unchosen():
    model = Recording(default_fn)
    response, _ = run(model, {"top_k": "1"})
    assert [(r.pointer.session_id, r.chosen) for r in response.retrieved] == [("s1", True),
                                                                              ("s2", False)]
    prompt = user_text(model.calls[-1][0])
    assert "My dog" in prompt and "Lisbon" not in prompt


def test_infer_false_stores_the_raw_messages_without_model_calls():
    model = Recording(default_fn)
    response, _ = run(model, {"infer": "false"})
    assert [q for _, q in model.calls] == ["q1"]  # only the answer
    assert response.meta["ingest"]["calls"] == 0
    assert response.meta["memory"]["items"] == 3  # one per turn
    assert {m["session_id"] for m in response.meta["mem0"]["memories"]} == {"s1", "s2"}


def test_an_unreadable_extraction_reply_stores_nothing_and_the_question_is_ingest_failed(
        caplog):
    """Issue 29: an empty memory is not a score of 0; Mem0's own log line per unreadable
    reply is dropped (the count is in the record and the run's summary)."""
    model = Recording(lambda m, q: "I cannot do JSON" if q is None else "Insufficient information")
    with caplog.at_level("ERROR"):
        response, _ = run(model)
    assert response.meta["mem0"]["unparsed_replies"] == 2
    assert response.meta["memory"] == {"items": 0, "bytes": 0}
    assert [f["session_id"] for f in response.meta["ingest_failures"]] == ["s1", "s2"]
    assert response.error is not None and response.error.kind == "ingest_failed"
    assert all(q is None for _, q in model.calls)  # no answer asked of an empty memory
    assert "Error parsing extraction response" not in caplog.text


def test_the_models_own_error_at_ingest_comes_through_not_mem0s_wrapping():
    def fn(messages: list[Message], qid: str | None) -> str:
        if qid is None:
            raise ModelError("http_500", "stub error 500", retryable=True, attempts=6)
        return "x"

    with pytest.raises(ModelError) as caught:
        run(ScriptedModel(fn=fn))
    assert caught.value.kind == "http_500" and caught.value.attempts == 6


def test_an_answer_error_is_recorded_with_what_was_retrieved():
    def fn(messages: list[Message], qid: str | None) -> str:
        if qid == "q1":
            raise ModelError("timeout", "no reply in 120 s", retryable=True, attempts=3)
        return default_fn(messages, qid)

    response, _ = run(ScriptedModel(fn=fn))
    assert response.error.kind == "timeout" and response.text is None
    assert response.retrieved[0].pointer.session_id == "s1"
    assert response.meta["ingest"]["calls"] == 2


@pytest.mark.parametrize(("options", "says"), [
    ({"top_k": "0"}, "top_k=0"),
    ({"top_k": "many"}, "top_k"),
    ({"infer": "maybe"}, "infer"),
    ({"vector_store": "pinecone"}, "vector_store='pinecone'"),
    ({"embedder_base_url": "http://127.0.0.1:9/v1"}, "go together"),
    ({"embedder_api_key_env": "MEMGAUGE_TEST_UNSET_KEY"}, "MEMGAUGE_TEST_UNSET_KEY"),
    ({"ingest_max_tokens": "4"}, "ingest_max_tokens=4"),
    ({"topk": "3"}, "no such option"),
])
def test_option_mistakes_are_named_before_any_call(options, says):
    model = ScriptedModel(fn=default_fn)
    with pytest.raises(ConfigError, match=re.escape(says)):
        lookup("system", "mem0")(SystemContext(model=model, options=options))
    assert model.calls == []


class ShortContext(ScriptedModel):
    context_tokens = 8192  # what a local model reports


def test_a_context_too_short_for_mems0_prompt_is_refused_up_front():
    with pytest.raises(ConfigError, match="n_ctx=16384"):
        lookup("system", "mem0")(SystemContext(model=ShortContext(fn=default_fn)))
    # Raw messages need no extraction prompt.
    lookup("system", "mem0")(SystemContext(model=ShortContext(fn=default_fn),
                                           options={"infer": "false"}))


def test_qdrant_store_retrieves_the_same_way():
    response, system = run(Recording(default_fn), {"vector_store": "qdrant"})
    assert response.retrieved[0].pointer.session_id == "s1"
    assert system.describe()["vector_store"] == "qdrant"


def test_nothing_but_loopback_is_contacted_and_telemetry_is_off(monkeypatch):
    real = socket.socket.connect
    outside: list[Any] = []

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost"):
            outside.append(address)
            raise OSError("no network in tests")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    response, _ = run(Recording(default_fn))
    assert response.error is None and outside == []
    import os

    import mem0.memory.main as mem0_main
    import mem0.memory.telemetry as mem0_telemetry

    assert mem0_telemetry.MEM0_TELEMETRY is False and mem0_main.MEM0_TELEMETRY is False
    assert not os.environ["MEM0_DIR"].startswith(os.path.expanduser("~/.mem0"))


# -- an OpenAI-compatible embeddings endpoint (loopback) --------------------------------------

DIMS = 12


def bag_of_letters(text: str) -> list[float]:
    vec = [0.0] * DIMS
    for word in re.findall(r"[a-z]+", text.lower()):
        vec[sum(map(ord, word)) % DIMS] += 1.0
    return vec


class Embeddings:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append({"path": self.path, **body})
                data = [{"object": "embedding", "index": i, "embedding": bag_of_letters(t)}
                        for i, t in enumerate(body["input"])]
                raw = json.dumps({"object": "list", "data": data, "model": body["model"],
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def embeddings():
    server = Embeddings()
    yield server
    server.close()


def test_an_embeddings_endpoint_is_probed_for_its_size_then_used(embeddings):
    options = {"embedder_base_url": embeddings.base_url, "embedder_model": "tiny-embed"}
    response, system = run(Recording(default_fn), options)
    assert embeddings.bodies[0]["input"] == ["dimension probe"]
    assert {b["path"] for b in embeddings.bodies} == {"/v1/embeddings"}
    assert {b["model"] for b in embeddings.bodies} == {"tiny-embed"}
    assert len(embeddings.bodies) > 3  # the probe, the memories, the question
    assert system.describe()["embedding_dims"] == DIMS
    assert response.retrieved[0].pointer.session_id == "s1"


def test_an_embeddings_endpoint_that_does_not_answer_is_a_config_error():
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = {"embedder_base_url": f"http://127.0.0.1:{port}/v1", "embedder_model": "m"}
    model = ScriptedModel(fn=default_fn)
    with pytest.raises(ConfigError, match=f"127.0.0.1:{port}"):
        lookup("system", "mem0")(SystemContext(model=model, options=options))
    assert model.calls == []


# -- whole runs: `memgauge run --system mem0` ------------------------------------------------


def _records(out: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


def _synth(tmp_path: Any) -> Any:
    from typer.testing import CliRunner

    from memgauge.cli import app

    bench = tmp_path / "bench"
    made = CliRunner().invoke(app, ["generate", "synth", "--out", str(bench), "--questions", "2",
                                    "--tiers", "4k"])
    assert made.exit_code == 0, made.output
    return bench


def test_a_run_against_an_endpoint_extracts_through_the_response_cache(tmp_path, stub):
    """infer=true over HTTP (the loopback stub answers Mem0's extraction prompts with JSON):
    a second run with the same cache gets every extraction call from it."""
    from typer.testing import CliRunner

    from memgauge.cli import app

    def answer(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        user = user if isinstance(user, str) else user[-1]["text"]
        found = NEW.search(user)
        if found is None:
            return "Insufficient information"
        facts = re.findall(r"^user: (.*)$", found.group(1), re.MULTILINE)[:3]
        return json.dumps({"memory": [{"id": str(i), "text": f} for i, f in enumerate(facts)]})

    stub.answer = answer
    bench = _synth(tmp_path)
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        args = ["run", "--bench", "synth", "--data", str(bench), "--tier", "4k",
                "--system", "mem0", "--model", "openai:stub", "--base-url", stub.base_url,
                "--out", str(out)]
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
        runs.append(_records(out))
    first, second = runs
    assert len(first) == 2 and all(r["status"] == "ok" for r in first)
    for record in first:
        cost = record["cost"]
        assert cost["ingest_calls"] == cost["ingest_sessions"] > 10  # one add per session
        assert cost["ingest_cached"] == 0 and cost["memory_items"] > 0
        assert cost["ingest_prompt_tokens"] > 0
        assert record["response"]["retrieved"]
    for record in second:
        assert record["cost"]["ingest_cached"] == record["cost"]["ingest_calls"] > 10
    def retrieved(records: list[dict[str, Any]]) -> dict[str, Any]:  # records come as done
        return {r["question_id"]: r["response"]["retrieved"] for r in records}

    assert retrieved(first) == retrieved(second)


LOCAL = pytest.mark.skipif(
    __import__("importlib").util.find_spec("xllamacpp") is None,
    reason="the local extra (xllamacpp) is not installed")


@LOCAL
def test_local_model_end_to_end_on_a_tiny_synth_tier(tmp_path):
    """Mem0 with SmolLM2 (llama.cpp) as the reader and the static embedder, fully offline.
    SmolLM2's context (8192) cannot hold Mem0's ~8.5k-token extraction prompt, so Mem0
    stores the raw messages here (infer=false); extraction is tested above."""
    from typer.testing import CliRunner

    from memgauge.cli import app
    from memgauge.models._local_files import is_pulled

    if not is_pulled("smollm2"):
        pytest.skip("SmolLM2 is not on this machine: run `memgauge models pull smollm2`")
    bench = _synth(tmp_path)
    out = tmp_path / "run"
    args = ["run", "--bench", "synth", "--data", str(bench), "--tier", "4k", "--system", "mem0",
            "--system-option", "infer=false", "--system-option", "top_k=5",
            "--model", "local:smollm2", "--model-option", "n_ctx=4096", "--max-tokens", "16",
            "--concurrency", "1", "--out", str(out)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    records = _records(out)
    assert len(records) == 2 and all(r["status"] == "ok" for r in records), records
    for record in records:
        chosen = [r for r in record["response"]["retrieved"] if r["chosen"]]
        assert 1 <= len(chosen) <= 5
        assert record["cost"]["memory_items"] > 0 and record["cost"]["ingest_calls"] == 0
        assert record["response"]["usage"]["input_tokens"] > 0
    manifest = json.loads((out / "manifest.json").read_text())
    system = manifest["system"]
    assert system["infer"] is False and system["top_k"] == 5 and system["embedding_dims"] == 64
    assert system["mem0ai"].startswith("2.")


def test_without_the_extra_the_error_says_what_to_install(monkeypatch):
    import sys

    from memgauge.systems import mem0_system

    mem0_system._mem0.cache_clear()
    monkeypatch.setitem(sys.modules, "mem0", None)  # import mem0 now raises ImportError
    try:
        with pytest.raises(ConfigError, match=re.escape("memgauge[agents]")):
            lookup("system", "mem0")(SystemContext(model=ScriptedModel(fn=default_fn)))
    finally:
        mem0_system._mem0.cache_clear()
