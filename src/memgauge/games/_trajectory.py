"""The trajectory folder: what a player did and what was true, step by step (design 0032).

``TRAJ_DIR/meta.json`` names the env, seed, player and step count and holds the state at reset
(``initial``); ``TRAJ_DIR/trajectory.jsonl`` holds one :class:`Step` per line, numbered from 1
as the player sees them, each with the state **after** its action; ``TRAJ_DIR/frames/`` holds
the frames as ``<sha256>.png`` (one file per distinct picture).

    writer = TrajectoryWriter(out, TrajectoryMeta(env="crafter", seed=0, player="scripted"))
    writer.start(initial)              # the state at reset: a Step-like dict without an action
    writer.add(Step(step=1, action="move_left", pos=[31, 32], inventory={...}))
    writer.finish(end="step_cap")      # meta.json gets the step count and why play stopped
    meta, steps = read_trajectory(out)
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InputError

FORMAT = "memgauge.trajectory/1"
EndReason = Literal["step_cap", "death", "game_over", "won", "player_stopped"]


class PlayerTrace(BaseModel):
    """How the player chose the action: for an LLM player its raw reply, how many replies it
    took, and whether the last one could be parsed (``parse_error`` names why not)."""

    model_config = ConfigDict(extra="allow")
    raw: str | None = None
    reason: str | None = None
    attempts: int = 1
    parse_error: str | None = None
    fallback: bool = False  # the action is the player's declared fallback, not a parsed choice


class Step(BaseModel):
    """One step. Common fields first; each env fills the ones it has (None = the env has no
    such thing, never "empty"). Extra env-specific fields are kept as given."""

    model_config = ConfigDict(extra="allow")

    step: int = Field(ge=1)
    action: str  # the env's own action name (Crafter ``move_left``, ``do``) or the command
    success: bool | None = None  # the action had its effect (design 0032 says per env how)
    reward: float = 0.0
    done: bool = False
    observation: str = ""  # the text the player is shown after this action
    # Crafter (and other grid worlds)
    pos: list[int] | None = None  # [x, y] after the action
    facing: list[int] | None = None  # [dx, dy]
    inventory: dict[str, int] | list[str] | None = None  # Crafter: counts incl. vitals; text: names
    achievements: dict[str, int] | None = None
    daylight: float | None = None
    sleeping: bool | None = None
    view: list[list[str]] | None = None  # the local view the player sees, rows top to bottom
    creatures: list[dict[str, Any]] | None = None  # [{"kind": "cow", "pos": [x, y]}] in view
    seen: list[list[Any]] | None = None  # [[x, y, material]] cells first seen or changed
    frame: str | None = None  # sha256 of frames/<sha256>.png: the picture after the action
    # Text games
    room: str | None = None
    score: float | None = None
    moves: int | None = None
    admissible: list[str] | None = None  # None: unknown (meta.admissible_note says why)
    facts: list[str] | None = None
    player: PlayerTrace | None = None


class TrajectoryMeta(BaseModel):
    model_config = ConfigDict(extra="allow")

    format: str = FORMAT
    env: str  # crafter | textworld | jericho
    env_version: str | None = None
    seed: int | None = None
    player: str  # the player spec as given (random, scripted, replay:<dir>, llm:<model>)
    player_options: dict[str, Any] = Field(default_factory=dict)
    steps: int = 0
    max_steps: int | None = None
    end: EndReason | None = None
    initial: dict[str, Any] = Field(default_factory=dict)  # Step fields at reset, no action
    game: dict[str, Any] = Field(default_factory=dict)  # game file name and sha256, env settings
    admissible_note: str | None = None
    frame_size: list[int] | None = None
    # why the player stopped (end = "player_stopped"): an error's description, "interrupted";
    # written only when set (meta.json of a finished play is as it was)
    end_message: str | None = None


class TrajectoryWriter:
    """Writes a trajectory folder step by step, so a crash keeps every finished step."""

    def __init__(self, out: str | Path, meta: TrajectoryMeta) -> None:
        self.dir = Path(out)
        self.meta = meta
        self.dir.mkdir(parents=True, exist_ok=True)
        existing = self.dir / "trajectory.jsonl"
        if existing.exists() and existing.stat().st_size:
            raise InputError("already holds a trajectory; choose another --out",
                             file=str(existing))
        self._file = open(existing, "w", encoding="utf-8")  # noqa: SIM115 (closed in finish)
        self._frames = self.dir / "frames"

    def save_frame(self, png: bytes) -> str:
        """Store a PNG under its content hash; the same picture is stored once."""
        digest = hashlib.sha256(png).hexdigest()
        path = self._frames / f"{digest}.png"
        if not path.exists():
            self._frames.mkdir(exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(png)
            os.replace(tmp, path)
        return digest

    def start(self, initial: dict[str, Any]) -> None:
        self.meta.initial = initial
        self._write_meta()

    def add(self, step: Step) -> None:
        if step.step != self.meta.steps + 1:
            raise ValueError(f"step {step.step} after step {self.meta.steps}")
        self._file.write(step.model_dump_json(exclude_none=True) + "\n")
        self._file.flush()
        self.meta.steps = step.step

    def finish(self, end: EndReason) -> None:
        self.meta.end = end
        self._file.close()
        self._write_meta()

    def _write_meta(self) -> None:
        tmp = self.dir / "meta.json.tmp"
        unset = {"end_message"} if self.meta.end_message is None else None
        tmp.write_text(self.meta.model_dump_json(indent=1, exclude=unset), encoding="utf-8")
        os.replace(tmp, self.dir / "meta.json")


def _utf8(raw: bytes, path: Path, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text at byte {exc.start} of the line "
                         f"({raw[exc.start:exc.start + 1]!r}); the file is damaged or was "
                         "not written by `memgauge play`", file=str(path), item=where) from None


def read_trajectory(folder: str | Path) -> tuple[TrajectoryMeta, list[Step]]:
    """Read and check a trajectory folder; a problem names the file, line and field."""
    folder = Path(folder)
    meta_path, steps_path = folder / "meta.json", folder / "trajectory.jsonl"
    for path in (meta_path, steps_path):
        if not path.is_file():
            raise InputError("not found (is this a trajectory folder from `memgauge play`?)",
                             file=str(path))
    try:
        raw_meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta = TrajectoryMeta.model_validate(raw_meta)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}: "
                         f"{exc.object[exc.start:exc.start + 1]!r})",
                         file=str(meta_path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", file=str(meta_path)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(first["msg"], file=str(meta_path),
                         field=".".join(str(p) for p in first["loc"])) from None
    if meta.format != FORMAT:
        raise InputError(f"format {meta.format!r} is not {FORMAT!r}", file=str(meta_path),
                         field="format")
    steps: list[Step] = []
    with open(steps_path, "rb") as fh:  # decoded line by line: a bad byte names its line
        for lineno, raw in enumerate(fh, 1):
            where = f"line {lineno}"
            line = _utf8(raw, steps_path, where)
            if not line.strip():
                continue
            try:
                step = Step.model_validate_json(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise InputError(first["msg"], file=str(steps_path), item=where,
                                 field=".".join(str(p) for p in first["loc"]) or None) from None
            if step.step != len(steps) + 1:
                raise InputError(f"step {step.step} where step {len(steps) + 1} was expected",
                                 file=str(steps_path), item=where, field="step")
            if step.frame is not None and not (folder / "frames" / f"{step.frame}.png").is_file():
                raise InputError(f"frame {step.frame}.png is not in frames/",
                                 file=str(steps_path), item=where, field="frame")
            steps.append(step)
    if len(steps) != meta.steps:
        raise InputError(f"meta.json says {meta.steps} steps, trajectory.jsonl holds "
                         f"{len(steps)}", file=str(meta_path), field="steps")
    return meta, steps
