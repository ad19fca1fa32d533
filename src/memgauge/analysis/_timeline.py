"""Accuracy over a timeline: by how much history existed when a question was asked, and by
how far back its latest evidence lay (design 0029).

Records of questions asked mid-history carry ``meta.elapsed_sessions`` (sessions up to and
including the one after which it was asked) and, when its evidence existed by then,
``meta.evidence_distance`` (sessions between the latest evidence session and the question;
0 = the session just before it). Both describe the question, not the protocol, so an online
and an offline run of one benchmark put each question in the same bin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..schema import Record
from ._stats import mean

AXES = ("elapsed_sessions", "evidence_distance")
# Upper bounds (inclusive) of each bin; the last bin is open. Counts, not shares of the
# episode: a 1M-token timeline's first 50 sessions are as little history as a 32K one's.
EDGES: dict[str, tuple[int, ...]] = {
    "elapsed_sessions": (10, 25, 50, 100, 200, 400),
    "evidence_distance": (0, 4, 19, 49, 99),
}
TITLES = {"elapsed_sessions": "Sessions when asked",
          "evidence_distance": "Sessions since the latest evidence"}


def bin_labels(axis: str) -> list[str]:
    """``1–10``, ``11–25``, … ``401+`` (``0`` alone where a bin holds one value)."""
    edges = EDGES[axis]
    low = 1 if axis == "elapsed_sessions" else 0
    out = []
    for high in edges:
        out.append(str(high) if high == low else f"{low}–{high}")
        low = high + 1
    return [*out, f"{edges[-1] + 1}+"]


def bin_of(axis: str, value: Any) -> str | None:
    """The bin label of a recorded value; None for a missing or malformed one."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    labels = bin_labels(axis)
    for label, high in zip(labels, EDGES[axis], strict=False):
        if value <= high:
            return label
    return labels[-1]


def timeline_cells(records: Iterable[Record], primary: str | None,
                   ) -> dict[str, dict[str, tuple[float, int]]]:
    """Axis -> bin -> (accuracy of ``primary`` over the ok records carrying it, n); an axis
    no record carries is left out, and so is every bin without records. Errors are not
    counted (they are reported apart)."""
    values: dict[str, dict[str, list[float]]] = {}
    for r in records:
        if r.status != "ok" or primary is None or primary not in r.scores:
            continue
        for axis in AXES:
            label = bin_of(axis, r.meta.get(axis))
            if label is not None:
                values.setdefault(axis, {}).setdefault(label, []).append(r.scores[primary])
    return {axis: {b: (mean(v), len(v)) for b in bin_labels(axis)
                   if (v := values[axis].get(b))}
            for axis in AXES if axis in values}


def by_system(groups: Mapping[str, Sequence[Record]], primary: str | None,
              ) -> dict[str, dict[str, dict[str, tuple[float, int]]]]:
    """System -> axis -> bin -> (accuracy, n), for systems with timeline records."""
    out = {}
    for system, records in groups.items():
        cells = timeline_cells(records, primary)
        if cells:
            out[system] = cells
    return out
