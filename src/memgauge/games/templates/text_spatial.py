"""Text-game spatial templates: questions "after your action at step t" use only the exits
you had taken by step t (the map as known then), never one found later. Design 0032,
"Text-game templates"."""

from __future__ import annotations

import random
from collections.abc import Iterator

from ._base import GameQuestion, template
from ._text_timeline import TextTimeline, shuffled

Questions = Iterator[GameQuestion]
DRAWS = 40  # instances drawn per template: the pairs and steps are too many to list
KNOWN = "using only the exits you had taken by then"


def _situations(tl: TextTimeline, rng: random.Random) -> Iterator[tuple[int, str, list[str]]]:
    """(step, the room after it, rooms known by then) for steps where a map exists."""
    known = tl.fully_known("room")  # an unknown room could hide an exit taken
    steps = [t for t in tl.step_range() if known and tl.room_after(t) and tl.known_edges(t)]
    for _ in range(DRAWS if steps else 0):
        t = rng.choice(steps)
        known = sorted({e.src for e in tl.known_edges(t)} | {e.dst for e in tl.known_edges(t)})
        here = tl.room_after(t)
        assert here is not None  # drawn from the steps that have one
        yield t, here, known


def _map_evidence(tl: TextTimeline, t: int) -> list[int]:
    return [e.first_step for e in tl.known_edges(t)]


@template("text.path_length", ability="spatial", answer_type="integer", games=("text",))
def path_length(tl: TextTimeline, rng: random.Random) -> Questions:
    """Fewest moves from the room you were in after step t to another room, on the map known
    by step t (instances with no known route are skipped)."""
    for t, here, known in _situations(tl, rng):
        dist = tl.distances(here, t)
        targets = [r for r in known if r != here and r in dist]
        if targets:
            dst = rng.choice(targets)
            yield tl.question("text.path_length", params={"step": t, "room": dst},
                              answer=dist[dst], evidence_steps=_map_evidence(tl, t),
                              text=f"After your action at step {t}, {KNOWN}, what is the "
                                   f"fewest number of moves from where you were to {dst}?")


@template("text.shortest_path", ability="spatial", answer_type="path", games=("text",))
def shortest_path(tl: TextTimeline, rng: random.Random) -> Questions:
    """A shortest move sequence to a room on the map known by step t; every other shortest
    sequence is an alternative (skipped beyond MAX_SHORTEST_PATHS of them)."""
    for t, here, known in _situations(tl, rng):
        targets = [r for r in known if r != here and r in tl.distances(here, t)]
        if not targets:
            continue
        dst = rng.choice(targets)
        paths = tl.shortest_paths(here, dst, t)
        if paths:
            yield tl.question("text.shortest_path", params={"step": t, "room": dst},
                              answer=paths[0], alternatives=paths[1:],
                              evidence_steps=_map_evidence(tl, t),
                              text=f"After your action at step {t}, {KNOWN}, which moves take "
                                   f"you from where you were to {dst} in as few moves as "
                                   f"possible?")


@template("text.reachable_within", ability="spatial", answer_type="yes_no", games=("text",))
def reachable_within(tl: TextTimeline, rng: random.Random) -> Questions:
    """Whether a known room is at most n moves away on the map known by step t."""
    for t, here, known in _situations(tl, rng):
        others = [r for r in known if r != here]
        if not others:
            continue
        room, n = rng.choice(others), rng.randint(1, 3)
        dist = tl.distances(here, t)
        yield tl.question("text.reachable_within", params={"step": t, "room": room, "n": n},
                          answer="yes" if dist.get(room, n + 1) <= n else "no",
                          evidence_steps=_map_evidence(tl, t),
                          text=f"After your action at step {t}, {KNOWN}, could you reach "
                               f"{room} in at most {n} move(s)?")


@template("text.known_exit_count", ability="spatial", answer_type="integer", games=("text",))
def known_exit_count(tl: TextTimeline, rng: random.Random) -> Questions:
    """How many different directions you had taken out of your room by step t."""
    known = tl.fully_known("room")
    for t in shuffled(rng, [t for t in tl.step_range() if known and tl.room_after(t)]):
        here = tl.room_after(t)
        assert here is not None  # drawn from the steps that have one
        exits = tl.exits_known(here, t)
        yield tl.question("text.known_exit_count", params={"step": t}, answer=len(exits),
                          evidence_steps=[e.first_step for e in tl.known_edges(t)
                                          if e.src == here],
                          text=f"After your action at step {t}, in how many different "
                               f"directions had you already left the room you were in?")


@template("text.rooms_within", ability="spatial", answer_type="integer", games=("text",))
def rooms_within(tl: TextTimeline, rng: random.Random) -> Questions:
    """How many other rooms are at most n moves away on the map known by step t."""
    for t, here, _ in _situations(tl, rng):
        n = rng.randint(1, 3)
        dist = tl.distances(here, t)
        yield tl.question("text.rooms_within", params={"step": t, "n": n},
                          answer=sum(1 for r, d in dist.items() if r != here and d <= n),
                          evidence_steps=_map_evidence(tl, t),
                          text=f"After your action at step {t}, {KNOWN}, how many other rooms "
                               f"could you reach in at most {n} move(s)?")


@template("text.closer_room", ability="spatial", answer_type="string", games=("text",))
def closer_room(tl: TextTimeline, rng: random.Random) -> Questions:
    """Which of two rooms is fewer moves away on the map known by step t (both reachable,
    at different distances; ties and unknown routes are skipped)."""
    for t, here, _ in _situations(tl, rng):
        dist = tl.distances(here, t)
        rooms = [r for r in dist if r != here]
        if len(rooms) < 2:
            continue
        a, b = rng.sample(sorted(rooms), 2)
        if dist[a] != dist[b]:
            yield tl.question("text.closer_room", params={"step": t, "a": a, "b": b},
                              answer=a if dist[a] < dist[b] else b,
                              evidence_steps=_map_evidence(tl, t),
                              text=f"After your action at step {t}, {KNOWN}, which is fewer "
                                   f"moves away from where you were: {a} or {b}?")


@template("text.move_sequence", ability="spatial", answer_type="string", games=("text",))
def move_sequence(tl: TextTimeline, rng: random.Random) -> Questions:
    """Where two or three known moves lead from the room after step t (only along exits
    that, as known by then, led to one room each)."""
    for t, here, _ in _situations(tl, rng):
        adj = tl.neighbours(t)
        moves: list[str] = []
        room: str | None = here
        for _ in range(rng.randint(2, 3)):
            options = sorted({e.direction for e in adj.get(room, [])})
            if not options:
                break
            moves.append(rng.choice(options))
            room = tl.follow(here, moves, t)
            if room is None:
                break
        if len(moves) >= 2 and room is not None:
            yield tl.question("text.move_sequence", params={"step": t, "moves": moves},
                              answer=room, evidence_steps=_map_evidence(tl, t),
                              text=f"After your action at step {t}, {KNOWN}, where would you "
                                   f"end up if you went {', then '.join(moves)}?")
