"""The ChatModel protocol and the message types systems hand to models."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..schema import ImageRef, Usage


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    image: ImageRef


Part = TextPart | ImagePart


@dataclass(slots=True)
class Message:
    role: Literal["system", "user", "assistant"]
    parts: list[Part]


@dataclass(frozen=True)
class GenerateConfig:
    """Generation settings; part of every cache key. Greedy by default for reproducibility."""

    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float | None = None
    seed: int | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    # The reply must be exactly one of these strings (a game's legal actions). A model whose
    # decoding can be constrained (``constrains_choices``: a local llama.cpp server, through
    # a grammar) guarantees it; any other gets only what the prompt asks.
    choices: tuple[str, ...] = ()
    # The reply must be one JSON value following this JSON schema (its ``title`` names it).
    # An OpenAI-compatible endpoint gets it as ``response_format`` (llama.cpp, vLLM, SGLang
    # and OpenAI hold decoding to it); one that refuses it gets the prompt's words only
    # (``OpenAICompatModel``: once, recorded). Design 0042.
    json_schema: dict[str, Any] | None = None
    # Whether a reply may be kept in the response cache (None: every reply). A judge's
    # unreadable reply is not kept, so that a rerun asks again instead of replaying the
    # failure (design 0043). Not part of the cache key.
    cacheable: Callable[[str], bool] | None = field(default=None, compare=False)

    def keeps(self, text: str) -> bool:
        """Whether ``text``, as a reply to this request, may be (or stay) cached."""
        return self.cacheable is None or self.cacheable(text)

    def describe(self) -> dict[str, Any]:
        out = {"max_tokens": self.max_tokens, "temperature": self.temperature,
               "top_p": self.top_p, "seed": self.seed, "extra_body": self.extra_body}
        if self.choices:  # only then: every cache key made without choices stays as it was
            out["choices"] = list(self.choices)
        if self.json_schema is not None:  # likewise: a reply made without it is not replayed
            out["json_schema"] = self.json_schema
        return out


@dataclass
class ModelOutput:
    text: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    cached: bool = False
    attempts: int = 1
    meta: dict[str, Any] = field(default_factory=dict)


class ModelError(Exception):
    """A model call that failed for good (after retries, or not retryable)."""

    def __init__(self, kind: str, message: str, *, retryable: bool = False, attempts: int = 1,
                 details: dict[str, Any] | None = None):
        self.kind, self.message, self.retryable, self.attempts = kind, message, retryable, attempts
        self.details = details or {}  # e.g. input_tokens / context_tokens of an over-length prompt
        super().__init__(f"{kind}: {message}")


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns chat messages into a reply.

    Example::

        class Echo:
            name = "echo"
            def describe(self): return {"provider": "echo"}
            async def generate(self, messages, config, *, question_id=None):
                return ModelOutput(text=messages[-1].parts[-1].text)
    """

    name: str

    def describe(self) -> dict[str, Any]: ...

    async def generate(self, messages: list[Message], config: GenerateConfig, *,
                       question_id: str | None = None) -> ModelOutput: ...
