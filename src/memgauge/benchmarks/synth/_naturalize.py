"""Optional LLM naturaliser: rewrite session prose with any ChatModel, keeping needle facts.

Off by default. Each turn is sent to the model with the phrases it must keep verbatim (the
names, products, activities and "X is based in Y" facts that questions rely on) and its
``<image>`` placeholders. A rewrite is accepted only if every kept phrase survives
(case-insensitively) and the placeholder count is unchanged; otherwise the original text
stays and the rejection is counted. Replies go through the response cache, so a rerun with
the same model reproduces the same benchmark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from ...models import ChatModel, GenerateConfig, Message, ModelError, TextPart, aclose_if_closable
from ._text import SessionPlan, TurnPlan

PROMPT = (
    "Rewrite the following chat message so it sounds like a real person (or assistant) "
    "wrote it, with the same meaning and about the same length. Keep every <image> "
    "placeholder exactly as written and where it is. Keep these phrases exactly, word for "
    "word: {keep}. Reply with the rewritten message only."
)


def accepted(original: str, rewrite: str, keep: Iterable[str]) -> bool:
    """A rewrite keeps every protected phrase and every image placeholder."""
    if not rewrite.strip() or rewrite.count("<image>") != original.count("<image>"):
        return False
    low = rewrite.lower()
    return all(k.lower() in low for k in keep)


async def _rewrite(model: ChatModel, turn: TurnPlan, config: GenerateConfig,
                   stats: dict[str, int]) -> None:
    keep = ", ".join(f'"{k}"' for k in turn.keep) or "(none)"
    messages = [Message("system", [TextPart(PROMPT.format(keep=keep))]),
                Message(turn.role if turn.role == "user" else "user", [TextPart(turn.text)])]
    try:
        out = await model.generate(messages, config)
    except ModelError:
        stats["errors"] += 1
        return
    text = out.text.strip()
    if accepted(turn.text, text, turn.keep):
        turn.text = text
        turn.wordings = ()  # the template's other wordings would undo the rewrite
        stats["rewritten"] += 1
    else:
        stats["rejected"] += 1


async def naturalize(sessions: Iterable[SessionPlan], model: ChatModel, *,
                     max_tokens: int = 400) -> dict[str, Any]:
    """Rewrite every turn of ``sessions`` in place; returns counts."""
    stats = {"turns": 0, "rewritten": 0, "rejected": 0, "errors": 0}
    config = GenerateConfig(max_tokens=max_tokens, temperature=0.0)
    turns = [t for s in sessions for t in s.turns]
    stats["turns"] = len(turns)
    try:
        await asyncio.gather(*(_rewrite(model, t, config, stats) for t in turns))
    finally:
        await aclose_if_closable(model)  # the HTTP session belongs to this event loop
    return {**stats, "model": model.describe()}
