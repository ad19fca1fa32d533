"""Rule scorers: a typed scorer that parses the answer by its type, and two lexical ones.

Decision rules of :class:`TypedRuleScorer` (version "4" made hedges and dumps earn nothing,
design 0038):

* A missing prediction (``None``) is not scored: ``score`` returns ``None``.
* Refusal questions score 1 iff :func:`reads_as_refusal` flags the prediction (a long reply
  refuses only in its first sentence or stated answer). On any other question a refusal
  scores 0 with ``details["refused"] = True``, even when it also hedges a guess: the model
  declined to commit.
* The prediction is parsed for candidates of the question's type; values the question itself
  states (numbers, amounts, dates) are set aside when others remain. One distinct candidate
  is the answer. Several: the one the reply states as its answer ("the answer is 5", "...,
  so 5", a short final line; :mod:`._hedge`), else the reply is **hedged**: 0 with
  ``details["label"] = "hedged"``, counted apart in reports. All candidates are recorded, as
  strings, in ``details["candidates"]``; the committed one in ``details["parsed"]``.
  Nothing parseable scores 0 with ``details["parsed"] = None``.
* Each gold answer is parsed the same way and its FIRST candidate is the gold value (authors
  put the answer first: "3 (three)"). Several gold answers (``question.answers``) are
  alternatives: matching any one is correct. A gold answer that does not parse as its type
  (bad data, or a date without a year) falls back to the free-text rule, recorded as
  ``details["fallback"] = "free_text"``.
* integer / number: numeric equality, exact after decimal normalization or within a relative
  1e-9 (so "3", "3.0", "three" and "3 items" all match gold "3"). Numbers that are part of a
  date ("on 2024-03-05 I bought 3") are set aside when any other number is present.
* currency: the amounts are equal as numbers and the currencies are compatible: a side that
  names no currency matches any; "$" matches any dollar; otherwise codes must be equal. When
  some amounts in the prediction carry a currency, only those are candidates.
* date: the same calendar date, in any format :func:`parse_dates` reads. A gold date with
  no year ("March 5") is compared on month and day only.
* mcq with options (version "3"): the reply must name exactly one letter (or quote one
  option's text); naming several, unless it states one as its answer ("the answer is B",
  "..., so B"), or none, scores 0 with ``details["label"] = "unparseable"``, counted apart.
* choice / mcq: the same letter; letters span ``len(question.options)`` (or A/B, widened to
  include the gold letter, when there are no options). Gold may be the letter or an option's
  text. With no letter in the prediction, option texts quoted in it are the candidates.
* yes_no: the same verdict. order: the same sequence, exactly.
* free_text: 1 iff the normalized texts are equal or the gold occurs on token boundaries
  (:func:`subem`) in a reply, or its stated answer, at most 3x the gold's tokens plus 8
  (``details["too_long"]`` otherwise: a long reply is left to F1 and the judge);
  ``details["f1"]`` records the best token F1.
* string / action / direction / list / set / path, and integer / number questions of a game
  (``meta["game"]``): :mod:`memgauge.scoring._game_rules` (version "2" added these).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from ..registry import scorer
from ..schema import AnswerType, Question, Score
from ._base import Scorer
from ._game_rules import score_game
from ._hedge import commit, containment_allowed, stated_answer
from ._parse import (
    Hit,
    currencies_compatible,
    find_amounts,
    find_choices,
    find_dates,
    find_month_days,
    find_numbers,
    find_stated_choices,
    parse_order,
    parse_yes_no,
)
from ._refusal import is_refusal, reads_as_refusal
from ._text import normalize_text, subem, token_f1

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
UNPARSEABLE = "unparseable"  # an MCQ reply naming no letter, or several (details["label"])
_REL_TOL = Decimal("1e-9")
# Types whose values the question may state ("after March 3", "on the 2nd visit"): a reply
# repeating them is not hedging between them and its answer.
_SET_ASIDE = frozenset({AnswerType.INTEGER, AnswerType.NUMBER, AnswerType.CURRENCY,
                        AnswerType.DATE})


def _num_eq(a: Decimal, b: Decimal) -> bool:
    if a == b:
        return True
    return abs(a - b) <= _REL_TOL * max(abs(a), abs(b))


def _outside_dates(text: str, hits: list[Hit]) -> list[Hit]:
    """Hits not inside a date span; all hits when every one is inside a date."""
    dates = find_dates(text)
    kept = [h for h in hits if not any(d.start <= h.start and h.end <= d.end for d in dates)]
    return kept or hits


def _fmt_amount(v: tuple[Decimal, str | None]) -> str:
    return f"{v[0]} {v[1]}" if v[1] else str(v[0])


class _Typed:
    """What one answer type needs: a candidate finder, an equality and a printer."""

    def __init__(
        self,
        find: Callable[[str], list[Any]],
        equal: Callable[[Any, Any], bool],
        fmt: Callable[[Any], str] = str,
    ) -> None:
        self.find, self.equal, self.fmt = find, equal, fmt


def _numbers(text: str) -> list[Decimal]:
    return [h.value for h in _outside_dates(text, find_numbers(text))]


def _amounts(text: str) -> list[tuple[Decimal, str | None]]:
    hits = _outside_dates(text, find_amounts(text))
    tagged = [h for h in hits if h.value[1] is not None]
    return [h.value for h in (tagged or hits)]


def _amount_eq(g: tuple[Decimal, str | None], p: tuple[Decimal, str | None]) -> bool:
    return _num_eq(g[0], p[0]) and currencies_compatible(g[1], p[1])


_TYPED: dict[AnswerType, _Typed] = {
    AnswerType.INTEGER: _Typed(_numbers, lambda g, p: g == p),
    AnswerType.NUMBER: _Typed(_numbers, _num_eq),
    AnswerType.CURRENCY: _Typed(_amounts, _amount_eq, _fmt_amount),
    AnswerType.DATE: _Typed(lambda t: [h.value for h in find_dates(t)], lambda g, p: g == p,
                            lambda d: d.isoformat()),
    AnswerType.YES_NO: _Typed(parse_yes_no, lambda g, p: g == p),
    AnswerType.ORDER: _Typed(parse_order, lambda g, p: g == p,
                             lambda t: "".join(f"({i})" for i in t)),
}

# A gold date without a year ("March 5") can only be compared on month and day.
_MONTH_DAY = _Typed(lambda t: [h.value for h in find_month_days(t)], lambda g, p: g == p,
                    lambda md: f"--{md[0]:02d}-{md[1]:02d}")  # ISO 8601 yearless form


def _strip_label(option: str) -> str:
    """ "(A) red" / "A. red" / "A) red" -> "red"; unlabelled options are returned as is."""
    s = option.strip()
    for i, ch in enumerate(s[:4]):
        if ch.isalpha():
            rest = s[i + 1 :]
            if rest[:1] in (")", "]", ".", ":") and rest[1:2] in (" ", ""):
                return rest[1:].strip()
            break
    return s


def _choice_letters(question: Question) -> str:
    if question.options:
        return _LETTERS[: len(question.options)]
    letters = "AB"
    for g in question.answers:  # widen to a gold letter beyond B, e.g. "C"
        hits = find_choices(g, _LETTERS)
        if hits and len(normalize_text(g).split()) <= 2:
            letters = _LETTERS[: max(len(letters), _LETTERS.index(hits[0].value) + 1)]
    return letters


def _option_mentions(text: str, question: Question, letters: str) -> list[str]:
    """Letters of options whose text is quoted in ``text``, by position; an option quoted only
    inside a longer quoted option ("red" inside "dark red") does not count."""
    p = normalize_text(text).split()
    spans = []
    for letter, opt in zip(letters, question.options, strict=False):  # letters may be fewer
        o = normalize_text(_strip_label(opt)).split()
        if not o:
            continue
        spans += [(i, i + len(o), letter)
                  for i in range(len(p) - len(o) + 1) if p[i : i + len(o)] == o]

    def inside_longer(s: tuple[int, int, str]) -> bool:
        return any(t[0] <= s[0] and s[1] <= t[1] and t[1] - t[0] > s[1] - s[0] for t in spans)

    kept = [s for s in spans if not inside_longer(s)]
    return [s[2] for s in sorted(kept)]


def _choice_typed(question: Question) -> tuple[_Typed, Callable[[str], list[Any]]]:
    letters = _choice_letters(question)

    def find_pred(text: str) -> list[str]:
        found = [h.value for h in find_choices(text, letters)]
        return found or _option_mentions(text, question, letters)

    def find_gold(text: str) -> list[str]:
        found = [h.value for h in find_choices(text, letters)]
        if found and len(normalize_text(text).split()) <= 3:  # "B", "(B)", "B) red"
            return found[:1]
        mentions = [
            letter for letter, opt in zip(letters, question.options, strict=False)
            if normalize_text(_strip_label(opt)) == normalize_text(text)
        ]
        return mentions or found

    return _Typed(find_pred, lambda g, p: g == p), find_gold


class TypedRuleScorer:
    """Scores by the question's ``answer_type``; see the module docstring for the rules."""

    name = "rule"
    version = "4"

    def _score(self, value: bool | float, details: dict[str, Any]) -> Score:
        return Score(value=float(value), scorer=self.name, version=self.version, method="rule",
                     details=details)

    def score(self, question: Question, prediction: str | None) -> Score | None:
        if prediction is None:
            return None
        kind = question.answer_type
        if kind == AnswerType.REFUSAL:
            refused = reads_as_refusal(prediction)
            return self._score(refused, {"refused": refused})
        if reads_as_refusal(prediction):
            return self._score(False, {"refused": True})
        if kind == AnswerType.FREE_TEXT:
            return self._score(*self._free_text(question.answers, prediction))
        game = score_game(question, prediction)  # game answer types (design 0032)
        if game is not None:
            return self._score(game[0], {"refused": False, **game[1]})
        if kind == AnswerType.MCQ and question.options:
            return self._mcq(question, prediction)
        if kind in (AnswerType.CHOICE, AnswerType.MCQ):
            typed, find_gold = _choice_typed(question)
        else:
            typed = _TYPED[kind]
            find_gold = typed.find
        golds = [found[0] for g in question.answers if (found := find_gold(g))]
        if not golds and kind == AnswerType.DATE:
            typed, find_gold = _MONTH_DAY, _MONTH_DAY.find
            golds = [found[0] for g in question.answers if (found := find_gold(g))]
        if not golds:
            value, details = self._free_text(question.answers, prediction)
            return self._score(value, {**details, "fallback": "free_text"})
        candidates = typed.find(prediction)
        details: dict[str, Any] = {
            "refused": False,
            "gold": [typed.fmt(g) for g in golds],
            "candidates": [typed.fmt(c) for c in candidates],
        }
        in_question = typed.find(question.text) if kind in _SET_ASIDE else []
        committed, how = commit(prediction, typed.find, typed.equal, in_question)
        details.update(how)
        if committed is None:
            return self._score(False, {**details, "parsed": None})
        details["parsed"] = typed.fmt(committed)
        return self._score(any(typed.equal(g, committed) for g in golds), details)

    def _mcq(self, question: Question, prediction: str) -> Score:
        """One letter or none: a reply naming two different letters (and stating neither as
        its answer), or none at all, is ``unparseable`` - never read as a letter it may not
        mean."""
        letters = _choice_letters(question)
        _, find_gold = _choice_typed(question)
        golds = [found[0] for g in question.answers if (found := find_gold(g))]
        found = [h.value for h in find_choices(prediction, letters)]
        if not found:
            found = _option_mentions(prediction, question, letters)
        distinct = list(dict.fromkeys(found))
        if len(distinct) > 1:
            stated = list(dict.fromkeys(h.value for h in find_stated_choices(prediction,
                                                                             letters)))
            if len(stated) == 1:
                distinct = stated
        details: dict[str, Any] = {"refused": False, "gold": golds, "candidates": found}
        if len(distinct) != 1:
            return self._score(False, {**details, "parsed": None, "label": UNPARSEABLE})
        details["parsed"] = distinct[0]
        return self._score(distinct[0] in golds, details)

    @staticmethod
    def _free_text(golds: Sequence[str], prediction: str) -> tuple[bool, dict[str, Any]]:
        """Equal texts, or the gold contained in a reply (or its stated answer) short enough
        for the containment to be its answer (design 0038); a long reply is left to F1 and
        the judge."""
        norm = normalize_text(prediction)
        stated = stated_answer(prediction)
        long_reply = False

        def contained(gold: str, text: str | None) -> bool:
            nonlocal long_reply
            if text is None or not subem(gold, text):
                return False
            if containment_allowed(len(normalize_text(text).split()),
                                   len(normalize_text(gold).split())):
                return True
            long_reply = True
            return False

        match = any(
            (norm and normalize_text(g) == norm) or contained(g, prediction)
            or contained(g, stated) for g in golds
        )
        f1 = max((token_f1(g, prediction) for g in golds), default=0.0)
        details: dict[str, Any] = {"refused": False, "f1": f1}
        if long_reply and not match:
            details["too_long"] = True
        return match, details


def _lettered(question: Question) -> bool:
    """A multiple-choice question with options: its gold is a letter, which a reply that
    merely lists the options contains ("A. Blue\nB. Green…" holds "B"), so a substring or
    token overlap says nothing; the rule scorer's letter reader is the measure (version 2
    of SubEM and F1 leave these unscored)."""
    return question.answer_type == AnswerType.MCQ and bool(question.options)


class SubEMScorer:
    """1 iff some gold answer occurs in the prediction on token boundaries (:func:`subem`).

    On refusal questions the gold text is a stand-in ("Insufficient information") that a
    correct refusal need not quote, so the score is 1 iff :func:`is_refusal` flags the
    prediction. Multiple choice with options is not scored (:func:`_lettered`)."""

    name = "subem"
    version = "2"

    def score(self, question: Question, prediction: str | None) -> Score | None:
        if prediction is None or _lettered(question):
            return None
        if question.answer_type == AnswerType.REFUSAL:
            return _refusal_score(self, prediction)
        matched = next((g for g in question.answers if subem(g, prediction)), None)
        return Score(value=float(matched is not None), scorer=self.name, version=self.version,
                     details={"matched": matched})


def _refusal_score(scorer: Any, prediction: str) -> Score:
    """On refusal questions the gold wording is arbitrary: 1 iff the prediction refuses."""
    refused = is_refusal(prediction)
    return Score(value=float(refused), scorer=scorer.name, version=scorer.version,
                 details={"refused": refused})


class TokenF1Scorer:
    """The best SQuAD token F1 over the gold answers. On refusal questions, like
    :class:`SubEMScorer`, 1 iff the prediction is a refusal (the gold wording is arbitrary);
    multiple choice with options is not scored."""

    name = "f1"
    version = "2"

    def score(self, question: Question, prediction: str | None) -> Score | None:
        if prediction is None or _lettered(question):
            return None
        if question.answer_type == AnswerType.REFUSAL:
            return _refusal_score(self, prediction)
        best = max((token_f1(g, prediction) for g in question.answers), default=0.0)
        return Score(value=best, scorer=self.name, version=self.version)


@scorer("rule")
def rule() -> Scorer:
    return TypedRuleScorer()


@scorer("subem")
def subem_scorer() -> Scorer:
    return SubEMScorer()


@scorer("f1")
def f1() -> Scorer:
    return TokenF1Scorer()


BUILTIN_SCORERS = ("rule", "subem", "f1")  # first, in this order: the report's primary is first


def registered_scorers() -> list[Scorer]:
    """The rule scorers every run records: each registered one (:func:`registry.scorer`),
    the built-ins (typed rule, SubEM, token F1) first, then those of plugins (entry point
    ``memgauge.scorers``) by name. A factory that does not make a :class:`Scorer` is a
    ConfigError naming it."""
    from ..errors import ConfigError
    from ..registry import lookup, names

    registered = names("scorer")
    order = [n for n in BUILTIN_SCORERS if n in registered] + \
        [n for n in registered if n not in BUILTIN_SCORERS]
    out: list[Scorer] = []
    for name in order:
        made = lookup("scorer", name)()
        if not isinstance(made, Scorer):
            raise ConfigError(f"scorer {name!r}: its factory made {type(made).__name__}, "
                              "not a Scorer (name, version and score(question, prediction))")
        out.append(made)
    return out


def default_scorers() -> list[Scorer]:
    """The rule scorers every run records (:func:`registered_scorers`)."""
    return registered_scorers()
