"""How far to trust an LLM judge: agreement with the deterministic rule scorer and between
judges.

On closed-form questions (every answer type but ``free_text``) the typed rule scorer decides
correctness, so a judge that disagrees with it is either too lenient (*over-credit*: judge
correct, rule wrong) or too strict (*under-credit*: judge wrong, rule correct) — the MemLens
"deterministic typed-accuracy audit". Between two judges, agreement is measured on every
answered item both scored. Agreement beyond chance is Cohen's κ.

Records with ``status == "error"`` are counted apart; records whose judge call failed
(``Record.judge_errors()``, no judge score) are listed as judge failures, never as
disagreements. A judge whose every call failed has no score anywhere and is still audited:
its failures are what there is to see.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

from memgauge.analysis._json import json_safe
from memgauge.schema import AnswerType, Record

__all__ = [
    "OVER_CREDIT_WARN",
    "AgreementStat",
    "AuditResult",
    "Disagreement",
    "JudgeFailureItem",
    "JudgePairAudit",
    "JudgeRuleAudit",
    "audit",
    "cohen_kappa",
    "cohen_kappa_labels",
    "judge_check",
]

NO_SUBTYPE = "-"
# A judge as the headline scorer is flagged when it credits more than this share of the
# closed-form items the rule scorer marks wrong (design 0043).
OVER_CREDIT_WARN = 0.10
OVER_CREDIT = "over-credit"  # judge correct, rule wrong: the judge is too lenient
UNDER_CREDIT = "under-credit"  # judge wrong, rule correct: the judge is too strict


def cohen_kappa_labels(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's κ of two raters over categorical labels: ``(p_o - p_e) / (1 - p_e)`` with
    ``p_o`` the share of items with equal labels and ``p_e = sum_c P_a(c) P_b(c)`` the
    agreement expected from each rater's own label frequencies.

    ``nan`` when undefined: no items, or ``p_e == 1`` (both raters give one same label to
    everything). Computed from integer counts, so hand-checkable values come out exact.
    """
    if len(a) != len(b):
        raise ValueError(f"kappa needs equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return math.nan
    agree = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    count_a, count_b = Counter(a), Counter(b)
    chance = sum(count_a[c] * count_b[c] for c in count_a)  # n^2 * p_e
    if chance == n * n:
        return math.nan
    return (n * agree - chance) / (n * n - chance)


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Cohen's κ of two binary raters (e.g. judge correct vs rule correct); ``nan`` when
    there are no items or both raters put every item in the same class."""
    return cohen_kappa_labels([bool(x) for x in a], [bool(y) for y in b])


def _rate(k: int, n: int) -> float:
    return k / n if n else math.nan


@dataclass(frozen=True)
class AgreementStat:
    """A judge against the rule over one group of closed-form items."""

    n: int
    agreement: float  # share of items where both call it correct, or both wrong
    kappa: float
    judge_accuracy: float
    rule_accuracy: float
    over_credit: int  # judge correct, rule wrong
    over_credit_rate: float  # over_credit / n
    under_credit: int  # judge wrong, rule correct
    under_credit_rate: float  # under_credit / n

    @classmethod
    def of(cls, judge_ok: Sequence[bool], rule_ok: Sequence[bool]) -> AgreementStat:
        n = len(judge_ok)
        pairs = list(zip(judge_ok, rule_ok, strict=True))
        over = sum(1 for j, r in pairs if j and not r)
        under = sum(1 for j, r in pairs if r and not j)
        return cls(n=n, agreement=_rate(n - over - under, n),
                   kappa=cohen_kappa(judge_ok, rule_ok),
                   judge_accuracy=_rate(sum(judge_ok), n), rule_accuracy=_rate(sum(rule_ok), n),
                   over_credit=over, over_credit_rate=_rate(over, n),
                   under_credit=under, under_credit_rate=_rate(under, n))


@dataclass(frozen=True)
class Disagreement:
    """One closed-form item where the judge and the rule disagree."""

    question_id: str
    direction: str  # "over-credit" or "under-credit"
    judge_value: float
    rule_value: float
    subtype: str  # "{ability}/{subtype or '-'}"
    answer_type: str


@dataclass(frozen=True)
class JudgeRuleAudit:
    """One judge against the rule scorer on closed-form items."""

    judge: str
    overall: AgreementStat
    by_subtype: dict[str, AgreementStat] = field(default_factory=dict)
    by_answer_type: dict[str, AgreementStat] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)
    free_text: int = 0  # ok free-text items carrying both scores: left out by design
    unpaired: int = 0  # ok closed-form items lacking the judge or the rule score (no failure)


@dataclass(frozen=True)
class JudgePairAudit:
    """Two judges on the ok items both scored (every answer type)."""

    judge_a: str
    judge_b: str
    n: int
    agreement: float  # at the threshold
    kappa: float  # binary, at the threshold
    exact_agreement: float  # equal values (meaningful for five-level scores)
    kappa_values: float  # categorical κ over the values themselves
    mean_abs_diff: float
    a_only: int  # a correct, b wrong
    b_only: int  # b correct, a wrong
    by_ability: dict[str, dict[str, Any]] = field(default_factory=dict)  # n, agreement, kappa
    disagreements: list[str] = field(default_factory=list)  # question ids, at the threshold


@dataclass(frozen=True)
class JudgeFailureItem:
    question_id: str
    kind: str
    message: str


@dataclass(frozen=True)
class AuditResult:
    """Everything ``memgauge audit`` reports; :meth:`to_dict` gives strict JSON."""

    rule: str
    judges: list[str]
    threshold: float
    n_records: int
    n_ok: int
    n_errors: int  # status "error": never scored, counted apart
    judge_vs_rule: dict[str, JudgeRuleAudit] = field(default_factory=dict)
    judge_pairs: list[JudgePairAudit] = field(default_factory=list)
    failures: dict[str, list[JudgeFailureItem]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data; undefined numbers (nan) become ``None``."""
        return json_safe(asdict(self))


def subtype_key(rec: Record) -> str:
    """``"{ability}/{subtype}"``, ``"-"`` for a missing subtype (as in ``summarize``)."""
    return f"{rec.ability}/{rec.subtype if rec.subtype is not None else NO_SUBTYPE}"


def judge_names(ok: Iterable[Record], rule: str) -> list[str]:
    """Judges on ``ok`` records: those with a score and those with only failures (a judge
    whose every call failed has no score at all, and must not vanish from the audit)."""
    names = {name for r in ok for name in (*r.scores, *r.judge_errors())}
    return sorted(n for n in names if "judge" in n and n != rule)


def _failure_of(rec: Record, judge: str) -> JudgeFailureItem | None:
    """The judge failure of ``rec`` for ``judge``, if any: its own entry, or an older
    record's unnamed one, which counts for every judge whose score the record lacks (a
    record that has a judge's score was judged fine by that judge)."""
    if judge in rec.scores:
        return None
    errors = rec.judge_errors()
    info = errors.get(judge, errors.get(""))
    if info is None:
        return None
    return JudgeFailureItem(question_id=rec.question_id, kind=info["kind"],
                            message=info["message"])


def _grouped(keys: Sequence[str], judge_ok: Sequence[bool],
             rule_ok: Sequence[bool]) -> dict[str, AgreementStat]:
    out: dict[str, AgreementStat] = {}
    for key in sorted(set(keys)):
        idx = [i for i, k in enumerate(keys) if k == key]
        out[key] = AgreementStat.of([judge_ok[i] for i in idx], [rule_ok[i] for i in idx])
    return out


def _judge_vs_rule(ok: Sequence[Record], judge: str, rule: str,
                   threshold: float) -> JudgeRuleAudit:
    closed = [r for r in ok if r.answer_type != AnswerType.FREE_TEXT]
    paired = [r for r in closed if judge in r.scores and rule in r.scores]
    unpaired = sum(1 for r in closed if (judge not in r.scores or rule not in r.scores)
                   and _failure_of(r, judge) is None)
    free_text = sum(1 for r in ok if r.answer_type == AnswerType.FREE_TEXT
                    and judge in r.scores and rule in r.scores)
    judge_ok = [r.scores[judge] >= threshold for r in paired]
    rule_ok = [r.scores[rule] >= threshold for r in paired]
    disagreements = [
        Disagreement(question_id=r.question_id, direction=OVER_CREDIT if j else UNDER_CREDIT,
                     judge_value=r.scores[judge], rule_value=r.scores[rule],
                     subtype=subtype_key(r), answer_type=str(r.answer_type))
        for r, j, k in zip(paired, judge_ok, rule_ok, strict=True) if j != k]
    return JudgeRuleAudit(
        judge=judge, overall=AgreementStat.of(judge_ok, rule_ok),
        by_subtype=_grouped([subtype_key(r) for r in paired], judge_ok, rule_ok),
        by_answer_type=_grouped([str(r.answer_type) for r in paired], judge_ok, rule_ok),
        disagreements=disagreements, free_text=free_text, unpaired=unpaired)


def _binary_agreement(a_ok: Sequence[bool], b_ok: Sequence[bool]) -> dict[str, Any]:
    n = len(a_ok)
    agree = sum(1 for x, y in zip(a_ok, b_ok, strict=True) if x == y)
    return {"n": n, "agreement": _rate(agree, n), "kappa": cohen_kappa(a_ok, b_ok)}


def _label(value: float) -> float:
    """A score as a category: rounded so 0.75 from two sources compares equal."""
    return round(value, 6)


def _judge_pair(ok: Sequence[Record], a: str, b: str, threshold: float) -> JudgePairAudit:
    both = [r for r in ok if a in r.scores and b in r.scores]
    va = [r.scores[a] for r in both]
    vb = [r.scores[b] for r in both]
    a_ok = [v >= threshold for v in va]
    b_ok = [v >= threshold for v in vb]
    n = len(both)
    abilities = [str(r.ability) for r in both]
    by_ability = {}
    for ab in sorted(set(abilities)):
        idx = [i for i, x in enumerate(abilities) if x == ab]
        by_ability[ab] = _binary_agreement([a_ok[i] for i in idx], [b_ok[i] for i in idx])
    overall = _binary_agreement(a_ok, b_ok)
    exact = sum(1 for x, y in zip(va, vb, strict=True) if _label(x) == _label(y))
    return JudgePairAudit(
        judge_a=a, judge_b=b, n=n, agreement=overall["agreement"], kappa=overall["kappa"],
        exact_agreement=_rate(exact, n),
        kappa_values=cohen_kappa_labels([_label(x) for x in va], [_label(y) for y in vb]),
        mean_abs_diff=(sum(abs(x - y) for x, y in zip(va, vb, strict=True)) / n
                       if n else math.nan),
        a_only=sum(1 for x, y in zip(a_ok, b_ok, strict=True) if x and not y),
        b_only=sum(1 for x, y in zip(a_ok, b_ok, strict=True) if y and not x),
        by_ability=by_ability,
        disagreements=[r.question_id for r, x, y in zip(both, a_ok, b_ok, strict=True)
                       if x != y])


def audit(records: Iterable[Record] | Mapping[str, Record], *, rule: str = "rule",
          judges: Sequence[str] | None = None, threshold: float = 1.0) -> AuditResult:
    """Audit the judge scorers of one run's records.

    ``judges=None`` takes every score name containing ``"judge"`` on ok records (other than
    ``rule``). A value counts as correct when ``>= threshold`` (in (0, 1]); the same
    threshold applies to the rule (0/1 values). Judges named but absent give empty audits.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    recs = sorted(records.values() if isinstance(records, Mapping) else records,
                  key=lambda r: r.question_id)
    ok = [r for r in recs if r.status == "ok"]
    names = judge_names(ok, rule) if judges is None else list(dict.fromkeys(judges))
    failures: dict[str, list[JudgeFailureItem]] = {}
    for judge in names:
        items = [f for r in ok if (f := _failure_of(r, judge)) is not None]
        if items:
            failures[judge] = items
    return AuditResult(
        rule=rule, judges=names, threshold=threshold, n_records=len(recs), n_ok=len(ok),
        n_errors=len(recs) - len(ok),
        judge_vs_rule={j: _judge_vs_rule(ok, j, rule, threshold) for j in names},
        judge_pairs=[_judge_pair(ok, a, b, threshold) for a, b in combinations(names, 2)],
        failures=failures)


def judge_check(records: Iterable[Record], judge: str, *, rule: str = "rule",
                threshold: float = 1.0) -> dict[str, Any]:
    """What a report shows beside a judge's headline accuracy (design 0043): the judge
    against ``rule`` on the closed-form items (the audit's own computation), and ``warn``
    when it over-credits more than ``OVER_CREDIT_WARN`` of them."""
    ok = [r for r in records if r.status == "ok"]
    stat = _judge_vs_rule(ok, judge, rule, threshold).overall
    return {"judge": judge, "rule": rule, "n": stat.n, "agreement": stat.agreement,
            "kappa": stat.kappa, "judge_accuracy": stat.judge_accuracy,
            "rule_accuracy": stat.rule_accuracy, "over_credit": stat.over_credit,
            "over_credit_rate": stat.over_credit_rate, "under_credit": stat.under_credit,
            "warn": stat.n > 0 and stat.over_credit_rate > OVER_CREDIT_WARN}
