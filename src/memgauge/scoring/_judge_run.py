"""Judge a finished run folder in place (``memgauge score RUN --judge ...``).

Every ``ok`` record with a prediction and no judge score for the current prompt version and
mode is judged; the rest are skipped, so a rerun makes no new calls. Values go to
``record.scores["judge"]`` and ``record.score_details["judge"]``; a judge failure goes to
``record.meta["judge_error"]`` and leaves the record without a judge score.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from ..errors import InputError
from ..models import ChatModel
from ..schema import Record, Score
from ._judge import JUDGE_PROMPT_VERSION, JudgeFailure, JudgeScorer


def _has_current(rec: Record, mode: str) -> bool:
    s = rec.score_details.get(JudgeScorer.name)
    return (s is not None and JudgeScorer.name in rec.scores
            and s.version == JUDGE_PROMPT_VERSION and s.details.get("mode") == mode)


async def judge_run(run_dir: str | os.PathLike[str], model: ChatModel, *,
                    mode: str = "default", concurrency: int = 8,
                    max_attempts: int = 3) -> dict[str, int]:
    """Judge the records of ``run_dir``; returns {judged, skipped, failures, auto_zero}."""
    # imported here: the runner imports this package (scoring) at load time
    from ..runner._store import load_manifest, read_records, rewrite_records, write_json_atomic

    manifest = load_manifest(run_dir)
    if manifest is None:
        raise InputError(f"{run_dir} is not a run folder (no manifest.json)")
    records = read_records(run_dir)
    scorer = JudgeScorer(model, mode=mode, max_attempts=max_attempts)
    todo = [r for r in records.values()
            if r.status == "ok" and r.prediction is not None and not _has_current(r, mode)]
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(rec: Record) -> tuple[Record, Score | JudgeFailure]:
        olds = rec.meta.get("old_answers") or []
        old = olds[-1] if isinstance(olds, list) and olds else None
        async with sem:
            res = await scorer.score_async(rec.question, rec.gold, rec.prediction or "",
                                           rec.ability, rec.subtype, rec.answer_type, old)
        return rec, res

    counts = {"judged": 0, "skipped": len(records) - len(todo), "failures": 0, "auto_zero": 0}
    for rec, res in await asyncio.gather(*(one(r) for r in todo)):
        if isinstance(res, JudgeFailure):
            rec.scores.pop(JudgeScorer.name, None)  # never leave a stale verdict beside it
            rec.score_details.pop(JudgeScorer.name, None)
            rec.meta["judge_error"] = {"kind": res.kind, "message": res.message}
            counts["failures"] += 1
        else:
            rec.scores[JudgeScorer.name] = res.value
            rec.score_details[JudgeScorer.name] = res
            rec.meta.pop("judge_error", None)
            counts["judged"] += 1
            counts["auto_zero"] += bool(res.details.get("auto_zero"))
    if todo:
        rewrite_records(run_dir, records.values())
    describe = getattr(model, "describe", None)
    manifest["judge"] = {
        "model": describe() if callable(describe) else repr(model),
        "mode": mode, "prompt_version": JUDGE_PROMPT_VERSION,
        "judged": sum(JudgeScorer.name in r.scores for r in records.values()),
        "failures": sum("judge_error" in r.meta for r in records.values()),
    }
    write_json_atomic(Path(run_dir) / "manifest.json", manifest)
    return counts

