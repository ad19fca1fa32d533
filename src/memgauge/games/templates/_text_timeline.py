"""What a text-game player did and saw, indexed for templates (design 0032, "Text-game
templates").

    tl = TextTimeline(meta, steps)          # steps already cut at the horizon
    tl.room_before(3), tl.room_after(3)     # before: step 2's room (or the reset room at t = 1)
    tl.obs_before(3) == tl.obs_after(2)     # one rule, no off-by-one
    tl.shortest_paths("Kitchen", "Study", known_by=5)   # only edges traversed by step 5

Every per-step accessor takes a step number in ``[1, last_step]``; "before" is always the
previous step's "after" (``meta.initial`` at t = 1).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from .._trajectory import Step, TrajectoryMeta
from ._base import _TEMPLATES, NOT_ANSWERABLE, GameQuestion

# Every spelling of a move a parser accepts, to one name; anything else is not a move.
_DIRECTIONS = {
    "n": "north", "s": "south", "e": "east", "w": "west",
    "ne": "northeast", "nw": "northwest", "se": "southeast", "sw": "southwest",
    "u": "up", "d": "down", "in": "in", "inside": "in", "enter": "in",
    "out": "out", "outside": "out", "exit": "out",
    "north": "north", "south": "south", "east": "east", "west": "west",
    "northeast": "northeast", "northwest": "northwest", "southeast": "southeast",
    "southwest": "southwest", "up": "up", "down": "down",
    "north-east": "northeast", "north-west": "northwest", "south-east": "southeast",
    "south-west": "southwest",
}
MAX_SHORTEST_PATHS = 50  # more tied shortest paths than this: the instance is skipped
_FACT = re.compile(r"^\s*[\w-]+\((.*)\)\s*$")
_TYPED_ARG = re.compile(r"^(.+?):\s*([\w-]+)$")
ROOM_KINDS = frozenset({"r"})  # TextWorld's type letters
ITEM_KINDS = frozenset({"o", "k", "f"})  # portable things: object, key, food
OTHER_KINDS = frozenset({"c", "s", "d"})  # containers, supporters, doors
MIN_KEYWORDS = 8  # fewer names than this in the texts: frequent words are added


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def canonical_direction(command: str) -> str | None:
    """``n``, ``go north``, ``North`` -> ``north``; a command that is not a move -> None."""
    words = normalise(command).split()
    if len(words) == 2 and words[0] in ("go", "walk", "run"):
        words = words[1:]
    return _DIRECTIONS.get(words[0]) if len(words) == 1 else None


def canonical_command(command: str) -> str:
    """One spelling per command: case and spaces folded, moves named in full."""
    return canonical_direction(command) or normalise(command)


def mentions(text: str, term: str) -> bool:
    """Whole-word, case-insensitive: "n" is not in "open mailbox", "key" is not in "keyhole"."""
    if not term.strip():
        return False
    pattern = r"(?<![\w])" + r"\s+".join(map(re.escape, term.lower().split())) + r"(?![\w])"
    return re.search(pattern, text.lower()) is not None


def fact_entities(facts: list[str]) -> list[tuple[str, str]]:
    """``at(P, attic: r)`` -> ``[("attic", "r")]``: the typed arguments of TextWorld facts."""
    out = []
    for fact in facts:
        match = _FACT.match(fact)
        if not match:
            continue
        for arg in match.group(1).split(","):
            typed = _TYPED_ARG.match(arg.strip())
            if typed:
                out.append((typed.group(1).strip(), typed.group(2)))
    return out


def _memo(method: Callable[..., Any]) -> Callable[..., Any]:
    """Remember a method's result on the instance: a timeline never changes once built, and
    templates ask the same things many times. Callers must not mutate what they get."""

    @wraps(method)
    def remembered(self: Any, *args: Any) -> Any:
        memo = self.__dict__.setdefault("_memo", {})
        key = (method.__name__, *args)
        if key not in memo:
            memo[key] = method(self, *args)
        return memo[key]

    return remembered


@dataclass(frozen=True)
class Edge:
    src: str
    direction: str
    dst: str
    first_step: int  # the step whose action first took this exit


class TextTimeline:
    """Per-step arrays, events and the map as known at each step, over steps 1..last_step."""

    def __init__(self, meta: TrajectoryMeta, steps: list[Step]) -> None:
        self.meta = meta
        self.steps = list(steps)
        self.last_step = len(self.steps)
        initial = meta.initial or {}
        self._room0: str | None = initial.get("room")
        inv0, score0 = initial.get("inventory"), initial.get("score")
        self._inv0: list[str] | None = list(inv0) if isinstance(inv0, list) else None
        self._score0: float | None = float(score0) if isinstance(score0, int | float) else None
        self._obs0: str = (initial.get("observation") or "").strip()
        self.edges: list[Edge] = []
        seen_edges: set[tuple[str, str, str]] = set()
        for t in self.step_range():
            src, dst, move = self.room_before(t), self.room_after(t), self.direction(t)
            if move and src and dst and src != dst and (src, move, dst) not in seen_edges:
                seen_edges.add((src, move, dst))
                self.edges.append(Edge(src, move, dst, t))

    # --- the horizon and the question helper -------------------------------------------
    @property
    def horizon(self) -> tuple[int, int]:
        return 1, self.last_step

    def step_range(self) -> list[int]:
        return list(range(1, self.last_step + 1))

    def question(self, template_id: str, *, params: dict[str, Any], answer: Any, text: str,
                 evidence_steps: list[int], alternatives: list[Any] | None = None,
                 tolerance: float | None = None) -> GameQuestion:
        """An answerable question; ability and answer type come from the registration."""
        reg = _TEMPLATES[template_id]
        return GameQuestion(template_id, params, reg.ability, reg.answer_type, answer,
                            sorted(set(evidence_steps)), self.horizon, text,
                            alternatives=list(alternatives or []), tolerance=tolerance)

    def unanswerable(self, template_id: str, *, params: dict[str, Any], text: str,
                     evidence_steps: list[int] | None = None) -> GameQuestion:
        reg = _TEMPLATES[template_id]
        return GameQuestion(template_id, params, reg.ability, reg.answer_type, NOT_ANSWERABLE,
                            sorted(set(evidence_steps or [])), self.horizon, text,
                            answerable=False)

    # --- per step ------------------------------------------------------------------------
    def _step(self, t: int) -> Step:
        if not 1 <= t <= self.last_step:
            raise IndexError(f"step {t} is outside [1, {self.last_step}]")
        return self.steps[t - 1]

    def action(self, t: int) -> str:
        return self._step(t).action

    def command(self, t: int) -> str:
        return canonical_command(self._step(t).action)

    def direction(self, t: int) -> str | None:
        return canonical_direction(self._step(t).action)

    def success(self, t: int) -> bool | None:
        return self._step(t).success

    def room_after(self, t: int) -> str | None:
        return self._step(t).room

    def room_before(self, t: int) -> str | None:
        return self._room0 if t == 1 else self.room_after(t - 1)

    # None where the env could not read it (Jericho without bindings): unknown, never empty
    def inventory_after(self, t: int) -> list[str] | None:
        inv = self._step(t).inventory
        return None if inv is None else list(inv)

    def inventory_before(self, t: int) -> list[str] | None:
        return self._inv0 if t == 1 else self.inventory_after(t - 1)

    def score_after(self, t: int) -> float | None:
        score = self._step(t).score
        return None if score is None else float(score)

    def score_before(self, t: int) -> float | None:
        return self._score0 if t == 1 else self.score_after(t - 1)

    def moves_after(self, t: int) -> int | None:
        return self._step(t).moves

    def obs_after(self, t: int) -> str:
        return self._step(t).observation.strip()  # games pad their replies with newlines

    def obs_before(self, t: int) -> str:
        return self._obs0 if t == 1 else self.obs_after(t - 1)

    # --- events --------------------------------------------------------------------------
    @_memo
    def fully_known(self, field: str) -> bool:
        """Every state of the window, the reset included, has the field. Events over a field
        (entries, gains, score rises) and totals are only counted then: an unknown step could
        hide the first entry or the extra item."""
        return (self.meta.initial or {}).get(field) is not None and \
            all(getattr(s, field) is not None for s in self.steps)

    @_memo
    def entries(self) -> list[tuple[int, str]]:
        """(step, room): the action of that step took you into the room."""
        if not self.fully_known("room"):
            return []
        return [(t, room) for t in self.step_range()
                if (room := self.room_after(t)) and room != self.room_before(t)]

    @_memo
    def exits(self) -> list[tuple[int, str]]:
        """(step, room): the action of that step took you out of the room."""
        if not self.fully_known("room"):
            return []
        return [(t, room) for t in self.step_range()
                if (room := self.room_before(t)) and self.room_after(t)
                and self.room_after(t) != room]

    @_memo
    def gains(self) -> list[tuple[int, str]]:
        return [(t, item) for t, before, after in self._inventory_pairs() for item in after
                if item not in before]

    @_memo
    def losses(self) -> list[tuple[int, str]]:
        return [(t, item) for t, before, after in self._inventory_pairs() for item in before
                if item not in after]

    def _inventory_pairs(self) -> list[tuple[int, list[str], list[str]]]:
        """(step, before, after) for every step, where every inventory is known."""
        if not self.fully_known("inventory"):
            return []
        return [(t, b, a) for t in self.step_range()
                if (b := self.inventory_before(t)) is not None
                and (a := self.inventory_after(t)) is not None]

    @_memo
    def score_increases(self) -> list[int]:
        if not self.fully_known("score"):
            return []
        return [t for t in self.step_range() if (a := self.score_after(t)) is not None
                and (b := self.score_before(t)) is not None and a > b]

    @_memo
    def rooms_visited(self) -> list[str]:
        """Every room you were in, in order of first visit (the reset room first)."""
        rooms = [self._room0] + [self.room_after(t) for t in self.step_range()]
        return list(dict.fromkeys(r for r in rooms if r))

    def visits(self) -> Counter[str]:
        """Times you came to each room (being there at reset counts as one)."""
        if not self.fully_known("room"):
            return Counter()
        counts: Counter[str] = Counter(room for _, room in self.entries())
        if self._room0:
            counts[self._room0] += 1
        return counts

    def dwell(self) -> Counter[str]:
        """Steps after whose action you were in each room."""
        if not self.fully_known("room"):
            return Counter()
        return Counter(r for t in self.step_range() if (r := self.room_after(t)))

    @_memo
    def items_held(self) -> list[str]:
        """Every item you carried at some point in the window, in order of first holding."""
        names = list(self._inv0 or []) + [i for t in self.step_range()
                                          for i in self.inventory_after(t) or []]
        return list(dict.fromkeys(names))

    @_memo
    def observations(self) -> list[str]:
        """Every text the player was shown in the window (the reset text first)."""
        return [self._obs0] + [self.obs_after(t) for t in self.step_range()]

    # --- the map as known at a step ------------------------------------------------------
    @_memo
    def known_edges(self, known_by: int) -> list[Edge]:
        return [e for e in self.edges if e.first_step <= known_by]

    @_memo
    def neighbours(self, known_by: int) -> dict[str, list[Edge]]:
        adj: dict[str, list[Edge]] = {}
        for edge in self.known_edges(known_by):
            adj.setdefault(edge.src, []).append(edge)
        return adj

    @_memo
    def distances(self, src: str, known_by: int) -> dict[str, int]:
        adj, dist = self.neighbours(known_by), {src: 0}
        queue = deque([src])
        while queue:
            room = queue.popleft()
            for edge in adj.get(room, []):
                if edge.dst not in dist:
                    dist[edge.dst] = dist[room] + 1
                    queue.append(edge.dst)
        return dist

    def shortest_paths(self, src: str, dst: str, known_by: int) -> list[list[str]] | None:
        """Every shortest move sequence from src to dst on the map known by that step, sorted;
        [] when dst is not reachable, None when there are more than MAX_SHORTEST_PATHS."""
        ahead = self.distances(src, known_by)
        if dst not in ahead:
            return []
        behind = self._distances_to(dst, known_by)
        adj = self.neighbours(known_by)
        paths: set[tuple[str, ...]] = set()
        stack: list[tuple[str, tuple[str, ...]]] = [(src, ())]
        while stack:
            room, moves = stack.pop()
            if room == dst:
                paths.add(moves)
                if len(paths) > MAX_SHORTEST_PATHS:
                    return None
                continue
            for edge in adj.get(room, []):
                if behind.get(edge.dst) == behind[room] - 1:
                    stack.append((edge.dst, moves + (edge.direction,)))
        return [list(p) for p in sorted(paths)]

    def _distances_to(self, dst: str, known_by: int) -> dict[str, int]:
        into: dict[str, list[str]] = {}
        for edge in self.known_edges(known_by):
            into.setdefault(edge.dst, []).append(edge.src)
        dist, queue = {dst: 0}, deque([dst])
        while queue:
            room = queue.popleft()
            for src in into.get(room, []):
                if src not in dist:
                    dist[src] = dist[room] + 1
                    queue.append(src)
        return dist

    def exits_known(self, room: str, known_by: int) -> list[str]:
        return sorted({e.direction for e in self.neighbours(known_by).get(room, [])})

    def follow(self, room: str, moves: list[str], known_by: int) -> str | None:
        """Where the moves lead on the known map; None where an exit is unknown or ambiguous."""
        adj = self.neighbours(known_by)
        for move in moves:
            targets = {e.dst for e in adj.get(room, []) if e.direction == move}
            if len(targets) != 1:
                return None
            room = targets.pop()
        return room

    # --- confusables ---------------------------------------------------------------------
    @_memo
    def world_entities(self, kind: str) -> list[str]:
        """Names of rooms (``kind="room"``) or items the game itself holds in the window:
        TextWorld's typed facts, or Jericho's object tree (``objects``: ``[num, name,
        parent]`` rows, changes folded in step order)."""
        kinds = {"room": ROOM_KINDS, "item": ITEM_KINDS}.get(kind, OTHER_KINDS)
        states: list[dict[str, Any]] = [self.meta.initial or {}]
        states += [{"facts": s.facts, "objects": (s.model_extra or {}).get("objects"),
                    "inventory": s.inventory} for s in self.steps]
        names: list[str] = []
        tree: dict[int, tuple[str, int]] = {}
        player: set[int] = set()  # whatever held the inventory
        for state in states:
            names += [n for n, k in fact_entities(state.get("facts") or []) if k in kinds]
            for row in state.get("objects") or []:
                if isinstance(row, list) and len(row) == 3 and isinstance(row[1], str) \
                        and isinstance(row[0], int) and isinstance(row[2], int):
                    tree[int(row[0])] = (row[1], int(row[2]))
            held = set(state.get("inventory") or [])
            player |= {parent for name, parent in tree.values() if name in held}
        tree_names = _tree_names(tree, self.rooms_visited(), player, kind)
        return list(dict.fromkeys(names + tree_names))

    @_memo
    def appeared(self, name: str) -> bool:
        """The name was in something the player saw or held in the window."""
        held = {normalise(x) for x in self.items_held()} | {normalise(r)
                                                             for r in self.rooms_visited()}
        if normalise(name) in held:
            return True
        return any(mentions(text, name) for text in self.observations())

    # --- keywords ------------------------------------------------------------------------
    @_memo
    def texts(self, source: str) -> dict[int, str]:
        """Step -> the game's reply to that step's action (``source`` "observation", the
        only text source: a player's stated reason is never shown, design 0039); steps
        without one are left out."""
        if source != "observation":
            raise ValueError(f"unknown text source {source!r}")
        return {t: self.obs_after(t) for t in self.step_range() if self.obs_after(t)}

    @_memo
    def keywords(self, source: str) -> list[str]:
        """Words worth asking about: the names of things and places (the world's entities,
        what you held, where you were) that the texts mention; where fewer than
        MIN_KEYWORDS are, also words of 4+ letters (not function words) that two texts
        share. Sorted, so a seed picks the same."""
        texts = list(self.texts(source).values())
        names = set(self.items_held()) | set(self.rooms_visited()) | set(self.entity_names())
        words = {n for n in names if any(mentions(text, n) for text in texts)}
        if len(words) < MIN_KEYWORDS:
            df: Counter[str] = Counter()
            for text in texts:
                df.update(set(_WORD.findall(text.lower())))
            words |= {w for w, n in df.items() if n >= 2 and len(w) >= 4 and w not in _STOP}
        return sorted(words)

    @_memo
    def entity_names(self) -> list[str]:
        """Every typed entity of the window's TextWorld facts and every named object of
        Jericho's tree (rooms and items alike)."""
        return list(dict.fromkeys(self.world_entities("room") + self.world_entities("item") +
                                  self.world_entities("other")))

    @_memo
    def steps_mentioning(self, source: str, term: str) -> list[int]:
        return [t for t, text in self.texts(source).items() if mentions(text, term)]


_WORD = re.compile(r"[a-z][a-z'-]*[a-z]")
_STOP = frozenset((
    "about", "above", "after", "again", "against", "also", "along", "another", "around", "away",
    "back", "because", "been", "before", "behind", "being", "below", "beneath", "between",
    "both", "cannot", "could", "does", "doing", "down", "each", "either", "else", "even",
    "every", "from", "further", "have", "having", "here", "into", "itself", "just", "like",
    "little", "many", "more", "most", "much", "must", "nothing", "only", "onto", "other",
    "over", "same", "seems", "should", "since", "some", "something", "such", "than", "that",
    "their", "them", "then", "there", "these", "they", "this", "those", "through", "under",
    "until", "upon", "very", "want", "well", "were", "what", "when", "where", "which", "while",
    "will", "with", "within", "without", "would", "your", "yours", "you're", "there's", "it's",
    "can't", "don't", "isn't"
))


def _tree_names(tree: dict[int, tuple[str, int]], rooms: list[str], player: set[int],
                kind: str) -> list[str]:
    """Rooms or items of a Z-machine object tree. Rooms are the objects that share a parent
    with a room the player was in (the games keep their rooms under one object); items are
    the other objects inside something, less the holder of the player's items (the player)."""
    room_parents = {parent for name, parent in tree.values() if name in rooms}
    room_nums = {num for num, (_, parent) in tree.items() if parent in room_parents}
    if kind == "room":
        return sorted({tree[n][0] for n in room_nums})
    return sorted({name for num, (name, parent) in tree.items()
                   if parent and num not in room_nums | room_parents | player})


# --- small helpers the text templates share ------------------------------------------------
ORDINALS = ("first", "second", "last", "second_last")
ORDINAL_WORDS = {"first": "first", "second": "second", "last": "last",
                 "second_last": "second-to-last"}


def pick_ordinal(hits: list[int], ordinal: str) -> int | None:
    """The hit an ordinal names; None when there are too few (one hit has no "second")."""
    index = {"first": 0, "second": 1, "last": -1, "second_last": -2}[ordinal]
    needed = index + 1 if index >= 0 else -index
    return hits[index] if len(hits) >= needed else None


SAMPLE = 24  # candidates a template draws from one list (the generator caps further)


def shuffled(rng: Any, items: Any, limit: int = SAMPLE) -> list[Any]:
    """A seeded choice of at most ``limit`` of the items, in random order: a 200-step window
    would otherwise give every template hundreds of instances to build and then drop."""
    out = list(items)
    rng.shuffle(out)
    return out[:limit]


def whole_number(value: float | None) -> int | None:
    """An integer answer only where the value is one (9.6 is never asked as 9); None where
    the value is unknown."""
    return int(value) if value is not None and float(value).is_integer() else None

