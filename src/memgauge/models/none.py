"""``none:``: for systems that need no model (oracles, retrieval-only baselines)."""

from __future__ import annotations

from typing import Any

from ..registry import model
from ._base import GenerateConfig, Message, ModelError, ModelOutput


class NoModel:
    name = "none"

    def describe(self) -> dict[str, Any]:
        return {"provider": "none"}

    async def generate(self, messages: list[Message], config: GenerateConfig, *,
                       question_id: str | None = None) -> ModelOutput:
        raise ModelError("no_model", "this run has no model (--model none:); the system "
                         "asked for one")


@model("none")
def none(arg: str, settings: Any) -> NoModel:
    """``--model none:``: no model at all, for systems that need none (the oracles)."""
    return NoModel()
