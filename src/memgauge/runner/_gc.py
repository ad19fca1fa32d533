"""The cyclic garbage collector's settings while a run streams and answers.

A run allocates many short-lived containers (turns, parts, request pieces) and few cycles:
with the default thresholds the collector walked them again and again (~25 % of a run's
CPU, 0.5–0.7 s of assembling the 256K tier). While running, what setup built is frozen out
of collection and collections are rare; the previous settings come back afterwards.
"""

from __future__ import annotations

import gc

RUN_THRESHOLD = (100_000, 50, 1000)


def quiet_gc() -> tuple[int, int, int]:
    """Freeze what exists and raise the thresholds; returns the settings to restore."""
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*RUN_THRESHOLD)
    return previous


def restore_gc(previous: tuple[int, int, int]) -> None:
    gc.set_threshold(*previous)
    gc.unfreeze()
