"""The MCQ letter reader on replies shaped like real model answers (MemEye rotations)."""

from __future__ import annotations

import pytest

from memgauge.schema import Ability, AnswerType, Question
from memgauge.scoring import TypedRuleScorer

OPTIONS = ["Red", "White with a blue rim", "Blue", "Green"]
RULE = TypedRuleScorer()


def mcq(gold: str, options: list[str] = OPTIONS) -> Question:
    return Question(question_id="q:r1", text="What colour is my mug now?", answer=gold,
                    answer_type=AnswerType.MCQ, ability=Ability.KNOWLEDGE_UPDATE,
                    options=options)


@pytest.mark.parametrize(
    ("reply", "parsed"),
    [
        ("B", "B"),
        ("b", "B"),
        ("(B)", "B"),
        ("B.", "B"),
        ("B) White with a blue rim", "B"),
        ("Answer: B", "B"),
        ("the answer is b", "B"),
        ("The answer is C.", "C"),
        ("**C**", "C"),
        ("Option D", "D"),
        ("I think it is a red mug (C)", "C"),  # the reference read the article as A
        ("It was a blue one", "C"),  # no letter: the one option quoted, "Blue"
        ("White with a blue rim", "B"),  # a full option text ("blue" inside it is not C)
        ("Green.", "D"),
        ("A is wrong and C is wrong, so B.", "B"),  # the concluding letter is stated
        ("Looking at the images, the answer is A. D would be the older colour.", "A"),
    ],
)
def test_one_letter_is_read(reply: str, parsed: str) -> None:
    s = RULE.score(mcq(parsed), reply)
    assert s is not None and s.details["parsed"] == parsed and s.value == 1.0
    assert "label" not in s.details
    wrong = RULE.score(mcq("A" if parsed != "A" else "B"), reply)
    assert wrong is not None and wrong.value == 0.0 and "label" not in wrong.details


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "Hmm, hard to say from the photos.",
        "A or B",
        "Either B or C.",
        "The answer is B. Actually, the answer is C.",
        "It is a mug on a desk.",  # "a" is an article, and no option text is quoted
        "E",  # not an option here
    ],
)
def test_no_letter_or_two_letters_is_unparseable(reply: str) -> None:
    s = RULE.score(mcq("B"), reply)
    assert s is not None and s.value == 0.0 and s.details["refused"] is False
    assert s.details["parsed"] is None and s.details["label"] == "unparseable"


def test_a_whole_reply_of_one_letter_is_that_letter_in_either_case() -> None:
    s = RULE.score(mcq("A"), "a")
    assert s is not None and s.value == 1.0 and s.details["parsed"] == "A"


def test_legacy_option_count_bounds_the_letters() -> None:
    s = RULE.score(mcq("B", ["Yes", "No"]), "C")  # C is not an option of a two-option item
    assert s is not None and s.details["label"] == "unparseable"


def test_a_refusal_is_a_refusal_not_an_unparseable_letter() -> None:
    s = RULE.score(mcq("B"), "I don't know which one.")
    assert s is not None and s.value == 0.0 and s.details == {"refused": True}
