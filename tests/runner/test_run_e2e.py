"""End to end: the runner against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.datasets import colour_answer, make_png, write_memlens
from helpers.stub_server import StubServer

from memgauge.errors import ConfigError, InputError
from memgauge.runner import RunConfig, merge_runs, read_records, run
from memgauge.systems import SYSTEM_PROMPT


def _config(tmp_path: Path, data: Path, base_url: str, out: str = "run", **kw) -> RunConfig:
    return RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                     out=str(tmp_path / out), model="openai:stub-vlm", base_url=base_url,
                     progress=False, retry_base_s=0.01, **kw)


def _lines(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines() if x]


def test_exact_request_body_and_record(tmp_path):
    img = tmp_path / "img"
    a = make_png(img / "a.png", "red")
    b = make_png(img / "b.png", "blue", (30, 20))
    item = {
        "question_id": "q1", "question": "What colour was the mug?", "answer": "red",
        "question_type": "information_extraction", "question_subtype": "previnfo",
        "question_date": "2024/03/01", "haystack_dates": ["2024/02/01"],
        "haystack_sessions": [
            [{"role": "user", "content": "Look at my mug <image> nice?", "images": ["img/a.png"]},
             {"role": "assistant", "content": "Lovely."}],
            {"date": "2024/02/10", "session": [
                {"role": "user", "content": "Two pics", "images": [{"file": "img/b.png"}]}]},
        ],
    }
    data = tmp_path / "d.json"
    data.write_text(json.dumps([item]))
    with StubServer(answer=lambda body: "It was red.") as stub:
        result = run(_config(tmp_path, data, stub.base_url, count_tokens=True))
    assert result.ok == 1 and result.errors == 0
    def url(raw):
        return "data:image/png;base64," + base64.b64encode(raw).decode()

    assert stub.requests == [{
        "model": "stub-vlm", "max_tokens": 512, "temperature": 0.0,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},  # text alone: a string
            {"role": "user", "content": [
                {"type": "text", "text": "=== Session 1 (Date: 2024/02/01) ===\nLook at my mug "},
                {"type": "image_url", "image_url": {"url": url(a)}},
                {"type": "text", "text": " nice?"}]},
            {"role": "assistant", "content": "Lovely."},
            {"role": "user", "content": [
                {"type": "text", "text": "=== Session 2 (Date: 2024/02/10) ==="},
                {"type": "image_url", "image_url": {"url": url(b)}},
                {"type": "text", "text": "Two pics"}]},
            {"role": "user", "content":
                "Directly output the answer with no extra output.\nQuestion Date: 2024/03/01\n"
                "Question: What colour was the mug?\n"},
        ]}]
    [rec] = _lines(tmp_path / "run")
    assert rec["question_id"] == "q1" and rec["status"] == "ok"
    assert rec["prediction"] == "It was red."
    assert rec["scores"]["rule"] == 1.0 and "subem" in rec["scores"] and "f1" in rec["scores"]
    assert rec["score_details"]["rule"]["version"]
    assert rec["input_tokens"] > 0 and rec["refused"] is False
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["token_counter"]["text_tokenizer"] == "o200k_base"
    assert manifest["packages"]["pydantic"]  # looked up once the first request went out
    assert manifest["benchmark"]["inputs"]
    assert "OPENAI_API_KEY" not in json.dumps(manifest).replace('"OPENAI_API_KEY"', "")


def test_retries_then_error_recorded_apart_and_retried_on_rerun(tmp_path):
    data = write_memlens(tmp_path, 3)
    with StubServer(answer=colour_answer) as stub:
        stub.plan = [500, 429]  # two transient failures, absorbed by retries
        r1 = run(_config(tmp_path, data, stub.base_url, concurrency=1, max_attempts=3))
        assert (r1.ok, r1.errors) == (3, 0)
        assert len(stub.requests) == 5
        stub.plan = [503, 503]  # one question fails for good with 2 attempts
        r2 = run(_config(tmp_path, data, stub.base_url, out="run2", concurrency=1,
                         max_attempts=2, cache=False))
        assert (r2.ok, r2.errors) == (2, 1)
        errors = [r for r in read_records(tmp_path / "run2").values() if r.status == "error"]
        assert errors[0].response.error.kind == "http_503" and errors[0].scores == {}
        r3 = run(_config(tmp_path, data, stub.base_url, out="run2", concurrency=1,
                         max_attempts=2, cache=False))
        assert (r3.done, r3.ok, r3.skipped) == (1, 1, 2)  # only the failed one is retried
    recs = read_records(tmp_path / "run2")
    assert len(_lines(tmp_path / "run2")) == 3 and all(r.status == "ok" for r in recs.values())


def test_timeout_is_retried(tmp_path):
    data = write_memlens(tmp_path, 1)
    with StubServer(answer=colour_answer) as stub:
        stub.plan, stub.hang_s = ["hang"], 3
        r = run(_config(tmp_path, data, stub.base_url, timeout_s=0.5, max_attempts=3))
    assert r.ok == 1 and len(stub.requests) == 2


def test_cache_means_no_new_calls(tmp_path):
    data = write_memlens(tmp_path, 4)
    with StubServer(answer=colour_answer) as stub:
        run(_config(tmp_path, data, stub.base_url, out="a"))
        assert len(stub.requests) == 4
        run(_config(tmp_path, data, stub.base_url, out="b"))
        assert len(stub.requests) == 4
    a, b = read_records(tmp_path / "a"), read_records(tmp_path / "b")
    assert {k: v.scores for k, v in a.items()} == {k: v.scores for k, v in b.items()}
    assert all(r.response.cached for r in b.values())


def test_limit_shard_and_merge(tmp_path):
    data = write_memlens(tmp_path, 12)
    with StubServer(answer=colour_answer) as stub:
        assert run(_config(tmp_path, data, stub.base_url, out="lim", limit=5)).done == 5
        full = run(_config(tmp_path, data, stub.base_url, out="full"))
        s0 = run(_config(tmp_path, data, stub.base_url, out="s0", shard=(0, 2)))
        s1 = run(_config(tmp_path, data, stub.base_url, out="s1", shard=(1, 2)))
    assert full.done == 12 and s0.done + s1.done == 12 and s0.done and s1.done
    assert not set(read_records(tmp_path / "s0")) & set(read_records(tmp_path / "s1"))
    merge_runs([str(tmp_path / "s0"), str(tmp_path / "s1")], str(tmp_path / "merged"))
    merged, whole = read_records(tmp_path / "merged"), read_records(tmp_path / "full")
    assert {k: v.scores for k, v in merged.items()} == {k: v.scores for k, v in whole.items()}
    # shards must be complete (or --partial, recorded) and the output a new folder
    with pytest.raises(ConfigError, match=r"incomplete: 1/2 missing"):
        merge_runs([str(tmp_path / "s0")], str(tmp_path / "half"))
    status = merge_runs([str(tmp_path / "s0")], str(tmp_path / "half"), partial=True)
    assert status["records"] == s0.done
    manifest = json.loads((tmp_path / "half" / "manifest.json").read_text())
    assert manifest["missing_shards"] == ["1/2"]
    with pytest.raises(ConfigError, match="one of the runs being merged"):
        merge_runs([str(tmp_path / "s0"), str(tmp_path / "s1")], str(tmp_path / "s0"))
    with pytest.raises(ConfigError, match="shards of different splits"):
        merge_runs([str(tmp_path / "s0"), str(tmp_path / "full")], str(tmp_path / "mixed"))


def test_rerun_with_other_config_is_refused(tmp_path):
    data = write_memlens(tmp_path, 1)
    with StubServer(answer=colour_answer) as stub:
        run(_config(tmp_path, data, stub.base_url))
        with pytest.raises(ConfigError, match="context_mode"):
            run(_config(tmp_path, data, stub.base_url, context_mode="text"))


def test_missing_image_error_or_recorded(tmp_path):
    data = write_memlens(tmp_path, 2)
    (tmp_path / "img" / "mug1.png").unlink()
    with StubServer(answer=colour_answer) as stub:
        with pytest.raises(InputError, match=r"q001.*images"):
            run(_config(tmp_path, data, stub.base_url))
        # q000's request may or may not have gone out before the loader reached q001: count
        # only the second run's requests, uncached so that it sends both
        before = len(stub.requests)
        r = run(_config(tmp_path, data, stub.base_url, out="allow", allow_missing_images=True,
                        cache=False))
        assert r.ok == 2
        sent = [json.dumps(b) for b in stub.requests[before:]]
        assert len(sent) == 2
    recs = read_records(tmp_path / "allow")
    assert recs["q001"].missing_images == ["img/mug1.png"] and recs["q000"].missing_images == []
    assert sum("data:image/png" in s for s in sent) == 1  # q000 still sends its image


def test_over_length_policies(tmp_path):
    data = write_memlens(tmp_path, 1)
    with StubServer(answer=colour_answer) as stub:
        # --overflow error: counted before the first request and refused (design 0043)
        with pytest.raises(ConfigError, match="1 of the 1 counted are over") as info:
            run(_config(tmp_path, data, stub.base_url, out="err", max_context_tokens=50))
        assert stub.requests == [] and not (tmp_path / "err").exists()
        full_tokens = int(re.search(r"the largest ([\d,]+) tokens", str(info.value))
                          .group(1).replace(",", ""))
        run(_config(tmp_path, data, stub.base_url, out="drop", overflow="drop-oldest",
                    max_context_tokens=full_tokens - 5))
        [rec] = read_records(tmp_path / "drop").values()
    assert rec.status == "ok" and rec.dropped_sessions == 1
    text = json.dumps(stub.requests[0])
    assert "Session 1 " not in text and "=== Session 2 (Date: 2024/02/10) ===" in text


def test_sigkill_midway_then_resume_loses_and_duplicates_nothing(tmp_path):
    n = 30
    data = write_memlens(tmp_path, n)
    with StubServer(answer=colour_answer, latency_s=0.05) as stub:
        def cmd(out: str) -> list[str]:
            return [sys.executable, "-m", "memgauge.cli", "run", "--bench", "memlens",
                    "--data", str(data), "--image-dir", str(tmp_path), "--model",
                    "openai:stub-vlm", "--base-url", stub.base_url, "--out",
                    str(tmp_path / out), "--concurrency", "2", "--no-cache"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(cmd("killed"), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        records = tmp_path / "killed" / "records.jsonl"
        deadline = time.time() + 60
        while time.time() < deadline:
            if records.exists() and len(records.read_bytes().splitlines()) >= 8:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done_before = len(read_records(tmp_path / "killed"))
        assert 8 <= done_before < n
        subprocess.run(cmd("killed"), env=env, check=True, capture_output=True)
        subprocess.run(cmd("clean"), env=env, check=True, capture_output=True)
    lines = _lines(tmp_path / "killed")
    assert len(lines) == n and len({x["question_id"] for x in lines}) == n
    killed, clean = read_records(tmp_path / "killed"), read_records(tmp_path / "clean")
    assert {k: v.scores for k, v in killed.items()} == {k: v.scores for k, v in clean.items()}
    assert 0 < sum(r.scores["rule"] for r in clean.values()) < n
