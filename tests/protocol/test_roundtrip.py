"""A built-in system served by serve-memory gives the records the in-process run gives: the
same prompts reach the model (the stub answers with a digest of the whole prompt, images
included), the same retrieved evidence, the same scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.memory_service import prompt_digest, served
from helpers.stub_server import StubServer

from memgauge.runfolder import read_records
from memgauge.runner import RunConfig, Runner


def _run(root: Path, out: Path, system: str, model: str, base_url: str | None,
         **kw) -> dict:
    Runner(RunConfig(bench="synth", data=str(root), tier="4k", system=system, model=model,
                     base_url=base_url, out=str(out), cache=False, progress=False,
                     **kw)).run_sync()
    return read_records(out)


def _same(a, b) -> None:
    assert sorted(a) == sorted(b) and a
    for qid, ra in a.items():
        rb = b[qid]
        assert (ra.status, ra.prediction, ra.scores) == (rb.status, rb.prediction, rb.scores)
        assert ra.response.retrieved == rb.response.retrieved
        assert (ra.response.usage.input_tokens, ra.response.usage.output_tokens) == (
            rb.response.usage.input_tokens, rb.response.usage.output_tokens)
        assert ra.response.meta.get("n_images") == rb.response.meta.get("n_images")


@pytest.mark.parametrize(("system", "context_mode"), [("full-context", "image"),
                                                      ("rag-bm25", "text")])
def test_a_served_builtin_gives_the_in_process_records(synth, tmp_path, system,
                                                       context_mode) -> None:
    with StubServer(answer=prompt_digest) as stub:
        local = _run(synth, tmp_path / "local", system, "openai:stub", stub.base_url,
                     context_mode=context_mode)
        n_local = len(stub.requests)
        with served(system, model="openai:stub", base_url=stub.base_url,
                    context_mode=context_mode, prefix="/mem") as url:
            remote = _run(synth, tmp_path / "remote", url, "none:", None)
        assert len(stub.requests) == 2 * n_local
        def bodies(requests: list) -> list[str]:  # in any order: episodes run concurrently
            return sorted(json.dumps(b, sort_keys=True) for b in requests)

        assert bodies(stub.requests[:n_local]) == bodies(stub.requests[n_local:])
    _same(local, remote)
    assert all(r.status == "ok" for r in remote.values())
    if system == "rag-bm25":
        assert all(r.response.retrieved for r in remote.values())
    if context_mode == "image":
        assert any(r.response.meta.get("n_images") for r in remote.values())
    manifest = json.loads((tmp_path / "remote" / "manifest.json").read_text())
    assert manifest["system"]["server"]["name"] == system
    assert manifest["system"]["images"] == ("inline" if context_mode == "image" else "none")


def test_serve_memory_command_prints_its_url_and_stops_on_ctrl_c(synth, tmp_path) -> None:
    import signal
    import subprocess
    import sys

    with StubServer(answer=prompt_digest) as stub:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from memgauge.cli import main; main()", "serve-memory",
             "--system", "full-context", "--model", "openai:stub", "--base-url", stub.base_url,
             "--no-cache", "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()
            assert "over the memory protocol v1.1 at http://127.0.0.1:" in line, proc.stderr.read()
            records = _run(synth, tmp_path / "r", line.rsplit(" ", 1)[1].strip(), "none:", None)
            assert records and all(r.status == "ok" for r in records.values())
            assert all(r.prediction.startswith("answer-") for r in records.values())
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err
