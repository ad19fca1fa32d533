"""The MemLens judge rubric: a 0/1 verdict per answer, with one of ten task criteria.

Each question maps to one of ten task keys (:func:`task_key`, following the MemLens
reference's mapping); the prompt (:func:`build_prompt`, our own wording) states universal
grading rules, one task-specific criterion and the case, and asks for
``{"score": 0 or 1, "reason": "..."}``. :data:`VERSION` carries a digest of every template
text, so any wording change is a new version and never mixes with older verdicts.
"""

from __future__ import annotations

import hashlib

from ..schema import Ability
from ._judge import JudgeCase, read_verdict

TASK_KEYS = (
    "IE_Entity", "IE_PreviousInfo", "MSR_Arithmetic", "MSR_Counting", "MSR_YesNo",
    "TR_DurationComparison", "TR_OrderRanking", "TR_DateExtraction", "KU_KnowledgeUpdate",
    "AR_AnswerRefusal",
)


def task_key(question_type: Ability | str, subtype: str | None,
             answer: str | list[str] | None) -> str:
    """The MemLens task key for a question type (our ``Ability`` value), subtype and gold
    answer. Types outside MemLens fall back to ``IE_Entity``, as in the reference."""
    qtype = str(question_type.value if isinstance(question_type, Ability) else question_type)
    gold = answer[0] if isinstance(answer, list) and answer else answer
    gold = gold.strip() if isinstance(gold, str) else ""
    if qtype == Ability.INFORMATION_EXTRACTION:
        return "IE_PreviousInfo" if subtype == "previnfo" else "IE_Entity"
    if qtype == Ability.MULTI_SESSION_REASONING:
        if subtype == "arithmetic":
            return "MSR_Arithmetic"
        if subtype == "entity_resolution" and gold in ("Yes", "No"):
            return "MSR_YesNo"
        return "MSR_Counting"
    if qtype == Ability.TEMPORAL_REASONING:
        if subtype == "duration_comparison":
            return "TR_DurationComparison"
        if subtype == "order_ranking":
            return "TR_OrderRanking"
        return "TR_DateExtraction"
    if qtype == Ability.KNOWLEDGE_UPDATE:
        return "KU_KnowledgeUpdate"
    if qtype == Ability.ANSWER_REFUSAL:
        return "AR_AnswerRefusal"
    return "IE_Entity"


_RULES = """\
You are a careful grading teacher. A student answered a question about a long conversation \
history. Compare the student's answer with the standard answer and award 1 point (correct) \
or 0 points (not correct).

General rules:
1. Grade only the final answer the student commits to. Working, hesitation and side remarks \
do not count for or against it; if several answers appear, the last clearly stated one is \
the committed answer.
2. Award 0 when the student switches back and forth without settling, states conflicting \
final answers, or gives only a reasoning trace with no conclusion. A correct value that \
appears only in the middle of the reasoning earns nothing.
3. If the student declines but still commits to a guess, grade the guess. A refusal or \
"insufficient information" earns 0, except where the task below says a refusal is correct.
4. Accept answers that mean the same thing: equal numbers written differently (0.1 and 10%, \
3 and three), synonyms and full or short names (UK and United Kingdom), singular versus \
plural, and the same date in another format. Do not accept answers that are merely related.
5. Ignore formatting, capitalisation, punctuation and extra politeness.
6. If the student answer starts with "[...truncated earlier reasoning...]", earlier text was \
cut; find the committed answer in the part that is shown."""

_CRITERIA = {
    "IE_Entity": (
        "Information lookup. Award 1 when the key fact of the standard answer is present and "
        "correct. Award 0 when it is missing, contradicted, too vague to check, or wrong. "
        "Numbers and counts must match exactly unless the standard answer is approximate."),
    "IE_PreviousInfo": (
        "Recalling earlier information. Award 1 when the student recovers the same earlier "
        "detail (the right item, relation, position, count or attribute), however it is "
        "worded. Award 0 for a different item or relation (for example left instead of "
        "right), a vague answer, or one not supported by the conversation."),
    "MSR_Arithmetic": (
        "A computed value. Award 1 when the student's value equals the standard value in any "
        "equivalent form (0.5, 1/2 and 50% are equal; $260 and $260.00 are equal). Award 0 "
        "for a different value or an approximation the standard answer does not allow."),
    "MSR_Counting": (
        "A count. Award 1 only for exactly the standard number in any form (3, three, 3.0). "
        "Award 0 for a different number, a range, or an approximate count."),
    "MSR_YesNo": (
        "A yes/no question. Award 1 when the student's verdict means the same as the standard "
        "one (\"that's right\" counts as yes). Award 0 for the opposite verdict or when the "
        "student never commits to one."),
    "TR_DurationComparison": (
        "A choice between two options. Award 1 when the student clearly picks the same option "
        "as the standard answer; otherwise 0."),
    "TR_OrderRanking": (
        "An ordering. Award 1 only when the student gives exactly the same items in exactly "
        "the same order (items may be named instead of numbered if they clearly correspond). "
        "Any missing, extra, repeated or misplaced item, or an unclear order, earns 0."),
    "TR_DateExtraction": (
        "A date or time. Award 1 for the same date in any unambiguous format. Award 0 for a "
        "different date (a wrong year included), a partial date where the full one is "
        "needed, or an ambiguous one."),
    "KU_KnowledgeUpdate": (
        "Information that changed over time. Award 1 only when the student gives the current "
        "(latest) answer. Award 0 for the outdated answer, any other answer, or a refusal."),
    "AR_AnswerRefusal": (
        "The conversation does not contain the answer, so the correct response is to decline. "
        "Award 1 when the student clearly says the information is not available, not enough, "
        "or that the question cannot be answered. Award 0 for any substantive answer, even a "
        "hedged one."),
}

_REPLY = """\
Reply with one JSON object and nothing else, keeping the reason short:
{"score": 0 or 1, "reason": "..."}"""


def standard_answer(gold: str | list[str], key: str) -> str:
    """The standard answer a judge is shown: for refusal questions always "Insufficient
    information" (as the reference does); several accepted answers joined with OR."""
    if key == "AR_AnswerRefusal":
        return "Insufficient information"
    if isinstance(gold, list):
        return gold[0] if len(gold) == 1 else " OR ".join(gold) + " (any one is correct)"
    return gold


def build_prompt(question_text: str, gold: str | list[str], prediction: str, key: str,
                 old_answer: str | None = None) -> str:
    """The full judge prompt for one answer (a single user message)."""
    if key not in _CRITERIA:
        raise ValueError(f"unknown task key {key!r}")
    case = [f"Question: {question_text}", f"Standard answer: {standard_answer(gold, key)}"]
    if key == "KU_KnowledgeUpdate" and old_answer:
        case.append(f"Old (outdated) answer: {old_answer}")
    case.append(f"Student answer: {prediction}")
    return (f"{_RULES}\n\nTask-specific criterion:\n{_CRITERIA[key]}\n\nThe case:\n"
            + "\n".join(case) + f"\n\n{_REPLY}")


def parse_reply(text: str) -> float | None:
    """The verdict in a judge reply, 0 or 1; None when there is none, or when it is not 0
    or 1 (never clamped: a "score": 4 is not a 1).

    Reads, in order: the whole reply as JSON, a fenced ```json block, any flat ``{...}``
    object, then a bare ``"score": n`` / ``"answer_score": n`` field (the reference's form).
    """
    return read_verdict(text, (0.0, 1.0))


def _digest(*texts: str) -> str:
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:8]


# 2: a value other than 0 or 1, or an echoed template, is unreadable (1 clamped it)
VERSION = "2." + _digest(_RULES, *(f"{k}={v}" for k, v in sorted(_CRITERIA.items())), _REPLY)


class MemLensRubric:
    """Binary MemLens grading (``levels`` 0 and 1)."""

    name = "memlens"
    version = VERSION
    levels = (0.0, 1.0)

    def key(self, case: JudgeCase) -> str:
        return task_key(case.ability, case.subtype, case.gold)

    def build(self, case: JudgeCase, prediction: str) -> str:
        return build_prompt(case.question, case.gold, prediction, self.key(case),
                            case.old_answer)

    def parse(self, reply: str) -> float | None:
        return parse_reply(reply)
