"""What the OpenAI-compatible client makes of servers' error replies (over-length prompts,
image parts sent to a text-only model, long texts, repeated 500s), what it puts on the wire
(plain string content for text-only messages) and the prefix-cache count it reads back."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.datasets import make_png, write_memlens
from helpers.scripted_server import LLAMA_NO_VISION, LLAMA_OVERFLOW, ScriptedServer, completion
from helpers.stub_server import StubServer

from memgauge.media import ImageResolver
from memgauge.models import (
    GenerateConfig,
    ImagePart,
    Message,
    ModelError,
    ModelSettings,
    TextPart,
    create_model,
)
from memgauge.models.openai_compat import ERROR_TEXT_LIMIT, bounded, classify_error
from memgauge.runner import RunConfig, read_records, run

VLLM_OVERFLOW = {
    "object": "error", "type": "BadRequestError", "param": None, "code": 400,
    "message": "This model's maximum context length is 8192 tokens. However, you requested "
               "9047 tokens (8535 in the messages, 512 in the completion). Please reduce the "
               "length of the messages or completion."}


def _b(obj: Any) -> bytes:
    return json.dumps(obj).encode()


# -- classify_error --------------------------------------------------------------------------

def test_llama_cpp_over_length_reply():
    kind, msg, retryable, details = classify_error(400, _b(LLAMA_OVERFLOW))
    assert (kind, retryable) == ("context_overflow", False)
    assert details == {"input_tokens": 14550, "context_tokens": 8192}
    assert "14550" in msg and "8192" in msg


def test_llama_cpp_over_length_message_without_the_typed_fields():
    body = {"error": {"code": 400, "message": LLAMA_OVERFLOW["error"]["message"]}}
    kind, _msg, retryable, details = classify_error(400, _b(body))
    assert (kind, retryable) == ("context_overflow", False)
    assert details == {"input_tokens": 14550, "context_tokens": 8192}


@pytest.mark.parametrize("body", [
    _b(VLLM_OVERFLOW),  # vLLM's older top-level error object
    _b({"error": VLLM_OVERFLOW}),  # the {"error": {...}} form
    VLLM_OVERFLOW["message"].encode(),  # not JSON at all
])
def test_vllm_openai_over_length_reply(body):
    kind, msg, retryable, details = classify_error(400, body)
    assert (kind, retryable) == ("context_overflow", False)
    assert details == {"input_tokens": 9047, "context_tokens": 8192}
    assert "9047" in msg and "8192" in msg


def test_openai_resulted_in_wording():
    body = {"error": {"type": "invalid_request_error", "code": "context_length_exceeded",
                      "message": "This model's maximum context length is 128000 tokens. "
                                 "However, your messages resulted in 130512 tokens. Please "
                                 "reduce the length of the messages."}}
    kind, _msg, retryable, details = classify_error(400, _b(body))
    assert (kind, retryable) == ("context_overflow", False)
    assert details == {"input_tokens": 130512, "context_tokens": 128000}


def test_over_length_without_counts_is_still_its_own_kind():
    kind, msg, retryable, details = classify_error(
        413, _b({"error": {"message": "Prompt is too long for this model"}}))
    assert (kind, retryable, details) == ("context_overflow", False, {})
    assert "too long" in msg


def test_llama_cpp_no_vision_500_is_not_retried_and_names_the_fix():
    kind, msg, retryable, details = classify_error(500, _b(LLAMA_NO_VISION))
    assert (kind, retryable, details) == ("no_vision", False, {})
    assert "--context-mode text or caption" in msg
    assert "image input is not supported" in msg  # the server's own words are kept


def test_ordinary_errors_keep_their_status_kind():
    assert classify_error(429, b'{"error": {"message": "slow down"}}')[:3] == \
        ("http_429", "slow down", True)
    assert classify_error(503, b"Service Unavailable")[:3] == \
        ("http_503", "Service Unavailable", True)
    assert classify_error(400, b'{"error": {"message": "bad temperature"}}')[:3] == \
        ("http_400", "bad temperature", False)
    # a 5xx that says "exceeds" is not an over-length prompt
    assert classify_error(502, b"upstream exceeds its time budget")[0] == "http_502"


def test_long_error_text_is_bounded_keeping_its_start():
    text = "Template error: " + "x" * 5000
    kind, msg, retryable, _ = classify_error(500, _b({"error": {"message": text}}))
    assert (kind, retryable) == ("http_500", True)
    assert msg.startswith("Template error: xxx")
    hidden = len(text) - ERROR_TEXT_LIMIT
    assert msg.endswith(f"… ({hidden} more characters)")
    assert len(msg) < ERROR_TEXT_LIMIT + 40


def test_bounded_folds_white_space_and_leaves_short_texts_alone():
    assert bounded("a\n\n  b\tc") == "a b c"
    short = "y" * ERROR_TEXT_LIMIT
    assert bounded(short) == short
    assert bounded("z" * (ERROR_TEXT_LIMIT + 1)) == "z" * ERROR_TEXT_LIMIT + "… (1 more characters)"


def _model(url: str, **kw: Any) -> Any:
    return create_model("openai:m", ModelSettings(base_url=url, retry_base_s=0.001,
                                                  retry_cap_s=0.01, **kw))


def _ask(model: Any, messages: list[Message]) -> Any:
    async def go() -> Any:
        try:
            return await model.generate(messages, GenerateConfig(max_tokens=8))
        finally:
            await model.aclose()

    return asyncio.run(go())


HELLO = [Message("user", [TextPart("hello")])]


# -- retries ---------------------------------------------------------------------------------

TEMPLATE_500 = {"error": {"code": 500, "type": "server_error",
                          "message": "Failed to apply the chat template: Expected 'content' "
                                     "to be a string or an array of text parts"}}


def test_a_500_repeated_word_for_word_is_sent_twice_not_six_times():
    with ScriptedServer([(500, TEMPLATE_500)] * 6) as srv, pytest.raises(ModelError) as info:
        _ask(_model(srv.base_url, max_attempts=6), HELLO)
    assert len(srv.requests) == 2
    assert (info.value.kind, info.value.attempts, info.value.retryable) == ("http_500", 2, False)
    assert "chat template" in info.value.message


def test_500s_with_different_messages_are_retried():
    replies = [(500, {"error": {"message": "invalid slot state 1"}}),
               (500, {"error": {"message": "invalid slot state 2"}})]
    with ScriptedServer(replies) as srv:
        out = _ask(_model(srv.base_url, max_attempts=6), HELLO)
    assert out.text == "fine" and out.attempts == 3 and len(srv.requests) == 3


def test_a_bare_repeated_500_keeps_its_retries():
    # "Internal Server Error" is what an overloaded server says too: not deterministic.
    with StubServer() as stub:
        stub.plan = [500] * 3
        with pytest.raises(ModelError) as info:
            _ask(_model(stub.base_url, max_attempts=3), HELLO)
    assert len(stub.requests) == 3 and info.value.attempts == 3


def test_repeated_503s_are_still_retried_to_the_limit():
    with ScriptedServer([(503, TEMPLATE_500)] * 4) as srv, pytest.raises(ModelError) as info:
        _ask(_model(srv.base_url, max_attempts=4), HELLO)
    assert len(srv.requests) == 4 and info.value.attempts == 4


def test_over_length_and_no_vision_replies_are_sent_once_and_carry_details():
    with ScriptedServer([(400, LLAMA_OVERFLOW)]) as srv, pytest.raises(ModelError) as info:
        _ask(_model(srv.base_url), HELLO)
    assert len(srv.requests) == 1 and info.value.kind == "context_overflow"
    assert info.value.details == {"input_tokens": 14550, "context_tokens": 8192}
    with ScriptedServer([(500, LLAMA_NO_VISION)] * 3) as srv, pytest.raises(ModelError) as info:
        _ask(_model(srv.base_url), HELLO)
    assert len(srv.requests) == 1 and info.value.kind == "no_vision"
    assert info.value.retryable is False


# -- what goes on the wire -------------------------------------------------------------------

def _image(tmp_path: Path) -> Any:
    make_png(tmp_path / "a.png", "red")
    return ImageResolver(tmp_path).resolve({"file": "a.png"}, file="f", item="i",
                                           field="images[0]")


def test_text_only_messages_go_as_plain_strings(tmp_path):
    msgs = [Message("system", [TextPart("Be brief.")]),
            Message("user", [TextPart("first part"), TextPart("second part")]),
            Message("assistant", [TextPart("ok")])]
    with StubServer(answer=lambda b: "fine") as stub:
        _ask(_model(stub.base_url), msgs)
    assert stub.requests[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first part\nsecond part"},
        {"role": "assistant", "content": "ok"}]


def test_messages_with_images_keep_content_arrays(tmp_path):
    msgs = [Message("system", [TextPart("Be brief.")]),
            Message("user", [TextPart("look"), ImagePart(_image(tmp_path))]),
            Message("user", [TextPart("what colour?")])]
    with StubServer(answer=lambda b: "red") as stub:
        _ask(_model(stub.base_url), msgs)
    sent = stub.requests[0]["messages"]
    assert sent[0]["content"] == "Be brief."
    assert sent[2]["content"] == "what colour?"
    parts = sent[1]["content"]
    assert isinstance(parts, list) and [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[0]["text"] == "look"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")


def _run_config(tmp_path: Path, data: Path, url: str, out: str, **kw: Any) -> RunConfig:
    return RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                     out=str(tmp_path / out), model="openai:stub", base_url=url,
                     progress=False, retry_base_s=0.01, **kw)


def test_a_run_sends_strings_in_text_mode_and_arrays_only_where_images_are(tmp_path):
    data = write_memlens(tmp_path, 2)
    with StubServer(answer=lambda b: "red") as stub:
        run(_run_config(tmp_path, data, stub.base_url, "text", context_mode="text"))
        run(_run_config(tmp_path, data, stub.base_url, "image", context_mode="image"))
    assert len(stub.requests) == 4
    for body in stub.requests[:2]:  # text mode: every message a string
        assert all(isinstance(m["content"], str) for m in body["messages"])
        assert body["messages"][0]["role"] == "system"
        assert "Question: What colour was mug number" in body["messages"][-1]["content"]
    for body in stub.requests[2:]:  # image mode: only the message with the image is an array
        kinds = [isinstance(m["content"], list) for m in body["messages"]]
        assert sum(kinds) == 1
        [with_image] = [m for m in body["messages"] if isinstance(m["content"], list)]
        assert any(p["type"] == "image_url" for p in with_image["content"])
        assert isinstance(body["messages"][0]["content"], str)  # system
        assert isinstance(body["messages"][-1]["content"], str)  # the question


# -- usage -----------------------------------------------------------------------------------

def test_cached_tokens_reach_the_record(tmp_path):
    data = write_memlens(tmp_path, 2)
    usage = {"prompt_tokens": 120, "completion_tokens": 3, "total_tokens": 123,
             "prompt_tokens_details": {"cached_tokens": 96}}
    replies = [(200, completion("red", usage)), (200, completion("green"))]
    with ScriptedServer(replies) as srv:
        run(_run_config(tmp_path, data, srv.base_url, "r", context_mode="text",
                        concurrency=1))
    recs = read_records(tmp_path / "r")
    assert recs["q000"].response.usage.cached_tokens == 96
    assert recs["q000"].response.usage.input_tokens == 120
    assert recs["q001"].response.usage.cached_tokens is None  # none reported: none claimed
    line = json.loads((tmp_path / "r" / "records.jsonl").read_text().splitlines()[0])
    assert "cached_tokens" in line["response"]["usage"]
