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
each trajectory. Same inputs and seed give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, MemgaugeError
from ._trajectory import Step, TrajectoryMeta, read_trajectory
from .templates import ABILITIES, ANSWER_TYPES, NOT_ANSWERABLE, GameQuestion, templates_for

BENCH_FORMAT = "memgauge.games-bench/1"
GENERATOR_VERSION = "1"
# No ability may hold more than this many times the questions of the median ability (per
# trajectory and horizon): an ability with many templates must not drown the others.
MAX_ABILITY_RATIO = 2.0
GAME_KIND = {"crafter": "crafter", "textworld": "text", "jericho": "text"}
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
        from ..benchmarks._base import file_sha256

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


def _run_template(tmpl: Any, timeline: Any, rng: random.Random, where: str) -> list[Any]:
    """The template's questions; a template that fails (a field this trajectory lacks, a
    bug) is named with the trajectory and horizon instead of ending in a traceback."""
    try:
        return list(tmpl.fn(timeline, rng))
    except MemgaugeError:
        raise
    except Exception as exc:  # any failure inside a template is reported as one
        raise TemplateError(f"{where}, template {tmpl.id} failed: {type(exc).__name__}: "
                            f"{exc}"[:500]) from exc


def _from_template(tmpl: Any, timeline: Any, rng: random.Random, where: str, cut: int,
                   cap: int) -> list[GameQuestion]:
    """A template's questions at one horizon: checked, de-duplicated (first kept), then a
    seeded choice of at most ``cap`` (a shuffle, so late variants are as likely as early
    ones), in generation order."""
    unique: dict[tuple[str, str], GameQuestion] = {}
    for q in _run_template(tmpl, timeline, rng, where):
        _check(q, f"{where}, template {tmpl.id}", cut)
        if q.template != tmpl.id:
            raise TemplateError(f"{where}: template {tmpl.id} yielded a question of "
                                f"{q.template!r}")
        unique.setdefault(q.key(), q)
    kept = list(unique.values())
    if len(kept) > cap:
        chosen = set(rng.sample(range(len(kept)), cap))
        kept = [q for i, q in enumerate(kept) if i in chosen]
    return kept


def balance(by_template: dict[str, list[GameQuestion]],
            ratio: float = MAX_ABILITY_RATIO) -> dict[str, list[GameQuestion]]:
    """Cut every ability to at most ``ceil(ratio * median)`` questions, the median taken
    over the abilities that have any. Cuts go round-robin from the end of the template with
    the most questions left, so every template keeps as many as it can."""
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
            out[biggest].pop()
            total -= 1
    return out


def build_questions(traj: _Trajectory, config: GamesConfig) -> list[dict[str, Any]]:
    """Every question of one trajectory, as ``questions.jsonl`` rows, in a stable order."""
    rows: list[dict[str, Any]] = []
    templates = templates_for(traj.kind)
    for cut in traj.horizons:
        make = config.make_timeline or default_timeline
        timeline = make(traj.kind, traj.meta, traj.steps[:cut])
        where = f"trajectory {traj.id}, horizon {cut}"
        by_template = {
            t.id: _from_template(t, timeline, seeded_rng(config.seed, traj.id, cut, t.id),
                                 where, cut, config.max_per_template)
            for t in templates}
        for qs in balance(by_template).values():
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
        life = Life(lid, kind, [(t.id, make(kind, t.meta, t.steps)) for t in members])
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
    rows = [r for t in trajectories for r in build_questions(t, config)]
    lives: list[dict[str, Any]] = []
    if config.cross_episode:
        life_rows, lives = build_life_questions(trajectories, config)
        if not lives:
            raise ConfigError("--cross-episode needs at least two trajectories of one game "
                              "kind (Crafter; or TextWorld and Jericho, which are one kind)")
        rows += life_rows
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
           "generate_games", "seeded_rng", "window_phrase"]
