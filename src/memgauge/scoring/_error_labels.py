"""Rule-assigned error labels for wrong answers (the rule part of the MemLens error taxonomy).

A wrong answer (status ``ok`` and ``scores[scorer] < 1``) gets the first label that applies:

1. ``non_answer``: empty prediction, over ``max_words`` words, degenerate repetition
   (unique 5-gram ratio under 0.40 over at least 500 characters), or a reply the rule
   scorer found hedged (several candidates, none stated; design 0038);
2. ``answerability_failure``: answered a refusal question, or refused an answerable one;
3. ``stale_answer``: the prediction matches one of the question's old (superseded) answers;
4. ``computation_slip``: a numeric answer within 10 % (or, for integers, 1) of the gold;
5. ``closed_set_selection``: a closed-set question on which a (wrong) option was picked;
6. ``grounding_failure`` / ``unsupported_answer``: judge-assigned for the rest, when the
   judge pipeline has labelled the record (``meta["judge_error_label"]``; see
   ``scoring._judge_labels``);
7. ``unlabelled``: anything else (no judge label yet).

Each label then folds into a modality category (output / reasoning / visual / mixed /
textual / unknown), the last four from ``labels.image_dependency``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..schema import AnswerType, Record
from ._parse import parse_amounts, parse_numbers
from ._refusal import is_refusal
from ._text import normalize_text, subem, token_f1

NON_ANSWER = "non_answer"
ANSWERABILITY_FAILURE = "answerability_failure"
STALE_ANSWER = "stale_answer"
COMPUTATION_SLIP = "computation_slip"
CLOSED_SET_SELECTION = "closed_set_selection"
GROUNDING_FAILURE = "grounding_failure"
UNSUPPORTED_ANSWER = "unsupported_answer"
UNLABELLED = "unlabelled"

LABELS = (
    NON_ANSWER,
    ANSWERABILITY_FAILURE,
    STALE_ANSWER,
    COMPUTATION_SLIP,
    CLOSED_SET_SELECTION,
    GROUNDING_FAILURE,
    UNSUPPORTED_ANSWER,
    UNLABELLED,
)
JUDGE_ASSIGNED = (GROUNDING_FAILURE, UNSUPPORTED_ANSWER)

_NUMERIC = frozenset({AnswerType.INTEGER, AnswerType.NUMBER, AnswerType.CURRENCY})
_CLOSED = frozenset({AnswerType.CHOICE, AnswerType.YES_NO, AnswerType.ORDER, AnswerType.MCQ})
_DEP_CATEGORY = {"essential": "visual", "mixed": "mixed", "supportive": "mixed",
                 "text": "textual"}

DEGENERATE_MIN_CHARS = 500
DEGENERATE_MIN_RATIO = 0.40
STALE_F1 = 0.8
SLIP_RELATIVE = Decimal("0.1")


@dataclass(frozen=True)
class ErrorLabel:
    label: str
    category: str
    detail: str = ""


def _category(label: str, image_dependency: str | None) -> str:
    if label == NON_ANSWER:
        return "output"
    if label in (ANSWERABILITY_FAILURE, STALE_ANSWER, COMPUTATION_SLIP):
        return "reasoning"
    return _DEP_CATEGORY.get(image_dependency or "", "unknown")


def _degenerate(text: str) -> float | None:
    """The unique 5-gram ratio of ``text`` when it is degenerate, else None."""
    if len(text) < DEGENERATE_MIN_CHARS:
        return None
    words = text.split()
    if len(words) < 5:
        grams = [text[i : i + 5] for i in range(len(text) - 4)]  # no spaces: character 5-grams
    else:
        grams = [tuple(words[i : i + 5]) for i in range(len(words) - 4)]
    ratio = len(set(grams)) / len(grams)
    return ratio if ratio < DEGENERATE_MIN_RATIO else None


def _details(record: Record, scorer: str) -> dict[str, Any]:
    score = record.score_details.get(scorer)
    return dict(score.details) if score is not None else {}


def _golds(record: Record) -> list[str]:
    return list(record.gold) if isinstance(record.gold, list) else [record.gold]


def _matches(answer: str, pred: str) -> str | None:
    if not answer or not answer.strip():
        return None
    if normalize_text(answer) == normalize_text(pred):
        return "exact"
    if subem(answer, pred):
        return "contained"
    if token_f1(answer, pred) >= STALE_F1:
        return "f1"
    return None


def _numbers(text: str, answer_type: AnswerType) -> list[Decimal]:
    if answer_type == AnswerType.CURRENCY:
        found = [v for v, _ in parse_amounts(text)]
        if found:
            return found
    return parse_numbers(text)


def _predicted_number(record: Record, pred: str, details: dict[str, Any]) -> Decimal | None:
    parsed = details.get("parsed")
    if isinstance(parsed, str) and parsed.strip():
        nums = _numbers(parsed, record.answer_type)
        if nums:
            return nums[0]
    nums = _numbers(pred, record.answer_type)
    return nums[-1] if nums else None  # the committed (last) candidate, as the scorer does


def _slip(record: Record, pred: str, details: dict[str, Any]) -> str | None:
    p = _predicted_number(record, pred, details)
    if p is None:
        return None
    for gold in _golds(record):
        nums = _numbers(gold, record.answer_type)
        if not nums:
            continue
        g = nums[0]
        if p == g:
            continue
        diff = abs(p - g)
        if g != 0 and diff <= SLIP_RELATIVE * abs(g):
            return f"predicted {p} vs gold {g} (within 10%)"
        if record.answer_type == AnswerType.INTEGER and diff == 1:
            return f"predicted {p} vs gold {g} (off by 1)"
    return None


Finding = tuple[str, str]  # (label, detail)


def label_error(
    record: Record,
    *,
    scorer: str = "rule",
    old_answers: Mapping[str, list[str]] | None = None,
    max_words: int = 500,
) -> ErrorLabel | None:
    """The rule-assigned error label of a wrong answer; None for a correct, unscored or
    errored record. The taxonomy's rules, in their order of precedence: the first that
    finds something labels the answer."""
    if not _scored_wrong(record, scorer):
        return None
    details = _details(record, scorer)
    pred = record.prediction or ""
    label, detail = (_non_answer(pred, details, max_words)
                     or _answerability_failure(record, pred)
                     or _stale_answer(record, pred, old_answers)
                     or _computation_slip(record, pred, details)
                     or _closed_set_selection(record, details)
                     or _judge_assigned(record)
                     or (UNLABELLED, ""))
    return ErrorLabel(label=label, category=_category(label, record.labels.image_dependency),
                      detail=detail)


def _scored_wrong(record: Record, scorer: str) -> bool:
    if record.status != "ok" or record.response.error is not None:
        return False
    value = record.scores.get(scorer)
    return value is not None and value < 1


def _non_answer(pred: str, details: dict[str, Any], max_words: int) -> Finding | None:
    """1. No answer given: empty, too long, degenerate repetition, or hedged."""
    if not pred.strip():
        return NON_ANSWER, "empty prediction"
    n_words = len(pred.split())
    if n_words > max_words:
        return NON_ANSWER, f"{n_words} words > {max_words}"
    ratio = _degenerate(pred)
    if ratio is not None:
        return NON_ANSWER, f"degenerate repetition (unique 5-gram ratio {ratio:.2f})"
    if details.get("label") == "hedged":  # design 0038
        return NON_ANSWER, "hedged: several candidate answers, none stated as the answer"
    return None


def _answerability_failure(record: Record, pred: str) -> Finding | None:
    """2. Answered an unanswerable question, or refused an answerable one."""
    if record.answer_type == AnswerType.REFUSAL:
        if not is_refusal(pred):
            return ANSWERABILITY_FAILURE, "answered an unanswerable question"
    elif record.refused is True:
        return ANSWERABILITY_FAILURE, "refused an answerable question"
    return None


def _stale_answer(record: Record, pred: str,
                  old_answers: Mapping[str, list[str]] | None) -> Finding | None:
    """3. The prediction matches an answer that was true before an update."""
    for old in _old_answers(record, old_answers):
        how = _matches(old, pred)
        if how is not None:
            return STALE_ANSWER, f"matches old answer {old!r} ({how})"
    return None


def _old_answers(record: Record, old_answers: Mapping[str, list[str]] | None) -> list[str]:
    """The question's superseded answers: from ``old_answers`` and the record's meta."""
    olds: list[str] = []
    if old_answers is not None:
        olds.extend(old_answers.get(record.question_id) or [])
    meta_olds = record.meta.get("old_answers")
    if isinstance(meta_olds, str):
        olds.append(meta_olds)
    elif isinstance(meta_olds, list):
        olds.extend(str(o) for o in meta_olds)
    return olds


def _computation_slip(record: Record, pred: str, details: dict[str, Any]) -> Finding | None:
    """4. A numeric answer close to the gold (within 10 %, or an integer off by one)."""
    if record.answer_type not in _NUMERIC:
        return None
    slip = _slip(record, pred, details)
    return (COMPUTATION_SLIP, slip) if slip is not None else None


def _closed_set_selection(record: Record, details: dict[str, Any]) -> Finding | None:
    """5. A closed-set question answered with another of its options."""
    if record.answer_type in _CLOSED and (details.get("candidates") or details.get("parsed")):
        picked = details.get("parsed") or details["candidates"][-1]
        return CLOSED_SET_SELECTION, f"picked {picked}"
    return None


def _judge_assigned(record: Record) -> Finding | None:
    """6. The label the judge gave (grounding, unsupported answer)."""
    judged = record.meta.get("judge_error_label")
    if isinstance(judged, dict) and judged.get("label") in JUDGE_ASSIGNED:
        return judged["label"], str(judged.get("reason") or "")[:200]
    return None
