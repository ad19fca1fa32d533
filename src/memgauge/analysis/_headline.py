"""The answer a report opens with (design 0050): long context or memory? One row per system
and tier (accuracy with its interval, tokens and seconds per question, ingest cost), and per
tier one sentence on what the numbers support, from a paired test between full context and
the best memory system on the questions both answered."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memgauge.analysis._cost import LONG_CONTEXT, cost_row, family_kind
from memgauge.analysis._metrics import summarize
from memgauge.analysis._paired import PairedResult, paired_compare
from memgauge.schema import Record

__all__ = ["SIGNIFICANCE", "HeadlineRow", "TierVerdict", "headline_row", "tier_verdict"]

SIGNIFICANCE = 0.05  # McNemar's two-sided p under which a difference is called detected


@dataclass(frozen=True)
class HeadlineRow:
    """One system at one tier; figures are ``nan`` where nothing was answered."""

    label: str
    system: str
    kind: str  # long-context | memory agent
    tier: str
    n: int  # questions answered (status ok)
    errors: int
    accuracy: float
    ci_low: float
    ci_high: float
    ci_method: str | None
    tokens_per_question: float  # answer and ingest share, input and output
    seconds_per_question: float  # median: ingest share + answer call
    ingest_tokens_per_question: float
    ingest_s_per_question: float  # median
    scorer: str | None
    run: str


@dataclass(frozen=True)
class TierVerdict:
    tier: str
    sentence: str
    paired: PairedResult | None  # full context (A) against the best memory system (B)
    best_memory: str | None


def headline_row(label: str, system: str, tier: str, records: Sequence[Record], run: str,
                 model: str = "") -> HeadlineRow:
    summary = summarize(list(records))
    primary = summary.primary
    stat = summary.overall.get(primary) if primary else None
    cost = cost_row(system, tier, family_kind(system), model, records, primary, None)
    nan = math.nan
    return HeadlineRow(
        label=label, system=system, kind=family_kind(system), tier=tier, n=summary.n_ok,
        errors=summary.n_errors,
        accuracy=stat.accuracy if stat else nan,
        ci_low=stat.ci_low if stat and stat.ci_low is not None else nan,
        ci_high=stat.ci_high if stat and stat.ci_high is not None else nan,
        ci_method=stat.ci_method if stat else None,
        tokens_per_question=cost.tokens_per_question,
        seconds_per_question=cost.total_s_per_question.median,
        ingest_tokens_per_question=cost.ingest_tokens_per_question,
        ingest_s_per_question=cost.ingest_s_per_question.median,
        scorer=primary, run=run)


def tier_verdict(tier: str, runs: Sequence[tuple[HeadlineRow, Mapping[str, Record]]]
                 ) -> TierVerdict:
    """What one tier's numbers support: full context against the memory system with the
    highest accuracy, paired on the questions both answered (exact McNemar, paired
    bootstrap interval of the difference)."""
    at_tier = [(row, recs) for row, recs in runs if row.tier == tier]
    full = next(((r, recs) for r, recs in at_tier if r.kind == LONG_CONTEXT and r.n), None)
    memory = [(r, recs) for r, recs in at_tier
              if r.kind != LONG_CONTEXT and r.n and not math.isnan(r.accuracy)]
    if full is None:
        return TierVerdict(tier, f"At {tier} full context answered nothing: no comparison.",
                           None, None)
    if not memory:
        return TierVerdict(tier, f"At {tier} no memory system answered anything: no "
                           "comparison.", None, None)
    best, best_records = max(memory, key=lambda pair: pair[0].accuracy)
    scorer = full[0].scorer or best.scorer
    if scorer is None:
        return TierVerdict(tier, f"At {tier} nothing was scored: no comparison.", None,
                           best.label)
    paired = paired_compare(full[1], best_records, scorer=scorer)
    return TierVerdict(tier, _sentence(tier, full[0], best, paired), paired, best.label)


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:.0f}%"


def _sentence(tier: str, full: HeadlineRow, best: HeadlineRow, p: PairedResult) -> str:
    if p.n == 0:
        return (f"At {tier} no question was answered by both full context and {best.label}: "
                "no comparison.")
    interval = (f"paired 95% interval of the difference [{100 * p.ci_low:+.0f}, "
                f"{100 * p.ci_high:+.0f}] points" if not math.isnan(p.ci_low) else
                "no interval")
    both = (f"full context {_pct(p.accuracy_a)}, {best.label} (the best memory system) "
            f"{_pct(p.accuracy_b)}")
    if p.mcnemar_p < SIGNIFICANCE:
        side = "above" if p.difference > 0 else "below"
        return (f"At {tier}, {best.label} scores {abs(100 * p.difference):.0f} points {side} "
                f"full context on the same {p.n} questions ({both}; exact McNemar "
                f"p = {p.mcnemar_p:.3f}, {interval}).")
    return (f"At {tier}, no difference detectable at n = {p.n} ({both}; {p.a_only} questions "
            f"right only with full context, {p.b_only} only with {best.label}; exact McNemar "
            f"p = {p.mcnemar_p:.2f}, {interval}).")
