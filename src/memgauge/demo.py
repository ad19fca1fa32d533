"""``memgauge demo``: generate a fresh benchmark, validate it, run the offline baselines,
and write one report — no model, no network, no keys."""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .analysis import mean_ci, summarize
from .analysis._stats import WILSON
from .report import render_markdown
from .runner import RunConfig, Runner, read_records

# (run name, system, options): retrieval baselines read with the oracle, so their accuracy
# is what retrieval alone allows; the text-only oracle shows what the text alone allows.
BASELINES: list[tuple[str, str, dict[str, str]]] = [
    ("rag-bm25 (top 5, oracle reader)", "rag-bm25", {"top_k": "5", "reader": "oracle"}),
    ("rag-embed (top 5, oracle reader)", "rag-embed", {"top_k": "5", "reader": "oracle"}),
    ("text only (oracle without images)", "oracle-text", {}),
]


# (run name, system, options, context mode, which tier): a real model, SmolLM2-135M through
# llama.cpp, reading the history as text with gold captions in place of images. Full context
# runs at the smallest tier (the only one that fits its 8K context in its own tokenizer:
# 4K is ~4.8K SmolLM2 tokens, 8K ~9K); retrieval runs at the next tier.
MODEL_RUNS: list[tuple[str, str, dict[str, str], str, int]] = [
    ("full-context, captions", "full-context", {}, "caption", 0),
    ("rag-bm25 (top 2), captions", "rag-bm25", {"top_k": "2"}, "caption", 1),
]


@dataclass
class DemoConfig:
    out: str = "memgauge-demo"
    seed: int = 0
    tiers: tuple[str, ...] = ("4k", "8k", "32k")
    questions: int = 30
    # The real model's runs: "none" leaves them out. On 2 cores SmolLM2 prefills ~300-450
    # tokens/s, so a 4K-tier prompt takes ~12-17 s: the model answers the first
    # ``model_questions`` questions of a tier (the whole demo stays near 4 minutes).
    model: str = "local:smollm2"
    model_questions: int = 8
    model_max_tokens: int = 48


def _pct(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def run_demo(config: DemoConfig, say: Callable[[str], None]) -> Path:
    from .benchmarks.synth import SynthConfig, generate
    from .validation.synth import validate

    root = Path(config.out)
    bench_dir = root / "benchmark"
    say(f"1/5 generating {config.questions} questions at tiers {', '.join(config.tiers)}")
    manifest = generate(SynthConfig(out=str(bench_dir), seed=config.seed,
                                    tiers=list(config.tiers), questions=config.questions,
                                    overwrite=True))  # a rerun regenerates the same bytes
    say("2/5 validating (oracles, visual necessity, indistinguishability, duplicates, retrieval)")
    gates = validate(bench_dir, progress=lambda m: say(f"    {m}"))
    say("3/5 running the offline baselines")
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
            rec_ci = mean_ci(recalls) if recalls else (None, None, None)
            overall = summary.overall.get(summary.primary) if summary.primary else None
            rows.append({"system": label, "tier": tier, "n": summary.n_ok,
                         "acc": overall.accuracy if overall else None,
                         "ci": _ci_of(overall),
                         "recall": sum(recalls) / len(recalls) if recalls else None,
                         "recall_ci": rec_ci, "run": str(out.relative_to(root))})
    run_dirs = [root / "runs" / t / system for t in config.tiers for _, system, _ in BASELINES]
    model_rows, model_note = _model_runs(config, root, bench_dir, say)
    for row in model_rows:
        summaries[f"{row['system']} @ {row['tier']}"] = row.pop("summary")
        run_dirs.append(root / row["run"])
    say("5/5 writing the report")
    text = _report(manifest, gates, rows, summaries, bench_dir, model_rows, model_note)
    (root / "report.md").write_text(text, encoding="utf-8")
    _html_report(root, run_dirs, say)
    return root


def _model_runs(config: DemoConfig, root: Path, bench_dir: Path,
                say: Callable[[str], None]) -> tuple[list[dict[str, Any]], str | None]:
    """The real model's runs; (rows, None), or ([], why they were left out)."""
    from .errors import MemgaugeError

    if config.model in ("none", "none:", ""):
        return [], "left out (--model none)"
    why = _model_missing(config.model)
    if why:
        say(f"4/5 real model: skipped ({why})")
        return [], f"skipped: {why}"
    say(f"4/5 running a real model ({config.model}, first {config.model_questions} questions "
        "of each run)")
    rows: list[dict[str, Any]] = []
    for label, system, options, mode, tier_index in MODEL_RUNS:
        tier = config.tiers[min(tier_index, len(config.tiers) - 1)]
        out = root / "runs" / tier / f"{system}-{config.model.split(':', 1)[1]}"
        say(f"    {label} at {tier}")
        try:
            result = Runner(RunConfig(
                bench="synth", data=str(bench_dir), tier=tier, system=system,
                system_options=options, model=config.model, out=str(out), context_mode=mode,
                limit=config.model_questions, max_tokens=config.model_max_tokens, cache=False,
                progress=False), on_progress=question_progress(say, config.model_questions),
            ).run_sync()
        except MemgaugeError as exc:
            say(f"    {label}: stopped: {exc}")
            return rows, f"stopped: {exc}"
        records = list(read_records(out).values())
        summary = summarize(records)
        overall = summary.overall.get(summary.primary) if summary.primary else None
        recalls = [r for r in (rec.evidence_recall() for rec in records) if r is not None]
        tokens = [rec.response.usage for rec in records if rec.status == "ok"]
        rows.append({"system": f"{_model_label(config.model)} · {label}", "tier": tier,
                     "n": summary.n_ok, "errors": summary.n_errors,
                     "acc": overall.accuracy if overall else None,
                     "ci": _ci_of(overall),
                     "recall": sum(recalls) / len(recalls) if recalls else None,
                     "input_tokens": sum(u.input_tokens or 0 for u in tokens),
                     "output_tokens": sum(u.output_tokens or 0 for u in tokens),
                     "wall_s": result.wall_s, "run": str(out.relative_to(root)),
                     "summary": summary})
    return rows, None


def question_progress(say: Callable[[str], None], limit: int) -> Callable[[Any, Any], None]:
    """One line per answered question (a 4K prompt takes SmolLM2 15 s on two idle cores,
    minutes on busy ones: without it the demo is silent for as long)."""
    start = time.monotonic()

    def tick(result: Any, record: Any) -> None:
        if record is None:  # a progress poll, not a question
            return
        total = min(limit, result.total) if result.total is not None else limit
        say(f"      question {result.done}/{total} ({record.question_id}): {record.status}, "
            f"{time.monotonic() - start:.0f} s so far")

    return tick


def closing_commands(bench: Path, tiers: tuple[str, ...]) -> str:
    """What to run next, as lines that paste into a shell as printed: prose only as
    comments, paths quoted, no placeholder a shell would read as a redirection."""
    data = shlex.quote(str(bench))
    first, last = tiers[0], tiers[-1]
    return "\n".join([
        ("# Evaluate a model on this benchmark through any OpenAI-compatible server (set "
         "MODEL_NAME to a name its /v1/models lists):"),
        "MODEL_NAME=your-model-name",
        f"memgauge run --bench synth --data {data} --tier {last} \\",
        "    --system full-context --model \"openai:$MODEL_NAME\" \\",
        f"    --base-url http://127.0.0.1:8000/v1 --out runs/my-model-{last}",
        f"memgauge report runs/my-model-{last}",
        ("# Or a local GGUF model through llama.cpp, no server to run yourself "
         "(local:/path/to/model.gguf for another):"),
        f"memgauge run --bench synth --data {data} --tier {first} --system full-context \\",
        "    --context-mode caption --model local:smollm2 --out runs/smollm2",
        f"# The same data in MemLens format: {bench / 'memlens'} (image dir: {bench})",
    ])


def _model_label(spec: str) -> str:
    name = spec.split(":", 1)[1] if ":" in spec else spec
    return {"smollm2": "SmolLM2-135M"}.get(name, Path(name).name)


def _model_missing(spec: str) -> str | None:
    """Why the demo cannot run this local model here, or None."""
    if not spec.startswith("local:"):
        return f"the demo runs local: models only, not {spec}"
    from .models._llama_server import engine_version
    from .models._local_files import CATALOGUE, is_pulled

    name = spec.split(":", 1)[1]
    if engine_version() is None:
        return "llama.cpp is not installed: pip install 'memgauge[local]'"
    if name in CATALOGUE and not is_pulled(name):
        return f"the model is not on this machine: memgauge models pull {name}"
    return None


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
            summaries: dict[str, Any], bench_dir: Path,
            model_rows: list[dict[str, Any]] | None = None, model_note: str | None = None) -> str:
    lines = ["# memgauge demo", "",
             ("A fresh procedural benchmark (rendered images, computed answers), its validation "
              "gates, offline baselines and a real local model. Rerun with another `--seed` "
              "for new instances."), "",
             "## Benchmark", "",
             (f"- digest `{manifest['digest'][:16]}`, generator v{manifest['generator_version']}, "
              f"{manifest['images']} rendered images"),
             "- question families: "
             + ", ".join(f"{k} ({v})" for k, v in manifest["families"].items()),
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
        ci, rci = _ci_text(r["ci"]), _ci_text(r["recall_ci"])
        lines.append(f"| {r['system']} | {r['tier']} | {r['n']} | {_pct(r['acc'])} | {ci} | "
                     f"{_pct(r['recall'])} | {rci} | `{r['run']}` |")
    lines += ["",
              ("Retrieval baselines answer with the oracle restricted to the sessions they "
               "retrieved, so their accuracy is the ceiling retrieval allows; the text-only "
               "oracle shows what can be answered without seeing images (it should be near 0 "
               "apart from answer refusal)."), ""]
    lines += _model_section(model_rows or [], model_note)
    lines += ["## Detail per run", ""]
    for name, summary in summaries.items():
        detail = render_markdown(summary, title=name)
        lines += [("##" + ln if ln.startswith("#") else ln) for ln in detail.splitlines()] + [""]
    return "\n".join(lines)


def _ci_of(stat: Any) -> tuple[float | None, float | None, str | None]:
    """A scorer's interval and its method (``None``s without a score)."""
    return (stat.ci_low, stat.ci_high, stat.ci_method) if stat else (None, None, None)


def _ci_text(ci: tuple[float | None, float | None, str | None]) -> str:
    """``[20.7, 100.0]``, marked when it is a small sample's Wilson interval (design 0040)."""
    low, high, method = ci
    if low is None or high is None:
        return "—"
    return f"[{_pct(low)}, {_pct(high)}]" + (" (small n: Wilson)" if method == WILSON else "")


def _model_section(rows: list[dict[str, Any]], note: str | None) -> list[str]:
    lines = ["## A real model (offline, llama.cpp)", ""]
    if note and not rows:
        return [*lines, f"Real-model runs {note}.", ""]
    lines += [("SmolLM2-135M-Instruct (Q4_1 GGUF) served by llama.cpp on this machine, "
               "reading the history as text with the images' gold captions, scored by the "
               "typed rules. A 135M model scores low: the point is that the numbers are real "
               "and the whole path runs. Token counts are the server's."), "",
              ("| System | Tier | n | Errors | Accuracy | 95% CI | Evidence recall | "
              "Input tokens | Output tokens | Wall time | Run |"),
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        ci = _ci_text(r["ci"])
        lines.append(f"| {r['system']} | {r['tier']} | {r['n']} | {r['errors']} | "
                     f"{_pct(r['acc'])} | {ci} | {_pct(r['recall'])} | {r['input_tokens']:,} | "
                     f"{r['output_tokens']:,} | {r['wall_s']:.0f} s | `{r['run']}` |")
    if note:
        lines += ["", f"Not every run finished: {note}."]
    return [*lines, ""]
