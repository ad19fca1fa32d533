"""The full-context system: a long-context model sees the whole history at once."""

from __future__ import annotations

import time
from typing import Any

from ..errors import ConfigError, ContextOverflowError, InputError
from ..models import ModelError
from ..prompt import CONTEXT_MODES, build_prompt, clean_prediction
from ..registry import long_context, system, uses_model
from ..schema import Episode, ErrorInfo, Question, Response, Session
from ._base import MemorySystem, SystemContext, SystemFactory

_MODALITY = {"image": "image", "caption": "caption", "text": "text", "no-context": "text"}


class FullContext:
    name = "full-context"
    # One episode's prompts are the same history plus each question (runner/_prefix.py)
    shares_prefix = True

    def __init__(self, ctx: SystemContext) -> None:
        self.ctx = ctx
        self.modality = _MODALITY[ctx.context_mode]
        self.sessions: list[Session] = []

    def describe(self) -> dict[str, Any]:
        c = self.ctx
        return {"name": self.name, "context_mode": c.context_mode, "instruction": c.instruction,
                "label_images": c.label_images, "max_context_tokens": c.max_context_tokens,
                "overflow": c.overflow, "count_tokens": c.count_tokens}

    async def reset(self, episode: Episode) -> None:
        self.sessions = []

    async def ingest(self, session: Session) -> None:
        self.sessions.append(session)

    def prompt_tokens(self, sessions: list[Session], question: Question) -> int | None:
        """The tokens of the prompt for ``question`` after ``sessions``, no limit applied
        (the run's pre-read counts with it, design 0043)."""
        c = self.ctx
        if not c.count_tokens:
            return None
        return build_prompt(sessions, question, mode=c.context_mode, instruction=c.instruction,
                            label_images=c.label_images, counter=c.counter,
                            image_size=c.image_size).tokens

    async def answer(self, question: Question) -> Response:
        c = self.ctx
        meta: dict[str, Any] = {}
        try:
            prompt = build_prompt(self.sessions, question, mode=c.context_mode,
                                  instruction=c.instruction, label_images=c.label_images,
                                  counter=c.counter if c.count_tokens else None,
                                  image_size=c.image_size,
                                  max_tokens=c.max_context_tokens, overflow=c.overflow)
        except ContextOverflowError as exc:
            return Response(error=ErrorInfo(kind="context_overflow", message=str(exc)),
                            meta={"input_tokens": exc.tokens})
        meta.update(input_tokens=prompt.tokens, dropped_sessions=prompt.dropped_sessions,
                    n_images=len(prompt.images))
        t0 = time.perf_counter()
        try:
            out = await c.model.generate(prompt.messages, c.generate,
                                         question_id=question.question_id)
        except ModelError as exc:
            # the server's own counts of an over-length prompt
            meta.update({k: v for k, v in exc.details.items()
                         if k in ("input_tokens", "context_tokens")})
            return Response(error=ErrorInfo(kind=exc.kind, message=exc.message,
                                            retryable=exc.retryable, attempts=exc.attempts),
                            latency_s=time.perf_counter() - t0, meta=meta)
        except (InputError, OSError) as exc:  # e.g. an image that vanished since loading
            return Response(error=ErrorInfo(kind="bad_input", message=str(exc)),
                            latency_s=time.perf_counter() - t0, meta=meta)
        meta["raw"] = out.text
        meta["attempts"] = out.attempts
        return Response(text=clean_prediction(out.text, c.instruction), usage=out.usage,
                        latency_s=time.perf_counter() - t0, cached=out.cached, meta=meta)


@system("full-context", needs=uses_model, kind=long_context)
def full_context(ctx: SystemContext) -> SystemFactory:
    """The whole history in the prompt (``--context-mode image|text|caption|no-context``)."""
    if ctx.context_mode not in CONTEXT_MODES:
        raise ConfigError(f"unknown context mode {ctx.context_mode!r}")

    ctx.typed_options("full-context", {})

    def make() -> MemorySystem:
        return FullContext(ctx)

    return make
