"""A labelled multiple-choice question over its rotations (design 0036): records sharing
``meta.base_question_id`` (else the id without its ``:r<k>`` suffix) are one question, valued
by the debiased EM. Used by the cross-topic analysis and by the labelled gates
(validation/_labelled_gates.py, where this came from: issue 26 §2)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from memgauge.analysis._clues import record_cells
from memgauge.analysis._xy import LETTER_SCORER, rotations_missing
from memgauge.schema import Record

_ROTATION = re.compile(r":r\d+$")


@dataclass(frozen=True)
class QuestionScore:
    """One question over its rotations: ``value`` the debiased EM, ``all_right`` every
    rotation right (both ``None`` when incomplete); ``chance`` 1/k for k options;
    ``n_error`` rotations that errored."""

    base_id: str
    value: float | None
    all_right: bool | None
    rotations: int
    n_error: int
    chance: float | None
    cells: tuple[str, ...]


def base_id(record: Record) -> str:
    raw = record.meta.get("base_question_id")
    return str(raw) if raw else _ROTATION.sub("", record.question_id)


def x_levels(score: QuestionScore) -> list[str]:
    return sorted({c.split("_")[0] for c in score.cells}) or ["unlabelled"]


def _score_of(record: Record, primary: str | None) -> float | None:
    if record.status != "ok":
        return None
    if LETTER_SCORER in record.scores:  # the letter match, whatever the primary scorer
        return record.scores[LETTER_SCORER]
    if primary is not None:
        return record.scores.get(primary)
    return next(iter(record.scores.values()), None)


def question_scores(records: Iterable[Record], primary: str | None = None
                    ) -> list[QuestionScore]:
    """Records grouped into questions (see the module docstring)."""
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        groups[base_id(r)].append(r)
    out = []
    for qid, recs in groups.items():
        scored = [_score_of(r, primary) for r in recs]
        complete = None not in scored and not rotations_missing(recs)
        values = [v for v in scored if v is not None] if complete else []
        n_options = [len(r.meta["options"]) for r in recs
                     if isinstance(r.meta.get("options"), list) and r.meta["options"]]
        out.append(QuestionScore(
            base_id=qid, value=sum(values) / len(values) if values else None,
            all_right=all(v >= 1 for v in values) if values else None, rotations=len(recs),
            n_error=sum(r.status != "ok" for r in recs),
            chance=1 / n_options[0] if n_options else None,
            cells=tuple(dict.fromkeys(c for r in recs for c in record_cells(r)))))
    return sorted(out, key=lambda q: q.base_id)
