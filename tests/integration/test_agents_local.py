"""The built-in memory agents end to end against a real llama.cpp server (SmolLM2-135M), on a
generated synth tier.

Skipped when xllamacpp is not installed or the model was never pulled (``memgauge models
pull smollm2``). The agents' logic is tested against the scripted model in tests/systems;
here ``memgauge generate synth --tiers 1k --questions 1 --seed 1`` (the smallest tier: one
episode of four ten-turn sessions) is generated into tmp, and each agent is run through
``memgauge run --bench synth --model local:smollm2`` on it, with replies capped at 32
tokens. SmolLM2 seldom writes the JSON asked for; that is a recorded ``ingest_failures``
entry, not a crash. The checks: the run finishes, its question is answered or an error with
a named cause; the ingest calls and tokens the record reports are those the server
received; what the agent kept in memory holds what it parsed from the model's replies; and
a rerun into a new folder over the same response cache sends nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("xllamacpp", reason="the local extra (xllamacpp) is not installed")

from memgauge.models._local_files import is_pulled, models_dir

if not is_pulled("smollm2"):
    pytest.skip("SmolLM2 is not on this machine: run `memgauge models pull smollm2`",
                allow_module_level=True)

from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.models.openai_compat import OpenAICompatModel
from memgauge.systems._memory import Caller

MODELS_DIR = models_dir()  # read before MEMGAUGE_CACHE_DIR points elsewhere
# The unpatched methods: each run wraps these, never the wrapper of the run before it.
REAL_SEND, REAL_INGEST_JSON = OpenAICompatModel._send, Caller.ingest_json
TIER = "1k"

# (system, options): recurrent-memory question-blind, so its rewrites happen at ingest, on
# 512-token chunks (a 1k history is two or three of them); its memory bound small, so a
# rewrite reply is capped at 16 + 32 tokens.
AGENTS = [("fact-memory", {}), ("state-memory", {}), ("summary-memory", {}),
          ("recurrent-memory", {"variant": "blind", "memory_tokens": "16",
                                "chunk_tokens": "512"}),
          ("rag", {"unit": "turn"})]


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> dict[str, Any]:
    """The tier, generated once for every agent, and its sessions."""
    root = tmp_path_factory.mktemp("synth")
    done = CliRunner().invoke(app, ["generate", "synth", "--out", str(root / "data"),
                                    "--tiers", TIER, "--questions", "1", "--seed", "1"])
    assert done.exit_code == 0, done.output
    [episode] = [json.loads(x) for x in
                 (root / "data" / "tiers" / TIER / "episodes.jsonl").read_text().splitlines()]
    return {"data": root / "data", "episode": episode}


class Seen:
    """Requests that reached the llama.cpp server (a cache hit never does), and what the
    agent made of each JSON reply at ingest (its stage and the value it picked, or None)."""

    def __init__(self) -> None:
        self.sent = 0
        self.parsed: list[tuple[str, Any]] = []


def _run(data: Path, root: Path, out: str, system: str, options: dict[str, str],
         mp: pytest.MonkeyPatch) -> tuple[Any, Seen]:
    seen = Seen()

    async def counting_send(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.sent += 1
        return await REAL_SEND(self, *args, **kwargs)

    async def noting_ingest_json(self: Any, *args: Any, **kwargs: Any) -> Any:
        value = await REAL_INGEST_JSON(self, *args, **kwargs)
        seen.parsed.append((kwargs["stage"], value))
        return value

    mp.setattr(OpenAICompatModel, "_send", counting_send)
    mp.setattr(Caller, "ingest_json", noting_ingest_json)
    args = ["run", "--bench", "synth", "--data", str(data), "--tier", TIER,
            "--system", system, "--model", "local:smollm2", "--model-option", "n_ctx=2048",
            "--context-mode", "caption", "--max-tokens", "32", "--concurrency", "1",
            "--cache-path", str(root / "responses.sqlite"), "--out", str(root / out)]
    for key, value in options.items():
        args += ["--system-option", f"{key}={value}"]
    return CliRunner().invoke(app, args), seen


@pytest.fixture(scope="module", params=AGENTS, ids=[a[0] for a in AGENTS])
def agent(request, synth, tmp_path_factory) -> dict[str, Any]:
    """One first run per agent, then a rerun into a new folder over the same cache."""
    system, options = request.param
    root = tmp_path_factory.mktemp(system)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMGAUGE_CACHE_DIR", str(root / "cache"))  # never the real cache
        mp.setenv("MEMGAUGE_MODELS_DIR", str(MODELS_DIR))
        first, seen_first = _run(synth["data"], root, "first", system, options, mp)
        again, seen_again = _run(synth["data"], root, "again", system, options, mp)
    return {"system": system, "root": root, "first": first, "seen_first": seen_first,
            "again": again, "seen_again": seen_again, "episode": synth["episode"]}


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines() if x]


def _ingest(record: dict[str, Any]) -> dict[str, int]:
    return record["response"]["meta"].get("ingest", {"calls": 0, "cached": 0})


def test_the_run_finishes_and_its_question_is_answered_or_a_named_error(agent):
    done = agent["first"]
    assert "Traceback" not in done.output, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    [record] = _records(agent["root"] / "first")  # never lost
    assert record["question_id"] == agent["episode"]["questions"][0]["question_id"]
    if record["status"] == "ok":
        assert done.exit_code == 0, done.output
        assert record["prediction"] is not None
        assert record["response"]["usage"]["input_tokens"] > 0
    else:  # an error, with its cause named, and reported apart (exit 3)
        assert done.exit_code == 3, done.output
        error = record["response"]["error"]
        assert error["kind"] and error["message"] and "Traceback" not in error["message"]
        assert record["scores"] == {}
    session_ids = {s["session_id"] for s in agent["episode"]["sessions"]}
    for failure in record["response"]["meta"].get("ingest_failures", []):
        assert failure["session_id"] in session_ids and failure["stage"] and failure["kind"]
        assert failure["message"]


def test_the_ingest_cost_reported_is_what_the_server_received(agent):
    [record] = _records(agent["root"] / "first")
    ingest, cost = _ingest(record), record["cost"]
    # An ingest_failed question is never asked (issue 29): its answer costs no call.
    failed_ingest = (record["response"].get("error") or {}).get("kind") == "ingest_failed"
    answered_by_server = 0 if record["response"]["cached"] or failed_ingest else 1
    assert ingest["cached"] == 0  # a fresh cache, and no prompt is asked twice
    assert agent["seen_first"].sent == ingest["calls"] + answered_by_server
    assert cost["ingest_sessions"] == len(agent["episode"]["sessions"])
    assert cost["ingest_s"] > 0 and cost["answer_s"] > 0
    if agent["system"] == "rag":
        assert ingest["calls"] == 0 and not cost["ingest_calls"]  # no model at ingest
        return
    sessions = len(agent["episode"]["sessions"])
    at_least = 2 if agent["system"] == "recurrent-memory" else sessions  # chunks, not sessions
    assert ingest["calls"] >= at_least
    assert ingest["prompt_tokens"] > 0 and ingest["completion_tokens"] > 0
    assert (cost["ingest_calls"], cost["ingest_prompt_tokens"],
            cost["ingest_completion_tokens"]) == \
        (ingest["calls"], ingest["prompt_tokens"], ingest["completion_tokens"])
    failed = [f for f in record["response"]["meta"].get("ingest_failures", [])
              if f["kind"] == "unparsable"]
    unreadable = [v for _, v in agent["seen_first"].parsed if v is None]
    assert len(failed) == len(unreadable)  # every unreadable reply is a recorded failure


def _usable(system: str, stage: str, value: Any) -> bool:
    """A parsed reply the agent keeps something of (its own rules for an item)."""
    if value is None:
        return False
    if system == "fact-memory" and stage == "extract":
        return any(isinstance(x.get("fact"), str) and x["fact"].strip() for x in value)
    if system == "state-memory":
        return any(all(isinstance(x.get(k), str | int | float) and str(x[k]).strip()
                       for k in ("entity", "attribute", "value")) for x in value)
    return isinstance(value, str) and bool(value)


def test_the_memory_holds_what_the_agent_parsed(agent):
    system = agent["system"]
    [record] = _records(agent["root"] / "first")
    cost = record["cost"]
    parsed = agent["seen_first"].parsed
    if system == "rag":  # an index, not a memory the model writes: nothing parsed
        assert parsed == []
        return
    assert isinstance(cost["memory_items"], int) and isinstance(cost["memory_bytes"], int)
    usable = [(stage, v) for stage, v in parsed if _usable(system, stage, v)]
    if system == "summary-memory":  # one entry per session, parsed or not
        assert cost["memory_items"] == len(agent["episode"]["sessions"])
        for _, summary in usable:  # each summary kept is in the memory's bytes
            assert cost["memory_bytes"] >= len(summary.encode())
    elif system == "recurrent-memory":
        assert cost["memory_items"] >= 2  # the chunks it read
        rewrites = [v for stage, v in parsed if stage == "rewrite" and v is not None]
        if rewrites and rewrites[-1]:  # the memory is the last rewrite it could read
            assert cost["memory_bytes"] > 0
    elif usable:  # fact-memory, state-memory: something usable was extracted
        deleted = record["response"]["meta"].get("operations", {}).get("DELETE", 0)
        assert cost["memory_items"] > 0 or deleted > 0
    if not usable and system in ("fact-memory", "state-memory"):
        assert cost["memory_items"] == 0  # nothing parsed, nothing made up


def test_a_rerun_into_a_new_folder_over_the_same_cache_sends_nothing(agent):
    again = agent["again"]
    assert "Traceback" not in again.output, again.output
    [first] = _records(agent["root"] / "first")
    [record] = _records(agent["root"] / "again")
    if first["status"] != "ok":
        pytest.skip(f"the first run's answer failed ({first['response']['error']['kind']}): "
                    "errors are never cached, so a rerun retries it")
    assert agent["seen_again"].sent == 0  # no ingest call, no answer call reached the server
    assert record["status"] == "ok" and record["response"]["cached"]
    assert record["prediction"] == first["prediction"]
    ingest = _ingest(record)
    assert ingest["calls"] == _ingest(first)["calls"] and ingest["cached"] == ingest["calls"]
    assert record["cost"]["memory_items"] == first["cost"]["memory_items"]
    assert record["cost"]["memory_bytes"] == first["cost"]["memory_bytes"]
