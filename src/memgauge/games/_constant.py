"""How well one constant answer does on a set of game questions (design 0039), in one place:
the generator caps it and ``memgauge validate --bench games`` gates it, so the two cannot
drift apart.

A constant is right for a question when it is one of the question's golds (its answer, an
alternative, or "not answerable"). Chance is 1/k over the answer values a template's
questions can have; a constant may be right for at most chance + ``MARGIN`` of them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .templates import NOT_ANSWERABLE

MARGIN = 0.10  # a constant may beat chance by at most 10 points


def canon(value: Any) -> str:
    """An answer as the gold text the scorer reads, case and spaces folded."""
    from ..benchmarks.games import answer_text

    return " ".join(answer_text(value).lower().split())


@dataclass(frozen=True)
class Answer:
    """What the measure needs of one question: the value it counts towards k, and every
    answer that is right for it."""

    value: str
    golds: frozenset[str]


def answer_of(answer: Any, answerable: bool, alternatives: Iterable[Any] = ()) -> Answer:
    if not answerable:
        return Answer(NOT_ANSWERABLE, frozenset({NOT_ANSWERABLE}))
    value = canon(answer)
    return Answer(value, frozenset({value, *(canon(a) for a in alternatives)}))


def chance(answers: Iterable[Answer], values: Sequence[str] = ()) -> float:
    """1/k. A closed template's k is its declared values, plus "not answerable" when asked.
    An open template's k is its distinct answers but never under 2: an open question always
    has another possible answer, and with k = 1 a template whose every answer is the same
    would be allowed 100 %."""
    seen = {a.value for a in answers}
    k = len(set(values) | ({NOT_ANSWERABLE} & seen)) if values else max(len(seen), 2)
    return 1.0 / k


def best_constant(answers: Sequence[Answer]) -> tuple[str | None, int]:
    """The single answer right for the most questions (ties: the greatest text, so the
    choice is stable), and for how many."""
    hits: Counter[str] = Counter(g for a in answers for g in a.golds)
    if not hits:
        return None, 0
    return max(hits.items(), key=lambda kv: (kv[1], kv[0]))


def allowed_hits(n: int, chance_: float) -> int:
    """How many of ``n`` questions one constant may answer: chance + MARGIN of them, rounded
    down, but always one (a single question is not a constant being exploited; from 10
    questions on, the gate's minimum, the rounding alone decides)."""
    return max(1, math.floor((chance_ + MARGIN) * n + 1e-9))


def cap_constant(answers: Sequence[Answer], values: Sequence[str],
                 pick: Callable[[list[int], set[int]], int]) -> set[int]:
    """The indices of ``answers`` to keep so that no constant is right for more than
    ``allowed_hits`` of those kept. While one is, a question it answers is dropped;
    ``pick(candidates, kept)`` says which of the candidate indices goes."""
    kept = set(range(len(answers)))
    while kept:
        chosen = [answers[i] for i in sorted(kept)]
        constant, hits = best_constant(chosen)
        if hits <= allowed_hits(len(kept), chance(chosen, values)):
            break
        candidates = sorted(i for i in kept if constant in answers[i].golds)
        kept.discard(pick(candidates, kept))
    return kept


__all__ = ["MARGIN", "Answer", "allowed_hits", "answer_of", "best_constant", "canon",
           "cap_constant", "chance"]
