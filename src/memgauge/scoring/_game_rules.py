"""Rule scoring of game answers (design 0032, "Scoring and report").

Game questions carry ``Question.meta["game"]`` (template, ``alternatives``, ``tolerance``,
``env``, ...). Every gold value (the answer and each alternative) is parsed by the answer type,
the model's free-text reply is parsed the same way, and the reply is correct iff its parsed
value equals one gold value. Categorical answers are never given partial credit.

* integer / number: the numbers in the reply, with those the question itself states (the step
  it names, a range's ends) set aside when another number remains ("I had 3 wood at step 12"
  commits to 3). Several different numbers left: the LAST stated is the answer (models reason,
  then conclude). Integers are compared exactly (9.6 is not 9; "9.0" is 9); numbers within
  ``tolerance`` (absolute) when the question has one.
* string: canonical text (case, punctuation, articles, underscores as spaces) equal to a gold
  value, or the gold value stated in the reply as a whole name: bounded by the reply's edges,
  punctuation or a framing word ("I was in the kitchen." names "kitchen"; "wood pickaxe" does
  not name "wood").
* action: Crafter's action names found in the reply ("MOVE_LEFT", "move left", "moved left",
  a bare "left" when no action is named); text-game actions by their canonical text, with
  direction abbreviations expanded ("go n" = "north"). Two different actions named: ambiguous,
  wrong.
* direction: the set of unit directions named (Crafter: left/right/up/down, with west/east/
  north/south as Crafter draws its map; text games: the compass, up/down, in/out). Opposite
  directions together, or two different text-game directions: ambiguous, wrong. "here" is the
  empty direction.
* list: items split on commas, semicolons, "and", "then", arrows or new lines, compared in
  order. set: items with optional counts ("wood: 2", "2 wood", "wood x2"), order-insensitive;
  "nothing", "none", "empty" are the empty set (and list). A gold item without a count accepts
  any count. A set of numbers (steps) is every whole number the reply states. Text-game items
  are commands and rooms with directions expanded ("n" = "go north").
* path: a sequence of unit moves ("2 left, 3 up", "left left up up up", "move_left ×2 then
  move_up ×3"), expanded and compared with the answer and every alternative.

Each decision records what was extracted in ``details`` (``parsed``, ``gold``, and
``ambiguous`` or ``set_aside`` where they apply).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from ..schema import AnswerType, Question
from ._hedge import HEDGED, commit, containment_allowed, is_hedge, stated_answer
from ._parse import find_dates, find_numbers
from ._text import normalize_text

# Crafter's 17 action names (crafter.constants.actions, checked by a test when crafter is
# installed); a closed vocabulary, so the scorer works without the games extra.
CRAFTER_ACTIONS = (
    "noop", "move_left", "move_right", "move_up", "move_down", "do", "sleep", "place_stone",
    "place_table", "place_furnace", "place_plant", "make_wood_pickaxe", "make_stone_pickaxe",
    "make_iron_pickaxe", "make_wood_sword", "make_stone_sword", "make_iron_sword",
)

# Crafter's materials, creatures and inventory items (crafter's data.yaml): the values a
# Crafter string answer ranges over, so a reply naming two of them hedges (design 0038).
CRAFTER_NAMES = frozenset({
    "water", "grass", "stone", "path", "sand", "tree", "lava", "coal", "iron", "diamond",
    "table", "furnace", "cow", "zombie", "skeleton", "arrow", "plant", "sapling", "wood",
    "wood pickaxe", "stone pickaxe", "iron pickaxe", "wood sword", "stone sword",
    "iron sword", "health", "food", "drink", "energy",
})

# Crafter draws its map with y growing downwards: up is north on screen.
_CRAFTER_DIRECTIONS = {
    "left": "left", "west": "left", "right": "right", "east": "right",
    "up": "up", "north": "up", "down": "down", "south": "down",
}
_CRAFTER_COMPOUND = {"northwest": ("up", "left"), "northeast": ("up", "right"),
                     "southwest": ("down", "left"), "southeast": ("down", "right")}
_OPPOSITE = {"left": "right", "right": "left", "up": "down", "down": "up"}
_TEXT_DIRECTIONS = {
    "n": "north", "north": "north", "s": "south", "south": "south", "e": "east",
    "east": "east", "w": "west", "west": "west", "ne": "northeast", "northeast": "northeast",
    "nw": "northwest", "northwest": "northwest", "se": "southeast", "southeast": "southeast",
    "sw": "southwest", "southwest": "southwest", "u": "up", "up": "up", "d": "down",
    "down": "down", "in": "in", "inside": "in", "out": "out", "outside": "out",
}
_HERE = frozenset({"here", "none", "nowhere", "zero", "0"})
_EMPTY_SET = re.compile(r"\s*(?:nothing|none|empty|no items?|an empty (?:set|list|inventory)"
                        r"|(?:it|the inventory) (?:is|was) empty|0 items)\s*")
# Words that may frame a name in a sentence ("I was in the kitchen", "the answer is lamp").
_FRAME = frozenset({
    "a", "an", "the", "is", "was", "were", "are", "in", "at", "on", "into", "to", "of", "i",
    "you", "it", "my", "your", "answer", "had", "have", "has", "been", "called", "named",
    "and", "then", "its", "that", "this", "item", "room", "location", "place", "there",
    "chose", "entered", "typed", "command", "action", "did", "used", "performed", "executed",
})
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "once": 1, "twice": 2, "thrice": 3,
}
_ITEM_SPLIT = re.compile(r"\s*(?:,|;|\n|->|→|=>|\band then\b|\bthen\b|\band\b|&)\s*")
_LEAD_IN = re.compile(
    r"^.*?\b(?:answer is|answer|is|are|was|were|had|have|has|holds?|held|contains?|contained"
    r"|carried|carrying|collected|visited|went|did)\b\s*:?\s*", re.DOTALL)


def _canon(text: str) -> str:
    """Case, punctuation, articles and underscores folded ("The Wood_Pickaxe." -> "wood
    pickaxe")."""
    return normalize_text(text.replace("_", " "))


def _tokens(text: str) -> list[str]:
    return _canon(text).split()


def _game(question: Question) -> dict[str, Any]:
    game = question.meta.get("game")
    return game if isinstance(game, dict) else {}


def _is_crafter(question: Question, golds: Sequence[Any]) -> bool:
    env = str(_game(question).get("env") or "").lower()
    if env:
        return env == "crafter"
    words = {t for g in golds for t in _tokens(_flat(g))}
    return bool(words & {"left", "right"}) or any(
        _canon(_flat(g)).replace(" ", "_") in CRAFTER_ACTIONS for g in golds)


def _flat(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


_ONE_VALUE = frozenset({AnswerType.LIST, AnswerType.SET, AnswerType.PATH})


def gold_values(question: Question) -> list[Any]:
    """The answer and every alternative, as given (strings, numbers or lists). For list, set
    and path questions a list ``answer`` is the items of one answer (their alternatives are
    in ``meta["game"]["alternatives"]``); for the others it holds alternatives."""
    alternatives = _game(question).get("alternatives") or []
    if not isinstance(alternatives, list):
        alternatives = [alternatives]
    if question.answer_type in _ONE_VALUE and isinstance(question.answer, list):
        return [question.answer, *alternatives]
    return [*question.answers, *alternatives]


# --- numbers -----------------------------------------------------------------------------

def _numbers_in(text: str) -> list[Decimal]:
    dates = find_dates(text)
    hits = [h for h in find_numbers(text)
            if not any(d.start <= h.start and h.end <= d.end for d in dates)]
    return [h.value for h in hits]


def _gold_number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return None
    found = _numbers_in(str(value))
    return found[0] if found else None


def _score_number(question: Question, prediction: str,
                  golds: Sequence[Any]) -> tuple[bool, dict[str, Any]]:
    gold = [g for v in golds if (g := _gold_number(v)) is not None]
    found = _numbers_in(prediction)
    stated = set(_numbers_in(question.text))
    kept = [n for n in found if n not in stated] or found
    details: dict[str, Any] = {"gold": [str(g) for g in gold],
                               "candidates": [str(n) for n in found]}
    if len(kept) < len(found):
        details["set_aside"] = sorted({str(n) for n in found if n in stated})
    committed, how = commit(prediction, _numbers_in, lambda a, b: a == b, sorted(stated))
    details.update(how)
    if committed is None:
        return False, {**details, "parsed": None}
    details["parsed"] = str(committed)
    tolerance = _game(question).get("tolerance")
    if question.answer_type == AnswerType.NUMBER and isinstance(tolerance, int | float):
        tol = Decimal(str(tolerance))
        details["tolerance"] = float(tolerance)
        return any(abs(committed - g) <= tol for g in gold), details
    return any(committed == g for g in gold), details


# --- strings and actions -----------------------------------------------------------------

_CLAUSE = re.compile(r"(?<!\d)\.(?!\d)|[,;:!?\n()\"“”]")


def _named(gold: list[str], clause: list[str], after_ok: frozenset[str]) -> bool:
    """``gold`` occurs in one clause of the reply as a whole name: preceded by the clause's
    start or a framing word, followed by its end or a word of ``after_ok``."""
    n = len(gold)
    for i in range(len(clause) - n + 1):
        if clause[i : i + n] != gold:
            continue
        before = clause[i - 1] if i else None
        after = clause[i + n] if i + n < len(clause) else None
        if (before is None or before in _FRAME) and (after is None or after in after_ok):
            return True
    return False


def _score_string(prediction: str, golds: Sequence[Any],
                  canon: Callable[[str], list[str]] = _tokens,
                  after_ok: frozenset[str] = _FRAME,
                  question: Question | None = None) -> tuple[bool, dict[str, Any]]:
    """Equal to a gold value, or naming one in a reply short enough to be an answer
    (design 0038); a reply naming several values of the answer's kind, or offering
    alternatives ("kitchen or hallway"), without stating one, is hedged."""
    said = canon(prediction)
    gold = [g for g in (canon(_flat(v)) for v in golds) if g]
    details: dict[str, Any] = {"gold": [" ".join(g) for g in gold], "parsed": " ".join(said)}
    if said in gold:
        return bool(said), details
    reply = prediction
    hedge = _string_hedge(prediction, gold, question)
    if hedge is not None:
        stated = stated_answer(prediction)
        if stated is None or is_hedge(stated) or _string_hedge(stated, gold, question):
            return False, {**details, "label": HEDGED, "candidates": hedge}
        reply = stated
    if not containment_allowed(len(canon(reply)), max((len(g) for g in gold), default=0)):
        stated = stated_answer(prediction)
        if stated is None:
            return False, {**details, "too_long": True}
        reply = stated
    clauses = [c for part in _CLAUSE.split(reply) if (c := canon(part))]
    ok = any(_named(g, c, after_ok) for g in gold for c in clauses)
    return ok, details


def _string_hedge(reply: str, gold: Sequence[list[str]],
                  question: Question | None) -> list[str] | None:
    """The candidates a reply hedges between, or None: two or more Crafter names of the
    answer's kind (those the question states set aside), or alternatives joined by "or"."""
    if question is not None and _is_crafter(question, [" ".join(g) for g in gold]) \
            and any(" ".join(g) in CRAFTER_NAMES for g in gold):
        named = [n for n in _crafter_names(reply) if n not in _crafter_names(question.text)]
        unique = list(dict.fromkeys(named))
        return unique if len(unique) > 1 else None
    parts = [p for p in re.split(r"\bor\b|,|;|/", _canon(reply)) if p.strip()]
    if re.search(r"\bor\b", _canon(reply)) and len(parts) > 1:
        return [p.strip() for p in parts]
    return None


def _crafter_names(text: str) -> list[str]:
    """Crafter's material, creature and item names in ``text``, in order (longest first at
    a position: "stone pickaxe" is one name, not "stone")."""
    s = " " + " ".join(_singular(w) for w in _tokens(text)) + " "
    hits: list[tuple[int, int, str]] = []
    for name in sorted(CRAFTER_NAMES, key=len, reverse=True):
        for m in re.finditer(rf"(?<= ){re.escape(name)}(?= )", s):
            if not any(a <= m.start() < b for a, b, _ in hits):
                hits.append((m.start(), m.end(), name))
    return [n for _, _, n in sorted(hits)]


def _crafter_actions(text: str) -> list[str]:
    """Crafter action names in ``text``, in order; "moved/moving/go/went <dir>" count as
    moves, and a bare direction counts only when no action is named."""
    s = " " + " ".join(_tokens(text)) + " "
    hits: list[tuple[int, str]] = []
    for action in sorted(CRAFTER_ACTIONS, key=len, reverse=True):
        words = action.replace("_", " ")
        for m in re.finditer(rf"(?<= ){re.escape(words)}(?= )", s):
            if not any(a <= m.start() < a + len(b.replace("_", " ")) for a, b in hits):
                hits.append((m.start(), action))
    for m in re.finditer(r"(?<= )no op(?= )", s):  # "no-op"
        hits.append((m.start(), "noop"))
    for m in re.finditer(r"(?<= )(?:move|moved|moving|moves|go|goes|going|went|walked|walk)"
                         r"(?: to)?(?: the)? (left|right|up|down|west|east|north|south)(?= )", s):
        hits.append((m.start(), "move_" + _CRAFTER_DIRECTIONS[m[1]]))
    if not hits:
        for m in re.finditer(r"(?<= )(left|right|up|down|west|east|north|south)(?= )", s):
            hits.append((m.start(), "move_" + _CRAFTER_DIRECTIONS[m[1]]))
    return [a for _, a in sorted(hits)]


def _text_action(text: str) -> list[str]:
    words = [_TEXT_DIRECTIONS.get(w, w) if len(w) <= 2 or w in _TEXT_DIRECTIONS else w
             for w in _tokens(text)]
    if len(words) == 2 and words[0] in ("go", "walk", "move") and words[1] in _TEXT_DIRECTIONS:
        words = words[1:]
    return words


def _score_action(question: Question, prediction: str,
                  golds: Sequence[Any]) -> tuple[bool, dict[str, Any]]:
    if not _is_crafter(question, golds):
        # a command ends its clause: "take key" is not named by "take key from box"
        ok, details = _score_string(prediction, golds, _text_action, frozenset())
        named = {w for w in _text_action(prediction) if w in _TEXT_DIRECTIONS.values()}
        if len(named) > 1:
            return False, {**details, "ambiguous": sorted(named), "label": HEDGED}
        return ok, details
    gold = [found[0] for g in golds if (found := _crafter_actions(_flat(g)))]
    found = _crafter_actions(prediction)
    details: dict[str, Any] = {"gold": gold, "candidates": found}
    if len(set(found)) > 1:
        stated = stated_answer(prediction)
        in_stated = _crafter_actions(stated) if stated and not is_hedge(stated) else []
        if len(set(in_stated)) != 1:
            return False, {**details, "parsed": None, "ambiguous": sorted(set(found)),
                           "label": HEDGED}
        found = in_stated
    details["parsed"] = found[0] if found else None
    return bool(found) and found[0] in gold, details


# --- directions --------------------------------------------------------------------------

def _directions(text: str, crafter: bool) -> tuple[frozenset[str] | None, str | None]:
    """The set of unit directions named, or (None, why) when there is none or it is
    ambiguous."""
    words = _tokens(text)
    if crafter:
        found: set[str] = set()
        for w in words:
            if w in _CRAFTER_DIRECTIONS:
                found.add(_CRAFTER_DIRECTIONS[w])
            elif w in _CRAFTER_COMPOUND:
                found.update(_CRAFTER_COMPOUND[w])
        if not found:
            return (frozenset(), None) if any(w in _HERE for w in words) else (None, None)
        if any(_OPPOSITE[d] in found for d in found):
            return None, "opposite directions"
        return frozenset(found), None
    named: list[str] = []
    for i, w in enumerate(words):
        if w in _TEXT_DIRECTIONS and (len(w) > 2 or len(words) == 1):
            d = _TEXT_DIRECTIONS[w]
            # "north east" / "north-east" is one compass point
            if named and named[-1] in ("north", "south") and d in ("east", "west") \
                    and words[i - 1] in ("north", "south"):
                named[-1] += d
                continue
            named.append(d)
    if not named:
        return None, None
    if len(set(named)) > 1:
        return None, "different directions"
    return frozenset(named[:1]), None


def _score_direction(question: Question, prediction: str,
                     golds: Sequence[Any]) -> tuple[bool, dict[str, Any]]:
    crafter = _is_crafter(question, golds)
    gold = [d for g in golds if (d := _directions(_flat(g), crafter)[0]) is not None]
    parsed, why = _directions(prediction, crafter)
    details: dict[str, Any] = {"gold": ["-".join(sorted(g)) or "here" for g in gold],
                               "parsed": None if parsed is None
                               else ("-".join(sorted(parsed)) or "here")}
    if why:
        details["ambiguous"] = why
        details["label"] = HEDGED
    return parsed is not None and parsed in gold, details


# --- lists and sets ----------------------------------------------------------------------

def _items(value: Any, reply: bool = False) -> list[str]:
    """Items of a list answer: a list as given, a "['a', 'b']" literal, or text split on
    separators, after any lead-in when it is the model's reply ("I had 2 wood and 1
    sapling")."""
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("["):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            return [str(v) for v in parsed]
    text = text.rstrip(".!")
    lowered = text.lower()
    if reply and (m := _LEAD_IN.match(lowered)) and m.end() < len(text):
        text = text[m.end():]
    return [p for p in _ITEM_SPLIT.split(text) if _canon(p)]


def _list_value(value: Any, name: Callable[[str], list[str]], reply: bool = False) -> list[str]:
    if not isinstance(value, list | tuple) and _EMPTY_SET.fullmatch(_canon(str(value))):
        return []
    items = _items(value, reply)
    if len(items) == 1 and _EMPTY_SET.fullmatch(_canon(items[0])):
        return []
    return [" ".join(name(i)) for i in items]


def _score_list(question: Question, prediction: str,
                golds: Sequence[Any]) -> tuple[bool, dict[str, Any]]:
    name = _item_name(question, golds)
    gold = [_list_value(g, name) for g in golds]
    said = _list_value(prediction, name, reply=True) if prediction.strip() else None
    return said is not None and said in gold, {"gold": gold, "parsed": said}


def _item_name(question: Question, golds: Sequence[Any]) -> Callable[[str], list[str]]:
    """How an item's name is canonicalised: text-game commands with their directions
    expanded ("n" = "go north" = "north"), anything else as canonical text."""
    return _tokens if _is_crafter(question, golds) else _text_action


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") \
        else word


def _set_item(item: str, name_of: Callable[[str], list[str]] = _tokens) -> tuple[str, int | None]:
    """ "wood: 2" / "2 wood" / "wood x2" / "two saplings" -> (name, count); a bare number
    ("12", a step) is a name."""
    words = name_of(item.replace("×", " x "))
    if len(words) == 1 and words[0].isdecimal():
        return words[0], None
    count: int | None = None
    name: list[str] = []
    for w in words:
        if count is None and (w.isdecimal() or w in _NUMBER_WORDS):
            count = int(w) if w.isdecimal() else _NUMBER_WORDS[w]
        elif re.fullmatch(r"x\d+", w) and count is None:
            count = int(w[1:])
        elif w != "x":
            name.append(_singular(w))
    return " ".join(name), count


def _set_value(value: Any, name_of: Callable[[str], list[str]] = _tokens,
               reply: bool = False) -> dict[str, int | None] | None:
    if isinstance(value, dict):
        return {" ".join(_singular(w) for w in _tokens(str(k))): int(v) for k, v in value.items()}
    if isinstance(value, list | tuple) and not value:
        return {}
    if not isinstance(value, list | tuple):
        text = str(value).strip()
        if _EMPTY_SET.fullmatch(_canon(text)) or re.fullmatch(r"\[\s*\]|\{\s*\}", text):
            return {}
    items = _items(value, reply)
    if len(items) == 1 and _EMPTY_SET.fullmatch(_canon(items[0])):  # "The answer is none."
        return {}
    out: dict[str, int | None] = {}
    for item in items:
        name, count = _set_item(item, name_of)
        if not name:
            continue
        if name in out and out[name] is not None and count is not None:
            count += out[name]  # type: ignore[operator]
        out[name] = count
    return out if out else None


def _set_equal(gold: dict[str, int | None], said: dict[str, int | None]) -> bool:
    if set(gold) != set(said):
        return False
    return all(g is None or said[k] == g for k, g in gold.items())


def _score_set(question: Question, prediction: str,
               golds: Sequence[Any]) -> tuple[bool, dict[str, Any]]:
    name_of = _item_name(question, golds)
    gold = [s for g in golds if (s := _set_value(g, name_of)) is not None]
    if any(gold) and all(k.isdecimal() and v is None for g in gold for k, v in g.items()):
        # a set of numbers (steps): every whole number the reply states ("at steps 12 and 30")
        found = [n for n in _numbers_in(prediction) if n == n.to_integral_value()]
        said: dict[str, int | None] | None = {str(int(n)): None for n in found} or (
            {} if _EMPTY_SET.fullmatch(_canon(prediction)) else None)
    else:
        said = _set_value(prediction, name_of, reply=True) if prediction.strip() else None
    details = {"gold": gold, "parsed": said}
    return said is not None and any(_set_equal(g, said) for g in gold), details


# --- paths -------------------------------------------------------------------------------

_PATH_TOKEN = re.compile(r"\d+|[a-z]+|[×*]")


# Words that may sit between a count and its direction ("3 steps to the left", "move 2 up").
_PATH_FILLER = frozenset({"step", "steps", "tile", "tiles", "cell", "cells", "square",
                          "squares", "space", "spaces", "to", "the", "move", "go", "walk",
                          "head", "and", "then", "by", "of"})
_REPEATS = frozenset({"once", "twice", "thrice"})


def _count(word: str) -> int | None:
    if word.isdecimal():
        return int(word)
    return _NUMBER_WORDS.get(word) if word not in _REPEATS else None


def _path(text: str, crafter: bool) -> list[str] | None:
    """The unit moves of a path, in order; [] for "here"/"0"; None when nothing reads as a
    path. A number right after "step" is a step index, not a count ("at step 139, move
    right"); a count is forgotten when another word comes before its direction."""
    table = _CRAFTER_DIRECTIONS if crafter else _TEXT_DIRECTIONS
    words = _PATH_TOKEN.findall(text.lower().replace("_", " ").replace("-", " "))
    moves: list[str] = []
    pending: int | None = None
    i = 0
    while i < len(words):
        w, prev = words[i], words[i - 1] if i else ""
        if (n := _count(w)) is not None:
            pending = None if prev in ("step", "turn") else n
        elif w in table and (crafter or len(w) > 2 or len(words) <= 8):
            count = pending if pending is not None else 1
            pending = None
            nxt = words[i + 1 : i + 3]
            if nxt[:1] and nxt[0] in ("x", "×", "*") and nxt[1:] and nxt[1].isdecimal():
                count, i = int(nxt[1]), i + 2
            elif nxt[:1] and nxt[0] in _REPEATS:
                count, i = _NUMBER_WORDS[nxt[0]], i + 1
            elif len(nxt) == 2 and _count(nxt[0]) is not None and nxt[1] == "times":
                count, i = _count(nxt[0]) or 0, i + 2
            moves += [table[w]] * count
        elif w not in _PATH_FILLER:
            pending = None
        i += 1
    if moves:
        return moves
    return [] if any(w in _HERE for w in words) or _canon(text) in ("", "0") else None


def _score_path(question: Question, prediction: str,
                golds: Sequence[Any]) -> tuple[bool, dict[str, Any]]:
    crafter = _is_crafter(question, golds)
    gold = [p for g in golds if (p := _path(_flat(g), crafter)) is not None]
    said = _path(prediction, crafter)
    return said is not None and said in gold, {"gold": [" ".join(p) for p in gold],
                                               "parsed": None if said is None
                                               else " ".join(said)}


def score_game(question: Question, prediction: str) -> tuple[bool, dict[str, Any]] | None:
    """The verdict and what was extracted, for game answer types and for integer/number
    questions of a game; None for anything else (the typed rule scorer decides)."""
    kind = question.answer_type
    golds = gold_values(question)
    if kind in (AnswerType.INTEGER, AnswerType.NUMBER) and _game(question):
        return _score_number(question, prediction, golds)
    scorers: dict[AnswerType, Callable[[], tuple[bool, dict[str, Any]]]] = {
        AnswerType.STRING: lambda: _score_string(prediction, golds, question=question),
        AnswerType.ACTION: lambda: _score_action(question, prediction, golds),
        AnswerType.DIRECTION: lambda: _score_direction(question, prediction, golds),
        AnswerType.LIST: lambda: _score_list(question, prediction, golds),
        AnswerType.SET: lambda: _score_set(question, prediction, golds),
        AnswerType.PATH: lambda: _score_path(question, prediction, golds),
    }
    run = scorers.get(kind)
    if run is None:
        return None
    if kind in _ONE_VALUE and (offered := _alternatives(prediction)) is not None:
        return False, {"gold": [_flat(g) for g in golds], "parsed": None, "label": HEDGED,
                       "candidates": offered}
    return run()


def _alternatives(reply: str) -> list[str] | None:
    """The alternatives a list, set or path reply offers ("2 left or 3 up") when it states
    none of them as its answer; None for a reply that commits."""
    stated = stated_answer(reply)
    text = reply if stated is None or is_hedge(stated) else stated
    parts = [p.strip() for p in re.split(r"\bor\b", text, flags=re.IGNORECASE)]
    offered = [p for p in parts if _canon(p)]
    return offered if len(offered) > 1 else None


__all__ = ["CRAFTER_ACTIONS", "gold_values", "score_game"]
