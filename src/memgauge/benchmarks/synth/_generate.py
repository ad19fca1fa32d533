"""Assemble questions and haystack into episodes at each length tier, and write them out.

For every question the evidence sessions are fixed (content, timestamps, images); each tier
adds haystack sessions from one shared pool, in a per-question order, until the prompt's
cross-modal token count is within ±3 % of the tier's target, alternating image-bearing and
text-only sessions to hold the text-per-image ratio. Sessions are sorted by timestamp, so
evidence lands at uniformly random positions and update chains keep their order.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import random
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...prompt import build_prompt, session_messages
from ...schema import (
    BenchmarkInfo,
    EvidenceRef,
    ImageRef,
    Question,
    Session,
    Turn,
)
from ...tokens import TokenCounter
from ._families import (
    AR_FAMILY,
    DEFAULT_FAMILIES,
    FAMILIES,
    MEMEYE_FAMILIES,
    QuestionPlan,
    When,
    base_key,
    make_refusal,
    with_image_dependency,
)
from ._haystack import STYLE_WEIGHTS, family_session, haystack_session
from ._text import (
    MAX_REPEATS,
    SessionPlan,
    chat_session,
    limit_repeats,
    line_key,
    lines_fit,
)
from ._world import BASE_WORLD, World

# 2: image_dependency from the facts an answer needs; 3: fillers share-worded; 4: a timeline's
# haystack from the larger world, styled like its plans (per-question output as in 3);
# 5: the per-question haystack drawn as evidence sessions of planned questions, small talk
# in answered pairs, at most two of a line per episode where the pool allows (issue 28,
# design 0041): every benchmark's text and digest change, the demo's included; 6: sessions
# carry the family they were drawn as (the gate's folds), more small-talk follow-ups,
# image replies and wordings of a question's repeated lines, no small-talk line without
# slots (issue 28, 0041): every benchmark's text and digest change again, the demo's included;
# 7: no line more than twice in a per-question episode at any tier (a pool three times the
# need, scanned for a session saying no line a third time; share lines take their other
# wordings; the timeline as it was), whose screenshot ie_previnfo asks about drawn (decoys said
# words no evidence did), more wordings of the calendar and table-top lines (issue 28,
# issue 27 §2, 0041): every benchmark's text and digest change again, the demo's included
# 8: the timeline layout only (and so the MemEye export): no line more than twice in its
# conversation (the plans' sessions capped together, pool sessions taken in their order and
# reworded where they would say a line a third time), article replies from a longer list for
# evidence and haystack alike (issue 28, design 0041): every timeline's text and digest
# change. A per-question benchmark is version 7's byte for byte and keeps its number.
# 9: both layouts, wording only: a visitor's owner opens its line as written ("My colleague
# Tom", not str.capitalize's "My colleague tom"), "water the {plant}" (not "a aloe vera"),
# "a trip of {n} days" (not "a 8-day trip") (issue 28, design 0041 "Sixth round"): every
# benchmark that says one of them changes text and digest, the demo's included.
GENERATOR_VERSION = "9"
TIMELINE_GENERATOR_VERSION = "9"


def generator_version(layout: str) -> str:
    """The version a benchmark of ``layout`` is written as (its manifest, its episodes)."""
    return TIMELINE_GENERATOR_VERSION if layout == "timeline" else GENERATOR_VERSION


TOLERANCE = 0.03
# Pool sessions per kind: one per this many tokens of the largest tier (at least
# MIN_POOL). Three times as many as an episode uses, so that one which says no line a third
# time is nearly always there: reworded copies of a pool session, one per episode, shared
# its other words among dozens of "other" sessions and read at AUC 0.78 (design 0041).
POOL_TOKENS_PER_SESSION = 50
MIN_POOL = 192
LAYOUTS = ("per-question", "timeline")
FAMILY_CYCLE = (*DEFAULT_FAMILIES, AR_FAMILY)  # the default set
KNOWN_FAMILIES = (*FAMILIES, AR_FAMILY)
FORMATS = ("memgauge", "memeye")
_WEEKDAY = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_STAND_IN = "2025/01/01 (Wed) 12:00"


def parse_tier(tier: str) -> int:
    t = tier.strip().lower()
    try:
        if t.endswith("k"):
            return int(float(t[:-1]) * 1024)
        if t.endswith("m"):
            return int(float(t[:-1]) * 1024 * 1024)
        return int(t)
    except ValueError:
        raise ConfigError(f"bad tier {tier!r}: use e.g. 8k, 32k, 128k, 1m") from None


@dataclass
class SynthConfig:
    out: str
    seed: int = 0
    tiers: list[str] = field(default_factory=lambda: ["8k", "32k"])
    questions: int = 40
    text_tokens_per_image: int = 2000
    image_size: tuple[int, int] = (384, 288)
    tokenizer: str = "o200k_base"
    image_formula: str = "openai-tiles"
    families: list[str] | None = None  # default: all, round-robin
    naturalizer: Any = None  # a ChatModel that rewrites prose (off by default)
    overwrite: bool = False  # clear an earlier benchmark in ``out`` first (else refuse)
    layout: str = "per-question"  # or "timeline": one conversation per tier (_timeline.py)
    format: str = "memgauge"  # or "memeye": also the MemEye release files (_memeye_export.py)

    def describe(self) -> dict[str, Any]:
        # Not asdict(): it would deep-copy the naturaliser model (locks, sessions).
        d = {f.name: getattr(self, f.name) for f in fields(self)
             if f.name not in ("out", "overwrite")}
        d["tiers"] = list(self.tiers)
        d["families"] = list(self.families) if self.families else None
        d["naturalizer"] = self.naturalizer.describe() if self.naturalizer else None
        d["image_size"] = list(self.image_size)
        return d


class ImageStore:
    """Renders each distinct (kind, facts, variant) once into a content-addressed file."""

    def __init__(self, root: Path, size: tuple[int, int]) -> None:
        from .render import describe, render_png

        self._render, self._describe = render_png, describe
        self.root = root
        self.size = size
        (root / "images").mkdir(parents=True, exist_ok=True)
        self._done: dict[str, ImageRef] = {}

    def ref(self, kind: str, facts: dict[str, Any], variant: int, role: str) -> ImageRef:
        key = json.dumps([kind, facts, variant], sort_keys=True)
        hit = self._done.get(key)
        if hit is None:
            png = self._render(kind, facts, size=self.size, variant=variant)
            sha = hashlib.sha256(png).hexdigest()
            name = f"images/{sha[:24]}.png"
            path = self.root / name
            if not path.exists():
                path.write_bytes(png)
            hit = ImageRef.model_construct(
                source=name, path=None, url=None, sha256=sha, width=self.size[0],
                height=self.size[1], captions={"gold": self._describe(kind, facts)}, missing=False,
                meta={"kind": kind, "facts": facts, "role": role})
            self._done[key] = hit
        return hit

    @property
    def count(self) -> int:
        return len(self._done)


def _to_session(plan: SessionPlan, session_id: str, store: ImageStore, variant_seed: int,
                role_of_images: str, stamp: str | None = None) -> Session:
    turns = []
    for j, tp in enumerate(plan.turns, 1):
        images = [store.ref(kind, facts, (variant_seed + j + k) % 7, role_of_images)
                  for k, (kind, facts) in enumerate(tp.images)]
        meta = {"facts": tp.facts} if tp.facts else {}
        turns.append(Turn.model_construct(turn_id=f"{session_id}:{j}", role=tp.role, text=tp.text,
                                          images=images, speaker=None, meta=meta))
    return Session.model_construct(session_id=session_id, date=stamp, turns=turns,
                                   meta={"role": plan.role, "topic": plan.topic, **plan.meta})


# Evidence sessions fall 2-237 whole days before their question (When.days), between 08:00
# and 21:00; haystack sessions are dated alike (they were any minute of 0-240 days: a session
# at 03:00 or on the question's day was never evidence, a tell for a model reading dates).
EVIDENCE_DAYS = (2, 237)
SESSION_HOURS = (8, 21)


def session_time(rng: random.Random, qdate: date, days_before: int) -> datetime:
    """A session's time ``days_before`` whole days before the question, in waking hours."""
    day = datetime.combine(qdate - timedelta(days=days_before), datetime.min.time())
    return day + timedelta(minutes=rng.randint(SESSION_HOURS[0] * 60, SESSION_HOURS[1] * 60))


def date_stamp(d: datetime) -> str:
    """A session or question date as the LongMemEval-style stamp the exports carry."""
    return f"{d:%Y/%m/%d} ({_WEEKDAY[d.weekday()]}) {d:%H:%M}"


@dataclass
class PoolEntry:
    session: Session  # date filled per episode
    keys: set[str]
    tokens: int
    images: int
    text_tokens: int
    lines: list[str] = field(default_factory=list)  # its turns' texts (repeats are capped)

    def fits(self, counts: Counter[str]) -> bool:
        """Whether its lines keep an episode's ``counts`` within ``MAX_REPEATS``."""
        if self._keys is None:
            self._keys = Counter(map(line_key, self.lines))
        return all(counts[k] + n <= MAX_REPEATS for k, n in self._keys.items())

    _keys: Counter[str] | None = field(default=None, repr=False, compare=False)


class HaystackPool:
    """Shared haystack sessions, generated on demand (deterministically, in order)."""

    def __init__(self, seed: int, store: ImageStore, count: Callable[[Session], int],
                 size: int, world: World = BASE_WORLD, name: str = "haystack",
                 weights: Mapping[str, float] = STYLE_WEIGHTS,
                 families: Sequence[str] | None = None) -> None:
        self.store, self.count, self.size = store, count, size
        # Plans (text) are drawn up front so a naturaliser can rewrite them in one batch;
        # rendering and counting happen when a session is first used. With ``families``
        # (the per-question layout) a session is drawn as an evidence session of those
        # families is; without (a timeline's pool) in the haystack styles.
        self.plans: dict[bool, list[tuple[SessionPlan, set[str]]]] = {}
        for with_image, kind in ((True, "image"), (False, "filler")):
            rng = random.Random(f"{seed}:{name}-{kind}")
            self.plans[with_image] = [
                family_session(rng, families, with_image=with_image) if families else
                haystack_session(rng, with_image=with_image, world=world, weights=weights)
                for _ in range(size)]
        self.with_images: list[PoolEntry] = []
        self.fillers: list[PoolEntry] = []

    def _make(self, with_image: bool) -> PoolEntry:
        bucket = self.with_images if with_image else self.fillers
        plan, keys = self.plans[with_image][len(bucket)]
        sid = f"{'h' if with_image else 'f'}{len(bucket)}"
        # A stand-in stamp of the same shape, so the count matches once the real one is set.
        session = _to_session(plan, sid, self.store, len(bucket), "haystack", _STAND_IN)
        tokens = self.count(session)
        n_img = sum(len(t.images) for t in session.turns)
        img_tokens = sum(self.store_tokens(im) for t in session.turns for im in t.images)
        entry = PoolEntry(session, keys, tokens, n_img, tokens - img_tokens,
                          [t.text for t in session.turns])
        bucket.append(entry)
        return entry

    store_tokens: Callable[[ImageRef], int] = staticmethod(lambda im: 0)  # set by the generator

    def reworded_copy(self, with_image: bool, index: int, lines: Counter[str], tag: str,
                      ) -> PoolEntry | None:
        """The ``index``-th pool session with the lines that would say something a third
        time in the episode (``lines``) redrawn or reworded as every question's evidence
        is (``limit_repeats``), under an id of its own (``tag``: the episode's); None if
        that is not enough."""
        plan, keys = self.plans[with_image][index]
        plan = copy.deepcopy(plan)
        limit_repeats([plan], random.Random(f"{tag}:{with_image}:{index}"), Counter(lines))
        texts = [t.text for t in plan.turns]
        if not lines_fit(texts, lines):
            return None
        sid = f"{'h' if with_image else 'f'}{index}:{tag}"
        session = _to_session(plan, sid, self.store, index, "haystack", _STAND_IN)
        tokens = self.count(session)
        img_tokens = sum(self.store_tokens(im) for t in session.turns for im in t.images)
        return PoolEntry(session, keys, tokens, sum(len(t.images) for t in session.turns),
                         tokens - img_tokens, texts)

    def get(self, with_image: bool, index: int) -> PoolEntry:
        bucket = self.with_images if with_image else self.fillers
        while len(bucket) <= index:
            self._make(with_image)
        return bucket[index]


class Generator:
    def __init__(self, config: SynthConfig) -> None:
        if config.questions < 1:
            raise ConfigError("--questions must be at least 1")
        if config.layout not in LAYOUTS:
            raise ConfigError(f"--layout {config.layout!r}: use one of {', '.join(LAYOUTS)}")
        self.config = config
        self.root = Path(config.out)
        self.targets = {t: parse_tier(t) for t in config.tiers}
        self.counter = TokenCounter(tokenizer=config.tokenizer, image_formula=config.image_formula)
        self.store = ImageStore(self.root, config.image_size)
        # Sessions average a few hundred tokens: this many of each kind covers the largest
        # tier several times over, whatever a question excludes.
        default = MEMEYE_FAMILIES if config.format == "memeye" else FAMILY_CYCLE
        families = config.families or list(default)
        unknown = [f for f in families if f not in KNOWN_FAMILIES]
        if unknown:
            raise ConfigError(f"unknown question families {unknown}; known: {list(KNOWN_FAMILIES)}")
        self.families = families
        largest = max(self.targets.values())
        # (a timeline keeps its pool as it was: three times as many styled sessions there
        # scored 0.611 on tests/synth/test_timeline_world's thirty plans; design 0041)
        size = (max(64, int(largest / 150)) if config.layout == "timeline"
                else max(MIN_POOL, int(largest / POOL_TOKENS_PER_SESSION)))
        # The haystack talks like the evidence of these (refusals' sources: the defaults).
        answerable = [f for f in families if f != AR_FAMILY] or list(DEFAULT_FAMILIES)
        self.pool = HaystackPool(config.seed, self.store, self._session_tokens, size,
                                 families=answerable)
        self.pool.store_tokens = lambda im: self.counter.image(im.width, im.height)

    # -- counting ---------------------------------------------------------------------------
    def _session_tokens(self, session: Session) -> int:
        [msgs] = session_messages([session], mode="image")
        return self.counter.messages(msgs, lambda p: (p.image.width,
                                                      p.image.height)) - self.counter.reply_priming

    # -- planning ---------------------------------------------------------------------------
    def _top_up(self, sid: str, rng: random.Random, room: float,
                lines: Counter[str] | None = None) -> PoolEntry | None:
        """A text-only chat that fits ``room``, its lines kept within the episode's cap
        (``lines``: the episode's so far, keyed by ``line_key``)."""
        lines = lines or Counter()
        for n in range(6, 0, -1):
            plan = chat_session(random.Random(f"{sid}:{n}"), n_exchanges=n)
            plan.role = "filler"
            limit_repeats([plan], random.Random(f"{sid}:{n}:lines"), Counter(lines))
            session = _to_session(plan, sid, self.store, 0, "haystack", _STAND_IN)
            tokens = self._session_tokens(session)
            if tokens <= room:
                return PoolEntry(session, set(), tokens, 0, tokens,
                                 [t.text for t in session.turns])
        return None

    def _next_from_pool(self, with_image: bool, queue: list[int], exclude: set[str],
                        room: float, lines: Counter[str], tag: str) -> PoolEntry | None:
        """The next pool session of ``queue`` that shares no key with ``exclude`` and fits
        ``room`` (those that do not are dropped from it) and keeps every line of the
        episode (``lines``) within ``MAX_REPEATS``: one as it is if the queue holds one;
        else (rarely) the first that fits with its repeated lines redrawn for this episode.
        Taking it as it is said one line up to seven times in a 32k episode; a top-up
        instead would be plainer than any pool session, and a tell."""
        first = None
        k = 0
        while k < len(queue):
            cand = self.pool.get(with_image, queue[k])
            if cand.keys & exclude or cand.tokens > room:
                del queue[k]
            elif cand.fits(lines):
                del queue[k]
                return cand
            else:
                first = k if first is None else first
                k += 1
        if first is None:
            return None
        entry = self.pool.reworded_copy(with_image, queue[first], lines, tag)
        if entry is not None and entry.tokens <= room:
            del queue[first]
            return entry
        return None

    def plans(self, limit: int | None = None,
              ) -> Iterator[tuple[str, QuestionPlan, date, random.Random]]:
        """The first ``limit`` plans (default ``--questions``); a plan depends only on the
        seed and its index, so drawing more never changes the earlier ones."""
        seed = self.config.seed
        for i in range(self.config.questions if limit is None else limit):
            rng = random.Random(f"{seed}:question:{i}")
            qdate = date(2025, 9, 1) + timedelta(days=rng.randint(0, 90))
            family = self.families[i % len(self.families)]
            when = When(qdate)
            if family == AR_FAMILY:
                source = rng.choice(sorted(DEFAULT_FAMILIES))
                plan = make_refusal(FAMILIES[source].plan(rng, when))
            else:
                plan = with_image_dependency(FAMILIES[family].plan(rng, when))
            # Its own rng: the plan's draws stay as they were.
            limit_repeats([*plan.sessions, *plan.decoys], random.Random(f"{seed}:lines:{i}"))
            yield f"synth-{seed}-{i:04d}", plan, qdate, rng

    # -- assembly ---------------------------------------------------------------------------
    def _evidence_sessions(self, qid: str, plan: QuestionPlan, qdate: date,
                           rng: random.Random) -> list[tuple[datetime, Session]]:
        out = []
        family = plan.program.get("source_family", plan.family)  # a refusal's: its source's
        # Decoys are fixed like evidence (identical at every tier) but are haystack: a
        # near-duplicate of the needle at the question's X level, tied to something else.
        for prefix, role, plans in (("e", "needle", plan.sessions), ("d", "haystack", plan.decoys)):
            for k, sp in enumerate(plans):
                when = session_time(rng, qdate, int(sp.meta["days_before"]))
                sid = f"{qid}:{prefix}{k}"
                session = _to_session(sp, sid, self.store, k, role, date_stamp(when))
                session.meta["family"] = family  # as the haystack's (the gate's folds)
                out.append((when, session))
        return out

    def _question(self, qid: str, plan: QuestionPlan, qdate: date,
                  evidence: list[tuple[datetime, Session]]) -> Question:
        pointers = []
        for _, s in evidence:
            for t in s.turns:
                if not any(f.get("needle") for f in t.meta.get("facts", [])):
                    continue
                if t.images:
                    pointers += [EvidenceRef(session_id=s.session_id, turn_id=t.turn_id,
                                             image_index=k) for k in range(len(t.images))]
                else:
                    pointers.append(EvidenceRef(session_id=s.session_id, turn_id=t.turn_id))
        return Question(
            question_id=qid, text=plan.question, answer=plan.answer,
            answer_type=plan.answer_type, ability=plan.ability, subtype=plan.subtype,
            labels=plan.labels, evidence=pointers, old_answers=plan.old_answers,
            question_date=date_stamp(datetime.combine(qdate, datetime.min.time())
                                 + timedelta(hours=20)),
            meta={"family": plan.family, "program": plan.program, "needed": plan.needed})

    def episode(self, qid: str, plan: QuestionPlan, qdate: date, rng: random.Random,
                tier: str, evidence: list[tuple[datetime, Session]], question: Question,
                ) -> tuple[list[Session], int]:
        """Sessions for one tier (sorted by time) and the exact prompt token count."""
        target = self.targets[tier]
        hay_rng = random.Random(f"{self.config.seed}:{qid}:haystack")  # same for every tier
        chosen: list[Session] = [s for _, s in evidence]
        stamps: list[tuple[datetime, Session]] = list(evidence)
        base = build_prompt([], question, counter=self.counter,
                            image_size=lambda p: (p.image.width, p.image.height)).tokens or 0
        total = base + sum(self._session_tokens(s) for s in chosen)
        if total > target * (1 + TOLERANCE):
            raise ConfigError(f"tier {tier} ({target} tokens) is smaller than question {qid}'s "
                              f"evidence alone ({total} tokens); use larger tiers")
        text_tokens = total
        n_images = sum(len(t.images) for s in chosen for t in s.turns)
        size = self.pool.size
        queues = {True: hay_rng.sample(range(size), size), False: hay_rng.sample(range(size), size)}
        # Aim well inside the ±3 % promise: the final exact count can differ by a token or
        # two per session once real timestamps replace the stand-in.
        low, high = target * (1 - TOLERANCE / 3), target * (1 + TOLERANCE / 3)
        fills = 0
        hay_keys = {base_key(k) for k in plan.exclusive}
        lines = Counter(line_key(t.text) for s in chosen for t in s.turns)
        while total < low:
            want_image = text_tokens >= self.config.text_tokens_per_image * (n_images + 1)
            entry = self._next_from_pool(want_image, queues[want_image], hay_keys, high - total,
                                         lines, f"{qid}:{tier}")
            if entry is None:  # nothing fits the remaining room: a text-only top-up session
                entry = self._top_up(f"{qid}:{tier}:fill{fills}", hay_rng, high - total, lines)
                fills += 1
                if entry is None:
                    break
            when = session_time(hay_rng, qdate, hay_rng.randint(*EVIDENCE_DAYS))
            stamps.append((when, entry.session))
            lines.update(map(line_key, entry.lines))
            total += entry.tokens
            text_tokens += entry.text_tokens
            n_images += entry.images
        stamps.sort(key=lambda x: x[0])
        sessions = [s.model_copy(update={"date": date_stamp(w)}) if s.date != date_stamp(w) else s
                    for w, s in stamps]
        exact = build_prompt(sessions, question, counter=self.counter,
                             image_size=lambda p: (p.image.width, p.image.height)).tokens
        return sessions, int(exact or 0)


def _hash_files(root: Path, paths: list[Path]) -> dict[str, str]:
    out = {}
    for p in sorted(paths):
        h = hashlib.sha256()
        with open(p, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        out[str(p.relative_to(root))] = h.hexdigest()
    return out


def _memlens_item(question: Question, sessions: list[Session]) -> dict[str, Any]:
    """One item in the MemLens release format (images relative to the benchmark folder)."""
    index = {s.session_id: i for i, s in enumerate(sessions)}
    evidence_sessions = sorted({index[p.session_id] for p in question.evidence
                                if p.session_id in index})
    item: dict[str, Any] = {
        "question_id": question.question_id,
        "question": question.text,
        "answer": question.answer,
        "question_type": question.ability.value,
        "question_subtype": question.subtype,
        "question_date": question.question_date,
        "haystack_dates": [s.date for s in sessions],
        "haystack_sessions": [[_memlens_turn(t) for t in s.turns] for s in sessions],
        "answer_session_ids": evidence_sessions,
    }
    if question.old_answers:
        item["old_answer"] = question.old_answers[-1]
    return item


def _memlens_turn(turn: Turn) -> dict[str, Any]:
    out: dict[str, Any] = {"role": turn.role, "content": turn.text}
    if turn.images:
        out["images"] = [{"file": im.source} for im in turn.images]
    return out


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _clear_or_refuse(root: Path, overwrite: bool) -> None:
    """A benchmark is written into an empty folder: an earlier one would leave stale tiers
    and images behind (and change nothing in the new manifest's digest to say so)."""
    if not root.exists():
        return
    if not root.is_dir():
        raise ConfigError(f"--out {root} is a file, not a folder")
    if not any(root.iterdir()):
        return
    if not overwrite:
        raise ConfigError(f"--out {root} is not empty; use --overwrite to replace the "
                          "benchmark there, or another folder")
    try:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        ours = isinstance(manifest, dict) and "generator_version" in manifest
    except (OSError, ValueError, RecursionError):  # unreadable, not JSON, or nested too deep
        ours = False
    if not ours:
        raise ConfigError(f"--out {root} holds something other than a generated benchmark "
                          "(no memgauge manifest.json); --overwrite only replaces a benchmark")
    _empty(root)


def _write_timeline(gen: Generator, placed: list[Any], tier: str, tdir: Path,
                    tiers_out: dict[str, Any], progress: Callable[[str, int], None] | None,
                    ) -> Path:
    """One timeline episode for ``tier`` (no MemLens export: that format holds one
    question per history); its summary goes to ``tiers_out``."""
    from ._timeline import timeline_episode

    ep = timeline_episode(gen, placed, tier)
    path = tdir / "episodes.jsonl"
    path.write_text(ep.model_dump_json() + "\n", encoding="utf-8")
    target, tokens = gen.targets[tier], ep.meta["tokens"]
    off = abs(tokens - target) / target
    tiers_out[tier] = {"target_tokens": target, "questions": len(ep.questions),
                       "episodes": 1, "sessions": len(ep.sessions),
                       "tokens_min": tokens, "tokens_max": tokens, "tokens_mean": float(tokens),
                       "max_rel_error": round(off, 4), "within_tolerance": int(off <= TOLERANCE)}
    if progress:
        progress(tier, len(placed))
    return path


Plans = list[tuple[str, Any, Any, Any]]  # (question id, plan, question date, ...)
Progress = Callable[[str, int], None] | None


def generate(config: SynthConfig, progress: Progress = None) -> dict[str, Any]:
    """Write a benchmark to ``config.out``; returns its manifest (also written as
    ``manifest.json``). Same config and generator version => byte-identical files.

    The steps in order: check the choices (before anything in ``--out`` is cleared), plan
    the questions, naturalize their sessions (if asked), write each tier, then the
    manifest with every file's digest."""
    memeye_plans = _check_choices(config)
    root = Path(config.out)
    _clear_or_refuse(root, config.overwrite)
    existed = root.is_dir()
    try:
        return _write_benchmark(config, memeye_plans, progress)
    except BaseException:
        # --out is empty or new here, so all it holds is this run's partial output: without
        # a manifest, the same command (or --overwrite) would refuse the folder next time.
        _remove_partial(root, keep_folder=existed)
        raise


def _remove_partial(root: Path, *, keep_folder: bool) -> None:
    if not root.is_dir() or (root / "manifest.json").exists():
        return
    if keep_folder:
        with contextlib.suppress(OSError):  # never hide the error that got us here
            _empty(root)
    else:
        shutil.rmtree(root, ignore_errors=True)


def _empty(root: Path) -> None:
    """Everything in ``root`` removed, ``root`` kept (a link is removed, never followed)."""
    for child in root.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _write_benchmark(config: SynthConfig, memeye_plans: Plans | None,
                     progress: Progress) -> dict[str, Any]:
    gen = Generator(config)  # (it makes the image folder)
    root = gen.root
    root.mkdir(parents=True, exist_ok=True)
    plans = _plans(gen, config, memeye_plans)
    natural = _naturalized(gen, config, plans)
    tiers_out: dict[str, Any] = {}
    files: list[Path] = []
    if config.layout == "timeline":
        files += _write_timeline_tiers(gen, config, plans, tiers_out, progress)
    else:
        for tier in config.tiers:
            files += _write_memlens_tier(gen, config, plans, tier, tiers_out, progress)
    files += sorted((root / "images").glob("*.png"))
    manifest = _manifest(gen, config, plans, tiers_out, files, natural)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                        encoding="utf-8")
    return manifest


def _check_choices(config: SynthConfig) -> Plans | None:
    """The layout and format named correctly; for ``--format memeye``, every cell filled
    (or the full one named): its plans, made here, before ``--out`` is touched."""
    if config.layout not in LAYOUTS:
        raise ConfigError(f"--layout {config.layout!r}: use one of {', '.join(LAYOUTS)}")
    if config.format not in FORMATS:
        raise ConfigError(f"--format {config.format!r}: use one of {', '.join(FORMATS)}")
    if config.format != "memeye":
        return None
    from ._memeye_cells import cell_plans
    from ._memeye_export import check_config

    check_config(config.families, config.layout, config.questions)
    # Unknown families are named by the generator, later.
    if all(f in KNOWN_FAMILIES for f in config.families or []):
        return list(cell_plans(config.seed, config.questions, config.families))
    return None


def _plans(gen: Generator, config: SynthConfig, memeye_plans: Plans | None) -> Plans:
    if config.layout != "timeline":
        return list(gen.plans())
    from ._timeline import limit_plan_repeats, timeline_plans, use_timeline_pool

    plans = memeye_plans if memeye_plans is not None else list(timeline_plans(gen))
    limit_plan_repeats([plan for _, plan, _, _ in plans], config.seed)
    use_timeline_pool(gen, [plan for _, plan, _, _ in plans])
    return plans


def _naturalized(gen: Generator, config: SynthConfig, plans: Plans) -> Any:
    """``--naturalize``: every planned session (questions' and the pool's) rewritten."""
    if config.naturalizer is None:
        return None
    import asyncio

    from ._naturalize import naturalize

    sessions = [sp for _, plan, _, _ in plans for sp in plan.sessions]
    sessions += [sp for bucket in gen.pool.plans.values() for sp, _ in bucket]
    return asyncio.run(naturalize(sessions, config.naturalizer))


def _write_timeline_tiers(gen: Generator, config: SynthConfig, plans: Plans,
                          tiers_out: dict[str, Any], progress: Progress) -> list[Path]:
    """The timeline layout: every question placed once, then an episode per tier (and,
    for ``--format memeye``, its task files)."""
    from ._timeline import evidence_tokens, place

    root = gen.root
    placed = [place(gen, qid, plan, qdate) for qid, plan, qdate, _ in plans]
    for tier in config.tiers:
        evidence_tokens(gen, placed, tier)
    files: list[Path] = []
    for tier in config.tiers:
        tdir = root / "tiers" / tier
        tdir.mkdir(parents=True, exist_ok=True)
        files.append(_write_timeline(gen, placed, tier, tdir, tiers_out, progress))
        if config.format == "memeye":
            from ...schema import Episode
            from ._memeye_export import write_task

            ep = Episode.model_validate_json(files[-1].read_text(encoding="utf-8"))
            files += write_task(ep, {p.qid for p in placed}, root, root / "memeye", tier,
                                config.seed)
    return files


def _write_memlens_tier(gen: Generator, config: SynthConfig, plans: Plans, tier: str,
                        tiers_out: dict[str, Any], progress: Progress) -> list[Path]:
    """The MemLens layout's ``tier``: an episode per question (episodes.jsonl) and the same
    as a MemLens dataset file; its summary goes to ``tiers_out``."""
    root = gen.root
    tdir = root / "tiers" / tier
    tdir.mkdir(parents=True, exist_ok=True)
    mdir = root / "memlens"
    mdir.mkdir(parents=True, exist_ok=True)
    ep_path, ml_path = tdir / "episodes.jsonl", mdir / f"dataset_{tier}.json"
    counts: list[int] = []
    with open(ep_path, "w", encoding="utf-8") as ep_f, open(ml_path, "w",
                                                            encoding="utf-8") as ml_f:
        ml_f.write("[")
        for n, (qid, plan, qdate, _) in enumerate(plans):
            # A fresh rng per question and tier: every tier sees identical evidence.
            rng = random.Random(f"{config.seed}:{qid}:evidence")
            evidence = gen._evidence_sessions(qid, plan, qdate, rng)  # AR: decoys only
            question = gen._question(qid, plan, qdate, evidence)
            sessions, tokens = gen.episode(qid, plan, qdate, rng, tier, evidence, question)
            counts.append(tokens)
            from ...schema import Episode

            ep = Episode.model_construct(
                episode_id=qid, sessions=sessions, questions=[question],
                benchmark=BenchmarkInfo(name="synth", version=GENERATOR_VERSION, tier=tier),
                meta={"tokens": tokens, "target": gen.targets[tier], "seed": config.seed})
            ep_f.write(ep.model_dump_json() + "\n")
            ml_f.write(("," if n else "") + "\n" + _dumps(_memlens_item(question, sessions)))
            if progress:
                progress(tier, n + 1)
        ml_f.write("\n]\n")
    target = gen.targets[tier]
    off = [abs(c - target) / target for c in counts]
    tiers_out[tier] = {"target_tokens": target, "questions": len(counts),
                       "tokens_min": min(counts), "tokens_max": max(counts),
                       "tokens_mean": round(sum(counts) / len(counts), 1),
                       "max_rel_error": round(max(off), 4),
                       "within_tolerance": sum(o <= TOLERANCE for o in off)}
    return [ep_path, ml_path]


def _manifest(gen: Generator, config: SynthConfig, plans: Plans, tiers_out: dict[str, Any],
              files: list[Path], natural: Any) -> dict[str, Any]:
    digests = _hash_files(gen.root, files)
    digest = hashlib.sha256(_dumps(digests).encode()).hexdigest()
    families: dict[str, int] = {}
    for _, plan, _, _ in plans:
        families[plan.family] = families.get(plan.family, 0) + 1
    manifest = {
        "generator": "memgauge.synth", "generator_version": generator_version(config.layout),
        "config": config.describe(), "token_counter": gen.counter.describe(),
        "tolerance": TOLERANCE, "tiers": tiers_out, "families": families,
        "images": gen.store.count, "files": digests, "digest": digest,
        "naturalizer": natural,
    }
    if config.format == "memeye":
        from ._memeye_export import coverage

        manifest["memeye"] = coverage([plan for _, plan, _, _ in plans], config.tiers)
    return manifest
