"""Small helpers the Crafter templates share: sampling, ordinals, confusables."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")
ORDINALS = {"first": 0, "second": 1, "third": 2, "last": -1}


def pick(rng: random.Random, items: Iterable[T], k: int) -> list[T]:
    """Up to k distinct items, in a seeded order that does not depend on set iteration."""
    pool = list(dict.fromkeys(items))
    return rng.sample(pool, min(k, len(pool)))


def nth(steps: Sequence[int], ordinal: str) -> int | None:
    """The step of the first/second/third/last occurrence, None when there are fewer."""
    index = ORDINALS[ordinal]
    if index >= len(steps) or not steps:
        return None
    return steps[index]


def unseen(vocabulary: Iterable[str], present: Iterable[str]) -> list[str]:
    """Confusables: names of Crafter's own vocabulary that did not occur."""
    got = set(present)
    return [name for name in vocabulary if name not in got]


def article(noun: str) -> str:
    """"a table", "an iron pickaxe"."""
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"
