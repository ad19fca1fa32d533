"""Question-level figures for labelled benchmarks: MCQ rotations folded into one question,
and the X × Y matrix with bootstrap intervals (design 0036).

A MemEye MCQ question is asked once per rotation (the gold letter at A, B, C, D); each
rotation is a record carrying ``meta.base_question_id`` and ``meta.rotation``. Per question:
the debiased EM (the mean of its rotations' letter scores) and whether every rotation was
right. A question with a rotation that failed (an error) or went unscored is incomplete: it
is counted apart, never scored as wrong.

An open question measured by the judge alone (``meta.measure``, scoring/_route.py) takes its
judge score, whatever the primary scorer: without one (a judge error, or no judge run) it
is left out, never given a rule score in its place.

A question counts in every cell of its labels: ``meta.xy_cells`` (``X1_Y2``, the Cartesian
product of MemEye's multi-label ``point``) where the record has it, else
``labels.x``/``labels.y``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import Measure, Record
from ..scoring import record_measure
from ._stats import BOOTSTRAP, mean, mean_ci

X_LABELS = ("X1", "X2", "X3", "X4")
Y_LABELS = ("Y1", "Y2", "Y3")
MIN_CELL_N = 15  # cells with fewer questions are flagged: their intervals are very wide
LETTER_SCORER = "rule"  # what a rotation's letter is scored by, when the run has it
UNPARSEABLE = "unparseable"


@dataclass(frozen=True)
class XYCell:
    """A cell's accuracy over its questions, with its interval (a bootstrap, or Wilson's
    below SMALL_N questions: ``ci_method``, design 0040); ``small`` when ``n`` is under
    :data:`MIN_CELL_N`."""

    accuracy: float
    n: int
    ci_low: float
    ci_high: float
    small: bool
    ci_method: str = BOOTSTRAP


@dataclass(frozen=True)
class QuestionUnit:
    """One question: an MCQ question over its rotations, or one record."""

    question_id: str
    form: str  # "mcq" (rotations folded) or "item" (a record of its own)
    value: float
    all_correct: bool | None  # MCQ only
    cells: tuple[tuple[str, str], ...]


def _cells(r: Record) -> tuple[tuple[str, str], ...]:
    given = r.meta.get("xy_cells")
    if isinstance(given, list) and given:
        out = []
        for c in given:
            x, _, y = str(c).partition("_")
            if x in X_LABELS and y in Y_LABELS:
                out.append((x, y))
        return tuple(dict.fromkeys(out))
    if r.labels.x and r.labels.y:
        return ((r.labels.x, r.labels.y),)
    return ()


def is_rotation(r: Record) -> bool:
    return isinstance(r.meta.get("rotation"), int) and bool(r.meta.get("base_question_id"))


def rotations_missing(rotations: Sequence[Record]) -> bool:
    """Fewer rotations than the question has (``meta.rotations``, written since issue 17):
    a run cut short or under ``--limit`` asked only some, and a mean over those is not the
    debiased EM (the gold sits at the missing positions)."""
    expected = rotations[0].meta.get("rotations") if rotations else None
    asked = {r.meta.get("rotation") for r in rotations}
    return isinstance(expected, int) and len(asked) < expected


def rotation_groups(records: Iterable[Record]) -> dict[str, list[Record]]:
    groups: dict[str, list[Record]] = {}
    for r in records:
        if is_rotation(r):
            groups.setdefault(str(r.meta["base_question_id"]), []).append(r)
    return groups


def _letter_score(r: Record, primary: str | None) -> float | None:
    name = LETTER_SCORER if LETTER_SCORER in r.scores else primary
    return r.scores.get(name) if name is not None else None


def judge_name(records: Iterable[Record], primary: str | None) -> str | None:
    """The judge score that measures judge-only questions: the primary scorer when it is a
    judge, else the first judge score (by name) any record carries; None without one."""
    if primary is not None and "judge" in primary.lower():
        return primary
    return min((n for r in records for n in r.scores if "judge" in n.lower()), default=None)


def measured_by(record: Record, primary: str | None, judge: str | None) -> str | None:
    """The score that values ``record`` outside the rotation fold: the judge for a
    judge-only question, else the primary scorer."""
    return judge if record_measure(record) == Measure.JUDGE.value else primary


def question_units(records: Sequence[Record], primary: str | None) -> tuple[list[QuestionUnit],
                                                                               int]:
    """The questions of a run, and how many MCQ questions were incomplete."""
    units: list[QuestionUnit] = []
    incomplete = 0
    for base, rots in rotation_groups(records).items():
        values = [_letter_score(r, primary) if r.status == "ok" else None for r in rots]
        if any(v is None for v in values) or rotations_missing(rots):
            incomplete += 1
            continue
        scores = [float(v) for v in values if v is not None]
        units.append(QuestionUnit(base, "mcq", mean(scores), all(v >= 1 for v in scores),
                                  _cells(rots[0])))
    judge = judge_name(records, primary)
    for r in records:
        name = measured_by(r, primary, judge)
        if not is_rotation(r) and r.status == "ok" and name is not None and name in r.scores:
            units.append(QuestionUnit(r.question_id, "item", r.scores[name], None,
                                      _cells(r)))
    return units, incomplete


def rotation_summary(records: Sequence[Record], primary: str | None, *, seed: int = 0,
                     n_resamples: int = 2000, confidence: float = 0.95) -> dict[str, Any] | None:
    """Debiased EM and all-rotations-correct over a run's MCQ questions (None without any),
    the unparseable replies, and accuracy by the gold letter's position."""
    groups = rotation_groups(records)
    if not groups:
        return None
    units, incomplete = question_units([r for g in groups.values() for r in g], primary)
    em = [u.value for u in units]
    strict = [float(bool(u.all_correct)) for u in units]
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    *em_ci, method = mean_ci(em, **kw)  # Wilson's below SMALL_N questions (design 0040)
    *strict_ci, _ = mean_ci(strict, **kw)
    rotations = [r for g in groups.values() for r in g]
    ok = [r for r in rotations if r.status == "ok"]
    unparseable = sum(1 for r in ok if any(
        s.details.get("label") == UNPARSEABLE for s in r.score_details.values()))
    by_position: dict[str, list[float]] = {}
    for r in ok:
        v = _letter_score(r, primary)
        if v is not None and isinstance(r.gold, str):
            by_position.setdefault(r.gold, []).append(v)
    return {
        "n_questions": len(units), "n_rotations": len(rotations), "n_ok_rotations": len(ok),
        "incomplete_questions": incomplete,
        "debiased_em": mean(em), "debiased_em_ci": em_ci,
        "all_rotations_correct": mean(strict), "all_rotations_correct_ci": strict_ci,
        "ci_method": method,
        "unparseable": unparseable,
        "unparseable_share": unparseable / len(ok) if ok else math.nan,
        "by_gold_position": {k: {"accuracy": mean(v), "n": len(v)}
                             for k, v in sorted(by_position.items())},
        "letters": dict(sorted(Counter(
            str(r.score_details[LETTER_SCORER].details.get("parsed"))
            for r in ok if LETTER_SCORER in r.score_details
            and r.score_details[LETTER_SCORER].details.get("parsed")).items())),
    }


def xy_grid(units: Iterable[QuestionUnit], *, seed: int = 0, n_resamples: int = 2000,
            confidence: float = 0.95) -> dict[str, dict[str, XYCell]] | None:
    """X -> Y -> cell over ``units`` (each counted in every one of its cells); None when no
    unit carries a cell."""
    values: dict[tuple[str, str], list[float]] = {}
    for u in units:
        for c in u.cells:
            values.setdefault(c, []).append(u.value)
    if not values:
        return None
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}

    def cell(vs: list[float]) -> XYCell:
        low, high, method = mean_ci(vs, **kw)
        return XYCell(mean(vs), len(vs), low, high, len(vs) < MIN_CELL_N, method)

    return {x: {y: cell(values.get((x, y), [])) for y in Y_LABELS} for x in X_LABELS}


def xy_matrices(records: Sequence[Record], primary: str | None, label: str,
                **kw: Any) -> dict[str, dict[str, dict[str, XYCell]]]:
    """``label`` -> grid; a run holding both MCQ rotations and other questions (MemEye's
    open twins) gets one grid for each, never one mixing the two measures."""
    units, _ = question_units(records, primary)
    forms: Mapping[str, list[QuestionUnit]] = {
        f: [u for u in units if u.form == f] for f in ("mcq", "item")}
    # named by form when the run asked both, even if one form has no value yet (open
    # questions before the judge ran): a grid must say which measure it shows
    both = any(is_rotation(r) for r in records) and not all(is_rotation(r) for r in records)
    out = {}
    for form, group in forms.items():
        grid = xy_grid(group, **kw)
        if grid is not None:
            name = (f"{label} · MCQ (debiased EM)" if form == "mcq" else f"{label} · open"
                    ) if both else label
            out[name] = grid
    return out
