"""--captioner-model-option: a local: captioner's server options (a VLM GGUF needs its
projector, ``mmproj``), with llama.cpp's server replaced by a fake that serves from a
loopback stub (no VLM GGUF can be had offline, so the plumbing is what is tested)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _images import colour_png, user_texts, write_items
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.captioners import CaptionerSettings, create_captioner
from memgauge.captioners.vlm import PROMPT_TEXT
from memgauge.cli import app
from memgauge.errors import ConfigError, ConfigFieldError
from memgauge.models import local
from memgauge.models._llama_server import LlamaServer
from memgauge.runner import RunConfig, run
from memgauge.runner._manifest import config_hash

CAPTION = "A blue carton of Nordic oat milk."


class FakeLlama:
    """What LocalModel needs of a started LlamaServer; it can see (a VLM with its mmproj)."""

    def __init__(self, options: Any, stub: StubServer) -> None:
        self.options = options
        self.vision = options.mmproj is not None
        self.address = stub.base_url.removesuffix("/v1")
        self._proc: Any = object()
        self.start_limit_s = 30.0

    base_url = property(lambda self: f"{self.address}/v1")
    slots = property(lambda self: self.options.slots)
    n_ctx = property(lambda self: self.options.n_ctx)
    model_id = property(lambda self: self.options.model.name)

    def describe(self) -> dict[str, Any]:
        return {"engine": "fake", "n_ctx": self.n_ctx, "slots": self.slots,
                "vision": self.vision}

    def stop(self) -> None:
        self._proc = None

    def death(self) -> str | None:
        return None  # this stand-in never dies


@pytest.fixture
def servers(monkeypatch):
    """``LlamaServer.start`` replaced: every start is noted and served by ``.stub``."""
    noted = SimpleNamespace(stub=None, started=[])

    def start(options: Any, floor_s: float = 0.0) -> FakeLlama:
        server = FakeLlama(options, noted.stub)
        noted.started.append(server)
        return server

    monkeypatch.setattr(LlamaServer, "start", staticmethod(start))
    monkeypatch.setattr(local, "_SERVERS", {})
    return noted


def _gguf(path: Path, body: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF" + body)
    return path


def _answer(body: dict) -> str:
    return CAPTION if any(p in user_texts(body) for p in PROMPT_TEXT.values()) else "Nordic"


def _config(tmp_path: Path, base_url: str, **kw: Any) -> RunConfig:
    colour_png(tmp_path / "img" / "a.png", "blue")
    data = write_items(tmp_path, ["img/a.png"])
    return RunConfig(bench="memlens", data=str(data), image_dir=str(tmp_path),
                     out=str(tmp_path / "run"), model="openai:stub-llm", base_url=base_url,
                     context_mode="caption", progress=False, retry_base_s=0.01,
                     cache_path=str(tmp_path / "cache.sqlite"), **kw)


def test_the_options_reach_the_captioners_server_and_the_manifest(tmp_path, servers):
    vlm = _gguf(tmp_path / "models" / "vlm.gguf", b"language model")
    proj = _gguf(tmp_path / "models" / "mmproj.gguf", b"projector")
    with StubServer(answer=_answer) as stub:
        servers.stub = stub
        result = run(_config(tmp_path, stub.base_url, captioner=f"local:{vlm}",
                             captioner_model_options={"mmproj": str(proj), "n_ctx": "2048",
                                                      "threads": "1"}))
        answers = [b for b in stub.requests if b["model"] == "stub-llm"]
    assert result.ok == 1
    [started] = servers.started  # the run's model is an endpoint: only the captioner's server
    assert started.options.mmproj == proj.resolve()
    assert (started.options.model, started.options.n_ctx, started.options.threads) == \
        (vlm.resolve(), 2048, 1)
    assert f"[Image: {CAPTION}]" in user_texts(answers[-1])  # the VLM's caption was shown
    described = json.loads((tmp_path / "run" / "manifest.json").read_text())["captioner"]
    assert described["model_options"] == {"mmproj": str(proj), "n_ctx": "2048", "threads": "1"}
    assert described["model"]["mmproj"] == "mmproj.gguf"
    assert described["model"]["mmproj_sha256"] == hashlib.sha256(proj.read_bytes()).hexdigest()


def test_a_bad_key_is_a_config_error_before_any_request(tmp_path, servers):
    vlm = _gguf(tmp_path / "vlm.gguf", b"language model")
    colour_png(tmp_path / "img" / "a.png", "blue")
    data = write_items(tmp_path, ["img/a.png"])
    with StubServer(answer=_answer) as stub:
        servers.stub = stub
        result = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
            "--out", str(tmp_path / "run"), "--model", "openai:stub-llm",
            "--base-url", stub.base_url, "--context-mode", "caption",
            "--captioner", f"local:{vlm}", "--captioner-model-option", "projector=x.gguf",
            "--cache-path", str(tmp_path / "c.sqlite")])
    assert result.exit_code == 2, result.output
    assert "--captioner-model-option projector" in result.output
    assert "unknown option" in result.output and "mmproj" in result.output  # the known keys
    assert "Traceback" not in result.output
    assert stub.requests == [] and servers.started == []


@pytest.mark.parametrize("value", ["n_ctx=abc", "flash_attn=maybe"])
def test_a_bad_value_is_a_config_error_naming_the_field(tmp_path, servers, value):
    """The library names the field (the command line's flag: the test above)."""
    key, _, raw = value.partition("=")
    with pytest.raises(ConfigFieldError, match=f"^captioner_model_options {key}="):
        run(_config(tmp_path, "http://127.0.0.1:9/v1", captioner="local:x.gguf",
                    captioner_model_options={key: raw}))
    assert servers.started == []


def test_a_missing_mmproj_file_is_an_error_naming_it(tmp_path, servers):
    vlm = _gguf(tmp_path / "vlm.gguf", b"language model")
    missing = tmp_path / "no-such-mmproj.gguf"
    with StubServer(answer=_answer) as stub:
        servers.stub = stub
        with pytest.raises(ConfigError) as caught:
            run(_config(tmp_path, stub.base_url, captioner=f"local:{vlm}",
                        captioner_model_options={"mmproj": str(missing)}))
        assert stub.requests == []
    assert str(missing) in str(caught.value)
    assert "captioner_model_options mmproj file" in str(caught.value)
    assert "--" not in str(caught.value).replace(str(missing), "")
    assert servers.started == []


def test_a_local_captioner_without_a_projector_is_refused_before_any_server(
        tmp_path, servers):
    """A text-only GGUF (SmolLM2) as the captioner: one error naming the captioner's option,
    before its server starts, not a no_vision failure per image."""
    vlm = _gguf(tmp_path / "smollm2.gguf", b"language model")
    with StubServer(answer=_answer) as stub:
        servers.stub = stub
        with pytest.raises(ConfigError) as caught:
            run(_config(tmp_path, stub.base_url, captioner=f"local:{vlm}"))
        assert stub.requests == []
    assert "give captioner_model_options mmproj=FILE" in str(caught.value)
    assert "--" not in str(caught.value).replace(str(vlm), "")
    assert servers.started == []


def test_options_are_for_a_local_captioner_only(tmp_path, servers):
    with pytest.raises(ConfigError, match="local: captioner only.*openai:vlm"):
        run(_config(tmp_path, "http://127.0.0.1:9/v1", captioner="openai:vlm",
                    captioner_base_url="http://127.0.0.1:9/v1",
                    captioner_model_options={"n_ctx": "2048"}))
    with pytest.raises(ConfigError, match="not set"):
        run(_config(tmp_path, "http://127.0.0.1:9/v1",
                    captioner_model_options={"n_ctx": "2048"}))


def _version(tmp_path: Path, options: dict[str, str]) -> str:
    vlm = _gguf(tmp_path / "vlm.gguf", b"language model")
    captioner = create_captioner(f"local:{vlm}", CaptionerSettings(model_options=options))
    try:
        return captioner.version
    finally:
        captioner.release()


def test_the_projector_and_chat_template_are_part_of_the_caption_cache_key(tmp_path, servers):
    a = _gguf(tmp_path / "a" / "mmproj.gguf", b"projector a")
    b = _gguf(tmp_path / "b" / "mmproj.gguf", b"projector b")
    same_as_a = _gguf(tmp_path / "c" / "copy.gguf", b"projector a")
    with StubServer(answer=_answer) as stub:
        servers.stub = stub
        with_a = _version(tmp_path, {"mmproj": str(a)})  # without one: refused (above)
        assert _version(tmp_path, {"mmproj": str(b)}) != with_a  # another projector
        assert _version(tmp_path, {"mmproj": str(same_as_a)}) == with_a  # by content
        # speed and room leave the captions, and so the cache, as they were
        assert _version(tmp_path, {"mmproj": str(a), "threads": "1", "n_ctx": "2048"}) \
            == with_a
        assert _version(tmp_path, {"mmproj": str(a), "chat_template": "chatml"}) != with_a


def test_the_run_identity_holds_the_options_that_change_the_captions(tmp_path):
    base = _config(tmp_path, "http://127.0.0.1:9/v1", captioner="local:x.gguf")
    plain = config_hash(base.identity())

    def with_options(**options: str) -> str:
        return config_hash(RunConfig(**{**base.__dict__,
                                        "captioner_model_options": options}).identity())

    assert with_options(threads="1", n_ctx="2048") == plain  # a resume may change them
    assert with_options(mmproj="p.gguf") != plain
    assert with_options(chat_template="chatml") != plain
