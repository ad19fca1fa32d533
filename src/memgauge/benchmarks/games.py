"""``--bench games --data BENCH_DIR``: a folder from ``memgauge generate games`` as episodes
(design 0032, "Generator and loader").

One episode per trajectory. Sessions are chunks of ``steps_per_session`` steps, also cut at
every question's horizon end, so a question is asked right after the last step it may use
(``asked_after``); each step is the player's action (an assistant turn) and what it was shown
after it (a user turn, with the frame for Crafter under the ``frames`` policy).

    --bench-option steps_per_session=20   --bench-option frames=all|every:K|none
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .._json_limits import load_document
from ..cache import default_cache_dir
from ..errors import ConfigError, InputError
from ..io import check_ids_found, file_sha256, read_id_list
from ..registry import benchmark
from ..schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    ImageRef,
    Question,
    Session,
    Turn,
)
from ._base import BenchmarkOptions

BENCH_FORMAT = "memgauge.games-bench/1"  # as games/_generate.py writes it
LOADER_VERSION = "1"
NOT_ANSWERABLE = "not answerable"
OPTIONS = {"steps_per_session": "steps per session (default 20)",
           "frames": "Crafter frames shown: all | every:K | mosaic:K | none (default all)"}
_ANSWER_TYPES = {"integer": AnswerType.INTEGER, "number": AnswerType.NUMBER,
                 "string": AnswerType.STRING, "action": AnswerType.ACTION,
                 "direction": AnswerType.DIRECTION, "yes_no": AnswerType.YES_NO,
                 "list": AnswerType.LIST, "set": AnswerType.SET, "path": AnswerType.PATH}
_ABILITIES = ("single_hop", "multi_hop", "induction", "spatial", "temporal", "logical",
              "adversarial")


class _Row(BaseModel):
    """One line of ``questions.jsonl`` as the generator writes it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str
    trajectory: str
    template: str
    params: dict[str, Any]
    ability: Literal[_ABILITIES]  # type: ignore[valid-type]
    answer_type: Literal[tuple(_ANSWER_TYPES)]  # type: ignore[valid-type]
    answer: Any
    answerable: bool
    evidence_steps: list[int]
    horizon: list[int]
    question: str
    text: str
    alternatives: list[Any]
    tolerance: float | int | None
    paraphrase: dict[str, Any] | None
    # cross-episode questions: [trajectory id, step] pairs (evidence_steps stays empty)
    evidence: list[list[Any]] = []

    @field_validator("horizon")
    @classmethod
    def _pair(cls, v: list[int]) -> list[int]:
        if len(v) != 2 or not 1 <= v[0] <= v[1]:
            raise ValueError(f"expected [first_step, last_step] with 1 <= first <= last, got {v}")
        return v


class _TrajectoryEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    env: str
    steps: int
    sha256: str


class _LifeEntry(BaseModel):
    """Trajectories of one game kind asked about together, as games played in this order."""

    model_config = ConfigDict(extra="allow")

    id: str
    kind: str
    trajectories: list[str]
    steps: int


class FramePolicy(BaseModel):
    """Which steps' frames the episode carries: every one, every K-th (and each session's
    last, so a question always sees the latest picture), none, or K at a time tiled into
    one labelled picture (``mosaic:K``, never across a session's end)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["all", "every", "none", "mosaic"] = "all"
    every: int = 1

    @classmethod
    def parse(cls, text: str) -> FramePolicy:
        name, _, arg = text.partition(":")
        if name in ("all", "none") and not arg:
            return cls(kind=name)
        if name in ("every", "mosaic") and arg.isdigit() and int(arg) >= 1:
            return cls(kind=name, every=int(arg))
        raise ConfigError(f"--bench-option frames={text!r}: use all, every:K, mosaic:K "
                          "(K >= 1) or none")

    def keeps(self, step: int, session_last: bool) -> bool:
        """Whether this step's own frame is shown (a mosaic shows frames of its own)."""
        if self.kind in ("none", "mosaic"):
            return False
        return self.kind == "all" or step % self.every == 0 or session_last

    def describe(self) -> str:
        return f"{self.kind}:{self.every}" if self.kind in ("every", "mosaic") else self.kind


def parse_options(extra: dict[str, Any]) -> tuple[int, FramePolicy]:
    unknown = sorted(set(extra) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"--bench-option {unknown[0]}: the games benchmark takes "
                          f"{', '.join(f'{k} ({v})' for k, v in OPTIONS.items())}")
    raw = str(extra.get("steps_per_session", "20"))
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"--bench-option steps_per_session={raw!r}: must be a whole number "
                          ">= 1")
    return int(raw), FramePolicy.parse(str(extra.get("frames", "all")))


class GamesBenchmark:
    name = "games"
    options = OPTIONS  # --bench-option keys (the runner refuses options to loaders without)

    def __init__(self, opts: BenchmarkOptions) -> None:
        self.root = Path(opts.data)
        if not self.root.is_dir():
            raise InputError("not a folder (expected one written by `memgauge generate games`)",
                             file=str(self.root), field="--data")
        self.steps_per_session, self.frames = parse_options(opts.extra)
        self.info_path = self.root / "benchmark.json"
        self.questions_path = self.root / "questions.jsonl"
        self.info = self._read_info()
        self._loaded: dict[str, tuple[Path, Any, list[Any]]] = {}  # id -> folder, meta, steps
        self.trajectories = {t.id: t for t in self._read_trajectory_entries()}
        self.lives = {life.id: life for life in self._read_lives()}
        rows = self._read_rows()
        if opts.question_ids:
            keep = read_id_list(opts.question_ids)
            check_ids_found(keep, {r.id for r in rows}, opts.question_ids)
            rows = [r for r in rows if r.id in keep]
        self.rows = rows
        if opts.protocol == "offline":
            self._refuse_offline()
        self._counts = {"episodes": 0, "questions": 0, "images": 0}

    # -- reading and checking BENCH_DIR --

    def _read_info(self) -> dict[str, Any]:
        info = load_document(self.info_path, what="a games benchmark description")
        file = str(self.info_path)
        if not isinstance(info, dict):
            raise InputError(f"expected an object, got {type(info).__name__}", file=file)
        if info.get("format") != BENCH_FORMAT:
            raise InputError(f"format {info.get('format')!r} is not {BENCH_FORMAT!r} (is this "
                             "a folder from `memgauge generate games`?)", file=file,
                             field="format")
        if not isinstance(info.get("trajectories"), list) or not info["trajectories"]:
            raise InputError("expected a non-empty list", file=file, field="trajectories")
        return info

    def _read_trajectory_entries(self) -> list[_TrajectoryEntry]:
        from ..games import read_trajectory  # lazy: games/_constant.py imports this loader

        file = str(self.info_path)
        out, seen = [], set()
        for i, raw in enumerate(self.info["trajectories"]):
            try:
                entry = _TrajectoryEntry.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise InputError(first["msg"], file=file, item=f"trajectories[{i}]",
                                 field=".".join(str(p) for p in first["loc"]) or None) from None
            if entry.id in seen or not entry.id or "/" in entry.id or entry.id.startswith("."):
                raise InputError(f"id {entry.id!r} is empty, repeated or not a folder name",
                                 file=file, item=f"trajectories[{i}]", field="id")
            seen.add(entry.id)
            folder = self.root / "trajectories" / entry.id
            steps_path = folder / "trajectory.jsonl"
            # the checksum first: a changed or damaged file is named as such, not by the
            # first line that no longer parses
            digest = file_sha256(steps_path) if steps_path.is_file() else entry.sha256
            if digest != entry.sha256:
                raise InputError(f"sha256 {digest[:16]}… differs from benchmark.json's "
                                 f"{entry.sha256[:16]}…: the trajectory changed after the "
                                 "questions were generated", file=str(steps_path))
            meta, steps = read_trajectory(folder)
            if len(steps) != entry.steps:
                raise InputError(f"says {entry.steps} steps, the trajectory holds {len(steps)}",
                                 file=file, item=f"trajectories[{i}]", field="steps")
            self._loaded[entry.id] = (folder, meta, steps)
            out.append(entry)
        return out

    def _read_lives(self) -> list[_LifeEntry]:
        file = str(self.info_path)
        out: list[_LifeEntry] = []
        for i, raw in enumerate(self.info.get("lives") or []):
            try:
                life = _LifeEntry.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise InputError(first["msg"], file=file, item=f"lives[{i}]",
                                 field=".".join(str(p) for p in first["loc"]) or None) from None
            unknown = [t for t in life.trajectories if t not in self.trajectories]
            if len(life.trajectories) < 2 or unknown or life.id in self.trajectories:
                raise InputError(f"life {life.id!r} must name two or more listed trajectories "
                                 f"and not reuse a trajectory's id (unknown: {unknown})",
                                 file=file, item=f"lives[{i}]", field="trajectories")
            total = sum(self.trajectories[t].steps for t in life.trajectories)
            if life.steps != total:
                raise InputError(f"says {life.steps} steps, its trajectories hold {total}",
                                 file=file, item=f"lives[{i}]", field="steps")
            out.append(life)
        return out

    def _read_rows(self) -> list[_Row]:
        file = str(self.questions_path)
        if not self.questions_path.is_file():
            raise InputError("no such file (the benchmark's questions)", file=file)
        rows: list[_Row] = []
        ids: dict[str, int] = {}
        with open(self.questions_path, "rb") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                item = f"line {lineno}"
                try:
                    raw = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise InputError(f"not valid JSON ({exc})", file=file, item=item) from None
                if not isinstance(raw, dict):
                    raise InputError(f"expected an object, got {type(raw).__name__}",
                                     file=file, item=item)
                try:
                    row = _Row.model_validate(raw)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    raise InputError(first["msg"], file=file, item=item,
                                     field=".".join(str(p) for p in first["loc"]) or None) \
                        from None
                self._check_row(row, file, item, ids, lineno)
                rows.append(row)
        if not rows:
            raise InputError("holds no questions", file=file)
        return rows

    def _check_row(self, row: _Row, file: str, item: str, ids: dict[str, int],
                   lineno: int) -> None:
        if row.id in ids:
            raise InputError(f"question id {row.id!r} is also on line {ids[row.id]}",
                             file=file, item=item, field="id")
        ids[row.id] = lineno
        life = self.lives.get(row.trajectory)
        entry = self.trajectories.get(row.trajectory)
        if entry is None and life is None:
            raise InputError(f"names trajectory {row.trajectory!r}, which benchmark.json does "
                             "not list", file=file, item=item, field="trajectory")
        if life is not None:
            self._check_life_row(row, life, file, item)
            return
        if row.evidence:
            raise InputError("only a cross-episode question carries evidence as [trajectory, "
                             "step] pairs", file=file, item=item, field="evidence")
        assert entry is not None  # a row with neither was refused above
        first, last = row.horizon
        if last > entry.steps:
            raise InputError(f"horizon {row.horizon} ends after the trajectory's last step "
                             f"({entry.steps})", file=file, item=item, field="horizon")
        if any(not first <= s <= last for s in row.evidence_steps):
            raise InputError(f"evidence_steps {row.evidence_steps} leave the horizon "
                             f"{row.horizon}", file=file, item=item, field="evidence_steps")
        if row.answerable == (row.answer == NOT_ANSWERABLE):
            raise InputError(f"answerable is {row.answerable} but the answer is "
                             f"{row.answer!r}", file=file, item=item, field="answerable")

    def _check_life_row(self, row: _Row, life: _LifeEntry, file: str, item: str) -> None:
        if row.horizon != [1, life.steps] or row.evidence_steps:
            raise InputError(f"a cross-episode question covers all {life.steps} steps of its "
                             f"games (horizon [1, {life.steps}], no evidence_steps)",
                             file=file, item=item, field="horizon")
        for ref in row.evidence:
            ok = (len(ref) == 2 and ref[0] in life.trajectories and isinstance(ref[1], int)
                  and 1 <= ref[1] <= self.trajectories[ref[0]].steps)
            if not ok:
                raise InputError(f"evidence {ref!r} is not [trajectory of {life.id}, step]",
                                 file=file, item=item, field="evidence")
        if row.answerable == (row.answer == NOT_ANSWERABLE):
            raise InputError(f"answerable is {row.answerable} but the answer is "
                             f"{row.answer!r}", file=file, item=item, field="answerable")

    def _refuse_offline(self) -> None:
        early = [r for r in self.rows if r.trajectory in self.trajectories
                 and r.horizon[1] < self.trajectories[r.trajectory].steps]
        if early:
            r = early[0]
            raise ConfigError(
                f"--protocol offline would show every step before each question, but "
                f"{len(early)} questions (e.g. {r.id}) may use only steps up to "
                f"{r.horizon[1]}: the later steps would leak into their context. Use "
                "--protocol online (the default), or generate without --horizon")

    # -- episodes --

    def episodes(self) -> Iterator[Episode]:
        by_traj: dict[str, list[_Row]] = {}
        for r in self.rows:
            by_traj.setdefault(r.trajectory, []).append(r)
        for tid, entry in self.trajectories.items():
            rows = by_traj.get(tid)
            if not rows:
                continue
            ep = self._episode(entry, rows)
            self._counts["episodes"] += 1
            self._counts["questions"] += len(ep.questions)
            yield ep
        for lid, life in self.lives.items():
            rows = by_traj.get(lid)
            if not rows:
                continue
            ep = self._life_episode(life, rows)
            self._counts["episodes"] += 1
            self._counts["questions"] += len(ep.questions)
            yield ep

    def _episode(self, entry: _TrajectoryEntry, rows: list[_Row]) -> Episode:
        _, meta, steps = self._loaded[entry.id]
        n = len(steps)
        k = self.steps_per_session
        ends = sorted({*range(k, n + 1, k), n, *(r.horizon[1] for r in rows)})
        sessions, where = self._sessions(entry, ends)
        questions = [self._question(entry, r, where) for r in rows]
        return Episode(episode_id=entry.id, sessions=sessions, questions=questions,
                       benchmark=BenchmarkInfo(name="games", version=BENCH_FORMAT),
                       meta={"game": {"env": meta.env, "trajectory": entry.id, "steps": n,
                                      "player": meta.player, "seed": meta.seed,
                                      "steps_per_session": k,
                                      "frames": self.frames.describe()}})

    def _life_episode(self, life: _LifeEntry, rows: list[_Row]) -> Episode:
        """The games one after another, each opened by a turn naming it, every question
        asked after the last session of the last game."""
        sessions: list[Session] = []
        where: dict[str, dict[int, tuple[str, int]]] = {}
        envs = []
        for g, tid in enumerate(life.trajectories):
            entry = self.trajectories[tid]
            _, meta, steps = self._loaded[tid]
            envs.append(meta.env)
            k, n = self.steps_per_session, len(steps)
            part, where[tid] = self._sessions(entry, sorted({*range(k, n + 1, k), n}),
                                              offset=len(sessions))
            part[0].turns.insert(0, Turn(turn_id="game-start", role="user", text=(
                f"Game {g + 1} of {len(life.trajectories)} begins ({meta.env}).")))
            sessions += part
        last = len(sessions) - 1
        questions = []
        for r in rows:
            q = self._question_fields(r, env=f"{life.kind}-life", trajectory=life.id,
                                      trajectory_steps=life.steps)
            q["evidence"] = [EvidenceRef(session_id=where[tid][step][0], turn_id=f"t{step}-{p}")
                             for tid, step in r.evidence for p in ("action", "obs")]
            q["meta"]["game"]["evidence"] = r.evidence
            questions.append(Question(asked_after=last, **q))
        return Episode(episode_id=life.id, sessions=sessions, questions=questions,
                       benchmark=BenchmarkInfo(name="games", version=BENCH_FORMAT),
                       meta={"game": {"env": f"{life.kind}-life", "trajectory": life.id,
                                      "trajectories": life.trajectories, "envs": envs,
                                      "steps": life.steps,
                                      "steps_per_session": self.steps_per_session,
                                      "frames": self.frames.describe()}})

    def _sessions(self, entry: _TrajectoryEntry, ends: list[int], offset: int = 0,
                  ) -> tuple[list[Session], dict[int, tuple[str, int]]]:
        """A trajectory's sessions ending at ``ends``, and step -> (session id, session
        index in the episode, counted from ``offset``)."""
        folder, meta, steps = self._loaded[entry.id]
        sessions: list[Session] = []
        where: dict[int, tuple[str, int]] = {}  # step -> (session id, session index)
        start = 1
        for index, end in enumerate(ends, offset):
            sid = f"{entry.id}:steps-{start}-{end}"
            turns: list[Turn] = []
            if start == 1:
                turns += self._initial_turns(folder, meta)
            mosaics = self._mosaics(folder, steps[start - 1:end]) \
                if self.frames.kind == "mosaic" else {}
            for step in steps[start - 1:end]:
                turns += self._step_turns(folder, step, step.step == end,
                                          mosaics.get(step.step))
                where[step.step] = (sid, index)
            sessions.append(Session(session_id=sid, turns=turns,
                                    meta={"steps": [start, end]}))
            start = end + 1
        return sessions, where

    def _image(self, folder: Path, sha: str | None) -> list[ImageRef]:
        if sha is None:
            return []
        path = folder / "frames" / f"{sha}.png"
        self._counts["images"] += 1
        return [ImageRef(source=f"trajectories/{folder.name}/frames/{sha}.png",
                         path=str(path.resolve()), sha256=sha)]

    def _initial_turns(self, folder: Path, meta: Any) -> list[Turn]:
        initial = meta.initial or {}
        frame = initial.get("frame") if self.frames.kind != "none" else None
        if frame and not (folder / "frames" / f"{frame}.png").is_file():
            frame = None  # the picture at reset is optional in the trajectory format
        observation = str(initial.get("observation") or "")
        if not observation and not frame:
            return []
        text = "Before your first action you saw:" + (" <image>" if frame else "") + \
            (f"\n{observation}" if observation else "")
        return [Turn(turn_id="t0-obs", role="user", text=text,
                     images=self._image(folder, frame))]

    def _mosaics(self, folder: Path, session_steps: list[Any]) -> dict[int, tuple[ImageRef, int]]:
        """The session's steps K at a time: the group's last step -> (its mosaic, the
        group's first step). Groups start at the session's start, so none crosses its end
        (a question never sees a step after its horizon)."""
        from ..games._mosaic import store_mosaic  # lazy: games/_constant.py imports this loader

        out: dict[int, tuple[ImageRef, int]] = {}
        k = self.frames.every
        for i in range(0, len(session_steps), k):
            group = session_steps[i:i + k]
            frames = [(s.step, folder / "frames" / f"{s.frame}.png") for s in group if s.frame]
            if not frames:
                continue
            sha, path = store_mosaic(frames, default_cache_dir() / "mosaics")
            self._counts["images"] += 1
            out[group[-1].step] = (ImageRef(source=f"mosaics/{sha}.png", path=str(path),
                                            sha256=sha, meta={"steps": [s for s, _ in frames]}),
                                   group[0].step)
        return out

    def _step_turns(self, folder: Path, step: Any, session_last: bool,
                    mosaic: tuple[ImageRef, int] | None = None) -> list[Turn]:
        if mosaic is not None:
            images = [mosaic[0]]
            seen = (f" <image>\n(the frames of steps {mosaic[1]}–{step.step}, each under its "
                    "step number)")
        else:
            frame = step.frame if self.frames.keeps(step.step, session_last) else None
            images = self._image(folder, frame)
            seen = " <image>" if frame else ""
        text = f"After step {step.step} you saw:" + seen + \
            (f"\n{step.observation}" if step.observation else "")
        from ..games._view import action_text  # one rendering for the loader and the check

        return [Turn(turn_id=f"t{step.step}-action", role="assistant", text=action_text(step)),
                Turn(turn_id=f"t{step.step}-obs", role="user", text=text, images=images)]

    def _question(self, entry: _TrajectoryEntry, r: _Row,
                  where: dict[int, tuple[str, int]]) -> Question:
        fields = self._question_fields(r, env=entry.env, trajectory=entry.id,
                                       trajectory_steps=entry.steps)
        fields["evidence"] = [EvidenceRef(session_id=where[s][0], turn_id=f"t{s}-{part}")
                              for s in r.evidence_steps for part in ("action", "obs")]
        return Question(asked_after=where[r.horizon[1]][1], **fields)

    def _question_fields(self, r: _Row, *, env: str, trajectory: str,
                         trajectory_steps: int) -> dict[str, Any]:
        if r.answerable:
            answer: str | list[str] = gold_answer(r.answer_type, r.answer, r.alternatives)
            answer_type = _ANSWER_TYPES[r.answer_type]
        else:
            answer, answer_type = NOT_ANSWERABLE, AnswerType.REFUSAL
        game = {"template": r.template, "params": r.params, "horizon": r.horizon,
                "evidence_steps": r.evidence_steps, "answer": r.answer,
                "alternatives": r.alternatives, "tolerance": r.tolerance,
                "answerable": r.answerable, "answer_type": r.answer_type, "env": env,
                "trajectory": trajectory, "trajectory_steps": trajectory_steps,
                "paraphrased": bool(r.paraphrase and r.paraphrase.get("status") == "kept")}
        return {"question_id": r.id, "text": r.question, "answer": answer,
                "answer_type": answer_type, "ability": Ability(r.ability),
                "subtype": r.template, "meta": {"game": game}}

    # -- Benchmark protocol --

    def question_count(self) -> int | None:
        return len(self.rows)

    def manifest(self) -> dict[str, Any]:
        inputs = {str(self.info_path): file_sha256(self.info_path),
                  str(self.questions_path): file_sha256(self.questions_path)}
        for tid, entry in self.trajectories.items():
            inputs[str(self.root / "trajectories" / tid / "trajectory.jsonl")] = entry.sha256
        return {"name": self.name, "loader_version": LOADER_VERSION, "format": BENCH_FORMAT,
                "generator_version": self.info.get("generator_version"),
                "seed": self.info.get("seed"), "inputs": inputs,
                "options": {"steps_per_session": self.steps_per_session,
                            "frames": self.frames.describe()},
                "counts": dict(self._counts)}


_ONE_VALUE = ("list", "set", "path")  # a list answer is the items of one answer
_EMPTY = {"list": "none", "set": "none", "path": "here"}


def gold_answer(answer_type: str, answer: Any, alternatives: list[Any]) -> str | list[str]:
    """``Question.answer`` as the rule scorer reads it: for list, set and path questions a
    list holds the items of the one answer (other correct ones stay in
    ``meta["game"]["alternatives"]``); for the others a list holds every correct answer."""
    if answer_type in _ONE_VALUE and isinstance(answer, list):
        return [answer_text(v) for v in answer] if answer else _EMPTY[answer_type]
    if answer_type in _ONE_VALUE:
        return answer_text(answer)
    answers = [answer_text(answer), *(answer_text(a) for a in alternatives)]
    return answers[0] if len(answers) == 1 else answers


def answer_text(value: Any) -> str:
    """A typed answer as the gold text: lists joined with ", ", counted sets as "2 wood"."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple | dict) and not value:
        return "none"  # an empty inventory or change is an answer, said as the scorer reads it
    if isinstance(value, list | tuple):
        return ", ".join(answer_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{v} {k}" for k, v in sorted(value.items()))
    return str(value)


@benchmark("games")
def games(opts: BenchmarkOptions) -> GamesBenchmark:
    """A folder written by memgauge generate games (one episode per trajectory;
    --bench-option steps_per_session=K, frames=all|every:K|mosaic:K|none)."""
    return GamesBenchmark(opts)
