"""An LLM judge in the MemLens style: one prompt per answer, a 0/1 verdict as JSON.

Each question maps to one of ten task keys (:func:`task_key`, following the MemLens
reference's mapping); the prompt (:func:`build_prompt`, our own wording, version
:data:`JUDGE_PROMPT_VERSION`) states universal grading rules, one task-specific criterion and
the case, and asks for ``{"score": 0 or 1, "reason": "..."}``.

Prediction clean-up (:func:`prepare`) has two modes:

* ``"memlens-compat"`` reproduces the reference: the cleaned answer, when longer than 6,000
  characters, keeps its last 30 % (prefixed with a truncation marker); then, when the kept
  text has more than 500 whitespace words, it scores 0 without a judge call ("auto-zero").
* ``"default"`` keeps at most the last 6,000 characters (same marker) and never auto-zeroes.
  The reference rule is non-monotonic in length: because truncation happens before the word
  count, answers of roughly 2.6k-6k characters are auto-zeroed while 6k-8.3k character ones
  are truncated and judged, and longer ones are auto-zeroed again. A verdict that flips with
  the length of the reasoning, not its content, is noise, so by default every answer is
  judged on its (bounded) tail, which is where the committed answer sits.

A judge that fails (transport error, or no parseable reply after ``max_attempts``) yields a
:class:`JudgeFailure`, never a score of 0: failures are reported apart from wrong answers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..models import ChatModel, GenerateConfig, Message, ModelError, TextPart
from ..schema import Ability, AnswerType, Score

JUDGE_PROMPT_VERSION = "1"
MODES = ("default", "memlens-compat")
TAIL_CHAR_LIMIT = 6000
TAIL_FRACTION = 0.3
WORD_LIMIT = 500
TRUNCATION_MARKER = "[...truncated earlier reasoning...]\n"

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


def build_prompt(question_text: str, gold: str | list[str], prediction: str, key: str,
                 old_answer: str | None = None) -> str:
    """The full judge prompt for one answer (a single user message)."""
    if key not in _CRITERIA:
        raise ValueError(f"unknown task key {key!r}")
    if key == "AR_AnswerRefusal":
        standard = "Insufficient information"
    elif isinstance(gold, list):
        standard = gold[0] if len(gold) == 1 else " OR ".join(gold) + " (any one is correct)"
    else:
        standard = gold
    case = [f"Question: {question_text}", f"Standard answer: {standard}"]
    if key == "KU_KnowledgeUpdate" and old_answer:
        case.append(f"Old (outdated) answer: {old_answer}")
    case.append(f"Student answer: {prediction}")
    return (f"{_RULES}\n\nTask-specific criterion:\n{_CRITERIA[key]}\n\nThe case:\n"
            + "\n".join(case) + f"\n\n{_REPLY}")


@dataclass
class Prepared:
    text: str
    auto_zero: bool
    truncated: bool


def prepare(prediction: str, mode: str = "default") -> Prepared:
    """Clean a prediction and apply the long-output rule of ``mode`` (module docstring)."""
    if mode not in MODES:
        raise ValueError(f"unknown judge mode {mode!r}; use {' or '.join(MODES)}")
    from ..systems._context import clean_prediction  # lazy: systems import scoring

    text = clean_prediction(prediction)
    truncated = len(text) > TAIL_CHAR_LIMIT
    if mode == "memlens-compat":
        if truncated:
            keep = int(len(text) * TAIL_FRACTION)
            text = TRUNCATION_MARKER + text[len(text) - keep:]
        return Prepared(text, len(text.split()) > WORD_LIMIT, truncated)
    if truncated:
        text = TRUNCATION_MARKER + text[-TAIL_CHAR_LIMIT:]
    return Prepared(text, False, truncated)


_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S | re.I)
_OBJECT = re.compile(r"\{[^{}]*\}", re.S)
_SCORE_FIELD = re.compile(r'"(?:answer_score|score)"\s*:\s*"?(-?\d+(?:\.\d+)?)', re.I)


def _value(obj: Any) -> float | None:
    if not isinstance(obj, dict):
        return None
    raw = obj.get("score", obj.get("answer_score"))
    if isinstance(raw, bool):
        return 1.0 if raw else 0.0
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            return None
    if isinstance(raw, int | float):
        return 1.0 if raw >= 1 else 0.0
    return None


def parse_reply(text: str) -> float | None:
    """The verdict in a judge reply, clamped to 0 or 1; None when there is none.

    Reads, in order: the whole reply as JSON, a fenced ```json block, any flat ``{...}``
    object, then a bare ``"score": n`` / ``"answer_score": n`` field (the reference's form).
    """
    if not text:
        return None
    candidates = [text.strip()]
    candidates += [m.group(1) for m in _FENCED.finditer(text)]
    candidates += [m.group(0) for m in _OBJECT.finditer(text)]
    for cand in candidates:
        try:
            value = _value(json.loads(cand))
        except (json.JSONDecodeError, ValueError):
            continue
        if value is not None:
            return value
    m = _SCORE_FIELD.search(text)
    if m:
        return 1.0 if float(m.group(1)) >= 1 else 0.0
    return None


@dataclass
class JudgeFailure:
    """The judge gave no verdict; reported apart, never counted as a wrong answer."""

    kind: str
    message: str


class JudgeScorer:
    """Scores one answer with a judge model (``name = "judge"``)."""

    name = "judge"
    version = JUDGE_PROMPT_VERSION

    def __init__(self, model: ChatModel, *, mode: str = "default", max_attempts: int = 3,
                 max_tokens: int = 512) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown judge mode {mode!r}; use {' or '.join(MODES)}")
        self.model, self.mode = model, mode
        self.max_attempts, self.max_tokens = max(1, max_attempts), max_tokens

    def _score(self, value: float, key: str, reply: str | None, auto_zero: bool,
               extra: dict[str, Any]) -> Score:
        return Score(value=value, scorer=self.name, version=self.version, method="judge",
                     details={"task_key": key, "reply": None if reply is None else reply[:500],
                              "mode": self.mode, "auto_zero": auto_zero, **extra})

    async def score_async(self, question_text: str, gold: str | list[str], prediction: str,
                          ability: Ability | str, subtype: str | None,
                          answer_type: AnswerType | str | None = None,
                          old_answer: str | None = None) -> Score | JudgeFailure:
        key = task_key(ability, subtype, gold)
        prep = prepare(prediction, self.mode)
        extra = {"truncated": prep.truncated}
        if prep.auto_zero:
            return self._score(0.0, key, None, True, extra)
        prompt = build_prompt(question_text, gold, prep.text, key, old_answer)
        reply = ""
        for attempt in range(1, self.max_attempts + 1):
            # A retry rephrases the request slightly: replies are cached by content, so the
            # same request would return the same unparseable reply.
            text = prompt if attempt == 1 else (
                f"{prompt}\n\n(Attempt {attempt}: your previous reply could not be read. "
                "Reply with the JSON object only.)")
            try:
                out = await self.model.generate(
                    [Message("user", [TextPart(text)])],
                    GenerateConfig(max_tokens=self.max_tokens, temperature=0.0))
            except ModelError as exc:  # the model client has already retried transport errors
                return JudgeFailure(exc.kind, exc.message)
            reply = out.text or ""
            value = parse_reply(reply)
            if value is not None:
                return self._score(value, key, reply, False, {**extra, "attempts": attempt})
        return JudgeFailure("unparseable_reply",
                            f"no score in {self.max_attempts} replies; last: {reply[:200]!r}")
