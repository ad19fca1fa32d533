"""Optional paraphrasing of generated questions through a ChatModel, with a consistency
check: a paraphrase is kept only if every number (step indices included), every quoted
entity and every named parameter of the original survives; otherwise the original stays.
Each row records what happened (``paraphrase``: status, original, why)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any

from ..models import GenerateConfig, Message, ModelError, TextPart

PROMPT_VERSION = "1"
_SYSTEM = ("Rewrite the user's question about a game in different words. Keep its meaning "
           "exactly; keep every number, step number, quoted name and game term as written. "
           "Reply with the rewritten question only, on one line.")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")


def protected(text: str, params: dict[str, Any]) -> tuple[Counter[str], list[str]]:
    """What a paraphrase must keep: the numbers (as a multiset) and the entities (quoted
    names and string parameters that the original names)."""
    numbers = Counter(_NUMBER.findall(text))
    entities = [a or b for a, b in _QUOTED.findall(text)]
    for value in params.values():
        values = value if isinstance(value, list) else [value]
        entities += [v for v in values if isinstance(v, str) and v.casefold() in text.casefold()]
    return numbers, entities


def why_rejected(original: str, candidate: str, params: dict[str, Any]) -> str | None:
    """None when ``candidate`` keeps everything ``original`` must keep; else what it lost."""
    if not candidate.strip() or "\n" in candidate.strip():
        return "empty or more than one line"
    want_numbers, entities = protected(original, params)
    got_numbers = Counter(_NUMBER.findall(candidate))
    if got_numbers != want_numbers:
        return (f"numbers {sorted(want_numbers.elements())} became "
                f"{sorted(got_numbers.elements())}")
    lost = [e for e in entities if e.casefold() not in candidate.casefold()]
    if lost:
        return f"lost {', '.join(repr(e) for e in lost)}"
    return None


async def _one(model: Any, row: dict[str, Any], config: GenerateConfig,
               sem: asyncio.Semaphore) -> None:
    original = row["text"]
    messages = [Message("system", [TextPart(_SYSTEM)]), Message("user", [TextPart(original)])]
    async with sem:
        try:
            out = await model.generate(messages, config, question_id=f"paraphrase:{row['id']}")
        except ModelError as exc:
            row["paraphrase"] = {"status": "error", "original": original,
                                 "why": str(exc)[:300]}
            return
    candidate = (out.text or "").strip()
    why = why_rejected(original, candidate, row["params"])
    if why is not None:
        row["paraphrase"] = {"status": "rejected", "original": original, "why": why}
        return
    row["paraphrase"] = {"status": "kept", "original": original, "why": None}
    row["text"] = candidate
    row["question"] = row["question"][:len(row["question"]) - len(original)] + candidate


def paraphrase_rows(rows: list[dict[str, Any]], model: Any, *,
                    concurrency: int = 8) -> dict[str, Any]:
    """Paraphrase every row in place (the window phrase is left as it is); returns the
    counts and the model, for ``benchmark.json``."""
    config = GenerateConfig(max_tokens=200, temperature=0.0)

    async def run() -> None:
        sem = asyncio.Semaphore(concurrency)
        try:
            await asyncio.gather(*(_one(model, r, config, sem) for r in rows))
        finally:
            if hasattr(model, "aclose"):  # the HTTP session belongs to this event loop
                await model.aclose()

    asyncio.run(run())
    statuses = Counter(r["paraphrase"]["status"] for r in rows)
    return {"model": model.describe(), "prompt_version": PROMPT_VERSION,
            "kept": statuses["kept"], "rejected": statuses["rejected"],
            "errors": statuses["error"]}
