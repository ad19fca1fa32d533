"""Render a :class:`~memgauge.analysis.Summary` as a readable Markdown report, or as JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from memgauge.analysis import (
    GroupStat,
    ScorerStat,
    Summary,
    fmt_reply_labels,
    measure_of,
    mixed_versions,
    scorer_label,
)
from memgauge.analysis._games import ALL_GAMES, GameCell, GameReport
from memgauge.analysis._json import json_safe
from memgauge.report._md import cell, code, table
from memgauge.report._tables_md import fmt_ci
from memgauge.schema import INGEST_FAILED

__all__ = ["render_games_markdown", "render_json", "render_markdown"]

MISSING = "—"
MESSAGE_LIMIT = 120


def _pct(x: float | None) -> str:
    """A share in [0, 1] as a percentage with one decimal; ``MISSING`` when undefined."""
    if x is None or not math.isfinite(x):
        return MISSING
    return f"{x * 100:.1f}%"


def _ci(low: float, high: float, *, small: bool = False) -> str:
    return fmt_ci(low, high, small=small)


def _stat(st: ScorerStat) -> str:
    """``66.7% [20.8, 93.9] (small n: Wilson)``: a scorer's mean and its interval."""
    return f"{_pct(st.accuracy)} {_ci(st.ci_low, st.ci_high, small=st.small_n)}"


def _cell(value: Any) -> str:
    """Untrusted text for a Markdown line (see :func:`memgauge.report._md.cell`); lists and
    mappings are shown as JSON."""
    if isinstance(value, (dict, list, tuple)):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return cell(value)


def _truncate(text: str, limit: int = MESSAGE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _ci_label(summary: Summary) -> str:
    return f"{summary.confidence * 100:g}% CI"


def _group_table(summary: Summary, groups: Mapping[str, GroupStat], key_header: str) -> str:
    primary = summary.primary
    others = [s for s in summary.scorers if s != primary]
    header = [key_header, "n"]
    if primary is not None:
        header.append(f"{_cell(primary)} ({_ci_label(summary)})")
    header += [_cell(s) for s in others]
    header += ["Coverage", "Per-answer acc.", "Refusal acc.", "Errors"]

    rows = []
    for key, g in groups.items():
        row = [_cell(key), str(g.n)]
        if primary is not None:
            st = g.scores.get(primary)
            row.append(MISSING if st is None or st.n == 0 else _stat(st))
        for s in others:
            st = g.scores.get(s)
            row.append(MISSING if st is None else _pct(st.accuracy))
        cov = g.coverage
        row += [
            _pct(cov.coverage),
            _pct(cov.per_answer_accuracy),
            _pct(cov.refusal_accuracy),
            str(g.n_errors),
        ]
        rows.append(row)
    return table(header, rows)


def render_markdown(summary: Summary, *, title: str, meta: Mapping[str, Any] | None = None) -> str:
    """A Markdown report: run facts, overall table, by-ability and by-subtype tables, errors.

    ``meta`` holds run facts shown in the header (``model`` and ``benchmark`` first, then
    the rest in their given order). Percentages have one decimal; ``—`` marks a value with
    no data.
    """
    meta = dict(meta or {})
    out: list[str] = [f"# {_cell(title)}", ""]

    # --- header: run facts -----------------------------------------------------------
    facts: list[tuple[str, str]] = []
    for key in ("model", "benchmark"):
        if key in meta:
            facts.append((key.capitalize(), _cell(meta.pop(key))))
    facts += [(_cell(k), _cell(v)) for k, v in meta.items()]
    facts.append(("Records", (f"{summary.n_records} ({summary.n_ok} ok, "
                              f"{summary.n_errors} errors)")))
    if summary.error_kinds:
        kinds = ", ".join(f"{_cell(k)}: {n}" for k, n in summary.error_kinds.items())
        facts.append(("Errors", f"{summary.n_errors} ({kinds})"))
    else:
        facts.append(("Errors", "0"))
    if failed := summary.error_kinds.get(INGEST_FAILED):
        facts.append(("Ingest failures", (f"{failed} questions whose sessions could not be "
                                          "read into memory (errors, not scored)")))
    facts.append(("Hedged / unparseable replies",
                  fmt_reply_labels(summary.reply_labels, summary.n_ok)))
    mixed = mixed_versions(summary.scorer_versions)
    if mixed:
        facts.append(("Scorer versions MIXED", _cell(
            f"{mixed}: records keep the version they were scored with; their figures mix "
            "two rules")))
    if summary.tokens:
        t = summary.tokens
        share = f" ({100 * t['cached'] / t['input']:.1f} %)" if t["input"] else ""
        facts.append(("Tokens (server counts)",
                      (f"{t['input']:,} input, of which {t['cached']:,} from the server's prefix "
                      f"cache{share}; {t['output']:,} output; over {t['answers']} answers")))
    if summary.primary is not None:
        head = summary.overall.get(summary.primary)
        facts.append(("Primary scorer", (f"{code(summary.primary)} (scores "
                      f"{summary.primary_covers} of {summary.n_ok} answered questions)")))
        if summary.primary_note:
            facts.append(("Why this scorer", _cell(summary.primary_note)))
        if head is not None:
            facts.append((f"{measure_of(summary.primary, title=True)} (micro)",
                          (f"{_pct(summary.micro_accuracy)} "
                           f"{_ci(head.ci_low, head.ci_high, small=head.small_n)}")))
        n_abilities = sum(1 for g in summary.by_ability.values()
                          if summary.primary in g.scores and g.scores[summary.primary].n)
        facts.append(((f"Task-averaged {measure_of(summary.primary)} (macro over {n_abilities} "
                      "abilities)"),
                      _pct(summary.macro_accuracy)))
        cov = summary.coverage
        facts.append(("Coverage", (f"{_pct(cov.coverage)} ({cov.n_attempted}/"
                                   f"{cov.n_answerable} answerable attempted)")))
        facts.append((f"Per-answer {measure_of(summary.primary)}", _pct(cov.per_answer_accuracy)))
        facts.append(("Refusal accuracy", (f"{_pct(cov.refusal_accuracy)} "
                                           f"(n={cov.n_refusal})")))
    out += [f"- **{k}:** {v}" for k, v in facts]
    out.append("")

    # --- overall -----------------------------------------------------------------------
    out += ["## Overall", ""]
    if summary.scorers:
        rows = []
        for name, st in summary.overall.items():
            label = _cell(scorer_label(name)) + (" (primary)" if name == summary.primary else "")
            rows.append([label, str(st.n), _pct(st.accuracy),
                         _ci(st.ci_low, st.ci_high, small=st.small_n)])
        # "Mean": an accuracy for 0/1 scorers, a mean token-F1 for f1 (named in the row)
        out.append(table(["Scorer", "n", "Mean", _ci_label(summary)], rows))
    else:
        out.append("No scored records.")
    out.append("")

    # --- by ability / subtype ----------------------------------------------------------
    out += ["## By ability", ""]
    out.append(_group_table(summary, summary.by_ability, "Ability") if summary.by_ability
               else "No records.")
    out.append("")
    out += ["## By subtype", ""]
    out.append(_group_table(summary, summary.by_subtype, "Ability/subtype")
               if summary.by_subtype else "No records.")
    out.append("")

    # --- errors ------------------------------------------------------------------------
    out += [f"## Errors ({summary.n_errors})", ""]
    if summary.errors:
        rows = [[_cell(e.question_id), _cell(e.ability), _cell(e.kind),
                 _cell(_truncate(e.message))] for e in summary.errors]
        out.append(table(["Question", "Ability", "Kind", "Message"], rows, right_from=4))
    else:
        out.append("No errors.")
    out.append("")

    # --- method note -------------------------------------------------------------------
    out.append(
        f"_Accuracy counts status=ok records only; errors are listed apart and never scored "
        f"as wrong. {_ci_label(summary)}: {summary.ci_method}, {summary.n_resamples} "
        f"resamples, seed {summary.seed}. Coverage: share of answerable questions attempted "
        f"(not refused); per-answer accuracy: primary accuracy among those attempted._"
    )
    return "\n".join(out) + "\n"


def render_json(summary: Summary, meta: Mapping[str, Any] | None = None,
                games: GameReport | None = None) -> str:
    """The summary as JSON: ``{"meta": ..., "summary": Summary.to_dict()}``, with
    ``"games": GameReport.to_dict()`` when the run has game records (design 0032).

    Keys are sorted (stable output), indent 2, strict JSON (no NaN: missing values are
    ``null``); values JSON cannot hold (paths, dates) are written as strings.
    """
    payload = {"meta": json_safe(dict(meta or {})), "summary": summary.to_dict()}
    if games is not None:
        payload["games"] = games.to_dict()
    return json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False,
                      allow_nan=False, default=str) + "\n"


def render_error_labels(breakdown: Mapping[str, Any]) -> str:
    """The error labels of wrong answers, rule-assigned first, then judge-assigned (see
    ``analysis.error_breakdown``)."""
    n = breakdown.get("n_wrong", 0)
    out = ["## Error labels", ""]
    if not n:
        return "\n".join([*out, "No wrong answers to label."])
    out += [(f"{n} wrong answers. Rule labels first (non_answer, answerability_failure, "
             "stale_answer, computation_slip, closed_set_selection), then the judge's "
             "(grounding_failure, unsupported_answer; the judge sees question, reference and "
             "answer, not the history); `unlabelled`: no rule applies and no judge label yet."),
            "", "| Label | n | share |", "| --- | ---: | ---: |"]
    for label, count in sorted(breakdown["by_label"].items(), key=lambda kv: -kv[1]):
        out.append(f"| {cell(label)} | {count} | {100 * count / n:.1f}% |")
    out += ["", "| Category | n |", "| --- | ---: |"]
    for cat, count in sorted(breakdown["by_category"].items(), key=lambda kv: -kv[1]):
        out.append(f"| {cell(cat)} | {count} |")
    return "\n".join(out)


def _game_cell(c: GameCell | None) -> str:
    if c is None or c.n == 0:
        return MISSING
    return f"{_pct(c.accuracy)} {_ci(c.ci_low, c.ci_high, small=c.small_n)} (n={c.n})"


def _game_rows(cells: Mapping[str, GameCell], header: str, ci: str) -> str:
    rows = [[_cell(k), str(c.n), _pct(c.accuracy), _ci(c.ci_low, c.ci_high, small=c.small_n)]
            for k, c in cells.items()]
    return table([header, "n", "Accuracy", ci], rows) if rows else "No scored records."


def render_games_markdown(games: GameReport) -> str:
    """The game sections (design 0032): ability × game, accuracy against the horizon and the
    trajectory length, per template, and answerability with "not answerable" as the
    positive class."""
    ci = f"{games.confidence * 100:g}% CI"
    cols = [*games.games, ALL_GAMES]
    out = ["## Game memory", "",
           (f"{games.n_records} game questions ({games.n_errors} with an error, never scored as "
            f"wrong), scored by {code(games.scorer)}; cells: accuracy [{ci}] (n)."), "",
           "### Accuracy by ability × game", ""]
    rows = [[_cell(a), *(_game_cell(by_game.get(g)) for g in cols)]
            for a, by_game in games.by_ability_game.items()]
    out += [table(["Ability", *(_cell(g) for g in cols)], rows), ""]
    out += ["### Accuracy against horizon (steps in the question's window)", "",
            _game_rows(games.by_horizon, "Horizon (steps)", ci), ""]
    out += ["### Accuracy against trajectory length (steps played)", "",
            _game_rows(games.by_trajectory, "Trajectory (steps)", ci), ""]
    out += ["### Accuracy per template", "", _game_rows(games.by_template, "Template", ci), ""]
    out += ["### Answerability", "",
            ("Positive class: the model says *not answerable*; gold positive: the question is "
             "unanswerable within its window. Errors are excluded. *Refused answerable*: share "
             "of answerable questions the model called not answerable."), ""]
    rows = []
    for g, a in games.answerability.items():
        rows.append([_cell(g), str(a.n), str(a.true_pos + a.false_neg),
                     str(a.true_pos + a.false_pos), _pct(a.precision), _pct(a.recall),
                     _pct(a.f1), _pct(a.refusal_rate_answerable)])
    out.append(table(["Game", "n", "Unanswerable", "Said not answerable", "Precision",
                      "Recall", "F1", "Refused answerable"], rows))
    return "\n".join(out) + "\n"
