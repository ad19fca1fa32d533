"""The built-in memory agents end to end against a real llama.cpp server (SmolLM2-135M).

Skipped when xllamacpp is not installed or the model was never pulled (``memgauge models
pull smollm2``). The agents' logic is tested against the scripted model in tests/systems;
here each one is run through ``memgauge run --model local:smollm2`` on a hand-made
MemLens-format item of three two-turn sessions (a synth 4k episode has 19 sessions, two
calls each, too slow for two cores), with replies capped at 32 tokens. SmolLM2 seldom
writes the JSON asked for; that is a recorded ``ingest_failures`` entry, not a crash. The
checks: the run finishes, its one question is answered or an error with a named cause, the
ingest calls the agent reports are the calls the server received, and a rerun into a new
folder over the same response cache sends nothing.
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

MODELS_DIR = models_dir()  # read before MEMGAUGE_CACHE_DIR points elsewhere

# (system, options): recurrent-memory question-blind, so its rewrites happen at ingest; its
# memory bound small, so a rewrite reply is capped at 16 + 32 tokens.
AGENTS = [("fact-memory", {}), ("state-memory", {}), ("summary-memory", {}),
          ("recurrent-memory", {"variant": "blind", "memory_tokens": "16"}),
          ("rag", {"unit": "turn"})]
SESSIONS = [
    [("user", "I adopted a cat. Her name is Miso."), ("assistant", "Miso is a lovely name.")],
    [("user", "I moved to Porto last week."), ("assistant", "Porto is beautiful.")],
    [("user", "My sister Ana is a dentist."), ("assistant", "Good to know.")],
]


def _dataset(root: Path) -> Path:
    item = {"question_id": "q0", "question": "What is the name of my cat?", "answer": "Miso",
            "question_type": "information_extraction", "question_subtype": "previnfo",
            "question_date": "2024/03/01",
            "haystack_dates": ["2024/02/01", "2024/02/10", "2024/02/20"],
            "haystack_sessions": [[{"role": r, "content": t} for r, t in s] for s in SESSIONS]}
    path = root / "three_sessions.json"
    path.write_text(json.dumps([item]), encoding="utf-8")
    return path


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines() if x]


class Sent:
    """Requests that reached the llama.cpp server (a cache hit never does)."""

    def __init__(self) -> None:
        self.n = 0


def _run(root: Path, out: str, system: str, options: dict[str, str],
         mp: pytest.MonkeyPatch) -> tuple[Any, Sent]:
    sent = Sent()
    real_send = OpenAICompatModel._send

    async def counting_send(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent.n += 1
        return await real_send(self, *args, **kwargs)

    mp.setattr(OpenAICompatModel, "_send", counting_send)
    args = ["run", "--bench", "memlens", "--data", str(root / "three_sessions.json"),
            "--system", system, "--model", "local:smollm2", "--model-option", "n_ctx=2048",
            "--max-tokens", "32", "--concurrency", "1", "--cache-path",
            str(root / "responses.sqlite"), "--out", str(root / out)]
    for key, value in options.items():
        args += ["--system-option", f"{key}={value}"]
    return CliRunner().invoke(app, args), sent


@pytest.fixture(scope="module", params=AGENTS, ids=[a[0] for a in AGENTS])
def agent(request, tmp_path_factory) -> dict[str, Any]:
    """One first run per agent, then a rerun into a new folder over the same cache."""
    system, options = request.param
    root = tmp_path_factory.mktemp(system)
    _dataset(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMGAUGE_CACHE_DIR", str(root / "cache"))  # never the real cache
        mp.setenv("MEMGAUGE_MODELS_DIR", str(MODELS_DIR))
        first, sent_first = _run(root, "first", system, options, mp)
        again, sent_again = _run(root, "again", system, options, mp)
    return {"system": system, "root": root, "first": first, "sent_first": sent_first.n,
            "again": again, "sent_again": sent_again.n}


def _ingest(record: dict[str, Any]) -> dict[str, int]:
    return record["response"]["meta"].get("ingest", {"calls": 0, "cached": 0})


def test_the_run_finishes_and_its_question_is_answered_or_a_named_error(agent):
    done = agent["first"]
    assert "Traceback" not in done.output, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    [record] = _records(agent["root"] / "first")  # never lost
    assert record["question_id"] == "q0"
    if record["status"] == "ok":
        assert done.exit_code == 0, done.output
        assert record["prediction"] is not None
        assert record["response"]["usage"]["input_tokens"] > 0
    else:  # an error, with its cause named, and reported apart (exit 3)
        assert done.exit_code == 3, done.output
        error = record["response"]["error"]
        assert error["kind"] and error["message"] and "Traceback" not in error["message"]
        assert record["scores"] == {}
    for failure in record["response"]["meta"].get("ingest_failures", []):
        assert failure["session_id"] and failure["stage"] and failure["kind"]
        assert failure["message"]


def test_the_ingest_calls_reported_are_the_calls_the_server_received(agent):
    [record] = _records(agent["root"] / "first")
    ingest = _ingest(record)
    answered_by_server = 0 if record["response"]["cached"] else 1
    assert ingest["cached"] == 0  # a fresh cache, and no prompt is asked twice
    assert agent["sent_first"] == ingest["calls"] + answered_by_server
    if agent["system"] == "rag":
        assert ingest["calls"] == 0  # the index is built without the model
    else:
        assert ingest["calls"] >= len(SESSIONS)  # at least one call per session
        assert ingest["prompt_tokens"] > 0 and ingest["completion_tokens"] > 0
        assert record["cost"]["ingest_calls"] == ingest["calls"]
        assert record["cost"]["ingest_sessions"] == len(SESSIONS)


def test_a_rerun_into_a_new_folder_over_the_same_cache_sends_nothing(agent):
    again = agent["again"]
    assert "Traceback" not in again.output, again.output
    [first] = _records(agent["root"] / "first")
    [record] = _records(agent["root"] / "again")
    if first["status"] != "ok":
        pytest.skip(f"the first run's answer failed ({first['response']['error']['kind']}): "
                    "errors are never cached, so a rerun retries it")
    assert agent["sent_again"] == 0  # no ingest call, no answer call reached the server
    assert record["status"] == "ok" and record["response"]["cached"]
    assert record["prediction"] == first["prediction"]
    ingest = _ingest(record)
    assert ingest["calls"] == _ingest(first)["calls"] and ingest["cached"] == ingest["calls"]
