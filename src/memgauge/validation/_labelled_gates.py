"""Gates for labelled multiple-choice benchmarks (MemEye and the like; design 0036).

Pure functions over run records. A question's rotations (records sharing
``meta.base_question_id``, else the id without its ``:r<k>`` suffix) are one question: its
value is the debiased EM (the mean over its rotations' letter scores); ``all_rotations`` is
the share of questions with every rotation right. A question with an errored or unscored
rotation is incomplete: left out and counted, never scored as wrong (as ``analysis/_xy.py``).

- :func:`chance_gate`: a shortcut audit (options-only, question-only, clue-text-only,
  minimal-caption) passes when accuracy stays within the binomial upper 95 % limit of
  chance at that n: the count of right answers a guesser at 1/k (k options) exceeds with
  probability ≤ 5 %.
- :func:`oracle_screening`: the gold clue rounds with their images; flags the questions the
  oracle gets wrong on any rotation (a report).
- :func:`caption_proof_gain`: the same answerer on the gold clues with dense captions,
  task-aware captions and native images; accuracy per arm and the images' gain over each
  caption arm by X level, over the questions answered in every arm (a report).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memgauge.analysis._rotations import QuestionScore, question_scores, x_levels
from memgauge.schema import Record
from memgauge.validation._gates import FAIL, NOT_APPLICABLE, PASS, Verdict

__all__ = [
    "ChanceGateResult",
    "QuestionScore",
    "caption_proof_gain",
    "chance_gate",
    "oracle_screening",
    "question_scores",
    "x_levels",
]

LEVEL = 0.95
def _wilson(p: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def chance_upper_limit(chance: float, n: int, level: float = LEVEL) -> float:
    """The accuracy a guesser at ``chance`` stays at or under with probability ≥ ``level``
    over ``n`` questions (the binomial quantile, as a share)."""
    from scipy.stats import binom

    return float(binom.ppf(level, n, chance)) / n


@dataclass(frozen=True)
class ChanceGateResult:
    """A shortcut audit: PASS when ``accuracy`` ≤ ``upper_limit`` (chance's upper 95 %
    limit at ``n`` complete questions); N/A with no multiple-choice question; FAIL when no
    question is complete (nothing was checked: errors never pass a gate); ``n_incomplete``
    questions with an errored or unscored rotation are left out. ``ci``: the Wilson
    95 % interval of the accuracy at ``n``. ``leaking``: the questions answered right on
    every rotation (what to look at first)."""

    name: str
    verdict: Verdict
    accuracy: float | None
    all_rotations: float | None
    n: int
    n_items: int
    n_error: int
    n_incomplete: int
    chance: float | None
    upper_limit: float | None
    ci: tuple[float, float] | None
    leaking: list[str]
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def chance_gate(name: str, records: Sequence[Record], primary: str | None = None
                ) -> ChanceGateResult:
    mcq = [r for r in records if isinstance(r.meta.get("options"), list) and r.meta["options"]]
    scores = question_scores(mcq, primary)
    answered = [q for q in scores if q.value is not None]
    n_error = sum(q.n_error for q in scores)
    if not answered:
        verdict = FAIL if scores else NOT_APPLICABLE
        note = ("no question answered on every rotation: nothing was checked" if scores
                else "no multiple-choice question (the audits need options)")
        return ChanceGateResult(name, verdict, None, None, 0, len(mcq), n_error, len(scores),
                                None, None, None, [], note)
    n = len(answered)
    acc = sum(q.value for q in answered) / n  # type: ignore[misc]
    chance = sum(q.chance or 0.0 for q in answered) / n
    upper = chance_upper_limit(chance, n)
    return ChanceGateResult(
        name=name, verdict=PASS if acc <= upper else FAIL, accuracy=acc,
        all_rotations=sum(bool(q.all_right) for q in answered) / n, n=n, n_items=len(mcq),
        n_error=n_error, n_incomplete=len(scores) - n, chance=chance, upper_limit=upper,
        ci=_wilson(acc, n),
        leaking=[q.base_id for q in answered if q.all_right])


def oracle_screening(records: Sequence[Record], primary: str | None = None) -> dict[str, Any]:
    """The gold-clue oracle's accuracy and the questions it fails (any rotation wrong)."""
    scores = question_scores(records, primary)
    answered = [q for q in scores if q.value is not None]
    return {"accuracy": (sum(q.value for q in answered) / len(answered)  # type: ignore[misc]
                         if answered else None),
            "all_rotations": (sum(bool(q.all_right) for q in answered) / len(answered)
                              if answered else None),
            "n": len(answered), "n_error": sum(q.n_error for q in scores),
            "flagged": [q.base_id for q in answered if not q.all_right],
            "unanswered": [q.base_id for q in scores if q.value is None]}


def caption_proof_gain(arms: Mapping[str, Sequence[Record]], *, native: str = "image",
                       primary: str | None = None) -> dict[str, Any]:
    """Accuracy of each arm by X level over the questions every arm answered, and the
    native images' gain over each other arm (``gain_over_<arm>``, points of accuracy).
    Without the native arm (an answerer that cannot see images) the caption arms' accuracy
    is still given, with no gain (``native`` None)."""
    per_arm = {arm: {q.base_id: q for q in question_scores(recs, primary) if q.value is not None}
               for arm, recs in arms.items()}
    if not per_arm:
        return {"skipped": "no arm ran"}
    reference = native if native in per_arm else next(iter(per_arm))
    common = set.intersection(*(set(m) for m in per_arm.values()))
    by_x: dict[str, dict[str, Any]] = {}
    for qid in sorted(common):
        for level in x_levels(per_arm[reference][qid]):
            row = by_x.setdefault(level, {"n": 0, **{arm: 0.0 for arm in per_arm}})
            row["n"] += 1
            for arm, m in per_arm.items():
                row[arm] += m[qid].value  # type: ignore[operator]
    for row in by_x.values():
        for arm in per_arm:
            row[arm] /= row["n"]
        for arm in per_arm:
            if native in per_arm and arm != native:
                row[f"gain_over_{arm}"] = row[native] - row[arm]
    return {"arms": list(per_arm), "native": native if native in per_arm else None,
            "n_questions": len(common),
            "not_in_every_arm": sorted(set().union(*per_arm.values()) - common),
            "by_x": dict(sorted(by_x.items()))}
