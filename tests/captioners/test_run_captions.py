"""--captioner end to end: the runner against the loopback stub server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _images import colour_png, label_png, user_texts, write_items
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.captioners.vlm import PROMPT_TEXT
from memgauge.cli import app
from memgauge.errors import ConfigError
from memgauge.runner import RunConfig, read_records, run

CAPTION = "A blue carton of Nordic oat milk, 500 g."


def _config(tmp_path: Path, data: Path, base_url: str, out: str, **kw) -> RunConfig:
    return RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                     out=str(tmp_path / out), model="openai:stub-llm", base_url=base_url,
                     context_mode="caption", progress=False, retry_base_s=0.01,
                     cache_path=str(tmp_path / "cache.sqlite"), **kw)


def _is_caption_request(body: dict) -> bool:
    return any(p in user_texts(body) for p in PROMPT_TEXT.values())


def _manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def test_ocr_text_reaches_the_prompt_in_caption_mode(tmp_path):
    label_png(tmp_path / "img" / "label.png")
    data = write_items(tmp_path, ["img/label.png"], n_questions=3)
    with StubServer(answer=lambda body: "Nordic") as stub:
        result = run(_config(tmp_path, data, stub.base_url, "run", captioner="ocr"))
    assert result.ok == 3
    assert len(stub.requests) == 3
    for body in stub.requests:
        text = user_texts(body)
        assert "[Image: " in text and "Nordic" in text and "L42" in text
        assert "[Image]" not in text
    captioner = _manifest(tmp_path / "run")["captioner"]
    assert captioner["name"] == "ocr" and captioner["version"].startswith("rapidocr")
    # three questions share the one haystack image: it is read once
    assert captioner["counts"] == {"images": 1, "captioned": 1, "from_cache": 0, "failed": 0,
                                   "missing": 0}


def test_without_a_captioner_caption_mode_on_uncaptioned_images_is_refused(tmp_path):
    # every image would be shown as "[Image]": refused before the first request (0043)
    label_png(tmp_path / "img" / "label.png")
    data = write_items(tmp_path, ["img/label.png"])
    with StubServer(answer=lambda body: "Nordic") as stub:
        with pytest.raises(ConfigError, match="1 of 1 images have no caption") as info:
            run(_config(tmp_path, data, stub.base_url, "run"))
        assert stub.requests == []
    assert "add captioner" in str(info.value) and not (tmp_path / "run").exists()


def _vlm(body: dict) -> str:
    return CAPTION if _is_caption_request(body) else "Nordic"


def test_a_vlm_captioner_writes_the_caption_once_and_the_cache_keeps_it(tmp_path):
    colour_png(tmp_path / "img" / "a.png", "blue")
    data = write_items(tmp_path, ["img/a.png"], n_questions=2)
    with StubServer(answer=_vlm) as stub:
        kw = {"captioner": "openai:stub-vlm", "captioner_base_url": stub.base_url}
        first = run(_config(tmp_path, data, stub.base_url, "run1", **kw))
        captions = [b for b in stub.requests if _is_caption_request(b)]
        answers = [b for b in stub.requests if not _is_caption_request(b)]
        assert first.ok == 2 and len(captions) == 1
        assert captions[0]["model"] == "stub-vlm"
        assert captions[0]["messages"][0]["content"][0]["type"] == "image_url"
        assert all(f"[Image: {CAPTION}]" in user_texts(b) for b in answers)
        assert _manifest(tmp_path / "run1")["captioner"]["counts"]["captioned"] == 1

        stub.requests.clear()
        run(_config(tmp_path, data, stub.base_url, "run2", **kw))
        assert not any(_is_caption_request(b) for b in stub.requests)  # from the cache
        counts = _manifest(tmp_path / "run2")["captioner"]["counts"]
        assert counts["from_cache"] == 1 and counts["captioned"] == 0


def test_a_failed_caption_is_an_error_of_its_questions_and_is_not_cached(tmp_path):
    colour_png(tmp_path / "img" / "a.png", "blue")
    data = write_items(tmp_path, ["img/a.png"], n_questions=2)
    with StubServer(answer=_vlm) as stub:
        kw = {"captioner": "openai:stub-vlm", "captioner_base_url": stub.base_url,
              "max_attempts": 2}
        stub.plan = [500, 500]  # the caption request and its one retry
        result = run(_config(tmp_path, data, stub.base_url, "run", **kw))
        assert result.errors == 2 and result.ok == 0
        records = read_records(tmp_path / "run")
        for rec in records.values():
            assert rec.response.error.kind == "caption_error"
            assert "a.png" in rec.response.error.message
        summary = _manifest(tmp_path / "run")["captioner"]
        assert summary["counts"]["failed"] == 1 and summary["failures"]

        again = run(_config(tmp_path, data, stub.base_url, "run", **kw))  # resume
        assert again.ok == 2
        assert _manifest(tmp_path / "run")["captioner"]["counts"]["captioned"] == 1


def test_cli_refuses_a_malformed_captions_file_before_any_request(tmp_path):
    colour_png(tmp_path / "img" / "a.png", "blue")
    data = write_items(tmp_path, ["img/a.png"])
    bad = tmp_path / "captions.jsonl"
    bad.write_text('{"sha256": "' + "a" * 64 + '", "caption": "fine"}\n{"sha256": 3}\n')
    with StubServer(answer=_vlm) as stub:
        result = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
            "--out", str(tmp_path / "run"), "--model", "openai:stub-llm",
            "--base-url", stub.base_url, "--context-mode", "caption",
            "--captioner", f"file:{bad}", "--cache-path", str(tmp_path / "c.sqlite")])
    assert result.exit_code == 2, result.output
    assert str(bad) in result.output and "line 2" in result.output
    assert "sha256" in result.output and "Traceback" not in result.output
    assert stub.requests == []


def test_a_vlm_captioners_endpoint_is_checked_before_the_first_question(tmp_path):
    # ModelCaptioner: the captioner's model is pre-flighted with the run's (issue 26)
    import socket

    from memgauge.captioners import ModelCaptioner, create_captioner
    from memgauge.captioners._base import CaptionerSettings

    assert isinstance(create_captioner("openai:v", CaptionerSettings(base_url="http://x")),
                      ModelCaptioner)
    assert not isinstance(create_captioner("gold"), ModelCaptioner)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    colour_png(tmp_path / "img" / "a.png", "blue")
    data = write_items(tmp_path, ["img/a.png"])
    with StubServer(answer=_vlm) as stub:
        with pytest.raises(ConfigError, match="--captioner-base-url"):
            run(_config(tmp_path, data, stub.base_url, "run", captioner="openai:stub-vlm",
                        captioner_base_url=closed))
        assert not any(_is_caption_request(b) for b in stub.requests)
        assert len(stub.requests) <= 1  # at most the answer model's pre-flight
