"""``memgauge report`` (tables and pages of one or more runs), ``compare`` (paired runs)
and ``audit`` (the judge against the rules): the commands that read finished runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .._cache_hits import answers_cacheable, count_records, describe_hits
from ..analysis import audit as run_audit
from ..analysis import (
    build_tables,
    error_breakdown,
    game_report,
    load_prices,
    load_runs,
    paired_compare,
    row_of,
)
from ..analysis._audit import judge_names
from ..analysis._tables import run_progress
from ..errors import MemgaugeError
from ..report import (
    render_audit_markdown,
    render_compare_markdown,
    render_error_labels,
    render_games_markdown,
    render_html,
    render_json,
    render_markdown,
    render_tables_json,
    render_tables_markdown,
    show_controls,
)
from ..runner import load_manifest, read_records
from ._common import err, fail
from ._execute import prefix_cache_fact


def report(
    run_dirs: Annotated[list[str], typer.Argument(help="Run folder(s)")],
    fmt: Annotated[str, typer.Option("--format", help="md | json | html")] = "md",
    out_file: Annotated[str | None, typer.Option(
        "--out", help="Write here as well (html: the page; default report.html)")] = None,
    primary: Annotated[str | None, typer.Option(help="Headline scorer")] = None,
    prices: Annotated[str | None, typer.Option(
        "--prices", help=("JSON or TOML file: model spec or name -> {input, output} in $ per "
                          "1M tokens; adds dollars per question and per correct answer"))
    ] = None,
    k: Annotated[int | None, typer.Option(
        "--k", min=1, help="Cut of the retrieval diagnostics (default: the items each "
                           "system chose)")] = None,
) -> None:
    """Accuracy by ability and subtype with CIs, coverage, and errors shown apart; then, across
    the runs: leaderboard, tiers, long-context vs memory agents with the cost of each,
    evidence depth, X×Y, error labels, Spearman. html: one offline page with plots and a
    filterable question browser."""
    try:
        if fmt not in ("md", "json", "html"):
            raise MemgaugeError(f"unknown format {fmt!r}; use md, json or html")
        price_table = load_prices(prices) if prices else None  # before reading any run
        left_out: list[str] = []
        runs = load_runs(run_dirs, skipped=left_out)  # a folder without records: named
        for reason in left_out:
            err.print(f"skipped: {reason}", style="yellow", highlight=False)
        tables = build_tables(runs, primary=primary, prices=price_table, prices_file=prices,
                              k=k)
        hits = {run.label: count_records(run.records) for run in runs}  # design 0018
        cacheable = {run.label: answers_cacheable(run.identity) for run in runs}
        if fmt == "html":
            title = "memgauge report: " + (runs[0].label if len(runs) == 1
                                           else f"{len(runs)} runs")
            page = Path(out_file or "report.html")
            games = {run.label: g for run in runs if (g := game_report(
                run.records, scorer=tables.primary or "rule")) is not None}  # design 0032
            page.write_text(render_html(tables, title=title, cache={
                label: describe_hits(h, answers=cacheable[label]) for label, h in hits.items()},
                games=games),
                encoding="utf-8")
            err.print(f"wrote {page}", highlight=False)
            return
        texts, payloads = [], []
        for run in runs:
            summary = tables.summaries[run.label]  # computed once, with the tables
            meta = _report_meta(run.path, run.manifest)
            row = row_of(tables, run.label)
            if row.model:  # "no model" for none:, and what reached the model, not the flag
                meta = {("input" if k == "context_mode" else k): v for k, v in
                        {**meta, "model": row.model, "context_mode": row.modality}.items()}
            h = hits[run.label]
            said = describe_hits(h, answers=cacheable[run.label])
            if fmt != "md":
                meta["response_cache"] = {**h.to_dict(), "text": said}
            elif said:  # nothing to say for answers no cache could serve
                meta["response_cache"] = "; ".join(said)
            # a run with records missing says so first (design 0040)
            progress = run_progress(run.manifest, summary.n_records)
            title = f"memgauge report: {run.label}" + (
                "" if progress.complete else f" ({progress.label})")
            if fmt != "md":
                meta["progress"] = {"complete": progress.complete,
                                    "records": progress.n_records,
                                    "planned": progress.planned, "state": progress.state,
                                    "text": progress.label or "complete"}
            elif not progress.complete:
                meta["progress"] = progress.label
            scorer = summary.primary or "rule"
            labels = (tables.breakdowns[run.label] if scorer == tables.primary
                      else error_breakdown(run.records, scorer=scorer))
            games = game_report(run.records, scorer=scorer)  # None without game records
            if fmt == "md":
                texts.append(render_markdown(summary, title=title,
                                             meta=meta) + "\n\n" + render_error_labels(labels)
                             + ("" if games is None else "\n\n" + render_games_markdown(games)))
            else:
                payloads.append(json.loads(render_json(summary, {**meta, "error_labels": labels},
                                                       games=games)))
        text = ("\n\n".join([*texts, render_tables_markdown(tables)]) if fmt == "md"
                else render_tables_json(payloads, tables).rstrip("\n"))
        if out_file:
            Path(out_file).write_text(text + "\n", encoding="utf-8")
        print(show_controls(text, json=fmt == "json"))
    except (MemgaugeError, ValueError) as exc:
        fail(exc)


def _report_meta(run_dir: str, manifest: dict) -> dict:
    ident = manifest.get("config", {}).get("identity", {})
    bench = manifest.get("benchmark") or {}
    return {"model": ident.get("model"), "benchmark": ident.get("bench"),
            "system": ident.get("system"), "context_mode": ident.get("context_mode"),
            "tier": ident.get("tier") or bench.get("tier"),  # given, else read off the file name
            "inputs": {Path(k).name: v[:16] for k, v in (bench.get("inputs") or {}).items()},
            "token_counter": manifest.get("token_counter"),
            "config_hash": manifest.get("config_hash"),
            "memgauge": manifest.get("memgauge_version"),
            "git_sha": manifest.get("git_sha"),
            **({"judges": _judges_fact(manifest["judges"])} if manifest.get("judges") else {}),
            **({"prefix_cache": reuse} if (reuse := prefix_cache_fact(manifest)) else {})}


def _judges_fact(judges: dict) -> str:
    """One line per judge: who judged, under which rubric, mode and prompt versions."""
    parts = []
    for name, j in sorted(judges.items()):
        model = j.get("model") or {}
        who = f"{model.get('provider', '?')}:{model.get('model', '?')}" \
            if isinstance(model, dict) else str(model)
        versions = ", ".join(f"{k} {v}"
                             for k, v in sorted((j.get("prompt_versions") or {}).items()))
        where = model.get("base_url") if isinstance(model, dict) else None
        if isinstance(model, dict) and model.get("provider") == "local":
            where = f"llama.cpp, sha256 {str(model.get('sha256'))[:16]}"
        parts.append(f"{name} = {who}{f' at {where}' if where else ''}"
                     f" (rubric {j.get('rubric')}, mode {j.get('mode')}, prompts {versions}; "
                     f"{j.get('judged', 0)} judged, {j.get('failures', 0)} judge failures)")
    return "; ".join(parts)


def compare(
    run_dirs: Annotated[list[str], typer.Argument(help="Run folders; the first is the baseline")],
    scorer: Annotated[str | None, typer.Option(
        help="Scorer to compare on (default: a judge scorer in every run, else rule)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="md | json")] = "md",
) -> None:
    """Paired comparison of runs against the first: McNemar test, CI of the difference,
    per-ability flips and the list of regressions."""
    try:
        if fmt not in ("md", "json"):
            raise MemgaugeError(f"unknown format {fmt!r}; use md or json")
        if len(run_dirs) < 2:
            raise MemgaugeError("compare needs at least two run folders (baseline first)")
        runs = []
        for run_dir in run_dirs:
            if load_manifest(run_dir) is None:
                raise MemgaugeError(f"{run_dir} is not a run folder (no manifest.json)")
            runs.append(read_records(run_dir))
        present = [{name for rec in recs.values() for name in rec.scores} for recs in runs]
        common = set.intersection(*present)
        if scorer is None:
            judges = sorted(name for name in common if "judge" in name)
            scorer = judges[0] if judges else "rule"
        for run_dir, names in zip(run_dirs, present, strict=True):
            if scorer not in names:
                known = ", ".join(sorted(names)) or "none"
                raise MemgaugeError(f"scorer {scorer!r} not found in {run_dir} "
                                    f"(scorers there: {known})")
        labels = [Path(d).name or d for d in run_dirs]
        if len(set(labels)) < len(labels):
            labels = list(run_dirs)
        results = [paired_compare(runs[0], recs, scorer=scorer) for recs in runs[1:]]
        for label, result in zip(labels[1:], results, strict=True):
            if not result.n:  # "n paired 0, p = 1" reads like "no difference"
                raise MemgaugeError(_no_pairs_text(labels[0], label, result))
        if fmt == "md":
            print(show_controls(render_compare_markdown(labels, results, runs)))
        else:
            comparisons = [dict(r.to_dict(), run=name)
                           for name, r in zip(labels[1:], results, strict=True)]
            print(show_controls(json.dumps({"baseline": labels[0], "comparisons": comparisons},
                                           indent=2, ensure_ascii=False), json=True))
    except (MemgaugeError, ValueError) as exc:
        fail(exc)


def _no_pairs_text(baseline: str, other: str, r) -> str:  # type: ignore[no-untyped-def]
    """Why two runs have no question to compare (design 0043)."""
    return (f"{other} and {baseline} have no question to compare: none is answered ok "
            f"with a {r.scorer!r} score in both ({r.only_in_a} only in {baseline}, "
            f"{r.only_in_b} only in {other}, {r.unscored} shared but unscored, errors "
            f"{r.errors_a} and {r.errors_b}). Compare runs of the same benchmark and "
            "questions (a paired test needs the same questions in both)")


def audit(
    run_dir: Annotated[str, typer.Argument(help="Run folder with judge scores")],
    rule: Annotated[str, typer.Option(help="Deterministic rule scorer to audit against")] = "rule",
    judge: Annotated[list[str] | None, typer.Option(
        help="Judge scorer to audit (repeatable; default: every scorer named *judge*)")] = None,
    threshold: Annotated[float, typer.Option(help="Correct = score >= this")] = 1.0,
    fmt: Annotated[str, typer.Option("--format", help="md | json")] = "md",
    out_file: Annotated[str | None, typer.Option("--out", help="Write here as well")] = None,
) -> None:
    """How far to trust the LLM judge: agreement with the rule scorer on closed-form items
    (over- and under-credit, kappa, by subtype), agreement between judges, judge failures."""
    try:
        if fmt not in ("md", "json"):
            raise MemgaugeError(f"unknown format {fmt!r}; use md or json")
        if load_manifest(run_dir) is None:
            raise MemgaugeError(f"{run_dir} is not a run folder (no manifest.json)")
        records = read_records(run_dir)
        ok = [r for r in records.values() if r.status == "ok"]
        # a judge whose every call failed has only failures: it is audited all the same
        failing = {name for rec in ok for name in rec.judge_errors() if name}
        present = {name for rec in records.values() for name in rec.scores} | failing
        known = ", ".join(sorted(present)) or "none"
        judges = list(judge) if judge else judge_names(ok, rule)
        if not judges:
            failed = sum(1 for r in records.values() if r.judge_errors())
            note = f" ({failed} records carry judge errors)" if failed else ""
            raise MemgaugeError(f"no judge scores in {run_dir}{note}; add them with "
                                f"`memgauge score {run_dir} --judge openai:<name>`")
        for role, name in [("rule", rule), *(("judge", j) for j in judges)]:
            if name not in present:
                raise MemgaugeError(f"{role} scorer {name!r} not found in {run_dir} "
                                    f"(scorers there: {known})")
        result = run_audit(records, rule=rule, judges=judges, threshold=threshold)
        if fmt == "md":
            text = render_audit_markdown(result, title=f"memgauge audit: {Path(run_dir).name}")
        else:
            text = json.dumps({"run": Path(run_dir).name or run_dir, **result.to_dict()},
                              indent=2, ensure_ascii=False, allow_nan=False)
        if out_file:
            Path(out_file).write_text(text.rstrip("\n") + "\n", encoding="utf-8")
        print(show_controls(text.rstrip("\n"), json=fmt == "json"))
    except (MemgaugeError, ValueError) as exc:
        fail(exc)
