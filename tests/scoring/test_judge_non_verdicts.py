"""A judge reply that is not a verdict on the rubric's scale (an echoed template, a 4 on a
0/1 rubric) is asked again and then a judge failure: never clamped, never a score."""

from __future__ import annotations

import asyncio

import pytest

from memgauge.models.scripted import ScriptedModel
from memgauge.schema import Ability, Score
from memgauge.scoring import JudgeScorer
from memgauge.scoring._judge import JudgeCase, JudgeFailure

CASE = JudgeCase(question="What colour was the mug?", gold="red", prediction="red",
                 ability=Ability.INFORMATION_EXTRACTION, subtype="entity")


def _judge(replies: list[str], rubric: str = "memlens") -> tuple[Score | JudgeFailure, int]:
    it = iter(replies)
    model = ScriptedModel(fn=lambda messages, qid: next(it))
    got = asyncio.run(JudgeScorer(model, rubric=rubric).judge(CASE))
    return got, len(model.calls)


@pytest.mark.parametrize("bad", ['{"score": 0 or 1, "reason": "..."}', '{"score": "4"}',
                                 '{"score": 2, "reason": "very good"}'])
def test_a_non_verdict_is_asked_again_and_a_later_verdict_counts(bad: str) -> None:
    got, calls = _judge([bad, '{"score": 1, "reason": "same colour"}'])
    assert isinstance(got, Score) and got.value == 1.0 and calls == 2


def test_only_non_verdicts_make_a_judge_failure_not_a_score() -> None:
    got, calls = _judge(['{"score": 0 or 1, "reason": "..."}', '{"score": "4"}', '"score": 7'])
    assert isinstance(got, JudgeFailure) and got.kind == "unparseable_reply" and calls == 3


def test_memeye_off_scale_values_are_not_verdicts() -> None:
    got, calls = _judge(['{"score": 4}', '{"score": 0.6}', '{"score": 0.75}'], rubric="memeye")
    assert isinstance(got, Score) and got.value == 0.75 and calls == 3
