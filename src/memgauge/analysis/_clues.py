"""Retrieval diagnostics from a record's full ranking (issue 14 §2, design 0030).

A system that retrieves records its ranking in ``Response.retrieved``: the items it chose
first, then the rest of the ranking it chose from. With the question's gold clues C (from
``Record.evidence``, in chronological order, c* the latest), L the top k of the ranking and
r(x) the rank of x, per question:

- ``any_clue_recall`` = 1[C ∩ L ≠ ∅]; ``full_clue_recall`` = 1[C ⊆ L];
  ``latest_clue_recall`` = 1[c* ∈ L]; ``mrr`` = 1/r of the best-ranked clue when it is in L,
  else 0;
- ``stale_dominance`` = 1[∃ c ∈ C∖{c*}: r(c) < r(c*)] and ``rank_inversion`` = the share of
  clue pairs (earlier, later) with r(earlier) < r(later), both over questions with |C| ≥ 2;
- ``latest_miss`` = 1[c* ∉ L ∧ (C∖{c*}) ∩ L ≠ ∅].

Every diagnostic is taken at k: a rank beyond k (or a clue not in the stored ranking) counts
as ∞, and ∞ is not below ∞. Ranks are pessimistic under ties: an item tied in score with the
items after it takes the rank of the last of them, so a clue that only made the cut by a
tie-break is counted as missed. k is the number of items the system chose, unless given.
A wrong answer whose clues were all in L is a comprehension failure, else a retrieval one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memgauge.errors import ConfigError
from memgauge.schema import Record, RetrievedItem

__all__ = [
    "CLUE_METRICS",
    "ClueGroup",
    "QuestionClues",
    "cell_label",
    "clue_groups",
    "clues_of",
    "pessimistic_ranks",
    "question_clues",
    "recency_rerank",
    "record_cells",
]

CLUE_METRICS = ("any_clue_recall", "full_clue_recall", "latest_clue_recall", "mrr",
                "stale_dominance", "rank_inversion", "latest_miss")
MULTI_CLUE = ("stale_dominance", "rank_inversion")  # defined only where |C| >= 2
POSITIONS_KEY = "session_positions"  # record meta: session id -> index in the episode

Key = tuple[str, str | None]  # (session id, turn id or None)


@dataclass(frozen=True)
class QuestionClues:
    """One question's diagnostics at ``k``; the |C| ≥ 2 ones are ``None`` for one clue.
    ``ranks``: each clue's rank in chronological order (``inf`` beyond k or not ranked)."""

    question_id: str
    k: int
    ranks: tuple[float, ...]
    any_clue_recall: float
    full_clue_recall: float
    latest_clue_recall: float
    mrr: float
    stale_dominance: float | None
    rank_inversion: float | None
    latest_miss: float
    unranked_clues: int  # clues absent from the stored ranking altogether

    def value(self, metric: str) -> float | None:
        return getattr(self, metric)


@dataclass(frozen=True)
class ClueGroup:
    """The diagnostics of a group of questions: each metric's mean, with the k the
    questions were taken at (one number, or ``[min, max]`` when their own k differ) and the
    number of questions behind it; plus the split of wrong answers."""

    metrics: dict[str, dict[str, Any]]
    retrieval_failures: int
    comprehension_failures: int
    n_wrong: int
    unranked_clues: int
    n_clues: int

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {m: dict(v) for m, v in self.metrics.items()}
        out["failures"] = {"retrieval": self.retrieval_failures,
                           "comprehension": self.comprehension_failures,
                           "n_wrong": self.n_wrong, "k": self.metrics["full_clue_recall"]["k"]}
        out["unranked_clues"] = {"n": self.unranked_clues, "of": self.n_clues}
        return out


def _key_of(item: RetrievedItem) -> Key:
    return (item.pointer.session_id, item.pointer.turn_id)


def _matches(item: Key, clue: Key) -> bool:
    """A session item holds every clue of its session; a turn or round item matches a
    session clue by its session and a turn clue by its (first) turn."""
    if item[0] != clue[0]:
        return False
    return clue[1] is None or item[1] is None or item[1] == clue[1]


def clues_of(record: Record) -> list[Key]:
    """The record's distinct clues (session, turn; an image pointer is its turn) in
    chronological order: by the episode's session order where the record carries it for
    every clue (``meta.session_positions``, written since issue 14), ties and older records
    in the order of ``Record.evidence`` (an update chain's order, the latest last)."""
    keys = list(dict.fromkeys((p.session_id, p.turn_id) for p in record.evidence))
    positions = _positions(record)
    if positions is not None and all(k[0] in positions for k in keys):
        keys.sort(key=lambda k: positions[k[0]])  # stable: evidence order within a session
    return keys


def _positions(record: Record) -> dict[str, float] | None:
    raw = record.meta.get(POSITIONS_KEY)
    if not isinstance(raw, Mapping):
        return None
    return {str(s): float(i) for s, i in raw.items()
            if isinstance(i, int | float) and not isinstance(i, bool)}


def pessimistic_ranks(scores: Sequence[float | None]) -> list[int]:
    """1-based ranks of a ranked list: an item's position, or under a tie (equal scores
    next to each other) the position of the last item of the tie. Items without a score
    are ranked by position."""
    ranks = list(range(1, len(scores) + 1))
    for i in range(len(scores) - 2, -1, -1):
        if scores[i] is not None and scores[i] == scores[i + 1]:
            ranks[i] = ranks[i + 1]
    return ranks


def _clue_ranks(keys: Sequence[Key], ranks: Sequence[int], clues: Sequence[Key]) -> list[float]:
    """Each clue's best rank among the items that match it (``inf`` when none)."""
    out = []
    for clue in clues:
        found = [r for key, r in zip(keys, ranks, strict=True) if _matches(key, clue)]
        out.append(float(min(found)) if found else math.inf)
    return out


def _diagnose(question_id: str, full_ranks: Sequence[float], k: int) -> QuestionClues:
    ranks = tuple(r if r <= k else math.inf for r in full_ranks)
    latest, stale = ranks[-1], ranks[:-1]
    found = [r for r in ranks if math.isfinite(r)]
    multi = len(ranks) >= 2
    pairs = [(ranks[i], ranks[j]) for i in range(len(ranks)) for j in range(i + 1, len(ranks))]
    return QuestionClues(
        question_id=question_id, k=k, ranks=ranks,
        any_clue_recall=float(bool(found)),
        full_clue_recall=float(len(found) == len(ranks)),
        latest_clue_recall=float(math.isfinite(latest)),
        mrr=1.0 / min(found) if found else 0.0,
        stale_dominance=float(any(r < latest for r in stale)) if multi else None,
        rank_inversion=(sum(a < b for a, b in pairs) / len(pairs)) if multi else None,
        latest_miss=float(not math.isfinite(latest) and any(math.isfinite(r) for r in stale)),
        unranked_clues=sum(not math.isfinite(r) for r in full_ranks))


def _check_k(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"--k {k!r}: use a whole number of 1 or more")


def question_clues(record: Record, k: int | None = None) -> QuestionClues | None:
    """The record's diagnostics at ``k`` (default: how many items its system chose), or
    ``None`` for a record that has no clues or no ranking, or is an error."""
    _check_k(k)
    items = record.response.retrieved
    clues = clues_of(record)
    if record.status != "ok" or not items or not clues:
        return None
    keys = [_key_of(it) for it in items]
    ranks = pessimistic_ranks([it.score for it in items])
    own_k = k if k is not None else sum(1 for it in items if it.chosen)
    return _diagnose(record.question_id, _clue_ranks(keys, ranks, clues), own_k)


def _k_label(ks: Iterable[int]) -> int | list[int]:
    values = sorted(set(ks))
    return values[0] if len(values) == 1 else [values[0], values[-1]]


def _is_wrong(record: Record, primary: str | None) -> bool:
    return primary is not None and primary in record.scores and record.scores[primary] < 1


def clue_group(pairs: Sequence[tuple[Record, QuestionClues]],
               primary: str | None) -> ClueGroup:
    """Aggregate (record, diagnostics) pairs of one group; ``primary`` says which answers
    are wrong for the retrieval/comprehension split."""
    metrics: dict[str, dict[str, Any]] = {}
    for m in CLUE_METRICS:
        values = [(q.value(m), q.k) for _, q in pairs if q.value(m) is not None]
        metrics[m] = {"value": (sum(v for v, _ in values) / len(values)  # type: ignore[misc]
                                if values else math.nan),
                      "k": _k_label(k for _, k in values) if values else None,
                      "n": len(values)}
    wrong = [q for r, q in pairs if _is_wrong(r, primary)]
    retrieval = sum(1 for q in wrong if q.full_clue_recall == 0)
    return ClueGroup(metrics=metrics, retrieval_failures=retrieval,
                     comprehension_failures=len(wrong) - retrieval, n_wrong=len(wrong),
                     unranked_clues=sum(q.unranked_clues for _, q in pairs),
                     n_clues=sum(len(q.ranks) for _, q in pairs))


def clue_groups(records: Iterable[tuple[str, str, Record]], primary: str | None,
                k: int | None = None) -> dict[str, dict[str, ClueGroup]]:
    """``(ability, tier, record)`` triples -> ability -> tier -> :class:`ClueGroup`, over
    the records that have clues and a ranking (none: an empty map)."""
    _check_k(k)
    buckets: dict[str, dict[str, list[tuple[Record, QuestionClues]]]] = {}
    for ability, tier, record in records:
        q = question_clues(record, k)
        if q is not None:
            buckets.setdefault(ability, {}).setdefault(tier, []).append((record, q))
    return {a: {t: clue_group(pairs, primary) for t, pairs in tiers.items()}
            for a, tiers in buckets.items()}


def record_cells(record: Record) -> tuple[str, ...]:
    """The record's X × Y cells (``X3_Y2``): every cell of its multi-labels (MemEye's
    ``meta.xy_cells``), else its one ``labels.x``/``labels.y`` pair, else none. A
    multi-label question counts in each of its cells."""
    raw = record.meta.get("xy_cells")
    if isinstance(raw, list) and raw:
        return tuple(dict.fromkeys(str(c) for c in raw))
    if record.labels.x and record.labels.y:
        return (f"{record.labels.x}_{record.labels.y}",)
    return ()


def cell_label(cell: str) -> str:
    """How a cell names its group beside the abilities: ``X3 × Y2``."""
    return cell.replace("_", " × ")


# --- the recency re-rank probe -----------------------------------------------------------


def _min_max(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [0.0 if hi == lo else (v - lo) / (hi - lo) for v in values]


def recency_rerank(record: Record, alpha: float) -> Record | None:
    """The record with its stored ranking re-ranked by s′ = (1−α)·z(score) + α·t̂ (z and
    t̂ min-max over the pool; t̂ from the session's place in the episode, 1 = the newest),
    the top k (k = the items it chose) marked chosen again. ``None`` when the record cannot
    be re-ranked: no ranking, an item without a score, or no session positions recorded.
    Only the stored pool is re-ranked: a clue outside it stays out at every α."""
    if not 0.0 <= alpha <= 1.0:
        raise ConfigError(f"--alpha {alpha}: every α must lie in [0, 1]")
    items = record.response.retrieved
    positions = _positions(record)
    if not items or positions is None or any(it.score is None for it in items):
        return None
    if any(it.pointer.session_id not in positions for it in items):
        return None
    z = _min_max([float(it.score) for it in items])  # type: ignore[arg-type]
    t = _min_max([positions[it.pointer.session_id] for it in items])
    s = [(1 - alpha) * zi + alpha * ti for zi, ti in zip(z, t, strict=True)]
    order = sorted(range(len(items)), key=lambda i: -s[i])  # stable: old order under ties
    n_chosen = sum(1 for it in items if it.chosen)
    reranked = [items[i].model_copy(update={"score": round(s[i], 12), "chosen": j < n_chosen})
                for j, i in enumerate(order)]
    response = record.response.model_copy(update={"retrieved": reranked})
    return record.model_copy(update={"response": response})
