"""What tests/runner/test_store.py (the lock) and tests/test_media_links.py (links) leave
out of the issue's "two processes on one folder, symlink escape": two real ``memgauge run``
processes at once, and paths that leave the image dir without a link, or an image dir that
is itself a link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from helpers.datasets import colour_answer, make_png, write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app


def test_a_second_memgauge_run_on_a_folder_in_use_is_refused_and_the_first_completes(tmp_path):
    data = write_memlens(tmp_path / "data", 30)
    out = tmp_path / "run"
    with StubServer(answer=colour_answer, latency_s=0.05) as stub:
        args = [sys.executable, "-m", "memgauge.cli", "run", "--bench", "memlens", "--data",
                str(data), "--image-dir", str(data.parent), "--model", "openai:stub",
                "--base-url", stub.base_url, "--out", str(out), "--concurrency", "1"]
        env = {**os.environ, "MEMGAUGE_CACHE_DIR": str(tmp_path / "cache")}
        first = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        try:
            deadline = time.monotonic() + 60
            while not stub.requests:  # it holds the folder once it asks
                assert first.poll() is None, first.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.02)
            second = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60,
                                    check=False)
            _, err = first.communicate(timeout=120)
        finally:
            first.kill()
            first.wait()
    assert second.returncode == 2, second.stderr
    said = " ".join(second.stderr.split())
    assert f"in use by another memgauge process (pid {first.pid} on" in said
    assert "Traceback" not in second.stderr
    assert first.returncode == 0, err
    lines = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert sorted(r["question_id"] for r in lines) == [f"q{i:03d}" for i in range(30)]
    assert len(stub.requests) == 30  # the second process sent nothing


@pytest.mark.parametrize("where", ["../outside.png", "ABSOLUTE"])
def test_an_image_path_that_leaves_the_image_dir_is_never_sent(tmp_path, stub, where):
    data = write_memlens(tmp_path / "bench", 1)
    outside = tmp_path / "outside.png"
    make_png(outside, "green")
    items = json.loads(data.read_text())
    image = str(outside) if where == "ABSOLUTE" else where
    items[0]["haystack_sessions"][0][0]["images"] = [image]
    data.write_text(json.dumps(items))
    res = CliRunner().invoke(app, ["run", "--bench", "memlens", "--data", str(data),
                                   "--image-dir", str(data.parent), "--model", "openai:m",
                                   "--base-url", stub.base_url, "--out", str(tmp_path / "r"),
                                   "--allow-missing-images"])
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert "escapes the image dir" in said or "outside the image dir" in said, said
    assert "images[0]" in said  # names the field
    assert stub.requests == []


def test_an_image_dir_that_is_itself_a_link_is_fine(tmp_path, stub):
    data = write_memlens(tmp_path / "bench", 2)
    os.symlink(data.parent, tmp_path / "linked")
    res = CliRunner().invoke(app, ["run", "--bench", "memlens", "--data", str(data),
                                   "--image-dir", str(tmp_path / "linked"), "--model",
                                   "openai:m", "--base-url", stub.base_url, "--out",
                                   str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert len(stub.requests) == 2
