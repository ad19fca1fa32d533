"""The MemEye export's plans: every X x Y cell its families cover, filled evenly (0036).

Question k goes to the k-th cell modulo C (the C cells the families cover, in grid order
X1Y1, X1Y2, X1Y3, X2Y1, ..., X4Y3), and a cell's j-th question comes from its families in
turn, so every cell gets floor(N/C) or ceil(N/C) questions, the first N mod C cells in grid
order the larger count. A plan whose exclusive keys clash with an earlier one is redrawn
for the same cell (another seed, the next variant: another vehicle, locker, app or
arrangement, then the cell's next family) instead of being skipped; a cell that still
cannot take its question stops generation before any benchmark file is written.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import date, timedelta
from functools import cache
from typing import TYPE_CHECKING

from ...errors import ConfigError
from ._families import FAMILIES, MEMEYE_FAMILIES, When, keys_clash, with_image_dependency

if TYPE_CHECKING:
    from ._families import QuestionPlan

GRID = tuple(f"X{x}Y{y}" for x in range(1, 5) for y in range(1, 4))
MAX_CELL_DRAWS = 400  # redraws of one question before its cell counts as full
# --questions' default for the export: 2 per cell. The X1 cells share one pool of 14
# arrangements (ie_scene takes 2 a plan, msr_scenes 3, ku_scene 1), so 3 per cell (18)
# cannot fit one timeline; nor can a 4th vehicle or locker chain.
MEMEYE_QUESTIONS = 24


@cache
def family_cell(family: str) -> str:
    """The X x Y cell a family's plans carry (fixed per family)."""
    plan = FAMILIES[family].plan(random.Random(0), When(date(2025, 9, 1), variant=1))
    return f"{plan.labels.x}{plan.labels.y}"


def cells_of(families: list[str] | None) -> dict[str, list[str]]:
    """The cells ``families`` cover, in grid order, each with its families in given order."""
    out: dict[str, list[str]] = {}
    chosen = list(families or MEMEYE_FAMILIES)
    for cell in GRID:
        members = [f for f in chosen if family_cell(f) == cell]
        if members:
            out[cell] = members
    return out


def check_questions(families: list[str] | None, questions: int) -> None:
    """Fewer questions than cells would leave a cell empty: refused before anything runs."""
    cells = cells_of(families)
    if questions < len(cells):
        raise ConfigError(
            f"--format memeye: --questions {questions} cannot cover the {len(cells)} X x Y "
            f"cells its families fill ({', '.join(cells)}); ask for at least {len(cells)} "
            "questions, or narrow --families to fewer cells")


def _draw(seed: int, i: int, family: str, attempt: int,
          ) -> tuple[QuestionPlan, date, random.Random]:
    rng = random.Random(f"{seed}:question:{i}" if attempt == 0
                        else f"{seed}:question:{i}:draw{attempt}")
    qdate = date(2025, 9, 1) + timedelta(days=rng.randint(0, 90))
    plan = FAMILIES[family].plan(rng, When(qdate, variant=1 + attempt))
    return with_image_dependency(plan), qdate, rng


def cell_plans(seed: int, questions: int, families: list[str] | None,
               ) -> Iterator[tuple[str, QuestionPlan, date, random.Random]]:
    """``questions`` plans allocated round-robin over the cells ``families`` cover (default:
    every MemEye family), no two clashing. Drawn before the output folder is touched."""
    cells = cells_of(families)
    order = list(cells)
    filled = dict.fromkeys(order, 0)
    taken: set[str] = set()
    for i in range(questions):
        cell = order[i % len(order)]
        members, j = cells[cell], filled[cell]
        for attempt in range(MAX_CELL_DRAWS):
            family = members[(j + attempt) % len(members)]
            plan, qdate, rng = _draw(seed, i, family, attempt)
            if not keys_clash(plan.exclusive, taken):
                break
        else:
            raise ConfigError(
                f"--format memeye: cell {cell} cannot take a question {j + 1} on one timeline: "
                f"after {MAX_CELL_DRAWS} draws every plan of {', '.join(members)} shares a "
                f"subject (arrangement, entity kind, app screen) with an earlier question; "
                f"ask for fewer --questions (this one asked {questions}; {MEMEYE_QUESTIONS} "
                "fit with every family), or leave families that share those subjects out of "
                "--families")
        taken |= plan.exclusive
        filled[cell] += 1
        yield f"synth-{seed}-{i:04d}", plan, qdate, rng
