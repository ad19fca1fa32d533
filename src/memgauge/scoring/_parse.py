"""Pure parsers that find candidate answers in free text.

Models answer verbosely ("The total came to $260.00."), so each parser scans the whole text
and returns *every* candidate it finds, in order of appearance. Choosing among candidates is
the scorer's business (see ``_rules``), not the parser's.

The ``_find_*`` functions return ``(start, end, value)`` hits so callers can reason about
where a value sits (the rule scorer drops numbers that are parts of dates, for instance).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple


class Hit(NamedTuple):
    start: int
    end: int
    value: Any


def _ordered(hits: list[Hit]) -> list[Hit]:
    """Sort by position and drop hits overlapping an earlier (or longer, same-start) one."""
    out: list[Hit] = []
    for h in sorted(hits, key=lambda h: (h.start, -(h.end - h.start))):
        if not out or h.start >= out[-1].end:
            out.append(h)
    return out


# --------------------------------------------------------------------------- numbers

_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}

# A number written in digits. The sign counts only when not glued to a word or number, so the
# "-03" of "2024-03-05" is 3, not -3. Thousands separators must come in groups of three.
# The European form "1.234,50" is accepted only with dotted thousands AND a decimal comma,
# which no US-style number can look like.
_DIGITS = re.compile(
    r"""
    (?:(?<![\w\-−.])(?P<sign>[-−]))?
    (?<![\w.])
    (?:
        (?P<eu>[0-9]{1,3}(?:\.[0-9]{3})+,[0-9]{1,2})
      | (?P<us>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?)
      | (?P<plain>[0-9]+(?:\.[0-9]+)?)
    )
    (?![0-9])
    (?:(?P<pct>\s?%)|\s+(?P<scale>thousand|million|billion|trillion)\b)?
    """,
    re.VERBOSE | re.IGNORECASE,
)

_UNITS = {w: i for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])}
_TEENS = {w: i + 10 for i, w in enumerate(
    ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
     "eighteen", "nineteen"])}
_TENS = {w: (i + 2) * 10 for i, w in enumerate(
    ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"])}
_NUMBER_WORDS = set(_UNITS) | set(_TEENS) | set(_TENS)
# A bare "one" after these is a pronoun ("no one", "the one I liked"), not the number 1.
_PRONOUN_ONE = frozenset(
    ["no", "any", "every", "some", "the", "this", "that", "which", "each", "another", "other"])
_WORD = re.compile(r"[A-Za-z]+")
_GAP = re.compile(r"\s*-?\s*")  # what may sit between two words of one number
_AFTER_AND = (set(_UNITS) - {"zero"}) | set(_TEENS) | set(_TENS)  # "hundred and five"


def _digit_hits(text: str) -> list[Hit]:
    hits = []
    for m in _DIGITS.finditer(text):
        if m["eu"]:
            s = m["eu"].replace(".", "").replace(",", ".")
        elif m["us"]:
            s = m["us"].replace(",", "")
        else:
            s = m["plain"]
        v = Decimal(s)
        if m["scale"]:
            v *= _SCALES[m["scale"].lower()]
        if m["sign"]:
            v = -v
        hits.append(Hit(m.start(), m.end(), v))
    return hits


def _word_hits(text: str, skip: list[Hit]) -> list[Hit]:
    """Numbers written in words: "three", "twenty-one", "one hundred and five",
    "a thousand", "two dozen", "minus five". Words inside ``skip`` spans are ignored."""
    return _NumberWords(text, skip).hits()


@dataclass
class _Reading:
    """The grammar's state while reading one number in words: the sum of the finished
    scale groups (``total``), the group being read, the kind of the last word and the
    last scale (a later scale must be smaller: "two million three thousand")."""

    total: int = 0
    group: int = 0
    last: str | None = None  # unit | teen | ten | hundred | scale
    last_scale: int | None = None


class _NumberWords:
    """The words of a text, read as numbers by a small grammar: each step says which word
    kinds may follow; anything else ends the number, so "one two" is two numbers and
    "twenty one" is one."""

    def __init__(self, text: str, skip: list[Hit]) -> None:
        starts = [h.start for h in skip]  # skip is sorted and non-overlapping

        def skipped(pos: int) -> bool:
            k = bisect.bisect_right(starts, pos) - 1
            return k >= 0 and pos < skip[k].end

        self.text = text
        self.toks = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)
                     if not skipped(m.start())]
        self.n = len(self.toks)

    def adjacent(self, i: int) -> bool:
        """Whether toks[i] directly follows toks[i-1]."""
        toks = self.toks
        return i > 0 and _GAP.fullmatch(self.text[toks[i - 1][1] : toks[i][0]]) is not None

    def word(self, i: int) -> str | None:
        return self.toks[i][2] if i < self.n else None

    def hits(self) -> list[Hit]:
        hits: list[Hit] = []
        i = 0
        while i < self.n:
            if not self.starts_number(i):
                i += 1
                continue
            j, negative, value = self.read(i)
            if j == i or (negative and j == i + 1):  # nothing consumed (cannot happen)
                i += 1
                continue
            if not self.pronoun_one(i, j):
                hits.append(Hit(self.toks[i][0], self.toks[j - 1][1],
                                Decimal(-value if negative else value)))
            i = j
        return hits

    def starts_number(self, i: int) -> bool:
        w = self.word(i)
        if w in _NUMBER_WORDS:
            return True
        nxt = self.word(i + 1) if i + 1 < self.n and self.adjacent(i + 1) else None
        if w in ("a", "an"):  # "a hundred", "a dozen"
            return nxt in ("hundred", "dozen") or nxt in _SCALES
        if w in ("minus", "negative"):
            return nxt in _NUMBER_WORDS
        return False

    def pronoun_one(self, i: int, j: int) -> bool:
        """A bare "one" after "no", "the", ... ("no one", "the one I liked")."""
        bare_one = j - i == 1 and self.word(i) == "one"
        return bare_one and i > 0 and self.adjacent(i) and self.word(i - 1) in _PRONOUN_ONE

    def read(self, i: int) -> tuple[int, bool, int]:
        """The number starting at word ``i``: the index past its last word, whether it is
        negative, and its absolute value."""
        j, negative = i, False
        if self.word(j) in ("minus", "negative"):
            negative, j = True, j + 1
        r = _Reading()
        if self.word(j) in ("a", "an"):
            r.group, r.last, j = 1, "unit", j + 1
        while j < self.n and (j == i or self.adjacent(j)):
            took, more = self.take(j, r)
            if took:
                j += 1
            if not more:
                break
        return j, negative, r.total + r.group

    def take(self, j: int, r: _Reading) -> tuple[bool, bool]:
        """Whether word ``j`` belongs to the number being read (``r`` updated if so), and
        whether another word may follow it."""
        w, last = self.word(j), r.last
        if w == "zero":
            return last is None, False
        if w in _UNITS and last in (None, "ten", "hundred", "scale"):
            r.group, r.last = r.group + _UNITS[w], "unit"
        elif w in _TEENS and last in (None, "hundred", "scale"):
            r.group, r.last = r.group + _TEENS[w], "teen"
        elif w in _TENS and last in (None, "hundred", "scale"):
            r.group, r.last = r.group + _TENS[w], "ten"
        elif w == "hundred" and last in ("unit", "teen") and r.group < 100:
            r.group, r.last = r.group * 100, "hundred"
        elif w in _SCALES and last in ("unit", "teen", "ten", "hundred") and (
            r.last_scale is None or _SCALES[w] < r.last_scale
        ):
            r.total, r.group = r.total + r.group * _SCALES[w], 0
            r.last, r.last_scale = "scale", _SCALES[w]
        elif w == "dozen" and last == "unit" and r.group < 10 and r.last_scale is None:
            r.group *= 12
            return True, False
        elif not (w == "and" and last in ("hundred", "scale") and self.and_continues(j)):
            return False, False
        return True, True

    def and_continues(self, j: int) -> bool:
        """"and" inside a number: "one hundred and five"."""
        return (j + 1 < self.n and self.adjacent(j + 1)
                and self.word(j + 1) in _AFTER_AND)


def find_numbers(text: str) -> list[Hit]:
    digits = _digit_hits(text)
    return _ordered(digits + _word_hits(text, digits))


def parse_numbers(text: str) -> list[Decimal]:
    """Every number in ``text``: "1,234.50", "-3", "2.5", "10%" (-> 10), "1.5 million",
    "1.234,50" (European, only in that unambiguous dotted-thousands form), and number words
    ("three", "twenty-one", "one hundred and five", "a dozen")."""
    return [h.value for h in find_numbers(text)]


def parse_integers(text: str) -> list[int]:
    """The numbers of :func:`parse_numbers` that are whole ("3.0" -> 3; "3.5" is skipped)."""
    return [int(v) for v in parse_numbers(text) if v == v.to_integral_value()]


# --------------------------------------------------------------------------- amounts

# Currencies are ISO 4217 codes where the text pins one down, or the shared symbol itself
# ("$", "¥", "kr") where several currencies use it; see currencies_compatible.
_FAMILIES = {
    "$": frozenset({"USD", "CAD", "AUD", "NZD", "HKD", "SGD", "TWD", "MXN"}),
    "¥": frozenset({"JPY", "CNY"}),
    "kr": frozenset({"DKK", "SEK", "NOK", "ISK"}),
}
ISO_CODES = frozenset({
    "USD", "EUR", "GBP", "JPY", "CNY", "RMB", "INR", "KRW", "IRR", "CAD", "AUD", "NZD", "CHF",
    "DKK", "SEK", "NOK", "ISK", "PLN", "CZK", "HUF", "RUB", "TRY", "BRL", "MXN", "ZAR", "SGD",
    "HKD", "TWD", "THB", "VND", "IDR", "MYR", "PHP", "AED", "SAR", "ILS", "EGP", "NGN", "KES",
    "PKR", "BDT", "LKR", "NPR", "ARS", "CLP", "COP", "PEN", "UAH", "RON", "BGN", "QAR", "KWD",
    "OMR", "BHD", "JOD", "MAD",
})
# Codes count in capitals ("TRY 50"); in lower case only these common ones do, since many
# codes are also words or names ("try", "pen", "cop", "ron", "php").
_LOWERCASE_OK = frozenset(
    ["usd", "eur", "gbp", "jpy", "cny", "rmb", "inr", "krw", "irr", "cad", "aud", "nzd", "chf",
     "dkk", "sek", "nok", "hkd", "sgd"])

_SYMBOLS = {
    "US$": "USD", "C$": "CAD", "CA$": "CAD", "A$": "AUD", "AU$": "AUD", "NZ$": "NZD",
    "HK$": "HKD", "S$": "SGD", "R$": "BRL", "NT$": "TWD", "$": "$",
    "€": "EUR", "£": "GBP", "¥": "¥", "￥": "¥", "₹": "INR", "₩": "KRW", "₽": "RUB",
    "₺": "TRY", "₪": "ILS", "﷼": "IRR", "₫": "VND", "฿": "THB", "₱": "PHP",
    "Rs.": "INR", "Rs": "INR", "kr.": "kr", "kr": "kr", "zł": "PLN",
}
# Words that follow an amount ("260 dollars", "185 Danish kroner").
_WORDS = {
    "us dollars": "USD", "u.s. dollars": "USD", "american dollars": "USD",
    "canadian dollars": "CAD", "australian dollars": "AUD", "new zealand dollars": "NZD",
    "hong kong dollars": "HKD", "singapore dollars": "SGD",
    "danish kroner": "DKK", "danish krone": "DKK", "swedish kronor": "SEK",
    "swedish krona": "SEK", "norwegian kroner": "NOK", "norwegian krone": "NOK",
    "swiss francs": "CHF", "japanese yen": "JPY", "chinese yuan": "CNY",
    "indian rupees": "INR", "south korean won": "KRW", "korean won": "KRW",
    "iranian rials": "IRR", "british pounds": "GBP", "pounds sterling": "GBP",
    "dollars": "$", "dollar": "$", "bucks": "$", "euros": "EUR", "euro": "EUR",
    "pounds": "GBP", "pound": "GBP", "quid": "GBP", "yen": "JPY", "yuan": "CNY",
    "renminbi": "CNY", "kroner": "kr", "kronor": "kr", "krone": "kr", "krona": "kr",
    "kronur": "kr", "won": "KRW", "rupees": "INR", "rupee": "INR", "rials": "IRR",
    "rial": "IRR", "riyals": "SAR", "riyal": "SAR", "francs": "CHF", "franc": "CHF",
    "rubles": "RUB", "ruble": "RUB", "roubles": "RUB", "lira": "TRY", "zloty": "PLN",
    "zlotys": "PLN", "reais": "BRL", "rand": "ZAR", "shekels": "ILS", "shekel": "ILS",
    "baht": "THB", "ringgit": "MYR", "rupiah": "IDR",
}


def _alternation(keys: list[str]) -> str:
    # Longest first, so "US$" wins over "$" and "danish kroner" over "kroner".
    longest_first = sorted(keys, key=len, reverse=True)
    return "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in longest_first)


# Symbols that start with a letter ("US$", "kr") must not be the tail of a word.
_LSYM = _alternation([k for k in _SYMBOLS if k[0].isalpha()])
_SYM = _alternation([k for k in _SYMBOLS if not k[0].isalpha()])
_PREFIX = re.compile(
    rf"(?:(?<![A-Za-z])(?P<lsym>{_LSYM})|(?P<sym>{_SYM})"
    rf"|(?<![A-Za-z])(?P<code>[A-Za-z]{{3}})\.?)\s*$"
)
_SUFFIX = re.compile(
    rf"\s*(?:(?P<word>{_alternation(list(_WORDS))})(?![A-Za-z])"
    rf"|(?P<lsym>{_LSYM})(?![A-Za-z])|(?P<sym>{_SYM})"
    rf"|(?P<code>[A-Za-z]{{3}})(?![A-Za-z]))",
    re.IGNORECASE,
)
_SYMBOL_BY_LOWER = {k.lower(): v for k, v in _SYMBOLS.items()}


def _code(raw: str) -> str | None:
    up = raw.upper()
    if up not in ISO_CODES or (raw != up and raw.lower() not in _LOWERCASE_OK):
        return None
    return "CNY" if up == "RMB" else up


def _currency(m: re.Match[str]) -> str | None:
    if m["code"]:
        return _code(m["code"])
    if m.groupdict().get("word"):
        return _WORDS[" ".join(m["word"].lower().split())]
    sym = m["lsym"] or m["sym"]
    return _SYMBOLS.get(sym) or _SYMBOL_BY_LOWER.get(sym.lower())


def find_amounts(text: str) -> list[Hit]:
    hits = []
    for h in find_numbers(text):
        if text[h.start : h.end].rstrip().endswith("%"):
            hits.append(Hit(h.start, h.end, (h.value, None)))
            continue
        cur, start, end = None, h.start, h.end
        # Currency before the number ("$260", "USD 260", "kr. 185") ...
        pm = _PREFIX.search(text, max(0, h.start - 8), h.start)
        if pm and (c := _currency(pm)):
            cur, start = c, pm.start()
        else:  # ... or after it ("260 dollars", "185 DKK", "15€").
            sm = _SUFFIX.match(text, h.end)
            if sm and (c := _currency(sm)):
                cur, end = c, sm.end()
        hits.append(Hit(start, end, (h.value, cur)))
    return hits


def parse_amounts(text: str) -> list[tuple[Decimal, str | None]]:
    """Every number in ``text`` with the currency written next to it, or None: "$260.00",
    "US$ 260", "USD 260", "260 USD", "185 DKK", "€15", "15 €", "260 dollars", "1.234,50 €".

    The currency is an ISO 4217 code where the text pins one down, or the symbol for a symbol
    several currencies share: "$" (dollars), "¥" (yen/yuan), "kr" (Nordic krone/krona)."""
    return [h.value for h in find_amounts(text)]


def currencies_compatible(a: str | None, b: str | None) -> bool:
    """Unknown (None) is compatible with anything; "$" with any dollar, "kr" with any krone."""
    if a is None or b is None or a == b:
        return True
    return b in _FAMILIES.get(a, ()) or a in _FAMILIES.get(b, ())


# --------------------------------------------------------------------------- dates

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}
_MON = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?![a-z])\.?"
)
_DAY = r"(?P<day>[0-9]{1,2})(?![0-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>[0-9]{4})(?![0-9])"
_DATE_PATTERNS = (
    # March 5, 2024 / Mar 5 2024 / March 5th, 2024 / Mar. 5, 2024
    re.compile(rf"(?<![a-z]){_MON}\s*{_DAY},?\s+{_YEAR}", re.IGNORECASE),
    # 5 March 2024 / 5th of March, 2024 / 5 Mar, 2024
    re.compile(rf"(?<![0-9]){_DAY}\s+(?:of\s+)?{_MON},?\s+{_YEAR}", re.IGNORECASE),
    # 2024-03-05 / 2024/03/05 / 2024.03.05 (one separator kind throughout)
    re.compile(r"(?<![0-9])(?P<year>[0-9]{4})(?P<sep>[-/.])(?P<m>[0-9]{1,2})(?P=sep)"
               r"(?P<d>[0-9]{1,2})(?![0-9])"),
    # 03/05/2024, 05.03.2024
    re.compile(r"(?<![0-9])(?P<a>[0-9]{1,2})(?P<sep>[-/.])(?P<b>[0-9]{1,2})(?P=sep)"
               r"(?P<year>[0-9]{4})(?![0-9])"),
    # 2024年3月5日
    re.compile(r"(?P<year>[0-9]{4})\s*年\s*(?P<m>[0-9]{1,2})\s*月\s*(?P<d>[0-9]{1,2})\s*日"),
)


def _ymd(m: re.Match[str]) -> tuple[int, int, int]:
    g = m.groupdict()
    year = int(g["year"])
    if g.get("mon"):
        return year, _MONTHS[g["mon"][:3].lower()], int(g["day"])
    if g.get("m"):
        return year, int(g["m"]), int(g["d"])
    a, b = int(g["a"]), int(g["b"])
    if g["sep"] == ".":  # dotted dates are day-first (05.03.2024) unless that is impossible
        return (year, a, b) if b > 12 else (year, b, a)
    return (year, b, a) if a > 12 else (year, a, b)  # slashes/dashes: US month-first


def find_dates(text: str) -> list[Hit]:
    hits = []
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            try:
                d = _dt.date(*_ymd(m))
            except ValueError:  # "February 30" and the like
                continue
            hits.append(Hit(m.start(), m.end(), d))
    return _ordered(hits)


_MONTH_DAY_PATTERNS = (
    re.compile(rf"(?<![a-z]){_MON}\s*{_DAY}", re.IGNORECASE),  # March 5, Mar. 5th
    re.compile(rf"(?<![0-9]){_DAY}\s+(?:of\s+)?{_MON}", re.IGNORECASE),  # 5 March, 5th of March
)


def find_month_days(text: str) -> list[Hit]:
    """(month, day) pairs, from full dates and from yearless ones ("March 5th", "5 March").
    Used when a gold date has no year, so only month and day can be compared."""
    hits = [Hit(h.start, h.end, (h.value.month, h.value.day)) for h in find_dates(text)]
    for pattern in _MONTH_DAY_PATTERNS:
        for m in pattern.finditer(text):
            month, day = _MONTHS[m["mon"][:3].lower()], int(m["day"])
            try:
                _dt.date(2000, month, day)  # a leap year, so February 29 is allowed
            except ValueError:
                continue
            hits.append(Hit(m.start(), m.end(), (month, day)))
    return _ordered(hits)


def parse_dates(text: str) -> list[_dt.date]:
    """Every full calendar date (year, month and day) in ``text``.

    Accepts ISO-like ``YYYY-MM-DD`` / ``YYYY/MM/DD`` / ``YYYY.MM.DD``; month names, full or
    abbreviated ("March 5, 2024", "Mar 5 2024", "March 5th, 2024", "5 March 2024",
    "5th of March, 2024"); and "2024年3月5日". Ambiguous ``NN/NN/YYYY`` (or ``NN-NN-YYYY``) is
    read US-style as month/day unless the first number exceeds 12; ``NN.NN.YYYY`` is read
    European-style as day.month unless the second number exceeds 12. Dates without a year
    are not returned (there is no date to compare)."""
    return [h.value for h in find_dates(text)]


# --------------------------------------------------------------------------- choices

# After these words a following capital letter is a choice ("A is longer"), not an article.
_AFTER_CHOICE = r"(?:is|was|would|seems|appears|looks|because|since|as|and|or|vs|versus)\b"
_LABEL_WORDS = r"(?:option|choice|letter)"


def _letter_sets(letters: str) -> tuple[str, str] | None:
    """The character classes of ``letters``: upper case only, and either case."""
    ups = "".join(dict.fromkeys(c.upper() for c in letters if c.isalpha()))
    if not ups:
        return None
    return f"[{re.escape(ups)}]", f"[{re.escape(ups)}{re.escape(ups.lower())}]"


_END = r"(?![\w'’-])"


def _answer_pattern(up: str, anycase: str) -> re.Pattern[str]:
    # "The answer is A", "answer: b." - a lowercase letter only when punctuation follows,
    # so "the answer is a longer trip" is not choice A
    return re.compile(
        rf"\b(?i:answer)(?:\s+(?i:is|would\s+be))?\s*[:\-]?\s*[(\[]?"
        rf"(?:({up}){_END}|({anycase})(?=\s*(?:[.):,;!?\]]|$)))"
    )


def _hits(patterns: list[re.Pattern[str]], text: str) -> list[Hit]:
    hits = []
    for p in patterns:
        for m in p.finditer(text):
            g = next(i for i in range(1, (m.lastindex or 1) + 1) if m.group(i))
            hits.append(Hit(m.start(g), m.end(g), m.group(g).upper()))
    return _ordered(hits)


def find_choices(text: str, letters: str = "AB") -> list[Hit]:
    sets = _letter_sets(letters)
    if sets is None:
        return []
    up, anycase = sets
    whole = re.fullmatch(rf"[\W_]*({anycase})[\W_]*", text)
    if whole:  # the whole answer is one letter, in either case: "a", "(B)", "B."
        return [Hit(whole.start(1), whole.end(1), whole[1].upper())]
    patterns = [
        # "(B)", "[a]"
        re.compile(rf"[(\[]\s*({anycase})\s*[)\]]"),
        # "Option B", "choice (a)", "letter B"
        re.compile(rf"\b{_LABEL_WORDS}\s*[:\-]?\s*[(\[]?({anycase}){_END}", re.IGNORECASE),
        _answer_pattern(up, anycase),
        # A standalone capital followed by punctuation, the end, or a verb: "B.", "A: ...",
        # "I pick B", "A is longer". "A longer trip" (an article) does not qualify.
        re.compile(
            rf"(?<![\w.'’&-])({up}){_END}(?=\s*(?:[.):,;!?\]]|$)|\s+{_AFTER_CHOICE})"
        ),
    ]
    return _hits(patterns, text)


def find_stated_choices(text: str, letters: str = "AB") -> list[Hit]:
    """The choices a reply states as its answer or conclusion: "The answer is B", "Answer:
    (c)", "..., so B." - what decides between several letters a reply mentions."""
    sets = _letter_sets(letters)
    if sets is None:
        return []
    up, anycase = sets
    conclusion = re.compile(
        rf"\b(?i:so|therefore|thus|hence)\s*,?\s*(?:(?i:it\s+is|it's)\s+)?[(\[]?({up}){_END}"
        rf"(?=\s*[.)\]!]?\s*$)"
    )
    return _hits([_answer_pattern(up, anycase), conclusion], text)


def parse_choice(text: str, letters: str = "AB") -> list[str]:
    """Every choice letter (upper case, from ``letters``) in ``text``: "A", "(B)", "Option B",
    "B.", "The answer is A: duration 1 is longer". A lowercase letter counts when it is the
    whole answer ("a"), bracketed ("(b)") or labelled ("option b"); otherwise "a" is an article
    and never a choice."""
    return [h.value for h in find_choices(text, letters)]


# --------------------------------------------------------------------------- yes / no

_YES_NO = re.compile(
    r"(?P<no>(?:\bnot|n't)\s+(?:correct|true)\b|\bincorrect\b|\bnope\b|\bnah\b"
    r"|(?:^[\W_]*|\banswer\s+is\s+)no\b|\bno(?=\s*(?:[.,!;:)\]]|$)))"
    r"|(?P<yes>\b(?:yes|yeah|yep|yup|correct)\b)",
    re.IGNORECASE,
)
_WHOLE_TRUE_FALSE = re.compile(r"[\W_]*(true|false)[\W_]*", re.IGNORECASE)


def parse_yes_no(text: str) -> list[str]:
    """Every yes/no verdict in ``text`` as "yes" or "no".

    Yes: yes/yeah/yep/yup/correct. No: nope/nah/incorrect/"not correct"/"isn't true", and "no"
    when it starts the answer, follows "answer is", or is followed by punctuation or the end
    ("No, they differ", "... the answer is no."): "there were no cats" uses "no" as a
    determiner and is not a verdict. "true"/"false" count only as the whole answer. "Same" and
    "different" are not verdicts: whether they mean yes depends on how the question is put."""
    s = text.replace("’", "'")
    whole = _WHOLE_TRUE_FALSE.fullmatch(s)
    if whole:
        return ["yes" if whole[1].lower() == "true" else "no"]
    return ["yes" if m["yes"] else "no" for m in _YES_NO.finditer(s)]


# --------------------------------------------------------------------------- orders

_BR_ITEM = r"[(\[]\s*[0-9]+\s*[)\]]"
_ARROW_SEP = r"\s*(?:->|→|⟶|=>|>|,|;)\s*(?:(?:and|then)\s+)?|\s+(?:and|then)\s+"
_BR_RUN = re.compile(rf"{_BR_ITEM}(?:(?:{_ARROW_SEP}|\s*){_BR_ITEM})+", re.IGNORECASE)
_PLAIN_RUN = re.compile(rf"(?<![\w.])[0-9]+(?:(?:{_ARROW_SEP})[0-9]+)+(?!\w|\.[0-9])",
                        re.IGNORECASE)


def parse_order(text: str) -> list[tuple[int, ...]]:
    """Every ordering (a run of at least two item numbers) in ``text``: "(5)(8)(1)",
    "(5) (8) (1)", "(5)->(8)->(1)", "[5][8][1]", "5, 8, 1", "5 -> 8 -> 1", "5, 8 and 1".
    Bare numbers need a separator between them; bracketed ones may just touch."""
    hits = [Hit(m.start(), m.end(), m.group()) for m in _BR_RUN.finditer(text)]
    hits += [Hit(m.start(), m.end(), m.group()) for m in _PLAIN_RUN.finditer(text)]
    return [tuple(int(x) for x in re.findall(r"[0-9]+", h.value)) for h in _ordered(hits)]
