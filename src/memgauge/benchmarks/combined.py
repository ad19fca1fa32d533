"""``--bench combined``: another benchmark's histories joined, its questions unchanged (0036).

Cross-topic scaling: the same questions asked over a history that also holds unrelated
tasks, so what the extra history costs is measured at fixed questions.

    memgauge run --bench combined --data DATA --bench-option of=memeye \\
        --bench-option group=pairs [--bench-option seed=0] [--bench-option of.format=mcq] ...

``of``: the benchmark whose episodes (tasks) are joined; ``of.KEY=VALUE`` passes its own
options. ``group``:

- ``single``: every episode alone (the baseline, under the same names);
- ``pairs`` / ``size:N``: consecutive groups of 2 / N episodes, in episode-id order (the
  last group takes what is left);
- ``all``: one episode holding every history;
- ``random:N``: a random partition into groups of N, drawn with ``seed`` (default 0);
- ``A+B/C+D``: fixed groups by episode id;
- ``release`` / ``release:<stem>[+<stem>…]`` (``of=memeye``): MemEye's own groupings, the
  release's ``dialog/concat_*.json`` (all, or the named ones), each one's member tasks
  derived from its content (``_memeye_groups.py``) and joined as ``A+B`` would. Groupings
  that share a task cannot go in one run (its questions would be asked twice under one id):
  run one per run, ``group=release:<stem>``. Tasks in no picked grouping are left out.

A combined episode's sessions are ordered by date when every session carries an ISO date
(a stable merge: each task keeps its own order), else task after task. Session ids become
``<episode>/<session>``; evidence pointers and ``asked_after`` follow their sessions; question
ids are kept, so runs at different groupings pair question by question. The manifest lists
each combined episode's members and history size (sessions, turns, images): what
``memgauge probe history`` plots accuracy against.
"""

from __future__ import annotations

import collections
import datetime as dt
import random
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from ..errors import ConfigError
from ..registry import benchmark, lookup
from ..schema import BenchmarkInfo, Episode, EvidenceRef, Question, Session
from ._base import BenchmarkOptions, TakesOptions
from ._memeye_groups import parse_release, release_groups
from .memeye import MemEyeBenchmark

LOADER_VERSION = "1"
KEYS = ("of", "group", "seed")
INNER = "of."


def _parse_group(text: str) -> tuple[str, int | None, list[list[str]] | None]:
    """(kind, group size, fixed groups) of ``group=...``."""
    if text in ("single", "all"):
        return text, None, None
    if parse_release(text) is not None:
        return "release", None, None
    if text == "pairs":
        return "size", 2, None
    for kind in ("size", "random"):
        if text.startswith(f"{kind}:"):
            raw = text.split(":", 1)[1]
            if not raw.isdigit() or int(raw) < 1:
                raise ConfigError(f"--bench-option group={text!r}: {kind}:N needs a whole "
                                  "number N of 1 or more")
            return kind, int(raw), None
    if "+" in text or "/" in text:
        groups = [[m for m in g.split("+") if m] for g in text.split("/")]
        if any(not g for g in groups):
            raise ConfigError(f"--bench-option group={text!r}: an empty group (write "
                              "A+B/C+D)")
        return "fixed", None, groups
    raise ConfigError(f"--bench-option group={text!r}: use single, pairs, size:N, all, "
                      "random:N, fixed groups A+B/C+D, or release[:<stem>+…] (MemEye's "
                      "concat_* groupings)")


def partition(ids: Sequence[str], group: str, seed: int) -> list[list[str]]:
    """The episode ids in groups, as ``group`` says (see the module docstring)."""
    kind, size, fixed = _parse_group(group)
    if kind == "release":
        raise ConfigError(f"--bench-option group={group!r} is read from a MemEye release "
                          "(of=memeye), not from episode ids")
    ordered = sorted(ids)
    if kind == "single":
        return [[i] for i in ordered]
    if kind == "all":
        return [ordered]
    if kind == "fixed":
        assert fixed is not None
        named = [m for g in fixed for m in g]
        unknown = sorted(set(named) - set(ids))
        if unknown:
            raise ConfigError(f"--bench-option group: {unknown[0]!r} is no episode of the "
                              f"data (its episodes: {', '.join(ordered)})")
        twice = sorted({m for m in named if named.count(m) > 1})
        if twice:
            raise ConfigError(f"--bench-option group: {twice[0]!r} is in two groups")
        return fixed
    assert size is not None
    if kind == "random":
        random.Random(seed).shuffle(ordered)
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


def _date(session: Session) -> dt.date | None:
    try:
        return dt.date.fromisoformat((session.date or "")[:10])
    except ValueError:
        return None


def combine(members: Sequence[Episode], info: BenchmarkInfo, group: str) -> Episode:
    """One episode holding the members' histories and questions (see the module docstring)."""
    if len(members) == 1:
        ep = members[0]
        return ep.model_copy(update={"benchmark": info, "meta": {
            **ep.meta, "combined": _size(ep, [ep.episode_id], group)}})
    tagged = [(m.episode_id, i, s) for m in members for i, s in enumerate(m.sessions)]
    dates = [_date(s) for _, _, s in tagged]
    if all(d is not None for d in dates):
        # A stable sort keeps each task's own order under equal dates and member order.
        order = sorted(range(len(tagged)), key=lambda j: dates[j])  # type: ignore[arg-type,return-value]
        tagged = [tagged[j] for j in order]
    new_id = {(ep, s.session_id): f"{ep}/{s.session_id}" for ep, _, s in tagged}
    place = {(ep, i): n for n, (ep, i, _) in enumerate(tagged)}
    sessions = [s.model_copy(update={"session_id": new_id[(ep, s.session_id)]})
                for ep, _, s in tagged]
    questions: list[Question] = []
    for m in members:
        for q in m.questions:
            evidence = [EvidenceRef(session_id=new_id.get((m.episode_id, p.session_id),
                                                          p.session_id),
                                    turn_id=p.turn_id, image_index=p.image_index)
                        for p in q.evidence]
            asked = None if q.asked_after is None else place[(m.episode_id, q.asked_after)]
            questions.append(q.model_copy(update={"evidence": evidence, "asked_after": asked}))
    episode_id = "+".join(m.episode_id for m in members)
    out = Episode(episode_id=episode_id, sessions=sessions, questions=questions,
                  benchmark=info, meta={"members": [m.episode_id for m in members]})
    out.meta["combined"] = _size(out, [m.episode_id for m in members], group)
    return out


def _size(ep: Episode, members: list[str], group: str) -> dict[str, Any]:
    turns = [t for s in ep.sessions for t in s.turns]
    return {"group": group, "members": members, "sessions": len(ep.sessions),
            "turns": len(turns), "images": sum(len(t.images) for t in turns)}


class CombinedBenchmark:
    name = "combined"
    version = LOADER_VERSION
    options: ClassVar[dict[str, tuple[str, ...]]] = {"of": (), "group": (), "seed": ()}

    def __init__(self, opts: BenchmarkOptions) -> None:
        extra = {str(k): str(v) for k, v in opts.extra.items()}
        unknown = sorted(k for k in extra if k not in KEYS and not k.startswith(INNER))
        if unknown:
            raise ConfigError(f"--bench-option {unknown[0]}: combined takes of=BENCH, "
                              "group=..., seed=N and of.KEY=VALUE for the joined benchmark")
        self.of = extra.get("of")
        if not self.of:
            raise ConfigError("--bench combined needs --bench-option of=BENCH (e.g. memeye)")
        if self.of == self.name:
            raise ConfigError("--bench-option of=combined: name the benchmark to join")
        self.group = extra.get("group", "pairs")
        _parse_group(self.group)  # a mistake is caught before anything loads
        seed = extra.get("seed", "0")
        if not seed.isdigit():
            raise ConfigError(f"--bench-option seed={seed!r}: a whole number")
        self.seed = int(seed)
        inner_extra = {k[len(INNER):]: v for k, v in extra.items() if k.startswith(INNER)}
        self.inner = lookup("benchmark", self.of)(BenchmarkOptions(
            data=opts.data, image_dir=opts.image_dir,
            allow_missing_images=opts.allow_missing_images,
            allow_inconsistent=opts.allow_inconsistent, question_ids=opts.question_ids,
            tier=opts.tier, extra=inner_extra, protocol=opts.protocol))
        if inner_extra and not (isinstance(self.inner, TakesOptions) and self.inner.options):
            raise ConfigError(f"--bench-option of.*: {self.of} takes no benchmark options")
        self.release: list[list[str]] | None = None
        stems = parse_release(self.group)
        if stems is not None:
            if not isinstance(self.inner, MemEyeBenchmark):
                raise ConfigError(f"--bench-option group={self.group}: MemEye's concat_* "
                                  f"groupings need of=memeye, not of={self.of}")
            self.release = release_groups(self.inner, stems)
        self.info = BenchmarkInfo(name=self.name, tier=opts.tier, split=self.group)
        self._episodes: dict[str, dict[str, Any]] = {}

    def episodes(self) -> Iterator[Episode]:
        # Grouping needs every episode's id first: the joined benchmark is read whole.
        members = {ep.episode_id: ep for ep in self.inner.episodes()}
        self._episodes = {}
        groups = self.release or partition(list(members), self.group, self.seed)
        for group in groups:
            ep = combine([members[i] for i in group], self.info, self.group)
            self._episodes[ep.episode_id] = ep.meta["combined"]
            yield ep

    def manifest(self) -> dict[str, Any]:
        if not self._episodes:  # the history sizes, even for a run that asked nothing new
            collections.deque(self.episodes(), maxlen=0)  # reading them records the sizes
        return {"name": self.name, "version": self.version, "of": self.inner.manifest(),
                "group": self.group, "seed": self.seed, "episodes": dict(self._episodes)}


@benchmark("combined")
def combined(opts: BenchmarkOptions) -> CombinedBenchmark:
    """Another benchmark's histories joined (cross-topic scaling), its questions kept."""
    return CombinedBenchmark(opts)
