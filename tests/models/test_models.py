"""Model clients: the OpenAI-compatible client against the stub, replay, create_model."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers.datasets import make_png
from helpers.stub_server import StubServer

from memgauge.errors import ConfigError, InputError
from memgauge.media import ImageEncoder, ImagePolicy, ImageResolver
from memgauge.models import (
    GenerateConfig,
    ImagePart,
    Message,
    ModelError,
    ModelSettings,
    ReplayModel,
    TextPart,
    create_model,
)


def _settings(url: str, **kw) -> ModelSettings:
    return ModelSettings(base_url=url, retry_base_s=0.01, **kw)


def test_no_key_and_no_base_url_is_a_clear_error():
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        create_model("openai:gpt-x", ModelSettings())
    with pytest.raises(ConfigError, match="provider:name"):
        create_model("gpt-x")
    with pytest.raises(ConfigError, match="unknown model"):
        create_model("nope:x")


def test_key_from_named_env_var_is_sent_and_never_described(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret-123")
    seen = {}
    with StubServer(answer=lambda b: "ok") as stub:
        m = create_model("openai:m", _settings(stub.base_url, api_key_env="MY_KEY"))
        asyncio.run(m.generate([Message("user", [TextPart("hi")])], GenerateConfig()))
        seen["desc"] = json.dumps(m.describe())
    assert "sk-secret-123" not in seen["desc"] and "MY_KEY" in seen["desc"]
    assert stub.headers[0]["Authorization"] == "Bearer sk-secret-123"


def test_url_mode_sends_source_urls_and_resize_policy_applies(tmp_path):
    make_png(tmp_path / "big.png", "red", (1600, 800))
    ref = ImageResolver(tmp_path).resolve({"file": "big.png", "image_url": "https://x.org/b.png"},
                                          file="f", item="i", field="images[0]")
    msgs = [Message("user", [ImagePart(ref), TextPart("what?")])]
    enc = ImageEncoder(ImagePolicy(max_side=800))

    async def go(url: str) -> None:
        url_model = create_model("openai:m", _settings(url, image_mode="url"))
        await url_model.generate(msgs, GenerateConfig())
        inline = create_model("openai:m", _settings(url, encoder=enc, cache=None))
        await inline.generate(msgs, GenerateConfig())
        await inline.generate(msgs, GenerateConfig(max_tokens=7))

    with StubServer(answer=lambda b: "ok") as stub:
        asyncio.run(go(stub.base_url))
    parts = [r["messages"][0]["content"][0]["image_url"]["url"] for r in stub.requests]
    assert parts[0] == "https://x.org/b.png"
    assert parts[1].startswith("data:image/png;base64,") and parts[1] == parts[2]
    assert enc.stats()["encodes"] == 1  # encoded once, reused
    import base64
    import io

    from PIL import Image

    im = Image.open(io.BytesIO(base64.b64decode(parts[1].split(",", 1)[1])))
    assert im.size == (800, 400)


def test_context_length_400_is_not_retried_and_gets_its_own_kind():
    with StubServer() as stub:
        stub.plan = [400]
        stub.answer = lambda b: "unused"
        m = create_model("openai:m", _settings(stub.base_url))

        # Our stub's 400 message does not mention length: a plain non-retryable http_400.
        with pytest.raises(ModelError) as info:
            asyncio.run(m.generate([Message("user", [TextPart("x")])], GenerateConfig()))
    assert info.value.kind == "http_400" and info.value.attempts == 1
    assert len(stub.requests) == 1


def test_retries_exhausted_reports_attempts():
    with StubServer() as stub:
        stub.plan = [500, 500, 500]
        m = create_model("openai:m", _settings(stub.base_url, max_attempts=3))
        with pytest.raises(ModelError) as info:
            asyncio.run(m.generate([Message("user", [TextPart("x")])], GenerateConfig()))
    assert (info.value.kind, info.value.attempts, info.value.retryable) == ("http_500", 3, True)


def test_replay_reads_reference_json_our_jsonl_and_hypotheses(tmp_path):
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"data": [
        {"question_id": "a", "raw_prediction": "<think>x</think>A", "prediction": "A"},
        {"question_id": "b", "raw_prediction": "B only raw"}]}))
    ours = tmp_path / "records.jsonl"
    ours.write_text('{"question_id": "c", "status": "ok", "prediction": "C"}\n'
                    '{"question_id": "d", "status": "error", "prediction": null}\n')
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text('{"question_id": "e", "hypothesis": "E"}\n')
    msgs = [Message("user", [TextPart("q")])]
    r = ReplayModel(str(ref))
    assert asyncio.run(r.generate(msgs, GenerateConfig(), question_id="a")).text == "A"
    assert asyncio.run(r.generate(msgs, GenerateConfig(), question_id="b")).text == "B only raw"
    assert ReplayModel(str(ours)).predictions == {"c": "C"}
    assert ReplayModel(str(hyp)).predictions == {"e": "E"}
    with pytest.raises(ModelError, match="no saved prediction"):
        asyncio.run(r.generate(msgs, GenerateConfig(), question_id="zzz"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question_id": "a"}]))
    with pytest.raises(InputError, match="prediction"):
        ReplayModel(str(bad))


def test_a_base_url_that_is_not_http_is_a_config_error():
    for url in ("127.0.0.1:8000/v1", "ftp://host/v1", "http:///v1"):
        with pytest.raises(ConfigError, match="--base-url"):
            create_model("openai:m", _settings(url))
