"""``--system langmem`` (systems/langmem_system.py) against a loopback OpenAI-compatible server
that answers LangMem's manager with tool calls: what each session stored (facts, session ids,
dates, turns), what an answer retrieved, updates and removals, option and setup mistakes, the
response cache, no network. Skipped when the ``agents`` extra (langmem) is absent; the last
test runs SmolLM2 through llama.cpp when it is on the machine."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langmem", reason="the agents extra (langmem) is not installed")

from helpers.memory_history import play, question, sessions
from helpers.scripted_server import ScriptedServer, completion

from memgauge.errors import ConfigError
from memgauge.models.openai_compat import ModelSettings, OpenAICompatModel, openai_chat
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.schema import (
    BenchmarkInfo,
    Episode,
    Response,
    Session,
    Turn,
)
from memgauge.systems import SystemContext

# How LangMem shows a turn to its manager: langchain's message header, then our label.
TURN = re.compile(r"\[(?P<date>[^\]]*) · turn (?P<turn>[^\]]+)\] (?P<text>[^\n]*)")


def tool_reply(calls: list[tuple[str, dict[str, Any]]]) -> tuple[int, dict[str, Any]]:
    tool_calls = [{"id": f"call{i}", "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args)}}
                  for i, (name, args) in enumerate(calls)]
    return 200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "finish_reason": "tool_calls",
                              "message": {"role": "assistant", "content": None,
                                          "tool_calls": tool_calls}}],
                 "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}}


def manager_prompt(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))


def one_memory_per_user_turn(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A memory for each user turn of the session shown, citing that turn."""
    session = manager_prompt(body).split("<session>")[-1]
    calls = []
    for block in session.split("Human Message")[1:]:
        found = TURN.search(block)
        if found:
            calls.append(("Memory", {"content": f"On {found['date']}: {found['text']}",
                                     "turns": [found["turn"]]}))
    return calls


def server_fn(manager: Callable[[dict[str, Any]], list[tuple[str, dict[str, Any]]]]
              = one_memory_per_user_turn, answer: str = "Rex"
              ) -> Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]:
    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "tools" in body:
            return tool_reply(manager(body))
        return 200, completion(answer)
    return reply




def endpoint_model(server: ScriptedServer) -> Any:
    return openai_chat("m", ModelSettings(base_url=server.base_url, max_attempts=1))


class LocalLike(OpenAICompatModel):
    """As a local: model: named by its file, not its server's port; a timeout scaled with
    the prompt (and the speed measured at start: ``per_byte``); never resent."""

    context_tokens = 1000
    per_byte = 0.1

    def cache_identity(self) -> dict[str, Any]:
        return {"model": "gguf:0123", "base_url": None}

    def request_timeout(self, body_bytes: int, max_tokens: int) -> float:
        return body_bytes * self.per_byte + max_tokens

    def timeout_retryable(self) -> bool:
        return False


def run(server: ScriptedServer, options: dict[str, str] | None = None,
        history: list[Session] | None = None, cache: Any = None,
        model: Any = None) -> tuple[Response, Any]:
    ctx = SystemContext(model=model or endpoint_model(server), options=options or {},
                        cache=cache)
    system = lookup("system", "langmem")(ctx)()
    return asyncio.run(play(system, history)), system


def stored(system: Any) -> dict[str, dict[str, Any]]:
    items = asyncio.run(system.store.asearch(("memories", "memgauge"), limit=100))
    return {i.key: i.value for i in items}


def tool_requests(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if "tools" in r]


def test_each_session_is_one_manager_call_storing_facts_with_sessions_dates_and_turns():
    with ScriptedServer([], after=server_fn()) as server:
        response, system = run(server)
    calls = tool_requests(server)
    assert len(calls) == 2  # one LangMem manager call per session, in order
    first, second = (manager_prompt(c) for c in calls)
    assert "[2023/05/01 · turn s1:1] My dog is called Rex." in first
    assert "[2023/05/01 · turn s1:2] What a fine name." in first
    assert "[2023/06/01 · turn s2:1] I moved to Lisbon in June. [Image: a red bicycle]" in second
    # the session's most similar stored memories are shown to the manager, by their keys
    assert "<instance id=s1#1" in second and "My dog is called Rex" in second
    assert {t["function"]["name"] for t in calls[0]["tools"]} >= {"Memory"}
    memories = stored(system)
    assert memories == {
        "s1#1": {"content": "On 2023/05/01: My dog is called Rex.",
                 "sources": [{"session_id": "s1", "session_date": "2023/05/01",
                              "turn_ids": ["s1:1"]}]},
        "s2#1": {"content": "On 2023/06/01: I moved to Lisbon in June. [Image: a red bicycle]",
                 "sources": [{"session_id": "s2", "session_date": "2023/06/01",
                              "turn_ids": ["s2:1"]}]}}
    assert response.text == "Rex" and response.error is None
    meta = response.meta
    assert meta["ingest"] == {"calls": 2, "cached": 0, "prompt_tokens": 600,
                              "completion_tokens": 40}
    assert meta["memory"] == {"items": 2, "bytes": sum(len(v["content"].encode())
                                                       for v in memories.values())}
    assert meta["langmem"]["inserted"] == 2 and meta["langmem"]["no_tool_calls"] == 0
    assert meta["langmem"]["repair_calls"] == meta["langmem"]["unchanged_sessions"] == 0


def test_the_answer_reads_the_top_k_and_retrieved_keeps_the_whole_ranking_with_scores():
    with ScriptedServer([], after=server_fn()) as server:
        response, _ = run(server, {"top_k": "1"})
    answer = [r for r in server.requests if "tools" not in r][-1]
    prompt = answer["messages"][-1]["content"]
    listed = [line for line in prompt.splitlines() if line.startswith("- ")]
    assert len(listed) == 1 and "Rex" in listed[0] and "[2023/05/01]" in listed[0]
    assert "What is my dog called?" in prompt
    items = response.retrieved
    assert [(i.pointer.session_id, i.pointer.turn_id, i.chosen) for i in items] == [
        ("s1", "s1:1", True), ("s2", "s2:1", False)]
    assert all(isinstance(i.score, float) for i in items)
    assert items[0].score > items[1].score  # the store's cosine ranking, best first
    assert [m["key"] for m in response.meta["langmem"]["memories"]] == ["s1#1"]


def test_a_patch_updates_the_memory_with_the_new_session_first_and_a_removal_deletes():
    def manager(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        prompt = manager_prompt(body)
        if "turn s1:1" in prompt:
            return [("Memory", {"content": "User has a dog, Rex", "turns": ["s1:1"]}),
                    ("Memory", {"content": "User lives in Porto", "turns": ["s1:2"]})]
        return [("PatchDoc", {"json_doc_id": "s1#1", "planned_edits": "rename",
                              "patches": [{"op": "replace", "path": "/content",
                                           "value": "User has a dog, Rex, and a bicycle"}]}),
                ("RemoveDoc", {"json_doc_id": "s1#2"})]

    with ScriptedServer([], after=server_fn(manager)) as server:
        response, system = run(server)
    assert stored(system) == {"s1#1": {
        "content": "User has a dog, Rex, and a bicycle",
        "sources": [{"session_id": "s2", "session_date": "2023/06/01", "turn_ids": []},
                    {"session_id": "s1", "session_date": "2023/05/01",
                     "turn_ids": ["s1:1"]}]}}
    counts = response.meta["langmem"]
    assert (counts["inserted"], counts["updated"], counts["removed"]) == (2, 1, 1)
    # the newest source names no turn: its session, then the older source's session
    assert [(i.pointer.session_id, i.pointer.turn_id) for i in response.retrieved] == [
        ("s2", None), ("s1", None)]


def test_turns_the_session_does_not_have_are_dropped_and_a_reply_without_tools_is_counted():
    def manager(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        if "turn s1:1" in manager_prompt(body):
            return [("Memory", {"content": "User has a dog", "turns": ["s9:9", "s1:1"]})]
        return []

    with ScriptedServer([], after=server_fn(manager)) as server:
        response, system = run(server)
    assert stored(system)["s1#1"]["sources"][0]["turn_ids"] == ["s1:1"]
    assert response.meta["langmem"]["no_tool_calls"] == 1
    # issue 29: s2 stored nothing, and the question (no evidence named) needs every session
    assert [f["session_id"] for f in response.meta["ingest_failures"]] == ["s2"]
    assert response.error is not None and response.error.kind == "ingest_failed"


def test_the_store_embeds_with_the_embedder_the_run_names():
    from embeddings_server import EmbeddingsServer

    history = [Session(session_id="s1", date="2023/05/01", turns=[
                   Turn(turn_id="s1:1", role="user", text="I painted the fence red.")]),
               Session(session_id="s2", date="2023/06/01", turns=[
                   Turn(turn_id="s2:1", role="user", text="My new car is green.")])]
    with EmbeddingsServer(model="tiny-embed") as embed, \
            ScriptedServer([], after=server_fn()) as server:
        ctx = SystemContext(model=endpoint_model(server), options={
            "embedder": "openai:tiny-embed", "embedder_base_url": embed.url})
        system = lookup("system", "langmem")(ctx)()
        episode = Episode(episode_id="e1", sessions=history, questions=[question()],
                          benchmark=BenchmarkInfo(name="t"))

        async def go() -> Response:
            await system.reset(episode)
            for s in history:
                await system.ingest(s)
            return await system.answer(question("Which thing of mine is green?"))

        response = asyncio.run(go())
    embedded = [t for b in embed.text_requests() for t in b["input"]]
    assert "On 2023/06/01: My new car is green." in embedded
    assert "Which thing of mine is green?" in embedded
    assert system.describe()["embedder"] == "openai:tiny-embed"
    # the server's vectors count colour words: only the green memory matches the question
    assert [i.pointer.session_id for i in response.retrieved] == ["s2", "s1"]
    assert response.retrieved[0].score > 0.9 > response.retrieved[1].score


def test_tool_arguments_the_schema_rejects_are_re_asked_then_counted_not_stored(caplog):
    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "tools" in body:
            return tool_reply([("Memory", {"text": "no content field"})])
        return 200, completion("Insufficient information")

    with ScriptedServer([], after=reply) as server:
        response, system = run(server)
    assert stored(system) == {}
    counts, ingest = response.meta["langmem"], response.meta["ingest"]
    # trustcall asks twice more per session to repair the arguments, then gives up
    assert ingest["calls"] == len(tool_requests(server)) == 6
    assert counts["repair_calls"] == 4 and counts["unchanged_sessions"] == 2
    assert "Unrecognized function call" not in caplog.text  # counted, not logged on stderr


@pytest.mark.parametrize(("options", "says"), [
    ({"top_k": "0"}, "top_k=0: must be at least 1"),
    ({"query_limit": "0"}, "query_limit=0: must be at least 1"),
    ({"ingest_max_tokens": "8"}, "ingest_max_tokens=8: must be at least 16"),
    ({"enable_deletes": "maybe"}, "enable_deletes: use true or false"),
    ({"topk": "3"}, "langmem has no such option"),
    ({"embedder": "nonsense"}, "unknown embedder"),
    ({"embedder": "openai:e5"}, "needs --system-option embedder_base_url"),
])
def test_option_mistakes_are_named_before_any_call(options, says):
    with ScriptedServer([], after=server_fn()) as server, \
            pytest.raises(ConfigError, match=re.escape(says)):
        lookup("system", "langmem")(SystemContext(model=endpoint_model(server),
                                                  options=options))
    assert server.requests == []


def test_a_model_without_an_endpoint_is_refused_up_front():
    with pytest.raises(ConfigError, match="OpenAI-compatible endpoint"):
        lookup("system", "langmem")(SystemContext(model=ScriptedModel(fn=lambda m, q: "x")))


def test_a_rerun_over_the_same_cache_takes_every_manager_reply_from_it(tmp_path):
    """As a local model's rerun: a new server (another port) measured at another speed
    (another timeout) serves the same model file, and is sent nothing."""
    from memgauge.cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache.sqlite")
    runs = []
    try:
        for per_byte in (0.1, 0.3):
            with ScriptedServer([], after=server_fn()) as server:
                model = LocalLike("m", ModelSettings(base_url=server.base_url))
                model.per_byte = per_byte
                response, system = run(server, cache=cache, model=model)
            runs.append((response, system, len(tool_requests(server))))
    finally:
        cache.close()
    (first, first_system, first_sent), (second, second_system, second_sent) = runs
    assert (first_sent, second_sent) == (2, 0)
    assert first.meta["ingest"]["cached"] == 0
    assert second.meta["ingest"]["cached"] == second.meta["ingest"]["calls"] == 2
    assert stored(second_system) == stored(first_system)
    assert [(i.pointer, i.score) for i in second.retrieved] == [
        (i.pointer, i.score) for i in first.retrieved]


def test_runs_one_after_another_in_one_process_each_reach_the_server():
    """Each run has its own event loop; the manager's HTTP client is the run's, not
    langchain-openai's process-wide default bound to the first loop."""
    with ScriptedServer([], after=server_fn()) as server:
        for _ in range(2):
            response, _ = run(server)
            assert response.error is None and response.meta["ingest"]["calls"] == 2
    assert len(tool_requests(server)) == 4


def test_the_manager_follows_the_models_timeout_and_resend_policy():
    with ScriptedServer([], after=server_fn()) as server:
        remote = ModelSettings(base_url=server.base_url, max_attempts=3, timeout_s=7.0)
        local = ModelSettings(base_url=server.base_url, max_attempts=3)
        built = []
        for model in (openai_chat("m", remote), LocalLike("m", local)):
            ctx = SystemContext(model=model, options={"ingest_max_tokens": "100"})
            system = lookup("system", "langmem")(ctx)()
            asyncio.run(system.reset(Episode(episode_id="e1", sessions=[], questions=[],
                                             benchmark=BenchmarkInfo(name="t"))))
            built.append(system.shared.llm)
    (remote_llm, local_llm) = built
    assert (remote_llm.max_retries, remote_llm.request_timeout) == (2, 7.0)
    # the longest prompt the context takes (1000 tokens at 4 bytes) and the reply
    assert (local_llm.max_retries, local_llm.request_timeout) == (0, 4000 / 10 + 100)


def test_a_failing_manager_call_is_the_questions_system_error_never_an_answer(tmp_path):
    from typer.testing import CliRunner

    from memgauge.cli import app

    bench = tmp_path / "bench"
    made = CliRunner().invoke(app, ["generate", "synth", "--out", str(bench), "--questions", "1",
                                    "--tiers", "1k", "--seed", "1"])
    assert made.exit_code == 0, made.output

    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "tools" in body:
            return 400, {"error": {"message": "tools are not supported by this server"}}
        return 200, completion("fine")

    with ScriptedServer([], after=reply) as server:
        out = tmp_path / "run"
        done = CliRunner().invoke(app, [
            "run", "--bench", "synth", "--data", str(bench), "--tier", "1k", "--system",
            "langmem", "--model", "openai:m", "--base-url", server.base_url, "--out", str(out)])
    assert done.exit_code == 3, done.output  # 3: some questions failed
    [record] = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert record["status"] == "error", record
    error = record["response"]["error"]
    assert error["kind"] == "system_error"
    assert "tools are not supported by this server" in error["message"]
    assert all("tools" in r for r in server.requests)  # no answer was asked for


def test_nothing_but_loopback_is_contacted_even_with_tracing_asked_for(monkeypatch, tmp_path):
    """LangSmith tracing asked for in the environment, tiktoken with nothing cached: an
    episode still looks up and reaches nothing but the loopback server."""
    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    monkeypatch.setenv("LANGSMITH_API_KEY", "not-a-key")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    from langsmith import utils as ls_utils

    ls_utils.get_env_var.cache_clear()  # it caches what it read before this test
    loopback = ("127.0.0.1", "::1", "localhost")
    real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo
    outside: list[Any] = []

    def connect(self: socket.socket, address: Any) -> Any:
        if (address[0] if isinstance(address, tuple) else address) not in loopback:
            outside.append(address)
            raise OSError("no network in tests")
        return real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in loopback:
            outside.append(host)
            raise OSError("no network in tests")
        return real_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        with ScriptedServer([], after=server_fn()) as server:
            response, _ = run(server)
        from langchain_core.tracers.langchain import wait_for_all_tracers

        wait_for_all_tracers()  # a tracer would have sent by now
    finally:
        ls_utils.get_env_var.cache_clear()
    assert response.error is None and outside == []


def test_without_the_extra_the_error_says_what_to_install(monkeypatch):
    import sys

    from memgauge.systems import langmem_system

    langmem_system._langmem.cache_clear()
    monkeypatch.setitem(sys.modules, "langmem", None)  # import langmem now raises ImportError
    try:
        with ScriptedServer([], after=server_fn()) as server, \
                pytest.raises(ConfigError, match=re.escape("memgauge[agents]")):
            lookup("system", "langmem")(SystemContext(model=endpoint_model(server)))
    finally:
        langmem_system._langmem.cache_clear()


LOCAL = pytest.mark.skipif(
    __import__("importlib").util.find_spec("xllamacpp") is None,
    reason="the local extra (xllamacpp) is not installed")


@LOCAL
def test_local_model_end_to_end_on_a_tiny_session():
    """LangMem's manager and the reader are SmolLM2 (llama.cpp, its tool-call template),
    the store embeds with the static model: fully offline. SmolLM2 seldom makes a valid
    tool call; a reply without one is counted, never a crash."""
    from memgauge.models._local_files import is_pulled
    from memgauge.models.local import local_model

    if not is_pulled("smollm2"):
        pytest.skip("SmolLM2 is not on this machine: run `memgauge models pull smollm2`")
    model = local_model("smollm2", ModelSettings(model_options={"n_ctx": "4096"}))
    try:
        from memgauge.models import GenerateConfig

        ctx = SystemContext(model=model, generate=GenerateConfig(max_tokens=16),
                            options={"ingest_max_tokens": "32"})
        system = lookup("system", "langmem")(ctx)()
        # two turns: one manager call (SmolLM2 is slow on 2 cores)
        response = asyncio.run(play(system, sessions()[:1]))
    finally:
        model.release()
    ingest = response.meta["ingest"]
    assert ingest["calls"] == 1 and ingest["prompt_tokens"] > 0
    counts = response.meta["langmem"]
    assert counts["inserted"] + counts["no_tool_calls"] >= 1
    assert response.meta["memory"]["items"] == counts["inserted"] - counts["removed"]
    if counts["inserted"] == 0:  # no tool call, nothing stored: an error, not a score
        assert response.error is not None and response.error.kind == "ingest_failed"
    else:
        assert response.error is None and response.text and response.usage.input_tokens > 0
