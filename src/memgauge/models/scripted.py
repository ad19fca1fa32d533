"""A scripted model for tests and dry runs: answers from a table or a function."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ._base import GenerateConfig, Message, ModelError, ModelOutput


class ScriptedModel:
    """Answers ``answers[question_id]``, or ``fn(messages, question_id)``.

    An answer that is an exception instance is raised (to script failures); every call is
    kept in ``calls`` so tests can assert on the exact messages a system built.
    """

    def __init__(self, answers: dict[str, Any] | None = None,
                 fn: Callable[[list[Message], str | None], str] | None = None,
                 *, name: str = "scripted", delay_s: float = 0.0) -> None:
        self.name = name
        self.answers = answers or {}
        self.fn = fn
        self.delay_s = delay_s
        self.calls: list[tuple[list[Message], str | None]] = []

    def describe(self) -> dict[str, Any]:
        return {"provider": "scripted", "name": self.name}

    async def generate(self, messages: list[Message], config: GenerateConfig, *,
                       question_id: str | None = None) -> ModelOutput:
        self.calls.append((messages, question_id))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fn is not None:
            return ModelOutput(text=self.fn(messages, question_id))
        if question_id not in self.answers:
            raise ModelError("scripted_missing", f"no scripted answer for {question_id!r}")
        answer = self.answers[question_id]
        if isinstance(answer, BaseException):
            raise answer
        return ModelOutput(text=str(answer))
