"""Configuration mistakes are caught before the first request, as one clear error (exit 2),
not as one error per question with exit 0 (issue 11, "Fail fast on mistakes")."""

from __future__ import annotations

import pytest
from helpers.datasets import write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app


@pytest.mark.parametrize(("extra", "says"), [
    (["--image-format", "webp"], "--image-format 'webp': use one of keep, png, jpeg"),
    (["--instruction", "shout"], "--instruction 'shout': use one of direct"),
    (["--overflow", "truncate"], "--overflow 'truncate': use one of error, drop-oldest"),
    (["--context-mode", "pixels"], "--context-mode 'pixels'"),
    (["--image-mode", "base64"], "--image-mode 'base64'"),
    (["--concurrency", "0"], "--concurrency 0: must be at least 1"),
    (["--limit", "-1"], "--limit -1: must be at least 1"),
    (["--limit", "0"], "--limit 0: must be at least 1"),
    (["--timeout", "0"], "--timeout 0: must be more than 0 seconds"),
    (["--max-tokens", "0"], "--max-tokens 0: must be at least 1"),
    (["--max-attempts", "0"], "--max-attempts 0: must be at least 1"),
    (["--image-max-side", "-5"], "--image-max-side -5: must be at least 1"),
    (["--temperature", "-0.5"], "--temperature -0.5: must be 0 or more"),
    (["--max-context-tokens", "0"], "--max-context-tokens 0: must be at least 1"),
    (["--tokenizer", "o300k_nope", "--count-tokens"], "unknown text tokenizer 'o300k_nope'"),
    (["--system-option", "topk=3", "--system", "rag-bm25"],
     "--system-option topk: rag-bm25 has no such option (its options: reader, top_k)"),
    (["--system-option", "top_k=three", "--system", "rag-bm25"],
     "--system-option top_k='three': rag-bm25 needs a whole number"),
    (["--system-option", "top_k=0", "--system", "rag-bm25"], "top_k=0: must be at least 1"),
    (["--system-option", "top_k=5"], "--system-option top_k: full-context has no such option"),
])
def test_a_bad_option_stops_before_any_request(tmp_path, extra, says):
    data = write_memlens(tmp_path, 3)
    with StubServer() as stub:
        res = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
            "--model", "openai:m", "--base-url", stub.base_url, "--out", str(tmp_path / "r"),
            *extra])
    assert res.exit_code == 2, res.output
    assert says in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output
    assert stub.requests == []
    assert not (tmp_path / "r" / "records.jsonl").exists()


def test_exit_status_3_when_some_questions_failed_naming_the_top_causes(tmp_path):
    data = write_memlens(tmp_path, 4)
    with StubServer() as stub:
        stub.plan = [400]  # the first question's request is refused for good
        res = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
            "--model", "openai:m", "--base-url", stub.base_url, "--out", str(tmp_path / "r"),
            "--concurrency", "1", "--no-cache"])
        assert res.exit_code == 3, res.output
        assert "1 questions failed" in res.output and "top causes: http_400 ×1" in res.output
        again = CliRunner().invoke(app, [  # the rerun retries the error: all answered, 0
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
            "--model", "openai:m", "--base-url", stub.base_url, "--out", str(tmp_path / "r"),
            "--concurrency", "1", "--no-cache"])
    assert again.exit_code == 0, again.output


def test_ctrl_c_says_how_many_are_done_and_how_to_resume(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from helpers import sigint_child

    data = write_memlens(tmp_path, 40)
    with StubServer(latency_s=0.3) as stub:
        cmd = [sys.executable, "-m", "memgauge.cli", "run", "--bench", "memlens",
               "--data", str(data), "--image-dir", str(data.parent), "--model", "openai:m",
               "--base-url", stub.base_url, "--out", str(tmp_path / "r"), "--concurrency", "1",
               "--no-cache"]
        proc = sigint_child.popen(cmd, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(stub.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "rerun the same command to resume" in err
    assert "Traceback" not in err


def test_a_rerun_whose_input_changed_is_refused_naming_the_file(tmp_path):
    """Two datasets must never be mixed in one run folder (issue 11, honest resume)."""
    import json

    from memgauge.cli._common import flag_for
    from memgauge.errors import ConfigError, ConfigFieldError
    from memgauge.runner import RunConfig, run

    data = write_memlens(tmp_path, 3)
    config = RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                       out=str(tmp_path / "r"), model="openai:m", progress=False,
                       context_mode="text", cache=False)
    with StubServer() as stub:
        config.base_url = stub.base_url
        run(config)
        assert run(config).skipped == 3  # the same input resumes
        original = data.read_text()
        items = json.loads(original)
        items[0]["question"] = "A different question?"
        data.write_text(json.dumps(items))
        before = len(stub.requests)
        with pytest.raises(ConfigFieldError, match=r"the input changed; use a new out fo"
                                                   r"lder") as changed:
            run(config)
        assert "use a new --out folder" in changed.value.render(flag_for)  # the CLI's words
        data.write_text(original)  # the same data again, but another file named instead
        other = tmp_path / "other.json"
        other.write_text(json.dumps(items[:1]))
        with pytest.raises(ConfigError, match=r"not .*other.json"):
            run(RunConfig(**{**config.__dict__, "data": str(other)}))
        assert len(stub.requests) == before


def test_version_short_help_top_p_and_extra_body(tmp_path):
    from memgauge import __version__

    assert CliRunner().invoke(app, ["--version"]).output.strip() == f"memgauge {__version__}"
    short = CliRunner().invoke(app, ["run", "-h"])
    assert short.exit_code == 0 and "--extra-body" in short.output
    data = write_memlens(tmp_path, 1)
    base = ["run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
            "--model", "openai:m", "--no-cache"]
    with StubServer() as stub:
        ok = CliRunner().invoke(app, [*base, "--base-url", stub.base_url,
                                      "--out", str(tmp_path / "a"), "--top-p", "0.9",
                                      "--extra-body", ('{"chat_template_kwargs": '
                                                      '{"enable_thinking": false}}')])
        assert ok.exit_code == 0, ok.output
        [body] = stub.requests
        assert body["top_p"] == 0.9
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        for extra, says in ((["--extra-body", "{nope"], "--extra-body is not valid JSON"),
                            (["--extra-body", "[1]"], "must be a JSON object"),
                            (["--top-p", "1.5"], "--top-p 1.5: must be in (0, 1]")):
            bad = CliRunner().invoke(app, [*base, "--base-url", stub.base_url,
                                           "--out", str(tmp_path / "b"), *extra])
            assert bad.exit_code == 2 and says in bad.output, bad.output
        assert len(stub.requests) == 1


@pytest.mark.parametrize(("content", "ids", "says"), [
    ("[]", None, "holds no questions: nothing to run"),
    ('{"foo": 1}', None, None),  # the loader's own error, naming the file
    (None, "[]", "the list of question ids is empty"),
    (None, "", "the list of question ids is empty"),
    (None, "missing", "no such file"),
    (None, "dir", "not a file"),
    (None, '["nope"]', "are not in the data: nope"),
])
def test_empty_inputs_and_id_lists_are_errors_not_empty_successes(tmp_path, content, ids, says):
    data = write_memlens(tmp_path, 2)
    if content is not None:
        data.write_text(content)
    with StubServer() as stub:  # a live endpoint: the pre-flight passes, no question is sent
        args = ["run", "--bench", "memlens", "--data", str(data), "--image-dir",
                str(data.parent), "--model", "openai:m", "--base-url", stub.base_url,
                "--out", str(tmp_path / "r")]
        if ids is not None:
            path = tmp_path / "ids.json"
            if ids == "dir":
                path.mkdir()
            elif ids != "missing":
                path.write_text(ids)
            args += ["--question-ids", str(path)]
        res = CliRunner().invoke(app, args)
    assert stub.requests == []
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "error:" in res.output
    if says:
        assert says in " ".join(res.output.split()), res.output


def test_episodes_without_questions_are_an_empty_input(tmp_path):
    """A benchmark whose episodes hold no question runs nothing: an error naming the data,
    never exit 0 with 0 answered (found by the hypothesis suite)."""
    import json as _json

    from typer.testing import CliRunner

    from memgauge.cli import app

    bench = tmp_path / "b" / "tiers" / "8k"
    bench.mkdir(parents=True)
    (tmp_path / "b" / "manifest.json").write_text(_json.dumps(
        {"tiers": {"8k": {"questions": 0}}, "digest": "d", "generator_version": "1"}))
    episode = {"episode_id": "e1", "sessions": [], "questions": [],
               "benchmark": {"name": "synth", "tier": "8k"}}
    (bench / "episodes.jsonl").write_text(_json.dumps(episode) + "\n")
    got = CliRunner().invoke(app, ["run", "--bench", "synth", "--data", str(tmp_path / "b"),
                                   "--out", str(tmp_path / "r"), "--model", "none:",
                                   "--system", "oracle"])
    assert got.exit_code == 2, got.output
    assert "holds no questions" in " ".join(got.output.split())
