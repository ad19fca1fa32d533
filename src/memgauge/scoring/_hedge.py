"""Hedged replies: several candidate answers, none stated as the answer (design 0038).

A reply that names every plausible value ("3, 4 or 7"), or dumps the retrieved text with its
hundreds of numbers, names the gold too; reading its last or first candidate as "the answer"
would credit it by chance. So the rule scorers decide in three steps:

1. Find the candidates of the question's type in the whole reply, set aside the values the
   question itself states ("at step 12"), and keep the distinct ones.
2. One distinct candidate: that is the answer, scored as always.
3. Several: the reply must state which is its answer (:func:`stated_answer`). If the stated
   part holds candidates and is not itself a hedge ("3 or 4"), its first candidate is the
   answer; otherwise the reply is **hedged**: scored 0 with ``details["label"] = "hedged"``,
   counted apart in every report like an ``unparseable`` multiple-choice reply.

:func:`stated_answer` reads, in this order: the text after the last answer marker ("the
answer is", "Answer:", "final answer"), to the end of its line; the last line of a reply of
several lines when that line is short; the conclusion of the last sentence ("..., so 5.",
"Therefore 5", "In total 5").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = [
    "HEDGED",
    "SHORT_LINE_WORDS",
    "containment_allowed",
    "distinct",
    "first_sentence",
    "is_hedge",
    "stated_answer",
]

HEDGED = "hedged"  # details["label"] of a reply with several candidates and none stated
SHORT_LINE_WORDS = 8  # a final line this short reads as the reply's answer
# A reply longer than this answers in its stated part or its first sentence (design 0038).
LONG_REPLY_WORDS = 60
_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")

# "The answer is 5", "Answer: 5", "final answer: 5", "my answer would be 5", "**Answer:** 5"
_ANSWER_MARKER = re.compile(
    r"\b(?:final\s+|short\s+|correct\s+|my\s+|the\s+)*answer\b\s*(?:\*\*)?\s*"
    r"(?:is|was|would\s+be|will\s+be|[:=\-–—])\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
# The conclusion of a sentence of reasoning: "..., so 5", "Therefore, 5", "In total 5".
_CONCLUSION = re.compile(
    r"(?:^|[\s,;:])(?:so|therefore|thus|hence|in\s+total|in\s+all|altogether|overall"
    r"|which\s+makes|that\s+makes|making|actually|no\s+wait|wait"
    r"|but\s+(?:it|that|the\s+answer)(?:'s|\s+is|\s+was))\b[\s,:]*(?:(?:it|that|this)\s+(?:is|was|makes)\s+"
    r"|the\s+(?:total|count|number|amount)\s+(?:is|was)\s+)?",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")
# Words that make a stated part a hedge of its own: "the answer is 3 or 4", "maybe 3".
_HEDGE_WORDS = re.compile(
    r"\b(?:or|either|maybe|perhaps|possibly|probably|might|could\s+be|somewhere|between)\b",
    re.IGNORECASE,
)


def _lines(reply: str) -> list[str]:
    return [line.strip() for line in reply.strip().splitlines() if line.strip()]


def stated_answer(reply: str) -> str | None:
    """The part of ``reply`` stated as its answer, or None when it states none (see the
    module docstring)."""
    markers = list(_ANSWER_MARKER.finditer(reply))
    if markers:
        rest = reply[markers[-1].end():].lstrip(" *\t")
        line = rest.split("\n", 1)[0].strip()
        if line:
            return line
    lines = _lines(reply)
    if not lines:
        return None
    if len(lines) > 1 and len(lines[-1].split()) <= SHORT_LINE_WORDS:
        return lines[-1]
    last_sentence = _SENTENCE_END.split(lines[-1])[-1]
    conclusions = list(_CONCLUSION.finditer(last_sentence))
    if conclusions:
        tail = last_sentence[conclusions[-1].end():].strip()
        if tail:
            return tail
    return None


def is_hedge(text: str) -> bool:
    """True when ``text`` words itself as a hedge ("3 or 4", "maybe 3")."""
    return bool(_HEDGE_WORDS.search(text))


T = TypeVar("T")


def distinct(values: Sequence[T], equal: Callable[[T, T], bool]) -> list[T]:
    """``values`` without later repeats under ``equal``, in order of first appearance."""
    out: list[T] = []
    for v in values:
        if not any(equal(v, seen) for seen in out):
            out.append(v)
    return out


def commit(
    reply: str,
    find: Callable[[str], list[T]],
    equal: Callable[[T, T], bool],
    stated_in_question: Sequence[T] = (),
) -> tuple[T | None, dict[str, Any]]:
    """The committed answer of ``reply`` among the candidates ``find`` reads, and what to
    record: ``(value, {})`` for one candidate or one stated answer, ``(None, {"label":
    "hedged", ...})`` for a hedge, ``(None, {})`` when there is no candidate at all.

    Candidates equal to a value the question states are set aside when others remain."""
    def candidates(text: str) -> list[T]:
        found = find(text)
        return [c for c in found if not any(equal(c, s) for s in stated_in_question)] or found

    stated = stated_answer(reply)
    if len(reply.split()) > LONG_REPLY_WORDS:
        # a long reply answers in its stated part or its first sentence, not anywhere in a
        # page of retrieved text that happens to hold one "yes"
        if stated is not None and not is_hedge(stated) and (in_stated := candidates(stated)):
            return in_stated[0], {"stated": stated}
        reply = first_sentence(reply)
        stated = None
        if not candidates(reply):
            return None, {"too_long": True}
    unique = distinct(candidates(reply), equal)
    if len(unique) <= 1:
        return (unique[0] if unique else None), {}
    stated = stated if stated is not None else stated_answer(reply)
    if stated is not None and not is_hedge(stated) and (in_stated := candidates(stated)):
        return in_stated[0], {"stated": stated}
    return None, {"label": HEDGED}


def first_sentence(reply: str) -> str:
    """The reply's first sentence (or line)."""
    return _FIRST_SENTENCE.split(reply.strip(), 1)[0]


def containment_allowed(prediction_tokens: int, gold_tokens: int) -> bool:
    """Whether a free-text reply is short enough, relative to the gold, for containment of
    the gold to count as its answer (design 0038: at most 3x the gold's tokens plus 8)."""
    return prediction_tokens <= 3 * gold_tokens + CONTAINMENT_SLACK


CONTAINMENT_SLACK = 8  # tokens a short answer may add around the gold ("It was in the ...")
