"""Summaries of a run's records: accuracy per scorer, per ability and subtype, coverage.

Every accuracy here is over records with ``status == "ok"`` only. Records with
``status == "error"`` are counted and listed apart and never scored as wrong.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memgauge.analysis._stats import BOOTSTRAP, SMALL_N, mean, mean_ci
from memgauge.schema import INGEST_FAILED, Ability, AnswerType, Record
from memgauge.scoring import judge_applies

__all__ = [
    "CoverageStat",
    "ErrorItem",
    "GroupStat",
    "ScorerStat",
    "Summary",
    "choose_primary",
    "fmt_reply_labels",
    "mixed_versions",
    "ok_with_labels",
    "reply_labels",
    "scorer_versions",
    "summarize",
]

_ABILITY_ORDER = {a.value: i for i, a in enumerate(Ability)}
NO_SUBTYPE = "-"
CI_METHOD = (f"percentile bootstrap over questions from n = {SMALL_N}; Wilson score interval "
             f"below n = {SMALL_N} (marked small n)")


def _json_float(x: float) -> float | None:
    """A float for JSON: non-finite values (nan for "no data") become ``None``."""
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class ScorerStat:
    """Accuracy of one scorer over one group of ok records that carry that score.

    ``ci_method``: ``"bootstrap"``, or ``"wilson"`` below :data:`SMALL_N` questions
    (design 0040); ``small_n`` says the group is that small, for every format to mark.
    """

    n: int
    accuracy: float
    ci_low: float
    ci_high: float
    ci_method: str = BOOTSTRAP

    @property
    def small_n(self) -> bool:
        return 0 < self.n < SMALL_N

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "accuracy": _json_float(self.accuracy),
            "ci_low": _json_float(self.ci_low),
            "ci_high": _json_float(self.ci_high),
            "ci_method": self.ci_method,
            "small_n": self.small_n,
        }


@dataclass(frozen=True)
class CoverageStat:
    """Coverage and per-answer accuracy of the primary scorer over one group of ok records.

    ``coverage``: among answerable questions (answer type other than ``refusal``), the share
    the model attempted (``refused`` false or unknown). ``per_answer_accuracy``: the primary
    score's mean over the attempted ones. ``refusal_accuracy``: the primary score's mean over
    refusal-type questions, where it already means "refused correctly".
    """

    n_answerable: int
    n_attempted: int
    coverage: float
    per_answer_accuracy: float
    n_refusal: int
    refusal_accuracy: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_answerable": self.n_answerable,
            "n_attempted": self.n_attempted,
            "coverage": _json_float(self.coverage),
            "per_answer_accuracy": _json_float(self.per_answer_accuracy),
            "n_refusal": self.n_refusal,
            "refusal_accuracy": _json_float(self.refusal_accuracy),
        }


@dataclass(frozen=True)
class GroupStat:
    """One ability or subtype: ok count, error count, per-scorer accuracy, coverage."""

    n: int
    n_errors: int
    scores: dict[str, ScorerStat]
    coverage: CoverageStat

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "n_errors": self.n_errors,
            "scores": {name: stat.to_dict() for name, stat in self.scores.items()},
            "coverage": self.coverage.to_dict(),
        }


@dataclass(frozen=True)
class ErrorItem:
    """One record that failed (``status == "error"``)."""

    question_id: str
    ability: str
    kind: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "ability": self.ability,
            "kind": self.kind,
            "message": self.message,
        }


@dataclass(frozen=True)
class Summary:
    """Everything the report shows, computed once from a run's records.

    Accuracies are ``nan`` where a group has no scored ok records (``None`` in
    :meth:`to_dict`).
    """

    n_records: int
    n_ok: int
    n_errors: int
    errors: tuple[ErrorItem, ...]
    error_kinds: dict[str, int]  # error kind -> count, most frequent first
    scorers: tuple[str, ...]
    primary: str | None
    overall: dict[str, ScorerStat]
    coverage: CoverageStat
    micro_accuracy: float  # primary scorer over all ok records
    macro_accuracy: float  # primary scorer, mean of per-ability accuracies
    by_ability: dict[str, GroupStat]
    by_subtype: dict[str, GroupStat]  # keyed "{ability}/{subtype}", subtype None -> "-"
    confidence: float = 0.95
    n_resamples: int = 2000
    seed: int = 0
    ci_method: str = field(default=CI_METHOD)
    # Summed over answered records with usage: input, cached (prompt tokens the server's
    # prefix cache served), output; and how many answers carried usage.
    tokens: dict[str, int] = field(default_factory=dict)
    primary_covers: int = 0  # answered records carrying the primary score
    primary_note: str | None = None  # why the headline is not a judge the records carry
    # ok replies a rule scorer could not read as one answer, by label (design 0038):
    # "hedged" (several candidates, none stated), "unparseable" (an MCQ reply with no letter)
    reply_labels: dict[str, int] = field(default_factory=dict)
    # scorer -> version -> ok records scored with it: a scorer's decisions change with its
    # version (rule "4" gave hedges 0, design 0038); records keep theirs, so a run resumed
    # across an upgrade can hold two, which the report says
    scorer_versions: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-serialisable dict (non-finite numbers become ``None``)."""
        return {
            "n_records": self.n_records,
            "n_ok": self.n_ok,
            "n_errors": self.n_errors,
            "error_kinds": dict(self.error_kinds),
            "ingest_failed": self.error_kinds.get(INGEST_FAILED, 0),
            "reply_labels": dict(self.reply_labels),
            "scorer_versions": {k: dict(v) for k, v in self.scorer_versions.items()},
            "errors": [e.to_dict() for e in self.errors],
            "scorers": list(self.scorers),
            "primary": self.primary,
            "overall": {name: stat.to_dict() for name, stat in self.overall.items()},
            "micro_accuracy": _json_float(self.micro_accuracy),
            "macro_accuracy": _json_float(self.macro_accuracy),
            "coverage": self.coverage.to_dict(),
            "by_ability": {k: g.to_dict() for k, g in self.by_ability.items()},
            "by_subtype": {k: g.to_dict() for k, g in self.by_subtype.items()},
            "tokens": dict(self.tokens),
            "primary_covers": self.primary_covers,
            "primary_note": self.primary_note,
            "bootstrap": {
                "method": self.ci_method,
                "confidence": self.confidence,
                "n_resamples": self.n_resamples,
                "seed": self.seed,
            },
        }


def token_totals(records: Sequence[Record]) -> dict[str, int]:
    """Token usage summed over records (the server's counts); empty when none has usage."""
    totals = {"input": 0, "cached": 0, "output": 0, "answers": 0}
    for rec in records:
        u = rec.response.usage if rec.response else None
        if u is None or (u.input_tokens is None and u.output_tokens is None):
            continue
        totals["answers"] += 1
        totals["input"] += u.input_tokens or 0
        totals["cached"] += u.cached_tokens or 0
        totals["output"] += u.output_tokens or 0
    return totals if totals["answers"] else {}


# Scorers shown beside the headline, never as it: SubEM credits any reply containing the
# gold, a dump of the history or a list of every candidate included (design 0038).
SECONDARY_ONLY = frozenset({"subem"})


def choose_primary(scorers: Sequence[str], primary: str | None = None, *,
                   covered: dict[str, int] | None = None, n_ok: int | None = None) -> str | None:
    """The headline scorer: ``primary`` if given, else the first (sorted) name containing
    "judge", else "rule", else a name containing "rule", else the first name that is not
    secondary only (:data:`SECONDARY_ONLY`); ``None`` when there is none. A given
    ``primary`` absent from non-empty ``scorers``, or secondary only, is an error.

    With ``covered`` (score name -> answered records carrying it) and ``n_ok``, a judge that
    did not score every answered question is passed over: a headline over the few it could
    judge would silently be another number (see :func:`primary_note`).
    """
    names = sorted(scorers)
    if primary is None and covered is not None and n_ok is not None:
        names = [n for n in names if "judge" not in n.lower() or covered.get(n, 0) >= n_ok] \
            or names
    if primary in SECONDARY_ONLY:
        raise ValueError(
            f"{primary!r} cannot be the primary scorer: containment credits a reply that dumps "
            "text or lists every candidate; it is reported beside the primary")
    if primary is not None:
        if names and primary not in names:
            raise ValueError(
                f"primary scorer {primary!r} is not in the records; "
                f"available: {', '.join(names)}"
            )
        return primary
    if not names:
        return None
    for candidates in (
        [n for n in names if "judge" in n.lower()],
        [n for n in names if n == "rule"],
        [n for n in names if "rule" in n.lower()],
        [n for n in names if n not in SECONDARY_ONLY],
    ):
        if candidates:
            return candidates[0]
    return None  # pragma: no cover - unreachable


def primary_note(scorers: Sequence[str], chosen: str | None, covered: dict[str, int],
                 n_ok: int) -> str | None:
    """Why the headline is not a judge that the records carry, or None."""
    skipped = [n for n in sorted(scorers) if "judge" in n.lower() and n != chosen
               and covered.get(n, 0) < n_ok]
    if not skipped or chosen is None or "judge" in chosen.lower():
        return None
    parts = ", ".join(f"{n} scored {covered.get(n, 0)} of {n_ok}" for n in skipped)
    return (f"not the judge: {parts} answered questions (the rest are judge errors), so the "
            f"headline is `{chosen}`, which scored all of them; --primary chooses another")


def coverage_counts(records: Iterable[Record]) -> dict[str, int]:
    """Score name -> how many of ``records`` carry it. A judge also covers the MCQ
    rotations it never scores (scoring/_route.py): they are not judge errors."""
    counts: Counter[str] = Counter()
    letters = []
    for r in records:
        counts.update(r.scores.keys())
        if not judge_applies(r):
            letters.append(r)
    for name in [n for n in counts if "judge" in n.lower()]:
        counts[name] += sum(name not in r.scores for r in letters)
    return dict(counts)


REPLY_LABELS = ("hedged", "unparseable")


def reply_labels(ok: Iterable[Record]) -> dict[str, int]:
    """How many ok records a scorer labelled hedged or unparseable (each record once, by the
    first such label among its scores); labels with no record are left out."""
    counts: Counter[str] = Counter()
    for r in ok:
        labels = {d.details.get("label") for d in r.score_details.values()}
        found = next((label for label in REPLY_LABELS if label in labels), None)
        if found is not None:
            counts[found] += 1
    return {label: counts[label] for label in REPLY_LABELS if counts[label]}


def scorer_versions(ok: Iterable[Record]) -> dict[str, dict[str, int]]:
    """For each scorer, how many ok records carry each of its versions."""
    out: dict[str, Counter[str]] = {}
    for r in ok:
        for name, score in r.score_details.items():
            out.setdefault(name, Counter())[score.version] += 1
    return {name: dict(sorted(c.items())) for name, c in sorted(out.items())}


def mixed_versions(versions: dict[str, dict[str, int]]) -> str | None:
    """ "rule: version 3 (12), 4 (8)" for each scorer whose records carry several versions,
    or None when every scorer has one."""
    mixed = [f"{name}: version " + ", ".join(f"{v} ({n})" for v, n in by.items())
             for name, by in versions.items() if len(by) > 1]
    return "; ".join(mixed) if mixed else None


def ok_with_labels(n_ok: int, labels: dict[str, int]) -> str:
    """A leaderboard's "n ok" cell: "30", or "30 (2 hedged)" when some ok replies were
    hedged or unparseable (scored 0, counted apart)."""
    if not labels:
        return str(n_ok)
    return f"{n_ok} (" + ", ".join(f"{n} {label}" for label, n in labels.items()) + ")"


def errors_cell(n_errors: int, error_kinds: dict[str, int]) -> str:
    """A leaderboard's "Errors" cell: "3", or "3 (2 ingest failed)" when questions failed
    because sessions they need could not be ingested (design 0042)."""
    failed = error_kinds.get(INGEST_FAILED, 0)
    return f"{n_errors} ({failed} ingest failed)" if failed else str(n_errors)


def fmt_reply_labels(labels: dict[str, int], n_ok: int) -> str:
    """ "3 hedged, 1 unparseable (4 of 30 ok, scored 0)"; "0" when there are none."""
    if not labels:
        return "0"
    total = sum(labels.values())
    parts = ", ".join(f"{n} {label}" for label, n in labels.items())
    return f"{parts} ({total} of {n_ok} ok, scored 0)"


def _ability_key(ability: Ability | str) -> str:
    return ability.value if isinstance(ability, Ability) else str(ability)


def _is_refusal_question(record: Record) -> bool:
    # a Record's answer_type is validated to an AnswerType when read (runfolder.read_records)
    return record.answer_type == AnswerType.REFUSAL


def _scorer_stats(
    ok: Sequence[Record], scorers: Sequence[str], *, seed: int, n_resamples: int,
    confidence: float,
) -> dict[str, ScorerStat]:
    out: dict[str, ScorerStat] = {}
    for name in scorers:
        values = [r.scores[name] for r in ok if name in r.scores]
        low, high, method = mean_ci(values, n_resamples=n_resamples, confidence=confidence,
                                    seed=seed)
        out[name] = ScorerStat(n=len(values), accuracy=mean(values), ci_low=low, ci_high=high,
                               ci_method=method)
    return out


def _coverage(ok: Sequence[Record], primary: str | None) -> CoverageStat:
    answerable = [r for r in ok if not _is_refusal_question(r)]
    refusal = [r for r in ok if _is_refusal_question(r)]
    attempted = [r for r in answerable if r.refused is not True]
    if primary is None:
        per_answer: list[float] = []
        refusal_scores: list[float] = []
    else:
        per_answer = [r.scores[primary] for r in attempted if primary in r.scores]
        refusal_scores = [r.scores[primary] for r in refusal if primary in r.scores]
    return CoverageStat(
        n_answerable=len(answerable),
        n_attempted=len(attempted),
        coverage=len(attempted) / len(answerable) if answerable else math.nan,
        per_answer_accuracy=mean(per_answer),
        n_refusal=len(refusal),
        refusal_accuracy=mean(refusal_scores),
    )


def _group(
    ok: Sequence[Record], n_errors: int, scorers: Sequence[str], primary: str | None, *,
    seed: int, n_resamples: int, confidence: float,
) -> GroupStat:
    return GroupStat(
        n=len(ok),
        n_errors=n_errors,
        scores=_scorer_stats(ok, scorers, seed=seed, n_resamples=n_resamples,
                             confidence=confidence),
        coverage=_coverage(ok, primary),
    )


def summarize(
    records: Iterable[Record],
    *,
    primary: str | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> Summary:
    """Summarise a run's records. Pure: reads the records, returns a :class:`Summary`.

    - Errors (``status == "error"``) are listed and counted by kind, per group too, and
      never enter any accuracy.
    - ``scorers`` is the sorted union of score names on ok records; ``primary`` is chosen by
      :func:`choose_primary`.
    - Each scorer's accuracy is the mean score over the ok records carrying it, with a
      question-level percentile bootstrap CI (fixed ``seed``), or a Wilson interval below
      :data:`SMALL_N` questions, overall, per ability and per ``"{ability}/{subtype}"``.
    - Coverage / per-answer / refusal accuracy use the primary scorer (see
      :class:`CoverageStat`).
    - ``micro_accuracy`` is the primary scorer over all ok records; ``macro_accuracy`` is the
      mean of per-ability primary accuracies over abilities that have scored ok records.
    """
    all_records = list(records)
    ok = [r for r in all_records if r.status == "ok"]
    failed = [r for r in all_records if r.status != "ok"]

    errors: list[ErrorItem] = []
    for r in failed:
        err = r.response.error
        errors.append(
            ErrorItem(
                question_id=r.question_id,
                ability=_ability_key(r.ability),
                kind=err.kind if err is not None else "unknown",
                message=err.message if err is not None else "",
            )
        )
    kind_counts = Counter(e.kind for e in errors)
    error_kinds = dict(sorted(kind_counts.items(), key=lambda kv: (-kv[1], kv[0])))

    scorers = tuple(sorted({name for r in ok for name in r.scores}))
    covered = coverage_counts(ok)
    chosen = choose_primary(scorers, primary, covered=covered, n_ok=len(ok))
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}

    overall = _scorer_stats(ok, scorers, **kw)

    def ability_sort(key: str) -> tuple[int, str]:
        return (_ABILITY_ORDER.get(key, len(_ABILITY_ORDER)), key)

    ok_by_ability: dict[str, list[Record]] = {}
    err_by_ability: Counter[str] = Counter()
    ok_by_subtype: dict[tuple[str, str], list[Record]] = {}
    err_by_subtype: Counter[tuple[str, str]] = Counter()
    for r in all_records:
        a = _ability_key(r.ability)
        s = (a, r.subtype if r.subtype is not None else NO_SUBTYPE)
        ok_by_ability.setdefault(a, [])
        ok_by_subtype.setdefault(s, [])
        if r.status == "ok":
            ok_by_ability[a].append(r)
            ok_by_subtype[s].append(r)
        else:
            err_by_ability[a] += 1
            err_by_subtype[s] += 1

    by_ability = {
        a: _group(ok_by_ability[a], err_by_ability[a], scorers, chosen, **kw)
        for a in sorted(ok_by_ability, key=ability_sort)
    }
    by_subtype = {
        f"{a}/{s}": _group(ok_by_subtype[(a, s)], err_by_subtype[(a, s)], scorers, chosen,
                           **kw)
        for a, s in sorted(ok_by_subtype, key=lambda k: (ability_sort(k[0]), k[1]))
    }

    if chosen is None:
        micro = macro = math.nan
    else:
        micro = overall[chosen].accuracy if chosen in overall else math.nan
        per_ability = [g.scores[chosen].accuracy for g in by_ability.values()
                       if chosen in g.scores and g.scores[chosen].n > 0]
        macro = mean(per_ability)

    return Summary(
        tokens=token_totals(ok),
        primary_covers=covered.get(chosen, 0) if chosen else 0,
        primary_note=primary_note(scorers, chosen, covered, len(ok)),
        reply_labels=reply_labels(ok),
        scorer_versions=scorer_versions(ok),
        n_records=len(all_records),
        n_ok=len(ok),
        n_errors=len(failed),
        errors=tuple(errors),
        error_kinds=error_kinds,
        scorers=scorers,
        primary=chosen,
        overall=overall,
        coverage=_coverage(ok, chosen),
        micro_accuracy=micro,
        macro_accuracy=macro,
        by_ability=by_ability,
        by_subtype=by_subtype,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )
