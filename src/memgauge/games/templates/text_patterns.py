"""Text-game templates over the whole window: counts and modes (induction), the order of
events (temporal), and what the inventory held (logical, state updates). Design 0032,
"Text-game templates"."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

from ._base import GameQuestion, template
from ._text_timeline import TextTimeline, shuffled, whole_number
from .text_recall import SOURCE_PHRASE

Questions = Iterator[GameQuestion]
NOTHING = "nothing"  # an empty set answer may also be given as this word


def _ties(counts: Counter[str]) -> list[str]:
    top = max(counts.values())
    return sorted(k for k, n in counts.items() if n == top)


def _first_steps(events: list[tuple[int, str]]) -> dict[str, int]:
    first: dict[str, int] = {}
    for t, name in events:
        first.setdefault(name, t)
    return first


def _set_answer(items: list[str]) -> tuple[list[str], list[object]]:
    items = sorted(set(items))
    return items, ([] if items else [NOTHING])


# --- induction -----------------------------------------------------------------------------
@template("text.keyword_count", ability="induction", answer_type="integer", games=("text",))
def keyword_count(tl: TextTimeline, rng: random.Random) -> Questions:
    """How many steps' replies mention a word, whole-word matched."""
    for source, phrase in SOURCE_PHRASE.items():
        for word in shuffled(rng, tl.keywords(source)):
            hits = tl.steps_mentioning(source, word)
            yield tl.question("text.keyword_count", params={"source": source, "keyword": word},
                              answer=len(hits), evidence_steps=hits,
                              text=f"At how many steps did {phrase} mention "
                                   f"'{word}'?")


@template("text.action_mode", ability="induction", answer_type="set", games=("text",))
def action_mode(tl: TextTimeline, rng: random.Random) -> Questions:
    """The most frequent command (canonical spelling: "n" and "north" are one); ties are all
    part of the answer."""
    if tl.last_step:
        modes = _ties(Counter(tl.command(t) for t in tl.step_range()))
        yield tl.question("text.action_mode", params={}, answer=modes,
                          evidence_steps=[t for t in tl.step_range() if tl.command(t) in modes],
                          text="Which command did you enter most often? If several are tied, "
                               "name them all.")


@template("text.distinct_rooms", ability="induction", answer_type="integer", games=("text",))
def distinct_rooms(tl: TextTimeline, rng: random.Random) -> Questions:
    """How many different rooms you were in, the starting room included."""
    rooms = tl.rooms_visited()
    if tl.last_step and rooms and tl.fully_known("room"):
        yield tl.question("text.distinct_rooms", params={}, answer=len(rooms),
                          evidence_steps=[t for t, _ in tl.entries()],
                          text="How many different rooms were you in, counting the one you "
                               "started in?")


@template("text.most_visited_room", ability="induction", answer_type="set", games=("text",))
def most_visited_room(tl: TextTimeline, rng: random.Random) -> Questions:
    """The room you came to most often (starting there counts once); ties all count."""
    visits = tl.visits()
    if tl.last_step and visits:
        rooms = _ties(visits)
        yield tl.question("text.most_visited_room", params={}, answer=rooms,
                          evidence_steps=[t for t, r in tl.entries() if r in rooms],
                          text="Which room did you come to most often (starting in a room "
                               "counts as one visit)? If several are tied, name them all.")


@template("text.longest_dwell_room", ability="induction", answer_type="set", games=("text",))
def longest_dwell_room(tl: TextTimeline, rng: random.Random) -> Questions:
    """The room after whose actions you were most often, in total; ties all count."""
    dwell = tl.dwell()
    if dwell:
        rooms = _ties(dwell)
        yield tl.question("text.longest_dwell_room", params={}, answer=rooms,
                          evidence_steps=[t for t in tl.step_range() if tl.room_after(t) in rooms],
                          text="In which room did you spend the most steps in total? If several "
                               "are tied, name them all.")


# --- temporal ------------------------------------------------------------------------------
@template("text.room_order", ability="temporal", answer_type="yes_no", games=("text",))
def room_order(tl: TextTimeline, rng: random.Random) -> Questions:
    """Before first entering room A, had you been in room B (the starting room counts)?"""
    first = _first_steps(tl.entries())
    rooms = tl.rooms_visited()
    for a in shuffled(rng, [r for r in first if r != rooms[0]]):
        before = set(rooms[:1]) | {tl.room_after(t) for t in range(1, first[a])}
        for b in shuffled(rng, [r for r in rooms if r != a]):
            yield tl.question("text.room_order", params={"a": a, "b": b},
                              answer="yes" if b in before else "no",
                              evidence_steps=[first[a]] + ([first[b]] if b in first else []),
                              text=f"Before you first entered {a}, had you already been in "
                                   f"{b}?")


@template("text.gain_score_delay", ability="temporal", answer_type="integer", games=("text",))
def gain_score_delay(tl: TextTimeline, rng: random.Random) -> Questions:
    """Steps from the first gain of an item to the next rise of the score; not answerable
    when the score did not rise after it within the window."""
    rises = tl.score_increases()
    for item, g in shuffled(rng, _first_steps(tl.gains()).items()):
        later = [t for t in rises if t > g]
        params = {"item": item}
        text = (f"After the step at which {item} first joined your inventory, how many steps "
                f"later did your score next go up?")
        if later:
            yield tl.question("text.gain_score_delay", params=params, answer=later[0] - g,
                              text=text, evidence_steps=[g, later[0]])
        else:
            yield tl.unanswerable("text.gain_score_delay", params=params, text=text,
                                  evidence_steps=[g])


@template("text.region_stay", ability="temporal", answer_type="integer", games=("text",))
def region_stay(tl: TextTimeline, rng: random.Random) -> Questions:
    """Steps between first entering a room and next leaving it; not answerable when you had
    not left it yet."""
    exits = tl.exits()
    for room, e in shuffled(rng, _first_steps(tl.entries()).items()):
        left = [t for t, r in exits if r == room and t > e]
        params = {"room": room}
        text = f"After you first entered {room}, how many steps went by before you left it?"
        if left:
            yield tl.question("text.region_stay", params=params, answer=left[0] - e, text=text,
                              evidence_steps=[e, left[0]])
        else:
            yield tl.unanswerable("text.region_stay", params=params, text=text,
                                  evidence_steps=[e])


@template("text.item_order", ability="temporal", answer_type="yes_no", games=("text",))
def item_order(tl: TextTimeline, rng: random.Random) -> Questions:
    """Before first gaining item A, had you gained item B (both gained, at different steps)?"""
    first = _first_steps(tl.gains())
    for a in shuffled(rng, first):
        for b in shuffled(rng, [b for b in first if b != a and first[b] != first[a]]):
            yield tl.question("text.item_order", params={"a": a, "b": b},
                              answer="yes" if first[b] < first[a] else "no",
                              evidence_steps=[first[a], first[b]],
                              text=f"Before {a} first joined your inventory, had {b} already "
                                   f"joined it?")


@template("text.item_before_leave", ability="temporal", answer_type="yes_no", games=("text",))
def item_before_leave(tl: TextTimeline, rng: random.Random) -> Questions:
    """Before first gaining an item, had you ever left a given room you had been in?"""
    if not tl.fully_known("room"):
        return
    exits = tl.exits()
    for item, g in shuffled(rng, _first_steps(tl.gains()).items()):
        for room in shuffled(rng, tl.rooms_visited()):
            left = [t for t, r in exits if r == room and t < g]
            yield tl.question("text.item_before_leave", params={"item": item, "room": room},
                              answer="yes" if left else "no", evidence_steps=[g] + left[:1],
                              text=f"Before {item} first joined your inventory, had you ever "
                                   f"left {room}?")


@template("text.score_gain_since", ability="temporal", answer_type="integer", games=("text",))
def score_gain_since(tl: TextTimeline, rng: random.Random) -> Questions:
    """State update: how much the score rose from after step t to after the window's last
    step (named in the question, so "now" cannot be misread)."""
    end = tl.last_step
    for t in shuffled(rng, range(1, end)):
        now, then = tl.score_after(end), tl.score_after(t)
        gain = None if now is None or then is None else whole_number(now - then)
        if gain is not None:
            yield tl.question("text.score_gain_since", params={"step": t}, answer=gain,
                              evidence_steps=[t, end],
                              text=f"By how much did your score change from after your action "
                                   f"at step {t} to after your action at step {end}?")


# --- logical -------------------------------------------------------------------------------
@template("text.inventory_at_step", ability="logical", answer_type="set", games=("text",))
def inventory_at_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """Everything carried after the action at step t, as a set; empty is a valid answer."""
    for t in shuffled(rng, [t for t in tl.step_range() if tl.inventory_after(t) is not None]):
        answer, alternatives = _set_answer(tl.inventory_after(t) or [])
        yield tl.question("text.inventory_at_step", params={"step": t}, answer=answer,
                          alternatives=alternatives, evidence_steps=[t],
                          text=f"What were you carrying after your action at step {t}? "
                               f"Answer '{NOTHING}' if you carried nothing.")


@template("text.has_item", ability="logical", answer_type="yes_no", games=("text",))
def has_item(tl: TextTimeline, rng: random.Random) -> Questions:
    """Whether an item you held at some point was in the inventory after step t."""
    items = tl.items_held()
    for t in shuffled(rng, [t for t in tl.step_range() if tl.inventory_after(t) is not None]):
        for item in shuffled(rng, items)[:2]:
            yield tl.question("text.has_item", params={"step": t, "item": item},
                              answer="yes" if item in (tl.inventory_after(t) or []) else "no",
                              evidence_steps=[t],
                              text=f"After your action at step {t}, were you carrying {item}?")


@template("text.max_inventory_step", ability="logical", answer_type="integer", games=("text",))
def max_inventory_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """The first step after which the inventory held the most items (the question says
    "first", so later ties do not make it ambiguous)."""
    sizes = {t: len(set(inv)) for t in tl.step_range()
             if (inv := tl.inventory_after(t)) is not None}
    if sizes and len(sizes) == tl.last_step and max(sizes.values()) > 0:
        top = max(sizes.values())
        step = min(t for t, n in sizes.items() if n == top)
        yield tl.question("text.max_inventory_step", params={}, answer=step,
                          evidence_steps=[step],
                          text="After which step were you first carrying the most items at "
                               "once?")


@template("text.room_most_pickups", ability="logical", answer_type="set", games=("text",))
def room_most_pickups(tl: TextTimeline, rng: random.Random) -> Questions:
    """The room where most items joined the inventory (the room the action was taken in);
    ties all count."""
    gains = [(t, room) for t, _ in tl.gains() if (room := tl.room_before(t))]
    if gains and tl.fully_known("room"):
        rooms = _ties(Counter(r for _, r in gains))
        yield tl.question("text.room_most_pickups", params={}, answer=rooms,
                          evidence_steps=[t for t, r in gains if r in rooms],
                          text="In which room did the most items join your inventory? If "
                               "several are tied, name them all.")


@template("text.item_pickup_room", ability="logical", answer_type="string", games=("text",))
def item_pickup_room(tl: TextTimeline, rng: random.Random) -> Questions:
    """State update: the room you were in when an item first joined the inventory."""
    for item, g in shuffled(rng, _first_steps(tl.gains()).items()):
        if (room := tl.room_before(g)) is not None:
            yield tl.question("text.item_pickup_room", params={"item": item}, answer=room,
                              evidence_steps=[g],
                              text=f"In which room were you when {item} first joined your "
                                   f"inventory?")


@template("text.item_drop_room", ability="logical", answer_type="string", games=("text",))
def item_drop_room(tl: TextTimeline, rng: random.Random) -> Questions:
    """State update: the room you were in when an item last left the inventory."""
    last: dict[str, int] = {}
    for t, item in tl.losses():
        last[item] = t
    for item, t in shuffled(rng, last.items()):
        if (room := tl.room_before(t)) is not None:
            yield tl.question("text.item_drop_room", params={"item": item}, answer=room,
                              evidence_steps=[t],
                              text=f"In which room were you when {item} last left your "
                                   f"inventory?")


@template("text.inventory_change_since", ability="logical", answer_type="set", games=("text",))
def inventory_change_since(tl: TextTimeline, rng: random.Random) -> Questions:
    """State update: what you carried after step t and no longer carry after the last step
    (``lost``), or carry now and did not then (``gained``); empty is a valid answer."""
    end = tl.last_step
    known = [t for t in range(1, end) if tl.inventory_after(t) is not None]
    if end and tl.inventory_after(end) is None:
        known = []
    for t in shuffled(rng, known):
        then, now = set(tl.inventory_after(t) or []), set(tl.inventory_after(end) or [])
        for change in shuffled(rng, ("lost", "gained")):
            answer, alternatives = _set_answer(list(then - now if change == "lost"
                                                    else now - then))
            text = (f"Which items did you carry after your action at step {t} that you no "
                    f"longer carried after your action at step {end}?" if change == "lost" else
                    f"Which items did you carry after your action at step {end} that you did "
                    f"not carry after your action at step {t}?")
            yield tl.question("text.inventory_change_since",
                              params={"step": t, "change": change}, answer=answer,
                              alternatives=alternatives, evidence_steps=[t, end],
                              text=f"{text} Answer '{NOTHING}' if there are none.")
