"""The MemorySystem protocol: what every system under test implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import option_error
from ..media import ImagePolicy
from ..models import ChatModel, GenerateConfig
from ..schema import Episode, Question, Response, Session
from ..tokens import TokenCounter


@runtime_checkable
class MemorySystem(Protocol):
    """One episode's memory: reset, ingest sessions in order, answer questions.

    The runner makes a fresh instance per episode (from a :data:`SystemFactory`), so an
    implementation may keep per-episode state on ``self``. Example::

        class Recency:
            name, modality = "recency", "text"
            def describe(self): return {"name": self.name}
            async def reset(self, episode): self.sessions = []
            async def ingest(self, session): self.sessions.append(session)
            async def answer(self, question): return Response(text=last_line(self.sessions))
    """

    name: str
    modality: str  # image | caption | text

    def describe(self) -> dict[str, Any]: ...

    async def reset(self, episode: Episode) -> None: ...

    async def ingest(self, session: Session) -> None: ...

    async def answer(self, question: Question) -> Response: ...


SystemFactory = Callable[[], MemorySystem]


# What a system (or its factory) may offer beyond :class:`MemorySystem`; the runner asks
# with isinstance (without it: the behaviour each one names). Design 0045. A system that
# holds connections of its own (a memory service) is ``models.Closable``: closed at the end.

@runtime_checkable
class EpisodeEnding(Protocol):
    """Frees what it holds for an episode on a server (letta's agent) once the episode's
    questions are answered. Without it: nothing to free."""

    async def end_episode(self) -> None: ...


@runtime_checkable
class PrefixSharing(Protocol):
    """``shares_prefix`` True: its prompts for one episode's questions share a long prefix
    (the history), so the runner sends them in an order a server's prefix cache can reuse
    (design 0031). Without it: no such order."""

    shares_prefix: bool


@runtime_checkable
class SendsToEndpoints(Protocol):
    """A system factory whose systems send to endpoints of their own (embedders): each
    for the run's pre-flight (a ``models.Preflighted``). Without it: none."""

    def endpoints(self) -> list[Any]: ...


@runtime_checkable
class PromptSizer(Protocol):
    """A system whose prompt is the history it was given (full-context): it can say, before
    any request, how many tokens the prompt for ``question`` after ``sessions`` has, so that
    a tier that cannot fit the model is refused before the first request (design 0043).
    None when it does not count tokens."""

    def prompt_tokens(self, sessions: list[Session], question: Question) -> int | None: ...


@dataclass
class SystemContext:
    """Shared resources and options a system factory receives from the runner."""

    model: ChatModel
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    counter: TokenCounter = field(default_factory=TokenCounter)
    image_policy: ImagePolicy = field(default_factory=ImagePolicy)
    context_mode: str = "image"  # image | text | caption | no-context
    instruction: str = "direct"  # direct | cot | reasoning
    label_images: bool = False
    max_context_tokens: int | None = None
    overflow: str = "error"  # error | drop-oldest
    # Exact BPE counting costs ~0.3 ms per 1,500-character turn: on by default only when a
    # limit needs it, so it never caps throughput unasked (see docs/design/0003).
    count_tokens: bool = False

    def __post_init__(self) -> None:
        if self.max_context_tokens is not None:
            self.count_tokens = True
    options: dict[str, Any] = field(default_factory=dict)
    # The run's response cache (None with --no-cache), for a system's own calls that are
    # worth keeping across runs: image embeddings (retrieval/_image_embed.py).
    cache: Any = None
    # The variable holding the key a system's own endpoints (embedders) are sent with:
    # the run's --api-key-env, as the captioner's.
    api_key_env: str = "OPENAI_API_KEY"

    def image_size(self, part: Any) -> tuple[int, int]:
        """The size an image part is sent at (after the resize policy): what its tokens are
        counted at (docs/design/0003). (0, 0) for an image of unknown size."""
        im = part.image
        if not im.width or not im.height:
            return (0, 0)
        return self.image_policy.target_size(im.width, im.height)

    def typed_options(self, system: str,
                      schema: dict[str, type] | dict[str, tuple[type, str]]) -> dict[str, Any]:
        """The system options this system takes, converted to ``schema``'s
        types; an unknown key or a value of the wrong type is a ConfigFieldError naming it
        (a typo must not be silently ignored)."""
        out: dict[str, Any] = {}
        for key, value in self.options.items():
            kind = schema.get(key)
            if isinstance(kind, tuple):  # (type, help), as registered with @system
                kind = kind[0]
            if kind is None:
                known = ", ".join(sorted(schema)) or "none"
                raise option_error(key, f"{system} has no such option (its options: {known})")
            try:
                out[key] = kind(value)
            except (TypeError, ValueError):
                needed = "a whole number" if kind is int else kind.__name__
                raise option_error(key, f"{system} needs {needed}", repr(value)) from None
        return out
