"""The rule scorers: TypedRuleScorer, SubEMScorer, TokenF1Scorer and their registration."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgauge import scoring
from memgauge.registry import lookup
from memgauge.schema import Ability, AnswerType, Question, Score
from memgauge.scoring import (
    Scorer,
    SubEMScorer,
    TokenF1Scorer,
    TypedRuleScorer,
    default_scorers,
)

RULE = TypedRuleScorer()

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def words(n: int) -> str:
    """English words for 0 <= n < 10**9, American style: "one hundred five"."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")
    for scale, name in ((10**6, "million"), (10**3, "thousand"), (100, "hundred")):
        if n >= scale:
            rest = n % scale
            return f"{words(n // scale)} {name}" + (f" {words(rest)}" if rest else "")
    raise AssertionError(n)


def q(answer: str | list[str], kind: str, **kw: object) -> Question:
    return Question(question_id="q1", text="?", answer=answer, answer_type=AnswerType(kind),
                    ability=Ability.INFORMATION_EXTRACTION, **kw)


def value(question: Question, prediction: str) -> float:
    s = RULE.score(question, prediction)
    assert s is not None
    return s.value


# ------------------------------------------------------------------ API and registration


def test_public_api() -> None:
    for name in ("Scorer", "is_refusal", "REFUSAL_PATTERNS", "normalize_text", "subem",
                 "token_f1", "parse_integers", "parse_numbers", "parse_amounts", "parse_dates",
                 "parse_choice", "parse_yes_no", "parse_order", "TypedRuleScorer",
                 "SubEMScorer", "TokenF1Scorer", "default_scorers"):
        assert name in scoring.__all__
        assert hasattr(scoring, name)


def test_scorers_are_registered_and_follow_the_protocol() -> None:
    for name, cls in (("rule", TypedRuleScorer), ("subem", SubEMScorer), ("f1", TokenF1Scorer)):
        made = lookup("scorer", name)()
        assert isinstance(made, cls)
        assert isinstance(made, Scorer)
        assert made.name == name and made.version == ("4" if name == "rule" else "2")
    assert [s.name for s in default_scorers()] == ["rule", "subem", "f1"]


@pytest.mark.parametrize("scorer", default_scorers(), ids=lambda s: s.name)
def test_missing_prediction_is_not_scored(scorer: Scorer) -> None:
    assert scorer.score(q("3", "integer"), None) is None


def test_score_shape() -> None:
    s = RULE.score(q("$260.00", "currency"), "The total came to $260.")
    assert isinstance(s, Score)
    assert (s.value, s.scorer, s.version, s.method) == (1.0, "rule", "4", "rule")
    assert s.details["candidates"] == ["260 $"]
    assert s.details["parsed"] == "260 $"


# ------------------------------------------------------------------ refusals


def test_refusal_questions() -> None:
    question = q("Insufficient information", "refusal")
    assert value(question, "I don’t know") == 1.0
    assert value(question, "The conversation does not mention it.") == 1.0
    assert value(question, "It was red.") == 0.0
    assert value(question, "") == 0.0  # no answer is not a refusal


def test_refusing_an_answerable_question_scores_zero() -> None:
    s = RULE.score(q("3", "integer"), "Insufficient information")
    assert s is not None and s.value == 0.0 and s.details == {"refused": True}
    # the reference bug: gold "A" matched "Insufficient information" as a character substring
    for kind in ("free_text", "choice"):
        s = RULE.score(q("A", kind), "Insufficient information")
        assert s is not None and s.value == 0.0 and s.details["refused"] is True
    assert SubEMScorer().score(q("A", "free_text"), "Insufficient information").value == 0.0


def test_unparseable_prediction() -> None:
    s = RULE.score(q("3", "integer"), "many of them")
    assert s is not None and s.value == 0.0
    assert s.details["parsed"] is None and s.details["candidates"] == []


# ------------------------------------------------------------------ typed rules


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("3", "3", 1.0),
        ("3", "three", 1.0),
        ("3", "She has 3 cats.", 1.0),
        ("3", "3.0", 1.0),
        ("3", "3.5", 0.0),
        ("3", "I bought 3 apples on 2024-03-05.", 1.0),  # date parts are set aside
        ("3", "First I thought 2, but it is 3.", 1.0),  # the last candidate commits
        ("3", "It is 3, no wait, 4.", 0.0),
        ("1200", "1,200 people", 1.0),
        ("21", "twenty-one", 1.0),
        (["3", "three"], "3", 1.0),
    ],
)
def test_integer(gold: str, prediction: str, expected: float) -> None:
    assert value(q(gold, "integer"), prediction) == expected


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("2.5", "2.50 hours", 1.0),
        ("2.5", "2.5000000000001", 1.0),  # within a relative 1e-9
        ("2.5", "2.51", 0.0),
        ("10%", "ten percent", 1.0),
        ("1234.5", "1,234.50", 1.0),
        ("-4", "It was -4 degrees", 1.0),
    ],
)
def test_number(gold: str, prediction: str, expected: float) -> None:
    assert value(q(gold, "number"), prediction) == expected


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("$260.00", "$260", 1.0),
        ("$260.00", "260 dollars", 1.0),
        ("$260.00", "USD 260", 1.0),
        ("$260.00", "The total came to $260.00.", 1.0),
        ("$260.00", "It was 260.", 1.0),  # no currency on one side: amount decides
        ("$260.00", "260 EUR", 0.0),  # both carry a currency and they differ
        ("$260.00", "$261", 0.0),
        ("185 DKK", "185 kr", 1.0),
        ("185 DKK", "DKK 185.00", 1.0),
        ("185 DKK", "185 SEK", 0.0),
        ("€15", "15 euros", 1.0),
        ("€15", "I paid 15€ on 2024-03-05 for 2 tickets", 1.0),  # tagged amounts first
    ],
)
def test_currency(gold: str, prediction: str, expected: float) -> None:
    assert value(q(gold, "currency"), prediction) == expected


_CENTS = st.integers(min_value=0, max_value=10**10)


@given(_CENTS)
@settings(max_examples=100, deadline=None)
def test_currency_renderings_score_equal(cents: int) -> None:
    x = Decimal(cents) / 100
    question = q(f"${x:,.2f}", "currency")
    renderings = [f"${x}", f"${x:.2f}", f"${x:,.2f}", f"{x} USD", f"USD {x:,.2f}",
                  f"{x:,.2f} dollars", f"The total came to ${x:,.2f}."]
    if x == x.to_integral_value():
        renderings.append(f"${int(x)}")
    for r in renderings:
        assert value(question, r) == 1.0, r
    assert value(question, f"{x + 1} USD") == 0.0
    assert value(question, f"{x} EUR") == 0.0


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("2024-03-05", "March 5th, 2024", 1.0),
        ("2024-03-05", "It was on 5 March 2024.", 1.0),
        ("March 5, 2024", "2024/03/05", 1.0),
        ("2024-03-05", "2024-03-06", 0.0),
        ("March 5", "It was March 5th.", 1.0),  # yearless gold: month and day
        ("March 5", "It was March 6th.", 0.0),
    ],
)
def test_date(gold: str, prediction: str, expected: float) -> None:
    assert value(q(gold, "date"), prediction) == expected


@given(st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 12, 31)))
@settings(max_examples=100, deadline=None)
def test_date_renderings_score_equal(d: dt.date) -> None:
    question = q(d.isoformat(), "date")
    month = d.strftime("%m")
    names = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
             "October", "November", "December"]
    for r in (f"{names[d.month - 1]} {d.day}, {d.year}", f"{d.year}/{month}/{d.day:02d}",
              f"{d.day} {names[d.month - 1]} {d.year}"):
        assert value(question, r) == 1.0, r


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("A", "A", 1.0),
        ("A", "a", 1.0),
        ("B", "(B)", 1.0),
        ("B", "Option B", 1.0),
        ("A", "The answer is A: duration 1 is longer", 1.0),
        ("A", "a longer trip", 0.0),
        ("B", "A", 0.0),
        ("(A)", "I'd say A.", 1.0),
    ],
)
def test_choice(gold: str, prediction: str, expected: float) -> None:
    assert value(q(gold, "choice"), prediction) == expected


def test_mcq_letters_and_option_texts() -> None:
    opts = ["(A) red", "(B) dark blue", "(C) blue", "(D) green"]
    assert value(q("B", "mcq", options=opts), "(B)") == 1.0
    assert value(q("B", "mcq", options=opts), "D is wrong, so B.") == 1.0
    assert value(q("D", "mcq", options=opts), "D") == 1.0
    assert value(q("B", "mcq", options=opts), "It was dark blue.") == 1.0  # option text
    assert value(q("C", "mcq", options=opts), "It was dark blue.") == 0.0
    assert value(q("dark blue", "mcq", options=["red", "dark blue", "blue"]), "(B)") == 1.0
    s = RULE.score(q("B", "mcq", options=opts[:2]), "(C)")  # C is not an option here
    assert s is not None and s.value == 0.0 and s.details["parsed"] is None


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("Yes", "Yes", 1.0),
        ("Yes", "yes, it is the same", 1.0),
        ("No", "No, they differ", 1.0),
        ("No", "No, it was not the same mug", 1.0),
        ("Yes", "No.", 0.0),
        ("yes", "That's correct.", 1.0),
    ],
)
def test_yes_no(gold: str, prediction: str, expected: float) -> None:
    assert value(q(gold, "yes_no"), prediction) == expected


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("(5)(8)(1)", 1.0),
        ("(5) (8) (1)", 1.0),
        ("The order is (5)->(8)->(1).", 1.0),
        ("5, 8, 1", 1.0),
        ("(8)(5)(1)", 0.0),
        ("(5)(8)", 0.0),
    ],
)
def test_order(prediction: str, expected: float) -> None:
    assert value(q("(5)(8)(1)", "order"), prediction) == expected


def test_free_text() -> None:
    s = RULE.score(q("Paris", "free_text"), "She moved to Paris in 2020.")
    assert s is not None and s.value == 1.0 and 0 < s.details["f1"] < 1
    assert value(q("the Louvre", "free_text"), "louvre") == 1.0
    assert value(q(["NYC", "New York"], "free_text"), "new york city") == 1.0
    assert value(q("Paris", "free_text"), "Lyon") == 0.0


def test_unparseable_gold_falls_back_to_free_text() -> None:
    s = RULE.score(q("a few", "integer"), "a few of them")
    assert s is not None and s.value == 1.0 and s.details["fallback"] == "free_text"


@given(st.integers(min_value=0, max_value=10**6))
@settings(max_examples=100, deadline=None)
def test_integer_words_score_equal(n: int) -> None:
    question = q(str(n), "integer")
    assert value(question, f"The answer is {words(n)}.") == 1.0
    assert value(question, f"{n:,}") == 1.0
    assert value(question, str(n + 1)) == 0.0


# ------------------------------------------------------------------ SubEM and F1


def test_subem_scorer() -> None:
    s = SubEMScorer().score(q(["NYC", "New York"], "free_text"), "She lives in New York.")
    assert s is not None and s.value == 1.0 and s.details["matched"] == "New York"
    assert SubEMScorer().score(q("Paris", "free_text"), "Lyon").value == 0.0
    # refusal questions: the gold wording is a stand-in, the refusal itself counts
    refusal_q = q("Insufficient information", "refusal")
    assert SubEMScorer().score(refusal_q, "I don't know").value == 1.0
    assert SubEMScorer().score(refusal_q, "Paris").value == 0.0


def test_subem_and_f1_leave_lettered_multiple_choice_unscored() -> None:
    """A reply listing every option contains the gold letter: SubEM would score it 1 (a
    MemEye run with SmolLM2 echoed the options on half its rotations)."""
    mcq = q("B", "mcq", options=["Blue", "Green", "Black", "Red"])
    echo = "A. Blue\nB. Green\nC. Black\nD. Red"
    assert SubEMScorer().score(mcq, echo) is None
    assert TokenF1Scorer().score(mcq, echo) is None
    assert RULE.score(mcq, echo).details["label"] == "unparseable"
    # without options (a letter-only choice) and free text, they still score
    assert SubEMScorer().score(q("B", "mcq"), "B").value == 1.0
    assert TokenF1Scorer().score(q("B", "mcq"), "B").value == 1.0


def test_f1_scorer() -> None:
    s = TokenF1Scorer().score(q(["blue cup", "red mug"], "free_text"), "a red mug")
    assert s is not None and s.value == 1.0
    assert TokenF1Scorer().score(q("red mug", "free_text"), "red cup").value == pytest.approx(0.5)
    assert TokenF1Scorer().score(q("Insufficient information", "refusal"), "unknown").value == 1.0
