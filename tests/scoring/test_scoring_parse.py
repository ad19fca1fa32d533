"""The candidate parsers: examples and round-trip properties."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgauge.scoring import (
    parse_amounts,
    parse_choice,
    parse_dates,
    parse_integers,
    parse_numbers,
    parse_order,
    parse_yes_no,
)

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (10**3, "thousand"))


def words(n: int) -> str:
    """English words for n (|n| < 10**15), British style: "one hundred and five"."""
    if n < 0:
        return "minus " + words(-n)
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")
    if n < 1000:
        return f"{_ONES[n // 100]} hundred" + (f" and {words(n % 100)}" if n % 100 else "")
    for scale, name in _SCALES:
        if n >= scale:
            rest = n % scale
            return f"{words(n // scale)} {name}" + (f" {words(rest)}" if rest else "")
    raise AssertionError(n)


def test_words_helper() -> None:
    assert words(105) == "one hundred and five"
    assert words(21) == "twenty-one"
    assert words(-1_000_005) == "minus one million five"


# ------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", [3]),
        ("1,200", [1200]),
        ("3.0", [3]),
        ("3.5", []),
        ("three", [3]),
        ("twenty-one", [21]),
        ("twenty one", [21]),
        ("one hundred and five", [105]),
        ("a dozen eggs", [12]),
        ("two dozen", [24]),
        ("a thousand", [1000]),
        ("one two three", [1, 2, 3]),
        ("She has 3 cats and two dogs.", [3, 2]),
        ("-4 degrees", [-4]),
        ("no one came; the one I liked left", []),  # "one" as a pronoun is not 1
        ("Only one of them", [1]),
        ("I met 5th-grade kids", [5]),
    ],
)
def test_parse_integers(text: str, expected: list[int]) -> None:
    assert parse_integers(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,234.50", ["1234.50"]),
        ("-3.25", ["-3.25"]),
        ("10%", ["10"]),
        ("10 %", ["10"]),
        ("a 3.5% rise", ["3.5"]),
        ("1.5 million", ["1500000"]),
        ("1.234,50 €", ["1234.50"]),
        ("1,2 and 3", ["1", "2", "3"]),  # not a thousands group: separate numbers
        ("2024-03-05", ["2024", "3", "5"]),  # dashes inside a date are not minus signs
        ("version v2 and COVID-19", ["19"]),
        ("The total came to $260.00.", ["260.00"]),
        ("nothing here", []),
    ],
)
def test_parse_numbers(text: str, expected: list[str]) -> None:
    assert parse_numbers(text) == [Decimal(e) for e in expected]


_INTS = st.integers(min_value=-(10**15) + 1, max_value=10**15 - 1)


@given(_INTS)
@settings(max_examples=100, deadline=None)
def test_integers_round_trip(n: int) -> None:
    for rendering in (str(n), f"{n:,}", words(n)):
        assert parse_integers(rendering) == [n], rendering
        assert parse_numbers(f"The answer is {rendering}.")[-1] == n, rendering


@given(st.decimals(min_value=-(10**9), max_value=10**9, places=3, allow_nan=False,
                   allow_infinity=False))
@settings(max_examples=100, deadline=None)
def test_decimals_round_trip(d: Decimal) -> None:
    assert parse_numbers(f"{d:f}") == [d]
    assert parse_numbers(f"It is {d:,f} in total") == [d]


# ------------------------------------------------------------------ amounts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$260", [("260", "$")]),
        ("$260.00", [("260.00", "$")]),
        ("The total came to $260.00.", [("260.00", "$")]),
        ("US$ 260", [("260", "USD")]),
        ("USD 260", [("260", "USD")]),
        ("260 USD", [("260", "USD")]),
        ("260usd", [("260", "USD")]),
        ("185 DKK", [("185", "DKK")]),
        ("DKK 185", [("185", "DKK")]),
        ("185 kr.", [("185", "kr")]),
        ("€15", [("15", "EUR")]),
        ("15 €", [("15", "EUR")]),
        ("£7.50", [("7.50", "GBP")]),
        ("¥3000", [("3000", "¥")]),
        ("₹500", [("500", "INR")]),
        ("₩10,000", [("10000", "KRW")]),
        ("CHF 20", [("20", "CHF")]),
        ("260 dollars", [("260", "$")]),
        ("260 US dollars", [("260", "USD")]),
        ("20 euros", [("20", "EUR")]),
        ("5 pounds", [("5", "GBP")]),
        ("500 yen", [("500", "JPY")]),
        ("100 Danish kroner", [("100", "DKK")]),
        ("5000 won", [("5000", "KRW")]),
        ("1.234,50 €", [("1234.50", "EUR")]),
        ("two hundred dollars", [("200", "$")]),
        ("$1.2 million", [("1200000", "$")]),
        ("I bought 3 for $12", [("3", None), ("12", "$")]),
        ("try 50 more", [("50", None)]),  # "try" is not the lira code in lower case
        ("a 10% tip", [("10", None)]),
    ],
)
def test_parse_amounts(text: str, expected: list[tuple[str, str | None]]) -> None:
    assert parse_amounts(text) == [(Decimal(v), c) for v, c in expected]


# ------------------------------------------------------------------ dates

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]


@pytest.mark.parametrize(
    "text",
    [
        "2024/03/05", "2024-03-05", "2024.03.05", "2024-3-5", "March 5, 2024", "Mar 5 2024",
        "Mar. 5, 2024", "5 March 2024", "5th of March, 2024", "the 5th of March 2024",
        "March 5th, 2024", "Tuesday, March 5, 2024", "2024年3月5日", "03/05/2024",
        "05.03.2024", "It happened on 2024/03/05 (Tue) 10:00.",
    ],
)
def test_parse_dates_formats(text: str) -> None:
    assert parse_dates(text) == [dt.date(2024, 3, 5)]


def test_parse_dates_ambiguity_and_validity() -> None:
    assert parse_dates("13/05/2024") == [dt.date(2024, 5, 13)]  # first > 12: day first
    assert parse_dates("05/13/2024") == [dt.date(2024, 5, 13)]
    assert parse_dates("13.05.2024") == [dt.date(2024, 5, 13)]  # dotted: day first
    assert parse_dates("February 30, 2024") == []
    assert parse_dates("March 5") == []  # no year, no date
    assert parse_dates("From 2024-03-05 to March 7, 2024") == [
        dt.date(2024, 3, 5), dt.date(2024, 3, 7)]


@given(st.dates(min_value=dt.date(1000, 1, 1), max_value=dt.date(9999, 12, 31)))
@settings(max_examples=100, deadline=None)
def test_dates_round_trip(d: dt.date) -> None:
    month = _MONTHS[d.month - 1]
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(d.day % 10 if d.day not in (11, 12, 13) else 0, "th")
    renderings = [
        d.isoformat(),
        f"{d.year}/{d.month:02d}/{d.day:02d}",
        f"{d.year}.{d.month}.{d.day}",
        f"{month} {d.day}, {d.year}",
        f"{month[:3]} {d.day} {d.year}",
        f"{d.day} {month} {d.year}",
        f"{d.day}{suffix} of {month}, {d.year}",
        f"{month} {d.day}{suffix}, {d.year}",
        f"{d.month:02d}/{d.day:02d}/{d.year}",
        f"{d.day:02d}.{d.month:02d}.{d.year}",
        f"{d.year}年{d.month}月{d.day}日",
    ]
    if d.day > 12:
        renderings.append(f"{d.day}/{d.month}/{d.year}")
    for r in renderings:
        assert parse_dates(f"It was on {r}.") == [d], r


# ------------------------------------------------------------------ choices


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A", ["A"]),
        ("a", ["A"]),
        ("b.", ["B"]),
        ("(B)", ["B"]),
        ("(b)", ["B"]),
        ("Option B", ["B"]),
        ("option b is right", ["B"]),
        ("B.", ["B"]),
        ("The answer is A: duration 1 is longer", ["A"]),
        ("I'd pick B", ["B"]),
        ("A is longer than B.", ["A", "B"]),
        ("a longer trip", []),
        ("A longer trip", []),
        ("The answer is a longer trip", []),
        ("It took a while, so (A)", ["A"]),
        ("Answer: b.", ["B"]),
    ],
)
def test_parse_choice(text: str, expected: list[str]) -> None:
    assert parse_choice(text) == expected


def test_parse_choice_respects_letters() -> None:
    assert parse_choice("(C)") == []
    assert parse_choice("(C)", letters="ABCD") == ["C"]
    assert parse_choice("Option D.", letters="abcd") == ["D"]


@given(st.sampled_from("ABCD"), st.sampled_from(["{L}", "({L})", "Option {L}", "The answer is {L}.",
                                                   "I choose {L}", "{L}: because", "[{L}]"]))
@settings(max_examples=100, deadline=None)
def test_choice_round_trip(letter: str, template: str) -> None:
    assert parse_choice(template.format(L=letter), letters="ABCD") == [letter]


# ------------------------------------------------------------------ yes / no


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes", ["yes"]),
        ("Yes.", ["yes"]),
        ("yes, it is the same", ["yes"]),
        ("No", ["no"]),
        ("No, they differ", ["no"]),
        ("That's correct", ["yes"]),
        ("That is incorrect.", ["no"]),
        ("That’s not correct", ["no"]),
        ("There were no cats", []),
        ("The correct answer is no.", ["yes", "no"]),
        ("True", ["yes"]),
        ("false.", ["no"]),
        ("It is true that she left", []),
        ("Nope", ["no"]),
        ("It is the same mug", []),
    ],
)
def test_parse_yes_no(text: str, expected: list[str]) -> None:
    assert parse_yes_no(text) == expected


# ------------------------------------------------------------------ orders


@pytest.mark.parametrize(
    "text",
    ["(5)(8)(1)", "(5) (8) (1)", "(5)->(8)->(1)", "(5) → (8) → (1)", "[5][8][1]", "5, 8, 1",
     "5 -> 8 -> 1", "5, 8 and 1", "(5), (8), and (1)", "The order is (5)(8)(1).", "5, 8, 1."],
)
def test_parse_order_formats(text: str) -> None:
    assert parse_order(text) == [(5, 8, 1)]


def test_parse_order_needs_a_run() -> None:
    assert parse_order("(5)") == []
    assert parse_order("5") == []
    assert parse_order("first (2)(1), finally (1)(2)") == [(2, 1), (1, 2)]


@given(st.permutations(list(range(1, 13))), st.integers(min_value=2, max_value=12))
@settings(max_examples=100, deadline=None)
def test_order_round_trip(items: list[int], k: int) -> None:
    perm = tuple(items[:k])
    renderings = [
        "".join(f"({i})" for i in perm),
        " ".join(f"({i})" for i in perm),
        "->".join(f"({i})" for i in perm),
        "".join(f"[{i}]" for i in perm),
        ", ".join(str(i) for i in perm),
    ]
    for r in renderings:
        assert parse_order(f"Order: {r}") == [perm], r
