"""The error labels of a run's wrong answers, counted. The rules that assign a label are in
:mod:`memgauge.scoring._error_labels` (moved there, issue 26 §2: the judge pipeline asks for
a judge label only where the rules leave one unlabelled)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from memgauge.schema import Record
from memgauge.scoring._error_labels import ErrorLabel, label_error

__all__ = ["ErrorLabel", "error_breakdown", "label_error"]


def error_breakdown(records: Iterable[Record], **kw: Any) -> dict[str, Any]:
    """Counts of the error labels of ``records`` (keywords as :func:`label_error`):
    ``n_wrong``, ``by_label``, ``by_category``, ``by_ability`` (ability -> label -> count),
    and ``items``, the (question_id, label) pairs in record order."""
    by_label: Counter[str] = Counter()
    by_category: Counter[str] = Counter()
    by_ability: dict[str, Counter[str]] = {}
    items: list[tuple[str, str]] = []
    for record in records:
        err = label_error(record, **kw)
        if err is None:
            continue
        by_label[err.label] += 1
        by_category[err.category] += 1
        by_ability.setdefault(str(record.ability), Counter())[err.label] += 1
        items.append((record.question_id, err.label))
    return {
        "n_wrong": len(items),
        "by_label": dict(by_label),
        "by_category": dict(by_category),
        "by_ability": {a: dict(c) for a, c in by_ability.items()},
        "items": items,
    }
