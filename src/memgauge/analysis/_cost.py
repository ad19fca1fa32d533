"""The cost of memory per system (design 0027): tokens per question and per correct answer,
answer and ingest latency, memory size, and dollars with a prices file.

Counts come from the records alone. A record's tokens are its answer's server counts
(``response.usage``) plus its share of the ingest tokens its system reported
(``record.cost``); a record without ``cost`` (written before issue 13) or without answer
usage is *unknown* and left out, with the number left out shown, never counted as 0. A
system that reports no ingest tokens (full-context: no ingest-time calls) counts 0 for them.
Only answered (``status == "ok"``) records count; errors are reported apart.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memgauge.errors import InputError
from memgauge.schema import Record

__all__ = [
    "ALL_TIERS",
    "LONG_CONTEXT",
    "MEMORY_AGENT",
    "CostRow",
    "Price",
    "Spread",
    "cost_row",
    "family_kind",
    "load_prices",
    "price_for",
]

ALL_TIERS = "all tiers"
LONG_CONTEXT = "long-context"
MEMORY_AGENT = "memory agent"
LONG_CONTEXT_SYSTEMS = frozenset({"full-context"})
PRICE_FIELDS = ("input", "output")


@dataclass(frozen=True)
class Price:
    """Dollars per 1M input and output tokens."""

    input: float
    output: float

    def dollars(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


def load_prices(path: str | Path) -> dict[str, Price]:
    """``{"<model spec or name>": {"input": $/1M, "output": $/1M}}`` from a JSON or TOML file
    (TOML by the ``.toml`` suffix). Anything else is an :class:`InputError` naming the file,
    the model and the field."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the prices file: {exc.strerror or exc}",
                         file=str(path)) from None
    try:
        if path.suffix.lower() == ".toml":
            data: Any = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, TOMLDecodeError
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise InputError(f"not valid {kind}: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or not data:
        raise InputError('must map model names to {"input": $/1M, "output": $/1M}',
                         file=str(path))
    return {str(model): _price(path, str(model), entry) for model, entry in data.items()}


def _price(path: Path, model: str, entry: Any) -> Price:
    if not isinstance(entry, dict):
        raise InputError('must be {"input": $/1M tokens, "output": $/1M tokens}',
                         file=str(path), item=model)
    unknown = sorted(set(entry) - set(PRICE_FIELDS))
    if unknown:
        raise InputError(f"unknown field(s) {', '.join(map(repr, unknown))}; a price has "
                         "input and output ($ per 1M tokens)", file=str(path), item=model)
    values = []
    for name in PRICE_FIELDS:
        value = entry.get(name)
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value < 0):
            raise InputError(f"needs a number ≥ 0 ($ per 1M tokens), got {value!r}",
                             file=str(path), item=model, field=name)
        values.append(float(value))
    return Price(*values)


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of a run's ``--model`` spec: the spec itself (``openai:gpt-4o``), else its
    name without the provider (``gpt-4o``)."""
    if model in prices:
        return prices[model]
    _, sep, name = model.partition(":")
    return prices.get(name) if sep and name else None


def family_kind(system: str) -> str:
    """``long-context`` for a system that puts the history in the prompt, else ``memory
    agent`` (the two sides of MemLens's comparison)."""
    return LONG_CONTEXT if system in LONG_CONTEXT_SYSTEMS else MEMORY_AGENT


@dataclass(frozen=True)
class Spread:
    """Median and 95th percentile (linear interpolation) of ``n`` values; ``nan`` at n = 0."""

    median: float
    p95: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(math.nan, math.nan, 0)
        arr = np.asarray(values, dtype=float)
        return cls(float(np.median(arr)), float(np.percentile(arr, 95)), len(values))


@dataclass(frozen=True)
class CostRow:
    """One system at one tier (or over ``all tiers``): what its answered questions cost.

    ``n_known``: ok records whose tokens are all known (the base of the token and dollar
    figures); ``n_correct``: those of them right under the primary scorer."""

    system: str
    tier: str
    kind: str  # long-context | memory agent
    model: str
    n_ok: int
    n_known: int
    n_correct: int
    tokens_per_question: float
    input_tokens_per_question: float
    output_tokens_per_question: float
    ingest_tokens_per_question: float
    tokens_per_correct: float
    n_ingest_reported: int  # known records whose system reported its ingest tokens
    answer_latency_s: Spread  # answer calls, cache hits left out
    ingest_s_per_question: Spread
    total_s_per_question: Spread  # ingest share + answer call, cache hits left out
    memory_items: Spread
    memory_bytes: Spread
    dollars_per_question: float | None
    dollars_per_correct: float | None
    price_note: str = ""


def _tokens(r: Record) -> tuple[int, int, int] | None:
    """(input, output, of which ingest) tokens of one record; None when unknown."""
    usage = r.response.usage
    if r.cost is None or usage.input_tokens is None or usage.output_tokens is None:
        return None
    ingest_in = r.cost.ingest_prompt_tokens or 0
    ingest_out = r.cost.ingest_completion_tokens or 0
    return (usage.input_tokens + ingest_in, usage.output_tokens + ingest_out,
            ingest_in + ingest_out)


def cost_row(system: str, tier: str, kind: str, model: str, records: Sequence[Record],
             primary: str | None, prices: Mapping[str, Price] | None,
             prices_file: str = "") -> CostRow:
    """The cost figures of ``records`` (one system, one tier or all)."""
    ok = [r for r in records if r.status == "ok"]
    known = [(r, t) for r in ok if (t := _tokens(r)) is not None]
    n = len(known)
    total_in = sum(t[0] for _, t in known)
    total_out = sum(t[1] for _, t in known)
    n_correct = sum(1 for r, _ in known
                    if primary is not None and r.scores.get(primary, 0.0) >= 1)

    def per(total: float, count: int) -> float:
        return total / count if count else math.nan

    with_cost = [r for r in ok if r.cost is not None]
    answer_s = [r.cost.answer_s for r in with_cost
                if r.cost.answer_s is not None and not r.response.cached]
    dollars_q = dollars_c = None
    note = ""
    if prices is not None:
        price = price_for(model, prices)
        if price is None:
            note = f"no price for model {model!r} in {prices_file or 'the prices file'}"
        elif n:
            spent = price.dollars(total_in, total_out)
            dollars_q = spent / n
            dollars_c = spent / n_correct if n_correct else None
    return CostRow(
        system=system, tier=tier, kind=kind, model=model, n_ok=len(ok), n_known=n,
        n_correct=n_correct,
        tokens_per_question=per(total_in + total_out, n),
        input_tokens_per_question=per(total_in, n),
        output_tokens_per_question=per(total_out, n),
        ingest_tokens_per_question=per(sum(t[2] for _, t in known), n),
        tokens_per_correct=per(total_in + total_out, n_correct),
        n_ingest_reported=sum(1 for r, _ in known if r.cost is not None
                              and r.cost.ingest_prompt_tokens is not None),
        answer_latency_s=Spread.of(answer_s),
        ingest_s_per_question=Spread.of([r.cost.ingest_s for r in with_cost]),
        total_s_per_question=Spread.of([r.cost.ingest_s + r.cost.answer_s for r in with_cost
                                        if r.cost.answer_s is not None
                                        and not r.response.cached]),
        memory_items=Spread.of([r.cost.memory_items for r in with_cost
                                if r.cost.memory_items is not None]),
        memory_bytes=Spread.of([r.cost.memory_bytes for r in with_cost
                                if r.cost.memory_bytes is not None]),
        dollars_per_question=dollars_q, dollars_per_correct=dollars_c, price_note=note,
    )
