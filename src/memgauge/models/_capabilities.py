"""What a model (or a system, a captioner) may offer beyond :class:`ChatModel`, declared.

The runner asks for each capability with ``isinstance(obj, Capability)``: an object that
lacks it gets the behaviour written on the Protocol ("without it: ..."), so a plugin model
that implements only ``ChatModel`` works, and one that implements a capability is seen by a
type checker too. Design 0045.

Example::

    class Echo:                      # a ChatModel ...
        name = "echo"
        def describe(self): return {"provider": "echo"}
        async def generate(self, messages, config, *, question_id=None):
            return ModelOutput(text=messages[-1].parts[-1].text)
        async def aclose(self): ...  # ... that is also Closable

    isinstance(Echo(), Closable)     # True: the runner awaits aclose() at the end
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .openai_compat import ModelSettings


@runtime_checkable
class Closable(Protocol):
    """Holds connections to close at the end of a run (without it: nothing to close)."""

    async def aclose(self) -> None: ...


@runtime_checkable
class Releasable(Protocol):
    """Holds something to free without awaiting, e.g. a local server, when a setup fails
    before the event loop runs (without it: nothing to free)."""

    def release(self) -> None: ...


@runtime_checkable
class SendClock(Protocol):
    """Knows when its first request went out (``time.monotonic()``; None before it): the
    run's time to first request (without it: unknown)."""

    first_send_at: float | None


@runtime_checkable
class Configured(Protocol):
    """An OpenAI-compatible client's settings (concurrency, timeout, key variable)."""

    settings: ModelSettings


class EndpointLimits(Protocol):
    timeout_s: float
    api_key_env: str


@runtime_checkable
class Preflighted(Protocol):
    """An endpoint the pre-flight checks before the first request (runner/_preflight.py):
    its base URL and headers (None: nothing to check), its timeout and key variable, and
    where the finding goes (without it: not checked). Models and embedders offer it."""

    name: str
    settings: EndpointLimits

    def preflight_target(self) -> tuple[str, dict[str, str]] | None: ...

    def note_served(self, entry: dict[str, Any] | None, note: str | None = None) -> None: ...


@runtime_checkable
class EndpointChecked(Protocol):
    """An embedder behind an endpoint: what the run's pre-flight checks of it (a
    :class:`Preflighted`). Without it (a local embedder): nothing to check."""

    def endpoint_check(self) -> Preflighted: ...


@runtime_checkable
class EndpointReporting(Protocol):
    """Adapts its concurrency per endpoint (design 0034): the levels now (the progress
    line) and each endpoint over the run (the manifest's ``endpoints``); without it:
    neither is shown."""

    def concurrency_levels(self) -> list[int]: ...

    def endpoint_report(self) -> list[dict[str, Any]]: ...


@runtime_checkable
class CacheIdentified(Protocol):
    """What names the model in cache keys, beyond its name (without it: nothing)."""

    def cache_identity(self) -> dict[str, Any]: ...


@runtime_checkable
class OwnTokenizer(Protocol):
    """Counts tokens with the model's own tokenizer (``--tokenizer model``); without it
    that choice is refused before the first request."""

    tokenizer_name: str

    def count_text(self, text: str) -> int: ...

    def template_overhead(self) -> tuple[int, int]: ...


@runtime_checkable
class KnownContext(Protocol):
    """Knows its context window in tokens (without it: unknown, nothing is checked)."""

    context_tokens: int


@runtime_checkable
class ChoiceConstraining(Protocol):
    """Says whether its decoding can be held to ``GenerateConfig.choices`` (a local
    llama.cpp server's grammar: True); a game's LLM player then sends the legal actions
    as the reply's only choices. Without it, or False: the player asks for them as
    structured output (a JSON schema) instead."""

    constrains_choices: bool


@runtime_checkable
class OpenAIEndpoint(Configured, Protocol):
    """An OpenAI-compatible endpoint a system's own library may call directly (LangMem):
    where, whether a key is sent, and the model's timeout and retry policy."""

    name: str
    base: str

    def sends_key(self) -> bool: ...

    def request_timeout(self, body_bytes: int, max_tokens: int) -> float: ...

    def timeout_retryable(self) -> bool: ...


async def aclose_if_closable(obj: object) -> None:
    """Close ``obj``'s connections if it holds any (:class:`Closable`)."""
    if isinstance(obj, Closable):
        await obj.aclose()


def release_if_releasable(obj: object) -> None:
    """Free what ``obj`` holds without awaiting, if anything (:class:`Releasable`)."""
    if isinstance(obj, Releasable):
        obj.release()
