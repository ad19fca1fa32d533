"""Judging records: the judge pipeline the runner uses while running, and ``judge_run`` for
a finished run folder (``memgauge score RUN --judge ...``).

For each ``ok`` record with a prediction the pipeline adds, when missing or made by another
prompt version, mode or rubric:

1. the judge verdict under ``scores[name]`` / ``score_details[name]``;
2. with ``extract=True``, the extract-then-match score under ``scores["extract-match"]``;
3. with ``label_errors=True``, for a wrong verdict the rules leave unlabelled, a judge error
   label in ``meta["judge_error_label"]``.

A judge's failure goes to ``meta["judge_errors"][name]``, one entry per judge, all kept
(design 0040; ``meta["judge_error"]`` still holds the latest, for older readers), or to
``meta["extract_error"]``, ``meta["judge_label_error"]``, and leaves the record without
that score: it is reported apart, never as a wrong answer. Every call goes through the model's
response cache, so a
rerun makes no new calls for work already done; an unreadable reply is not cached, so a rerun
asks again (design 0043).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .._cache_hits import use_entry
from ..cache import counting_cache_use
from ..errors import InputError
from ..ledger import JudgeSpend, judge_usage_of, ledger_of
from ..models import ChatModel
from ..registry import judge_rubric_of
from ..runfolder import load_manifest, read_records, rewrite_records, write_manifest
from ..schema import Question, Record
from ._error_labels import UNLABELLED, label_error
from ._extract import ExtractMatchScorer
from ._judge import (
    MODES,
    JudgeCase,
    JudgeFailure,
    JudgeScorer,
    metered_judging,
    rubric_names,
)
from ._judge_labels import label_wrong_answer
from ._route import judge_applies, record_measure, rule_scorers_for
from ._rubric_file import PromptFileRubric
from ._rules import BUILTIN_SCORERS, registered_scorers

AUTO = "auto"


@dataclass
class JudgeOptions:
    name: str = "judge"
    rubric: str = AUTO  # auto: the benchmark's declared rubric for open-ended items, else MemLens
    mode: str = "default"
    extract: bool = False
    label_errors: bool = True
    max_attempts: int = 3
    # a judge prompt text from a file (--judge-prompt-file): replaces the rubric's wording
    prompt_file: str | None = None

    def check(self) -> None:
        if self.mode not in MODES:
            raise InputError(f"unknown judge mode {self.mode!r}; use {' or '.join(MODES)}")
        if self.rubric != AUTO and self.rubric not in rubric_names():
            raise InputError(f"unknown judge rubric {self.rubric!r}; use auto or "
                             f"{' or '.join(rubric_names())}")
        if "judge" not in self.name:
            raise InputError(f"judge score names must contain 'judge' (got {self.name!r}) so "
                             "reports and audits can tell them from rule scores")
        if self.prompt_file is not None:
            PromptFileRubric(self.prompt_file)  # every mistake in it named before a call


def case_of(rec: Record) -> JudgeCase:
    olds = rec.meta.get("old_answers") or []
    old = olds[-1] if isinstance(olds, list) and olds else None
    return JudgeCase(rec.question, rec.gold, rec.prediction or "", rec.ability, rec.subtype,
                     rec.answer_type, old)


def question_of(rec: Record) -> Question:
    options = rec.meta.get("options")
    game = rec.meta.get("game")  # what game rule scoring reads (design 0032)
    return Question(question_id=rec.question_id, text=rec.question, answer=rec.gold,
                    answer_type=rec.answer_type, ability=rec.ability, subtype=rec.subtype,
                    options=list(options) if isinstance(options, list) else [],
                    meta={"game": game} if isinstance(game, dict) else {})


def score_missing(records: list[Record], scorers: list[Any]) -> int:
    """Score each answered record with the rule ``scorers`` it has no score of (a scorer
    plugin installed after the run), as the run would have (``rule_scorers_for``: a
    judge-only question gets none); returns how many records gained a score."""
    gained = 0
    for rec in records:
        if rec.status != "ok" or rec.prediction is None:
            continue
        question = question_of(rec)
        new = False
        for scorer in rule_scorers_for(question, scorers, measure=record_measure(rec)):
            if scorer.name in rec.score_details:
                continue
            s = scorer.score(question, rec.prediction)
            if s is not None:
                rec.scores[s.scorer], rec.score_details[s.scorer] = s.value, s
                new = True
        gained += new
    return gained


def scorers_after_run(manifest: dict[str, Any]) -> list[Any]:
    """The registered rule scorers the run did not score with (not in its manifest's
    ``scorers``; a manifest without that list had the built-ins, as every run has)."""
    listed = manifest.get("scorers")
    had = {e.get("name") for e in listed if isinstance(e, dict)} if isinstance(listed, list) \
        else set(BUILTIN_SCORERS)
    return [s for s in registered_scorers() if s.name not in had]


def note_scorers(manifest: dict[str, Any], scorers: list[Any]) -> None:
    """Add to the manifest's ``scorers`` those that scored records after the run."""
    listed = manifest.setdefault("scorers", [])
    listed.extend({"name": s.name, "version": s.version} for s in scorers)


class JudgePipeline:
    """Judges records in place; see the module docstring."""

    def __init__(self, model: ChatModel, options: JudgeOptions | None = None,
                 spec: str | None = None) -> None:
        self.options = options or JudgeOptions()
        self.options.check()
        o = self.options
        self.model = model
        # the judge's model spec: what its spend is kept and priced under (--prices)
        self.spec = spec or model.name
        # told what judging each record spent (a budget, design 0034)
        self.on_spend: Callable[[str, JudgeSpend], None] | None = None
        self.scorers = {name: JudgeScorer(model, rubric=name, mode=o.mode, name=o.name,
                                          max_attempts=o.max_attempts) for name in rubric_names()}
        self.prompt_file = PromptFileRubric(o.prompt_file) if o.prompt_file else None
        if self.prompt_file is not None:
            self.scorers[self.prompt_file.name] = JudgeScorer(
                model, rubric=self.prompt_file, mode=o.mode, name=o.name,
                max_attempts=o.max_attempts)
        self.extractor = ExtractMatchScorer(model, max_attempts=o.max_attempts) if o.extract \
            else None

    def scorer_for(self, rec: Record) -> JudgeScorer:
        if self.prompt_file is not None:  # the user's text judges every question
            return self.scorers[self.prompt_file.name]
        rubric = self.options.rubric
        if rubric == AUTO:  # the benchmark's own rubric (registry.benchmark's judge_rubric)
            rubric = judge_rubric_of(rec.benchmark.name, str(rec.answer_type))
        return self.scorers[rubric]

    def _judge_current(self, rec: Record) -> bool:
        scorer = self.scorer_for(rec)
        s = rec.score_details.get(scorer.name)
        return (s is not None and scorer.name in rec.scores and s.version == scorer.version
                and s.details.get("mode") == self.options.mode
                and s.details.get("rubric") == scorer.rubric.name)

    def _extract_current(self, rec: Record) -> bool:
        if self.extractor is None:
            return True
        s = rec.score_details.get(self.extractor.name)
        return s is not None and s.version == self.extractor.version

    def _needs_label(self, rec: Record) -> bool:
        if not self.options.label_errors:
            return False
        value = rec.scores.get(self.options.name)
        if value is None or value >= 1:
            return False
        have = rec.meta.get("judge_error_label")
        if isinstance(have, dict) and have.get("label"):
            return False
        found = label_error(rec, scorer=self.options.name)
        return found is not None and found.label == UNLABELLED

    def needs(self, rec: Record) -> bool:
        if rec.status != "ok" or rec.prediction is None or not judge_applies(rec):
            return False
        return (not self._judge_current(rec) or not self._extract_current(rec)
                or self._needs_label(rec))

    async def apply(self, rec: Record) -> Counter[str]:
        """Judge one record in place; returns what happened (judged, failures, ...). The
        record keeps how many of the judge's calls the response cache served
        (``meta.judge_cache[name]``: a new verdict starts the count again), and what the
        judge's calls spent (``meta.judge_usage[spec]``, summed over every judging: a
        re-judged record was paid for twice)."""
        with counting_cache_use() as use, metered_judging() as spend:
            done = await self._apply(rec)
        if spend.calls or spend.unknown:
            self._keep_spend(rec, spend)
        if done:
            entries = rec.meta.setdefault("judge_cache", {})
            prior = {} if done["judged"] or done["failures"] else entries.get(self.options.name)
            prior = prior if isinstance(prior, dict) else {}
            entries[self.options.name] = use_entry(prior.get("hits", 0) + use.hits,
                                                   prior.get("misses", 0) + use.misses)
        return done

    def _keep_spend(self, rec: Record, spend: JudgeSpend) -> None:
        usage = judge_usage_of(rec.meta)
        total = JudgeSpend()
        total.add(usage.get(self.spec, {}))
        total.add(spend.to_dict())
        rec.meta["judge_usage"] = {**usage, self.spec: total.to_dict()}
        if self.on_spend is not None:
            self.on_spend(self.spec, spend)

    async def _apply(self, rec: Record) -> Counter[str]:
        done: Counter[str] = Counter()
        if rec.status != "ok" or rec.prediction is None or not judge_applies(rec):
            return done
        if not self._judge_current(rec):
            scorer = self.scorer_for(rec)
            res = await scorer.judge(case_of(rec))
            rec.meta.pop("judge_error_label", None)  # a new verdict needs a new label
            rec.meta.pop("judge_label_error", None)
            if isinstance(res, JudgeFailure):
                rec.scores.pop(scorer.name, None)  # never leave a stale verdict beside it
                rec.score_details.pop(scorer.name, None)
                keep_judge_error(rec, scorer.name, {"kind": res.kind, "message": res.message})
                done["failures"] += 1
            else:
                rec.scores[scorer.name] = res.value
                rec.score_details[scorer.name] = res
                keep_judge_error(rec, scorer.name, None)
                done["judged"] += 1
                done["auto_zero"] += bool(res.details.get("auto_zero"))
        if self.extractor is not None and not self._extract_current(rec):
            ext = await self.extractor.score_async(question_of(rec), rec.prediction)
            if isinstance(ext, JudgeFailure):
                rec.scores.pop(self.extractor.name, None)
                rec.score_details.pop(self.extractor.name, None)
                rec.meta["extract_error"] = {"kind": ext.kind, "message": ext.message}
                done["extract_failures"] += 1
            else:
                rec.scores[self.extractor.name] = ext.value
                rec.score_details[self.extractor.name] = ext
                rec.meta.pop("extract_error", None)
                done["extracted"] += 1
        if self._needs_label(rec):
            lab = await label_wrong_answer(self.model, case_of(rec),
                                           max_attempts=self.options.max_attempts)
            if isinstance(lab, JudgeFailure):
                rec.meta["judge_label_error"] = {"kind": lab.kind, "message": lab.message}
                done["label_failures"] += 1
            else:
                rec.meta["judge_error_label"] = {**lab, "judge": self.options.name}
                rec.meta.pop("judge_label_error", None)
                done["labelled"] += 1
        return done

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.model.describe(),
            **asdict(self.options),
            "prompt_versions": {name: s.version for name, s in self.scorers.items()},
            **({"prompt_file_sha256": self.prompt_file.sha256} if self.prompt_file else {}),
            **({"extract_version": self.extractor.version} if self.extractor else {}),
        }

    def manifest_entry(self, records: list[Record]) -> dict[str, Any]:
        name = self.options.name
        entry = self.describe()
        entry["judged"] = sum(name in r.scores for r in records)
        entry["failures"] = sum(name in r.judge_errors() for r in records)
        # the version of the MemLens rubric, kept under its historical key
        entry["prompt_version"] = self.scorers[
            self.prompt_file.name if self.prompt_file else "memlens"].version
        return entry


def keep_judge_error(rec: Record, name: str, failure: dict[str, str] | None) -> None:
    """Set (or, with ``None``, clear) judge ``name``'s failure on ``rec``, leaving the other
    judges' as they are: ``meta.judge_errors`` by judge, and the single legacy
    ``meta.judge_error`` (with its ``scorer``), which names a judge still failing, or is
    gone."""
    errors = {k: v for k, v in rec.judge_errors().items() if k}  # an unnamed one: this judge's
    if failure is None:
        errors.pop(name, None)
    else:
        errors[name] = failure
    rec.meta.pop("judge_error", None)
    rec.meta.pop("judge_errors", None)
    if errors:
        rec.meta["judge_errors"] = errors
        last = name if name in errors else max(errors)
        rec.meta["judge_error"] = {**errors[last], "scorer": last}


async def judge_records(records: list[Record], pipeline: JudgePipeline, *,
                        concurrency: int = 8, budget: Any = None) -> Counter[str]:
    """Apply ``pipeline`` to the records that need it, ``concurrency`` at a time. Once
    ``budget`` (a :class:`~memgauge.runner._budget.Budget`) is reached no record starts
    (``left``): those in flight finish, the rest stay to judge on a rerun."""
    sem = asyncio.Semaphore(max(1, concurrency))
    totals: Counter[str] = Counter()

    async def one(rec: Record) -> Counter[str]:
        async with sem:
            if budget is not None and budget.reason:
                return Counter(left=1)
            return await pipeline.apply(rec)

    for done in await asyncio.gather(*(one(r) for r in records if pipeline.needs(r))):
        totals.update(done)
    return totals


def note_spend(manifest: dict[str, Any], records: list[Record], budget: Any = None) -> None:
    """The manifest's ``ledger`` again, the judges' spend now in it, and, under a budget,
    ``score_budget``: its limits, the spend and what stopped it (design 0034)."""
    ledger = ledger_of(records)
    if budget is not None and budget.prices is not None:
        manifest["ledger"] = ledger.to_dict(budget.price, budget.prices)
    elif "ledger" in manifest or ledger.judges:  # no prices: the answers' dollars stay
        manifest["ledger"] = {**manifest.get("ledger", {}), **ledger.to_dict()}
    if budget is not None and budget.active:
        manifest["score_budget"] = budget.describe(ledger)


def record_judging(manifest: dict[str, Any], pipeline: JudgePipeline,
                   records: list[Record]) -> None:
    """Note the judge in a run manifest: ``judges[name]``, and ``judge`` for the default
    name."""
    entry = pipeline.manifest_entry(records)
    manifest.setdefault("judges", {})[pipeline.options.name] = entry
    if pipeline.options.name == "judge":
        manifest["judge"] = entry


async def judge_run(run_dir: str | os.PathLike[str], model: ChatModel, *,
                    mode: str = "default", concurrency: int = 8, max_attempts: int = 3,
                    options: JudgeOptions | None = None, spec: str | None = None,
                    budget: Any = None) -> dict[str, int]:
    """Judge the records of ``run_dir`` in place; returns counts (judged, skipped, failures,
    auto_zero, and extracted / labelled when those are on; ``left`` when ``budget`` stopped
    it, see :func:`judge_records`)."""
    # imported here: the runner imports this package (scoring) at load time

    if options is None:
        options = JudgeOptions(mode=mode, max_attempts=max_attempts)
    pipeline = JudgePipeline(model, options, spec)
    if budget is not None:
        pipeline.on_spend = budget.add_judge
    manifest = load_manifest(run_dir)
    if manifest is None:
        raise InputError(f"{run_dir} is not a run folder (no manifest.json)")
    records = list(read_records(run_dir).values())
    scorers = scorers_after_run(manifest)
    rule_scored = score_missing(records, scorers)
    todo = sum(pipeline.needs(r) for r in records)
    try:
        totals = await judge_records(records, pipeline, concurrency=concurrency,
                                     budget=budget)
    finally:  # an interrupted score keeps what it judged (and paid for)
        if todo or rule_scored:
            rewrite_records(run_dir, records)
    if rule_scored:
        note_scorers(manifest, scorers)
        totals["rule_scored"] = rule_scored
    record_judging(manifest, pipeline, records)
    note_spend(manifest, records, budget)
    write_manifest(run_dir, manifest)
    counts = {"judged": totals["judged"], "skipped": len(records) - todo,
              "failures": totals["failures"], "auto_zero": totals["auto_zero"]}
    for extra in ("extracted", "extract_failures", "labelled", "label_failures", "left",
                  "rule_scored"):
        if totals[extra]:
            counts[extra] = totals[extra]
    return counts
