"""The circuit breaker's same-cause stop, and the response cache keyed on what the server
says it serves (its /models entry), recorded in the manifest."""

from __future__ import annotations

import json
import time

from helpers.datasets import write_memlens
from helpers.scripted_server import ScriptedServer
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app


def _run(data, base: str, out, *extra: str):
    return CliRunner().invoke(app, [
        "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
        "--model", "openai:m", "--base-url", base, "--out", str(out), "--concurrency", "1",
        *extra])


def _records(out) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


def test_the_same_non_retryable_cause_on_the_first_questions_stops_the_run(tmp_path):
    data = write_memlens(tmp_path, 8)
    with StubServer() as stub:
        stub.plan = [404] * 8  # e.g. a model name the server does not know
        res = _run(data, stub.base_url, tmp_path / "r", "--no-cache")
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "stopped: the first 3 questions all failed with the same cause" in out
    assert "http_404: stub error 404" in out
    assert len(stub.requests) == 3  # not one per question
    assert [r["status"] for r in _records(tmp_path / "r")] == ["error"] * 3  # kept


def test_different_causes_or_a_first_answer_do_not_stop_the_run(tmp_path):
    data = write_memlens(tmp_path, 4)
    replies = [(400, {"error": {"message": f"bad field {i}"}}) for i in range(4)]
    with ScriptedServer(replies) as srv:
        res = _run(data, srv.base_url, tmp_path / "a", "--no-cache")
    assert res.exit_code == 3, res.output  # every question answered or recorded
    assert len(srv.requests) == 4
    same = [(400, {"error": {"message": "bad"}})] * 4
    with ScriptedServer([(200, {"id": "x", "object": "chat.completion", "created": 0,
                                "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": "red"}}]}),
                         *same]) as srv:
        res = _run(data, srv.base_url, tmp_path / "b", "--no-cache")
    assert res.exit_code == 3, res.output  # it answered once: the endpoint works
    assert len(srv.requests) == 4


def test_a_new_checkpoint_under_the_same_url_and_name_is_not_served_from_the_cache(tmp_path):
    data = write_memlens(tmp_path, 3)
    entry = {"id": "m", "object": "model", "root": "/ckpt/step-1000", "created": 1_700_000_000,
             "owned_by": "vllm"}
    with StubServer() as stub:
        stub.models = [entry, {"id": "other", "root": "/x"}]
        assert _run(data, stub.base_url, tmp_path / "r1").exit_code == 0
        assert len(stub.requests) == 3
        assert _run(data, stub.base_url, tmp_path / "r2").exit_code == 0
        assert len(stub.requests) == 3  # the same checkpoint: every answer from the cache
        stub.models = [{**entry, "root": "/ckpt/step-2000"}]
        assert _run(data, stub.base_url, tmp_path / "r3").exit_code == 0
        assert len(stub.requests) == 6  # a new root: real requests
        stub.models = [{**entry, "root": "/ckpt/step-2000", "created": 1_700_000_500}]
        assert _run(data, stub.base_url, tmp_path / "r4").exit_code == 0
        assert len(stub.requests) == 9  # a new created: real requests
    manifest = json.loads((tmp_path / "r4" / "manifest.json").read_text())
    assert manifest["model"]["served"] == {"id": "m", "root": "/ckpt/step-2000",
                                           "created": 1_700_000_500, "owned_by": "vllm"}


def test_a_created_stamped_at_reply_time_does_not_defeat_the_cache(tmp_path):
    data = write_memlens(tmp_path, 2)
    with StubServer() as stub:  # as vLLM and llama.cpp do: `created` is the time of the list
        stub.models = [{"id": "m", "root": "/ckpt/a", "created": int(time.time())}]
        assert _run(data, stub.base_url, tmp_path / "r1").exit_code == 0
        stub.models = [{"id": "m", "root": "/ckpt/a", "created": int(time.time()) + 7}]
        assert _run(data, stub.base_url, tmp_path / "r2").exit_code == 0
    assert len(stub.requests) == 2
    manifest = json.loads((tmp_path / "r2" / "manifest.json").read_text())
    assert manifest["model"]["served"] == {"id": "m", "root": "/ckpt/a"}


def test_a_name_the_list_leaves_out_stops_the_run_before_the_first_request(tmp_path):
    """Issue 29: a name the endpoint does not list was a warning, then a refused request per
    question (3 before the breaker): now exit 2 before any, naming what it serves."""
    data = write_memlens(tmp_path, 2)
    with StubServer() as stub:
        stub.models = [{"id": "someone-else"}, {"id": "another"}]
        res = _run(data, stub.base_url, tmp_path / "r1")
        assert res.exit_code == 2, res.output
        assert stub.requests == []
        flat = " ".join(res.output.split())
        assert (f"the model endpoint {stub.base_url} does not serve 'm': its /models lists "
                "someone-else, another; name one of those, or point --base-url at the server "
                "that serves 'm'") in flat
        assert not (tmp_path / "r1" / "records.jsonl").exists()
        stub.models = [{"id": "m:latest"}]  # Ollama lists a bare name with its default tag
        assert _run(data, stub.base_url, tmp_path / "r2").exit_code == 0
        assert len(stub.requests) == 2


def test_no_list_or_an_empty_one_is_said_once_and_keys_as_before(tmp_path):
    data = write_memlens(tmp_path, 2)
    with StubServer() as stub:
        stub.models = []  # lists nothing: nothing to hold the name against
        res = _run(data, stub.base_url, tmp_path / "r1")
        assert res.exit_code == 0, res.output
        flat = " ".join(res.output.split())
        assert flat.count("lists no model named 'm' (it lists: none)") == 1
        stub.models = None  # no /models at all now: still the same cache key
        assert _run(data, stub.base_url, tmp_path / "r2").exit_code == 0
    assert len(stub.requests) == 2
    manifest = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    assert "served" not in manifest["model"]
    assert "lists no model" in manifest["model"]["served_note"]
