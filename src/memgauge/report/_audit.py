"""Render a judge audit (:class:`~memgauge.analysis.AuditResult`) as Markdown."""

from __future__ import annotations

import math

from memgauge.analysis import AgreementStat, AuditResult
from memgauge.report._md import cell, code, table

__all__ = ["render_audit_markdown"]

MISSING = "—"
LIST_LIMIT = 50


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if math.isfinite(x) else MISSING


def _num(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if math.isfinite(x) else MISSING


def _count_rate(k: int, rate: float) -> str:
    return f"{k} ({_pct(rate)})"


def _capped(items: list[str]) -> list[str]:
    shown = items[:LIST_LIMIT]
    rest = len(items) - len(shown)
    return shown + ([f"- … and {rest} more"] if rest > 0 else [])


_STAT_HEADER = ["n", "agreement", "κ", "over-credit", "under-credit", "judge acc", "rule acc"]


def _stat_cells(s: AgreementStat) -> list[str]:
    return [str(s.n), _pct(s.agreement), _num(s.kappa),
            _count_rate(s.over_credit, s.over_credit_rate),
            _count_rate(s.under_credit, s.under_credit_rate),
            _pct(s.judge_accuracy), _pct(s.rule_accuracy)]


def _method(result: AuditResult) -> list[str]:
    rule = cell(result.rule)
    judges = ", ".join(cell(j) for j in result.judges) or "none"
    scope = (f"Judges: {judges}; rule scorer: {rule}; correct = score ≥ {result.threshold:g}. "
             f"{result.n_records} records: {result.n_ok} ok, {result.n_errors} errors "
             "(counted apart, never scored).")
    method = (
        "Judge vs rule uses closed-form items only: status ok, answer type other than "
        f"free_text, carrying both the judge and the {rule} score — there the typed rule "
        "decides correctness. **Over-credit**: judge correct, rule wrong (the judge is too "
        "lenient); **under-credit**: judge wrong, rule correct (too strict); rates are over n. "
        "Judge vs judge uses every ok item both judges scored. κ is Cohen's kappa, "
        "(p_o − p_e) / (1 − p_e), with p_e the agreement expected from each rater's own rate "
        "of each class; — when undefined (no items, or both raters put everything in one "
        "class). Judge failures (no verdict) are listed apart, never counted as disagreements.")
    return [scope, "", method, ""]


def _rule_sections(result: AuditResult) -> list[str]:
    audits = list(result.judge_vs_rule.values())
    rows = [[cell(a.judge), *_stat_cells(a.overall), str(a.free_text), str(a.unpaired)]
            for a in audits]
    lines = ["## Judge vs rule (closed-form items)", ""]
    if not audits:
        return lines + ["No judges.", ""]
    lines += [table(["judge", *_STAT_HEADER, "free-text left out", "unpaired"], rows), ""]
    sub_rows = [[cell(a.judge), cell(key), *_stat_cells(s)]
                for a in audits for key, s in a.by_subtype.items()]
    lines += ["## Judge vs rule by subtype", ""]
    lines += ([table(["judge", "subtype", *_STAT_HEADER], sub_rows, right_from=2), ""]
              if sub_rows else ["No closed-form items.", ""])
    type_rows = [[cell(a.judge), cell(key), *_stat_cells(s)]
                 for a in audits for key, s in a.by_answer_type.items()]
    lines += ["## Judge vs rule by answer type", ""]
    lines += ([table(["judge", "answer type", *_STAT_HEADER], type_rows, right_from=2), ""]
              if type_rows else ["No closed-form items.", ""])
    return lines


def _pair_sections(result: AuditResult) -> list[str]:
    lines = ["## Judge vs judge", ""]
    if not result.judge_pairs:
        return lines + ["Only one judge; nothing to pair.", ""]
    rows = [[f"{cell(p.judge_a)} vs {cell(p.judge_b)}", str(p.n), _pct(p.agreement),
             _num(p.kappa), _pct(p.exact_agreement), _num(p.kappa_values),
             _num(p.mean_abs_diff), str(p.a_only), str(p.b_only)]
            for p in result.judge_pairs]
    lines += [table(["pair", "n", "agreement", "κ", "exact agreement", "κ (values)",
                      "mean abs diff", "first only", "second only"], rows), ""]
    ab_rows = [[f"{cell(p.judge_a)} vs {cell(p.judge_b)}", cell(ab), str(s["n"]),
                _pct(s["agreement"]), _num(s["kappa"])]
               for p in result.judge_pairs for ab, s in p.by_ability.items()]
    if ab_rows:
        lines += ["### By ability", "",
                  table(["pair", "ability", "n", "agreement", "κ"], ab_rows, right_from=2), ""]
    return lines


def _disagreement_section(result: AuditResult) -> list[str]:
    lines = ["## Disagreements with the rule", ""]
    for a in result.judge_vs_rule.values():
        lines += [f"### {cell(a.judge)}: {len(a.disagreements)}", ""]
        if not a.disagreements:
            lines += ["None.", ""]
            continue
        items = [f"- {code(d.question_id)} {d.direction}: judge {d.judge_value:g}, rule "
                 f"{d.rule_value:g} ({cell(d.subtype)}, {cell(d.answer_type)})"
                 for d in a.disagreements]
        lines += [*_capped(items), ""]
    return lines


def _failure_section(result: AuditResult) -> list[str]:
    lines = ["## Judge failures", ""]
    if not result.failures:
        return lines + ["None.", ""]
    for judge, items in result.failures.items():
        lines += [f"### {cell(judge)}: {len(items)}", ""]
        lines += [*_capped([f"- {code(f.question_id)} {cell(f.kind)}: {cell(f.message)}"
                            for f in items]), ""]
    return lines


def render_audit_markdown(result: AuditResult, *, title: str = "memgauge audit") -> str:
    """A readable judge audit: method, judge-vs-rule tables (overall, by subtype, by answer
    type), judge-vs-judge agreement, the disagreements (50 per judge at most) and failures."""
    lines = [f"# {cell(title)}", "", *_method(result), *_rule_sections(result),
             *_pair_sections(result), *_disagreement_section(result), *_failure_section(result)]
    return "\n".join(lines).rstrip() + "\n"
