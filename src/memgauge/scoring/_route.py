"""Which scorer measures a question, where a benchmark says (issue 24, design 0036).

A MemEye MCQ rotation is measured by the letter alone: the rule scorer reads the letter,
and a judge asked about a letter can only agree or add noise (and its failures used to
push the whole report's headline off the judge). A MemEye open question is measured by
the judge alone: the rule scorers' exact and token matches call a right paraphrase wrong
(0 % where the judge gave 75 %), so a judge failure is a judge error, counted, never
replaced by a rule score.

The loader writes ``meta["measure"]`` on the question (the runner copies it onto the
record); records from before it are read by their shape: a rotation is ``letter``, a
MemEye free-text question ``judge``. Anything else has no measure of its own: every
scorer applies and the report's primary scorer is its headline, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..schema import AnswerType, Measure, Question, Record

MEASURE_KEY = "measure"
LETTER = Measure.LETTER.value  # MCQ rotations: the letter rule only
JUDGE = Measure.JUDGE.value  # open questions with a reference: the judge only
LETTER_SCORER = "rule"  # the rule scorer reads a rotation's letter


def _measure(meta: Mapping[str, Any]) -> str | None:
    given = meta.get(MEASURE_KEY)
    if given in (LETTER, JUDGE):
        return str(given)
    if isinstance(meta.get("rotation"), int) and meta.get("base_question_id"):
        return LETTER  # a rotation recorded before the key
    return None


def question_measure(question: Question) -> str | None:
    return _measure(question.meta)


def record_measure(record: Record) -> str | None:
    """``letter``, ``judge``, or None (every scorer applies)."""
    found = _measure(record.meta)
    if found is None and record.benchmark.name == "memeye" \
            and str(record.answer_type) == AnswerType.FREE_TEXT.value:
        return JUDGE  # a MemEye open question recorded before the key
    return found


def rule_scorers_for(question: Question, scorers: Sequence[Any],
                     measure: str | None = None) -> list[Any]:
    """The rule scorers that score ``question`` as it is answered: none for a judge-only
    question, the letter rule alone for a rotation, else all. ``measure``: the question's
    (``question_measure``) unless given (a record's, ``record_measure``)."""
    measure = measure or question_measure(question)
    if measure == JUDGE:
        return []
    if measure == LETTER:
        return [s for s in scorers if s.name == LETTER_SCORER]
    return list(scorers)


def judge_applies(record: Record) -> bool:
    """False for a rotation: the judge is never asked about a letter."""
    return record_measure(record) != LETTER
