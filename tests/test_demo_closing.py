"""The demo on a fresh machine (issue 29 §4): its real-model step says something per
question (it was silent for up to an hour on a loaded machine), and the commands it ends
with paste into a shell as printed (`openai:<model-name>` was a redirection, and
`(or local:…)` a syntax error)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge import demo
from memgauge.cli import app

FAKE_MEMGAUGE = 'memgauge() { printf "%s\\n" "$@" > "$ARGS_DIR/$((++n))"; }\nn=0\n'


def test_the_closing_commands_run_in_bash_with_the_arguments_they_show(tmp_path):
    bench = tmp_path / "my demo's out" / "benchmark"  # a space and a quote in the path
    text = demo.closing_commands(bench, ("4k", "8k", "32k"))
    assert subprocess.run(["bash", "-n"], input=text, text=True, check=False).returncode == 0
    args_dir = tmp_path / "args"
    args_dir.mkdir()
    done = subprocess.run(["bash", "-e"], input=FAKE_MEMGAUGE + text, text=True, check=False,
                          capture_output=True,
                          env={"ARGS_DIR": str(args_dir), "PATH": "/bin:/usr/bin"})
    assert done.returncode == 0, done.stderr
    calls = [(args_dir / str(i)).read_text().splitlines() for i in range(1, 4)]
    assert [c[:2] for c in calls] == [["run", "--bench"], ["report", "runs/my-model-32k"],
                                      ["run", "--bench"]]
    run, _, local = calls
    assert run[run.index("--data") + 1] == str(bench)
    assert run[run.index("--model") + 1] == "openai:your-model-name"
    assert run[run.index("--tier") + 1] == "32k" and run[-1] == "runs/my-model-32k"
    assert local[local.index("--model") + 1] == "local:smollm2"
    assert local[local.index("--tier") + 1] == "4k"
    assert not (tmp_path / "model-name").exists()  # no `<model-name>` redirection
    logical = text.replace("\\\n", " ").splitlines()
    assert all(shlex.split(line, comments=True) is not None for line in logical)


def test_the_real_model_step_says_a_line_per_question(tmp_path, monkeypatch):
    made = CliRunner().invoke(app, ["generate", "synth", "--out", str(tmp_path / "bench"),
                                    "--questions", "3", "--tiers", "4k"])
    assert made.exit_code == 0, made.output
    monkeypatch.setattr(demo, "_model_missing", lambda spec: None)  # any model will do here
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    said: list[str] = []
    manifest = json.loads((tmp_path / "bench" / "manifest.json").read_text())
    with StubServer(answer=stub_answer) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        config = demo.DemoConfig(out=str(tmp_path), tiers=("4k",), questions=3,
                                 model="openai:stub", model_questions=2)
        runs = demo._model_runs(config, tmp_path, tmp_path / "bench", said.append, manifest)
    assert runs.failures == [] and len(runs.runs) == len(demo.MODEL_SYSTEMS)
    progress = [line.strip() for line in said if line.strip().startswith("question ")]
    assert len(progress) == 2 * len(demo.MODEL_SYSTEMS), said
    assert [p.split(" (")[0] for p in progress] == ["question 1/2", "question 2/2"] * 3
    assert all(": ok, " in p and p.endswith(" s so far") for p in progress)


def stub_answer(body: dict) -> str:
    """A summary when the memory agent asks for one (JSON under a schema), else an answer."""
    if body.get("response_format"):
        return json.dumps({"summary": "The user talked about their day."})
    return "Insufficient information"


@pytest.mark.parametrize("bad", ["<", ">", "(or "])
def test_no_prose_outside_comments(bad):
    text = demo.closing_commands(Path("memgauge-demo/benchmark"), ("4k", "8k"))
    code = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert not any(bad in ln for ln in code)
