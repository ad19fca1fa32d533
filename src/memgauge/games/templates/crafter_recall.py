"""Crafter single-hop and multi-hop templates: what was done or held at a step, and the
state around an occurrence (design 0032, "Crafter templates")."""

from __future__ import annotations

import random
from collections.abc import Iterator

from ._base import NOT_ANSWERABLE, GameQuestion, template
from ._crafter_timeline import (
    ACHIEVEMENTS,
    ACTIONS,
    EVENTS,
    ITEMS,
    VITALS,
    WALKABLE,
    CrafterTimeline,
)
from ._crafter_util import ORDINALS, nth, pick, unseen

Q = Iterator[GameQuestion]


def ask_action_at_step(tl: CrafterTimeline, step: int) -> GameQuestion:
    return tl.question("crafter.action_at_step", params={"step": step},
                       answer=tl.actions[step], evidence_steps=[step],
                       text=f"Which action did you take at step {step}?")


@template("crafter.action_at_step", ability="single_hop", answer_type="action",
          games=("crafter",))
def action_at_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The action taken at a step (attempted, whatever its outcome)."""
    for step in pick(rng, tl.steps_range(), 3):
        yield ask_action_at_step(tl, step)


def ask_vital_at_step(tl: CrafterTimeline, vital: str, step: int) -> GameQuestion:
    return tl.question("crafter.vital_at_step", params={"vital": vital, "step": step},
                       answer=tl.count(vital, step), evidence_steps=[step],
                       text=f"What was your {vital} after your action at step {step}?")


@template("crafter.vital_at_step", ability="single_hop", answer_type="integer",
          games=("crafter",))
def vital_at_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """A vital (health, food, drink, energy) after the action at a step."""
    for step in pick(rng, tl.steps_range(), 2):
        yield ask_vital_at_step(tl, rng.choice(VITALS), step)


def ask_inventory_at_step(tl: CrafterTimeline, item: str, step: int) -> GameQuestion:
    name = item.replace("_", " ")
    return tl.question("crafter.inventory_at_step", params={"item": item, "step": step},
                       answer=tl.count(item, step), evidence_steps=[step],
                       text=f"How many {name} did you have after your action at step {step}?")


@template("crafter.inventory_at_step", ability="single_hop", answer_type="integer",
          games=("crafter",))
def inventory_at_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The count of an item after the action at a step (0 is an answer, never NA)."""
    held = tl.items_held()
    for step in pick(rng, tl.steps_range(), 3):
        yield ask_inventory_at_step(tl, rng.choice(held or list(ITEMS)), step)


def ask_terrain_under(tl: CrafterTimeline, step: int) -> GameQuestion | None:
    material = tl.under(step)
    if material is None:
        return None
    return tl.question("crafter.terrain_under", params={"step": step}, answer=material,
                       evidence_steps=[step],
                       text=f"What material were you standing on after your action at step "
                            f"{step}?")


@template("crafter.terrain_under", ability="single_hop", answer_type="string",
          games=("crafter",))
def terrain_under(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The material under the player after a step, from the map as discovered then."""
    for step in pick(rng, tl.steps_range(), 2):
        q = ask_terrain_under(tl, step)
        if q:
            yield q


def ask_action_occurrence(tl: CrafterTimeline, action: str, ordinal: str) -> GameQuestion:
    steps = tl.action_steps(action)
    step = nth(steps, ordinal)
    return tl.question("crafter.action_occurrence", params={"action": action, "ordinal": ordinal},
                       answer=NOT_ANSWERABLE if step is None else step,
                       evidence_steps=steps if ordinal == "last" else ([step] if step else []),
                       text=f"At which step did you take the action {action} for the {ordinal} "
                            f"time?")


@template("crafter.action_occurrence", ability="single_hop", answer_type="integer",
          games=("crafter",))
def action_occurrence(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The step of the first/second/third/last time an action was taken. NA: an action of
    Crafter's never taken, or fewer occurrences than the ordinal."""
    taken = sorted({a for a in tl.actions[1:]})
    for action in pick(rng, taken, 2):
        yield ask_action_occurrence(tl, action, rng.choice(list(ORDINALS)))
    for action in pick(rng, unseen(ACTIONS, taken), 1):
        yield ask_action_occurrence(tl, action, "first")


def ask_terrain_occurrence(tl: CrafterTimeline, material: str, ordinal: str) -> GameQuestion:
    steps = [t for t in tl.steps_range() if tl.under(t) == material]
    step = nth(steps, ordinal)
    return tl.question("crafter.terrain_occurrence",
                       params={"material": material, "ordinal": ordinal},
                       answer=NOT_ANSWERABLE if step is None else step,
                       evidence_steps=steps if ordinal == "last" else ([step] if step else []),
                       text=f"After which step were you standing on {material} for the "
                            f"{ordinal} time?")


@template("crafter.terrain_occurrence", ability="single_hop", answer_type="integer",
          games=("crafter",))
def terrain_occurrence(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The step of the first/second/third/last time the player stood on a walkable material.
    NA: fewer times, or a walkable material never stood on."""
    stood = sorted({m for t in tl.steps_range() if (m := tl.under(t)) in WALKABLE})
    for material in pick(rng, stood, 2):
        yield ask_terrain_occurrence(tl, material, rng.choice(list(ORDINALS)))
    for material in pick(rng, unseen(sorted(WALKABLE), stood), 1):
        yield ask_terrain_occurrence(tl, material, "first")


def ask_first_increase_step(tl: CrafterTimeline, item: str) -> GameQuestion:
    rises = tl.increases(item)
    return tl.question("crafter.first_increase_step", params={"item": item},
                       answer=rises[0] if rises else NOT_ANSWERABLE,
                       evidence_steps=rises[:1],
                       text=f"After which step did your count of {item.replace('_', ' ')} "
                            f"rise for the first time?")


@template("crafter.first_increase_step", ability="single_hop", answer_type="integer",
          games=("crafter",))
def first_increase_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The first step after which an item's count rose. NA: an item of the same kind that
    never rose within the horizon."""
    rose = [i for i in ITEMS if tl.increases(i)]
    for item in pick(rng, rose, 2):
        yield ask_first_increase_step(tl, item)
    for item in pick(rng, unseen(ITEMS, rose), 1):
        yield ask_first_increase_step(tl, item)


def ask_achievement_first_step(tl: CrafterTimeline, achievement: str) -> GameQuestion:
    steps = tl.achievement_steps(achievement)
    return tl.question("crafter.achievement_first_step", params={"achievement": achievement},
                       answer=steps[0] if steps else NOT_ANSWERABLE, evidence_steps=steps[:1],
                       text=f"At which step did you first unlock the achievement {achievement}?")


@template("crafter.achievement_first_step", ability="single_hop", answer_type="integer",
          games=("crafter",))
def achievement_first_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The step of an achievement's first unlock. NA: one never unlocked in the horizon."""
    got = [a for a in ACHIEVEMENTS if tl.achievement_steps(a)]
    for name in pick(rng, got, 2):
        yield ask_achievement_first_step(tl, name)
    for name in pick(rng, unseen(ACHIEVEMENTS, got), 1):
        yield ask_achievement_first_step(tl, name)


def ask_action_around_occurrence(tl: CrafterTimeline, action: str, ordinal: str, offset: int,
                                 direction: str) -> GameQuestion:
    params = {"action": action, "ordinal": ordinal, "offset": offset, "direction": direction}
    text = (f"Which action did you take {offset} step{'s' if offset > 1 else ''} {direction} "
            f"the {ordinal} time you took the action {action}?")
    anchor = nth(tl.action_steps(action), ordinal)
    target = None if anchor is None else anchor + (offset if direction == "after" else -offset)
    if anchor is None or target is None or not 1 <= target <= tl.last:
        return tl.question("crafter.action_around_occurrence", params=params,
                           answer=NOT_ANSWERABLE, text=text)
    return tl.question("crafter.action_around_occurrence", params=params,
                       answer=tl.actions[target], evidence_steps=[anchor, target], text=text)


@template("crafter.action_around_occurrence", ability="multi_hop", answer_type="action",
          games=("crafter",))
def action_around_occurrence(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The action k steps before/after the nth occurrence of an action. NA: the anchor did
    not happen, or the target step is outside the horizon."""
    taken = sorted({a for a in tl.actions[1:]})
    for action in pick(rng, taken, 3):
        yield ask_action_around_occurrence(tl, action, rng.choice(list(ORDINALS)),
                                           rng.randint(1, 5), rng.choice(("before", "after")))


def ask_inventory_at_event(tl: CrafterTimeline, item: str, event: str) -> GameQuestion:
    steps = tl.event_steps(event)
    return tl.question("crafter.inventory_at_event", params={"item": item, "event": event},
                       answer=tl.count(item, steps[0]) if steps else NOT_ANSWERABLE,
                       evidence_steps=steps[:1],
                       text=f"How many {item.replace('_', ' ')} did you have right after the "
                            f"first time {EVENTS[event]}?")


@template("crafter.inventory_at_event", ability="multi_hop", answer_type="integer",
          games=("crafter",))
def inventory_at_event(tl: CrafterTimeline, rng: random.Random) -> Q:
    """An item's count right after the first occurrence of an event. NA: the event never
    happened within the horizon (no false premise)."""
    happened = [e for e in EVENTS if tl.event_steps(e)]
    held = tl.items_held() or list(ITEMS)
    for event in pick(rng, happened, 2):
        yield ask_inventory_at_event(tl, rng.choice(held), event)
    for event in pick(rng, unseen(EVENTS, happened), 1):
        yield ask_inventory_at_event(tl, rng.choice(held), event)


def ask_count_change_since(tl: CrafterTimeline, item: str, step: int) -> GameQuestion:
    return tl.question("crafter.count_change_since", params={"item": item, "step": step},
                       answer=tl.count(item, tl.last) - tl.count(item, step),
                       evidence_steps=[step, tl.last],
                       text=f"How many more {item.replace('_', ' ')} do you have now than after "
                            f"your action at step {step} (negative if fewer)?")


@template("crafter.count_change_since", ability="multi_hop", answer_type="integer",
          games=("crafter",))
def count_change_since(tl: CrafterTimeline, rng: random.Random) -> Q:
    """State update: the count now against the count at an earlier step, for an item whose
    count changed in between."""
    for item in pick(rng, tl.items_held(), 2):
        changed = [t for t in range(1, tl.last) if tl.count(item, t) != tl.count(item, tl.last)]
        for step in pick(rng, changed, 1):
            yield ask_count_change_since(tl, item, step)


def ask_action_around_terrain(tl: CrafterTimeline, material: str, ordinal: str, offset: int,
                              direction: str) -> GameQuestion:
    params = {"material": material, "ordinal": ordinal, "offset": offset,
              "direction": direction}
    text = (f"Which action did you take {offset} step{'s' if offset > 1 else ''} {direction} "
            f"the step after which you stood on {material} for the {ordinal} time?")
    anchor = nth([t for t in tl.steps_range() if tl.under(t) == material], ordinal)
    target = None if anchor is None else anchor + (offset if direction == "after" else -offset)
    if anchor is None or target is None or not 1 <= target <= tl.last:
        return tl.question("crafter.action_around_terrain", params=params,
                           answer=NOT_ANSWERABLE, text=text)
    return tl.question("crafter.action_around_terrain", params=params,
                       answer=tl.actions[target], evidence_steps=[anchor, target], text=text)


@template("crafter.action_around_terrain", ability="multi_hop", answer_type="action",
          games=("crafter",))
def action_around_terrain(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The action k steps before/after the nth step spent on a walkable material. NA: no
    such visit (a walkable material never stood on), or the target is outside the window."""
    stood = sorted({m for t in tl.steps_range() if (m := tl.under(t)) in WALKABLE})
    for material in pick(rng, stood, 2) + pick(rng, unseen(sorted(WALKABLE), stood), 1):
        yield ask_action_around_terrain(tl, material, rng.choice(list(ORDINALS)),
                                        rng.randint(1, 5), rng.choice(("before", "after")))


def ask_terrain_at_event(tl: CrafterTimeline, event: str) -> GameQuestion | None:
    steps = tl.event_steps(event)
    text = f"What material were you standing on right after the first time {EVENTS[event]}?"
    if not steps:
        return tl.question("crafter.terrain_at_event", params={"event": event},
                           answer=NOT_ANSWERABLE, text=text)
    material = tl.under(steps[0])
    if material is None:
        return None
    return tl.question("crafter.terrain_at_event", params={"event": event}, answer=material,
                       evidence_steps=[steps[0]], text=text)


@template("crafter.terrain_at_event", ability="multi_hop", answer_type="string",
          games=("crafter",))
def terrain_at_event(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The material underfoot right after an event's first occurrence. NA: the event never
    happened within the horizon."""
    happened = [e for e in EVENTS if tl.event_steps(e)]
    for event in pick(rng, happened, 2) + pick(rng, unseen(EVENTS, happened), 1):
        q = ask_terrain_at_event(tl, event)
        if q:
            yield q
