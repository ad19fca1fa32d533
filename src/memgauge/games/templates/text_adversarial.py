"""Text-game adversarial templates: questions about an item or room that never appeared in
the window, so the answer is "not answerable". The names come from the game's own world
(TextWorld's typed facts, Jericho's object tree), and only where the
world has no unseen one from the small vocabulary below; a name the player saw or held in the
window is never used. Each question is worded exactly as its answerable twin, so the wording
never gives the answer away. Design 0032, "Text-game templates"."""

from __future__ import annotations

import random
from collections.abc import Iterator

from ._base import GameQuestion, template
from ._text_timeline import TextTimeline, shuffled

Questions = Iterator[GameQuestion]
# Used only when the game names no unseen room or item: generic words of interactive fiction.
FALLBACK_ROOMS = ("attic", "cellar", "pantry", "library", "chapel", "greenhouse", "boathouse",
                  "armory")
FALLBACK_ITEMS = ("brass lantern", "silver key", "rope", "candle", "compass", "scroll",
                  "shovel", "pocket watch")


def confusables(tl: TextTimeline, kind: str) -> list[str]:
    """Names of this kind ("room" or "item") that never appeared in the window, sorted."""
    unseen = sorted(n for n in tl.world_entities(kind) if not tl.appeared(n))
    if unseen:
        return unseen
    fallback = FALLBACK_ROOMS if kind == "room" else FALLBACK_ITEMS
    return sorted(n for n in fallback if not tl.appeared(n))


def _names(tl: TextTimeline, rng: random.Random, kind: str) -> list[str]:
    return shuffled(rng, confusables(tl, kind)) if tl.last_step else []


@template("text.adv_keyword_step", ability="adversarial", answer_type="integer",
          games=("text",), twin="text.keyword_step")
def adv_keyword_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """The first reply that mentions an item or room the game never mentioned."""
    for kind in ("item", "room"):
        for name in _names(tl, rng, kind):
            yield tl.unanswerable("text.adv_keyword_step", params={"keyword": name},
                                  text=f"At which step was the game's reply to your action "
                                       f"the first one to mention '{name}'?")


@template("text.adv_item_gain", ability="adversarial", answer_type="integer", games=("text",),
          twin="text.item_gain_step")
def adv_item_gain(tl: TextTimeline, rng: random.Random) -> Questions:
    """When an item you never saw first joined the inventory."""
    for name in _names(tl, rng, "item"):
        yield tl.unanswerable("text.adv_item_gain", params={"item": name},
                              text=f"At which step did {name} join your inventory for the "
                                   f"first time?")


@template("text.adv_item_pickup_room", ability="adversarial", answer_type="string",
          games=("text",), twin="text.item_pickup_room")
def adv_item_pickup_room(tl: TextTimeline, rng: random.Random) -> Questions:
    """Where an item you never saw first joined the inventory."""
    for name in _names(tl, rng, "item"):
        yield tl.unanswerable("text.adv_item_pickup_room", params={"item": name},
                              text=f"In which room were you when {name} first joined your "
                                   f"inventory?")


@template("text.adv_room_leave", ability="adversarial", answer_type="integer", games=("text",),
          twin="text.room_event_step")
def adv_room_leave(tl: TextTimeline, rng: random.Random) -> Questions:
    """When you first left a room you were never in."""
    for name in _names(tl, rng, "room"):
        yield tl.unanswerable("text.adv_room_leave", params={"room": name},
                              text=f"At which step did your action first take you out of "
                                   f"{name}?")


@template("text.adv_room_stay", ability="adversarial", answer_type="integer", games=("text",),
          twin="text.region_stay")
def adv_room_stay(tl: TextTimeline, rng: random.Random) -> Questions:
    """How long you stayed in a room you were never in."""
    for name in _names(tl, rng, "room"):
        yield tl.unanswerable("text.adv_room_stay", params={"room": name},
                              text=f"After you first entered {name}, how many steps went by "
                                   f"before you left it?")


@template("text.adv_closer_rooms", ability="adversarial", answer_type="string",
          games=("text",), twin="text.closer_room")
def adv_closer_rooms(tl: TextTimeline, rng: random.Random) -> Questions:
    """Which of two rooms you were never in is closer."""
    names = _names(tl, rng, "room")
    for a, b in zip(names[::2], names[1::2], strict=False):
        t = rng.randint(1, tl.last_step)
        yield tl.unanswerable("text.adv_closer_rooms", params={"step": t, "a": a, "b": b},
                              text=f"After your action at step {t}, using only the exits you "
                                   f"had taken by then, which is fewer moves away from where "
                                   f"you were: {a} or {b}?")


@template("text.adv_path_length", ability="adversarial", answer_type="integer",
          games=("text",), twin="text.path_length")
def adv_path_length(tl: TextTimeline, rng: random.Random) -> Questions:
    """The fewest moves to a room you were never in."""
    for name in _names(tl, rng, "room"):
        t = rng.randint(1, tl.last_step)
        yield tl.unanswerable("text.adv_path_length", params={"step": t, "room": name},
                              text=f"After your action at step {t}, using only the exits you "
                                   f"had taken by then, what is the fewest number of moves "
                                   f"from where you were to {name}?")
