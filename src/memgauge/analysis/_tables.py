"""Cross-run report tables, computed once from many run folders and rendered three ways
(Markdown, JSON, HTML) by :mod:`memgauge.report`.

Every accuracy is the mean primary score over ``status == "ok"`` records carrying that score,
and always travels with its ``n``. Errors (``status == "error"``) are counted apart and never
scored as wrong. Runs group into *systems*: runs whose identity differs only in the tier.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any

from memgauge.analysis._audit import judge_check
from memgauge.analysis._clues import cell_label, clue_groups, record_cells
from memgauge.analysis._cost import ALL_TIERS, CostRow, Price, cost_row, family_kind
from memgauge.analysis._errors import error_breakdown
from memgauge.analysis._json import json_safe
from memgauge.analysis._metrics import (
    CI_METHOD,
    Summary,
    choose_primary,
    coverage_counts,
    summarize,
)
from memgauge.analysis._paired import clustered_se, spearman
from memgauge.analysis._stats import BOOTSTRAP, mean
from memgauge.analysis._timeline import by_system as timeline_by_system
from memgauge.analysis._xy import (
    LETTER_SCORER,
    XYCell,
    judge_name,
    rotation_summary,
    xy_matrices,
)
from memgauge.errors import ConfigError, MemgaugeError
from memgauge.runfolder import load_manifest, read_records
from memgauge.schema import (
    RUN_FINISHED,
    RUN_RUNNING,
    RUN_STOPPED,
    Ability,
    ErrorInfo,
    Measure,
    Record,
)
from memgauge.scoring import record_measure
from memgauge.systems.http_system import TRANSPORT_OPTIONS, served_as

__all__ = [
    "DEPTH_BINS",
    "Cell",
    "QuestionRow",
    "ReportTables",
    "RunData",
    "RunProgress",
    "RunRow",
    "SpearmanRow",
    "SystemInfo",
    "build_tables",
    "load_runs",
    "measure_of",
    "model_label",
    "run_labels",
    "run_progress",
    "scorer_label",
    "sent_modality",
    "tier_sort_key",
]

NO_TIER = "-"
NO_MODEL = "no model"
# What a scorer's mean is: the f1 scorer's values are token F1s, and their mean is not an
# accuracy (issue 12); every other built-in scorer gives 0/1 (or judge levels).
MEASURES = {"f1": "mean token-F1"}


def measure_of(scorer: str | None, *, title: bool = False) -> str:
    """What the mean of ``scorer``'s values is called in a report (``title``: capitalised
    for the start of a label, "Mean token-F1")."""
    measure = MEASURES.get(scorer or "", "accuracy")
    return measure[:1].upper() + measure[1:] if title else measure


def scorer_label(scorer: str) -> str:
    """A scorer as a column or row label: its name, and what its mean is where that is not
    an accuracy (``f1 (mean token-F1)``)."""
    measure = MEASURES.get(scorer)
    return f"{scorer} ({measure})" if measure else scorer

NOTHING_SENT = "nothing sent (no model)"
X_LABELS = ("X1", "X2", "X3", "X4")
Y_LABELS = ("Y1", "Y2", "Y3")
DEPTH_BINS = ("0.0–0.2", "0.2–0.4", "0.4–0.6", "0.6–0.8", "0.8–1.0")
MIN_SPEARMAN_RUNS = 3
_ABILITY_ORDER = {a.value: i for i, a in enumerate(Ability)}
_TIER_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?)\s*$", re.IGNORECASE)
_TIER_SCALE = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}


# --- input --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunData:
    """One run folder as read: its display label, its manifest and its records."""

    label: str
    manifest: dict[str, Any]
    records: list[Record]
    path: str = ""

    @property
    def identity(self) -> dict[str, Any]:
        config = self.manifest.get("config") if isinstance(self.manifest, dict) else None
        ident = config.get("identity") if isinstance(config, dict) else None
        return ident if isinstance(ident, dict) else {}


@dataclass(frozen=True)
class RunProgress:
    """How much of what a run set out to answer has a record (design 0040): ``planned``
    from the manifest (``None``: not known, e.g. stopped before its input was read
    through), ``state`` the manifest's ``run_state`` (``None`` before it was written)."""

    n_records: int
    planned: int | None
    state: str | None

    @property
    def complete(self) -> bool:
        if self.state == RUN_RUNNING:
            return False
        if self.planned is not None:
            return self.n_records >= self.planned
        return self.state != RUN_STOPPED

    @property
    def label(self) -> str:
        """``""`` for a complete run, else ``incomplete: 1 of 6`` (``of ?`` when the
        planned count is not known), and ``, running`` while a run is in progress."""
        if self.complete:
            return ""
        planned = "?" if self.planned is None else str(self.planned)
        running = ", running" if self.state == RUN_RUNNING else ""
        return f"incomplete: {self.n_records} of {planned}{running}"


def run_progress(manifest: Mapping[str, Any], n_records: int) -> RunProgress:
    """A run's :class:`RunProgress` from its manifest and its record count."""
    planned = manifest.get("questions_planned")
    state = manifest.get("run_state")
    return RunProgress(
        n_records=n_records,
        planned=planned if isinstance(planned, int) and not isinstance(planned, bool) else None,
        state=state if state in (RUN_RUNNING, RUN_FINISHED, RUN_STOPPED) else None)


def run_labels(paths: Sequence[str | Path]) -> list[str]:
    """Display labels of run folders: the folder name, or for names that collide the
    shortest trailing path that is unique among the runs."""
    resolved = [Path(p).resolve() for p in paths]
    labels = [p.name or str(p) for p in resolved]
    counts = Counter(labels)
    for i, p in enumerate(resolved):
        if counts[labels[i]] == 1:
            continue
        others = [q for j, q in enumerate(resolved) if j != i]
        for depth in range(2, len(p.parts) + 1):
            tail = p.parts[-depth:]
            if all(q.parts[-depth:] != tail for q in others):
                labels[i] = "/".join(tail)
                break
        else:
            labels[i] = str(p)
    return labels


def load_runs(run_dirs: Sequence[str | Path],
              skipped: list[str] | None = None) -> list[RunData]:
    """Read run folders (manifest and latest record per question); a folder without a
    manifest, or with no record (a run that never answered: a report of it would show 0
    questions as if that were a result), is a :class:`~memgauge.errors.MemgaugeError`.
    With ``skipped``, such folders (that exist) are left out instead, each named there with
    why (``report runs/*`` over a folder a failed run left); an error still when no folder
    is left, or a path is not a folder at all."""

    if not run_dirs:
        raise ConfigError("no run folders given")
    runs, reasons = [], []
    for run_dir, label in zip(run_dirs, run_labels(run_dirs), strict=True):
        manifest = load_manifest(run_dir)
        records = list(read_records(run_dir).values()) if manifest is not None else []
        if manifest is None:
            reason = f"{run_dir} is not a run folder (no manifest.json)"
        elif not records:
            reason = (f"{run_dir} has a manifest but no records (records.jsonl is missing or "
                      "empty): nothing to report yet; run it, or rerun the same command to "
                      "resume")
        else:
            runs.append(RunData(label=label, manifest=manifest, records=records,
                                path=str(run_dir)))
            continue
        if skipped is None or not Path(run_dir).is_dir():
            raise MemgaugeError(reason)
        reasons.append(reason)
    if not runs:
        raise MemgaugeError("; ".join(reasons))
    if skipped is not None:
        skipped += reasons
    return runs


# --- output types -----------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """An accuracy and the number of scored ok records behind it (``nan`` when n = 0)."""

    accuracy: float
    n: int


@dataclass(frozen=True)
class SystemInfo:
    """Runs sharing an identity apart from the tier, with their tiers in order."""

    label: str
    runs: list[str]
    tiers: list[str]


@dataclass(frozen=True)
class RunRow:
    """One run on the leaderboard: counts, micro/macro accuracy, CI, clustered SE,
    coverage, per-answer and refusal accuracy of the primary scorer."""

    run: str
    path: str
    system: str
    tier: str
    model: str  # as shown: the --model spec, "no model" for none:, "" when not recorded
    modality: str  # what reached the model (see sent_modality); "" when not recorded
    n_records: int
    n_ok: int
    n_errors: int
    error_kinds: dict[str, int]
    reply_labels: dict[str, int]  # hedged / unparseable ok replies (scored 0, counted apart)
    n: int  # ok records carrying the primary score
    accuracy: float  # micro
    ci_low: float
    ci_high: float
    ci_method: str  # bootstrap, or wilson below SMALL_N questions (design 0040)
    small_n: bool  # fewer than SMALL_N scored questions: every format marks it
    macro_accuracy: float
    n_abilities: int
    se_clustered: float
    n_episodes: int
    coverage: float
    n_answerable: int
    n_attempted: int
    per_answer_accuracy: float
    n_per_answer: int
    refusal_accuracy: float
    n_refusal: int
    evidence_recall: float
    n_recall: int
    scores: dict[str, Cell]  # every scorer's accuracy over this run's ok records
    # "MCQ" or "open" for one form of a run holding both (MemEye): its row is then
    # "<run> · <form>", valued by that form's own measure (see _form_parts)
    form: str = ""
    # What the run set out to answer (design 0040): planned questions (None: not known),
    # the manifest's run_state, and whether records are missing; ``progress`` says so
    # ("incomplete: 1 of 6"), "" for a complete run. Incomplete runs rank apart.
    n_planned: int | None = None
    run_state: str | None = None
    incomplete: bool = False
    progress: str = ""
    # the benchmark its records come from (the run's --bench): leaderboards are grouped by
    # it, as two benchmarks' accuracies are not one ranking (design 0043)
    benchmark: str = ""


@dataclass(frozen=True)
class SpearmanRow:
    """Rank correlation of two abilities' per-run accuracies; ``rho`` is ``nan`` (with a
    ``note``) when a side is constant, and the pair is listed as omitted below 3 runs."""

    ability_a: str
    ability_b: str
    n_runs: int
    rho: float
    note: str = ""


@dataclass(frozen=True)
class QuestionRow:
    """One (run, question) for the browser."""

    run: str
    question_id: str
    episode_id: str
    ability: str
    subtype: str | None
    tier: str
    question: str
    gold: str | list[str]
    prediction: str | None
    scores: dict[str, float]
    correct: str  # right | wrong | error | unscored
    error_kind: str | None
    error_message: str | None
    error_label: str | None
    retrieved: list[str]
    evidence: list[str]
    evidence_recall: float | None
    evidence_depth: float | None


@dataclass
class ReportTables:
    """Everything the cross-run report shows. ``to_dict`` gives strict JSON data."""

    primary: str | None
    scorers: list[str]
    confidence: float
    n_resamples: int
    seed: int
    ci_method: str
    tiers: list[str]
    abilities: list[str]
    systems: list[SystemInfo]
    runs: list[RunRow]
    ability_matrix: dict[str, dict[str, Cell]]  # run -> ability -> cell
    tier_curves: dict[str, dict[str, dict[str, Cell]]]  # system -> ability -> tier -> cell
    depth_bins: list[str]
    depth: dict[str, dict[str, dict[str, Cell]]]  # system -> bin -> tier -> cell
    depth_note: str
    xy: dict[str, dict[str, dict[str, XYCell]]]  # run -> X -> Y -> cell (runs with labels)
    error_labels: dict[str, dict[str, Any]]  # run -> n_wrong, by_label, by_category
    label_names: list[str]
    category_names: list[str]
    spearman: list[SpearmanRow]
    spearman_omitted: list[dict[str, Any]]
    questions: list[QuestionRow] = field(default_factory=list)
    # The cost of memory (design 0027): per system and tier, then over all its tiers; each
    # system's kind (long-context or memory agent); the prices file dollars came from.
    cost: list[CostRow] = field(default_factory=list)
    system_kinds: dict[str, str] = field(default_factory=dict)
    prices_file: str | None = None
    # Retrieval diagnostics from the stored rankings (design 0030): system -> ability ->
    # tier -> ClueGroup.to_dict(); ``clues_k`` the --k asked for (None: each system's own).
    clues: dict[str, dict[str, dict[str, dict[str, Any]]]] = field(default_factory=dict)
    clues_k: int | None = None
    # Accuracy over a timeline (design 0029): system -> axis (elapsed_sessions,
    # evidence_distance) -> bin -> cell, for systems whose records carry those positions.
    timeline: dict[str, dict[str, dict[str, Cell]]] = field(default_factory=dict)
    # MCQ asked over rotations (design 0036): run -> debiased EM, all-rotations-correct,
    # unparseable replies, accuracy by gold position.
    rotations: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A judge as headline scorer, checked against the rule on closed-form items (design
    # 0043): run -> analysis._audit.judge_check(); runs headlined by a judge only.
    judge_checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What the tables were computed from, kept so the per-run report sections reuse them
    # instead of bootstrapping again; not part of the JSON.
    summaries: dict[str, Summary] = field(default_factory=dict, repr=False)
    breakdowns: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data: non-finite numbers become ``None``."""
        data = asdict(replace(self, summaries={}, breakdowns={}))
        del data["summaries"], data["breakdowns"]
        return json_safe(data)


# --- helpers ------------------------------------------------------------------------------


def tier_sort_key(tier: str) -> tuple[int, float, str]:
    """Order tiers by size: ``8k < 32k < 128k < 1m``; unparsable names after, by name;
    the no-tier mark last."""
    if tier == NO_TIER:
        return (2, 0.0, tier)
    m = _TIER_RE.match(tier)
    if m is None:
        return (1, 0.0, tier)
    return (0, float(m.group(1)) * _TIER_SCALE[m.group(2).lower()], tier)


def _ability_key(ability: str) -> tuple[int, str]:
    return (_ABILITY_ORDER.get(ability, len(_ABILITY_ORDER)), ability)


def _cell(records: Iterable[Record], primary: str | None) -> Cell:
    """Accuracy of ``primary`` over the ok records carrying it."""
    if primary is None:
        return Cell(math.nan, 0)
    values = [r.scores[primary] for r in records if r.status == "ok" and primary in r.scores]
    return Cell(mean(values), len(values))


def _run_tier(run: RunData) -> str:
    tier = run.identity.get("tier")
    if tier:
        return str(tier)
    seen = Counter(r.benchmark.tier for r in run.records if r.benchmark.tier)
    return seen.most_common(1)[0][0] if seen else NO_TIER


def _run_benchmark(run: RunData) -> str:
    bench = run.identity.get("bench")
    if bench:
        return str(bench)
    seen = Counter(r.benchmark.name for r in run.records if r.benchmark.name)
    return seen.most_common(1)[0][0] if seen else ""


def model_label(model: Any) -> str:
    """The model as a report shows it: the ``--model`` spec, or ``no model`` for ``none:``
    (the placeholder of systems that call none)."""
    text = str(model or "").strip()
    return NO_MODEL if text.split(":", 1)[0] in ("", "none") else text


def sent_modality(run: RunData) -> str:
    """What the run's system sent its model, from what the run recorded rather than what
    was asked: ``--context-mode image`` sends no image to a model that gets none (a
    benchmark without images, a system that passes text on). In order: no model → nothing
    sent; records' ``n_images`` (full-context and RAG write it) > 0 → ``image``, all 0 → the text
    mode; a benchmark manifest counting 0 images → ``text``; else the context mode."""
    ident = run.identity
    if model_label(ident.get("model")) == NO_MODEL and ident:
        return NOTHING_SENT
    mode = str(ident.get("context_mode") or "")
    counts = [n for n in (r.response.meta.get("n_images") for r in run.records)
              if isinstance(n, int) and not isinstance(n, bool)]
    if counts:
        return "image" if sum(counts) else (mode if mode not in ("", "image") else "text")
    bench = run.manifest.get("benchmark") if isinstance(run.manifest, dict) else None
    images = (bench.get("counts") or {}).get("images") if isinstance(bench, dict) else None
    if images == 0 and mode in ("image", "caption"):
        return "text"
    return mode


def _system_identity(run: RunData) -> dict[str, Any]:
    """What the report groups a run's system by: its identity, except that a memory service
    (an http system) is the service its ``/info`` names at that version, without the URL
    it was reached at or the transport options (timeout, retries) of the run."""
    ident = dict(run.identity)
    served = served_as(run.manifest.get("system") if isinstance(run.manifest, dict) else None)
    if served is None:
        return ident
    ident["system"] = served
    options = ident.get("system_options")
    if isinstance(options, dict):
        ident["system_options"] = {k: v for k, v in options.items()
                                   if k not in TRANSPORT_OPTIONS}
    return ident


def _system_name(ident: Mapping[str, Any], modality: str) -> str:
    model = model_label(ident.get("model"))
    sent = "" if modality == NOTHING_SENT else modality  # "no model" says it already
    return " · ".join(p for p in (str(ident.get("system") or ""), model, sent) if p)


def _systems(runs: Sequence[RunData]) -> tuple[dict[str, str], list[SystemInfo], dict[str, str]]:
    """Group runs by identity minus tier. Returns run label -> system label, the systems,
    and run label -> tier."""
    tiers = {run.label: _run_tier(run) for run in runs}
    keys: dict[str, str] = {}
    sent: dict[str, list[str]] = {}
    for run in runs:
        ident = _system_identity(run)
        if ident:
            key = json.dumps({k: v for k, v in ident.items() if k != "tier"}, sort_keys=True,
                             default=str)
        else:
            key = f"run:{run.label}"
        keys[run.label] = key
        sent.setdefault(key, []).append(sent_modality(run))
    names: dict[str, str] = {}
    for run in runs:
        key = keys[run.label]
        if key not in names:
            # a system that sent images at any tier is an image system
            modality = "image" if "image" in sent[key] else sent[key][0]
            names[key] = (_system_name(_system_identity(run), modality) if run.identity
                          else run.label) or run.label
    names = _distinct_names(names, runs, keys)
    order: dict[str, list[str]] = {}
    for run in runs:
        order.setdefault(keys[run.label], []).append(run.label)
    systems = [SystemInfo(label=names[key], runs=labels,
                          tiers=sorted({tiers[r] for r in labels}, key=tier_sort_key))
               for key, labels in order.items()]
    return {lab: names[key] for lab, key in keys.items()}, systems, tiers


def _distinct_names(names: dict[str, str], runs: Sequence[RunData],
                    keys: dict[str, str]) -> dict[str, str]:
    """Make system labels unique: add the system options, then a counter."""
    counts = Counter(names.values())
    out = dict(names)
    for run in runs:
        key = keys[run.label]
        opts = _system_identity(run).get("system_options")
        if counts[names[key]] > 1 and opts:
            out[key] = f"{names[key]} ({json.dumps(opts, sort_keys=True, default=str)})"
    seen: Counter[str] = Counter()
    for key in list(out):
        seen[out[key]] += 1
        if seen[out[key]] > 1:
            out[key] = f"{out[key]} #{seen[out[key]]}"
    return out


def _depth_bin(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return DEPTH_BINS[min(int(value * len(DEPTH_BINS)), len(DEPTH_BINS) - 1)]


def _correct(record: Record, primary: str | None) -> str:
    if record.status != "ok":
        return "error"
    if primary is None or primary not in record.scores:
        return "unscored"
    return "right" if record.scores[primary] >= 1 else "wrong"


def _pointer(session_id: str, turn_id: str | None) -> str:
    return f"{session_id}/{turn_id}" if turn_id else session_id


# --- tables -------------------------------------------------------------------------------


def _run_row(run: RunData, system: str, tier: str, primary: str | None, *, seed: int,
             n_resamples: int, confidence: float
             ) -> tuple[RunRow, dict[str, Cell], Summary]:
    """The leaderboard row of a run, its per-ability cells, and the run's summary."""
    names = {name for r in run.records if r.status == "ok" for name in r.scores}
    has_primary = primary is not None and primary in names
    summary = summarize(run.records, primary=primary if has_primary else None, seed=seed,
                        n_resamples=n_resamples, confidence=confidence)
    ok = [r for r in run.records if r.status == "ok"]
    scored = [r for r in ok if primary is not None and primary in r.scores]
    values = [r.scores[primary] for r in scored] if primary is not None else []
    head = summary.overall.get(primary) if has_primary and primary is not None else None
    cov = summary.coverage
    n_attempted_scored = sum(1 for r in scored if r.answer_type != "refusal"
                             and r.refused is not True)
    recalls = [x for x in (r.evidence_recall() for r in ok) if x is not None]
    by_ability = {a: _cell(recs, primary) for a, recs in _group_by_ability(run.records).items()}
    row = RunRow(
        run=run.label, path=run.path, system=system, tier=tier, benchmark=_run_benchmark(run),
        model=model_label(run.identity.get("model")) if run.identity else "",
        modality=sent_modality(run),
        n_records=summary.n_records, n_ok=summary.n_ok, n_errors=summary.n_errors,
        error_kinds=dict(summary.error_kinds),
        reply_labels=dict(summary.reply_labels),
        n=head.n if head else 0,
        accuracy=head.accuracy if head else math.nan,
        ci_low=head.ci_low if head else math.nan,
        ci_high=head.ci_high if head else math.nan,
        ci_method=head.ci_method if head else BOOTSTRAP, small_n=bool(head and head.small_n),
        macro_accuracy=summary.macro_accuracy if has_primary else math.nan,
        n_abilities=sum(1 for c in by_ability.values() if c.n),
        se_clustered=clustered_se(values, [r.episode_id for r in scored]),
        n_episodes=len({r.episode_id for r in scored}),
        coverage=cov.coverage, n_answerable=cov.n_answerable, n_attempted=cov.n_attempted,
        per_answer_accuracy=cov.per_answer_accuracy if has_primary else math.nan,
        n_per_answer=n_attempted_scored,
        refusal_accuracy=cov.refusal_accuracy if has_primary else math.nan,
        n_refusal=sum(1 for r in scored if r.answer_type == "refusal"),
        evidence_recall=mean(recalls), n_recall=len(recalls),
        scores={name: Cell(st.accuracy, st.n) for name, st in summary.overall.items()},
    )
    return row, by_ability, summary


def _progress_fields(p: RunProgress) -> dict[str, Any]:
    return {"n_planned": p.planned, "run_state": p.state, "incomplete": not p.complete,
            "progress": p.label}


FORMS = {Measure.LETTER.value: "MCQ", Measure.JUDGE.value: "open"}


def _form_parts(run: RunData) -> list[tuple[str, RunData]]:
    """A run holding both MemEye forms as two leaderboard parts, ``<run> · MCQ`` and
    ``<run> · open`` (the reference's ``overall`` mixes a letter rate with judge levels);
    any other run whole, with no form."""
    by_measure: dict[str | None, list[Record]] = {}
    for r in run.records:
        by_measure.setdefault(record_measure(r), []).append(r)
    if len(by_measure) < 2:
        return [("", run)]
    order = [Measure.LETTER.value, Measure.JUDGE.value, None]
    return [(form, replace(run, label=f"{run.label} · {form}", records=by_measure[m]))
            for m in order if m in by_measure
            for form in [FORMS.get(m or "", "other")]]


def _form_primary(records: Sequence[Record], chosen: str | None,
                  judge: str | None) -> str | None:
    """What values a part's headline: the letter rule for MCQ rotations alone, the judge
    for judge-only questions alone (``judge`` when no judge ran: no accuracy, never a
    rule score in its place), else the report's primary scorer."""
    measures = {record_measure(r) for r in records}
    if measures == {Measure.LETTER.value}:
        return LETTER_SCORER
    if measures == {Measure.JUDGE.value}:
        return judge or "judge"
    return chosen


def row_of(tables: ReportTables, label: str) -> RunRow:
    """The leaderboard row of run ``label``, or its first part's."""
    return next(r for r in tables.runs
                if r.run == label or (r.form and r.run == f"{label} · {r.form}"))


def _group_by_ability(records: Iterable[Record]) -> dict[str, list[Record]]:
    groups: dict[str, list[Record]] = {}
    for r in records:
        groups.setdefault(str(r.ability), []).append(r)
    return dict(sorted(groups.items(), key=lambda kv: _ability_key(kv[0])))


def _tier_curves(runs: Sequence[RunData], systems: Sequence[SystemInfo],
                 tiers: Mapping[str, str], abilities: Sequence[str],
                 primary: str | None) -> dict[str, dict[str, dict[str, Cell]]]:
    """System -> ability -> tier -> accuracy, pooling runs of a system at the same tier."""
    by_label = {run.label: run for run in runs}
    out: dict[str, dict[str, dict[str, Cell]]] = {}
    for system in systems:
        groups: dict[str, dict[str, list[Record]]] = {}
        for label in system.runs:
            for ability, recs in _group_by_ability(by_label[label].records).items():
                groups.setdefault(ability, {}).setdefault(tiers[label], []).extend(recs)
        out[system.label] = {
            a: {t: _cell(groups[a].get(t, []), primary) for t in system.tiers}
            for a in abilities if a in groups
        }
    return out


def _depth(runs: Sequence[RunData], systems: Sequence[SystemInfo], tiers: Mapping[str, str],
           primary: str | None) -> dict[str, dict[str, dict[str, Cell]]]:
    """System -> depth bin -> tier -> accuracy over records carrying an evidence depth."""
    by_label = {run.label: run for run in runs}
    out: dict[str, dict[str, dict[str, Cell]]] = {}
    for system in systems:
        groups: dict[tuple[str, str], list[Record]] = {}
        for label in system.runs:
            for r in by_label[label].records:
                b = _depth_bin(r.meta.get("evidence_depth"))
                if b is not None:
                    groups.setdefault((b, tiers[label]), []).append(r)
        if groups:
            out[system.label] = {b: {t: _cell(groups.get((b, t), []), primary)
                                     for t in system.tiers} for b in DEPTH_BINS}
    return out


def _xy(runs: Sequence[RunData], primary: str | None,
        **kw: Any) -> dict[str, dict[str, dict[str, XYCell]]]:
    """Run -> X -> Y -> accuracy over its questions (MCQ rotations folded, multi-label
    questions in each of their cells), for runs whose records carry both labels."""
    out: dict[str, dict[str, dict[str, XYCell]]] = {}
    for run in runs:
        out.update(xy_matrices(run.records, primary, run.label, **kw))
    return out


def _rotations(runs: Sequence[RunData], primary: str | None,
               **kw: Any) -> dict[str, dict[str, Any]]:
    """Run -> debiased EM and all-rotations-correct, for runs with MCQ rotations."""
    out = {}
    for run in runs:
        summary = rotation_summary(run.records, primary, **kw)
        if summary is not None:
            out[run.label] = summary
    return out


def _spearman(matrix: Mapping[str, Mapping[str, Cell]],
              abilities: Sequence[str]) -> tuple[list[SpearmanRow], list[dict[str, Any]]]:
    rows: list[SpearmanRow] = []
    omitted: list[dict[str, Any]] = []
    for a, b in combinations(abilities, 2):
        pairs = [(cells[a].accuracy, cells[b].accuracy) for cells in matrix.values()
                 if a in cells and b in cells and cells[a].n and cells[b].n]
        if len(pairs) < MIN_SPEARMAN_RUNS:
            omitted.append({"ability_a": a, "ability_b": b, "n_runs": len(pairs),
                            "reason": f"only {len(pairs)} run(s) have both abilities; "
                                      f"need {MIN_SPEARMAN_RUNS}"})
            continue
        rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
        note = "" if math.isfinite(rho) else "undefined: an ability's accuracy is constant"
        rows.append(SpearmanRow(a, b, len(pairs), rho, note))
    return rows, omitted


def _question_rows(run: RunData, tier: str, primary: str | None,
                   labels: Mapping[str, str]) -> list[QuestionRow]:
    rows = []
    for r in sorted(run.records, key=lambda rec: rec.question_id):
        err = r.response.error
        judged = r.judge_errors()
        if err is None and judged:
            # answered, but a judge gave no verdict: say why, the headline judge's first,
            # then every other judge's (all are kept, design 0040)
            first = primary if primary in judged else min(judged)
            others = [f"{name or 'judge'}: {e['kind']}: {e['message']}"
                      for name, e in sorted(judged.items()) if name != first]
            err = ErrorInfo(kind=f"judge {judged[first]['kind']}",
                            message="; ".join([judged[first]["message"], *others]))
        depth = r.meta.get("evidence_depth")
        rows.append(QuestionRow(
            run=run.label, question_id=r.question_id, episode_id=r.episode_id,
            ability=str(r.ability), subtype=r.subtype, tier=tier, question=r.question,
            gold=r.gold, prediction=r.prediction, scores=dict(r.scores),
            correct=_correct(r, primary),
            error_kind=err.kind if err is not None else ("unknown" if r.status != "ok" else None),
            error_message=err.message if err is not None else None,
            error_label=labels.get(r.question_id),
            retrieved=[_pointer(it.pointer.session_id, it.pointer.turn_id)
                       for it in r.response.retrieved if it.chosen],
            evidence=[_pointer(p.session_id, p.turn_id) for p in r.evidence],
            evidence_recall=r.evidence_recall(),
            evidence_depth=(float(depth) if depth is not None and _depth_bin(depth) is not None
                            else None),
        ))
    return rows


def _pick_primary(runs: Sequence[RunData], primary: str | None) -> tuple[list[str], str | None]:
    ok = [r for run in runs for r in run.records if r.status == "ok"]
    scorers = sorted({name for r in ok for name in r.scores})
    try:
        return scorers, choose_primary(scorers, primary, covered=coverage_counts(ok),
                                       n_ok=len(ok))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _cost_rows(runs: Sequence[RunData], systems: Sequence[SystemInfo],
               tiers: Mapping[str, str], primary: str | None,
               prices: Mapping[str, Price] | None, prices_file: str
               ) -> tuple[list[CostRow], dict[str, str]]:
    """Cost per system and tier, plus an all-tiers row for a system run at several."""
    by_label = {run.label: run for run in runs}
    rows: list[CostRow] = []
    kinds: dict[str, str] = {}
    for system in systems:
        ident = by_label[system.runs[0]].identity
        options = ident.get("system_options")
        kind = kinds[system.label] = family_kind(str(ident.get("system") or ""),
                                                 options if isinstance(options, dict) else {})
        model = str(ident.get("model") or "")
        per_tier: dict[str, list[Record]] = {}
        for label in system.runs:
            per_tier.setdefault(tiers[label], []).extend(by_label[label].records)
        groups = [(t, per_tier[t]) for t in system.tiers]
        if len(groups) > 1:
            groups.append((ALL_TIERS, [r for _, recs in groups for r in recs]))
        rows += [cost_row(system.label, tier, kind, model, recs, primary, prices, prices_file)
                 for tier, recs in groups]
    return rows, kinds


def _clues(runs: Sequence[RunData], systems: Sequence[SystemInfo], tiers: Mapping[str, str],
           primary: str | None, k: int | None) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """System -> ability -> tier -> clue diagnostics, for systems that recorded rankings;
    after the abilities, the same per X × Y cell ("X3 × Y3") where records carry cells."""
    by_label = {run.label: run for run in runs}
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for system in systems:
        triples = [(str(r.ability), tiers[label], r) for label in system.runs
                   for r in by_label[label].records]
        triples += [(cell_label(c), tier, r) for _, tier, r in list(triples)
                    for c in record_cells(r)]
        groups = clue_groups(triples, primary, k)
        if groups:
            out[system.label] = {
                a: {t: groups[a][t].to_dict() for t in system.tiers if t in groups[a]}
                for a in sorted(groups, key=_ability_key)}
    return out


def _timeline(runs: Sequence[RunData], systems: Sequence[SystemInfo],
              primary: str | None) -> dict[str, dict[str, dict[str, Cell]]]:
    """System -> axis -> bin -> accuracy over its questions asked mid-history (0029)."""
    by_label = {run.label: run for run in runs}
    groups = {s.label: [r for label in s.runs for r in by_label[label].records]
              for s in systems}
    return {system: {axis: {b: Cell(acc, n) for b, (acc, n) in bins.items()}
                     for axis, bins in axes.items()}
            for system, axes in timeline_by_system(groups, primary).items()}


def build_tables(runs: Sequence[RunData], *, primary: str | None = None, seed: int = 0,
                 n_resamples: int = 2000, confidence: float = 0.95,
                 prices: Mapping[str, Price] | None = None,
                 prices_file: str | None = None, k: int | None = None) -> ReportTables:
    """Compute every cross-run table once. The primary scorer is ``primary`` or
    :func:`~memgauge.analysis.choose_primary` over the score names of all runs; a run lacking
    it shows no accuracy (``nan``) rather than another scorer's. With ``prices`` (read
    from ``prices_file`` by :func:`~memgauge.analysis.load_prices`) the cost rows carry
    dollars. ``k``: the cut of the retrieval diagnostics (default: each system's own)."""
    if len({run.label for run in runs}) != len(runs):
        raise ConfigError("run labels must be unique")
    scorers, chosen = _pick_primary(runs, primary)
    system_of, systems, tiers = _systems(runs)
    kw = {"seed": seed, "n_resamples": n_resamples, "confidence": confidence}

    rows: list[RunRow] = []
    matrix: dict[str, dict[str, Cell]] = {}
    label_maps: dict[str, dict[str, str]] = {}
    error_labels: dict[str, dict[str, Any]] = {}
    summaries: dict[str, Summary] = {}
    breakdowns: dict[str, dict[str, Any]] = {}
    for run in runs:
        parts = _form_parts(run)
        judge = judge_name(run.records, chosen)
        # the whole run's progress, on each of its form parts too (design 0040)
        progress = _progress_fields(run_progress(run.manifest, len(run.records)))
        for form, part in parts:
            row, cells, summaries[run.label] = _run_row(
                part, system_of[run.label], tiers[run.label],
                _form_primary(part.records, chosen, judge), **kw)
            rows.append(replace(row, form=form, **progress))
            matrix[part.label] = cells
        if len(parts) > 1:  # the run's own summary (its per-run section), as before
            summaries[run.label] = _run_row(run, system_of[run.label], tiers[run.label],
                                            chosen, **kw)[2]
        if chosen is not None:
            bd = breakdowns[run.label] = error_breakdown(run.records, scorer=chosen)
            error_labels[run.label] = {"n_wrong": bd["n_wrong"], "by_label": bd["by_label"],
                                       "by_category": bd["by_category"]}
            label_maps[run.label] = dict(bd["items"])

    abilities = sorted({a for cells in matrix.values() for a in cells}, key=_ability_key)
    depth = _depth(runs, systems, tiers, chosen)
    spearman_rows, omitted = _spearman(matrix, abilities)
    cost, kinds = _cost_rows(runs, systems, tiers, chosen, prices, prices_file or "")
    return ReportTables(
        primary=chosen, scorers=scorers, confidence=confidence, n_resamples=n_resamples,
        seed=seed, ci_method=CI_METHOD,
        tiers=sorted(set(tiers.values()), key=tier_sort_key), abilities=abilities,
        systems=systems, runs=rows, ability_matrix=matrix,
        tier_curves=_tier_curves(runs, systems, tiers, abilities, chosen),
        depth_bins=list(DEPTH_BINS), depth=depth,
        depth_note="" if depth else "No record carries meta.evidence_depth.",
        xy=_xy(runs, chosen, **kw), rotations=_rotations(runs, chosen, **kw),
        error_labels=error_labels,
        label_names=sorted({k for e in error_labels.values() for k in e["by_label"]}),
        category_names=sorted({k for e in error_labels.values() for k in e["by_category"]}),
        spearman=spearman_rows, spearman_omitted=omitted,
        questions=[q for run in runs
                   for q in _question_rows(run, tiers[run.label], chosen,
                                           label_maps.get(run.label, {}))],
        cost=cost, system_kinds=kinds, prices_file=prices_file,
        clues=_clues(runs, systems, tiers, chosen, k), clues_k=k,
        timeline=_timeline(runs, systems, chosen),
        judge_checks=_judge_checks(runs, chosen),
        summaries=summaries, breakdowns=breakdowns,
    )


def _judge_checks(runs: Sequence[RunData], chosen: str | None) -> dict[str, dict[str, Any]]:
    """Each run whose headline is a judge, against the rule scorer on closed-form items."""
    if chosen is None or "judge" not in chosen.lower():
        return {}
    out = {}
    for run in runs:
        if any(chosen in r.scores for r in run.records):
            out[run.label] = judge_check(run.records, chosen)
    return out
