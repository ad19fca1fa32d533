"""The cross-run report as one self-contained, offline HTML page: the sections, built here.

No external URL: the figures (``_plots.py``) are PNGs embedded as ``data:`` URIs, the question
browser is a plain table that a few lines of JavaScript filter, search and show in pages. The
page's template, style and script are package data in ``assets/`` and inlined into the page.
Everything that comes from records (questions, answers, predictions, labels, run names) is
untrusted and escaped.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib.resources import files
from typing import Any

from memgauge.analysis import (
    BASELINE,
    LONG_CONTEXT,
    MEMORY_AGENT,
    Cell,
    QuestionRow,
    ReportTables,
    RunRow,
    measure_of,
    ok_with_labels,
    scorer_label,
)
from memgauge.analysis._games import ALL_GAMES, GameCell, GameReport
from memgauge.report._plots import (
    MARKERS,
    Plots,
    colors_for,
    figure_legend,
    heatmap,
    leaderboard_plot,
    panels,
    short,
    tier_bars,
)
from memgauge.report._tables_md import (
    CLUES_HEADER,
    CLUES_NOTE,
    COST_HEADER,
    COST_NOTE,
    DEPTH_NOTE,
    FORMS_NOTE,
    JUDGE_CHECK_HEADER,
    JUDGE_CHECK_NOTE,
    LEADERBOARD_NOTE,
    MISSING,
    NO_LONG_CONTEXT_NOTE,
    ROTATION_HEADER,
    ROTATION_NOTE,
    SIDE_BY_SIDE_NOTE,
    TIMELINE_NOTE,
    X_LEVELS,
    XY_CELLS_NOTE,
    XY_NOTE,
    Y_LEVELS,
    benchmark_heading,
    by_benchmark,
    clue_rows,
    cost_cells,
    cost_notes,
    fmt_cell,
    fmt_ci,
    fmt_pct,
    fmt_rho,
    fmt_se,
    fmt_xy_cell,
    judge_check_rows,
    judge_warnings,
    rotation_cells,
    run_name,
    side_by_side_rows,
    timeline_grids,
)

__all__ = ["render_html", "script_json"]

CORRECTNESS = ("right", "wrong", "error", "unscored")
NO_LABEL = "none"
PAGE_SIZES = (25, 50, 100, 500)
PAGE_SIZE = 50
HEATMAP_NOTE = ("Colour: accuracy from 0% to 100% (scale beside each map); grey with —: no "
                "scored question in that cell.")
KIND_LINES = {LONG_CONTEXT: "-", MEMORY_AGENT: "--", BASELINE: ":"}
ONE_TIER_NOTE = ("A system run at one tier is drawn as bars (accuracy per ability at that "
                 "tier): a curve needs two tiers or more.")


def _e(value: Any) -> str:
    """Escape for HTML text and attribute values alike."""
    return html.escape("" if value is None else str(value), quote=True)


def script_json(data: Any) -> str:
    """JSON safe to place inside a ``<script>`` element: ``<``, ``>`` and ``&`` are written
    as ``\\u003c``, ``\\u003e``, ``\\u0026`` so no text can close the element."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, sort_keys=True, default=str)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


# --- HTML building blocks -----------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1,
           cls: str = "") -> str:
    """An HTML table; ``header`` and ``rows`` hold already-escaped HTML."""
    head = "".join(f'<th{" class=num" if i >= left else ""}>{h}</th>'
                   for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i >= left else ""}>{c}</td>'
                         for i, c in enumerate(row)) + "</tr>" for row in rows)
    return (f'<table{f" class={cls}" if cls else ""}><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _grid_table(grid: Mapping[str, Mapping[str, Cell]], cols: Sequence[str],
                corner: str) -> str:
    rows = [[_e(k), *(_e(fmt_cell(cells.get(c))) for c in cols)] for k, cells in grid.items()]
    return _table([_e(corner), *(_e(c) for c in cols)], rows)


def _section(anchor: str, title: str, *parts: str) -> str:
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>{"".join(parts)}</section>'


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>'


def _fig(img: str) -> str:
    return f"<figure>{img}</figure>"


# --- sections -----------------------------------------------------------------------------


def _header(t: ReportTables, title: str,
            cache: Mapping[str, Sequence[str]] | None = None) -> str:
    def cache_facts(run: str) -> str:
        lines = (cache or {}).get(run)
        return f"; {_e('; '.join(lines))}" if lines else ""

    runs = "".join(f"<li><b>{_e(r.run)}</b> — {_e(r.system)}, tier {_e(r.tier)}: "
                   f"{r.n_records} records ({r.n_ok} ok, {r.n_errors} errors)"
                   f"{cache_facts(r.run)}</li>" for r in t.runs)
    nav = "".join(f'<a href="#{a}">{_e(n)}</a>' for a, n in (
        ("leaderboard", "Leaderboard"), ("tiers", "Tiers"),
        ("side-by-side", "Long-context vs memory agents"), ("clues", "Retrieval diagnostics"),
        *((("timeline", "Timeline"),) if t.timeline else ()), ("abilities", "Abilities"),
        ("depth", "Evidence depth"), ("xy", "X×Y"), ("errors", "Error labels"),
        ("coverage", "Coverage"), ("spearman", "Spearman"), ("questions", "Questions")))
    forms = f"<li>{_e(FORMS_NOTE)}</li>" if any(r.form for r in t.runs) else ""
    warnings = "".join(f'<li class="warn"><b>Warning:</b> {_e(w)}.</li>'
                       for w in judge_warnings(t))
    return (f"<header><h1>{_e(title)}</h1><nav>{nav}</nav>"
            f"<ul class=facts><li>Primary scorer: <code>{_e(t.primary or 'none')}</code> "
            f"(other scorers: {_e(', '.join(s for s in t.scorers if s != t.primary) or '—')})"
            f"</li><li>{t.confidence * 100:g}% CI: {_e(t.ci_method)}, {t.n_resamples} "
            f"resamples, seed {t.seed}; SE clustered by episode.</li>"
            "<li>Accuracy counts status=ok records carrying the primary score; errors are "
            "counted apart, never as wrong. <i>n</i> is the number of scored questions behind "
            f"a figure.</li>{forms}{warnings}</ul><h3>Runs</h3><ul>{runs}</ul></header>")


def _judge_check(t: ReportTables) -> str:
    """The judge against the rule on closed-form items, when a judge is the headline."""
    if not t.judge_checks:
        return ""
    rows = [[_e(x) for x in row] for row in judge_check_rows(t)]
    warn = "".join(f'<p class="warn"><b>Warning:</b> {_e(w)}.</p>' for w in judge_warnings(t))
    return _section("judge-check", "Judge against the rule (closed-form items)",
                    _note(JUDGE_CHECK_NOTE), warn,
                    _table([_e(h) for h in JUDGE_CHECK_HEADER], rows, left=2))


def _leaderboard(t: ReportTables, plots: Plots) -> str:
    """One table and plot per benchmark, headed by its name when there are several
    (design 0043)."""
    groups = by_benchmark(t.runs)
    parts = []
    for name, runs in groups:
        if len(groups) > 1:
            parts.append(f"<h3>{_e(benchmark_heading(name))}</h3>")
        parts += _leaderboard_group(t, runs, plots)
    return _section("leaderboard", "Leaderboard", _note(LEADERBOARD_NOTE), *parts)


def _leaderboard_group(t: ReportTables, ranked_runs: list[RunRow], plots: Plots) -> list[str]:
    ci = f"{measure_of(t.primary, title=True)} (micro) {t.confidence * 100:g}% CI"
    header = ["Run", "System", "Tier", "n ok", "Errors", ci, "Macro (abilities)",
              "SE clustered (episodes)", "Coverage", "Per-answer acc.", "Refusal acc.",
              "Evidence recall"]
    others = [s for s in t.scorers if s != t.primary]
    rows = []
    for r in ranked_runs:
        errors = str(r.n_errors)
        if r.error_kinds:
            errors += " (" + ", ".join(f"{k}: {n}" for k, n in r.error_kinds.items()) + ")"
        rows.append([_e(run_name(r)), _e(r.system), _e(r.tier),
                     _e(ok_with_labels(r.n_ok, r.reply_labels)), _e(errors),
                     _e(f"{fmt_pct(r.accuracy)} {fmt_ci(r.ci_low, r.ci_high, small=r.small_n)}"
                        f" (n={r.n})"),
                     _e(f"{fmt_pct(r.macro_accuracy)} ({r.n_abilities})"),
                     _e(f"{fmt_se(r.se_clustered, r.n_episodes)} ({r.n_episodes})"),
                     _e(f"{fmt_pct(r.coverage)} ({r.n_attempted}/{r.n_answerable})"),
                     _e(f"{fmt_pct(r.per_answer_accuracy)} (n={r.n_per_answer})"),
                     _e(f"{fmt_pct(r.refusal_accuracy)} (n={r.n_refusal})"),
                     _e(f"{fmt_pct(r.evidence_recall)} (n={r.n_recall})"),
                     *(_e(fmt_cell(r.scores.get(s))) for s in others)])
    table = _table([*map(_e, header), *(_e(scorer_label(s)) for s in others)], rows, left=3,
                   cls="wide")
    table = f'<div class="scroll">{table}</div>'
    return [table, _fig(leaderboard_plot(ranked_runs, plots))]


def _tiers(t: ReportTables, plots: Plots) -> str:
    tables = "".join(f"<h3>{_e(s.label)}</h3>"
                     + _grid_table(t.tier_curves.get(s.label, {}), s.tiers, "Ability")
                     for s in t.systems)
    colors = colors_for(plots, t.abilities)
    rank = {a: i for i, a in enumerate(t.abilities)}

    def draw(ax: Any, i: int) -> None:
        system = t.systems[i]
        if len(system.tiers) == 1:
            tier_bars(ax, t.tier_curves.get(system.label, {}), system, colors)
            return
        xs = range(len(system.tiers))
        for ability, cells in t.tier_curves.get(system.label, {}).items():
            ys = [cells[tier].accuracy if cells[tier].n else math.nan for tier in system.tiers]
            k = rank[ability]  # earlier lines wider, so lines that coincide stay visible
            ax.plot(xs, ys, marker=MARKERS[k % len(MARKERS)], color=colors[ability],
                    label=ability, linewidth=max(1.0, 3.5 - 0.6 * k),
                    markersize=max(4.0, 10.0 - 1.2 * k), zorder=2 + k)
        ax.set_xticks(list(xs), system.tiers)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("tier")
        ax.set_ylabel("accuracy")
        ax.set_title(short(system.label, 50))
        ax.grid(alpha=0.3)

    img = note = ""
    if t.systems and t.abilities:
        n = len(t.systems)
        single = sum(1 for s in t.systems if len(s.tiers) == 1)
        alt = ("Accuracy per ability at the one tier run, as bars" if single == n else
               "Accuracy against tier, one line per ability"
               + ("; systems with one tier as bars" if single else ""))
        img = _fig(panels(plots, n, panel_w=4.2, panel_h=3.2, ncols=3, draw=draw, alt=alt,
                           legend=True))
        note = _note(ONE_TIER_NOTE) if single else ""
    return _section("tiers", "Accuracy vs tier, per ability", note, img, tables)


def _side_by_side(t: ReportTables, plots: Plots) -> str:
    """Accuracy per ability against tier, a line per system (long-context solid, memory
    agents dashed) on one figure, and the cost table beside it."""
    title = "Long-context vs memory agents"
    cost = _table([_e(h) for h in COST_HEADER],
                  [[_e(c) for c in cost_cells(r)] for r in t.cost], left=3, cls="wide")
    notes = "".join(f"<li>{_e(n)}</li>" for n in cost_notes(t))
    parts = [_note(SIDE_BY_SIDE_NOTE), _note(COST_NOTE), f'<div class="scroll">{cost}</div>',
             f"<ul>{notes}</ul>" if notes else ""]
    if t.systems and LONG_CONTEXT not in t.system_kinds.values():
        parts.insert(1, f'<p class="warn">{_e(NO_LONG_CONTEXT_NOTE)}</p>')
    rows = side_by_side_rows(t)
    if rows:
        systems = [s.label for s in t.systems]
        colors = colors_for(plots, systems)
        xs = {tier: i for i, tier in enumerate(t.tiers)}

        def draw(ax: Any, i: int) -> None:
            ability = t.abilities[i]
            for _, system, kind, cells in (r for r in rows if r[0] == ability):
                points = [(xs[tier], c.accuracy) for tier, c in cells.items() if c.n]
                if not points:
                    continue
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                        color=colors[system], linestyle=KIND_LINES.get(kind, "--"),
                        label=f"{short(system, 40)} ({kind})")
            ax.set_xticks(list(xs.values()), list(xs))
            ax.set_xlim(-0.3, max(len(xs) - 0.7, 0.3))
            ax.set_ylim(-0.03, 1.03)
            ax.set_xlabel("tier")
            ax.set_ylabel("accuracy")
            ax.set_title(short(ability, 50))
            ax.grid(alpha=0.3)

        img = panels(plots, len(t.abilities), panel_w=4.2, panel_h=3.2, ncols=3, draw=draw,
                      alt=("Accuracy per ability against tier, one line per system: "
                           "long-context solid, memory agents dashed, baselines dotted"),
                      legend=True)
        data = _table([_e("Ability"), _e("System"), _e("Kind"), *(_e(x) for x in t.tiers)],
                      [[_e(a), _e(s), _e(k), *(_e(fmt_cell(c.get(x))) for x in t.tiers)]
                       for a, s, k, c in rows], left=3)
        parts += [_fig(img), "<h3>The figure's data</h3>", data]
    return _section("side-by-side", title, *parts)


def _clues(t: ReportTables) -> str:
    """The retrieval diagnostics per system × ability × tier (design 0030)."""
    title = "Retrieval diagnostics (clues in the ranking)"
    rows = clue_rows(t)
    if not rows:
        return _section("clues", title,
                        _note("No record carries both a ranking and gold evidence."))
    tables = "".join(f"<h3>{_e(system)}</h3>" + '<div class="scroll">'
                     + _table([_e(h) for h in CLUES_HEADER],
                              [[_e(c) for c in r] for r in body], left=2) + "</div>"
                     for system, body in rows.items())
    return _section("clues", title, _note(CLUES_NOTE), tables)


def _timeline(t: ReportTables) -> str:
    """Accuracy by sessions when asked and since the latest evidence (design 0029)."""
    grids = timeline_grids(t)
    if not grids:
        return ""
    tables = "".join(f"<h3>{_e(title)}</h3>" + '<div class="scroll">'
                     + _grid_table(grid, cols, "System") + "</div>"
                     for title, cols, grid in grids)
    return _section("timeline", "Accuracy over the timeline", _note(TIMELINE_NOTE), tables)


def _abilities(t: ReportTables, plots: Plots) -> str:
    if not t.abilities:
        return _section("abilities", "Accuracy by ability", _note("No records."))
    runs = [r.run for r in t.runs]
    with plots.figure(1.3 + 1.05 * len(t.abilities), 1.4 + 0.5 * len(runs)) as fig:
        heatmap(plots, fig.add_subplot(), t.ability_matrix, runs, t.abilities,
                 "accuracy by run and ability")
        img = plots.img(fig, "Heatmap of accuracy by run and ability")
    return _section("abilities", "Accuracy by ability", _note(HEATMAP_NOTE), _fig(img),
                    _grid_table(t.ability_matrix, t.abilities, "Run"))


def _depth(t: ReportTables, plots: Plots) -> str:
    if not t.depth:
        return _section("depth", "Accuracy by evidence depth × tier", _note(t.depth_note))
    systems = list(t.depth)
    tiers = {s.label: s.tiers for s in t.systems}

    def draw(ax: Any, i: int) -> None:
        grid = t.depth[systems[i]]
        heatmap(plots, ax, grid, list(grid), tiers.get(systems[i], []), systems[i])
        ax.set_ylabel("evidence depth")

    width = 2.3 + 1.0 * max(len(v) for v in tiers.values())  # 0.7 for the colour scale
    img = panels(plots, len(systems), panel_w=width, panel_h=3.0, ncols=3, draw=draw,
                  alt="Heatmaps of accuracy by evidence depth and tier")
    tables = "".join(f"<h3>{_e(s)}</h3>" + _grid_table(g, tiers.get(s, []), "Depth")
                     for s, g in t.depth.items())
    note = _note(f"{DEPTH_NOTE} {HEATMAP_NOTE}")
    return _section("depth", "Accuracy by evidence depth × tier", note, _fig(img), tables)


def _xy(t: ReportTables, plots: Plots) -> str:
    title = "Visual granularity (X) × reasoning depth (Y)"
    if not t.xy:
        return _section("xy", title, _note("No record carries both X and Y labels."))
    runs = list(t.xy)

    def draw(ax: Any, i: int) -> None:
        grid = t.xy[runs[i]]
        xs, ys = list(grid), list(next(iter(grid.values())))
        heatmap(plots, ax, grid, xs, ys, runs[i])
        ax.set_yticks(range(len(xs)), [f"{x} {X_LEVELS[x][0]}" for x in xs])
        ax.set_xticks(range(len(ys)), [f"{y}\n{Y_LEVELS[y][0]}" for y in ys],
                      rotation=0, ha="center")
        ax.set_ylabel("granularity (X)")
        ax.set_xlabel("reasoning depth (Y)")

    img = panels(plots, len(runs), panel_w=4.8, panel_h=3.4, ncols=3, draw=draw,
                  alt="Heatmaps of accuracy by visual granularity (X) and reasoning depth (Y)")
    tables = "".join(f"<h3>{_e(run)}</h3>" + _xy_table(g) for run, g in t.xy.items())
    return _section("xy", title, _note(XY_NOTE), _levels(), _note(HEATMAP_NOTE), _fig(img),
                    tables, _note(XY_CELLS_NOTE), _rotations(t))


def _xy_table(grid: Mapping[str, Mapping[str, Any]]) -> str:
    cols = list(next(iter(grid.values())))
    rows = [[_e(x), *(_e(fmt_xy_cell(cells.get(c))) for c in cols)]
            for x, cells in grid.items()]
    return _table([_e("X \\ Y"), *(_e(c) for c in cols)], rows)


def _rotations(t: ReportTables) -> str:
    """Debiased EM and all-rotations-correct per run (design 0036)."""
    if not t.rotations:
        return ""
    rows = [[_e(v) for v in rotation_cells(run, r)] for run, r in t.rotations.items()]
    return ("<h3>MCQ over rotations</h3>" + _note(ROTATION_NOTE)
            + _table([_e(h) for h in ROTATION_HEADER], rows))


def _levels() -> str:
    """What X1–X4 and Y1–Y3 mean, as a definition list."""
    items = "".join(f"<dt>{_e(level)} {_e(name)}</dt><dd>{_e(meaning)}</dd>"
                    for level, (name, meaning) in {**X_LEVELS, **Y_LEVELS}.items())
    return f'<dl class="levels">{items}</dl>'


def _errors(t: ReportTables, plots: Plots) -> str:
    title = "Error labels (rules first, then the judge)"
    if not t.error_labels:
        return _section("errors", title, _note("No scorer, so no labels."))
    runs = list(t.error_labels)
    labels, cats = t.label_names, t.category_names
    label_rows = [[_e(r), str(e["n_wrong"]), *(str(e["by_label"].get(x, 0)) for x in labels)]
                  for r, e in t.error_labels.items()]
    cat_rows = [[_e(r), *(str(e["by_category"].get(c, 0)) for c in cats)]
                for r, e in t.error_labels.items()]
    img = ""
    if cats:
        colors = colors_for(plots, cats)
        with plots.figure(7.5, 1.3 + 0.42 * len(runs)) as fig:
            ax = fig.add_subplot()
            ys = list(range(len(runs)))[::-1]
            left = [0] * len(runs)
            for c in cats:
                counts = [t.error_labels[r]["by_category"].get(c, 0) for r in runs]
                ax.barh(ys, counts, left=left, color=colors[c], label=c, height=0.6)
                left = [a + b for a, b in zip(left, counts, strict=True)]
            ax.set_yticks(ys, [short(r, 40) for r in runs])
            ax.set_xlabel("wrong answers by error category")
            figure_legend(fig, [ax])
            img = _fig(plots.img(fig, "Error categories per run (stacked)"))
    return _section("errors", title, img,
                    _table([_e("Run"), _e("Wrong"), *map(_e, labels)], label_rows),
                    _table([_e("Run"), *map(_e, cats)], cat_rows))


def _coverage(t: ReportTables, plots: Plots) -> str:
    rows = [[_e(r.run), _e(f"{fmt_pct(r.coverage)} ({r.n_attempted}/{r.n_answerable})"),
             _e(f"{fmt_pct(r.per_answer_accuracy)} (n={r.n_per_answer})")] for r in t.runs]
    table = _table([_e("Run"), _e("Coverage (attempted/answerable)"),
                    _e("Per-answer accuracy")], rows)
    points = [r for r in t.runs
              if math.isfinite(r.coverage) and math.isfinite(r.per_answer_accuracy)]
    if not points:
        return _section("coverage", "Coverage vs per-answer accuracy", table,
                        _note("No run has both a coverage and a per-answer accuracy."))
    plotted = {r.run for r in points}
    left_out = [r.run for r in t.runs if r.run not in plotted]
    note = _note("Not plotted (no per-answer accuracy, e.g. nothing attempted): "
                 + ", ".join(left_out)) if left_out else ""
    with plots.figure(5.5, 4.2) as fig:
        ax = fig.add_subplot()
        ax.scatter([r.coverage for r in points], [r.per_answer_accuracy for r in points],
                   color="#dd8452", zorder=3)
        for r in points:
            ax.annotate(short(r.run, 30), (r.coverage, r.per_answer_accuracy),
                        textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xlim(-0.03, 1.08)
        ax.set_ylim(-0.03, 1.08)
        ax.set_xlabel("coverage (answerable questions attempted)")
        ax.set_ylabel("per-answer accuracy")
        ax.grid(alpha=0.3)
        img = plots.img(fig, "Coverage against per-answer accuracy, one point per run")
    return _section("coverage", "Coverage vs per-answer accuracy", _fig(img), note, table)


def _spearman(t: ReportTables) -> str:
    parts = []
    if t.spearman:
        rows = [[_e(s.ability_a), _e(s.ability_b), str(s.n_runs),
                 _e(fmt_rho(s.rho) + (f" ({s.note})" if s.note else ""))] for s in t.spearman]
        parts.append(_table(["Ability A", "Ability B", "Runs", "ρ"], rows, left=2))
    else:
        parts.append(_note("No pair of abilities is shared by 3 or more runs."))
    if t.spearman_omitted:
        items = "".join(f"<li>{_e(o['ability_a'])} / {_e(o['ability_b'])}: "
                        f"{_e(o['reason'])}</li>" for o in t.spearman_omitted)
        parts.append(f"<details><summary>Omitted pairs ({len(t.spearman_omitted)})</summary>"
                     f"<ul>{items}</ul></details>")
    return _section("spearman", "Spearman correlation of abilities across runs", *parts)


# --- question browser ---------------------------------------------------------------------

_FILTERS = (("run", "Run"), ("ability", "Ability"), ("tier", "Tier"),
            ("correct", "Correctness"), ("label", "Error label"))



def _game_pct(x: float) -> str:
    return f"{x * 100:.1f}%" if math.isfinite(x) else MISSING


def _game_cell(c: GameCell | None) -> str:
    if c is None or c.n == 0:
        return MISSING
    ci = fmt_ci(c.ci_low, c.ci_high, small=c.small_n)
    ci = "" if ci == MISSING else f" {ci}"
    return f"{_game_pct(c.accuracy)}{ci} (n={c.n})"


def _games(games: Mapping[str, GameReport] | None) -> str:
    """Per run with game records: ability × game, accuracy against horizon and trajectory
    length, per template, answerability (design 0032)."""
    if not games:
        return ""
    parts = [_note("Cells: accuracy [CI] (n). Answerability: the positive class is the model "
                   "saying 'not answerable'; errors are excluded.")]
    for run, g in games.items():
        cols = [*g.games, ALL_GAMES]
        parts.append(f"<h3>{_e(run)}</h3>")
        parts.append('<div class="scroll">' + _table(
            ["Ability", *(_e(c) for c in cols)],
            [[_e(a), *(_e(_game_cell(row.get(c))) for c in cols)]
             for a, row in g.by_ability_game.items()]) + "</div>")
        for title, cells in (("Horizon (steps)", g.by_horizon),
                             ("Trajectory (steps)", g.by_trajectory),
                             ("Template", g.by_template)):
            if cells:
                parts.append(_table([_e(title), "Accuracy [CI] (n)"],
                                    [[_e(k), _e(_game_cell(c))] for k, c in cells.items()]))
        parts.append(_table(
            ["Game", "n", "Unanswerable", "Said not answerable", "Precision", "Recall", "F1",
             "Refused answerable"],
            [[_e(name), str(a.n), str(a.true_pos + a.false_neg), str(a.true_pos + a.false_pos),
              _game_pct(a.precision), _game_pct(a.recall), _game_pct(a.f1),
              _game_pct(a.refusal_rate_answerable)] for name, a in g.answerability.items()]))
    return _section("games", "Game memory", *parts)


def _attrs(q: QuestionRow) -> dict[str, str]:
    return {"run": q.run, "ability": q.ability, "tier": q.tier, "correct": q.correct,
            "label": q.error_label or NO_LABEL}


def _filter_values(t: ReportTables) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {key: [] for key, _ in _FILTERS}
    for q in t.questions:
        for key, value in _attrs(q).items():
            if value not in seen[key]:
                seen[key].append(value)
    order = {"run": [r.run for r in t.runs], "ability": t.abilities, "tier": t.tiers,
             "correct": list(CORRECTNESS), "label": [*t.label_names, NO_LABEL]}
    return {k: [v for v in order[k] if v in seen[k]] + [v for v in seen[k] if v not in order[k]]
            for k in seen}


def _question_cells(q: QuestionRow) -> list[str]:
    gold = " | ".join(q.gold) if isinstance(q.gold, list) else q.gold
    scores = "<br>".join(f"{_e(k)}&nbsp;{v:.2f}" for k, v in q.scores.items()) or MISSING
    error = f"{_e(q.error_kind)}: {_e(q.error_message or '')}" if q.error_kind else ""
    retrieved = "<br>".join(_e(p) for p in q.retrieved)
    if q.evidence_recall is not None:
        retrieved += f"<br><i>recall {q.evidence_recall * 100:.0f}%</i>"
    ident = f"{_e(q.question_id)}<br><small>{_e(q.episode_id)}</small>"
    ability = _e(q.ability) + (f"<br><small>{_e(q.subtype)}</small>" if q.subtype else "")
    depth = f"{q.evidence_depth:.2f}" if q.evidence_depth is not None else ""
    return [_e(q.run), ident, ability, _e(q.tier), f'<div class="clip">{_e(q.question)}</div>',
            f'<div class="clip">{_e(gold)}</div>',
            f'<div class="clip">{_e(q.prediction or "")}</div>', scores,
            f'<span class="tag {_e(q.correct)}">{_e(q.correct)}</span>', _e(q.error_label or ""),
            f'<div class="clip">{error}</div>', f'<div class="clip">{retrieved}</div>', depth]


def _browser(t: ReportTables) -> str:
    selects = []
    values = _filter_values(t)
    for key, name in _FILTERS:
        opts = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values[key])
        selects.append(f'<label>{_e(name)} <select id="f-{key}" data-key="{key}">'
                       f'<option value="">all</option>{opts}</select></label>')
    header = ["Run", "Question id", "Ability", "Tier", "Question", "Gold", "Prediction",
              "Scores", "Result", "Error label", "Error", "Retrieved", "Depth"]
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for q in t.questions:
        attrs = " ".join(f'data-{k}="{_e(v)}"' for k, v in _attrs(q).items())
        body.append(f"<tr {attrs}>" + "".join(f"<td>{c}</td>" for c in _question_cells(q))
                    + "</tr>")
    n = len(t.questions)
    sizes = "".join(f'<option value="{k}"{" selected" if k == PAGE_SIZE else ""}>{k}</option>'
                    for k in PAGE_SIZES)
    search = ('<label>Search <input type="search" id="q-search" size="24" '
              'placeholder="words in any column"></label>')
    pager = ('<span class="pager"><button type="button" id="q-prev">‹ previous</button> '
             f'<span id="q-page">rows 1–{min(n, PAGE_SIZE)}</span> '
             '<button type="button" id="q-next">next ›</button> '
             f'<label>per page <select id="q-size">{sizes}<option value="all">all</option>'
             "</select></label></span>")
    return _section(
        "questions", "Questions",
        f'<div class="filters">{search}{"".join(selects)} '
        f'<span id="q-count">{n} of {n} match</span> {pager}</div>',
        f'<div class="scroll"><table id="q-table"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(body)}</tbody></table></div>')


# --- page ---------------------------------------------------------------------------------


def render_html(tables: ReportTables, *, title: str,
                cache: Mapping[str, Sequence[str]] | None = None,
                games: Mapping[str, GameReport] | None = None) -> str:
    """The report page: header, leaderboard with CIs, accuracy vs tier, ability heatmap,
    evidence depth × tier, X×Y, error categories, coverage scatter, Spearman table and a
    filterable per-question browser. Raises :class:`~memgauge.errors.ConfigError` when
    matplotlib (the ``report`` extra) is missing. ``cache`` holds, per run label, the
    sentences on how many answers came from the response cache (shown with each run);
    ``games``, per run label, the game report of runs with game records."""
    plots = Plots()
    t = tables
    data = {k: v for k, v in t.to_dict().items() if k != "questions"}
    body = [
        _header(t, title, cache), _leaderboard(t, plots), _judge_check(t), _tiers(t, plots),
        _side_by_side(t, plots), _clues(t), _timeline(t), _abilities(t, plots),
        _depth(t, plots), _xy(t, plots), _errors(t, plots), _coverage(t, plots), _spearman(t),
        _games(games), _browser(t),
    ]
    return _fill(_asset("page.html"), title=_e(title), style=_asset("report.css"),
                 body="\n".join(body), data=script_json(data), script=_asset("browser.js"))


@cache
def _asset(name: str) -> str:
    """A file of the page (template, style, script), shipped as package data."""
    return files("memgauge.report").joinpath("assets", name).read_text(encoding="utf-8")


def _fill(template: str, **values: str) -> str:
    """``{{name}}`` markers replaced in one pass: a value is never read as a marker."""
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], template)
