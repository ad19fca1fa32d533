"""``--system letta`` (systems/letta_system.py) through the real letta-client against a
loopback stand-in of the Letta REST routes it calls (tests/systems/letta_standin.py; its
replies are validated against letta-client's own models): what is stored per session, what
is retrieved and read, the pre-flight, retries and malformed replies. The real Letta server
is not run here: design 0028 says why. Skipped when letta-client is absent."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("letta_client", reason="the agents extra (letta-client) is not installed")

from helpers.memory_history import play, question
from helpers.memory_history import sessions as shared_sessions
from letta_standin import LettaStandIn

from memgauge.errors import ConfigError
from memgauge.models import Message, TextPart
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.schema import (
    BenchmarkInfo,
    Episode,
    Question,
    Response,
    Session,
    Turn,
)
from memgauge.systems import SystemContext


@pytest.fixture
def letta():
    with LettaStandIn() as standin:
        yield standin


def sessions() -> list[Session]:
    """The shared history, with an empty turn in s1: nothing to store."""
    history = shared_sessions()
    history[0].turns.append(Turn(turn_id="s1:3", role="user", text=""))
    return history


class Reader(ScriptedModel):
    """The run's model: answers "Rex" and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[list[Message]] = []
        super().__init__(fn=self._fn)

    def _fn(self, messages: list[Message], qid: str | None) -> str:
        self.asked.append(messages)
        return "Rex"


def build(standin: LettaStandIn, model: Any = None, **options: str) -> Any:
    ctx = SystemContext(model=model or Reader(),
                        options={"base_url": standin.base_url, **options})
    return lookup("system", "letta")(ctx)


def episode_of(make: Any, history: list[Session] | None = None,
               q: Question | None = None) -> tuple[Response, Any]:
    system = make()
    history = sessions() if history is None else history
    return asyncio.run(play(system, history, q, end_episode=True)), system


def user_text(messages: list[Message]) -> str:
    return "\n".join(p.text for m in messages if m.role == "user" for p in m.parts
                     if isinstance(p, TextPart))


def test_each_turn_is_one_tagged_passage_in_order_on_an_empty_agent_deleted_at_the_end(letta):
    response, _ = episode_of(build(letta, agent_model="openai/stand-in",
                                   embedding="openai/embed"))
    assert response.error is None
    preflight, agent = list(letta.agents)  # the pre-flight's probe agent, then the episode's
    body = letta.agents[agent]
    assert body["memory_blocks"] == [] and body["include_base_tools"] is False
    assert body["model"] == "openai/stand-in" and body["embedding"] == "openai/embed"
    stored = [(p["text"], p["tags"]) for p in letta.passages[agent]]
    assert stored == [
        ("[2023/05/01] user: My dog is called Rex.", ["session:s1", "turn:s1:1"]),
        ("[2023/05/01] assistant: What a fine name.", ["session:s1", "turn:s1:2"]),
        ("[2023/06/01] user: I moved to Lisbon in June. [Image: a red bicycle]",
         ["session:s2", "turn:s2:1"])]
    assert letta.deleted == [preflight, agent]
    memory = response.meta["memory"]
    assert memory["items"] == 3 and memory["bytes"] == sum(len(t.encode()) for t, _ in stored)


def test_an_embedding_endpoint_goes_to_the_server_as_the_agents_embedding_config(letta):
    response, system = episode_of(build(letta, embedding_base_url="http://127.0.0.1:1/v1",
                                        embedding_model="bag-of-words", embedding_dim="64"))
    assert response.error is None
    for body in letta.agents.values():  # the probe's and the episode's
        assert body["embedding_config"] == {
            "embedding_endpoint_type": "openai", "embedding_endpoint": "http://127.0.0.1:1/v1",
            "embedding_model": "bag-of-words", "embedding_dim": 64}
        assert "embedding" not in body
    assert system.describe()["embedding"].startswith("openai-compatible bag-of-words (64-d)")


def test_the_top_k_passages_are_read_and_the_whole_ranking_is_recorded_by_turn(letta):
    model = Reader()
    response, _ = episode_of(build(letta, model, top_k="1"))
    assert response.text == "Rex"
    assert letta.searches[-1]["query"] == ["What is my dog called?"]
    assert letta.searches[-1]["top_k"] == ["50"]  # the ranking, beyond the prompt's top_k
    prompt = user_text(model.asked[-1])
    assert "- [2023/05/01] user: My dog is called Rex." in prompt
    assert "Lisbon" not in prompt and "Question Date: 2023/07/01" in prompt
    got = [(r.pointer.session_id, r.pointer.turn_id, r.chosen) for r in response.retrieved]
    assert got[0] == ("s1", "s1:1", True)
    assert sorted(got[1:]) == [("s1", "s1:2", False), ("s2", "s2:1", False)]
    assert [p["content"] for p in response.meta["letta"]["passages"]] == [
        "[2023/05/01] user: My dog is called Rex."]


def test_search_results_without_ids_as_letta_0_11_sends_them_are_read():
    with LettaStandIn(version="0.11.7", result_ids=False) as standin:
        response, _ = episode_of(build(standin, top_k="1"))
    assert response.error is None and response.text == "Rex"
    assert response.retrieved[0].pointer.turn_id == "s1:1"
    assert response.meta["letta"]["passages"][0]["id"] is None


def test_a_passage_without_tags_is_shown_but_not_counted_as_a_pointer(letta):
    make = build(letta, top_k="1")
    system = make()
    episode = Episode(episode_id="e1", sessions=sessions(), questions=[question()],
                      benchmark=BenchmarkInfo(name="t"))

    async def go() -> Response:
        await system.reset(episode)
        for s in sessions():
            await system.ingest(s)
        letta.passages[system.agent_id][0]["tags"] = None  # the best match, untagged
        return await system.answer(question())

    response = asyncio.run(go())
    assert response.meta["letta"]["passages"][0]["tags"] is None
    assert all(not r.chosen for r in response.retrieved)  # the prompt's only passage had none
    assert {r.pointer.turn_id for r in response.retrieved} == {"s1:2", "s2:1"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_server_is_one_config_error_before_any_item():
    ctx = SystemContext(model=Reader(),
                        options={"base_url": f"http://127.0.0.1:{_closed_port()}"})
    with pytest.raises(ConfigError, match="nothing answers at http://127.0.0.1:.*base_url"):
        lookup("system", "letta")(ctx)


def test_a_refused_token_is_a_config_error_naming_its_variable(monkeypatch):
    monkeypatch.setenv("MY_LETTA_TOKEN", "wrong")
    with LettaStandIn(token="right") as standin:
        with pytest.raises(ConfigError, match=r"refused the token in \$MY_LETTA_TOKEN.*401"):
            build(standin, token_env="MY_LETTA_TOKEN")
        monkeypatch.setenv("MY_LETTA_TOKEN", "right")
        response, _ = episode_of(build(standin, token_env="MY_LETTA_TOKEN"))
    assert response.error is None and response.text == "Rex"


def test_a_handle_the_server_does_not_know_is_a_config_error_with_its_message(letta):
    letta.plan["create_agent"] = [400]
    with pytest.raises(ConfigError, match="could not create an agent.*stand-in failure 400"
                                          ".*agent_model"):
        build(letta, agent_model="nope/nope")


@pytest.mark.parametrize(("options", "says"), [
    ({"top_k": "0"}, "top_k=0: must be at least 1"),
    ({"max_attempts": "0"}, "max_attempts=0"),
    ({"timeout": "0"}, "timeout=0"),
    ({"base_url": "localhost:8283"}, "use http://HOST:PORT"),
    ({"token_env": "NO_SUCH_VARIABLE_FOR_LETTA"}, "NO_SUCH_VARIABLE_FOR_LETTA: that variable"),
    ({"topk": "3"}, "letta has no such option"),
    ({"embedding_base_url": "http://127.0.0.1:1/v1"}, "embedding_dim go together"),
    ({"embedding": "openai/e", "embedding_base_url": "http://h/v1", "embedding_model": "e",
      "embedding_dim": "8"}, "in place of embedding"),
    ({"embedding_base_url": "http://h/v1", "embedding_model": "e", "embedding_dim": "0"},
     "embedding_dim=0"),
])
def test_option_mistakes_are_named_before_any_request(letta, options, says):
    with pytest.raises(ConfigError, match=re.escape(says)):
        build(letta, **options)
    assert letta.calls == []


def test_a_500_at_ingest_is_retried_and_the_passage_stored_once(letta):
    make = build(letta)
    letta.plan["insert"] = [500]
    response, _ = episode_of(make)
    assert response.error is None
    agent = list(letta.agents)[-1]
    assert letta.calls.count("insert") == 4  # three passages, the first one twice
    assert len(letta.passages[agent]) == 3


def test_a_search_that_keeps_failing_is_a_system_error_with_the_servers_message(letta):
    make = build(letta, max_attempts="2")
    letta.plan["search"] = [503, 503]
    response, _ = episode_of(make)
    assert response.text is None and response.retrieved == []
    assert response.error.kind == "system_error" and response.error.attempts == 2
    assert "HTTP 503: stand-in failure 503" in response.error.message
    assert "/archival-memory/search" in response.error.message
    assert letta.deleted[-1] == list(letta.agents)[-1]  # the agent still goes


def test_a_search_that_times_out_is_retried_then_a_system_error(letta):
    make = build(letta, max_attempts="2", timeout="0.2")
    letta.hang_s = 1.0
    letta.plan["search"] = ["hang", "hang"]
    response, _ = episode_of(make)
    assert response.error.kind == "system_error" and response.error.attempts == 2
    assert "archival-memory/search: no reply in time" in response.error.message
    assert letta.calls.count("search") == 2


def test_a_client_error_is_not_retried(letta):
    make = build(letta)
    letta.plan["search"] = [422]
    response, _ = episode_of(make)
    assert response.error.kind == "system_error" and response.error.attempts == 1
    assert letta.calls.count("search") == 1


@pytest.mark.parametrize(("step", "says"), [
    ("garbage", "the reply is not JSON: <html>proxy error</html>"),
    ("bad_shape", "results.0.content: Field required"),
])
def test_a_malformed_search_reply_is_a_bad_response_naming_the_field(letta, step, says):
    make = build(letta)
    letta.plan["search"] = [step]
    response, _ = episode_of(make)
    assert response.error.kind == "bad_response" and says in response.error.message
    assert response.text is None


def test_a_malformed_agent_reply_fails_the_episode_naming_the_field(letta):
    from memgauge.systems.letta_system import LettaReplyError

    make = build(letta)
    letta.plan["create_agent"] = ["bad_shape"]
    with pytest.raises(LettaReplyError, match="POST /v1/agents/: id: expected"):
        episode_of(make)


def _synth(tmp_path: Any) -> Any:
    from typer.testing import CliRunner

    from memgauge.cli import app

    bench = tmp_path / "bench"
    made = CliRunner().invoke(app, ["generate", "synth", "--out", str(bench), "--questions", "2",
                                    "--tiers", "4k"])
    assert made.exit_code == 0, made.output
    return bench


def _run(tmp_path: Any, bench: Any, base_url: str, name: str,
         model_url: str = "http://127.0.0.1:9/v1") -> tuple[Any, Any]:
    from typer.testing import CliRunner

    from memgauge.cli import app

    out = tmp_path / name
    done = CliRunner().invoke(app, [
        "run", "--bench", "synth", "--data", str(bench), "--tier", "4k", "--system", "letta",
        "--system-option", f"base_url={base_url}", "--system-option", "max_attempts=1",
        "--model", "openai:stub", "--base-url", model_url, "--out", str(out)])
    return done, out


def test_a_run_stores_every_session_answers_every_question_and_deletes_every_agent(
        tmp_path, stub, monkeypatch):
    monkeypatch.setenv("LETTA_API_KEY", "s3cret-letta-token")  # the default token_env
    with LettaStandIn(token="s3cret-letta-token") as letta:
        bench = _synth(tmp_path)
        done, out = _run(tmp_path, bench, letta.base_url, "ok", stub.base_url)
    assert done.exit_code == 0, done.output
    for written in out.rglob("*"):  # the token is sent, never recorded
        assert not written.is_file() or b"s3cret-letta-token" not in written.read_bytes()
    described = json.loads((out / "manifest.json").read_text())["system"]
    assert described["name"] == "letta" and described["server"]["version"] == "0.16.8"
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["status"] == "ok" for r in records)
    assert all(r["response"]["retrieved"] for r in records)
    assert all(r["cost"]["memory_items"] > 0 for r in records)
    assert sorted(letta.deleted) == sorted(letta.agents)  # the probe and one per episode
    assert len(letta.agents) == 1 + len({r["episode_id"] for r in records})
    # Each episode's agent went when its episode ended (the runner's end_episode, sent by
    # the episode's async client), not in the sweep at the run's close (the sync client).
    assert [who.split("/")[0] for who in letta.deleted_by] == ["Letta"] + ["AsyncLetta"] * 2


def test_a_run_whose_server_fails_at_ingest_records_system_errors(tmp_path, letta, stub):
    bench = _synth(tmp_path)
    letta.plan["insert"] = [500] * 1000
    done, out = _run(tmp_path, bench, letta.base_url, "failing", stub.base_url)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2, done.output
    for r in records:
        error = r["response"]["error"]
        assert r["status"] == "error" and error["kind"] == "system_error"
        assert "archival-memory: HTTP 500: stand-in failure 500" in error["message"]
    assert sorted(letta.deleted) == sorted(letta.agents)


def test_a_run_against_nothing_stops_before_the_first_item(tmp_path):
    bench = _synth(tmp_path)
    done, out = _run(tmp_path, bench, f"http://127.0.0.1:{_closed_port()}", "nothing")
    assert done.exit_code != 0
    assert "nothing answers at" in done.output and "Traceback" not in done.output
    assert not (out / "records.jsonl").exists()


def test_without_the_extra_the_error_says_what_to_install(monkeypatch, letta):
    import sys

    from memgauge.systems import letta_system

    letta_system._letta.cache_clear()
    monkeypatch.setitem(sys.modules, "letta_client", None)  # importing it now fails
    try:
        with pytest.raises(ConfigError, match=re.escape("memgauge[agents]")):
            build(letta)
    finally:
        letta_system._letta.cache_clear()


# -- a real Letta server, when one is at hand ------------------------------------------------
# MEMGAUGE_LETTA_SERVER: the `letta` command of a venv holding a Letta REST server (never the
# test environment's own: its dependencies clash). Design 0028 gives the recipe that worked
# offline here (letta 0.11.7 with SQLite, two pins and a one-line fix).
LETTA_SERVER = os.environ.get("MEMGAUGE_LETTA_SERVER")


@pytest.mark.skipif(not LETTA_SERVER, reason="MEMGAUGE_LETTA_SERVER (a Letta server) not set")
def test_a_real_letta_server_stores_searches_and_forgets_by_turn(tmp_path):
    from embeddings_server import EmbeddingsServer
    from letta_client import Letta

    history = [
        Session(session_id="s1", date="2023/05/01", turns=[
            Turn(turn_id="s1:1", role="user", text="My bike is red."),
            Turn(turn_id="s1:2", role="assistant", text="Nice.")]),
        Session(session_id="s2", date="2023/06/01", turns=[
            Turn(turn_id="s2:1", role="user", text="My car is blue.")])]
    with EmbeddingsServer(model="colours") as emb:
        port = _closed_port()
        env = {**os.environ, "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-loopback",
               "OPENAI_API_BASE": emb.url}
        env.pop("LETTA_PG_URI", None)  # SQLite in tmp_path
        log = (tmp_path / "letta.log").open("wb")
        server = subprocess.Popen([LETTA_SERVER, "server", "--host", "127.0.0.1", "--port",
                                   str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                  cwd=tmp_path)  # it writes openapi_letta.json where it runs
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_for(base, server, tmp_path / "letta.log")
            model = Reader()
            make = build(SimpleNamespace(base_url=base), model, top_k="1",
                         agent_model="openai/colours", embedding_base_url=emb.url,
                         embedding_model="colours", embedding_dim="3")
            response, _ = episode_of(make, history, question("Which of my things is red?"))
            with Letta(base_url=base, max_retries=0) as client:
                left = client.agents.list()
        finally:
            server.terminate()
            server.wait(60)
            log.close()
    assert response.error is None, response.error
    got = [(r.pointer.session_id, r.pointer.turn_id, r.chosen) for r in response.retrieved]
    assert got[0] == ("s1", "s1:1", True) and len(got) == 3
    assert "- [2023/05/01] user: My bike is red." in user_text(model.asked[-1])
    assert response.meta["memory"]["items"] == 3
    assert list(left) == []  # the probe and the episode's agent were deleted
    assert emb.text_requests()  # Letta embedded through the loopback endpoint


def _wait_for(base: str, server: Any, log: Any) -> None:
    import time
    import urllib.request

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the Letta server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/v1/health/", timeout=2):
                return
        except OSError:
            time.sleep(1)
    pytest.fail(f"the Letta server did not start in 180 s: {log.read_text()[-2000:]}")
