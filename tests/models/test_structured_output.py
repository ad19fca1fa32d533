"""Structured output (design 0042): ``GenerateConfig.json_schema`` goes to an OpenAI-compatible
endpoint as ``response_format``, keys the response cache, and an endpoint that refuses it
is asked once more without it, after which it is never sent again (recorded)."""

from __future__ import annotations

import asyncio

import pytest
from helpers.stub_server import StubServer

from memgauge.cache import ResponseCache
from memgauge.models import (
    GenerateConfig,
    Message,
    ModelError,
    ModelSettings,
    TextPart,
    create_model,
)

SCHEMA = {"title": "facts", "type": "object", "required": ["facts"],
          "properties": {"facts": {"type": "array", "items": {"type": "string"}}}}
ASK = [Message("user", [TextPart("what do you remember?")])]


def _model(url: str, **kw):
    return create_model("openai:m", ModelSettings(base_url=url, retry_base_s=0.01, **kw))


def _ask(model, *calls):
    """Each (messages, config) in turn on one event loop (the client belongs to its loop)."""
    async def go():
        return [await model.generate(messages, config) for messages, config in calls]

    return asyncio.run(go())


def test_a_schema_is_sent_as_response_format_and_none_without_one():
    with StubServer(answer=lambda b: '{"facts": []}') as stub:
        m = _model(stub.base_url)
        _ask(m, (ASK, GenerateConfig(json_schema=SCHEMA)), (ASK, GenerateConfig()))
    sent = stub.requests[0]["response_format"]
    assert sent == {"type": "json_schema", "json_schema": {"name": "facts", "schema": SCHEMA}}
    assert "response_format" not in stub.requests[1]


def test_the_schema_is_part_of_the_cache_key(tmp_path):
    """A reply cached before structured output (or under another schema) is not replayed."""
    cache = ResponseCache(tmp_path / "c.sqlite")
    other = {**SCHEMA, "title": "other"}
    with StubServer(answer=lambda b: '{"facts": []}') as stub:
        m = _model(stub.base_url, cache=cache)
        _ask(m, *((ASK, config) for config in (
            GenerateConfig(), GenerateConfig(json_schema=SCHEMA),
            GenerateConfig(json_schema=SCHEMA), GenerateConfig(json_schema=other))))
    assert len(stub.requests) == 3  # the repeated schema alone came from the cache
    assert GenerateConfig().describe() == {"max_tokens": 512, "temperature": 0.0,
                                           "top_p": None, "seed": None, "extra_body": {}}


def test_an_endpoint_that_refuses_response_format_is_asked_without_it_once_and_recorded(
        tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    with StubServer(answer=lambda b: '{"facts": ["a"]}') as stub:
        stub.refuse_response_format = "Unsupported parameter: 'response_format'"
        m = _model(stub.base_url, cache=cache)
        first, again = _ask(m, (ASK, GenerateConfig(json_schema=SCHEMA)),
                            ([Message("user", [TextPart("and now?")])],
                             GenerateConfig(json_schema=SCHEMA)))
    assert first.text == again.text == '{"facts": ["a"]}'
    # refused once, resent without it; the next request never carries it
    assert ["response_format" in r for r in stub.requests] == [True, False, False]
    assert m.endpoint_report()[0]["structured_output"] == {
        "refused": "Unsupported parameter: 'response_format'"}


def test_another_client_error_is_the_request_s_own_and_not_resent():
    with StubServer() as stub:
        stub.plan = [400]  # "stub error 400": nothing about response_format
        m = _model(stub.base_url)
        with pytest.raises(ModelError) as info:
            _ask(m, (ASK, GenerateConfig(json_schema=SCHEMA)))
    assert info.value.kind == "http_400" and len(stub.requests) == 1
    assert "structured_output" not in m.endpoint_report()[0]
