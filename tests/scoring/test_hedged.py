"""Hedged and dumped replies earn nothing under the rule scorer (design 0038): a reply with
several distinct candidates of the question's type and none stated as its answer is scored 0
and labelled ``hedged``; a long reply does not get free-text credit by containing the gold."""

from __future__ import annotations

from typing import Any

import pytest

from memgauge.schema import Question
from memgauge.scoring import TypedRuleScorer
from memgauge.scoring._hedge import stated_answer
from memgauge.scoring._refusal import reads_as_refusal

RULE = TypedRuleScorer()


def q(answer: Any, answer_type: str, text: str = "What was it?", **extra: Any) -> Question:
    return Question(question_id="h1", text=text, answer=answer, answer_type=answer_type,
                    ability="single_hop", **extra)


def gq(answer: Any, answer_type: str, text: str = "What was it?", env: str = "crafter") -> Question:
    return Question(question_id="g1", text=text, answer=answer, answer_type=answer_type,
                    ability="single_hop",
                    meta={"game": {"env": env, "template": "t", "alternatives": [],
                                   "answerable": True}})


def scored(question: Question, reply: str) -> tuple[float, str | None]:
    s = RULE.score(question, reply)
    assert s is not None
    return s.value, s.details.get("label")


# Each hedge names the gold among other candidates and states none of them: 0, "hedged".
HEDGES = [
    (q("7", "integer"), "It could be 3, 4 or 7."),
    (q("2.5", "number"), "Somewhere around 1.5, 2.5 or 3.5 kilometres."),
    (q("$12.50", "currency"), "$10.00, $12.50, $14.00"),
    (q("2024-03-05", "date"), "2024-03-01, 2024-03-05, 2024-03-09"),
    (q("yes", "yes_no"), "Yes or no, hard to say."),
    (q("B", "choice"), "A or B"),
    (gq("grass", "string"), "grass, tree, sand"),
    (gq("kitchen", "string", env="text"), "kitchen or hallway"),
    (gq("12", "integer"), "Maybe 11, 12, 13 or 14."),
    (gq("MOVE_LEFT", "action"), "move left, move right or noop"),
    (gq("left", "direction"), "left or right"),
    (gq("north", "direction", env="text"), "north or south"),
    (gq("wood, stone", "list"), "wood, stone or stone, wood"),
    (gq("2 left", "path"), "2 left or 3 up"),
    (gq("wood: 1", "set"), "wood: 1 or sapling: 1"),
]


@pytest.mark.parametrize(("question", "reply"), HEDGES,
                         ids=[f"{h[0].answer_type.value}:{h[1]}" for h in HEDGES])
def test_a_hedge_scores_zero_and_is_labelled(question: Question, reply: str) -> None:
    assert scored(question, reply) == (0.0, "hedged")


# The same candidates, one stated as the answer: scored as before.
STATED = [
    (q("7", "integer"), "I counted 3 on Monday and 4 on Tuesday, so 7.", 1.0),
    (q("7", "integer"), "Mondays had 3, Tuesdays 4.\nAnswer: 7", 1.0),
    (q("7", "integer"), "3 + 4\n7", 1.0),
    (q("3", "integer"), "First I thought 2, but it is 3.", 1.0),
    (q("3", "integer", text="How many cats did I have on the 2nd visit?"),
     "On the 2nd visit you had 3 cats.", 1.0),
    (q("2024-03-05", "date"), "Not 2024-03-01; the answer is 2024-03-05.", 1.0),
    (gq("grass", "string", text="What terrain was under you when you placed the table?"),
     "When I placed the table I stood on grass.", 1.0),
    (gq("grass", "string"), "I saw grass and a tree.\nThe answer is grass.", 1.0),
    (gq("MOVE_LEFT", "action"), "Not move right: the answer is move left.", 1.0),
    (gq("12", "integer", text="How much wood did you have at step 40?"),
     "At step 40 I had 12 wood.", 1.0),
]


@pytest.mark.parametrize(("question", "reply", "expected"), STATED,
                         ids=[s[1] for s in STATED])
def test_one_stated_answer_is_scored_as_before(question: Question, reply: str,
                                               expected: float) -> None:
    value, label = scored(question, reply)
    assert (value, label) == (expected, None)


def test_a_dump_of_the_history_earns_nothing() -> None:
    dump = "\n".join(
        f"User: on day {d} I bought {d * 3 % 17} apples and paid ${d}.50 for {d % 5} pears."
        for d in range(1, 60))
    assert scored(q("7", "integer"), dump) == (0.0, "hedged")  # 1, 3, 1.50 in its first line
    for question in (q("$12.50", "currency"), q("4", "number")):
        assert scored(question, dump)[0] == 0.0
    assert scored(q("pears", "free_text"), dump)[0] == 0.0
    assert RULE.score(q("pears", "free_text"), dump).details["too_long"] is True


def test_a_long_reply_answers_in_its_first_sentence_or_stated_part() -> None:
    """A dump of a session that holds one "yes" somewhere is no "yes" (design 0038)."""
    chat = " ".join(f"User: what about day {d}? Assistant: it rained, take a coat."
                    for d in range(8))
    dump = chat + " User: is that normal? Assistant: Most people do that, yes. " + chat
    yes = q("Yes", "yes_no")
    assert scored(yes, dump) == (0.0, None)
    assert RULE.score(yes, dump).details["too_long"] is True
    assert scored(yes, "Yes. " + chat)[0] == 1.0  # a long reply that answers first
    assert scored(yes, chat + "\nAnswer: yes")[0] == 1.0  # or states its answer


def test_free_text_containment_only_in_a_short_reply() -> None:
    gold = q("the blue umbrella", "free_text")
    assert scored(gold, "It was the blue umbrella.")[0] == 1.0
    long_reply = ("I remember many things from our chats: the red scarf, the green hat, the "
                  "blue umbrella, the yellow boots, the brown bag, and the white gloves.")
    assert scored(gold, long_reply)[0] == 0.0
    # a long explanation that states its answer is read by that answer
    stated = long_reply + "\nAnswer: the blue umbrella"
    assert scored(gold, stated)[0] == 1.0


def test_a_dump_quoting_a_refusal_is_not_a_refusal() -> None:
    turns = " ".join(f"User: day {d} went fine, we walked the dog again." for d in range(20))
    dump = turns + " Assistant: I don't remember the name of that cafe. " + turns
    assert not reads_as_refusal(dump)
    assert scored(q("not answerable", "refusal"), dump)[0] == 0.0
    # a real refusal, long or short, still counts
    assert scored(q("not answerable", "refusal"), "I don't know.")[0] == 1.0
    long_refusal = ("The conversation does not mention the cafe's name. " + turns)
    assert reads_as_refusal(long_refusal)


@pytest.mark.parametrize(("reply", "stated"), [
    ("The answer is 5.", "5."),
    ("Reasoning here.\nFinal answer: blue", "blue"),
    ("We had 3 and 4, so 7.", "7."),
    ("A long line of reasoning with many words in it that goes on and on.\n7", "7"),
    ("Just a sentence with 3 and 4 in it.", None),
])
def test_stated_answer(reply: str, stated: str | None) -> None:
    assert stated_answer(reply) == stated
