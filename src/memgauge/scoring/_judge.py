"""LLM-judge machinery shared by every rubric: prediction clean-up, reading a score from a
reply, retries, and failures kept apart from wrong answers.

A rubric (:class:`Rubric`; MemLens in ``_rubric_memlens``, MemEye in ``_rubric_memeye``)
turns one case into a prompt and reads its reply; :class:`JudgeScorer` runs it.

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

import contextlib
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from ..jsontext import json_objects
from ..ledger import JudgeSpend
from ..models import ChatModel, GenerateConfig, Message, ModelError, TextPart
from ..models._base import ModelOutput
from ..prompt import clean_prediction
from ..schema import Ability, AnswerType, Score

MODES = ("default", "memlens-compat")
TAIL_CHAR_LIMIT = 6000
TAIL_FRACTION = 0.3
WORD_LIMIT = 500
TRUNCATION_MARKER = "[...truncated earlier reasoning...]\n"


@dataclass(frozen=True)
class JudgeCase:
    """What a judge sees of one answer (never the conversation itself)."""

    question: str
    gold: str | list[str]
    prediction: str
    ability: Ability | str
    subtype: str | None = None
    answer_type: AnswerType | str | None = None
    old_answer: str | None = None


class Rubric(Protocol):
    """A grading rubric: its prompt for a case and how to read the reply."""

    name: str
    version: str  # changes with any template wording
    levels: tuple[float, ...]  # the values a verdict can take

    def key(self, case: JudgeCase) -> str: ...

    def build(self, case: JudgeCase, prediction: str) -> str: ...

    def parse(self, reply: str) -> float | None: ...


def register_rubric(name: str, factory: Callable[[], Rubric]) -> None:
    """Register a judge rubric in the registry (as ``@registry.rubric(name)`` does)."""
    from .. import registry

    registry.rubric(name)(factory)


def rubric_names() -> list[str]:
    """Every registered rubric: the built-ins and those of plugins (``memgauge.rubrics``)."""
    from ..registry import names

    return names("rubric")


def get_rubric(name: str) -> Rubric:
    from ..registry import lookup

    if name not in rubric_names():
        raise ValueError(f"unknown judge rubric {name!r}; use one of "
                         f"{', '.join(rubric_names())}")
    return lookup("rubric", name)()


@dataclass
class Prepared:
    text: str
    auto_zero: bool
    truncated: bool


def prepare(prediction: str, mode: str = "default") -> Prepared:
    """Clean a prediction and apply the long-output rule of ``mode`` (module docstring)."""
    if mode not in MODES:
        raise ValueError(f"unknown judge mode {mode!r}; use {' or '.join(MODES)}")
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


# A bare field's number must end the value: `"score": 0 or 1` (the reply template, echoed
# back by a small model) is not a verdict of 0.
_SCORE_FIELD = re.compile(r'"(?:answer_score|score)"\s*:\s*"?(-?\d+(?:\.\d+)?)"?\s*(?=[,}\]\n]|$)',
                          re.IGNORECASE)


def _number(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return 1.0 if raw else 0.0
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            return None
    if isinstance(raw, int | float):
        return float(raw)
    return None


def read_score(text: str) -> float | None:
    """The raw number under ``score`` (or ``answer_score``) in a reply, unclamped; None
    when there is none. A bare ``"score": n`` field is the last resort (the reference's
    form)."""
    for obj in json_objects(text):
        value = _number(obj.get("score", obj.get("answer_score")))
        if value is not None:
            return value
    m = _SCORE_FIELD.search(text or "")
    return float(m.group(1)) if m else None


def read_verdict(text: str, levels: tuple[float, ...], tolerance: float = 1e-9) -> float | None:
    """The verdict in a reply when it is one of the rubric's ``levels`` (within
    ``tolerance``); None otherwise. A value outside the levels (a 4 on a 0/1 rubric, a -1)
    is not clamped into one: the reply is unreadable, so the judge is asked again and, if it
    never answers on the scale, the case is a judge failure, never a score."""
    value = read_score(text)
    if value is None:
        return None
    nearest = min(levels, key=lambda level: abs(level - value))
    return nearest if abs(nearest - value) <= tolerance else None


@dataclass
class JudgeFailure:
    """The judge gave no verdict; reported apart, never counted as a wrong answer."""

    kind: str
    message: str


# What the judge calls made inside one metered_judging() block spent (one record's judging;
# a context variable, as the response cache's counts, since records are judged concurrently).
_SPEND: ContextVar[JudgeSpend | None] = ContextVar("memgauge_judge_spend", default=None)


@contextlib.contextmanager
def metered_judging() -> Iterator[JudgeSpend]:
    """Sum the usage of the judge replies received inside (design 0034)."""
    spend = JudgeSpend()
    token = _SPEND.set(spend)
    try:
        yield spend
    finally:
        _SPEND.reset(token)


def _meter(out: ModelOutput) -> None:
    spend = _SPEND.get()
    if spend is not None and not out.cached:  # a cached reply was not paid for now
        spend.add_reply(out.usage)


async def ask_json(model: ChatModel, prompt: str, read: Callable[[str], Any], *,
                   max_attempts: int, max_tokens: int) -> tuple[Any, str, int] | JudgeFailure:
    """Send ``prompt`` until ``read(reply)`` is not None: (value, reply, attempt), or a
    failure after ``max_attempts`` unreadable replies or a transport error."""
    reply = ""

    def readable(text: str) -> bool:  # an unreadable reply is never cached (design 0043)
        return read(text) is not None

    for attempt in range(1, max_attempts + 1):
        # A retry rephrases the request slightly: replies are cached by content, so the
        # same request would return the same unreadable reply.
        text = prompt if attempt == 1 else (
            f"{prompt}\n\n(Attempt {attempt}: your previous reply could not be read. "
            "Reply with the JSON object only.)")
        try:
            out = await model.generate([Message("user", [TextPart(text)])],
                                       GenerateConfig(max_tokens=max_tokens, temperature=0.0,
                                                      cacheable=readable))
        except ModelError as exc:  # the model client has already retried transport errors
            return JudgeFailure(exc.kind, exc.message)
        _meter(out)
        reply = out.text or ""
        value = read(reply)
        if value is not None:
            return value, reply, attempt
    return JudgeFailure("unparseable_reply",
                        f"no readable reply in {max_attempts} attempts; last: {reply[:200]!r}")


class JudgeScorer:
    """Scores one answer with a judge model under one rubric (default name ``"judge"``)."""

    def __init__(self, model: ChatModel, *, rubric: str | Rubric = "memlens",
                 mode: str = "default", name: str = "judge", max_attempts: int = 3,
                 max_tokens: int = 512) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown judge mode {mode!r}; use {' or '.join(MODES)}")
        if "judge" not in name:
            raise ValueError(f"a judge scorer's name must contain 'judge', got {name!r}")
        self.model, self.mode, self.name = model, mode, name
        self.rubric = get_rubric(rubric) if isinstance(rubric, str) else rubric
        self.version = self.rubric.version
        self.max_attempts, self.max_tokens = max(1, max_attempts), max_tokens

    def _score(self, value: float, key: str, reply: str | None, auto_zero: bool,
               extra: dict[str, Any]) -> Score:
        return Score(value=value, scorer=self.name, version=self.version, method="judge",
                     details={"rubric": self.rubric.name, "task_key": key,
                              "reply": None if reply is None else reply[:500],
                              "mode": self.mode, "auto_zero": auto_zero, **extra})

    async def judge(self, case: JudgeCase) -> Score | JudgeFailure:
        key = self.rubric.key(case)
        prep = prepare(case.prediction, self.mode)
        extra = {"truncated": prep.truncated}
        if prep.auto_zero:
            return self._score(0.0, key, None, True, extra)
        got = await ask_json(self.model, self.rubric.build(case, prep.text), self.rubric.parse,
                             max_attempts=self.max_attempts, max_tokens=self.max_tokens)
        if isinstance(got, JudgeFailure):
            return got
        value, reply, attempt = got
        return self._score(value, key, reply, False, {**extra, "attempts": attempt})

    async def score_async(self, question_text: str, gold: str | list[str], prediction: str,
                          ability: Ability | str, subtype: str | None,
                          answer_type: AnswerType | str | None = None,
                          old_answer: str | None = None) -> Score | JudgeFailure:
        return await self.judge(JudgeCase(question_text, gold, prediction, ability, subtype,
                                          answer_type, old_answer))
