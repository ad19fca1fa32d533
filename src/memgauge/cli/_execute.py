"""``memgauge run``'s execution on the terminal: the progress bar, the closing summary,
and the exit status from the result (3 some questions failed, 4 a budget stopped it)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import typer

from ..analysis import fmt_reply_labels, reply_labels
from ..api import run
from ..benchmarks import BenchmarkOptions
from ..benchmarks.locomo import locomo
from ..errors import FieldText, MemgaugeError
from ..models import endpoint_of
from ..runner import load_manifest, read_records
from ..runner._prefix import describe_reuse
from ..schema import INGEST_FAILED
from ._cache import run_cache_lines
from ._common import EXIT_BUDGET, EXIT_SOME_FAILED, err, flag_for, say


def execute_run(config) -> None:  # type: ignore[no-untyped-def]
    """Run ``config`` with a progress bar on a terminal, then say what happened."""
    def announce(_checked) -> None:  # type: ignore[no-untyped-def]
        say(endpoint_line(config))  # the configuration is checked by now
        sent = image_url_notice(config)
        if sent:
            say(sent, style="yellow")

    if not sys.stderr.isatty():  # no progress bar to draw: leave rich out of the start-up
        result = run(config, on_checked=announce).result
    else:
        # deferred: rich (~40 ms), only for a bar on a terminal
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        # With workers, the parent forks once the bar is up: no refresh thread may exist
        # then, so the bar is redrawn by the parent's progress polls instead.
        threaded = config.workers <= 1
        progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            TextColumn("{task.completed}/{task.fields[of]}"),
                            TextColumn("ok {task.fields[ok]} · errors {task.fields[errors]}"
                                       "{task.fields[level]}"),
                            TimeElapsedColumn(), console=err.get(), transient=False,
                            auto_refresh=threaded)
        task = progress.add_task("answering", total=None, ok=0, errors=0, of="?", level="")

        def tick(result, record) -> None:  # type: ignore[no-untyped-def]
            # The total is exact once known (the benchmark's count, an earlier full pass,
            # or the reader at the end); until then, "≥N" is what the reader has handed out.
            total = result.total
            of = str(total) if total is not None else (f"≥{result.queued}" if result.queued
                                                      else "?")
            level = (" · in flight ≤ " + "+".join(map(str, result.levels))
                     if result.levels else "")
            progress.update(task, completed=result.done, total=total, ok=result.ok,
                            errors=result.errors, of=of, level=level)
            if not threaded:
                progress.refresh()

        def start(checked) -> None:  # type: ignore[no-untyped-def]
            announce(checked)
            progress.start()

        try:
            result = run(config, on_progress=tick, on_checked=start).result
        finally:
            progress.stop()
    say(f"{result.done} answered now ({result.ok} ok, {result.errors} errors), "
         f"{result.skipped} already done; records in {result.run_dir / 'records.jsonl'}"
         f" ({result.wall_s:.1f} s)")
    for line in run_cache_lines(result.run_dir):
        say(line)
    hedged = reply_labels_line(result.run_dir)
    if hedged:
        say(hedged, style="yellow")
    reuse = prefix_cache_fact(result.run_dir)
    if reuse:
        say(f"prefix cache: {reuse}")
    for note in result.notes:  # one naming fields is shown with their flags
        say(f"note: {note.render(flag_for) if isinstance(note, FieldText) else note}")
    if result.budget_stop:
        say(f"stopped by the budget: {result.budget_stop} (this run, every invocation "
             "counted). Nothing more was sent; what was in flight is recorded. Rerun with a "
             "higher budget to resume.", style="yellow")
        raise typer.Exit(EXIT_BUDGET)
    ingest_failed = ingest_failed_count(result.run_dir)
    if ingest_failed:
        say(f"ingest failed: {ingest_failed} questions need sessions that could not be read "
            "into memory (replies the memory could not use: see ingest_failures in "
            "their records); errors, not scored", style="yellow")
    if result.errors:
        say(f"{result.errors} questions failed; they are reported apart."
            f"{retry_advice(result.errors, permanent_count(result.run_dir))}", style="yellow")
        causes = top_causes(result.run_dir)
        if causes:
            say("top causes: " + "; ".join(causes), style="yellow")
        raise typer.Exit(EXIT_SOME_FAILED)


# Failures a rerun repeats: the question cannot be asked of this system (an oracle without a
# gold program), the input is bad or over the context, or ingest replies (cached) could not
# be used. Anything else (a timeout, a 429, an unreadable reply) may pass on a rerun.
PERMANENT_KINDS = frozenset({"not_applicable", "bad_input", "context_overflow"})


def retry_advice(errors: int, permanent: int) -> str:
    """Advise a rerun for the failures it can mend, and only for them."""
    if permanent >= errors:
        return " A rerun would fail them the same way until their cause (below) is fixed."
    if permanent:
        return (f" Rerun the same command to retry them ({permanent} of them fail the same "
                "way until their cause is fixed).")
    return " Rerun the same command to retry them."


def permanent_count(run_dir: str | Path) -> int:
    """The run's failed questions whose failure a rerun repeats (``PERMANENT_KINDS``, and
    ingest failures: a rerun reads the same cached replies)."""
    try:
        records = read_records(run_dir).values()
    except MemgaugeError:
        return 0
    return sum(1 for r in records if r.status == "error" and r.response.error is not None
               and r.response.error.kind in {*PERMANENT_KINDS, INGEST_FAILED})


def endpoint_line(config) -> str:  # type: ignore[no-untyped-def]
    """The run's first line: where the model's (and a judge's) requests go."""
    line = f"{config.model} → {endpoint_of(config.model, config.base_url)}"
    if config.judge:
        line += f"; judge {config.judge} → {endpoint_of(config.judge, config.judge_base_url)}"
    return line


def image_url_notice(config) -> str | None:  # type: ignore[no-untyped-def]
    """LoCoMo's photos are web addresses: in image mode the endpoint is handed each URL to
    fetch, which a user evaluating offline must know before the first request."""
    if config.bench != "locomo" or config.context_mode != "image" or \
            config.model.startswith(("none:", "replay:")):
        return None
    try:
        n = locomo(BenchmarkOptions(data=config.data, question_ids=config.question_ids,
                                    extra=dict(config.bench_options))).public_image_urls()
    except MemgaugeError:
        return None  # the run names the data's mistake itself
    if not n:
        return None
    photos = f"{n} shared photo" + ("s" if n != 1 else "")
    return (f"note: LoCoMo in image mode sends its {photos} to the endpoint as "
            "public URLs, for the endpoint to fetch from the web; --context-mode caption "
            "sends their BLIP captions instead")


def ingest_failed_count(run_dir: str | Path) -> int:
    """Questions of the run that are ``ingest_failed`` errors (the manifest's status)."""
    try:
        manifest = load_manifest(run_dir) or {}
    except MemgaugeError:
        return 0
    return int((manifest.get("status") or {}).get("ingest_failed") or 0)


def reply_labels_line(run_dir: str | Path) -> str | None:
    """ "replies not read as one answer: 3 hedged (3 of 30 ok, scored 0)" for a run whose ok
    records a scorer labelled hedged or unparseable (design 0038); None when there are
    none."""
    ok = [r for r in read_records(run_dir).values() if r.status == "ok"]
    labels = reply_labels(ok)
    if not labels:
        return None
    return ("replies not read as one answer (several candidates and none stated, or no "
            f"letter): {fmt_reply_labels(labels, len(ok))}")


def top_causes(run_dir: str | Path, which: str = "answer", n: int = 3) -> list[str]:
    """The most frequent causes among the run's failures, each with one message: of its
    failed answers (``which="answer"``), or of its judge calls (``"judge"``)."""

    try:
        records = read_records(run_dir)
    except MemgaugeError:
        return []
    kinds: Counter[str] = Counter()
    example: dict[str, str] = {}
    for rec in records.values():
        if which == "judge":  # every judge's failure, each judge's counted (design 0040)
            failures = [(f"{name}: {e['kind']}" if name else e["kind"], e["message"])
                        for name, e in sorted(rec.judge_errors().items())]
        else:
            err = rec.response.error if rec.status == "error" else None
            failures = [(err.kind, err.message)] if err is not None else []
        for kind, message in failures:
            kinds[kind] += 1
            example.setdefault(kind, " ".join(message.split())[:140])
    return [f"{kind} ×{count} ({example[kind]})" for kind, count in kinds.most_common(n)]


def prefix_cache_fact(where: str | Path | dict) -> str | None:
    """The server's prefix-cache reuse over the answers sent (the manifest's ``prefix_cache``,
    design 0031), from a manifest or a run folder's."""
    if not isinstance(where, dict):
        try:
            where = load_manifest(where) or {}
        except MemgaugeError:
            return None
    return describe_reuse(where.get("prefix_cache"))
