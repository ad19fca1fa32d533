"""Render :class:`~memgauge.analysis.ReportTables` (the cross-run tables) as Markdown and
JSON. The formatting helpers here are shared with the HTML page so that all three carry the
same numbers, written the same way."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from memgauge.analysis import (
    LONG_CONTEXT,
    Cell,
    CostRow,
    ReportTables,
    RunRow,
    Spread,
    errors_cell,
    measure_of,
    ok_with_labels,
    scorer_label,
)
from memgauge.analysis._audit import OVER_CREDIT_WARN
from memgauge.analysis._clues import CLUE_METRICS
from memgauge.analysis._stats import WILSON
from memgauge.analysis._timeline import AXES, TITLES, bin_labels
from memgauge.report._md import cell, code, table

__all__ = [
    "CLUES_HEADER",
    "CLUES_NOTE",
    "COST_HEADER",
    "COST_NOTE",
    "LEADERBOARD_NOTE",
    "NO_LONG_CONTEXT_NOTE",
    "ROTATION_HEADER",
    "ROTATION_NOTE",
    "SIDE_BY_SIDE_NOTE",
    "SMALL_N_MARK",
    "XY_CELLS_NOTE",
    "XY_NOTE",
    "X_LEVELS",
    "Y_LEVELS",
    "clue_rows",
    "cost_cells",
    "cost_notes",
    "fmt_cell",
    "fmt_ci",
    "fmt_pct",
    "fmt_rho",
    "fmt_se",
    "fmt_xy_cell",
    "ranked",
    "render_tables_json",
    "render_tables_markdown",
    "rotation_cells",
    "run_name",
    "side_by_side_rows",
    "tables_payload",
]

MISSING = "—"
DEPTH_NOTE = ("Evidence depth: share of the history after the earliest evidence session "
              "(0 = the most recent session, towards 1 = the start of a long history).")
# MemEye's two axes (benchmark/prompt/sys_prompt.txt there), which our labels reuse.
XY_NOTE = ("X: how fine the visual evidence is that the answer needs; Y: how much reasoning "
           "over the history it takes (MemEye's two axes).")
X_LEVELS = {"X1": ("scene", "the whole scene's content"),
            "X2": ("region", "a localised region or the layout"),
            "X3": ("instance", "one specific entity seen before"),
            "X4": ("pixel", "fine detail: colour, texture, small text, subtle shape")}
Y_LEVELS = {"Y1": ("atomic", "one fact from one session"),
            "Y2": ("relational", "facts tied together across sessions or modalities"),
            "Y3": ("evolutionary", ("constraints combined, contradictions found, beliefs "
                                    "revised by newer evidence"))}


COST_HEADER = ("System", "Kind", "Tier", "Questions (known/answered)", "Tokens / question",
               "of which ingest", "Tokens / correct", "Answer latency median / p95",
               "Ingest s / question median / p95", "Total s / question median / p95",
               "Memory (median items, bytes)", "$ / question", "$ / correct",
               "Spent (tokens, $)")
COST_NOTE = ("Tokens: the answer's server counts plus the question's share of its system's "
             "ingest tokens (what an answer point ingested, split among the questions asked "
             "there). Answered questions only; a record without counts (written by an "
             "earlier memgauge, or a server that sent no usage) is left out, not counted as 0. "
             "Latency: the system's answer call, cache hits left out; ingest s: the "
             "question's share of the runner-timed reset and ingest. Spent: every record's "
             "tokens (errors included, response-cache replays left out: not paid here), in "
             "dollars at the prices file's rates (cached_input for cached prompt tokens).")
SIDE_BY_SIDE_NOTE = ("Accuracy per ability against tier, one line per system: long-context "
                     "systems solid, memory agents dashed (MemLens Figure 4a), baselines "
                     "(oracles, oracle readers, gold-evidence views) dotted, with what each "
                     "costs beside it.")
NO_LONG_CONTEXT_NOTE = ("No long-context system (full-context) is among these runs: there "
                        "is nothing here to compare the memory agents with.")


CLUES_HEADER = ("Ability", "Tier", "k", "Any-clue R@k", "Full-clue R@k", "Latest-clue R@k",
                "MRR@k", "Stale-dominance", "Rank-inversion", "Latest-miss",
                "Wrong: retrieval / comprehension")
CLUES_NOTE = ("From each record's stored ranking (the items the system chose, then the rest of "
              "its ranking), at k = the items the system chose unless `--k` is given; a clue "
              "ranked beyond k counts as rank ∞, ties take the rank of the last tied item. "
              "Stale-dominance and rank-inversion count questions with two or more clues. A "
              "wrong answer with every clue in the top k is a comprehension failure, otherwise "
              "a retrieval failure (MemLens's split, at the same k). Systems that record no "
              "ranking (full context) are not listed.")


def _clue_value(metric: str, entry: Mapping[str, Any]) -> str:
    value, n = entry.get("value"), entry.get("n", 0)
    if not n or value is None:
        return MISSING
    shown = _num(value, ".3f") if metric == "mrr" else fmt_pct(value)
    return f"{shown} (n={n})"


def _clue_k(k: Any) -> str:
    if isinstance(k, list):
        return f"{k[0]}–{k[-1]}"
    return MISSING if k is None else str(k)


def clue_rows(t: ReportTables) -> dict[str, list[list[str]]]:
    """System -> rows of plain text cells in :data:`CLUES_HEADER` order (escaped by the
    caller), shared by the Markdown and the HTML page."""
    out: dict[str, list[list[str]]] = {}
    for system, abilities in t.clues.items():
        rows = []
        for ability, tiers in abilities.items():
            for tier, group in tiers.items():
                f = group["failures"]
                rows.append([ability, tier, _clue_k(group["full_clue_recall"]["k"]),
                             *(_clue_value(m, group[m]) for m in CLUE_METRICS),
                             f"{f['retrieval']} / {f['comprehension']} (of {f['n_wrong']})"])
        out[system] = rows
    return out


def _clues_section(t: ReportTables) -> list[str]:
    out = ["### Retrieval diagnostics (clues in the ranking)", ""]
    rows = clue_rows(t)
    if not rows:
        return [*out, "No record carries both a ranking and gold evidence.", ""]
    out += [CLUES_NOTE, ""]
    for system, body in rows.items():
        out += [f"**{cell(system)}**", "",
                table([cell(h) for h in CLUES_HEADER], [[cell(c) for c in r] for r in body],
                      right_from=2), ""]
    return out


TIMELINE_NOTE = ("Questions asked mid-history (timeline episodes, `asked_after`): accuracy by "
                 "how many sessions existed when each was asked, and by how many sessions "
                 "came between its latest evidence session and the question (0 = the session "
                 "just before it; refusals have no evidence and appear only in the first). "
                 "Both are the question's own position, whatever the run's `--protocol`.")


def timeline_grids(t: ReportTables) -> list[tuple[str, list[str], dict[str, dict[str, Cell]]]]:
    """(title, bin columns, system -> bin -> cell) per axis that some system has, shared by
    the Markdown and the HTML page."""
    out = []
    for axis in AXES:
        grid = {system: axes[axis] for system, axes in t.timeline.items() if axis in axes}
        if grid:
            cols = [b for b in bin_labels(axis) if any(b in bins for bins in grid.values())]
            out.append((TITLES[axis], cols, grid))
    return out


def _timeline_section(t: ReportTables) -> list[str]:
    grids = timeline_grids(t)
    if not grids:
        return []  # no question was asked mid-history: nothing to say
    out = ["### Accuracy over the timeline", "", TIMELINE_NOTE, ""]
    for title, cols, grid in grids:
        out += [f"**{cell(title)}**", "", _grid(grid, cols, "System"), ""]
    return out


def _num(x: float | None, fmt: str = ",.1f") -> str:
    return MISSING if x is None or not math.isfinite(x) else format(x, fmt)


def _spread(s: Spread, unit: str = " s", fmt: str = ".3f") -> str:
    if not s.n:
        return MISSING
    return f"{format(s.median, fmt)}{unit} / {format(s.p95, fmt)}{unit} (n={s.n})"


def _dollars(x: float | None) -> str:
    return MISSING if x is None else f"${x:,.6f}"


def cost_cells(r: CostRow) -> list[str]:
    """One cost row as plain text cells (escaped by the caller), in :data:`COST_HEADER`
    order."""
    per_correct = (_num(r.tokens_per_correct) if r.n_correct
                   else (f"{MISSING} (none correct)" if r.n_known else MISSING))
    ingest = _num(r.ingest_tokens_per_question)
    if r.n_known and not r.n_ingest_reported:
        ingest += " (none reported)"
    items, size = r.memory_items, r.memory_bytes
    memory = (f"{_num(items.median, ',.0f')} items, {_num(size.median, ',.0f')} B"
              if items.n or size.n else MISSING)
    return [r.system, r.kind, r.tier, f"{r.n_known}/{r.n_ok}",
            _num(r.tokens_per_question), ingest, per_correct,
            _spread(r.answer_latency_s), _spread(r.ingest_s_per_question),
            _spread(r.total_s_per_question), memory,
            _dollars(r.dollars_per_question),
            (f"{MISSING} (none correct)" if r.dollars_per_question is not None
             and r.dollars_per_correct is None else _dollars(r.dollars_per_correct)),
            _spent(r)]


def _spent(r: CostRow) -> str:
    """What the records say was spent (the run's ledger, design 0034): the answers, then
    the judges' calls apart when there were any."""
    answers = _tokens_usd(r.spent_tokens, r.spent_usd)
    if not r.judge_spent_tokens:
        return answers
    return f"{answers}; judge: {_tokens_usd(r.judge_spent_tokens, r.judge_spent_usd)}"


def _tokens_usd(tokens: int, usd: float | None) -> str:
    return f"{tokens:,}" if usd is None else f"{tokens:,}, ${usd:,.4f}"


def cost_notes(t: ReportTables) -> list[str]:
    """What the cost table cannot say, as sentences: unknown counts, missing prices."""
    notes = []
    for r in t.cost:
        if r.n_known < r.n_ok:
            notes.append(f"{r.system} at {r.tier}: {r.n_ok - r.n_known} of {r.n_ok} answered "
                         "question(s) carry no token counts (unknown, left out)")
    notes += sorted({f"{r.system}: {r.price_note}; no dollars" for r in t.cost
                     if r.price_note})
    if t.prices_file is None:
        notes.append("No --prices file: no dollars.")
    return notes


def side_by_side_rows(t: ReportTables) -> list[tuple[str, str, str, dict[str, Cell]]]:
    """The data of the long-context vs memory-agents figure: (ability, system, kind,
    tier -> cell) for every system that has the ability."""
    rows = []
    for ability in t.abilities:
        for system in t.systems:
            cells = t.tier_curves.get(system.label, {}).get(ability)
            if cells is not None:
                rows.append((ability, system.label,
                             t.system_kinds.get(system.label, ""), dict(cells)))
    return rows


def fmt_pct(x: float | None) -> str:
    """A share in [0, 1] as a percentage with one decimal; ``—`` when undefined."""
    if x is None or not math.isfinite(x):
        return MISSING
    return f"{x * 100:.1f}%"


SMALL_N_MARK = "(small n: Wilson)"


def fmt_ci(low: float | None, high: float | None, *, small: bool = False) -> str:
    """``[33.3, 100.0]``; with ``small`` (fewer than SMALL_N questions, a Wilson interval,
    design 0040) marked so that no format shows a small sample's interval as a firm one."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return MISSING
    return f"[{low * 100:.1f}, {high * 100:.1f}]" + (f" {SMALL_N_MARK}" if small else "")


def fmt_cell(cell: Cell | None) -> str:
    """``66.7% (n=3)``; ``—`` when there is nothing to score."""
    if cell is None or cell.n == 0:
        return MISSING
    return f"{fmt_pct(cell.accuracy)} (n={cell.n})"


def fmt_se(se: float, n_clusters: int | None = None) -> str:
    """``±1.2 pp``; with one cluster the clustered SE is undefined, and says so rather than
    show the formula's 0 (design 0040)."""
    if n_clusters == 1:
        return "undefined (one cluster)"
    return f"±{se * 100:.1f} pp" if math.isfinite(se) else MISSING


def fmt_rho(rho: float) -> str:
    return f"{rho:+.2f}" if math.isfinite(rho) else MISSING


def ranked(runs: Sequence[RunRow]) -> list[RunRow]:
    """Leaderboard order: finished runs first, then incomplete ones (design 0040), each by
    micro accuracy, best first; runs without a score last, ties in the given order."""
    return sorted(runs, key=lambda r: (r.incomplete,
                                       -r.accuracy if math.isfinite(r.accuracy) else math.inf))


def by_benchmark(runs: Sequence[RunRow]) -> list[tuple[str, list[RunRow]]]:
    """The leaderboard's groups: one per benchmark, by name, each :func:`ranked` (design
    0043): accuracies on two benchmarks are not one ranking."""
    names = sorted({r.benchmark for r in runs})
    return [(name, ranked([r for r in runs if r.benchmark == name])) for name in names]


def benchmark_heading(name: str) -> str:
    return f"Benchmark: {name or 'not recorded'}"


def run_name(r: RunRow) -> str:
    """A run as a leaderboard names it: its label, and ``(incomplete: 1 of 6)`` when
    records are missing."""
    return f"{r.run} ({r.progress})" if r.incomplete else r.run


LEADERBOARD_NOTE = ("Best micro accuracy first. Incomplete runs (records missing: stopped, "
                    "or still running) are ranked after the finished ones and marked "
                    "\"incomplete: k of n\". *n ok* says in brackets how many replies "
                    "were hedged (several candidates, none stated) or unparseable: scored "
                    "0, counted apart.")


def _grid(rows: Mapping[str, Mapping[str, Cell]], cols: Sequence[str], corner: str) -> str:
    body = [[cell(key), *(fmt_cell(cells.get(c)) for c in cols)] for key, cells in rows.items()]
    return table([corner, *(cell(c) for c in cols)], body)


def _leaderboard(t: ReportTables) -> list[str]:
    ci = f"{t.confidence * 100:g}% CI"
    header = ["Run", "System", "Tier", "n ok", "Errors",
              f"{measure_of(t.primary, title=True)} (micro) {ci}",
              "Macro (abilities)", "SE clustered (episodes)", "Coverage", "Per-answer acc.",
              "Refusal acc.", "Evidence recall"]
    others = [s for s in t.scorers if s != t.primary]
    header += [cell(scorer_label(s)) for s in others]
    groups = by_benchmark(t.runs)
    out = ["### Leaderboard", "", LEADERBOARD_NOTE, ""]
    for name, runs in groups:
        if len(groups) > 1:
            out += [f"#### {cell(benchmark_heading(name))}", ""]
        out += [table(header, _leaderboard_rows(runs, others), right_from=3), ""]
    return out


def _leaderboard_rows(runs: Sequence[RunRow], others: Sequence[str]) -> list[list[str]]:
    rows = []
    for r in runs:
        row = [cell(run_name(r)), cell(r.system), cell(r.tier),
               cell(ok_with_labels(r.n_ok, r.reply_labels)),
               cell(errors_cell(r.n_errors, r.error_kinds)),
               (f"{fmt_pct(r.accuracy)} {fmt_ci(r.ci_low, r.ci_high, small=r.small_n)} "
                f"(n={r.n})"),
               f"{fmt_pct(r.macro_accuracy)} ({r.n_abilities})",
               f"{fmt_se(r.se_clustered, r.n_episodes)} ({r.n_episodes})",
               f"{fmt_pct(r.coverage)} ({r.n_attempted}/{r.n_answerable})",
               f"{fmt_pct(r.per_answer_accuracy)} (n={r.n_per_answer})",
               f"{fmt_pct(r.refusal_accuracy)} (n={r.n_refusal})",
               f"{fmt_pct(r.evidence_recall)} (n={r.n_recall})"]
        row += [fmt_cell(r.scores.get(s)) for s in others]
        rows.append(row)
    return rows


JUDGE_CHECK_NOTE = (
    "The primary scorer is a judge. On closed-form items (every answer type but free text) "
    "the rule scorer decides correctness: *over-credit* counts the items the judge credits "
    "and the rule marks wrong, *under-credit* the reverse. Over-credit above "
    f"{OVER_CREDIT_WARN * 100:g} % is flagged; `memgauge audit RUN` lists the items.")
JUDGE_CHECK_HEADER = ["Run", "Judge", "Closed-form n", "Agreement", "κ", "Over-credit",
                      "Under-credit", "Judge acc.", "Rule acc."]


def judge_check_rows(t: ReportTables) -> list[list[str]]:
    """One row per run headlined by a judge (analysis._audit.judge_check)."""
    rows = []
    for run, c in t.judge_checks.items():
        n = c["n"]
        rows.append([run, c["judge"], str(n), fmt_pct(c["agreement"]), fmt_num(c["kappa"]),
                     f"{c['over_credit']} ({fmt_pct(c['over_credit_rate'])})",
                     f"{c['under_credit']} ({fmt_pct(c['under_credit'] / n if n else None)})",
                     fmt_pct(c["judge_accuracy"]), fmt_pct(c["rule_accuracy"])])
    return rows


def judge_warnings(t: ReportTables) -> list[str]:
    """A sentence per run whose judge over-credits more than OVER_CREDIT_WARN."""
    return [f"in {run}, the judge {c['judge']!r} credits {c['over_credit']} of {c['n']} "
            f"closed-form items that the rule scorer marks wrong "
            f"({fmt_pct(c['over_credit_rate'])} over-credit, over the "
            f"{OVER_CREDIT_WARN * 100:g} % bound): its accuracy "
            f"({fmt_pct(c['judge_accuracy'])} against the rule's "
            f"{fmt_pct(c['rule_accuracy'])} on those items) is not to be trusted"
            for run, c in t.judge_checks.items() if c["warn"]]


def fmt_num(x: float | None, digits: int = 2) -> str:
    return f"{x:.{digits}f}" if x is not None and math.isfinite(x) else MISSING


def _judge_check_section(t: ReportTables) -> list[str]:
    if not t.judge_checks:
        return []
    out = ["### Judge against the rule (closed-form items)", "", JUDGE_CHECK_NOTE, ""]
    out += [f"> **Warning:** {w}." for w in judge_warnings(t)]
    if judge_warnings(t):
        out.append("")
    rows = [[cell(r[0]), code(r[1]), *r[2:]] for r in judge_check_rows(t)]
    return [*out, table(JUDGE_CHECK_HEADER, rows, right_from=2), ""]


def _tier_sections(t: ReportTables) -> list[str]:
    out = ["### Accuracy vs tier, per ability", ""]
    for system in t.systems:
        curves = t.tier_curves.get(system.label, {})
        out += [f"**{cell(system.label)}**", "",
                _grid(curves, system.tiers, "Ability") if curves else "No records.", ""]
    out += ["### Accuracy by evidence depth × tier", ""]
    if not t.depth:
        return [*out, t.depth_note, ""]
    out += [DEPTH_NOTE, ""]
    for system, bins in t.depth.items():
        tiers = next((s.tiers for s in t.systems if s.label == system), [])
        out += [f"**{cell(system)}**", "", _grid(bins, tiers, "Depth"), ""]
    return out


def _xy_section(t: ReportTables) -> list[str]:
    out = ["### Visual granularity (X) × reasoning depth (Y)", ""]
    if not t.xy:
        return [*out, "No record carries both X and Y labels.", ""]
    out += [XY_NOTE, ""]
    out += [f"- **{level} {name}:** {meaning}"
            for level, (name, meaning) in {**X_LEVELS, **Y_LEVELS}.items()]
    out.append("")
    for run, grid in t.xy.items():
        cols = list(next(iter(grid.values()), {}))
        body = [[cell(x), *(fmt_xy_cell(cells.get(c)) for c in cols)]
                for x, cells in grid.items()]
        out += [f"**{cell(run)}**", "", table(["X \\ Y", *(cell(c) for c in cols)], body), ""]
    out += [XY_CELLS_NOTE, ""]
    return [*out, *_rotation_section(t)]


# The X × Y matrix and MCQ rotations (design 0036)
XY_CELLS_NOTE = (f"Each cell: accuracy over its questions, {MISSING} where none, 95% interval "
                 "(bootstrap; Wilson's below n = 30, marked small n) and n. A question with "
                 "several labels (MemEye's multi-label "
                 "point) counts in each of its cells, so the cells' n can add up to more than "
                 "the questions. An MCQ question asked over rotations is one question, valued "
                 "at its debiased EM. † marks a cell under n = 15: too few questions for a "
                 "firm figure.")
ROTATION_HEADER = ("Run", "Questions", "Rotations (ok)", "Debiased EM 95% CI",
                   "All rotations correct 95% CI", "Unparseable replies", "Incomplete",
                   "Accuracy by gold position")
ROTATION_NOTE = ("Each MCQ question is asked once per rotation of its options. Debiased EM: "
                 "the mean over a question's rotations, averaged over questions; all "
                 "rotations correct: the share of questions right in every rotation. "
                 "Unparseable: replies naming no option letter or several (scored 0, counted "
                 "here). Incomplete: questions with a failed rotation, left out of both "
                 "figures, never scored as wrong.")


def fmt_xy_cell(c: Any) -> str:
    """``66.7% [33.3, 100.0] (n=3) †``; ``—`` when the cell holds no question."""
    if c is None or c.n == 0:
        return MISSING
    return (f"{fmt_pct(c.accuracy)} {fmt_ci(c.ci_low, c.ci_high, small=c.ci_method == WILSON)}"
            f" (n={c.n})" + (" †" if c.small else ""))


def rotation_cells(run: str, r: Mapping[str, Any]) -> list[str]:
    small = r.get("ci_method") == WILSON
    positions = ", ".join(f"{k} {fmt_pct(v['accuracy'])} (n={v['n']})"
                          for k, v in r["by_gold_position"].items()) or MISSING
    return [cell(run), str(r["n_questions"]), f"{r['n_rotations']} ({r['n_ok_rotations']})",
            f"{fmt_pct(r['debiased_em'])} {fmt_ci(*r['debiased_em_ci'], small=small)}",
            (f"{fmt_pct(r['all_rotations_correct'])} "
             f"{fmt_ci(*r['all_rotations_correct_ci'], small=small)}"),
            f"{r['unparseable']} ({fmt_pct(r['unparseable_share'])})",
            str(r["incomplete_questions"]), positions]


def _rotation_section(t: ReportTables) -> list[str]:
    if not t.rotations:
        return []
    rows = [rotation_cells(run, r) for run, r in t.rotations.items()]
    return ["### MCQ over rotations", "", ROTATION_NOTE, "",
            table(list(ROTATION_HEADER), rows), ""]


def _error_section(t: ReportTables) -> list[str]:
    out = ["### Error labels (rules first, then the judge; wrong under the primary scorer)", ""]
    if not t.error_labels:
        return [*out, "No scorer, so no labels.", ""]
    labels, cats = t.label_names, t.category_names
    rows = [[cell(run), str(e["n_wrong"]), *(str(e["by_label"].get(lab, 0)) for lab in labels)]
            for run, e in t.error_labels.items()]
    out += [table(["Run", "Wrong", *(cell(lab) for lab in labels)], rows), ""]
    rows = [[cell(run), *(str(e["by_category"].get(c, 0)) for c in cats)]
            for run, e in t.error_labels.items()]
    out += [table(["Run", *(cell(c) for c in cats)], rows), ""]
    return out


def _coverage_section(t: ReportTables) -> list[str]:
    rows = [[cell(r.run), f"{fmt_pct(r.coverage)} ({r.n_attempted}/{r.n_answerable})",
             f"{fmt_pct(r.per_answer_accuracy)} (n={r.n_per_answer})"] for r in t.runs]
    return ["### Coverage vs per-answer accuracy", "",
            table(["Run", "Coverage (attempted/answerable)", "Per-answer accuracy"], rows), ""]


def _spearman_section(t: ReportTables) -> list[str]:
    out = ["### Spearman correlation of abilities across runs", ""]
    if t.spearman:
        rows = [[cell(s.ability_a), cell(s.ability_b), str(s.n_runs),
                 fmt_rho(s.rho) + (f" ({cell(s.note)})" if s.note else "")]
                for s in t.spearman]
        out += [table(["Ability A", "Ability B", "Runs", "ρ"], rows, right_from=2), ""]
    else:
        out += ["No pair of abilities is shared by 3 or more runs.", ""]
    if t.spearman_omitted:
        out += [f"Omitted pairs ({len(t.spearman_omitted)}): "
                + "; ".join(f"{cell(o['ability_a'])} / {cell(o['ability_b'])}: {cell(o['reason'])}"
                            for o in t.spearman_omitted), ""]
    return out


def _side_by_side_section(t: ReportTables) -> list[str]:
    out = ["### Long-context vs memory agents", "", SIDE_BY_SIDE_NOTE, "", COST_NOTE, ""]
    if not t.cost:
        return [*out, "No systems.", ""]
    if LONG_CONTEXT not in t.system_kinds.values():
        out += [f"**{NO_LONG_CONTEXT_NOTE}**", ""]
    out += [table([cell(h) for h in COST_HEADER],
                  [[cell(c) for c in cost_cells(r)] for r in t.cost], right_from=3), ""]
    out += [f"- {cell(n)}" for n in cost_notes(t)]
    out += ["", "Accuracy per ability and tier (the figure's data):", ""]
    rows = [[cell(a), cell(s), cell(k), *(fmt_cell(cells.get(tier)) for tier in t.tiers)]
            for a, s, k, cells in side_by_side_rows(t)]
    out += [table(["Ability", "System", "Kind", *(cell(x) for x in t.tiers)], rows,
                  right_from=3) if rows else "No scored records.", ""]
    return out


FORMS_NOTE = ("`<run> · MCQ` and `<run> · open` are one run's two forms, each by its own "
              "measure whatever the primary scorer: MCQ rotations by their letter (`rule`, "
              "per rotation; per question, the debiased EM below), open questions by the "
              "judge (a judge error is left out, its row's n then under n ok, never given "
              "a rule score).")


def render_tables_markdown(tables: ReportTables) -> str:
    """The cross-run sections as Markdown (the per-question rows are left to the HTML)."""
    t = tables
    n_runs = len(t.runs)
    out = ["## Across runs", "",
           f"- **Runs:** {n_runs} ({', '.join(cell(r.run) for r in t.runs)})",
           f"- **Primary scorer:** {code(t.primary) if t.primary else 'none'}",
           (f"- **CI:** {t.confidence * 100:g}%, {t.ci_method}, {t.n_resamples} resamples, "
            f"seed {t.seed}; SE clustered by episode"),
           ("- Accuracy counts status=ok records carrying the primary score; errors are counted "
            "apart, never as wrong. `(n=…)` is the number of scored questions behind a figure."),
           *([f"- {FORMS_NOTE}"] if any(r.form for r in t.runs) else []),
           *(f"- **Warning:** {w}." for w in judge_warnings(t)),
           ""]
    out += _leaderboard(t)
    out += _judge_check_section(t)
    out += ["### Accuracy by ability", "",
            _grid(t.ability_matrix, t.abilities, "Run") if t.abilities else "No records.", ""]
    out += _tier_sections(t)
    out += _side_by_side_section(t)
    out += _clues_section(t)
    out += _timeline_section(t)
    out += _xy_section(t)
    out += _error_section(t)
    out += _coverage_section(t)
    out += _spearman_section(t)
    out += ["### Questions", "",
            (f"{len(t.questions)} question rows over {n_runs} run(s); browse and filter them "
             "in the HTML report (`memgauge report RUN... --format html`)."), ""]
    return "\n".join(out)


def tables_payload(runs: Sequence[Mapping[str, Any]], tables: ReportTables) -> dict[str, Any]:
    """The JSON document of a report: ``{"runs": [per-run payloads], "tables": ...}``; with a
    single run its ``meta`` and ``summary`` also stay at the top level, as before."""
    payload: dict[str, Any] = {"runs": list(runs), "tables": tables.to_dict()}
    if len(runs) == 1:
        payload.update({k: v for k, v in runs[0].items() if k not in payload})
    return payload


def render_tables_json(runs: Sequence[Mapping[str, Any]], tables: ReportTables) -> str:
    """:func:`tables_payload` as strict JSON (sorted keys, indent 2, no NaN)."""
    return json.dumps(tables_payload(runs, tables), indent=2, sort_keys=True,
                      ensure_ascii=False, allow_nan=False, default=str) + "\n"
