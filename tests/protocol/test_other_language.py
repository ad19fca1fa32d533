"""A memory system in another language, written from docs/memory-protocol.md alone
(``examples/memory-protocol/node/server.mjs``, JavaScript), evaluated by ``memgauge run``
through the protocol: every question answered, its ranking recorded as evidence pointers into
the episode, evidence recall computed, a model reading through the service, and a rerun
resuming with nothing asked twice. Skips when Node.js is absent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.stub_server import StubServer

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.runfolder import read_records
from memgauge.runner import RunConfig, Runner

NODE = shutil.which("node")
SERVER = (Path(__file__).resolve().parents[2] / "examples" / "memory-protocol" / "node"
          / "server.mjs")

pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")


@contextmanager
def node_service(*args: str, **env: str) -> Iterator[str]:
    proc = subprocess.Popen([NODE, str(SERVER), "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on "), (line, proc.stderr.read())
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "b"
    generate(SynthConfig(out=str(root), questions=6, tiers=["4k"], seed=11))
    return root


def _run(bench: Path, out: Path, url: str) -> dict:
    Runner(RunConfig(bench="synth", data=str(bench), tier="4k", system=url, model="none:",
                     context_mode="caption", out=str(out), cache=False,
                     progress=False)).run_sync()
    return read_records(out)


def _episode_sessions(bench: Path) -> dict[str, set[str]]:
    from memgauge.benchmarks._base import BenchmarkOptions
    from memgauge.registry import lookup

    loader = lookup("benchmark", "synth")(BenchmarkOptions(data=str(bench), tier="4k"))
    return {e.episode_id: {s.session_id for s in e.sessions} for e in loader.episodes()}


def test_the_node_service_is_evaluated_through_the_protocol(bench, tmp_path) -> None:
    with node_service() as url:
        records = _run(bench, tmp_path / "run", url)
    assert records and all(r.status == "ok" for r in records.values())
    sessions = _episode_sessions(bench)
    for r in records.values():
        ranking = r.response.retrieved
        assert ranking, r.question_id
        # Pointers are the episode's own sessions; the chosen come first, then the ranking.
        assert {i.pointer.session_id for i in ranking} <= sessions[r.episode_id]
        flags = [i.chosen for i in ranking]
        assert flags == sorted(flags, reverse=True)
        assert r.response.meta["memory"]["items"] > 0
    recalls = [x for r in records.values() if (x := r.evidence_recall()) is not None]
    assert recalls and max(recalls) > 0  # BM25 finds some question's evidence session
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["system"]["server"]["name"] == "node-bm25-memory"
    assert manifest["system"]["protocol"] == "1.1" and manifest["system"]["namespace"]


def test_the_node_service_reads_with_a_model_and_a_rerun_resumes(bench, tmp_path) -> None:
    def answer(body):
        return "model says " + str(len(body["messages"]))

    with StubServer(answer=answer) as model, \
            node_service(MODEL_BASE_URL=model.base_url, MODEL_NAME="stub") as url:
        records = _run(bench, tmp_path / "run", url)
        asked = len(model.requests)
        again = _run(bench, tmp_path / "run", url)
        assert len(model.requests) == asked  # a rerun asks nothing that is done
    assert asked == len(records)
    assert all(r.status == "ok" and r.prediction == "model says 2" for r in records.values())
    assert all(r.response.usage.input_tokens is not None for r in records.values())
    # The model read the question the service was asked.
    texts = [m["messages"][1]["content"] for m in model.requests]
    assert all("Question: " in t for t in texts)
    assert again.keys() == records.keys()


def _post(url: str, route: str, obj: dict, token: str | None = None) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url + route, json.dumps(obj).encode(), headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _session(text: str) -> dict:
    return {"session_id": "s1", "date": None, "turns": [
        {"turn_id": "s1:1", "role": "user", "text": text, "images": []}]}


def test_the_node_service_keeps_namespaces_apart_and_checks_its_token() -> None:
    question = {"question_id": "q", "text": "which fruit?", "date": None, "images": [],
                "options": None}
    with node_service("--token-env", "NODE_MEMORY_TOKEN", NODE_MEMORY_TOKEN="tok-1") as url:
        assert _post(url, "/reset", {"episode_id": "e"})[0] == 401
        assert _post(url, "/reset", {"episode_id": "e"}, "wrong")[0] == 401
        for ns, fruit in (("run-a", "kiwi fruit"), ("run-b", "mango fruit")):
            assert _post(url, "/reset", {"namespace": ns, "episode_id": "e"}, "tok-1")[0] == 200
            assert _post(url, "/ingest", {"namespace": ns, "episode_id": "e",
                                          "session": _session(fruit)}, "tok-1")[0] == 200
        answers = {ns: _post(url, "/answer", {"namespace": ns, "episode_id": "e",
                                               "question": question}, "tok-1")[1]["answer"]
                   for ns in ("run-a", "run-b")}
        status, body = _post(url, "/answer", {"episode_id": "e", "question": question},
                             "tok-1")
    assert answers == {"run-a": "kiwi fruit", "run-b": "mango fruit"}
    assert status == 409 and body["error"]["kind"] == "bad_request"  # no such (namespace, e)
