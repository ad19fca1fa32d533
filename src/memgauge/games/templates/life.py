"""Cross-episode templates: questions across several games played one after another (a
``Life``), asked after the last one. Each needs more than one game's memory."""

from __future__ import annotations

import random
from collections.abc import Iterator

from ._base import NOT_ANSWERABLE, GameQuestion, template
from ._crafter_timeline import ACTIONS, ITEMS
from ._life import Life

Q = Iterator[GameQuestion]
# Events a Crafter game can hold, told in words; each is read from the state (a placement
# that happened, a tool that was made), never from the attempt.
CRAFTER_EVENTS = {
    "place_table": ("place a table", lambda tl: tl.placements("table")),
    "place_furnace": ("place a furnace", lambda tl: tl.placements("furnace")),
    "make_wood_pickaxe": ("make a wood pickaxe", lambda tl: tl.crafts("wood_pickaxe")),
    "make_stone_pickaxe": ("make a stone pickaxe", lambda tl: tl.crafts("stone_pickaxe")),
    "collect_wood": ("collect wood", lambda tl: tl.increases("wood")),
    "collect_stone": ("collect stone", lambda tl: tl.increases("stone")),
    "drink": ("drink water", lambda tl: tl.drink_steps()),
    "eat": ("eat", lambda tl: tl.eat_steps()),
    "sleep": ("fall asleep", lambda tl: tl.sleep_starts()),
}


def _games_phrase(life: Life) -> str:
    return f"Answer 'game 1', 'game 2', … ('game 1' is the first of your {len(life.games)} games)."


@template("life.crafter_game_with_most", ability="multi_hop", answer_type="string",
          games=("crafter-life",))
def game_with_most(life: Life, rng: random.Random) -> Q:
    """Which game ended holding the most of an item (only when one game has strictly most)."""
    for item in rng.sample(ITEMS, k=len(ITEMS)):
        finals = [tl.count(item, tl.last) for tl in life.games]
        best = max(finals)
        if best == 0 or finals.count(best) > 1:
            continue
        g = finals.index(best)
        yield life.question("life.crafter_game_with_most", params={"item": item},
                            answer=life.name(g), evidence=[(g, life.games[g].last)],
                            text=f"At the end of which of your games did you hold the most "
                                 f"{item}? {_games_phrase(life)}")


@template("life.crafter_first_game_with", ability="multi_hop", answer_type="string",
          games=("crafter-life",))
def first_game_with(life: Life, rng: random.Random) -> Q:
    """The first game in which an event happened; not answerable if it never did."""
    for event in rng.sample(sorted(CRAFTER_EVENTS), k=len(CRAFTER_EVENTS)):
        words, steps_of = CRAFTER_EVENTS[event]
        hits = [(g, steps_of(tl)) for g, tl in enumerate(life.games)]
        first = next(((g, steps) for g, steps in hits if steps), None)
        text = f"In which of your games did you first {words}? {_games_phrase(life)}"
        if first is None:
            yield life.question("life.crafter_first_game_with", params={"event": event},
                                answer=NOT_ANSWERABLE, text=text)
        else:
            g, steps = first
            yield life.question("life.crafter_first_game_with", params={"event": event},
                                answer=life.name(g), evidence=[(g, steps[0])], text=text)


@template("life.crafter_games_with", ability="induction", answer_type="integer",
          games=("crafter-life",))
def games_with(life: Life, rng: random.Random) -> Q:
    """In how many of the games an event happened at least once."""
    for event in rng.sample(sorted(CRAFTER_EVENTS), k=3):
        words, steps_of = CRAFTER_EVENTS[event]
        hits = [(g, steps_of(tl)) for g, tl in enumerate(life.games)]
        yield life.question("life.crafter_games_with", params={"event": event},
                            answer=sum(1 for _, s in hits if s),
                            evidence=[(g, s[0]) for g, s in hits if s],
                            text=f"In how many of your {len(life.games)} games did you "
                                 f"{words} at least once?")


@template("life.crafter_total_action_count", ability="induction", answer_type="integer",
          games=("crafter-life",))
def total_action_count(life: Life, rng: random.Random) -> Q:
    """How many steps took an action over all the games (attempted, whatever the outcome)."""
    used = sorted({a for tl in life.games for a in tl.actions[1:]} & set(ACTIONS))
    for action in rng.sample(used, k=min(2, len(used))):
        steps = [(g, t) for g, tl in enumerate(life.games) for t in tl.action_steps(action)]
        yield life.question("life.crafter_total_action_count", params={"action": action},
                            answer=len(steps), evidence=steps,
                            text=f"Over all your {len(life.games)} games together, at how many "
                                 f"steps did you take the action {action} (whether or not it "
                                 f"worked)?")


@template("life.text_game_of_room", ability="multi_hop", answer_type="string",
          games=("text-life",))
def game_of_room(life: Life, rng: random.Random) -> Q:
    """The first game in which a room was visited; a room of the same worlds that no game's
    player ever saw is not answerable."""
    if not all(tl.fully_known("room") for tl in life.games):
        return  # a game whose rooms are not all known cannot say where you never were
    visited = [{r.casefold() for r in tl.rooms_visited()} for tl in life.games]
    spelled = {r.casefold(): r for tl in reversed(life.games) for r in tl.rooms_visited()}
    rooms = sorted(spelled[r] for r in set().union(*visited))
    def text_of(room: str) -> str:
        return f"In which of your games were you first in the {room}? {_games_phrase(life)}"

    for room in rng.sample(rooms, k=min(3, len(rooms))):
        g = next(i for i, seen in enumerate(visited) if room.casefold() in seen)
        entered = [t for t, r in life.games[g].entries() if r.casefold() == room.casefold()]
        first = entered[0] if entered else 1  # there at reset: step 1's observation shows it
        yield life.question("life.text_game_of_room", params={"room": room},
                            answer=life.name(g), evidence=[(g, first)],
                            text=text_of(room))
    unseen = sorted({r for tl in life.games for r in tl.world_entities("room")
                     if r.casefold() not in set().union(*visited)})
    unseen = [r for r in unseen if not any(tl.appeared(r) for tl in life.games)]
    if unseen:
        room = rng.choice(unseen)
        yield life.question("life.text_game_of_room", params={"room": room},
                            answer=NOT_ANSWERABLE, text=text_of(room))


@template("life.text_rooms_in_every_game", ability="logical", answer_type="set",
          games=("text-life",))
def rooms_in_every_game(life: Life, rng: random.Random) -> Q:
    """The rooms visited in every one of the games (an empty set is an answer)."""
    if not all(tl.fully_known("room") for tl in life.games):
        return
    visited = [{r.casefold() for r in tl.rooms_visited()} for tl in life.games]
    spelled = {r.casefold(): r for tl in reversed(life.games) for r in tl.rooms_visited()}
    common = sorted(spelled[r] for r in set.intersection(*visited))
    yield life.question("life.text_rooms_in_every_game", params={}, answer=common,
                        text=f"Which rooms were you in during every one of your "
                             f"{len(life.games)} games? List them, or say none.")
