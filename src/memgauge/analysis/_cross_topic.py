"""Accuracy against combined history size (cross-topic scaling, design 0036).

Reads runs of ``--bench combined``: their manifests name each combined episode's history
size. Per system (its identity's system and model) and grouping: the mean history size
its questions were asked over, the accuracy (a question's rotations are one question, its
debiased EM), and the change against the same system's ``group=single`` run over the
questions both answered (paired: the questions are the same, only the history grew).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memgauge.analysis._rotations import base_id, question_scores

__all__ = ["HistoryPoint", "history_points"]

SINGLE = "single"
SIZES = ("sessions", "turns", "images")


@dataclass(frozen=True)
class HistoryPoint:
    system: str
    group: str
    run: str
    n: int  # questions answered
    accuracy: float | None
    sessions: float | None  # mean history size over those questions
    turns: float | None
    images: float | None
    delta_vs_single: float | None  # paired, over the questions both answered
    n_paired: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _system(run: Any) -> str:
    ident = run.identity
    return f"{ident.get('system', '?')} ({ident.get('model', '?')})"


def _combined(run: Any) -> dict[str, Any] | None:
    bench = run.manifest.get("benchmark") if isinstance(run.manifest, dict) else None
    if isinstance(bench, dict) and bench.get("name") == "combined":
        return bench
    return None


def history_points(runs: Sequence[Any], primary: str | None = None
                   ) -> tuple[list[HistoryPoint], list[str]]:
    """The points, by system then history size; and the runs left out (not combined)."""
    skipped = [run.label for run in runs if _combined(run) is None]
    parsed = []
    for run in runs:
        bench = _combined(run)
        if bench is None:
            continue
        episodes = bench.get("episodes") or {}
        scores = {q.base_id: q for q in question_scores(run.records, primary)
                  if q.value is not None}
        episode_of = {base_id(r): r.episode_id for r in run.records}
        parsed.append((run, str(bench.get("group")), scores, episode_of, episodes))
    singles = {_system(run): scores for run, group, scores, _, _ in parsed if group == SINGLE}
    points = []
    for run, group, scores, episode_of, episodes in parsed:
        system = _system(run)
        sizes = {k: [float(episodes[e][k]) for q in scores
                     if isinstance(episodes.get(e := episode_of.get(q)), dict)
                     and k in episodes[e]] for k in SIZES}
        base = singles.get(system)
        common = sorted(set(scores) & set(base)) if base is not None and group != SINGLE else []
        delta = (sum(scores[q].value - base[q].value for q in common) / len(common)  # type: ignore[operator,union-attr]
                 if common else None)
        points.append(HistoryPoint(
            system=system, group=group, run=run.label, n=len(scores),
            accuracy=(sum(q.value for q in scores.values()) / len(scores)  # type: ignore[misc]
                      if scores else None),
            **{k: (sum(v) / len(v) if v else None) for k, v in sizes.items()},
            delta_vs_single=delta, n_paired=len(common)))
    points.sort(key=lambda p: (p.system, p.turns if p.turns is not None else -1.0, p.group))
    return points, skipped
