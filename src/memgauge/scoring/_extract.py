"""Extract-then-match: an LLM extracts the committed final answer in a canonical form for
the question's answer type, then the typed rule scorer matches it.

Long, hedged or reasoning-heavy answers defeat pure rules (the last number in a paragraph
is not always the answer) while a free judge can be lenient; extraction keeps the decision
deterministic. Two special extractions: ``REFUSED`` (the model declined) scores 1 only on
refusal questions; ``NO_CLEAR_ANSWER`` scores 0 (a real answer that commits to nothing,
not a failure). The response is truncated to its last 3,000 characters: the committed
answer sits at the end.
"""

from __future__ import annotations

import hashlib

from ..models import ChatModel
from ..schema import Ability, AnswerType, Question, Score
from ._judge import JudgeFailure, ask_json, json_objects, prepare
from ._rules import TypedRuleScorer

REFUSED = "REFUSED"
NO_CLEAR_ANSWER = "NO_CLEAR_ANSWER"
TAIL_CHARS = 3000

_FORMS = {
    AnswerType.INTEGER: "digits only (convert number words: 'three' -> 3)",
    AnswerType.NUMBER: "the number only, digits with a decimal point if needed",
    AnswerType.CURRENCY: "the amount with its currency symbol or code, e.g. $260.00",
    AnswerType.DATE: "the date as YYYY/MM/DD (or MM/DD when no year is given)",
    AnswerType.CHOICE: "the option letter only, e.g. A",
    AnswerType.MCQ: "the option letter only, e.g. C",
    AnswerType.YES_NO: "Yes or No",
    AnswerType.ORDER: "the items' numbers in order, e.g. (5)(8)(1)",
    AnswerType.FREE_TEXT: "the answer itself in at most ten words",
    AnswerType.REFUSAL: "the answer itself in at most ten words",
    # game answers (design 0032)
    AnswerType.STRING: "the name only, e.g. kitchen",
    AnswerType.ACTION: "the action name only, e.g. move_left",
    AnswerType.DIRECTION: "the direction only, e.g. up-left or north",
    AnswerType.LIST: "the items in order, separated by commas",
    AnswerType.SET: "the items separated by commas, each with its count if given, e.g. wood: 2",
    AnswerType.PATH: "the moves in order, e.g. 2 left, 3 up",
}

_PROMPT = """\
Read a model's response to a question and extract the final answer it commits to.
- If it gives several answers, take the last one it clearly commits to.
- If it declines or says the information is not available, reply REFUSED.
- If it never commits to an answer, reply NO_CLEAR_ANSWER.
- Otherwise write the answer as {form}.
Do not judge whether the answer is right.

QUESTION: {question}
MODEL RESPONSE: {response}

Reply with one JSON object and nothing else: {{"answer": "..."}}"""

VERSION = "1." + hashlib.sha256(
    (_PROMPT + "".join(f"{k}={v}" for k, v in sorted(_FORMS.items()))).encode()).hexdigest()[:8]


def parse_extraction(reply: str) -> str | None:
    for obj in json_objects(reply):
        answer = obj.get("answer")
        if isinstance(answer, str | int | float) and not isinstance(answer, bool):
            return str(answer).strip().strip('"').strip()
    return None


class ExtractMatchScorer:
    """LLM extraction, then :class:`TypedRuleScorer` (name ``"extract-match"``)."""

    name = "extract-match"

    def __init__(self, model: ChatModel, *, max_attempts: int = 3, max_tokens: int = 128) -> None:
        self.model, self.max_attempts, self.max_tokens = model, max(1, max_attempts), max_tokens
        self.rules = TypedRuleScorer()
        self.version = f"{VERSION}+rule{self.rules.version}"

    def _score(self, value: float, extracted: str, **extra: object) -> Score:
        return Score(value=value, scorer=self.name, version=self.version, method="judge",
                     details={"extracted": extracted, **extra})

    async def score_async(self, question: Question, prediction: str) -> Score | JudgeFailure:
        text = prepare(prediction).text[-TAIL_CHARS:]
        prompt = _PROMPT.format(form=_FORMS[question.answer_type], question=question.text,
                                response=text)
        got = await ask_json(self.model, prompt, parse_extraction,
                             max_attempts=self.max_attempts, max_tokens=self.max_tokens)
        if isinstance(got, JudgeFailure):
            return got
        extracted, _reply, attempt = got
        is_refusal_q = (question.answer_type == AnswerType.REFUSAL
                        or question.ability == Ability.ANSWER_REFUSAL)
        if extracted.upper() == REFUSED:
            return self._score(float(is_refusal_q), extracted, attempts=attempt)
        if extracted.upper() == NO_CLEAR_ANSWER or not extracted or is_refusal_q:
            return self._score(0.0, extracted, attempts=attempt)
        matched = self.rules.score(question, extracted)
        assert matched is not None  # a str prediction is always scored
        return self._score(matched.value, extracted, attempts=attempt,
                           rule=dict(matched.details))
