"""Judge-assigned error labels for wrong answers the rules leave unlabelled.

The rules (``analysis._errors``) name the mechanical failures first: non-answers,
answerability failures, stale answers, computation slips, closed-set picks. What is left is
asked of a judge, which splits it in two:

* ``grounding_failure``: the answer is about the right thing and gives a specific value of
  the right kind, but the wrong one, as if the evidence was found and misread (a wrong
  colour, count, text or position of the asked-for object; a detail of a similar item);
* ``unsupported_answer``: the answer asserts something the question does not lead to:
  invented or generic content, an answer of the wrong kind, or no link to what was asked.

The judge sees the question, the reference and the answer, not the conversation, so the
label is a reading of the answer's form, not a check against the history; the report says
so.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..models import ChatModel
from ._judge import JudgeCase, JudgeFailure, ask_json, json_objects, prepare

GROUNDING_FAILURE = "grounding_failure"
UNSUPPORTED_ANSWER = "unsupported_answer"
JUDGE_LABELS = (GROUNDING_FAILURE, UNSUPPORTED_ANSWER)

_PROMPT = """\
A model answered a question about a long conversation history (text and images) and its \
answer is wrong. Classify the kind of mistake.

- grounding_failure: the answer addresses the asked-for item and gives a specific value of \
the right kind, but the wrong value, as if the model found the right evidence and misread \
or mixed it up (a wrong colour, number, text, position or name for the right object; a \
detail taken from a similar item).
- unsupported_answer: the answer states something the question does not lead to: invented \
or generic content, an answer of the wrong kind, or content with no visible link to what \
was asked.

Question: {question}
Reference answer: {gold}
Wrong answer: {prediction}

Reply with one JSON object and nothing else:
{{"label": "grounding_failure" or "unsupported_answer", "reason": "..."}}"""

VERSION = "1." + hashlib.sha256(_PROMPT.encode()).hexdigest()[:8]


def parse_label(reply: str) -> tuple[str, str] | None:
    for obj in json_objects(reply):
        label = str(obj.get("label", "")).strip().lower().replace(" ", "_")
        if label in JUDGE_LABELS:
            return label, str(obj.get("reason", ""))[:300]
    return None


async def label_wrong_answer(model: ChatModel, case: JudgeCase, *, max_attempts: int = 3,
                             max_tokens: int = 256) -> dict[str, Any] | JudgeFailure:
    """``{"label", "reason", "version"}`` for one wrong answer, or a failure."""
    gold = case.gold if isinstance(case.gold, str) else " OR ".join(case.gold)
    prompt = _PROMPT.format(question=case.question, gold=gold,
                            prediction=prepare(case.prediction).text)
    got = await ask_json(model, prompt, parse_label, max_attempts=max_attempts,
                         max_tokens=max_tokens)
    if isinstance(got, JudgeFailure):
        return got
    (label, reason), _reply, _attempt = got
    return {"label": label, "reason": reason, "version": VERSION}
