"""Render paired comparisons of runs against a baseline as Markdown."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from memgauge.analysis import PairedResult
from memgauge.analysis._stats import SMALL_N
from memgauge.report._md import cell, code, table
from memgauge.schema import Record

__all__ = ["render_compare_markdown"]

MISSING = "—"
REGRESSION_LIMIT = 50
ANSWER_LIMIT = 80


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if math.isfinite(x) else MISSING


def _pp(x: float) -> str:
    return f"{x * 100:+.1f}" if math.isfinite(x) else MISSING


def _diff(r: PairedResult) -> str:
    if not math.isfinite(r.difference):
        return MISSING
    text = f"{_pp(r.difference)} pp"
    if math.isfinite(r.ci_low) and math.isfinite(r.ci_high):
        text += f" [{_pp(r.ci_low)}, {_pp(r.ci_high)}]"
        if r.n < SMALL_N:  # a paired bootstrap on few questions is too narrow (design 0040)
            text += f" (small n: under {SMALL_N} pairs, interval too narrow)"
    return text


def _se(se: float, n_clusters: int) -> str:
    """Clustered SE in pp; undefined with one cluster rather than the formula's 0."""
    if n_clusters == 1:
        return "undefined (one cluster)"
    return f"{se * 100:.2f}" if math.isfinite(se) else MISSING


def _p(p: float) -> str:
    if not math.isfinite(p):
        return MISSING
    return "<0.001" if p < 0.001 else f"{p:.3g}"


def _short(text: object, limit: int = ANSWER_LIMIT) -> str:
    flat = " ".join(str(text if text is not None else "").split())
    return cell(flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…")


def _gold(rec: Record) -> str:
    return " / ".join(rec.gold) if isinstance(rec.gold, list) else rec.gold


def render_compare_markdown(names: list[str], results: list[PairedResult],
                            runs: Sequence[Mapping[str, Record]] | None = None) -> str:
    """``names`` are runs R0..Rk; ``results[i - 1]`` compares Ri (B) against R0 (A, the
    baseline). Right→wrong counts questions right in the baseline and wrong in Ri. With
    ``runs`` (each run's records by question id), regressions are shown side by side:
    question, gold, the baseline's answer and the run's."""
    if len(names) != len(results) + 1:
        raise ValueError(f"{len(names)} run names need {len(names) - 1} results, "
                         f"got {len(results)}")
    base = cell(names[0])
    scorers = sorted({r.scorer for r in results})
    lines = [f"# memgauge compare: baseline {base}", ""]
    if scorers:
        thresholds = sorted({r.threshold for r in results})
        lines += [(f"Scorer: {', '.join(cell(s) for s in scorers)}; correct = score ≥ "
                   f"{', '.join(f'{t:g}' for t in thresholds)}. Paired on questions answered "
                   "(status ok, scored) in both runs; difference = run − baseline with a "
                   "paired bootstrap 95% CI; McNemar exact two-sided p."), ""]

    rows = []
    for name, r in zip(names[1:], results, strict=True):
        rows.append([cell(name), str(r.n), _pct(r.accuracy_a), _pct(r.accuracy_b), _diff(r),
                     _p(r.mcnemar_p), str(r.a_only), str(r.b_only)])
    lines += ["## Summary", "",
              table(["run", "n paired", f"acc {base}", "acc run", "diff (95% CI)",
                      "McNemar p", "right→wrong", "wrong→right"], rows), ""]

    cover = []
    for name, r in zip(names[1:], results, strict=True):
        cover.append([cell(name), str(r.only_in_a), str(r.only_in_b), str(r.errors_a),
                      str(r.errors_b), str(r.unscored), str(r.n_clusters),
                      _se(r.se_clustered, r.n_clusters)])
    lines += ["## Unpaired and errors", "",
              table(["run", f"only in {base}", "only in run", f"errors {base}", "errors run",
                      "unscored", "episodes", "clustered SE (pp)"], cover), ""]

    ab_rows = []
    for name, r in zip(names[1:], results, strict=True):
        for ability, s in r.by_ability.items():
            ab_rows.append([cell(name), cell(ability), str(s["n"]), _pct(s["accuracy_a"]),
                            _pct(s["accuracy_b"]), str(s["a_only"]), str(s["b_only"]),
                            _p(s["mcnemar_p"])])
    lines += ["## By ability", ""]
    if ab_rows:
        lines += [table(["run", "ability", "n", f"acc {base}", "acc run", "right→wrong",
                          "wrong→right", "McNemar p"], ab_rows, right_from=2), ""]
    else:
        lines += ["No paired questions.", ""]

    lines += ["## Regressions (right in baseline, wrong in run)", ""]
    for i, (name, r) in enumerate(zip(names[1:], results, strict=True), start=1):
        lines.append(f"### {cell(name)}: {len(r.regressions)}")
        lines.append("")
        if r.regressions:
            shown = r.regressions[:REGRESSION_LIMIT]
            if runs is not None:
                rows = []
                for q in shown:
                    a_rec, b_rec = runs[0][q], runs[i][q]
                    rows.append([code(q), cell(a_rec.ability), _short(a_rec.question),
                                 _short(_gold(a_rec)), _short(a_rec.prediction),
                                 _short(b_rec.prediction)])
                lines.append(table(["question", "ability", "text", "gold", f"answer in {base}",
                                     "answer in run"], rows, right_from=6))
            else:
                lines += [f"- {code(q)}" for q in shown]
            rest = len(r.regressions) - len(shown)
            if rest > 0:
                lines.append(f"- … and {rest} more")
        else:
            lines.append("None.")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
