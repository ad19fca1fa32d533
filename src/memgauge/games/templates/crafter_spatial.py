"""Crafter spatial templates. Every map answer uses the map as discovered by the step asked
about, never the full world and never a cell first seen later (design 0032)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from ._base import NOT_ANSWERABLE, GameQuestion, template
from ._crafter_timeline import (
    MATERIALS,
    MOVES,
    WALKABLE,
    CrafterTimeline,
    direction_words,
    displacement_words,
)
from ._crafter_util import pick, unseen

Q = Iterator[GameQuestion]
TARGETS = ("water", "tree", "stone", "sand", "coal", "iron", "diamond", "lava", "table",
           "furnace")


def _span(tl: CrafterTimeline, rng: random.Random) -> tuple[int, int]:
    a, b = sorted(rng.choices(tl.steps_range(), k=2))
    return a, b


def _known_by(tl: CrafterTimeline, t: int) -> list[str]:
    return [m for m in TARGETS if tl.cells_of(m, t)]


def ask_displacement(tl: CrafterTimeline, from_step: int, to_step: int) -> GameQuestion:
    (x0, y0), (x1, y1) = tl.pos[from_step - 1], tl.pos[to_step]
    return tl.question("crafter.displacement", params={"from_step": from_step, "to_step": to_step},
                       answer=displacement_words(x1 - x0, y1 - y0),
                       # the same offset told vertical first is as right
                       alternatives=_other_order(displacement_words(x1 - x0, y1 - y0)),
                       evidence_steps=[from_step, to_step],
                       text=f"From just before step {from_step} to just after step {to_step}, "
                            f"where did you end up relative to where you were? Answer like "
                            f"'3 steps right and 2 steps up', or '0 steps'.")


def _other_order(words: str) -> list[str]:
    parts = words.split(" and ")
    return [" and ".join(reversed(parts))] if len(parts) == 2 else []


@template("crafter.displacement", ability="spatial", answer_type="string", games=("crafter",))
def displacement(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Net displacement over a range, the first step's own move included."""
    yield ask_displacement(tl, *_span(tl, rng))
    yield ask_displacement(tl, 1, tl.last)


def ask_path_length(tl: CrafterTimeline, from_step: int, to_step: int) -> GameQuestion:
    moved = [t for t in tl.moved_steps() if from_step <= t <= to_step]
    return tl.question("crafter.path_length", params={"from_step": from_step, "to_step": to_step},
                       answer=len(moved), evidence_steps=moved,
                       text=f"From step {from_step} to step {to_step}, at how many steps did "
                            f"you actually move to another cell?")


@template("crafter.path_length", ability="spatial", answer_type="integer", games=("crafter",))
def path_length(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Successful moves in a range (a blocked move is not a move)."""
    yield ask_path_length(tl, *_span(tl, rng))


def ask_nearest_direction(tl: CrafterTimeline, material: str, step: int) -> GameQuestion | None:
    found = tl.nearest(material, step)
    params = {"material": material, "step": step}
    text = (f"After your action at step {step}, in which direction was the nearest {material} "
            f"you had seen by then (in grid cells, ignoring obstacles)? Answer up, down, left, "
            f"right, or two joined like 'up-left'.")
    if found is None:
        return tl.question("crafter.nearest_direction", params=params, answer=NOT_ANSWERABLE,
                           text=text)
    distance, cells = found
    if distance == 0:
        return None
    x, y = tl.pos[step]
    words = sorted({direction_words(cx - x, cy - y) for cx, cy in cells})
    return tl.question("crafter.nearest_direction", params=params, answer=words[0],
                       alternatives=words[1:], evidence_steps=tl.evidence_for(cells, step),
                       text=text)


@template("crafter.nearest_direction", ability="spatial", answer_type="direction",
          games=("crafter",))
def nearest_direction(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Direction of the nearest known cell of a material at step t (ties: alternatives).
    NA: no cell of it had been seen by t (even if one is seen later)."""
    for step in pick(rng, tl.steps_range(), 2):
        known = _known_by(tl, step)
        for material in pick(rng, known, 1) + pick(rng, unseen(TARGETS, known), 1):
            q = ask_nearest_direction(tl, material, step)
            if q:
                yield q


def ask_navigate(tl: CrafterTimeline, material: str, step: int) -> GameQuestion | None:
    params = {"material": material, "step": step}
    goal = "stand on" if material in WALKABLE else "stand next to"
    text = (f"After your action at step {step}, using only the map you had seen by then, which "
            f"shortest sequence of moves would take you to {goal} the nearest {material}? "
            f"Answer as a list of move actions.")
    if not tl.cells_of(material, step):
        return tl.question("crafter.navigate", params=params, answer=NOT_ANSWERABLE, text=text)
    length = tl.route_length(material, step)
    if length is None:  # seen, but no route over cells known walkable at t
        return tl.question("crafter.navigate", params=params, answer=NOT_ANSWERABLE,
                           evidence_steps=[step], text=text)
    paths = tl.shortest_paths(material, step)
    if length == 0 or paths is None:  # already there, or more tied paths than the cap
        return None
    return tl.question("crafter.navigate", params=params, answer=paths[0],
                       alternatives=paths[1:],
                       evidence_steps=_path_evidence(tl, paths, material, step),
                       text=text)


def _path_evidence(tl: CrafterTimeline, paths: list[list[str]], material: str,
                   step: int) -> list[int]:
    """The steps that showed the cells the paths cross and the target cells they reach."""
    cells: set[tuple[int, int]] = set()
    for path in paths:
        x, y = tl.pos[step]
        for move in path:
            x, y = x + MOVES[move][0], y + MOVES[move][1]
            cells.add((x, y))
        ends = [(x + dx, y + dy) for dx, dy in [(0, 0), *MOVES.values()]]
        cells |= {c for c in ends if tl.material_at(c, step) == material}
    return tl.evidence_for(cells, step)


@template("crafter.navigate", ability="spatial", answer_type="path", games=("crafter",))
def navigate(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Every shortest path over cells known walkable at t (grass, sand, path; never lava or
    unseen cells) to the nearest known material. NA: never seen by t, or no known route.
    More than MAX_PATHS tied paths: skipped."""
    for step in pick(rng, tl.steps_range(), 3):
        known = _known_by(tl, step)
        for material in pick(rng, known, 1) + pick(rng, unseen(TARGETS, known), 1):
            q = ask_navigate(tl, material, step)
            if q:
                yield q


def ask_terrain_at_offset(tl: CrafterTimeline, step: int, direction: str,
                          distance: int) -> GameQuestion:
    dx, dy = MOVES[f"move_{direction}"]
    x, y = tl.pos[step]
    cell = (x + dx * distance, y + dy * distance)
    material = tl.material_at(cell, step)
    return tl.question(
        "crafter.terrain_at_offset",
        params={"step": step, "direction": direction, "distance": distance},
        answer=material if material else NOT_ANSWERABLE,
        evidence_steps=tl.evidence_for([cell], step) if material else [],
        text=f"After your action at step {step}, what material was {distance} cell"
             f"{'s' if distance > 1 else ''} {direction} of you, as far as you had seen by then?")


@template("crafter.terrain_at_offset", ability="spatial", answer_type="string",
          games=("crafter",))
def terrain_at_offset(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The material k cells in a direction at step t. NA: that cell was not seen by t."""
    for step in pick(rng, tl.steps_range(), 2):
        yield ask_terrain_at_offset(tl, step, rng.choice(("left", "right", "up", "down")),
                                    rng.randint(1, 6))


def _distance_extreme(tl: CrafterTimeline, material: str,
                      closest: bool) -> tuple[int, int] | None:
    """(distance, first step) of the least (or greatest) Manhattan distance to the nearest
    cell of the material known at each step; None if it was never seen."""
    best: tuple[int, int] | None = None
    for t, cells in tl.cells_over_time(material):
        if cells:
            x, y = tl.pos[t]
            distance = min(abs(cx - x) + abs(cy - y) for cx, cy in cells)
            if best is None or (distance < best[0] if closest else distance > best[0]):
                best = (distance, t)
    return best


def ask_closest_step(tl: CrafterTimeline, material: str) -> GameQuestion:
    best = _distance_extreme(tl, material, closest=True)
    return tl.question("crafter.closest_step", params={"material": material},
                       answer=best[1] if best else NOT_ANSWERABLE,
                       evidence_steps=[best[1]] if best else [],
                       text=f"After which step were you closest (in grid cells, ignoring "
                            f"obstacles) to a {material} you had seen by then? If several tie, "
                            f"the first.")


@template("crafter.closest_step", ability="spatial", answer_type="integer", games=("crafter",))
def closest_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The first step of least Manhattan distance to a material known at that step. NA: the
    material was never seen within the horizon."""
    known = _known_by(tl, tl.last)
    for material in pick(rng, known, 2) + pick(rng, unseen(TARGETS, known), 1):
        yield ask_closest_step(tl, material)


def ask_farthest_step(tl: CrafterTimeline, material: str) -> GameQuestion:
    best = _distance_extreme(tl, material, closest=False)
    return tl.question("crafter.farthest_step", params={"material": material},
                       answer=best[1] if best else NOT_ANSWERABLE,
                       evidence_steps=[best[1]] if best else [],
                       text=f"Counting only steps after which you had seen some {material}, "
                            f"after which step were you farthest (in grid cells, ignoring "
                            f"obstacles) from the nearest one you knew of? If several tie, the "
                            f"first.")


@template("crafter.farthest_step", ability="spatial", answer_type="integer", games=("crafter",))
def farthest_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The first step of greatest distance to the nearest known cell of a material. NA: the
    material was never seen within the horizon."""
    known = _known_by(tl, tl.last)
    for material in pick(rng, known, 2) + pick(rng, unseen(TARGETS, known), 1):
        yield ask_farthest_step(tl, material)


def ask_terrain_dwell(tl: CrafterTimeline, material: str) -> GameQuestion:
    steps = [t for t in tl.steps_range() if tl.under(t) == material]
    return tl.question("crafter.terrain_dwell", params={"material": material}, answer=len(steps),
                       evidence_steps=steps,
                       text=f"After how many of your steps were you standing on {material}?")


@template("crafter.terrain_dwell", ability="spatial", answer_type="integer", games=("crafter",))
def terrain_dwell(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Steps spent standing on a walkable material (0 is an answer)."""
    for material in pick(rng, sorted(WALKABLE), 2):
        yield ask_terrain_dwell(tl, material)


def ask_material_seen_by(tl: CrafterTimeline, material: str, step: int) -> GameQuestion:
    first = tl.first_seen(material)
    yes = first is not None and first <= step
    return tl.question("crafter.material_seen_by", params={"material": material, "step": step},
                       answer="yes" if yes else "no",
                       evidence_steps=[first] if yes and first else [],
                       text=f"By the end of step {step}, had you seen any {material}?")


@template("crafter.material_seen_by", ability="spatial", answer_type="yes_no",
          games=("crafter",))
def material_seen_by(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Whether a material had been seen by step t (knowledge at t, not at the end). Asked
    about one first seen after t when there is one (the answer is "no": a later sighting
    must not leak in) and one seen by t, never about grass (always seen)."""
    for step in pick(rng, tl.steps_range(), 2):
        first = {m: tl.first_seen(m) for m in MATERIALS if m != "grass"}
        later = [m for m, t in first.items() if t is not None and t > step]
        known = [m for m, t in first.items() if t is not None and t <= step]
        for material in pick(rng, later, 1) + pick(rng, known, 1):
            yield ask_material_seen_by(tl, material, step)
