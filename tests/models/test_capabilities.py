"""The optional capabilities the runner asks of a model are declared (issue 26 §1, design
0045): our OpenAI-compatible client offers them, a model that implements only ChatModel
offers none and still runs through the declared defaults (nothing to close, to free, to
pre-flight), and LangMem learns whether a key is sent from ``sends_key``, not from the
client's private headers."""

from __future__ import annotations

import asyncio

import pytest

from memgauge.models import (
    CacheIdentified,
    ChatModel,
    Closable,
    EndpointReporting,
    ModelSettings,
    OpenAIEndpoint,
    OwnTokenizer,
    Preflighted,
    Releasable,
    ScriptedModel,
    SendClock,
    aclose_if_closable,
    create_model,
    release_if_releasable,
)
from memgauge.models._preflight import check

CAPABILITIES = (CacheIdentified, Closable, EndpointReporting, OpenAIEndpoint, Preflighted,
                SendClock)


def _openai(monkeypatch: pytest.MonkeyPatch, key: str | None):
    if key is None:
        monkeypatch.delenv("MG_TEST_KEY", raising=False)
    else:
        monkeypatch.setenv("MG_TEST_KEY", key)
    return create_model("openai:m", ModelSettings(base_url="http://127.0.0.1:9/v1",
                                                  api_key_env="MG_TEST_KEY"))


@pytest.mark.parametrize("capability", CAPABILITIES, ids=lambda c: c.__name__)
def test_the_openai_client_declares_what_the_runner_asks(monkeypatch, capability) -> None:
    assert isinstance(_openai(monkeypatch, "k"), capability)


def test_a_chat_model_alone_runs_through_the_declared_defaults() -> None:
    model = ScriptedModel(answers={"q": "yes"})
    assert isinstance(model, ChatModel)
    assert not any(isinstance(model, c) for c in (*CAPABILITIES, OwnTokenizer, Releasable))
    asyncio.run(aclose_if_closable(model))  # nothing to close
    release_if_releasable(model)  # nothing to free
    check([(model, None)], {})  # nothing to pre-flight: no request, no error


def test_helpers_close_and_free_what_a_model_holds() -> None:
    class Holding(ScriptedModel):
        closed = released = False

        async def aclose(self) -> None:
            self.closed = True

        def release(self) -> None:
            self.released = True

    model = Holding()
    asyncio.run(aclose_if_closable(model))
    release_if_releasable(model)
    assert model.closed and model.released


def test_sends_key_follows_the_key_variable(monkeypatch) -> None:
    assert _openai(monkeypatch, "secret").sends_key() is True
    assert _openai(monkeypatch, None).sends_key() is False


def test_langmem_endpoint_takes_the_key_only_when_the_model_sends_one(monkeypatch) -> None:
    from memgauge.systems import SystemContext
    from memgauge.systems.langmem_system import run_model_endpoint

    with_key = run_model_endpoint(SystemContext(model=_openai(monkeypatch, "secret")), 64)
    assert with_key.api_key == "secret" and with_key.base_url == "http://127.0.0.1:9/v1"
    without = run_model_endpoint(SystemContext(model=_openai(monkeypatch, None)), 64)
    assert without.api_key is None
