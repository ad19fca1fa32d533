"""Crafter induction templates: counts, runs, modes and trends over a range of steps
(design 0032, "Crafter templates")."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

from ._base import NOT_ANSWERABLE, GameQuestion, template
from ._crafter_timeline import ACTIONS, ITEMS, MATERIALS, MOVES, CrafterTimeline
from ._crafter_util import pick, unseen

Q = Iterator[GameQuestion]


def _span(tl: CrafterTimeline, rng: random.Random) -> tuple[int, int]:
    a, b = sorted(rng.choices(tl.steps_range(), k=2))
    return a, b


def ask_action_count(tl: CrafterTimeline, action: str, from_step: int,
                     to_step: int) -> GameQuestion:
    steps = [t for t in range(from_step, to_step + 1) if tl.actions[t] == action]
    return tl.question("crafter.action_count",
                       params={"action": action, "from_step": from_step, "to_step": to_step},
                       answer=len(steps), evidence_steps=steps,
                       text=f"From step {from_step} to step {to_step}, at how many steps did "
                            f"you take the action {action} (whether or not it worked)?")


@template("crafter.action_count", ability="induction", answer_type="integer",
          games=("crafter",))
def action_count(tl: CrafterTimeline, rng: random.Random) -> Q:
    """How many steps in a range took an action (attempts, whatever the outcome)."""
    taken = sorted({a for a in tl.actions[1:]})
    for action in pick(rng, taken, 3):
        yield ask_action_count(tl, action, *_span(tl, rng))
    for action in pick(rng, unseen(ACTIONS, taken), 1):  # a zero count is an answer
        yield ask_action_count(tl, action, 1, tl.last)


def ask_most_common_move(tl: CrafterTimeline) -> GameQuestion:
    counts = Counter(a for a in tl.actions[1:] if a in MOVES)
    if not counts:
        answer, alternatives, evidence = NOT_ANSWERABLE, [], []
    else:
        top = max(counts.values())
        tied = sorted(a for a, n in counts.items() if n == top)
        answer, alternatives = tied[0], tied[1:]
        evidence = [t for t in tl.steps_range() if tl.actions[t] in tied]
    return tl.question("crafter.most_common_move", params={}, answer=answer,
                       alternatives=alternatives, evidence_steps=evidence,
                       text="Which move action did you take most often?")


@template("crafter.most_common_move", ability="induction", answer_type="action",
          games=("crafter",))
def most_common_move(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The most frequent move action (ties are alternatives). NA: no move was taken."""
    yield ask_most_common_move(tl)


def ask_longest_run(tl: CrafterTimeline, action: str) -> GameQuestion:
    best, run, best_end = 0, 0, 0
    for t in tl.steps_range():
        run = run + 1 if tl.actions[t] == action else 0
        if run > best:
            best, best_end = run, t
    return tl.question("crafter.longest_run", params={"action": action}, answer=best,
                       evidence_steps=range(best_end - best + 1, best_end + 1),
                       text=f"What was your longest run of consecutive steps taking the action "
                            f"{action}?")


@template("crafter.longest_run", ability="induction", answer_type="integer",
          games=("crafter",))
def longest_run(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The longest run of consecutive steps with the same action."""
    for action in pick(rng, sorted({a for a in tl.actions[1:] if a != "noop"}), 2):
        yield ask_longest_run(tl, action)


def ask_collect_count(tl: CrafterTimeline, item: str) -> GameQuestion:
    rises = tl.increases(item)
    return tl.question("crafter.collect_count", params={"item": item}, answer=len(rises),
                       evidence_steps=rises,
                       text=f"At how many steps did your count of {item.replace('_', ' ')} go "
                            f"up?")


@template("crafter.collect_count", ability="induction", answer_type="integer",
          games=("crafter",))
def collect_count(tl: CrafterTimeline, rng: random.Random) -> Q:
    """How many steps raised an item's count (step 1 included)."""
    for item in pick(rng, tl.items_held(), 2):
        yield ask_collect_count(tl, item)


def ask_peak_step(tl: CrafterTimeline, item: str) -> GameQuestion:
    counts = [tl.count(item, t) for t in tl.steps_range()]
    top = max(counts)
    step = counts.index(top) + 1 if top > 0 else None
    return tl.question("crafter.peak_step", params={"item": item},
                       answer=step if step else NOT_ANSWERABLE,
                       evidence_steps=[step] if step else [],
                       text=f"At which step did your count of {item.replace('_', ' ')} first "
                            f"reach its highest value?")


@template("crafter.peak_step", ability="induction", answer_type="integer",
          games=("crafter",))
def peak_step(tl: CrafterTimeline, rng: random.Random) -> Q:
    """The first step at which an item's count was highest. NA: an item never held."""
    held = [i for i in tl.items_held() if any(tl.count(i, t) for t in tl.steps_range())]
    for item in pick(rng, held, 2):
        yield ask_peak_step(tl, item)
    for item in pick(rng, unseen(ITEMS, held), 1):
        yield ask_peak_step(tl, item)


def ask_net_change(tl: CrafterTimeline, item: str, from_step: int,
                   to_step: int) -> GameQuestion:
    change = tl.count(item, to_step) - tl.count(item, from_step - 1)
    return tl.question("crafter.net_change",
                       params={"item": item, "from_step": from_step, "to_step": to_step},
                       answer=change, evidence_steps=[from_step, to_step],
                       text=f"By how much did your count of {item.replace('_', ' ')} change from "
                            f"just before step {from_step} to just after step {to_step} "
                            f"(negative if it fell)?")


@template("crafter.net_change", ability="induction", answer_type="integer",
          games=("crafter",))
def net_change(tl: CrafterTimeline, rng: random.Random) -> Q:
    """An item's change over a range, the first step's own change included."""
    for item in pick(rng, tl.items_held(), 2):
        yield ask_net_change(tl, item, *_span(tl, rng))


def ask_visible_count(tl: CrafterTimeline, material: str) -> GameQuestion:
    steps = [t for t in tl.steps_range() if tl.in_view(material, t)]
    return tl.question("crafter.visible_count", params={"material": material},
                       answer=len(steps), evidence_steps=steps,
                       text=f"After how many of your steps could you see {material} in your "
                            f"view?")


@template("crafter.visible_count", ability="induction", answer_type="integer",
          games=("crafter",))
def visible_count(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Steps after which a material was in the local view (0 is an answer)."""
    seen = [m for m in MATERIALS
            if m != "grass" and any(tl.in_view(m, t) for t in tl.steps_range())]
    for material in pick(rng, seen, 2):
        yield ask_visible_count(tl, material)


def ask_distinct_cells(tl: CrafterTimeline, material: str) -> GameQuestion:
    cells: set[tuple[int, int]] = set()
    evidence = []
    for t in range(tl.last + 1):
        new = {(x, y) for x, y, m in tl.seen_at(t) if m == material} - cells
        if new:
            cells |= new
            evidence.append(t)
    return tl.question("crafter.distinct_cells_seen", params={"material": material},
                       answer=len(cells), evidence_steps=evidence,
                       text=f"How many different {material} cells did you see in all?")


@template("crafter.distinct_cells_seen", ability="induction", answer_type="integer",
          games=("crafter",))
def distinct_cells_seen(tl: CrafterTimeline, rng: random.Random) -> Q:
    """How many distinct cells of a material the player saw (trees, water...)."""
    seen = [m for m in ("tree", "water", "stone", "coal", "iron", "diamond", "lava")
            if tl.first_seen(m) is not None]
    for material in pick(rng, seen, 2):
        yield ask_distinct_cells(tl, material)


def ask_adjacent_count(tl: CrafterTimeline, material: str) -> GameQuestion:
    steps = [t for t in tl.steps_range()
             if any(tl.material_at((tl.pos[t][0] + dx, tl.pos[t][1] + dy), t) == material
                    for dx, dy in MOVES.values())]
    return tl.question("crafter.adjacent_count", params={"material": material},
                       answer=len(steps), evidence_steps=steps,
                       text=f"After how many of your steps was a {material} cell right next to "
                            f"you (left, right, above or below)?")


@template("crafter.adjacent_count", ability="induction", answer_type="integer",
          games=("crafter",))
def adjacent_count(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Steps after which a 4-neighbour of the player was a material, as known then."""
    known = [m for m in ("water", "tree", "stone", "sand", "table", "furnace", "coal", "lava")
             if tl.cells_of(m, tl.last)]
    for material in pick(rng, known, 2):
        yield ask_adjacent_count(tl, material)


def ask_longest_stay(tl: CrafterTimeline) -> GameQuestion:
    best, run, best_end = 0, 0, 0
    for t in tl.steps_range():
        run = run + 1 if tl.pos[t] == tl.pos[t - 1] else 0
        if run > best:
            best, best_end = run, t
    return tl.question("crafter.longest_stay", params={}, answer=best,
                       evidence_steps=range(best_end - best + 1, best_end + 1),
                       text="What was the longest run of consecutive steps at which your "
                            "position did not change?")


@template("crafter.longest_stay", ability="induction", answer_type="integer",
          games=("crafter",))
def longest_stay(tl: CrafterTimeline, rng: random.Random) -> Q:
    """Dwell: the longest run of steps that left the player in the same cell (blocked moves,
    work, sleep)."""
    yield ask_longest_stay(tl)
