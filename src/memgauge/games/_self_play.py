"""Self-experience (issue 15, design 0032 "Self-experience"): a system's own play makes the
trajectory its questions come from, and its memory is written in play order.

A self-experience folder holds three things, each made once and reused by a rerun:

    RUN_DIR/play/<game>-s<seed>/   the trajectory the player made (``memgauge play``)
    RUN_DIR/bench/                 the questions on it (``memgauge generate games``, fixed recipe)
    RUN_DIR/records.jsonl, ...     the system's answers (``memgauge run --bench games``, online)

The run is online, so the system ingests the sessions in the order they were played and
answers each question right after the last step of its horizon, never having seen a later
step. A rerun skips a finished play and a generated benchmark of the same recipe (and refuses
another recipe in the same folder); an interrupted play is played again from the start, its
model replies coming from the response cache.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..io import file_sha256
from ._generate import GamesConfig, generate_games
from ._trajectory import TrajectoryMeta


@dataclass(frozen=True)
class SelfExperience:
    run_dir: Path
    game: str
    seed: int
    steps: int
    player: str
    horizons: tuple[int, ...] = ()
    max_per_template: int = 3
    question_seed: int = 0
    player_options: dict[str, Any] = field(default_factory=dict)

    @property
    def trajectory_dir(self) -> Path:
        return self.run_dir / "play" / f"{self.game}-s{self.seed}"

    @property
    def bench_dir(self) -> Path:
        return self.run_dir / "bench"

    def recipe(self) -> dict[str, Any]:
        """What ``self_experience.json`` records and a rerun must match."""
        return {"game": self.game, "seed": self.seed, "steps": self.steps,
                "player": self.player, "player_options": self.player_options,
                "horizons": sorted(set(self.horizons)), "max_per_template": self.max_per_template,
                "question_seed": self.question_seed}


def check_folder(plan: SelfExperience) -> None:
    """Refuse a folder that holds another self-experience recipe, or a plain run."""
    marker = plan.run_dir / "self_experience.json"
    if marker.is_file():
        try:
            theirs = json.loads(marker.read_text(encoding="utf-8"))
        except ValueError:
            raise ConfigError(f"{marker} is not valid JSON; use a new --out folder") from None
        mine = plan.recipe()
        diff = sorted(k for k in mine if theirs.get(k) != mine[k])
        if diff:
            raise ConfigError(f"{plan.run_dir} holds a self-experience run of another recipe "
                              f"({', '.join(diff)} differ); use a new --out folder")
        return
    if (plan.run_dir / "manifest.json").exists() or (plan.run_dir / "records.jsonl").exists():
        raise ConfigError(f"{plan.run_dir} holds a run that is not a self-experience run; use "
                          "a new --out folder")
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps(plan.recipe(), indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(marker)


def needs_play(plan: SelfExperience) -> bool:
    """False when a finished play of this recipe is there. An unfinished one (no meta.json,
    no end, or stopped by an error or an interrupt) is removed, to be played again."""
    folder = plan.trajectory_dir
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        if folder.exists():
            shutil.rmtree(folder)
        return True
    try:
        meta = TrajectoryMeta.model_validate_json(meta_path.read_text(encoding="utf-8"))
    except ValueError:
        shutil.rmtree(folder)
        return True
    stopped_by_error = meta.end == "player_stopped" and meta.end_message
    if meta.end is None or stopped_by_error:
        shutil.rmtree(folder)
        return True
    return False


def needs_questions(plan: SelfExperience) -> bool:
    """False when the benchmark folder was generated from this very trajectory with this
    recipe; a stale one is replaced unless answers from it exist."""
    info_path = plan.bench_dir / "benchmark.json"
    if not info_path.is_file():
        if plan.bench_dir.exists():
            shutil.rmtree(plan.bench_dir)
        return True

    info = json.loads(info_path.read_text(encoding="utf-8"))
    sha = file_sha256(plan.trajectory_dir / "trajectory.jsonl")
    held = [t.get("sha256") for t in info.get("trajectories", [])]
    same = held == [sha] and info.get("seed") == plan.question_seed and \
        (info.get("options") or {}).get("max_per_template") == plan.max_per_template and \
        sorted((info.get("options") or {}).get("horizons") or []) == sorted(set(plan.horizons))
    if same:
        return False
    if (plan.run_dir / "records.jsonl").exists():
        raise ConfigError(f"{plan.bench_dir} no longer matches the trajectory or the recipe, "
                          "and answers to it exist; use a new --out folder")
    shutil.rmtree(plan.bench_dir)
    return True


def generate_questions(plan: SelfExperience) -> dict[str, Any]:
    return generate_games(GamesConfig(
        trajectories=[plan.trajectory_dir], out=plan.bench_dir, seed=plan.question_seed,
        max_per_template=plan.max_per_template, horizons=list(plan.horizons)))
