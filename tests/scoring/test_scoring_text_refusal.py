"""Refusal detection, normalization, SubEM and token F1."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgauge.scoring import REFUSAL_PATTERNS, is_refusal, normalize_text, subem, token_f1

REFUSALS = [
    "Insufficient information",
    "insufficient information.",
    "There is not enough information to answer",
    "I don't know",
    "I don’t know",
    "I do not know.",
    "I cannot determine that from the conversation",
    "The conversation does not mention what colour it was.",
    "The conversation doesn’t mention it",
    "It cannot be determined",
    "cannot be determined",
    "unanswerable",
    "This question is unanswerable from the history.",
    "No information available",
    "not mentioned",
    "The price isn't mentioned.",
    "N/A",
    "n/a.",
    "unknown",
    "Unknown.",
    "**Insufficient information**",
    "I don't have any information about her sister.",
    "Unable to determine from the chat.",
]

ANSWERS = [
    "None of them were red",
    "none",
    "None.",
    "No",
    "No, it was not the same mug",
    "I have sufficient information: it is 5",
    "There were no cats",
    "Unknown Pleasures by Joy Division",
    "The band is unknown to most people, but it is Joy Division",
    "5",
    "Yes, she knows.",
    "Paris",
    "It was unknowingly left behind",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_refusals_are_flagged(text: str) -> None:
    assert is_refusal(text) is True


@pytest.mark.parametrize("text", ANSWERS)
def test_real_answers_are_not_refusals(text: str) -> None:
    assert is_refusal(text) is False


@pytest.mark.parametrize("text", [None, "", "   ", "\n"])
def test_no_answer_is_not_a_refusal(text: str | None) -> None:
    assert is_refusal(text) is False


def test_refusal_patterns_are_compiled_regexes() -> None:
    assert REFUSAL_PATTERNS
    assert all(hasattr(p, "search") for p in REFUSAL_PATTERNS)


@given(st.integers())
@settings(max_examples=100, deadline=None)
def test_numbers_are_never_refusals(n: int) -> None:
    assert not is_refusal(str(n))
    assert not is_refusal(f"The answer is {n:,}.")


# ------------------------------------------------------------------ normalize_text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Cat!", "cat"),
        ("  a   dog,  an owl  ", "dog owl"),
        ("It costs 3.5 dollars.", "it costs 3.5 dollars"),
        ("1,200 people", "1200 people"),
        ("3/4 cup", "3/4 cup"),
        ("2024/03/05", "2024/03/05"),
        ("and/or", "and or"),
        ("end.", "end"),
        ("Don’t stop", "dont stop"),
        ("A", "a"),  # nothing but an article: kept, so a choice letter survives
        ("the", "the"),
        ("", ""),
    ],
)
def test_normalize_text_examples(raw: str, expected: str) -> None:
    assert normalize_text(raw) == expected


@given(st.text())
@settings(max_examples=100, deadline=None)
def test_normalize_text_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


# ------------------------------------------------------------------ subem


def test_subem_matches_on_token_boundaries_only() -> None:
    # The reference bug: gold "A" matched "Insufficient information" as a character substring.
    assert subem("A", "Insufficient information") is False
    assert subem("A", "A") is True
    assert subem("cat", "concatenate") is False
    assert subem("New York", "She moved to New York in 2020.") is True
    assert subem("York New", "She moved to New York") is False
    assert subem("Paris", "paris.") is True
    assert subem("$1,200", "It cost 1200 dollars") is True


def test_subem_empty_sides_are_false() -> None:
    assert subem("", "anything") is False
    assert subem("anything", "") is False
    assert subem("!!!", "!!!") is False


@given(st.text())
@settings(max_examples=100, deadline=None)
def test_subem_of_itself(text: str) -> None:
    assert subem(text, text) is bool(normalize_text(text))


_WORDS = st.lists(st.sampled_from(["red", "blue", "mug", "paris", "42", "3.5", "cat"]), min_size=1,
                  max_size=5).map(" ".join)


@given(_WORDS, _WORDS, _WORDS)
@settings(max_examples=100, deadline=None)
def test_subem_finds_gold_inside_longer_text(gold: str, before: str, after: str) -> None:
    assert subem(gold, f"{before}, {gold}; {after}.")


# ------------------------------------------------------------------ token_f1


def test_token_f1_examples() -> None:
    assert token_f1("the red mug", "red mug") == 1.0
    assert token_f1("red mug", "blue cup") == 0.0
    assert token_f1("red mug", "a red cup") == pytest.approx(0.5)
    assert token_f1("", "x") == 0.0
    assert token_f1("x", "") == 0.0


@given(st.text(), st.text())
@settings(max_examples=100, deadline=None)
def test_token_f1_symmetric_and_bounded(a: str, b: str) -> None:
    f = token_f1(a, b)
    assert 0.0 <= f <= 1.0
    assert f == token_f1(b, a)


@given(_WORDS)
@settings(max_examples=100, deadline=None)
def test_token_f1_of_itself_is_one(text: str) -> None:
    assert token_f1(text, text) == 1.0
