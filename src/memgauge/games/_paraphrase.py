"""Optional paraphrasing of generated questions through a ChatModel, with a consistency
check: a paraphrase is kept only if every number (step indices included), every named entity
(quoted names, the string parameters the original names, Crafter's own names) survives and it
is still a question of a length like the original's; otherwise the original stays. Each row
records what happened (``paraphrase``: status, original, why)."""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from typing import Any

from ..models import GenerateConfig, Message, ModelError, TextPart, aclose_if_closable
from .templates._crafter_timeline import ACHIEVEMENTS, ACTIONS, CREATURES, ITEMS, MATERIALS

PROMPT_VERSION = "1"
# What decides that a paraphrase is kept; 2: names and shape checked too (issue 24). In
# benchmark.json, so two benchmarks paraphrased under different guards are told apart.
GUARD_VERSION = "2"
_SYSTEM = ("Rewrite the user's question about a game in different words. Keep its meaning "
           "exactly; keep every number, step number, quoted name and game term as written. "
           "Reply with the rewritten question only, on one line.")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# A quote opens and closes outside a word: the apostrophe of "game's" opens nothing.
_QUOTED = re.compile(r"(?<!\w)'([^']+)'(?!\w)|(?<!\w)\"([^\"]+)\"(?!\w)")
# A template's parenthesis defines what is counted ("(whether or not it worked)", "(in grid
# cells, ignoring obstacles)"): a paraphrase keeps it word for word, as a quoted name.
_PARENTHESIS = re.compile(r"\([^()]+\)")
# Names a question may carry without a parameter for them ("a zombie or an arrow hurt you").
# "do" is left out: as an English word it is in most questions ("how many wood do you have").
GAME_NAMES = frozenset({*ACTIONS, *MATERIALS, *ITEMS, *CREATURES, *ACHIEVEMENTS} - {"do"})
# A paraphrase is a rewording, not a summary or an essay: "A" for "What killed you?" is out.
MIN_WORDS_RATIO = 0.5
MAX_WORDS_RATIO = 2.0


def _canonical(text: str) -> str:
    """Case-folded, ``_`` as a space: "wood_pickaxe" and "Wood pickaxe" are one name."""
    return " ".join(text.casefold().replace("_", " ").split())


def _named(text: str, names: list[str]) -> list[str]:
    """The ``names`` that ``text`` names as whole words. Longer names go first and their
    words are then taken out, so "wood" is not found inside "wood pickaxe" ("key" is never
    found inside "monkey")."""
    rest = _canonical(text)
    found = []
    for name in sorted(dict.fromkeys(names), key=lambda n: (-len(_canonical(n)), n)):
        pattern = rf"(?<![\w-]){re.escape(_canonical(name))}(?![\w-])"
        if _canonical(name) and re.search(pattern, rest):
            found.append(name)
            rest = re.sub(pattern, " | ", rest)
    return found


def _param_names(params: dict[str, Any]) -> list[str]:
    """The string parameters, and the name part of an event ("make:wood_pickaxe")."""
    out = []
    for value in params.values():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str):
                out += [v, v.split(":", 1)[1]] if ":" in v else [v]
    return out


def protected(text: str, params: dict[str, Any]) -> tuple[Counter[str], list[str]]:
    """What a paraphrase must keep: the numbers (as a multiset) and the entities (quoted
    names and parentheses, string parameters that the original names, and Crafter's names
    in it)."""
    numbers = Counter(_NUMBER.findall(text))
    quoted = [a or b for a, b in _QUOTED.findall(text)] + _PARENTHESIS.findall(text)
    return numbers, _named(text, [*quoted, *_param_names(params), *GAME_NAMES])


def _shape_problem(original: str, candidate: str) -> str | None:
    """Why ``candidate`` is not a question like ``original`` (None when it is)."""
    if not candidate or "\n" in candidate:
        return "empty or more than one line"
    if original.endswith("?") and not candidate.endswith("?"):
        return "not a question (no question mark at the end)"
    if not original.endswith("?") and not candidate.endswith(("?", ".")):
        return "not a sentence (no full stop or question mark at the end)"
    want, got = len(original.split()), len(candidate.split())
    low, high = math.ceil(want * MIN_WORDS_RATIO), math.floor(want * MAX_WORDS_RATIO)
    if not low <= got <= high:
        return f"{got} words for a question of {want} (kept: {low}–{high})"
    return None


def why_rejected(original: str, candidate: str, params: dict[str, Any]) -> str | None:
    """None when ``candidate`` keeps everything ``original`` must keep; else what it lost."""
    problem = _shape_problem(original.strip(), candidate.strip())
    if problem is not None:
        return problem
    want_numbers, entities = protected(original, params)
    got_numbers = Counter(_NUMBER.findall(candidate))
    if got_numbers != want_numbers:
        return (f"numbers {sorted(want_numbers.elements())} became "
                f"{sorted(got_numbers.elements())}")
    kept = set(_named(candidate, entities))
    lost = [e for e in entities if e not in kept]
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
            await aclose_if_closable(model)  # the HTTP session belongs to this event loop

    asyncio.run(run())
    statuses = Counter(r["paraphrase"]["status"] for r in rows)
    return {"model": model.describe(), "prompt_version": PROMPT_VERSION,
            "guard_version": GUARD_VERSION,
            "kept": statuses["kept"], "rejected": statuses["rejected"],
            "errors": statuses["error"]}
