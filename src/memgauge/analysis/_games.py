"""The game report (design 0032, "Scoring and report"): accuracy by ability × game, against
the horizon and the trajectory length, per template, and answerability.

A game record is one whose ``meta["game"]`` is a mapping (the runner copies it from the
question). Accuracy counts ``status == "ok"`` records that carry the scorer; errors are
counted apart and never enter a rate, answerability's included.

Answerability treats "not answerable" as the POSITIVE class: a record is predicted positive
when the reply is a refusal (``Record.refused``, else :func:`is_refusal` of the prediction)
and is a gold positive when ``meta["game"]["answerable"]`` is false. Precision is over the
questions the model called not answerable, recall over the unanswerable questions; an
undefined rate (nothing predicted, or nothing unanswerable) is ``nan``, shown as missing.
``refusal_rate_answerable`` is the share of answerable questions the model refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memgauge.analysis._json import json_safe
from memgauge.analysis._stats import BOOTSTRAP, SMALL_N, mean, mean_ci
from memgauge.schema import Record
from memgauge.scoring import is_refusal

__all__ = ["ALL_GAMES", "HORIZON_EDGES", "Answerability", "GameCell", "GameReport",
           "game_records", "game_report", "length_bin"]

ALL_GAMES = "all"
# Upper edges of the length bins (steps), shared by the horizon and trajectory axes.
HORIZON_EDGES = (10, 25, 50, 100, 200, 500, 1000)
_ABILITY_ORDER = ("single_hop", "multi_hop", "induction", "spatial", "temporal", "logical",
                  "adversarial")


@dataclass(frozen=True)
class GameCell:
    """Accuracy of the scorer over one group of ok game records, with its CI: a bootstrap,
    or Wilson's below SMALL_N questions, marked ``small_n`` (design 0040)."""

    n: int
    accuracy: float
    ci_low: float
    ci_high: float
    ci_method: str = BOOTSTRAP

    @property
    def small_n(self) -> bool:
        return 0 < self.n < SMALL_N

    def to_dict(self) -> dict[str, Any]:
        return json_safe({"n": self.n, "accuracy": self.accuracy, "ci_low": self.ci_low,
                          "ci_high": self.ci_high, "ci_method": self.ci_method,
                          "small_n": self.small_n})


@dataclass(frozen=True)
class Answerability:
    """Precision, recall and F1 of "not answerable" (the positive class) over ok records."""

    n: int
    true_pos: int  # unanswerable, and the model said so
    false_pos: int  # answerable, and the model said not answerable
    false_neg: int  # unanswerable, and the model answered
    true_neg: int

    @property
    def precision(self) -> float:
        said = self.true_pos + self.false_pos
        return self.true_pos / said if said else math.nan

    @property
    def recall(self) -> float:
        gold = self.true_pos + self.false_neg
        return self.true_pos / gold if gold else math.nan

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        if math.isnan(p) or math.isnan(r):
            return math.nan
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def n_answerable(self) -> int:
        return self.false_pos + self.true_neg

    @property
    def refusal_rate_answerable(self) -> float:
        return self.false_pos / self.n_answerable if self.n_answerable else math.nan

    def to_dict(self) -> dict[str, Any]:
        return json_safe({
            "n": self.n, "true_pos": self.true_pos, "false_pos": self.false_pos,
            "false_neg": self.false_neg, "true_neg": self.true_neg,
            "n_unanswerable": self.true_pos + self.false_neg, "n_answerable": self.n_answerable,
            "precision": self.precision, "recall": self.recall, "f1": self.f1,
            "refusal_rate_answerable": self.refusal_rate_answerable,
        })


@dataclass(frozen=True)
class GameReport:
    """Everything the game sections show for one run; ``to_dict`` is strict JSON."""

    scorer: str
    confidence: float
    n_resamples: int
    seed: int
    n_records: int
    n_errors: int
    games: list[str]
    abilities: list[str]
    by_ability_game: dict[str, dict[str, GameCell]]  # ability -> game (and "all") -> cell
    by_horizon: dict[str, GameCell]  # horizon length bin -> cell
    by_trajectory: dict[str, GameCell]  # trajectory length bin -> cell
    by_template: dict[str, GameCell]
    answerability: dict[str, Answerability]  # game (and "all") -> counts
    bins: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def cells(group: dict[str, GameCell]) -> dict[str, Any]:
            return {k: c.to_dict() for k, c in group.items()}

        return {
            "scorer": self.scorer, "confidence": self.confidence,
            "n_resamples": self.n_resamples, "seed": self.seed,
            "n_records": self.n_records, "n_errors": self.n_errors,
            "games": self.games, "abilities": self.abilities, "bins": self.bins,
            "by_ability_game": {a: cells(g) for a, g in self.by_ability_game.items()},
            "by_horizon": cells(self.by_horizon),
            "by_trajectory": cells(self.by_trajectory),
            "by_template": cells(self.by_template),
            "answerability": {g: a.to_dict() for g, a in self.answerability.items()},
            "positive_class": "not answerable",
        }


def game_records(records: Iterable[Record]) -> list[Record]:
    """The records of game questions (those carrying ``meta["game"]``)."""
    return [r for r in records if isinstance(r.meta.get("game"), dict)]


def length_bin(steps: int) -> str:
    """ "1–10", "11–25", ... "> 1000" by :data:`HORIZON_EDGES`."""
    low = 1
    for edge in HORIZON_EDGES:
        if steps <= edge:
            return f"{low}–{edge}"
        low = edge + 1
    return f"> {HORIZON_EDGES[-1]}"


def _bins() -> list[str]:
    return [length_bin(e) for e in HORIZON_EDGES] + [f"> {HORIZON_EDGES[-1]}"]


def _game_of(rec: Record) -> str:
    return str(rec.meta["game"].get("env") or "unknown")


def _horizon_length(rec: Record) -> int | None:
    h = rec.meta["game"].get("horizon")
    if (isinstance(h, list | tuple) and len(h) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in h) and h[1] >= h[0]):
        return h[1] - h[0] + 1
    return None


def _trajectory_length(rec: Record) -> int | None:
    n = rec.meta["game"].get("trajectory_steps")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _said_not_answerable(rec: Record) -> bool:
    return rec.refused if rec.refused is not None else is_refusal(rec.prediction)


def _cell(values: Sequence[float], **kw: Any) -> GameCell:
    low, high, method = mean_ci(values, **kw)
    return GameCell(n=len(values), accuracy=mean(values), ci_low=low, ci_high=high,
                    ci_method=method)


def _grouped(scored: Sequence[Record], scorer: str, key: Callable[[Record], str | None],
             order: Sequence[str] | None = None, **kw: Any) -> dict[str, GameCell]:
    groups: dict[str, list[float]] = {}
    for rec in scored:
        k = key(rec)
        if k is not None:
            groups.setdefault(k, []).append(rec.scores[scorer])
    keys = [k for k in order if k in groups] if order is not None else sorted(groups)
    return {k: _cell(groups[k], **kw) for k in keys}


def _answerability(records: Sequence[Record]) -> Answerability:
    tp = fp = fn = tn = 0
    n = 0
    for rec in records:
        answerable = rec.meta["game"].get("answerable")
        if not isinstance(answerable, bool):
            continue
        n += 1
        said = _said_not_answerable(rec)
        if not answerable:
            tp, fn = tp + said, fn + (not said)
        else:
            fp, tn = fp + said, tn + (not said)
    return Answerability(n=n, true_pos=tp, false_pos=fp, false_neg=fn, true_neg=tn)


def game_report(records: Iterable[Record], *, scorer: str, seed: int = 0,
                n_resamples: int = 2000, confidence: float = 0.95) -> GameReport | None:
    """The game report of one run's records by ``scorer``; None when no record is a game
    record."""
    games_all = game_records(records)
    if not games_all:
        return None
    ok = [r for r in games_all if r.status == "ok"]
    scored = [r for r in ok if scorer in r.scores]
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}
    games = sorted({_game_of(r) for r in games_all})
    abilities = sorted({str(r.ability) for r in games_all},
                       key=lambda a: (_ABILITY_ORDER.index(a) if a in _ABILITY_ORDER
                                      else len(_ABILITY_ORDER), a))
    by_ability_game: dict[str, dict[str, GameCell]] = {}
    for ability in abilities:
        mine = [r for r in scored if str(r.ability) == ability]
        row = _grouped(mine, scorer, _game_of, games, **kw)
        if mine:
            row[ALL_GAMES] = _cell([r.scores[scorer] for r in mine], **kw)
        by_ability_game[ability] = row
    all_row = _grouped(scored, scorer, _game_of, games, **kw)
    if scored:
        all_row[ALL_GAMES] = _cell([r.scores[scorer] for r in scored], **kw)
    by_ability_game[ALL_GAMES] = all_row
    bins = _bins()

    def horizon_bin(r: Record) -> str | None:
        n = _horizon_length(r)
        return None if n is None else length_bin(n)

    def trajectory_bin(r: Record) -> str | None:
        n = _trajectory_length(r)
        return None if n is None else length_bin(n)

    answerability = {g: _answerability([r for r in ok if _game_of(r) == g]) for g in games}
    answerability[ALL_GAMES] = _answerability(ok)
    return GameReport(
        scorer=scorer, confidence=confidence, n_resamples=n_resamples, seed=seed,
        n_records=len(games_all), n_errors=len(games_all) - len(ok), games=games,
        abilities=abilities, by_ability_game=by_ability_game,
        by_horizon=_grouped(scored, scorer, horizon_bin, bins, **kw),
        by_trajectory=_grouped(scored, scorer, trajectory_bin, bins, **kw),
        by_template=_grouped(scored, scorer, lambda r: str(r.meta["game"].get("template")
                                                           or "unknown"), None, **kw),
        answerability=answerability, bins=bins,
    )
