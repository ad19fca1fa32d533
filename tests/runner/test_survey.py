"""The one read of the input before the first request (design 0043, issue 29): the exact
plan for a run stopped by Ctrl-C or a budget, and the mistakes only the data shows, refused
with exit 2 before any request and without writing the run folder."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import sigint_child
from helpers.datasets import write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

import memgauge
from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.cli import app
from memgauge.errors import ConfigFieldError
from memgauge.runner import load_manifest, read_records

N = 20


def _memlens_args(data: Path, base_url: str, out: Path) -> list[str]:
    return ["run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
            "--model", "openai:m", "--base-url", base_url, "--out", str(out),
            "--concurrency", "1", "--no-cache"]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_real_ctrl_c_leaves_the_true_plan_and_every_report_says_incomplete(tmp_path):
    data = write_memlens(tmp_path, N)
    with StubServer(latency_s=0.3) as stub:
        cmd = [sys.executable, "-m", "memgauge.cli",
               *_memlens_args(data, stub.base_url, tmp_path / "cut")]
        proc = sigint_child.popen(cmd, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(stub.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        finished = CliRunner().invoke(app, _memlens_args(data, stub.base_url, tmp_path / "all"))
        assert finished.exit_code == 0, finished.output
    manifest = load_manifest(tmp_path / "cut")
    k = len(read_records(tmp_path / "cut"))
    assert 0 < k < N
    # the first and only invocation, stopped before its reader was through, knows the plan
    assert (manifest["questions_planned"], manifest["run_state"]) == (N, "stopped")
    mark = f"incomplete: {k} of {N}"
    md = CliRunner().invoke(app, ["report", str(tmp_path / "cut")])
    assert md.exit_code == 0 and f"| cut ({mark}) |" in md.stdout, md.output
    html = tmp_path / "cut.html"
    page = CliRunner().invoke(app, ["report", str(tmp_path / "cut"), "--format", "html",
                                    "--out", str(html)])
    assert page.exit_code == 0, page.output
    assert mark in html.read_text(encoding="utf-8")
    both = CliRunner().invoke(app, ["report", str(tmp_path / "cut"), str(tmp_path / "all")])
    assert both.exit_code == 0, both.output
    # ranked apart: the finished run first, however the two score
    assert both.stdout.index("| all |") < both.stdout.index(f"| cut ({mark}) |")


def test_a_budget_stop_leaves_the_true_plan(tmp_path):
    data = write_memlens(tmp_path, N)
    with StubServer() as stub:
        res = CliRunner().invoke(app, [*_memlens_args(data, stub.base_url, tmp_path / "r"),
                                       "--max-tokens-total", "1"])
    assert res.exit_code == 4, res.output
    manifest = load_manifest(tmp_path / "r")
    k = len(read_records(tmp_path / "r"))
    assert k < N and (manifest["questions_planned"], manifest["run_state"]) == (N, "stopped")
    md = CliRunner().invoke(app, ["report", str(tmp_path / "r")])
    assert f"incomplete: {k} of {N}" in md.stdout, md.output


def _synth(tmp_path: Path) -> Path:
    root = tmp_path / "bench"
    generate(SynthConfig(out=str(root), questions=5, tiers=["4k"], seed=3))
    return root


def _synth_ids(root: Path) -> list[str]:
    lines = (root / "tiers" / "4k" / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    return [q["question_id"] for line in lines for q in json.loads(line)["questions"]]


@pytest.mark.parametrize("bench", ["synth", "memlens"])
def test_unknown_question_ids_are_named_and_nothing_is_written(tmp_path, bench):
    if bench == "synth":
        root = _synth(tmp_path)
        good = _synth_ids(root)[0]
        args = ["run", "--bench", "synth", "--data", str(root), "--tier", "4k"]
    else:
        root = write_memlens(tmp_path, 3)
        good = "q000"
        args = ["run", "--bench", "memlens", "--data", str(root), "--image-dir",
                str(root.parent)]
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{good}\nno-such-question\n", encoding="utf-8")
    out = tmp_path / "r"
    with StubServer() as stub:
        args += ["--model", "openai:m", "--base-url", stub.base_url, "--out", str(out),
                 "--no-cache"]
        bad = CliRunner().invoke(app, [*args, "--question-ids", str(ids)])
        assert bad.exit_code == 2, bad.output
        assert "not in the data: no-such-question" in _flat(bad.output)
        assert stub.requests == [] and not out.exists()
        ids.write_text(f"{good}\n", encoding="utf-8")  # the corrected command runs
        fixed = CliRunner().invoke(app, [*args, "--question-ids", str(ids)])
    assert fixed.exit_code == 0, fixed.output
    assert list(read_records(out)) == [good]


@pytest.mark.parametrize("ids", ["missing", '{"ids": ["q000"]}'])
def test_an_id_list_mistake_writes_nothing(tmp_path, ids):
    data = write_memlens(tmp_path, 2)
    path = tmp_path / "ids.json"
    if ids != "missing":
        path.write_text(ids, encoding="utf-8")
    out = tmp_path / "r"
    with StubServer() as stub:
        res = CliRunner().invoke(app, [*_memlens_args(data, stub.base_url, out),
                                       "--question-ids", str(path)])
    assert res.exit_code == 2 and "--question-ids" in res.output, res.output
    assert not out.exists()


def test_caption_mode_without_captioner_or_captions_is_refused(tmp_path):
    data = write_memlens(tmp_path, 2)  # MemLens carries no captions
    with StubServer() as stub:
        res = CliRunner().invoke(app, [*_memlens_args(data, stub.base_url, tmp_path / "r"),
                                       "--context-mode", "caption"])
        assert stub.requests == []
    assert res.exit_code == 2, res.output
    assert "2 of 2 images have no caption" in _flat(res.output)
    assert "--captioner" in res.output and not (tmp_path / "r").exists()


def test_caption_mode_runs_on_data_that_carries_captions(tmp_path):
    root = _synth(tmp_path)
    with StubServer() as stub:
        res = CliRunner().invoke(app, [
            "run", "--bench", "synth", "--data", str(root), "--tier", "4k", "--limit", "2",
            "--context-mode", "caption", "--model", "openai:m", "--base-url", stub.base_url,
            "--out", str(tmp_path / "r"), "--no-cache"])
        assert res.exit_code == 0, res.output
        assert len(stub.requests) >= 2


@pytest.mark.parametrize("system", ["full-context", "fact-memory", "rag-bm25"])
def test_a_system_that_needs_a_model_is_refused_with_none(tmp_path, system):
    root = _synth(tmp_path)
    res = CliRunner().invoke(app, ["run", "--bench", "synth", "--data", str(root), "--tier",
                                   "4k", "--system", system, "--model", "none:",
                                   "--out", str(tmp_path / "r")])
    assert res.exit_code == 2, res.output
    assert f"--system {system} asks its model" in _flat(res.output)
    assert not (tmp_path / "r").exists()


def test_none_stays_fine_for_systems_that_need_no_model(tmp_path):
    root = _synth(tmp_path)
    res = CliRunner().invoke(app, ["run", "--bench", "synth", "--data", str(root), "--tier",
                                   "4k", "--system", "rag-bm25", "--system-option",
                                   "reader=oracle", "--model", "none:",
                                   "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("system", ["oracle", "oracle-text"])
def test_an_oracle_on_a_benchmark_without_gold_programs_is_refused(tmp_path, system):
    data = write_memlens(tmp_path, 3)
    res = CliRunner().invoke(app, ["run", "--bench", "memlens", "--data", str(data),
                                   "--image-dir", str(data.parent), "--system", system,
                                   "--model", "none:", "--out", str(tmp_path / "r")])
    assert res.exit_code == 2, res.output
    said = _flat(res.output)
    assert "3 of 3 questions of --bench memlens do not carry" in said
    assert "--bench synth" in said and not (tmp_path / "r").exists()


def test_a_tier_over_the_context_limit_is_refused_before_the_first_request(tmp_path):
    root = _synth(tmp_path)
    with StubServer() as stub:
        res = CliRunner().invoke(app, [
            "run", "--bench", "synth", "--data", str(root), "--tier", "4k",
            "--context-mode", "caption", "--max-context-tokens", "1000",
            "--model", "openai:m", "--base-url", stub.base_url, "--out", str(tmp_path / "r")])
        assert stub.requests == []
    assert res.exit_code == 2, res.output
    said = _flat(res.output)
    assert "the tier 4k prompts do not fit the model" in said
    assert "over --max-context-tokens 1000" in said and "--overflow drop-oldest" in said
    assert not (tmp_path / "r").exists()
    with StubServer() as stub:  # drop-oldest makes them fit: nothing to refuse
        ok = CliRunner().invoke(app, [
            "run", "--bench", "synth", "--data", str(root), "--tier", "4k", "--limit", "1",
            "--context-mode", "caption", "--max-context-tokens", "1000", "--overflow",
            "drop-oldest", "--model", "openai:m", "--base-url", stub.base_url,
            "--out", str(tmp_path / "r2"), "--no-cache"])
    assert ok.exit_code == 0, ok.output


def test_one_prompt_is_counted_per_history_cut_the_longest_question_standing_for_it():
    from memgauge.runner._survey import survey
    from memgauge.schema import BenchmarkInfo, Episode, Question, Session

    def q(qid: str, text: str, after: int | None) -> Question:
        return Question(question_id=qid, text=text, answer="a", answer_type="string",
                        ability="information_extraction", asked_after=after)

    episode = Episode(episode_id="e", sessions=[Session(session_id=f"s{i}") for i in range(3)],
                      questions=[q("short", "Why?", None), q("long", "Why is that so?", None),
                                 q("early", "When?", 0)], benchmark=BenchmarkInfo(name="t"))
    asked: list[tuple[str, int]] = []

    def tokens(ep: Episode, question: Question, cut: int) -> int | None:
        asked.append((question.question_id, cut))
        return 10 * cut

    def cut_of(ep: Episode, question: Question) -> int:
        return 3 if question.asked_after is None else question.asked_after + 1

    found = survey(iter([episode]), None, tokens, cut_of)
    assert sorted(asked) == [("early", 1), ("long", 3)]
    assert found.prompts_counted == 2 and found.over_limit == [("long", 30), ("early", 10)]


def _library_refusal(tmp_path: Path, **fields) -> ConfigFieldError:
    with StubServer() as stub, pytest.raises(ConfigFieldError) as exc:
        memgauge.run(model="openai:m", base_url=stub.base_url, out=str(tmp_path / "r"),
                     progress=False, cache=False, **fields)
    assert stub.requests == [] and not (tmp_path / "r").exists()
    assert "--" not in str(exc.value)  # a Python caller passed no flag
    return exc.value


def test_the_library_names_the_fields_to_change_not_the_flags(tmp_path):
    """The same refusals through memgauge.run (issue 26 §3): fields, as the caller wrote
    them; the command line's flags are checked above."""
    data = write_memlens(tmp_path, 2)
    memlens = {"bench": "memlens", "data": str(data), "image_dir": str(data.parent)}
    said = str(_library_refusal(tmp_path, **memlens, context_mode="caption"))
    assert said.startswith("context_mode caption: 2 of 2 images have no caption")
    assert "add captioner (e.g. captioner vlm:<model>)" in said
    said = str(_library_refusal(tmp_path, **memlens, system="rag-bm25",
                                system_options={"reader": "oracle"}))
    assert said.startswith("system rag-bm25 system_options reader=oracle answers from")
    assert "questions of bench memlens do not carry" in said
    said = str(_library_refusal(tmp_path, bench="synth", data=str(_synth(tmp_path)),
                                tier="4k", context_mode="caption", max_context_tokens=1000))
    assert "over max_context_tokens 1000" in said and "overflow drop-oldest" in said
    assert "(model_options n_ctx=N for local: models)" in said
