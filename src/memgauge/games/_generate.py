"""``memgauge generate games``: trajectory folders -> a games benchmark folder (design 0032,
"Generator and loader").

    config = GamesConfig(trajectories=["traj/crafter-0"], out="bench/games", horizons=[50])
    summary = generate_games(config)

For every trajectory and every horizon N (each ``--horizon``, plus the whole trajectory) the
steps are cut at N *before* the timeline is built, so no template can read a later step. A
horizon past a trajectory's last step (the game was won or lost before it) asks about the
whole trajectory; ``benchmark.json`` lists it under that trajectory's ``horizons_past_end``.
Every template of the game kind runs with its own RNG, seeded from (seed, trajectory,
horizon, template); the questions are de-duplicated, capped per template, balanced across
abilities, checked, given the window phrase and a stable id, and written with a copy of
each trajectory. No single answer may be right for more than chance + 10 points of a
template family's questions, per trajectory and horizon and over the benchmark (design
0039). Same inputs and seed give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, MemgaugeError
from ..io import file_sha256
from ._constant import MARGIN, Answer, answer_of, cap_constant
from ._trajectory import Step, TrajectoryMeta, read_trajectory
from ._view import question_names, shown_steps, unshown_names, view_text
from .templates import (
    ABILITIES,
    ANSWER_TYPES,
    NOT_ANSWERABLE,
    GameQuestion,
    Template,
    templates_for,
)

BENCH_FORMAT = "memgauge.games-bench/1"
# 1: design 0032. 2: design 0039 — templates see only what the sessions render (no player
# reason, no admissible commands; text questions naming something never shown are dropped,
# benchmark.json "view_check"), closed answers balanced ("answer_balance"). 3: no answer
# value, open templates too, may be right for more than chance + 10 points of a template's
# questions, per trajectory and horizon and over the benchmark ("answer_balance").
GENERATOR_VERSION = "3"
# Each answer value of a closed template (yes/no, before/after) keeps at least this share of
# the template's questions at a trajectory and horizon, where the trajectory allows.
MIN_VALUE_SHARE = 0.3
# No ability may hold more than this many times the questions of the median ability (per
# trajectory and horizon): an ability with many templates must not drown the others.
MAX_ABILITY_RATIO = 2.0
GAME_KIND = {"crafter": "crafter", "textworld": "text", "jericho": "text"}
# Game kinds whose names are checked against the rendered text (Crafter's names are the
# materials, items and creatures its frames draw, so its text is not the whole view).
NAME_CHECKED = ("text",)
_TIMELINES = {"crafter": ("._crafter_timeline", "CrafterTimeline"),
              "text": ("._text_timeline", "TextTimeline")}

TimelineFactory = Callable[[str, TrajectoryMeta, list[Step]], Any]


class TemplateError(MemgaugeError):
    """A template produced a question that breaks the contract (a bug in the template)."""


def default_timeline(kind: str, meta: TrajectoryMeta, steps: list[Step]) -> Any:
    """The game kind's timeline class, imported only when needed."""
    import importlib

    module_name, class_name = _TIMELINES[kind]
    try:
        module = importlib.import_module(module_name, "memgauge.games.templates")
    except ImportError as exc:
        raise ConfigError(f"no {kind} timeline in this memgauge ({exc}): the {kind} "
                          "templates are not installed") from None
    return getattr(module, class_name)(meta, steps)


@dataclass
class GamesConfig:
    trajectories: Sequence[str | Path]
    out: str | Path
    seed: int = 0
    max_per_template: int = 3
    horizons: Sequence[int] = ()
    overwrite: bool = False
    paraphraser: Any = None  # a ChatModel, or None
    cross_episode: bool = False  # also ask across the trajectories of each game kind
    make_timeline: TimelineFactory | None = None  # None: the game kind's own timeline


@dataclass
class _Trajectory:
    id: str
    folder: Path
    meta: TrajectoryMeta
    steps: list[Step]
    kind: str
    sha256: str
    horizons: list[int] = field(default_factory=list)
    # --horizon values past this trajectory's last step: a game can end (won, died) before
    # them, so they ask about the whole trajectory, and benchmark.json says so.
    past_end: list[int] = field(default_factory=list)


def trajectory_id(folder: Path) -> str:
    """The folder's name, kept to characters that are safe in ids and paths."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", folder.resolve().name).strip("-.")
    return name or "trajectory"


def seeded_rng(seed: int, *parts: object) -> random.Random:
    """An RNG seeded from ``seed`` and ``parts`` through sha256 (not ``hash()``, which
    changes between processes)."""
    text = "\x1f".join(str(p) for p in (seed, *parts))
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def window_phrase(horizon: tuple[int, int]) -> str:
    first, last = horizon
    return f"Considering only steps {first}–{last} of your play: "


def _load(config: GamesConfig) -> list[_Trajectory]:
    if not config.trajectories:
        raise ConfigError("give at least one trajectory folder (from `memgauge play`)")
    if config.max_per_template < 1:
        raise ConfigError(f"--max-per-template {config.max_per_template}: must be at least 1")
    bad = [n for n in config.horizons if n < 1]
    if bad:
        raise ConfigError(f"--horizon {bad[0]}: must be at least 1 (a step number)")
    out, seen = [], {}
    for raw in config.trajectories:
        folder = Path(raw)
        meta, steps = read_trajectory(folder)
        kind = GAME_KIND.get(meta.env)
        if kind is None:
            raise ConfigError(f"{folder}: env {meta.env!r} has no templates (known: "
                              f"{', '.join(sorted(GAME_KIND))})")
        tid = trajectory_id(folder)
        if tid in seen:
            raise ConfigError(f"two trajectory folders are both named {tid!r} ({seen[tid]} and "
                              f"{folder}): rename one, the name is the trajectory's id")
        seen[tid] = folder
        if not steps:
            raise ConfigError(f"{folder}: the trajectory has no steps to ask about")

        out.append(_Trajectory(tid, folder, meta, steps, kind,
                               file_sha256(folder / "trajectory.jsonl"),
                               sorted({n for n in config.horizons if n < len(steps)}
                                      | {len(steps)}),
                               past_end=sorted({n for n in config.horizons
                                                if n > len(steps)})))
    return out


def _check(q: GameQuestion, where: str, cut: int) -> None:
    """The contract every question must keep; a breach is the template's bug."""
    problems = []
    first, last = q.horizon
    if not 1 <= first <= last == cut:
        problems.append(f"horizon {list(q.horizon)} is not [first, {cut}] with first >= 1")
    if any(not first <= s <= last for s in q.evidence_steps):
        problems.append(f"evidence_steps {q.evidence_steps} leave the horizon {list(q.horizon)}")
    if q.answerable == (q.answer == NOT_ANSWERABLE):
        problems.append(f"answerable is {q.answerable} but the answer is {q.answer!r}")
    if q.answer_type not in ANSWER_TYPES:
        problems.append(f"answer_type {q.answer_type!r} is not one of {', '.join(ANSWER_TYPES)}")
    if q.ability not in ABILITIES:
        problems.append(f"ability {q.ability!r} is not one of {', '.join(ABILITIES)}")
    if not q.text.strip():
        problems.append("the question text is empty")
    if problems:
        raise TemplateError(f"{where}: {'; '.join(problems)}")


def _run_template(tmpl: Template, timeline: Any, rng: random.Random, where: str) -> list[Any]:
    """The template's questions; a template that fails (a field this trajectory lacks, a
    bug) is named with the trajectory and horizon instead of ending in a traceback."""
    try:
        return list(tmpl.fn(timeline, rng))
    except MemgaugeError:
        raise
    except Exception as exc:  # any failure inside a template is reported as one
        raise TemplateError(f"{where}, template {tmpl.id} failed: {type(exc).__name__}: "
                            f"{exc}"[:500]) from exc


@dataclass
class GenerationReport:
    """What the generator left out, per template, for ``benchmark.json``: questions naming
    what the sessions never showed (``view_check``)."""

    not_shown: dict[str, int] = field(default_factory=dict)
    closed: dict[str, dict[str, Any]] = field(default_factory=dict)
    open: dict[str, dict[str, int]] = field(default_factory=dict)
    cut_per_horizon: dict[str, dict[str, int]] = field(default_factory=dict)
    cut_over_benchmark: dict[str, int] = field(default_factory=dict)

    def drop_unshown(self, template_id: str) -> None:
        self.not_shown[template_id] = self.not_shown.get(template_id, 0) + 1

    def closed_kept(self, template_id: str, offered: list[GameQuestion], chosen: set[int],
                    cap: int) -> None:
        """One (trajectory, horizon) of a closed template: what was offered and kept per
        answer value, and whether balance kept fewer than the cap allowed."""
        entry = self.closed.setdefault(template_id, {"offered": {}, "kept": {},
                                                     "one_sided": 0, "fewer": 0})
        for i, q in enumerate(offered):
            value = str(q.answer)
            entry["offered"][value] = entry["offered"].get(value, 0) + 1
            if i in chosen:
                entry["kept"][value] = entry["kept"].get(value, 0) + 1
        if offered and not chosen:
            entry["one_sided"] += 1
        elif len(chosen) < min(cap, len(offered)):
            entry["fewer"] += 1

    def open_sampled(self, template_id: str, offered: int, sampled: int) -> None:
        """One (trajectory, horizon) of an open template: its questions, and how many the
        round-robin over answer values took."""
        entry = self.open.setdefault(template_id, {"offered": 0, "sampled": 0})
        entry["offered"] += offered
        entry["sampled"] += sampled

    def cut_at_horizon(self, template_id: str, cut: int) -> None:
        entry = self.cut_per_horizon.setdefault(template_id, {"questions": 0, "horizons": 0})
        entry["questions"] += cut
        entry["horizons"] += 1

    def answer_balance(self) -> dict[str, Any]:
        return {"min_value_share": MIN_VALUE_SHARE,
                "note": "closed templates keep each answer value at >= min_value_share of "
                        "their questions per trajectory and horizon; one_sided counts the "
                        "horizons where a value never occurred (nothing kept), fewer those "
                        "where balance kept fewer than --max-per-template",
                "templates": {t: {k: (dict(sorted(v.items())) if isinstance(v, dict) else v)
                                  for k, v in e.items()}
                              for t, e in sorted(self.closed.items())},
                "constant_cap": {
                    "margin": MARGIN,
                    "note": "no answer (not answerable included) may be right for more than "
                            "chance + margin of a template family's questions (a template and "
                            "the adversarial ones worded as it), chance being 1/k as the "
                            "constant-answer gate computes it; open templates are sampled "
                            "round-robin over their answer values (open_templates), then the "
                            "cap is kept per trajectory and horizon (cut_per_horizon) and over "
                            "the whole benchmark (cut_over_benchmark)",
                    "open_templates": {t: dict(e) for t, e in sorted(self.open.items())},
                    "cut_per_horizon": {t: dict(e) for t, e in
                                        sorted(self.cut_per_horizon.items())},
                    "cut_over_benchmark": dict(sorted(self.cut_over_benchmark.items()))}}

    def view_check(self) -> dict[str, Any]:
        return {"rule": "every name an answerable text-game question asks about or answers "
                        "with appears in the rendered sessions up to its horizon",
                "dropped": dict(sorted(self.not_shown.items()))}


def _from_template(tmpl: Template, timeline: Any, rng: random.Random, where: str, cut: int,
                   cap: int, shown: str | None = None,
                   report: GenerationReport | None = None) -> list[GameQuestion]:
    """A template's questions at one horizon: checked, de-duplicated (first kept), those
    naming what the view text ``shown`` never shows dropped (and counted), then a seeded
    choice of at most ``cap`` (a shuffle, so late variants are as likely as early ones), in
    generation order."""
    unique: dict[tuple[str, str], GameQuestion] = {}
    dropped: set[tuple[str, str]] = set()
    for q in _run_template(tmpl, timeline, rng, where):
        _check(q, f"{where}, template {tmpl.id}", cut)
        if q.template != tmpl.id:
            raise TemplateError(f"{where}: template {tmpl.id} yielded a question of "
                                f"{q.template!r}")
        if q.key() in unique or q.key() in dropped:
            continue  # the first of equal questions decides
        if shown is not None and unshown_names(
                shown, question_names(q.params, q.answer_type, q.answer, q.answerable)):
            dropped.add(q.key())
            if report is not None:
                report.drop_unshown(tmpl.id)
            continue
        unique[q.key()] = q
    kept = list(unique.values())
    if tmpl.values:
        chosen = balanced_choice(kept, tmpl.values, cap, rng)
        if report is not None:
            report.closed_kept(tmpl.id, kept, chosen, cap)
        return [q for i, q in enumerate(kept) if i in chosen]
    chosen = spread_choice(kept, cap, rng)
    if report is not None and kept:
        report.open_sampled(tmpl.id, len(kept), len(chosen))
    return [q for i, q in enumerate(kept) if i in chosen]


def _answer(q: GameQuestion) -> Answer:
    return answer_of(q.answer, q.answerable, q.alternatives)


def spread_choice(questions: list[GameQuestion], cap: int, rng: random.Random) -> set[int]:
    """The indices of at most ``cap`` questions of an open template, taken round-robin over
    its answer values in a seeded order, so the sample holds as many values as it can (a
    plain random sample of a mostly-0 count is mostly 0)."""
    pools: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        pools.setdefault(_answer(q).value, []).append(i)
    order = sorted(pools)
    rng.shuffle(order)  # which value comes first is a seeded draw
    queues = [rng.sample(pools[v], len(pools[v])) for v in order]
    spread = [queue[r] for r in range(max(map(len, queues), default=0))
              for queue in queues if r < len(queue)]
    return set(spread[:cap])


def most_dominated(groups: Sequence[object]) -> Callable[[list[int], set[int]], int]:
    """A ``cap_constant`` pick: the candidate from the group (a template, or a trajectory
    and horizon) where the constant's candidates hold the largest share of what is kept,
    the latest there; so a drop first takes from where the answer varies least."""
    def pick(candidates: list[int], kept: set[int]) -> int:
        size = Counter(groups[m] for m in kept)  # one pass each, not one per candidate
        answered = Counter(groups[m] for m in candidates)
        return max(candidates, key=lambda j: (answered[groups[j]] / size[groups[j]], j))
    return pick


def _families(template_ids: Iterable[str]) -> dict[str, list[str]]:
    """The template ids by family (a template with the adversarial templates worded as
    it), each family's members in id order."""
    from .templates import all_templates

    registered = all_templates()
    families: dict[str, list[str]] = {}
    for tid in sorted(template_ids):
        tmpl = registered.get(tid)
        families.setdefault(tmpl.family if tmpl else tid, []).append(tid)
    return families


def _closed_values(template_ids: Sequence[str]) -> tuple[str, ...]:
    """A family's declared answer values (its closed member's; none for open families)."""
    from .templates import all_templates

    registered = all_templates()
    return next((registered[t].values for t in template_ids
                 if t in registered and registered[t].values), ())


def cap_per_horizon(by_template: dict[str, list[GameQuestion]],
                    report: GenerationReport | None = None) -> dict[str, list[GameQuestion]]:
    """One trajectory and horizon's questions, less those that let one answer be right for
    more than chance + ``MARGIN`` of a template family's: where the answer hardly varies,
    the family keeps fewer questions (one, if it never varies)."""
    out = {t: list(qs) for t, qs in by_template.items()}
    for members in _families([t for t, qs in by_template.items() if qs]).values():
        pairs = [(t, q) for t in members for q in out[t]]
        keep = cap_constant([_answer(q) for _, q in pairs], _closed_values(members),
                            most_dominated([t for t, _ in pairs]))
        if len(keep) == len(pairs):
            continue
        for t in members:
            cut = sum(1 for j, (m, _) in enumerate(pairs) if m == t and j not in keep)
            if cut and report is not None:
                report.cut_at_horizon(t, cut)
        out.update({t: [q for j, (m, q) in enumerate(pairs) if m == t and j in keep]
                    for t in members})
    return out


def balanced_choice(questions: list[GameQuestion], values: Sequence[str], cap: int,
                    rng: random.Random) -> set[int]:
    """The indices of at most ``cap`` questions of a closed template in which every answer
    value present (each of ``values``, and "not answerable" when asked) holds at least
    ``MIN_VALUE_SHARE``. A value of ``values`` with no question makes the template one-sided
    here: nothing is kept, since any kept question would be answered by a constant.
    "Not answerable" questions take turns with the values but are not owed a share."""
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(str(q.answer), []).append(i)
    if any(v not in groups for v in values):
        return set()
    order = list(values) + ([NOT_ANSWERABLE] if NOT_ANSWERABLE in groups else [])
    rng.shuffle(order)  # which value gets the odd question out is a seeded draw
    pools = {v: rng.sample(groups[v], len(groups[v])) for v in order}
    taken: dict[str, int] = dict.fromkeys(order, 0)
    chosen: set[int] = set()
    while len(chosen) < cap:
        left = [v for v in order if taken[v] < len(pools[v])]
        if not left:
            break
        value = min(left, key=lambda v: taken[v])
        scarce = min(taken[v] for v in values)  # "not answerable" may run short freely
        if scarce < MIN_VALUE_SHARE * (len(chosen) + 1) and taken[value] > scarce:
            break  # one more of a plentiful value would push a scarce one under its share
        chosen.add(pools[value][taken[value]])
        taken[value] += 1
    return chosen


def balance(by_template: dict[str, list[GameQuestion]],
            ratio: float = MAX_ABILITY_RATIO) -> dict[str, list[GameQuestion]]:
    """Cut every ability to at most ``ceil(ratio * median)`` questions, the median taken
    over the abilities that have any. Cuts go round-robin from the template with the most
    questions left, so every template keeps as many as it can, and take the last question
    of that template's most common answer, so its answers stay balanced."""
    per_ability: dict[str, list[str]] = {}
    for tid, qs in by_template.items():
        if qs:
            per_ability.setdefault(qs[0].ability, []).append(tid)
    counts = sorted(sum(len(by_template[t]) for t in tids) for tids in per_ability.values())
    if not counts:
        return by_template
    mid = len(counts) // 2
    median = counts[mid] if len(counts) % 2 else (counts[mid - 1] + counts[mid]) / 2
    limit = max(1, math.ceil(ratio * median))
    out = {t: list(qs) for t, qs in by_template.items()}
    for tids in per_ability.values():
        total = sum(len(out[t]) for t in tids)
        while total > limit:
            biggest = max(tids, key=lambda t: (len(out[t]), t))
            out[biggest].pop(_cut_index(out[biggest]))
            total -= 1
    return out


def _cut_index(qs: list[GameQuestion]) -> int:
    """Which question an ability cut removes: the last whose answer is among the most
    common (cutting simply the last could take a template's only rare answer)."""
    values = [_answer(q).value for q in qs]
    counts = Counter(values)
    top = max(counts.values())
    return max(i for i, v in enumerate(values) if counts[v] == top)


def build_questions(traj: _Trajectory, config: GamesConfig,
                    report: GenerationReport | None = None) -> list[dict[str, Any]]:
    """Every question of one trajectory, as ``questions.jsonl`` rows, in a stable order.
    The timeline is built from what the sessions show (``_view.shown_steps``) and cut at the
    horizon, so a template can read neither a later step nor a field never rendered."""
    rows: list[dict[str, Any]] = []
    report = report if report is not None else GenerationReport()
    templates = templates_for(traj.kind)
    meta, steps = shown_steps(traj.meta, traj.steps)
    for cut in traj.horizons:
        make = config.make_timeline or default_timeline
        timeline = make(traj.kind, meta, steps[:cut])
        where = f"trajectory {traj.id}, horizon {cut}"
        shown = view_text(meta, steps[:cut]) if traj.kind in NAME_CHECKED else None
        by_template = {
            t.id: _from_template(t, timeline, seeded_rng(config.seed, traj.id, cut, t.id),
                                 where, cut, config.max_per_template, shown, report)
            for t in templates}
        for qs in balance(cap_per_horizon(by_template, report)).values():
            for k, q in enumerate(qs, 1):
                rows.append(_row(traj, cut, k, q))
    return rows


def _row(traj: _Trajectory, cut: int, k: int, q: GameQuestion) -> dict[str, Any]:
    horizon = [q.horizon[0], q.horizon[1]]
    return {"id": f"{traj.id}-h{cut}-{q.template}-{k}", "trajectory": traj.id,
            "template": q.template, "params": q.params, "ability": q.ability,
            "answer_type": q.answer_type, "answer": q.answer, "answerable": q.answerable,
            "evidence_steps": list(q.evidence_steps), "horizon": horizon,
            "question": window_phrase(q.horizon) + q.text, "text": q.text,
            "alternatives": list(q.alternatives), "tolerance": q.tolerance,
            "paraphrase": None}


def life_id(kind: str) -> str:
    return f"life-{kind}"


def build_life_questions(trajectories: list[_Trajectory],
                         config: GamesConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Cross-episode questions: the trajectories of one game kind, in the order given, as
    games played one after another (``templates/_life.py``), asked after the last game.
    Returns (rows, the lives for benchmark.json); kinds with one trajectory have none."""
    from .templates._life import Life

    rows: list[dict[str, Any]] = []
    lives: list[dict[str, Any]] = []
    make = config.make_timeline or default_timeline
    for kind in sorted({t.kind for t in trajectories}):
        members = [t for t in trajectories if t.kind == kind]
        if len(members) < 2:
            continue
        lid = life_id(kind)
        life = Life(lid, kind, [(t.id, make(kind, *shown_steps(t.meta, t.steps)))
                                 for t in members])
        where = f"cross-episode {lid}"
        kept_any = 0
        for tmpl in templates_for(f"{kind}-life"):
            rng = seeded_rng(config.seed, lid, tmpl.id)
            unique: dict[tuple[str, str], GameQuestion] = {}
            for q in _run_template(tmpl, life, rng, where):
                _check(q, f"{where}, template {tmpl.id}", life.total_steps)
                unique.setdefault(q.key(), q)
            kept = list(unique.values())
            if len(kept) > config.max_per_template:
                chosen = set(rng.sample(range(len(kept)), config.max_per_template))
                kept = [q for i, q in enumerate(kept) if i in chosen]
            for k, q in enumerate(kept, 1):
                rows.append(_life_row(lid, len(members), k, q))
            kept_any += len(kept)
        lives.append({"id": lid, "kind": kind, "trajectories": [t.id for t in members],
                      "steps": life.total_steps, "questions": kept_any})
    return rows, lives


def _life_row(lid: str, games: int, k: int, q: GameQuestion) -> dict[str, Any]:
    return {"id": f"{lid}-{q.template}-{k}", "trajectory": lid, "template": q.template,
            "params": q.params, "ability": q.ability, "answer_type": q.answer_type,
            "answer": q.answer, "answerable": q.answerable, "evidence_steps": [],
            "evidence": [[tid, step] for tid, step in q.evidence_refs],
            "horizon": [q.horizon[0], q.horizon[1]],
            "question": f"Considering all {games} of your games: " + q.text, "text": q.text,
            "alternatives": list(q.alternatives), "tolerance": q.tolerance,
            "paraphrase": None}


def cap_over_benchmark(rows: list[dict[str, Any]],
                       report: GenerationReport | None = None) -> list[dict[str, Any]]:
    """The rows, less those that let one constant answer more than chance + ``MARGIN`` of a
    template family's questions over the whole benchmark (what the constant-answer gate measures:
    pooling trajectories adds answer values, so a cap met by every trajectory can still be
    broken). Each drop takes the constant's question from the (trajectory, horizon) where
    the constant holds the largest share of that template, the latest there."""
    dropped: set[int] = set()
    for members in _families({r["template"] for r in rows}).values():
        idx = [i for i, r in enumerate(rows) if r["template"] in members]
        answers = [answer_of(rows[i]["answer"], rows[i]["answerable"],
                             rows[i]["alternatives"]) for i in idx]
        groups = [(rows[i]["trajectory"], rows[i]["horizon"][1]) for i in idx]
        keep = cap_constant(answers, _closed_values(members), most_dominated(groups))
        for j in (j for j in range(len(idx)) if j not in keep):
            tid = rows[idx[j]]["template"]
            if report is not None:
                report.cut_over_benchmark[tid] = report.cut_over_benchmark.get(tid, 0) + 1
            dropped.add(idx[j])
    return [r for i, r in enumerate(rows) if i not in dropped]


def _counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    per_template: dict[str, int] = {}
    per_ability = dict.fromkeys(ABILITIES, 0)
    for r in rows:
        per_template[r["template"]] = per_template.get(r["template"], 0) + 1
        per_ability[r["ability"]] += 1
    answerable = sum(1 for r in rows if r["answerable"])
    return {"questions": len(rows), "per_template": dict(sorted(per_template.items())),
            "per_ability": per_ability,
            "answerable_share": round(answerable / len(rows), 4) if rows else None}


def _prepare_out(out: Path, overwrite: bool) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not overwrite:
            raise ConfigError(f"{out} is not empty; choose another --out or pass --overwrite")
        if not (out / "benchmark.json").is_file() and out.is_dir() and \
                not (out / "questions.jsonl").is_file():
            raise ConfigError(f"{out} does not hold a games benchmark: --overwrite only "
                              "replaces one (nothing was deleted)")
        if out.is_dir():
            shutil.rmtree(out)
        else:
            out.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _copy_trajectory(traj: _Trajectory, dest: Path) -> None:
    """meta.json and trajectory.jsonl copied; frames hard-linked where the file system
    allows (a copy otherwise)."""
    dest.mkdir(parents=True)
    for name in ("meta.json", "trajectory.jsonl"):
        shutil.copyfile(traj.folder / name, dest / name)
    frames = sorted({s.frame for s in traj.steps if s.frame} |
                    ({traj.meta.initial["frame"]} if traj.meta.initial.get("frame") else set()))
    if frames:
        (dest / "frames").mkdir()
    for sha in frames:
        src, dst = traj.folder / "frames" / f"{sha}.png", dest / "frames" / f"{sha}.png"
        if not src.is_file():
            continue  # the initial frame is optional; read_trajectory checked the steps'
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)


def _dump(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def generate_games(config: GamesConfig) -> dict[str, Any]:
    """Write the benchmark folder; returns what ``benchmark.json`` holds."""
    trajectories = _load(config)
    report = GenerationReport()
    rows = [r for t in trajectories for r in build_questions(t, config, report)]
    lives: list[dict[str, Any]] = []
    if config.cross_episode:
        life_rows, lives = build_life_questions(trajectories, config)
        if not lives:
            raise ConfigError("--cross-episode needs at least two trajectories of one game "
                              "kind (Crafter; or TextWorld and Jericho, which are one kind)")
        rows += life_rows
    rows = cap_over_benchmark(rows, report)
    if not rows:
        raise ConfigError("the templates produced no question from these trajectories")
    paraphrase_info = None
    if config.paraphraser is not None:
        from ._paraphrase import paraphrase_rows

        paraphrase_info = paraphrase_rows(rows, config.paraphraser)
    out = Path(config.out)
    _prepare_out(out, config.overwrite)
    for t in trajectories:
        _copy_trajectory(t, out / "trajectories" / t.id)
    with open(out / "questions.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(_dump(r) + "\n" for r in rows)
    summary = {
        "format": BENCH_FORMAT, "generator_version": GENERATOR_VERSION, "seed": config.seed,
        "options": {"max_per_template": config.max_per_template,
                    "horizons": sorted(set(config.horizons)),
                    "max_ability_ratio": MAX_ABILITY_RATIO,
                    "paraphrase": paraphrase_info},
        "trajectories": [_trajectory_entry(t, rows) for t in trajectories],
        "counts": _counts(rows),
        "view_check": report.view_check(),
        "answer_balance": report.answer_balance(),
    }
    if lives:  # only then: a benchmark without cross-episode questions keeps its bytes
        summary["lives"] = lives
    # Written last: a folder without it is an unfinished generation.
    (out / "benchmark.json").write_text(json.dumps(summary, indent=1, sort_keys=True,
                                                   ensure_ascii=False) + "\n", encoding="utf-8")
    return summary


def _trajectory_entry(t: _Trajectory, rows: list[dict[str, Any]]) -> dict[str, Any]:
    entry = {"id": t.id, "env": t.meta.env, "steps": len(t.steps), "sha256": t.sha256,
             "horizons": t.horizons,
             "questions": sum(1 for r in rows if r["trajectory"] == t.id)}
    if t.past_end:  # only then, so a benchmark without such a horizon keeps its bytes
        entry["horizons_past_end"] = t.past_end
    return entry


__all__ = ["BENCH_FORMAT", "GENERATOR_VERSION", "GamesConfig", "TemplateError", "balance",
           "cap_over_benchmark", "generate_games", "seeded_rng", "spread_choice",
           "window_phrase"]
