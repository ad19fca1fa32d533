"""Crafter temporal, logical and adversarial templates: events, their order and the state
around them, what was possible, and questions about things that never appeared (design 0032).

An event is what the state says happened (a placement is a counter that rose, not a
``place_*`` attempt; sleep is the ``sleeping`` flag); a missing event makes the question
unanswerable instead of a false premise."""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import combinations

from ._base import NOT_ANSWERABLE, GameQuestion, template
from ._crafter_timeline import (
    CREATURES,
    EVENTS,
    ITEMS,
    MATERIALS,
    MOVES,
    PLACEMENTS,
    RECIPES,
    TOOLS,
    VITALS,
    CrafterTimeline,
)
from ._crafter_util import article, pick, unseen

Q = Iterator[GameQuestion]
CONDITIONS = {
    "drink": "did you drink water", "eat": "did you eat", "health_drop": "did your health drop",
    "food_low": "was your food below 3", "drink_low": "was your drink below 3",
    "energy_low": "was your energy below 3",
}


def _happened(tl: CrafterTimeline) -> list[str]:
    return [e for e in EVENTS if tl.event_steps(e)]


def _first(tl: CrafterTimeline, event: str) -> int | None:
    steps = tl.event_steps(event)
    return steps[0] if steps else None


def ask_event_order(tl: CrafterTimeline, a: str, b: str) -> GameQuestion | None:
    sa, sb = _first(tl, a), _first(tl, b)
    if sa is not None and sa == sb:
        return None
    answer = NOT_ANSWERABLE if sa is None or sb is None else ("before" if sa < sb else "after")
    return tl.question("crafter.event_order", params={"a": a, "b": b}, answer=answer,
                       evidence_steps=[s for s in (sa, sb) if s],
                       text=f"Did the first time {EVENTS[a]} come before or after the first "
                            f"time {EVENTS[b]}?")


@template("crafter.event_order", ability="temporal", answer_type="string", games=("crafter",),
          values=("before", "after"))
def event_order(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Order of two events' first occurrences. NA: one of them never happened. Every pair
    that happened is offered, each in a seeded order, so the generator can balance "before"
    against "after" (design 0039)."""
    happened = _happened(tl)
    for a, b in pick(rng, combinations(happened, 2), len(happened) ** 2):
        q = ask_event_order(tl, *((a, b) if rng.random() < 0.5 else (b, a)))
        if q:
            yield q
    missing = pick(rng, unseen(EVENTS, happened), 1)
    if happened and missing:
        q = ask_event_order(tl, rng.choice(happened), missing[0])
        if q:
            yield q


def ask_event_interval(tl: CrafterTimeline, a: str, b: str) -> GameQuestion | None:
    sa, sb = _first(tl, a), _first(tl, b)
    params = {"a": a, "b": b}
    text = (f"How many steps after the first time {EVENTS[a]} was the first time "
            f"{EVENTS[b]}?")
    if sa is None or sb is None:
        return tl.question("crafter.event_interval", params=params, answer=NOT_ANSWERABLE,
                           text=text)
    if sb <= sa:
        return None
    return tl.question("crafter.event_interval", params=params, answer=sb - sa,
                       evidence_steps=[sa, sb], text=text)


@template("crafter.event_interval", ability="temporal", answer_type="integer",
          games=("crafter",))
def event_interval(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Steps between two events' first occurrences (a before b). NA: one never happened."""
    happened = sorted(_happened(tl), key=lambda e: _first(tl, e) or 0)
    pair = pick(rng, happened, 2)
    if len(pair) == 2:
        q = ask_event_interval(tl, *sorted(pair, key=lambda e: _first(tl, e) or 0))
        if q:
            yield q
    missing = pick(rng, unseen(EVENTS, happened), 1)
    if happened and missing:
        q = ask_event_interval(tl, rng.choice(happened), missing[0])
        if q:
            yield q


def _holds(tl: CrafterTimeline, condition: str, t: int) -> bool:
    if condition.endswith("_low"):
        return tl.count(condition[:-4], t) < 3
    return t in tl.event_steps(condition)


def ask_event_count_between(tl: CrafterTimeline, a: str, b: str,
                            condition: str) -> GameQuestion | None:
    sa, sb = _first(tl, a), _first(tl, b)
    params = {"a": a, "b": b, "condition": condition}
    text = (f"From the first time {EVENTS[a]} to the first time {EVENTS[b]}, both included, "
            f"after how many steps {CONDITIONS[condition]}?")
    if sa is None or sb is None:
        return tl.question("crafter.event_count_between", params=params,
                           answer=NOT_ANSWERABLE, text=text)
    if sb < sa:
        return None
    steps = [t for t in range(sa, sb + 1) if _holds(tl, condition, t)]
    return tl.question("crafter.event_count_between", params=params, answer=len(steps),
                       evidence_steps=[*steps, sa, sb], text=text)


@template("crafter.event_count_between", ability="temporal", answer_type="integer",
          games=("crafter",))
def event_count_between(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Steps between two events where a condition held. NA: an anchor never happened."""
    happened = sorted(_happened(tl), key=lambda e: _first(tl, e) or 0)
    pair = pick(rng, happened, 2)
    if len(pair) == 2:
        a, b = sorted(pair, key=lambda e: _first(tl, e) or 0)
        q = ask_event_count_between(tl, a, b, rng.choice(list(CONDITIONS)))
        if q:
            yield q


def ask_vital_around_event(tl: CrafterTimeline, vital: str, event: str, offset: int,
                           direction: str) -> GameQuestion | None:
    anchor = _first(tl, event)
    tid = f"crafter.vital_{direction}_event"
    params = {"vital": vital, "event": event, "offset": offset}
    text = (f"What was your {vital} right after the step {offset} step"
            f"{'s' if offset > 1 else ''} {direction} the one at which, for the first time, "
            f"{EVENTS[event]}?")
    if anchor is None:
        return tl.question(tid, params=params, answer=NOT_ANSWERABLE, text=text)
    # "k steps after the event" is the state after step a+k; "k steps before" is the state
    # after step a−k (0: at reset), i.e. the state the player saw k actions earlier.
    target = anchor + offset if direction == "after" else anchor - offset
    if target < 0:
        return None
    if target > tl.last:
        return tl.question(tid, params=params, answer=NOT_ANSWERABLE, evidence_steps=[anchor],
                           text=text)
    return tl.question(tid, params=params, answer=tl.count(vital, target),
                       evidence_steps=[anchor, target], text=text)


@template("crafter.vital_after_event", ability="temporal", answer_type="integer",
          games=("crafter",))
def vital_after_event(tl: CrafterTimeline, rng: random.Random) -> Q:
    """A vital k steps after an event's first occurrence. NA: the event never happened, or
    that step is past the horizon."""
    for event in pick(rng, _happened(tl), 2) + pick(rng, unseen(EVENTS, _happened(tl)), 1):
        q = ask_vital_around_event(tl, rng.choice(VITALS), event, rng.randint(1, 3), "after")
        if q:
            yield q


@template("crafter.vital_before_event", ability="temporal", answer_type="integer",
          games=("crafter",))
def vital_before_event(tl: CrafterTimeline, rng: random.Random) -> Q:
    """A vital k steps before an event's first occurrence. NA: the event never happened."""
    for event in pick(rng, _happened(tl), 2) + pick(rng, unseen(EVENTS, _happened(tl)), 1):
        q = ask_vital_around_event(tl, rng.choice(VITALS), event, rng.randint(1, 3), "before")
        if q:
            yield q


def ask_count_now(tl: CrafterTimeline, item: str) -> GameQuestion:
    changes = [t for t in tl.steps_range() if tl.delta(item, t)]
    return tl.question("crafter.count_now", params={"item": item},
                       answer=tl.count(item, tl.last), evidence_steps=changes[-1:],
                       text=f"How many {item.replace('_', ' ')} do you have now?")


@template("crafter.count_now", ability="temporal", answer_type="integer", games=("crafter",))
def count_now(tl: CrafterTimeline, rng: random.Random) -> Q:
    """State update: the latest count of an item whose count changed at least twice (the
    old values are the distractors)."""
    changed = [i for i in ITEMS if sum(1 for t in tl.steps_range() if tl.delta(i, t)) >= 2]
    for item in pick(rng, changed, 2):
        yield ask_count_now(tl, item)


def ask_successful_placements(tl: CrafterTimeline, what: str, to_step: int) -> GameQuestion:
    steps = [t for t in tl.placements(what) if t <= to_step]
    return tl.question("crafter.successful_placements", params={"what": what, "to_step": to_step},
                       answer=len(steps), evidence_steps=steps,
                       text=f"Up to step {to_step}, how many times did you actually place a "
                            f"{what} (attempts that failed do not count)?")


@template("crafter.successful_placements", ability="logical", answer_type="integer",
          games=("crafter",))
def successful_placements(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Placements that happened up to a step (the counter rose), not attempts."""
    for what in ("table", "furnace"):
        if tl.action_steps(f"place_{what}") or tl.placements(what):
            yield ask_successful_placements(tl, what, rng.choice(tl.steps_range()))


def ask_craft_feasible(tl: CrafterTimeline, tool: str, step: int) -> GameQuestion:
    uses, stations = RECIPES[tool]
    x, y = tl.pos[step]
    near = {tl.material_at((x + dx, y + dy), step) for dx in (-1, 0, 1) for dy in (-1, 0, 1)}
    ok = all(tl.count(k, step) >= n for k, n in uses.items()) and all(s in near for s in stations)
    return tl.question("crafter.craft_feasible", params={"tool": tool, "step": step},
                       answer="yes" if ok else "no", evidence_steps=[step],
                       text=f"Right after your action at step {step}, could you have made "
                            f"{article(tool.replace('_', ' '))} with what you held and what was "
                            f"next to you?")


@template("crafter.craft_feasible", ability="logical", answer_type="yes_no",
          games=("crafter",))
def craft_feasible(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Whether a tool's recipe was met at step t: materials held and the stations it needs
    (table; furnace too for iron) within one cell, as Crafter checks. Every step and tool is
    offered (a "yes" is rare: two random steps were "no" in 44 of 44), so the generator can
    balance the answers (design 0039)."""
    for step in pick(rng, tl.steps_range(), len(tl.steps_range())):
        for tool in pick(rng, TOOLS, len(TOOLS)):
            yield ask_craft_feasible(tl, tool, step)


def ask_place_feasible(tl: CrafterTimeline, what: str, step: int) -> GameQuestion | None:
    uses, where = PLACEMENTS[what]
    x, y = tl.pos[step]
    fx, fy = tl.facing[step]
    faced = tl.material_at((x + fx, y + fy), step)
    if faced is None:
        return None
    occupied = any(tuple(c.get("pos", ())) == (x + fx, y + fy) for c in tl.creatures[step])
    ok = (all(tl.count(k, step) >= n for k, n in uses.items()) and faced in where
          and not occupied)
    return tl.question("crafter.place_feasible", params={"what": what, "step": step},
                       answer="yes" if ok else "no", evidence_steps=[step],
                       text=f"Right after your action at step {step}, could you have placed a "
                            f"{what} on the cell you were facing?")


@template("crafter.place_feasible", ability="logical", answer_type="yes_no",
          games=("crafter",))
def place_feasible(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Whether a placement was possible at step t: what it uses held, the faced cell of a
    material it may go on, and no creature there. Every step and placement is offered, so
    the generator can balance the answers."""
    for step in pick(rng, tl.steps_range(), len(tl.steps_range())):
        for what in pick(rng, PLACEMENTS, len(PLACEMENTS)):
            q = ask_place_feasible(tl, what, step)
            if q:
                yield q


def ask_inventory_contents(tl: CrafterTimeline, step: int) -> GameQuestion | None:
    held = [f"{i}: {tl.count(i, step)}" for i in ITEMS if tl.count(i, step) > 0]
    if not held:
        return None
    return tl.question("crafter.inventory_contents", params={"step": step}, answer=sorted(held),
                       evidence_steps=[step],
                       text=f"Right after your action at step {step}, what did you hold? List "
                            f"each item with its count, like 'wood: 2' (vitals excluded).")


@template("crafter.inventory_contents", ability="logical", answer_type="set",
          games=("crafter",))
def inventory_contents(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Every item held at a step with its count, as a set (order does not matter)."""
    for step in pick(rng, tl.steps_range(), 2):
        q = ask_inventory_contents(tl, step)
        if q:
            yield q


DEATH_WORDS = {"zombie": "a zombie", "arrow": "a skeleton's arrow", "lava": "lava",
               "starvation": "starvation", "dehydration": "dehydration",
               "exhaustion": "exhaustion"}


def ask_death_cause(tl: CrafterTimeline) -> GameQuestion | None:
    text = "What killed you?"
    death = tl.death_step()
    if death is None:
        return tl.question("crafter.death_cause", params={}, answer=NOT_ANSWERABLE, text=text)
    drops = [d for d in tl.health_drops() if d.step == death]
    causes = drops[0].causes if drops else ()
    if not causes:
        return None  # the state does not tell: no answer key rather than a guess
    return tl.question("crafter.death_cause", params={}, answer=causes[0],
                       alternatives=list(causes[1:]), evidence_steps=[death], text=text)


@template("crafter.death_cause", ability="logical", answer_type="string", games=("crafter",))
def death_cause(tl: CrafterTimeline, rng: random.Random) -> Q:
    """What the state says caused the last health drop of a death. NA: the player did not
    die within the horizon (no death anchor without a death)."""
    q = ask_death_cause(tl)
    if q:
        yield q


def ask_damage_count(tl: CrafterTimeline) -> GameQuestion:
    drops = tl.health_drops()
    return tl.question("crafter.damage_count", params={}, answer=len(drops),
                       evidence_steps=[d.step for d in drops],
                       text="After how many steps did your health drop, whatever the cause?")


@template("crafter.damage_count", ability="logical", answer_type="integer", games=("crafter",))
def damage_count(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Steps at which health dropped (any cause; not called "attacks")."""
    yield ask_damage_count(tl)


def ask_attack_step(tl: CrafterTimeline, ordinal: str) -> GameQuestion:
    hits = [d.step for d in tl.health_drops() if {"zombie", "arrow"} & set(d.causes)]
    step = (hits[0] if ordinal == "first" else hits[-1]) if hits else None
    return tl.question("crafter.attack_step", params={"ordinal": ordinal},
                       answer=step if step else NOT_ANSWERABLE,
                       evidence_steps=hits if ordinal == "last" else hits[:1],
                       text=f"At which step did a zombie or an arrow hurt you for the {ordinal} "
                            f"time?")


@template("crafter.attack_step", ability="logical", answer_type="integer", games=("crafter",))
def attack_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """First/last health drop with a zombie or arrow next to the player (starvation and lava
    are not attacks). NA: no creature hurt the player."""
    yield ask_attack_step(tl, rng.choice(("first", "last")))


def ask_event_steps(tl: CrafterTimeline, event: str) -> GameQuestion:
    steps = tl.event_steps(event)
    return tl.question("crafter.event_steps", params={"event": event},
                       answer=steps if steps else NOT_ANSWERABLE, evidence_steps=steps,
                       text=f"List every step after which {EVENTS[event]}.")


@template("crafter.event_steps", ability="logical", answer_type="set", games=("crafter",))
def event_steps(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Every step at which an event happened. NA: it never did (no empty-list guess)."""
    happened = _happened(tl)
    for event in pick(rng, happened, 2) + pick(rng, unseen(EVENTS, happened), 1):
        yield ask_event_steps(tl, event)


def ask_first_sighting(tl: CrafterTimeline, material: str) -> GameQuestion | None:
    first = tl.first_seen(material)
    if first == 0:
        return None  # seen at reset: no step to name
    return tl.question("crafter.first_sighting", params={"material": material},
                       answer=first if first else NOT_ANSWERABLE,
                       evidence_steps=[first] if first else [],
                       text=f"After which step did you first see {material}?")


@template("crafter.first_sighting", ability="adversarial", answer_type="integer",
          games=("crafter",))
def first_sighting(tl: CrafterTimeline, rng: random.Random) -> Q:
    """When a material was first seen; mostly asked about Crafter materials never seen
    within the horizon (NA), with real ones mixed in so "not answerable" is not free."""
    seen = [m for m in MATERIALS if tl.first_seen(m) is not None]
    later = [m for m in seen if tl.first_seen(m)]  # not already in view at reset
    for material in pick(rng, unseen(MATERIALS, seen), 2) + pick(rng, later, 1):
        q = ask_first_sighting(tl, material)
        if q:
            yield q


def ask_first_creature(tl: CrafterTimeline, creature: str) -> GameQuestion | None:
    first = tl.creature_first_seen(creature)
    if first == 0:
        return None
    return tl.question("crafter.first_creature", params={"creature": creature},
                       answer=first if first else NOT_ANSWERABLE,
                       evidence_steps=[first] if first else [],
                       text=f"After which step did you first see a {creature}?")


@template("crafter.first_creature", ability="adversarial", answer_type="integer",
          games=("crafter",))
def first_creature(tl: CrafterTimeline, rng: random.Random) -> Q:
    """When a creature kind was first in view; mostly Crafter creatures never seen (NA)."""
    seen = [c for c in CREATURES if tl.creature_first_seen(c) is not None]
    later = [c for c in seen if tl.creature_first_seen(c)]
    for creature in pick(rng, unseen(CREATURES, seen), 2) + pick(rng, later, 1):
        q = ask_first_creature(tl, creature)
        if q:
            yield q


def ask_unused_move(tl: CrafterTimeline, action: str) -> GameQuestion:
    steps = tl.action_steps(action)
    return tl.question("crafter.first_move_step", params={"action": action},
                       answer=steps[0] if steps else NOT_ANSWERABLE, evidence_steps=steps[:1],
                       text=f"At which step did you first take the action {action}?")


@template("crafter.first_move_step", ability="adversarial", answer_type="integer",
          games=("crafter",))
def first_move_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The first step of a move action; asked about unused directions (NA) and one used."""
    used = [a for a in MOVES if tl.action_steps(a)]
    for action in pick(rng, unseen(MOVES, used), 2) + pick(rng, used, 1):
        yield ask_unused_move(tl, action)
