"""``memgauge demo``: generate a fresh benchmark, validate it, run the offline baselines,
and write one report — no model, no network, no keys."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .analysis import bootstrap_ci, summarize
from .report import render_markdown
from .runner import RunConfig, Runner, read_records

# (run name, system, options): retrieval baselines read with the oracle, so their accuracy
# is what retrieval alone allows; the text-only oracle shows what the text alone allows.
BASELINES: list[tuple[str, str, dict[str, str]]] = [
    ("rag-bm25 (top 5, oracle reader)", "rag-bm25", {"top_k": "5", "reader": "oracle"}),
    ("rag-embed (top 5, oracle reader)", "rag-embed", {"top_k": "5", "reader": "oracle"}),
    ("text only (oracle without images)", "oracle-text", {}),
]


@dataclass
class DemoConfig:
    out: str = "memgauge-demo"
    seed: int = 0
    tiers: tuple[str, ...] = ("8k", "32k")
    questions: int = 30


def _pct(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def run_demo(config: DemoConfig, say: Callable[[str], None]) -> Path:
    from .benchmarks.synth import SynthConfig, generate
    from .benchmarks.synth._validate import validate

    root = Path(config.out)
    bench_dir = root / "benchmark"
    say(f"1/4 generating {config.questions} questions at tiers {', '.join(config.tiers)}")
    manifest = generate(SynthConfig(out=str(bench_dir), seed=config.seed,
                                    tiers=list(config.tiers), questions=config.questions))
    say("2/4 validating (oracles, visual necessity, indistinguishability, duplicates, retrieval)")
    gates = validate(bench_dir, progress=lambda m: say(f"    {m}"))
    say("3/4 running the offline baselines")
    rows: list[dict[str, Any]] = []
    summaries: dict[str, Any] = {}
    for tier in config.tiers:
        for label, system, options in BASELINES:
            out = root / "runs" / tier / system
            Runner(RunConfig(bench="synth", data=str(bench_dir), tier=tier, system=system,
                             system_options=options, model="none:", out=str(out), cache=False,
                             progress=False, concurrency=8)).run_sync()
            records = list(read_records(out).values())
            summary = summarize(records)
            summaries[f"{label} @ {tier}"] = summary
            recalls = [r for r in (rec.evidence_recall() for rec in records) if r is not None]
            rec_ci = bootstrap_ci(recalls) if recalls else (None, None)
            overall = summary.overall.get(summary.primary) if summary.primary else None
            rows.append({"system": label, "tier": tier, "n": summary.n_ok,
                         "acc": overall.accuracy if overall else None,
                         "ci": (overall.ci_low, overall.ci_high) if overall else (None, None),
                         "recall": sum(recalls) / len(recalls) if recalls else None,
                         "recall_ci": rec_ci, "run": str(out.relative_to(root))})
    say("4/4 writing the report")
    text = _report(manifest, gates, rows, summaries, bench_dir)
    (root / "report.md").write_text(text, encoding="utf-8")
    _html_report(root, [root / "runs" / t / system for t in config.tiers
                        for _, system, _ in BASELINES], say)
    return root


def _html_report(root: Path, run_dirs: list[Path], say: Callable[[str], None]) -> None:
    """The same runs as one browsable page (needs matplotlib, the ``report`` extra)."""
    from .analysis import build_tables, load_runs
    from .errors import ConfigError
    from .report import render_html

    try:
        page = render_html(build_tables(load_runs(run_dirs)), title="memgauge demo: baselines")
    except ConfigError as exc:  # matplotlib missing: the Markdown report stands alone
        say(f"    no HTML report: {exc}")
        return
    (root / "report.html").write_text(page, encoding="utf-8")


def _report(manifest: dict[str, Any], gates: dict[str, Any], rows: list[dict[str, Any]],
            summaries: dict[str, Any], bench_dir: Path) -> str:
    lines = ["# memgauge demo", "",
             ("A fresh procedural benchmark (rendered images, computed answers), its validation "
              "gates, and offline baselines. Rerun with another `--seed` for new instances."), "",
             "## Benchmark", "",
             (f"- digest `{manifest['digest'][:16]}`, generator v{manifest['generator_version']}, "
              f"{manifest['images']} rendered images"),
             "- question families: " + ", ".join(f"{k} ({v})" for k, v in manifest["families"].items()),
             "", "| Tier | Questions | Target tokens | Min | Mean | Max | Within ±3 % |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for tier, t in manifest["tiers"].items():
        lines.append(f"| {tier} | {t['questions']} | {t['target_tokens']} | {t['tokens_min']} | "
                     f"{t['tokens_mean']} | {t['tokens_max']} | {t['within_tolerance']} |")
    lines += ["", "## Validation gates", "",
              (f"Overall: **{'PASS' if gates.get('passed') else 'FAIL'}** "
               f"(details in `{bench_dir.name}/validation/gates.md`)"), ""]
    gates_md = (bench_dir / "validation" / "gates.md").read_text(encoding="utf-8")
    lines += ["<details><summary>All gate figures</summary>", "", gates_md, "", "</details>", "",
              "## Baselines (offline)", "",
              "| System | Tier | n | Accuracy | 95% CI | Evidence recall | 95% CI | Run |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        ci = f"[{_pct(r['ci'][0])}, {_pct(r['ci'][1])}]" if r["ci"][0] is not None else "—"
        rci = (f"[{_pct(r['recall_ci'][0])}, {_pct(r['recall_ci'][1])}]"
               if r["recall_ci"][0] is not None else "—")
        lines.append(f"| {r['system']} | {r['tier']} | {r['n']} | {_pct(r['acc'])} | {ci} | "
                     f"{_pct(r['recall'])} | {rci} | `{r['run']}` |")
    lines += ["",
              ("Retrieval baselines answer with the oracle restricted to the sessions they "
               "retrieved, so their accuracy is the ceiling retrieval allows; the text-only "
               "oracle shows what can be answered without seeing images (it should be near 0 "
               "apart from answer refusal)."), ""]
    lines += ["## Detail per run", ""]
    for name, summary in summaries.items():
        detail = render_markdown(summary, title=name)
        lines += [("##" + ln if ln.startswith("#") else ln) for ln in detail.splitlines()] + [""]
    return "\n".join(lines)
