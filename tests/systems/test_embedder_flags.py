"""``--embedder``/``--embedder-base-url`` and ``--image-embedder``/``--image-embedder-base-url``
on ``memgauge run`` and ``serve-memory``: they reach the system, are the run identity the
system options of the same names are, are checked before the first request (spec, system,
a conflicting ``--system-option``, the endpoint's pre-flight)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from embeddings_server import EmbeddingsServer
from helpers.datasets import write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import ConfigError
from memgauge.runner import RunConfig


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    with EmbeddingsServer(model="tiny-embed") as s:
        yield s


def _run(tmp_path: Path, stub: StubServer, *extra: str, out: str = "r") -> Any:
    data = write_memlens(tmp_path, 2)
    return CliRunner().invoke(app, [
        "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
        "--model", "openai:m", "--base-url", stub.base_url, "--out", str(tmp_path / out),
        "--system", "rag", "--no-cache", *extra])


def _manifest(tmp_path: Path, out: str = "r") -> dict[str, Any]:
    return json.loads((tmp_path / out / "manifest.json").read_text())


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_embedder_flags_reach_rag_and_its_manifest(tmp_path: Path,
                                                   server: EmbeddingsServer) -> None:
    with StubServer() as stub:
        res = _run(tmp_path, stub, "--system-option", "retriever=embed",
                   "--embedder", "openai:tiny-embed", "--embedder-base-url", server.url)
    assert res.exit_code == 0, res.output
    assert server.gets == ["/v1/models"]  # the pre-flight, once
    assert server.bodies and all(b["path"] == "/v1/embeddings" and b["model"] == "tiny-embed"
                                 and isinstance(b["input"], list) for b in server.bodies)
    assert any("What colour was mug number 0?" in b["input"] for b in server.bodies)
    manifest = _manifest(tmp_path)
    assert manifest["system"]["embedder"] == "openai:tiny-embed"
    assert manifest["config"]["identity"]["system_options"] == {
        "retriever": "embed", "embedder": "openai:tiny-embed", "embedder_base_url": server.url}


def test_image_embedder_flags_reach_the_visual_retriever(tmp_path: Path,
                                                         server: EmbeddingsServer) -> None:
    with StubServer() as stub:
        res = _run(tmp_path, stub, "--system-option", "retriever=visual",
                   "--image-embedder", "openai:tiny-embed",
                   "--image-embedder-base-url", server.url)
    assert res.exit_code == 0, res.output
    assert len(server.image_requests()) == 2  # one mug photo per item
    assert all(b["messages"][0]["content"][0]["type"] == "image_url"
               for b in server.image_requests())
    system = _manifest(tmp_path)["system"]
    assert system["image_embedder"] == "openai:tiny-embed"
    assert "tiny-embed" in system["image_similarity"]


def test_the_embedders_send_the_runs_api_key(tmp_path: Path, server: EmbeddingsServer,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", "k-123")
    with StubServer() as stub:
        res = _run(tmp_path, stub, "--system-option", "retriever=hybrid",
                   "--embedder", "openai:tiny-embed", "--embedder-base-url", server.url,
                   "--image-embedder", "openai:tiny-embed",
                   "--image-embedder-base-url", server.url, "--api-key-env", "MY_EMBED_KEY")
    assert res.exit_code == 0, res.output
    assert server.image_requests() and server.text_requests()
    assert server.auth and set(server.auth) == {"Bearer k-123"}


def test_a_malformed_image_embedding_is_recorded_as_a_system_error(
        tmp_path: Path, server: EmbeddingsServer) -> None:
    server.override = [lambda body: {"data": [{"index": 0, "embedding": ["x", 1, 2]}]}] * 10
    with StubServer() as stub:
        res = _run(tmp_path, stub, "--system-option", "retriever=visual",
                   "--image-embedder", "openai:tiny-embed",
                   "--image-embedder-base-url", server.url)
    assert res.exit_code == 3, res.output  # some questions failed, recorded
    records = [json.loads(line) for line in
               (tmp_path / "r" / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for rec in records:
        error = rec["response"]["error"]
        assert error["kind"] == "system_error"
        assert f"{server.url}/embeddings: the reply's data[].embedding" in error["message"]
        assert not rec["scores"]  # an error is never scored as a wrong answer
    assert stub.requests == []  # nothing reached the reader with a made-up ranking


def _config(**kw: Any) -> RunConfig:
    return RunConfig(bench="memlens", data="d.json", out="r", **{"system": "rag", **kw})


def test_a_flag_and_its_system_option_are_one_identity() -> None:
    flag = _config(embedder="model2vec", system_options={"retriever": "embed"})
    option = _config(system_options={"retriever": "embed", "embedder": "model2vec"})
    assert flag.identity() == option.identity()
    assert flag.identity() != _config(system_options={"retriever": "embed"}).identity()
    image = _config(image_embedder="openai:c", image_embedder_base_url="http://u:pw@h/v1",
                    system_options={"retriever": "visual"})
    assert image.identity()["system_options"] == {
        "retriever": "visual", "image_embedder": "openai:c",
        "image_embedder_base_url": "http://u:***@h/v1"}  # a password is not what a run measures
    # without the flags, the identity is what it was before they existed
    assert _config(system_options={"top_k": "3"}).identity()["system_options"] == {"top_k": "3"}


@pytest.mark.parametrize(("extra", "says"), [
    (["--embedder", "model2vec", "--system-option", "embedder=model2vec"],
     ("--embedder model2vec and --system-option embedder=model2vec say the same thing: "
     "give one of them")),
    (["--image-embedder-base-url", "http://h/v1", "--system-option",
      "image_embedder_base_url=http://g/v1"],
     ("--image-embedder-base-url http://h/v1 and --system-option "
     "image_embedder_base_url=http://g/v1 say the same thing")),
    (["--embedder", "nope"], "--embedder 'nope': unknown embedder; use one of model2vec"),
    (["--embedder", "openai:e"], "--embedder openai:e needs --embedder-base-url"),
    (["--embedder", "model2vec", "--embedder-base-url", "http://h/v1"],
     "--embedder-base-url http://h/v1: only an openai:<model> embedder has an endpoint"),
    (["--embedder", "model2vec:no-such-folder"], "no such folder"),
    (["--image-embedder", "clip"], "--image-embedder 'clip': use one of openai:<model>"),
    (["--image-embedder", "openai:c"], ("--image-embedder openai:c needs "
                                       "--image-embedder-base-url")),
    (["--embedder", "model2vec", "--system", "full-context"],
     "--embedder: the system full-context embeds nothing with it"),
])
def test_embedder_flag_mistakes_stop_before_any_request(tmp_path: Path, extra: list[str],
                                                        says: str) -> None:
    with StubServer() as stub:
        res = _run(tmp_path, stub, "--system-option", "retriever=embed", *extra)
    assert res.exit_code == 2, res.output
    assert says in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output
    assert stub.requests == []
    assert not (tmp_path / "r" / "records.jsonl").exists()


@pytest.mark.parametrize(("extra", "says"), [
    (["--system-option", "retriever=embed", "--embedder", "openai:e", "--embedder-base-url"],
     "nothing answers at the embedder endpoint"),
    (["--system-option", "retriever=visual", "--image-embedder", "openai:c",
      "--image-embedder-base-url"], "nothing answers at the image embedder endpoint"),
])
def test_a_dead_embedder_endpoint_fails_the_pre_flight(tmp_path: Path, extra: list[str],
                                                       says: str) -> None:
    dead = _dead_url()
    with StubServer() as stub:
        res = _run(tmp_path, stub, *extra, dead)
    assert res.exit_code == 2, res.output
    output = " ".join(res.output.split())
    assert says in output and dead in output, res.output
    assert stub.requests == []  # no question was asked


def test_serve_memory_takes_the_flags_and_pre_flights_them(server: EmbeddingsServer) -> None:
    import asyncio

    from memgauge.schema import Session, Turn
    from memgauge.systems._serve import build_factory

    config = RunConfig(bench="-", data="-", out="-", system="rag", model="none:",
                       system_options={"retriever": "embed"}, cache=False,
                       embedder="openai:tiny-embed", embedder_base_url=server.url)
    factory, closers = build_factory(config)
    assert server.gets == ["/v1/models"]
    made = factory()
    asyncio.run(made.ingest(Session(session_id="s", turns=[
        Turn(turn_id="t", role="user", text="a green door")])))
    assert server.bodies[-1]["model"] == "tiny-embed"
    assert server.bodies[-1]["input"] == ["a green door"]
    for close in closers:
        result = close()
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    with pytest.raises(ConfigError, match="nothing answers at the embedder endpoint"):
        build_factory(RunConfig(bench="-", data="-", out="-", system="rag", model="none:",
                                system_options={"retriever": "embed"}, cache=False,
                                embedder="openai:tiny-embed", embedder_base_url=_dead_url()))


# --- the memory agents that embed: fact-memory and summary-memory with retriever=embed -------

_SUMMARIES = {"fence": "The user painted the fence red.", "car": "The user bought a green car.",
              "boat": "The user sailed a blue boat."}


def _summaries(messages: list[Any], qid: str | None) -> str:
    from test_agents_common import text_of

    if qid is not None:
        return "ok"
    body = text_of(messages[1:])
    if "Summarise one session" in text_of(messages[:1]):
        return json.dumps({"summary": next(v for k, v in _SUMMARIES.items() if k in body)})
    return json.dumps({"profile": "p"})


def _agent_sessions() -> list[Any]:
    from test_agents_common import session

    return [session("s1", "2024/01/01", "Did the fence today.", "Nice."),
            session("s2", "2024/02/01", "New car!", "Vroom."),
            session("s3", "2024/03/01", "Out on the boat.", "Ahoy.")]


def test_summary_memory_ranks_through_the_named_embedder(server: EmbeddingsServer) -> None:
    from test_agents_common import question, run_agent

    [r1, r2], _, agent = run_agent(
        "summary-memory", _summaries, _agent_sessions(),
        [question("Which one was green?"), question("And which was blue?")],
        options={"retriever": "embed", "top_k": 1, "embedder": "openai:tiny-embed",
                 "embedder_base_url": server.url})
    assert r1.retrieved[0].pointer.session_id == "s2"  # green: the endpoint's vectors decide
    assert r2.retrieved[0].pointer.session_id == "s3"
    inputs = [t for b in server.bodies for t in b["input"]]
    assert all(b["model"] == "tiny-embed" for b in server.bodies)
    for summary in _SUMMARIES.values():  # each summary embedded once, not once per question
        assert inputs.count(f"2024/0{list(_SUMMARIES.values()).index(summary) + 1}/01 "
                           f"{summary}") == 1
    assert agent.describe()["embedder"] == "openai:tiny-embed"


def _facts(messages: list[Any], qid: str | None) -> str:
    from test_agents_common import system_text, text_of

    if qid is not None:
        return "ok"
    if "write down the facts" in system_text(messages):
        colour = next(c for c in ("red", "green", "blue") if c in text_of(messages[1:]))
        return json.dumps({"facts": [{"fact": f"The user's {colour} kite", "turn": "T1"}]})
    return json.dumps({"decisions": [{"new": 1, "op": "ADD"}]})


def test_fact_memory_ranks_through_the_named_embedder(server: EmbeddingsServer) -> None:
    from test_agents_common import question, run_agent, session

    config = _config(system="fact-memory", embedder="openai:tiny-embed",
                     embedder_base_url=server.url, system_options={"retriever": "embed"})
    config.check()  # fact-memory declares the flag
    sessions = [session(f"s{i}", f"2024/0{i}/01", f"A {c} kite.", "Nice.")
                for i, c in enumerate(("red", "green", "blue"), 1)]
    [r], _, agent = run_agent("fact-memory", _facts, sessions, [question("the green one?")],
                              options={**config.effective_system_options(), "top_k": 1})
    assert r.retrieved[0].pointer.session_id == "s2"
    assert server.bodies and all(b["model"] == "tiny-embed" for b in server.bodies)
    assert ["the green one?"] in [b["input"][-1:] for b in server.bodies]
    assert agent.describe()["embedder"] == "openai:tiny-embed"


@pytest.mark.parametrize("agent", ["fact-memory", "summary-memory"])
def test_an_agent_embedder_without_retriever_embed_is_a_config_error(agent: str) -> None:
    from test_agents_common import run_agent

    with pytest.raises(ConfigError, match=f"embedder: {agent} with retriever=bm25 embeds "
                                          r"nothing \(use retriever=embed\)"):
        run_agent(agent, _summaries, [], [], options={"embedder": "model2vec"})


def test_an_agent_without_an_embedder_option_describes_itself_as_before() -> None:
    from test_agents_common import run_agent

    _, _, agent = run_agent("summary-memory", _summaries, [], [],
                            options={"retriever": "embed"})
    assert "embedder" not in agent.describe() and agent.embedded is None
