"""Text normalization and the two lexical metrics: substring exact match and token F1."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

_ARTICLES = frozenset({"a", "an", "the"})
_APOSTROPHES = re.compile(r"['’‘ʼ`´]")
# A comma followed by exactly three digits after a digit is a thousands separator: "1,200"
# becomes "1200" so it equals "1200" rather than the two tokens "1" "200".
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def _fold(text: str) -> str:
    # NFKC then casefold, repeated to a fixed point: casefolding can un-normalize a few
    # characters and NFKC can re-introduce capitals (e.g. "ℌ" -> "H"), which would break
    # idempotence. Two or three rounds always suffice in practice; the bound keeps it safe.
    s = text
    for _ in range(4):
        t = unicodedata.normalize("NFKC", s).casefold()
        if t == s:
            break
        s = t
    return s


def normalize_text(text: str) -> str:
    """Lowercase; drop apostrophes and thousands commas; turn other punctuation and symbols
    into spaces, keeping ``.`` and ``/`` between digits ("3.5", "3/4", "2024/03/05"); drop
    the articles a/an/the (unless the text is nothing but articles, so a gold answer "A"
    survives); collapse whitespace. Idempotent."""
    s = _APOSTROPHES.sub("", _fold(text))
    s = _THOUSANDS.sub("", s)
    out = []
    last = len(s) - 1
    for i, ch in enumerate(s):
        if ch in "./" and 0 < i < last and s[i - 1].isdecimal() and s[i + 1].isdecimal():
            out.append(ch)
        elif unicodedata.category(ch)[0] in "PSCZ":
            out.append(" ")
        else:
            out.append(ch)
    tokens = "".join(out).split()
    kept = [t for t in tokens if t not in _ARTICLES]
    return " ".join(kept if kept else tokens)


def _tokens(text: str) -> list[str]:
    return normalize_text(text).split()


def subem(gold: str, pred: str) -> bool:
    """Substring exact match on token boundaries: the normalized gold token sequence occurs
    contiguously in the normalized prediction. Empty on either side is False.

    Matching whole tokens (not characters) is the point: gold "A" must not match
    "Insufficient information" just because "a" is a substring of it."""
    g, p = _tokens(gold), _tokens(pred)
    if not g or not p or len(g) > len(p):
        return False
    n = len(g)
    return any(p[i : i + n] == g for i in range(len(p) - n + 1))


def token_f1(gold: str, pred: str) -> float:
    """SQuAD-style F1 over normalized tokens. 0.0 when either side has no tokens."""
    g, p = _tokens(gold), _tokens(pred)
    if not g or not p:
        return 0.0
    same = sum((Counter(g) & Counter(p)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)
