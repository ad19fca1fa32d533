"""$OPENAI_BASE_URL is honoured as the OpenAI SDK honours it (issue 29 §4): with a key set
and no --base-url, memgauge sent every question to the hosted API, so an evaluation meant
to be local could send its data out. --base-url still wins; the run's first line says
where the requests go, for every kind of model."""

from __future__ import annotations

import json

import pytest
from helpers.datasets import colour_answer, write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.models import ModelSettings, OpenAICompatModel, endpoint_of

CLOSED = "http://127.0.0.1:9/v1"  # nothing listens there


def _run(tmp_path, out: str, *extra: str, n: int = 2):
    data = write_memlens(tmp_path, n)
    return CliRunner().invoke(app, [
        "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
        "--out", str(tmp_path / out), "--no-cache", *extra])


def _first_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.strip())


def test_the_variable_is_where_the_run_goes_and_what_its_first_line_and_manifest_say(
        tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with StubServer(answer=colour_answer) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        res = _run(tmp_path, "r", "--model", "openai:stub-vlm")
        assert len(stub.requests) == 2  # not one went to the hosted API
    assert res.exit_code == 0, res.output
    assert _first_line(res.output) == f"openai:stub-vlm → {stub.base_url} (from $OPENAI_BASE_URL)"
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["model"]["base_url"] == stub.base_url
    assert manifest["config"]["identity"]["base_url"] == stub.base_url


def test_base_url_wins_over_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", CLOSED)
    with StubServer(answer=colour_answer) as stub:
        res = _run(tmp_path, "r", "--model", "openai:stub-vlm", "--base-url", stub.base_url)
        assert len(stub.requests) == 2
    assert res.exit_code == 0, res.output
    assert _first_line(res.output) == f"openai:stub-vlm → {stub.base_url} (from --base-url)"


def test_the_model_reads_the_variable_only_without_a_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.1.2.3:8000/v1/")
    from_env = OpenAICompatModel("m", ModelSettings())
    assert from_env.base == "http://10.1.2.3:8000/v1"
    assert from_env.describe()["base_url"] == "http://10.1.2.3:8000/v1/"
    given = OpenAICompatModel("m", ModelSettings(base_url="http://127.0.0.1:1/v1"))
    assert given.base == "http://127.0.0.1:1/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert OpenAICompatModel("m", ModelSettings()).base == "https://api.openai.com/v1"


@pytest.mark.parametrize(("spec", "base_url", "env", "said"), [
    ("openai:m", None, None,
     "https://api.openai.com/v1 (the hosted OpenAI API: no --base-url, no $OPENAI_BASE_URL)"),
    ("openai:m", None, "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1 (from "
                                                   "$OPENAI_BASE_URL)"),
    ("openai:m", "http://u:secret@h:1/v1", None, "http://u:***@h:1/v1 (from --base-url)"),
    ("local:smollm2", None, "http://127.0.0.1:8000/v1",
     "a llama.cpp server this run starts on 127.0.0.1 (this machine)"),
    ("none:", None, None, "none (no request is sent)"),
    ("replay:preds.json", None, None, "none (no request is sent)"),
])
def test_every_kind_of_model_says_where_its_requests_go(monkeypatch, spec, base_url, env, said):
    if env is None:
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", env)
    assert endpoint_of(spec, base_url) == said


def test_a_run_without_an_endpoint_starts_with_that_line_too(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", CLOSED)  # read by openai: models only
    res = _run(tmp_path, "r", "--model", "none:", "--system", "oracle")
    assert _first_line(res.output) == "none: → none (no request is sent)"
