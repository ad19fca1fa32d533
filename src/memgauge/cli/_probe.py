"""``memgauge probe recency RUN...``: re-rank the stored candidate pools with a recency
prior and show how the retrieval diagnostics move (design 0030).

Each record's stored ranking (the pool) is re-ranked by s′ = (1−α)·z(score) + α·t̂, z and t̂
min-max over the pool, t̂ the session's place in the episode (1 = the newest); the top k
(the items the system chose, or ``--k``) is then diagnosed as ``memgauge report`` does, by
ability, or by X × Y cell where the records carry cells (``--by``; a multi-label question
counts in each of its cells). No model is called. A clue outside the stored pool stays out at every
α: re-ranking cannot
recover what the system never ranked, and the output says how many clues that is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from ..analysis import CLUE_METRICS, clue_groups, load_runs, question_clues, recency_rerank
from ..analysis._clues import cell_label, record_cells
from ..analysis._cross_topic import history_points
from ..analysis._json import json_safe
from ..analysis._tables import _pick_primary
from ..errors import ConfigError, MemgaugeError
from ..report import show_controls
from ..report._md import cell, table
from ..report._tables_md import MISSING, fmt_pct
from ._common import fail

probe_app = typer.Typer(no_args_is_help=True,
                        help="Probe a run's stored rankings without calling a model.")

DEFAULT_ALPHAS = "0,0.3,0.5,0.7,1"
ALL = "all"
AS_RUN = "as run"
GROUPINGS = ("auto", "ability", "cell")


def parse_alphas(text: str) -> list[float]:
    """``0,0.3,1`` as numbers in [0, 1], in the order given, each once."""
    out: list[float] = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise ConfigError(f"--alpha {text!r}: {part.strip()!r} is not a number; give "
                              f"numbers in [0, 1] separated by commas, e.g. {DEFAULT_ALPHAS}"
                              ) from None
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"--alpha {text!r}: {value:g} lies outside [0, 1]")
        if value not in out:
            out.append(value)
    return out


@dataclass(frozen=True)
class ProbeRow:
    """One α (or the ranking as the run recorded it) over one run's re-rankable records."""

    alpha: float | None  # None: as run
    groups: dict[str, dict[str, Any]]  # ability or cell (and "all") -> ClueGroup.to_dict()


@dataclass(frozen=True)
class RunProbe:
    run: str
    n_records: int  # ok records with clues and a ranking
    n_reranked: int
    n_skipped: int  # no scores or no session positions (runs from before issue 14)
    unranked_clues: int  # of the re-ranked records' clues, those outside their pool
    n_clues: int
    rows: list[ProbeRow]
    by: str = "ability"

    def to_dict(self) -> dict[str, Any]:
        return json_safe({
            "run": self.run, "by": self.by, "n_records": self.n_records,
            "n_reranked": self.n_reranked,
            "n_skipped": self.n_skipped,
            "clues_outside_pool": {"n": self.unranked_clues, "of": self.n_clues},
            "rows": [{"alpha": r.alpha if r.alpha is not None else AS_RUN, "groups": r.groups}
                     for r in self.rows]})


def grouping(by: str, runs: Sequence[Any]) -> str:
    """``--by``: ``auto`` is ``cell`` when a record carries an X × Y cell, else ``ability``."""
    if by not in GROUPINGS:
        raise ConfigError(f"--by {by!r}: use one of {', '.join(GROUPINGS)}")
    if by != "auto":
        return by
    labelled = any(record_cells(r) for run in runs for r in run.records)
    return "cell" if labelled else "ability"


def probe_run(label: str, records: Sequence[Any], alphas: Sequence[float], *,
              primary: str | None, k: int | None, by: str = "ability") -> RunProbe:
    """The recency probe over one run's records (see the module docstring)."""
    eligible = [r for r in records if question_clues(r, k) is not None]
    reranked = {a: [recency_rerank(r, a) for r in eligible] for a in alphas}
    usable = [r for i, r in enumerate(eligible)
              if all(reranked[a][i] is not None for a in alphas)]

    def groups(recs: Sequence[Any]) -> dict[str, dict[str, Any]]:
        keys = (((cell_label(c), ALL, r) for r in recs for c in record_cells(r)) if by == "cell"
                else ((str(r.ability), ALL, r) for r in recs))
        by_group = clue_groups(keys, primary, k)
        out = {a: tiers[ALL].to_dict() for a, tiers in sorted(by_group.items())}
        overall = clue_groups(((ALL, ALL, r) for r in recs), primary, k)
        if overall:
            out[ALL] = overall[ALL][ALL].to_dict()
        return out

    rows = [ProbeRow(None, groups(usable))]
    rows += [ProbeRow(a, groups([x for x in reranked[a] if x is not None])) for a in alphas]
    base = rows[0].groups.get(ALL, {}).get("unranked_clues", {"n": 0, "of": 0})
    return RunProbe(run=label, n_records=len(eligible), n_reranked=len(usable),
                    n_skipped=len(eligible) - len(usable), unranked_clues=base["n"],
                    n_clues=base["of"], rows=rows, by=by)


def _markdown(probes: Sequence[RunProbe], k: int | None) -> str:
    def value(metric: str, group: dict[str, Any]) -> str:
        entry = group.get(metric) or {}
        if not entry.get("n") or entry.get("value") is None:
            return MISSING
        v = entry["value"]
        return f"{v:.3f}" if metric == "mrr" else fmt_pct(v)

    cut = f"k = {k}" if k is not None else "k = the items each system chose"
    out = ["## Recency re-rank probe", "",
           (f"s′ = (1−α)·z(score) + α·t̂ over each record's stored ranking ({cut}); z and t̂ "
            "min-max over the pool, t̂ = 1 for the newest session. No model is called."), ""]
    for p in probes:
        out += [f"### {cell(p.run)}", ""]
        out.append(f"- {p.n_reranked} of {p.n_records} records with clues and a ranking "
                   "re-ranked" + (f"; {p.n_skipped} skipped (an item without a score, or no "
                                  "session positions: runs written by an earlier memgauge)"
                                  if p.n_skipped else ""))
        out.append(f"- {p.unranked_clues} of {p.n_clues} clues lie outside their stored pool: "
                   "re-ranking cannot recover a clue the system never ranked, so they stay "
                   "missed at every α.")
        out.append("")
        if not p.n_reranked:
            continue
        header = ["α", "n", *CLUE_METRICS, "wrong: retrieval / comprehension"]
        body = []
        for row in p.rows:
            g = row.groups.get(ALL, {})
            f = g.get("failures", {})
            body.append([AS_RUN if row.alpha is None else f"{row.alpha:g}",
                         str(g.get("full_clue_recall", {}).get("n", 0)),
                         *(value(m, g) for m in CLUE_METRICS),
                         f"{f.get('retrieval', 0)} / {f.get('comprehension', 0)}"])
        out += [table([cell(h) for h in header], body, right_from=1), ""]
        if p.by == "cell":
            out += _cell_table(p, value)
    return "\n".join(out)


def _cell_table(p: RunProbe, value: Any) -> list[str]:
    """The same diagnostics per X × Y cell (a multi-label question in each of its cells)."""
    header = ["α", "cell", "n", *CLUE_METRICS]
    body = [[AS_RUN if row.alpha is None else f"{row.alpha:g}", name,
             str(g.get("full_clue_recall", {}).get("n", 0)),
             *(value(m, g) for m in CLUE_METRICS)]
            for row in p.rows for name, g in row.groups.items() if name != ALL]
    if not body:
        return []
    return ["By X × Y cell (a multi-label question counts in each of its cells):", "",
            table([cell(h) for h in header], body, right_from=2), ""]


@probe_app.command("recency")
def recency(
    run_dirs: Annotated[list[str], typer.Argument(help="Run folder(s)")],
    alpha: Annotated[str, typer.Option(
        "--alpha", help="Weights of recency, numbers in [0, 1] separated by commas")
    ] = DEFAULT_ALPHAS,
    k: Annotated[int | None, typer.Option(
        "--k", min=1, help="Diagnose the top k (default: the items each system chose)")
    ] = None,
    primary: Annotated[str | None, typer.Option(
        help="Scorer that says which answers are wrong (default: as the report)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="md | json")] = "md",
    by: Annotated[str, typer.Option(
        "--by", help="auto | ability | cell (X × Y; auto: cell when the records carry cells)")
    ] = "auto",
) -> None:
    """How the retrieval diagnostics move when the stored rankings are re-ranked with a
    recency prior (s′ = (1−α)·z(sim) + α·t̂); it cannot recover a clue outside the pool."""
    try:
        if fmt not in ("md", "json"):
            raise ConfigError(f"unknown format {fmt!r}; use md or json")
        alphas = parse_alphas(alpha)
        if by not in GROUPINGS:
            raise ConfigError(f"--by {by!r}: use one of {', '.join(GROUPINGS)}")
        runs = load_runs(run_dirs)
        _, chosen = _pick_primary(runs, primary)
        by = grouping(by, runs)
        probes = [probe_run(run.label, run.records, alphas, primary=chosen, k=k, by=by)
                  for run in runs]
    except MemgaugeError as exc:
        fail(exc)
    if fmt == "json":
        text = json.dumps({"k": k, "alphas": alphas, "primary": chosen,
                           "runs": [p.to_dict() for p in probes]},
                          indent=2, sort_keys=True, allow_nan=False)
    else:
        text = _markdown(probes, k)
    print(show_controls(text, json=fmt == "json"))


def _history_markdown(points: Sequence[Any], skipped: Sequence[str]) -> str:
    def num(x: float | None) -> str:
        return MISSING if x is None else f"{x:.1f}"

    out = ["## Accuracy against combined history size", "",
           ("Runs of `--bench combined` at fixed questions: the mean history each system's "
            "questions were asked over, accuracy (a question's rotations count as one, their "
            "mean), and the change against the same system's `group=single` run over the "
            "questions both answered."), ""]
    body = [[p.system, p.group, p.run, num(p.sessions), num(p.turns), num(p.images),
             str(p.n), fmt_pct(p.accuracy) if p.accuracy is not None else MISSING,
             (f"{100 * p.delta_vs_single:+.1f} pts (n={p.n_paired})"
              if p.delta_vs_single is not None else MISSING)] for p in points]
    header = ["system", "group", "run", "sessions", "turns", "images", "questions",
              "accuracy", "vs single"]
    if body:
        out += [table([cell(h) for h in header], [[cell(c) for c in r] for r in body],
                      right_from=3), ""]
    else:
        out += ["No run of `--bench combined` among these.", ""]
    if skipped:
        out.append("Left out (not `--bench combined`): " + ", ".join(cell(s) for s in skipped))
    return "\n".join(out)


@probe_app.command("history")
def history(
    run_dirs: Annotated[list[str], typer.Argument(help="Run folders of --bench combined")],
    primary: Annotated[str | None, typer.Option(
        help="Scorer that says which answers are right (default: as the report)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="md | json")] = "md",
) -> None:
    """Accuracy against combined history size per system (cross-topic scaling): runs of
    --bench combined at several groupings, paired against group=single."""
    try:
        if fmt not in ("md", "json"):
            raise ConfigError(f"unknown format {fmt!r}; use md or json")
        runs = load_runs(run_dirs)
        _, chosen = _pick_primary(runs, primary)
        points, skipped = history_points(runs, chosen)
    except MemgaugeError as exc:
        fail(exc)
    if fmt == "json":
        text = json.dumps({"primary": chosen, "points": [p.to_dict() for p in points],
                           "skipped": skipped}, indent=2, sort_keys=True, allow_nan=False)
    else:
        text = _history_markdown(points, skipped)
    print(show_controls(text, json=fmt == "json"))
