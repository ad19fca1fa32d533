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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memgauge.ledger import Ledger, Price, ledger_of, load_prices, price_for
from memgauge.registry import BASELINE, LONG_CONTEXT, MEMORY_AGENT, system_kind
from memgauge.schema import Record

__all__ = [
    "ALL_TIERS",
    "BASELINE",
    "LONG_CONTEXT",
    "MEMORY_AGENT",
    "CostRow",
    "Ledger",
    "Price",
    "Spread",
    "cost_row",
    "family_kind",
    "ledger_of",
    "load_prices",
    "price_for",
]

ALL_TIERS = "all tiers"


def family_kind(system: str, options: Mapping[str, Any] | None = None) -> str:
    """``long-context``, ``memory agent`` (the two sides of MemLens's comparison) or
    ``baseline``: what the system declares where it is registered, for its options."""
    return system_kind(system, dict(options or {}))


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
    kind: str  # long-context | memory agent | baseline
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
    # What the records say was spent (all statuses; response-cache replays were not paid):
    # the same sums as the run's ledger and budget (runner/_budget.py, design 0034)
    spent_tokens: int = 0
    spent_usd: float | None = None
    # the judges' calls on these records (meta.judge_usage), apart from the answers; their
    # dollars at each judge model's own price
    judge_spent_tokens: int = 0
    judge_spent_usd: float | None = None


def _tokens(r: Record) -> tuple[int, int, int, int] | None:
    """(input, output, of which ingest, of the input cached) tokens of one record; None
    when unknown."""
    usage = r.response.usage
    if r.cost is None or usage.input_tokens is None or usage.output_tokens is None:
        return None
    ingest_in = r.cost.ingest_prompt_tokens or 0
    ingest_out = r.cost.ingest_completion_tokens or 0
    cached = min(usage.cached_tokens or 0, usage.input_tokens)
    return (usage.input_tokens + ingest_in, usage.output_tokens + ingest_out,
            ingest_in + ingest_out, cached)


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

    with_cost = [(r, r.cost) for r in ok if r.cost is not None]
    answer_s = [c.answer_s for r, c in with_cost
                if c.answer_s is not None and not r.response.cached]
    dollars_q = dollars_c = None
    note = ""
    price = price_for(model, prices) if prices is not None else None
    spent = ledger_of(records)
    if prices is not None:
        if price is None:
            note = f"no price for model {model!r} in {prices_file or 'the prices file'}"
        elif n:
            dollars = price.dollars(total_in, total_out, sum(t[3] for _, t in known))
            dollars_q = dollars / n
            dollars_c = dollars / n_correct if n_correct else None
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
        ingest_s_per_question=Spread.of([c.ingest_s for _, c in with_cost]),
        total_s_per_question=Spread.of([c.ingest_s + c.answer_s for r, c in with_cost
                                        if c.answer_s is not None
                                        and not r.response.cached]),
        memory_items=Spread.of([c.memory_items for _, c in with_cost
                                if c.memory_items is not None]),
        memory_bytes=Spread.of([c.memory_bytes for _, c in with_cost
                                if c.memory_bytes is not None]),
        dollars_per_question=dollars_q, dollars_per_correct=dollars_c, price_note=note,
        spent_tokens=spent.total_tokens, spent_usd=spent.dollars(price),
        judge_spent_tokens=spent.judge_tokens,
        judge_spent_usd=spent.judge_dollars(prices) if spent.judge_tokens else None,
    )
