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
from .analysis._headline import HeadlineRow, TierVerdict, headline_row, tier_verdict
from .analysis._stats import WILSON
from .errors import MemgaugeError
from .report import render_markdown
from .report._headline import headline_html, headline_markdown, open_with
from .runner import RunConfig, Runner, read_records

# (run name, system, options): retrieval baselines read with the oracle, so their accuracy
# is what retrieval alone allows; the text-only oracle shows what the text alone allows.
BASELINES: list[tuple[str, str, dict[str, str]]] = [
    ("rag-bm25 (top 5, oracle reader)", "rag-bm25", {"top_k": "5", "reader": "oracle"}),
    ("rag-embed (top 5, oracle reader)", "rag-embed", {"top_k": "5", "reader": "oracle"}),
    ("text only (oracle without images)", "oracle-text", {}),
]


# (label, system, options): the systems under test, each on the same questions of every
# headline tier, read by the same real model (SmolLM2-135M through llama.cpp) with the
# images' gold captions in place of images. summary-memory without its profile is the LLM
# memory agent whose ingest costs SmolLM2 least: one call a session (fact-memory adds
# decisions; the profile doubles the calls; bench/RESULTS.md, 2026-12-03).
MODEL_SYSTEMS: list[tuple[str, str, dict[str, str]]] = [
    ("full context", "full-context", {}),
    ("rag (bm25, top 2)", "rag-bm25", {"top_k": "2"}),
    ("summary-memory (top 2, no profile)", "summary-memory", {"top_k": "2", "profile": "no"}),
]
MODEL_CONTEXT_TOKENS = 8192  # llama.cpp's n_ctx for a local: model (models/local.py)
# SmolLM2's tokenizer counts ~1.2 tokens per token of the generator's count (a 4K tier is
# ~4.8K SmolLM2 tokens, 8K ~9K): a tier is a headline tier if its longest history, so
# counted, fits the context with the answer's room. The runner checks it exactly.
MODEL_TOKENS_PER_TIER_TOKEN = 1.2


class DemoRunFailed(MemgaugeError):
    """A headline run failed: the report is written, and the demo exits 3."""

    exit_code = 3


@dataclass
class DemoConfig:
    out: str = "memgauge-demo"
    seed: int = 0
    tiers: tuple[str, ...] = ("4k", "8k", "32k")
    questions: int = 30
    # The real model's runs: "none" leaves them out. On 2 idle cores SmolLM2 prefills
    # ~300-450 tokens/s (a 4K-tier prompt: ~12-17 s) and summary-memory's ingest takes
    # ~16 calls a question: every system answers the first ``model_questions`` questions
    # of each headline tier, so the demo stays within 6 minutes (bench/RESULTS.md).
    model: str = "local:smollm2"
    model_questions: int = 4
    model_max_tokens: int = 48
    timeout_s: float = 120.0  # a request's floor, and the local server's start-up floor


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
    model = _model_runs(config, root, bench_dir, say, manifest)
    for row, records in model.runs:
        summaries[f"{row.label} @ {row.tier}"] = summarize(list(records.values()))
        run_dirs.append(root / row.run)
    say("5/5 writing the report")
    verdicts = [tier_verdict(tier, model.runs) for tier in model.tiers]
    opening = _opening(config, model, verdicts)
    text = _report(manifest, gates, rows, summaries, bench_dir, opening)
    (root / "report.md").write_text(text, encoding="utf-8")
    _html_report(root, run_dirs, say, headline_html(*opening))
    if model.failures:
        raise DemoRunFailed(_failure_message(root, model.failures))
    return root


@dataclass
class ModelRuns:
    """The real model's headline runs: each row with its records by question id, the
    headline tiers, what failed (step, then why and the fix), or why none ran."""

    runs: list[tuple[HeadlineRow, dict[str, Any]]]
    tiers: list[str]
    failures: list[str]
    note: str | None = None


def headline_tiers(manifest: dict[str, Any], max_tokens: int) -> list[str]:
    """The tiers whose every history fits the model's context in full: there, full context
    and the memory systems can be compared on the same questions."""
    room = MODEL_CONTEXT_TOKENS - max_tokens
    return [tier for tier, t in manifest["tiers"].items()
            if t["tokens_max"] * MODEL_TOKENS_PER_TIER_TOKEN <= room]


def _model_runs(config: DemoConfig, root: Path, bench_dir: Path, say: Callable[[str], None],
                manifest: dict[str, Any]) -> ModelRuns:
    """Every system of MODEL_SYSTEMS at every headline tier; a run that raises or ends with
    errored questions is a failure, and the next run is still tried."""
    if config.model in ("none", "none:", ""):
        return ModelRuns([], [], [], "left out (--model none)")
    why = _model_missing(config.model)
    if why:
        say(f"4/5 real model: skipped ({why})")
        return ModelRuns([], [], [f"4/5 real model: {why}"], f"skipped: {why}")
    tiers = headline_tiers(manifest, config.model_max_tokens)
    if not tiers:
        return ModelRuns([], [], [], f"skipped: no tier fits {MODEL_CONTEXT_TOKENS} tokens")
    say(f"4/5 running a real model ({config.model}) at {', '.join(tiers)}: "
        f"{', '.join(label for label, _, _ in MODEL_SYSTEMS)}, on the first "
        f"{config.model_questions} questions")
    done = ModelRuns([], tiers, [])
    for tier in tiers:
        for label, system, options in MODEL_SYSTEMS:
            step = f"4/5 real model, {label} at {tier}"
            say(f"    {label} at {tier}")
            try:
                row, records = _model_run(config, root, bench_dir, say, tier,
                                          (label, system, options))
            except MemgaugeError as exc:
                say(f"    {label}: failed: {exc}")
                done.failures.append(f"{step}: {exc}")
                continue
            done.runs.append((row, records))
            if row.errors:
                done.failures.append(f"{step}: {_errored(row, records)}")
    return done


def _model_run(config: DemoConfig, root: Path, bench_dir: Path, say: Callable[[str], None],
               tier: str, spec: tuple[str, str, dict[str, str]]
               ) -> tuple[HeadlineRow, dict[str, Any]]:
    label, system, options = spec
    out = root / "runs" / tier / f"{system}-{config.model.split(':', 1)[-1]}"
    Runner(RunConfig(
        bench="synth", data=str(bench_dir), tier=tier, system=system, system_options=options,
        model=config.model, out=str(out), context_mode="caption", limit=config.model_questions,
        max_tokens=config.model_max_tokens, cache=False, progress=False,
        timeout_s=config.timeout_s),
        on_progress=question_progress(say, config.model_questions)).run_sync()
    records = read_records(out)
    row = headline_row(label, system, tier, list(records.values()),
                       str(out.relative_to(root)), config.model)
    return row, records


def _errored(row: HeadlineRow, records: dict[str, Any]) -> str:
    first = next(r for r in records.values() if r.status == "error")
    error = first.response.error
    why = f"{error.kind}: {error.message}" if error else "no cause recorded"
    return (f"{row.errors} of {row.n + row.errors} questions ended in error (first, "
            f"{first.question_id}: {why}); see {row.run}/records.jsonl")


def _failure_message(root: Path, failures: list[str]) -> str:
    return (f"{len(failures)} headline run(s) of the demo failed; the report "
            f"({root / 'report.md'}) shows what did run.\n  " + "\n  ".join(failures)
            + "\n  Fix what is named above, then rerun the same `memgauge demo` command "
            "(on a busy machine, allow more time with --timeout SECONDS).")


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


def _html_report(root: Path, run_dirs: list[Path], say: Callable[[str], None],
                 opening: str) -> None:
    """The same runs as one browsable page, opening with the answer (needs matplotlib, the
    ``report`` extra)."""
    from .analysis import build_tables, load_runs
    from .errors import ConfigError
    from .report import render_html

    try:
        page = render_html(build_tables(load_runs(run_dirs)), title="memgauge demo")
    except ConfigError as exc:  # matplotlib missing: the Markdown report stands alone
        say(f"    no HTML report: {exc}")
        return
    (root / "report.html").write_text(open_with(page, opening), encoding="utf-8")


def _opening(config: DemoConfig, model: ModelRuns, verdicts: list[TierVerdict]
             ) -> tuple[list[HeadlineRow], list[TierVerdict], str, list[str]]:
    """(rows, verdicts, intro, notes) of the section the reports open with."""
    rows = [row for row, _ in model.runs]
    if not model.tiers:
        intro = (f"No real model ran ({model.note}), so this demo cannot answer whether long "
                 "context or a memory system does better; the offline baselines below ran.")
        return rows, verdicts, intro, list(model.failures)
    left_out = [t for t in config.tiers if t not in model.tiers]
    intro = (f"The same real model, {_model_label(config.model)} (llama.cpp on this machine, "
             "the images' gold captions in place of images), answered the same first "
             f"{config.model_questions} questions of tier {', '.join(model.tiers)} with each "
             "system: full context (the whole history in the prompt), retrieval, and an LLM "
             "memory agent. Tokens and seconds are per question, ingest included (seconds: "
             "the median); the ingest columns are the memory's share.")
    notes = []
    if left_out:
        notes.append(f"Tier {', '.join(left_out)}: the whole history does not fit the model's "
                     f"{MODEL_CONTEXT_TOKENS:,}-token context, so full context cannot run "
                     "there and there is nothing to compare it with.")
    notes.append("The oracle baselines further down are baselines, not systems under test: "
                 "they show what retrieval alone, and text without images, allow.")
    notes += [f"Failed: {f}" for f in model.failures]
    return rows, verdicts, intro, notes


def _report(manifest: dict[str, Any], gates: dict[str, Any], rows: list[dict[str, Any]],
            summaries: dict[str, Any], bench_dir: Path,
            opening: tuple[list[HeadlineRow], list[TierVerdict], str, list[str]]) -> str:
    lines = ["# memgauge demo", "", *headline_markdown(*opening),
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
              "## Baselines (offline; oracle readers, not systems under test)", "",
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
