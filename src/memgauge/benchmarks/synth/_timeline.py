"""The timeline layout: one long conversation per tier holding every question at its time.

Each plan keeps the evidence, decoys and timestamps the per-question layout gives it; all of
them are laid on one timeline, haystack fills the rest up to the tier, and each question is
asked (``asked_after``) right after the session that makes it answerable. On top of the
plans' own questions the timeline asks

- every knowledge-update chain at each update after the first (``<id>-at<k>``: the gold is
  the value shown then, earlier values are ``old_answers``), so the chain is asked, updated
  and asked again;
- some answerable questions once before their first evidence session exists
  (``<id>-before``: gold = refusal at that time; the evidence that arrives later is named in
  ``meta["evidence_later"]`` so an oracle can show it was not yet visible);
- every other answerable question again at the plan's own question date (``<id>-later``,
  2 to 240 days after its latest evidence), so evidence distance varies;
- the refusal plans (``ar``), whose evidence never appears, at their question date.

Plans whose exclusive keys clash with an earlier plan's are skipped (two parking chains, two
counts of the same collection would answer each other) and further plans drawn instead; the
MemEye export draws its plans per X x Y cell instead (``_memeye_cells.py``).
The haystack comes from its own pool, drawn from the larger world without the plans' keys:
many plans hold most of the base world's stores, kinds and events, and a haystack that
skipped those sessions would be left with plain chat (0029).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import random
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from ...errors import ConfigError
from ...prompt import build_prompt
from ...schema import Ability, AnswerType, BenchmarkInfo, Episode, Question, Session
from . import _world as W
from ._families import (
    AR_FAMILY,
    FAMILIES,
    LOCKERS,
    REFUSAL,
    VEHICLES,
    QuestionPlan,
    base_key,
    evidence_facts,
    keys_clash,
)
from ._haystack import STYLED
from ._text import ARTICLE_REPLIES, TIMELINE_ARTICLE_REPLIES, limit_repeats, line_key
from ._world import LARGE_WORLD, World

if TYPE_CHECKING:
    from ._generate import Generator

ASK_DELAY = timedelta(seconds=30)  # after its session, before any later one (minute stamps)
BEFORE_EVERY = 4  # one answerable plan in this many is also asked before its evidence exists
LATER_EVERY = 2  # one in this many is asked again at its question date, long after
MAX_DRAWS = 20  # plans drawn per question wanted before a clash-ridden timeline gives up


@dataclasses.dataclass
class Placed:
    """One plan on the timeline: its sessions (with times) and its questions' ask times."""

    qid: str
    plan: QuestionPlan
    qdate: date
    sessions: list[tuple[datetime, Session]]
    asks: list[tuple[datetime, Question]]


def timeline_plans(gen: Generator) -> Iterator[tuple[str, QuestionPlan, date, random.Random]]:
    """``gen.config.questions`` plans whose exclusive keys do not clash, in draw order."""
    taken: set[str] = set()
    wanted = gen.config.questions
    kept = 0
    for n, item in enumerate(gen.plans(limit=wanted * MAX_DRAWS)):
        _, plan, _, _ = item
        if keys_clash(plan.exclusive, taken):
            continue
        taken |= plan.exclusive
        kept += 1
        yield item
        if kept == wanted:
            return
        if n + 1 >= wanted * MAX_DRAWS:
            break
    raise ConfigError(f"only {kept} of --questions {wanted} fit one timeline without two "
                      "questions answering each other; ask for fewer, or more --families")


def evidence_styles(plan: QuestionPlan) -> Counter[str]:
    """How many of ``plan``'s evidence sessions are worded in each haystack style."""
    family, n = plan.family, len(plan.sessions)
    if family == "ku_update" and any("#" in k for k in plan.exclusive):
        return Counter({"parking_of": n})  # a variant: the vehicle named
    if family == "ie_previnfo":
        key = next(iter(plan.exclusive)).removeprefix("app_ui:")
        return Counter({f"{base_key(key)}_of" if "#" in key else key: n})
    if family == "msr_parcels" and any("#" in k for k in plan.exclusive):
        return Counter({"parcel_of": n})
    return Counter({style: n // len(styles) for styles in [_FAMILY_STYLES.get(family, ())]
                    for style in styles})


# The haystack style each family's evidence sessions are worded in (_haystack._styled).
_FAMILY_STYLES = {"ie_entity": ("label_morning", "article"), "ie_scene": ("arranged",),
                  "msr_arithmetic": ("receipt",), "msr_counting": ("collection",),
                  "msr_entity": ("visitor", "named"), "tr_duration": ("clock_pair",),
                  "tr_order": ("ticket",), "tr_date": ("calendar",), "ku_update": ("parking",),
                  # the MemEye grid's families (0036) worded in a haystack style
                  "ie_instance": ("named",), "msr_scenes": ("arranged",),
                  "msr_parcels": ("parcel",), "ku_scene": ("arranged",), "ku_code": ("locker",),
                  "ku_instance": ("desk",)}


def limit_plan_repeats(plans: list[QuestionPlan], seed: int) -> None:
    """Keep the lines of every plan's sessions (evidence and decoys) within ``MAX_REPEATS``
    across the whole conversation, as one episode's are (each plan was capped on its own
    when planned; thirty plans on one timeline said an article reply three times).

    An article reply is drawn again from the timeline's longer list, as the haystack's are
    (``TIMELINE_ARTICLE_REPLIES``), and may take its other wordings: five replies left room
    for ten articles a conversation. Given to the family itself, the longer list would
    change the per-question layout's output."""
    rng = random.Random(f"{seed}:timeline:lines")
    sessions = [s for p in plans for s in (*p.sessions, *p.decoys)]
    for turn in (t for s in sessions for t in s.turns):
        if turn.role == "assistant" and turn.text in ARTICLE_REPLIES:
            turn.text = rng.choice(TIMELINE_ARTICLE_REPLIES)
            turn.wordings = TIMELINE_ARTICLE_REPLIES
    limit_repeats(sessions, rng)


def use_timeline_pool(gen: Generator, plans: list[QuestionPlan]) -> None:
    """Give ``gen`` the haystack pool of a timeline holding ``plans``: the same sizes, its
    sessions drawn from the larger world without any plan's exclusive keys, its styles
    weighted like the plans' evidence (clashes skip plans unevenly, so the timeline's mix
    of families is not the per-question cycle the default weights mirror)."""
    from ._generate import HaystackPool

    claimed = set().union(*(plan.exclusive for plan in plans))
    taken = {base_key(k) for k in claimed}
    counts = sum((evidence_styles(plan) for plan in plans), Counter())
    weights = {style: max(1, counts[style]) for style in STYLED}
    pool = HaystackPool(gen.config.seed, gen.store, gen._session_tokens, gen.pool.size,
                        world=_variant_subjects(LARGE_WORLD.without(taken), claimed),
                        name="timeline-haystack",
                        weights=weights)
    pool.store_tokens = gen.pool.store_tokens
    gen.pool = pool


def _variant_subjects(world: World, claimed: set[str]) -> World:
    """``world`` with the variants' subjects no plan claims (a vehicle, a locker, a desk
    object), so the haystack talks as the export's chains do about other things; none when
    no plan is a variant (the default timeline)."""
    if not any("#" in k for k in claimed):
        return world

    def free(key, values):
        return tuple(v for v in values if not keys_clash({f"{key}#{v}"}, claimed))

    desk = tuple(k for k in ("mug", "plant", "lamp", "bottle", "vase", "teapot", "jar")
                 if k in world.entity_kinds)
    screens = tuple((s, a) for s in ("booking", "parcel") for a in W.APPS
                    if not keys_clash({f"app_ui:{s}#{a}"}, claimed))
    return dataclasses.replace(
        world, vehicles=(*free("app_ui:parking", VEHICLES), *W.HAYSTACK_VEHICLES),
        lockers=(*free("app_ui:locker", LOCKERS), *W.HAYSTACK_LOCKERS), desk_kinds=desk,
        app_screens=screens, arranged=(*world.arranged, *W.HAYSTACK_ARRANGED))


def place(gen: Generator, qid: str, plan: QuestionPlan, qdate: date) -> Placed:
    rng = random.Random(f"{gen.config.seed}:{qid}:evidence")  # as the per-question layout
    sessions = gen._evidence_sessions(qid, plan, qdate, rng)
    for _, s in sessions:  # whose evidence or decoy it is: the gates group by it
        s.meta["question"] = qid
    evidence = [(w, s) for w, s in sessions if s.meta.get("role") == "evidence"]
    asks: list[tuple[datetime, Question]] = []
    if plan.family == AR_FAMILY or not evidence:
        asks.append((datetime.combine(qdate, datetime.min.time()) + timedelta(hours=20),
                     gen._question(qid, plan, qdate, [])))
        return Placed(qid, plan, qdate, sessions, asks)
    evidence.sort(key=lambda x: x[0])
    asks.append((evidence[-1][0] + ASK_DELAY, gen._question(qid, plan, qdate, evidence)))
    if plan.labels.y == "Y3":  # every update chain (ku_update and the 0036 chains)
        for k in range(1, len(evidence) - 1):  # the last update is the plan's own question
            asks.append((evidence[k][0] + ASK_DELAY,
                         _ask_at_update(gen, f"{qid}-at{k}", plan, qdate, evidence[:k + 1], k)))
    index = int(qid.rsplit("-", 1)[-1])
    if index % LATER_EVERY == 0:  # at the plan's own date, long after: a distance to recall
        asks.append((datetime.combine(qdate, datetime.min.time()) + timedelta(hours=20),
                     gen._question(f"{qid}-later", plan, qdate, evidence)))
    if index % BEFORE_EVERY == 1:
        asks.append((evidence[0][0] - ASK_DELAY, _asked_before(gen, qid, plan, qdate, evidence)))
    return Placed(qid, plan, qdate, sessions, asks)


def _ask_at_update(gen: Generator, qid: str, plan: QuestionPlan, qdate: date,
                   seen: list[tuple[datetime, Session]], k: int) -> Question:
    """The chain's question after its k-th update: gold from the values shown so far."""
    partial = dataclasses.replace(plan, sessions=plan.sessions[:k + 1])
    images, texts = evidence_facts(partial)
    answer = FAMILIES[plan.family].solve(plan.program, images, texts)
    if answer is None or answer in plan.old_answers[:k]:
        raise AssertionError(f"{qid}: the chain's value after update {k} is not new")
    step = dataclasses.replace(plan, answer=answer, old_answers=list(plan.old_answers[:k]),
                               needed=[answer])
    return gen._question(qid, step, qdate, seen)


def _asked_before(gen: Generator, qid: str, plan: QuestionPlan, qdate: date,
                  evidence: list[tuple[datetime, Session]]) -> Question:
    """The plan's question asked before any of its evidence exists: refusal is right then."""
    later = gen._question(qid, plan, qdate, evidence)
    return Question(
        question_id=f"{qid}-before", text=plan.question, answer=REFUSAL,
        answer_type=AnswerType.REFUSAL, ability=Ability.ANSWER_REFUSAL, labels=plan.labels,
        evidence=[], question_date=later.question_date,
        meta={"family": AR_FAMILY,
              "program": {"op": "refuse", "source_family": plan.family, "until": "evidence"},
              "needed": [],
              "evidence_later": {"family": plan.family, "program": plan.program,
                                 "evidence": [p.model_dump(exclude_none=True)
                                              for p in later.evidence]}})


def per_question_view(episode: Episode) -> list[Episode]:
    """A timeline as the indistinguishability gate groups sessions: one episode per plan
    (its evidence and decoys, all its questions) and one per other session, so no fold holds
    the whole haystack and a plan's sessions never straddle train and test."""
    by_plan: dict[str, list[Session]] = {}
    alone: list[Session] = []
    for s in episode.sessions:
        plan = s.meta.get("question")
        (by_plan.setdefault(str(plan), []) if plan else alone).append(s)
    asked: dict[str, list[Question]] = {}
    for q in episode.questions:
        base = q.question_id.removesuffix("-before").removesuffix("-later").split("-at")[0]
        asked.setdefault(base, []).append(q)
    views = [Episode.model_construct(episode_id=plan, sessions=sessions,
                                     questions=asked.get(plan, []), benchmark=episode.benchmark,
                                     meta={}) for plan, sessions in by_plan.items()]
    views += [Episode.model_construct(episode_id=s.session_id, sessions=[s], questions=[],
                                      benchmark=episode.benchmark, meta={}) for s in alone]
    return views


def evidence_tokens(gen: Generator, placed: list[Placed], tier: str) -> int:
    """The prompt tokens of every plan's sessions and the longest question, checked against
    ``tier`` (before any tier is written: a too-small later tier must not leave the earlier
    ones behind)."""
    from ._generate import TOLERANCE

    target = gen.targets[tier]
    probe = max((q for p in placed for _, q in p.asks), key=lambda q: len(q.text))
    base = build_prompt([], probe, counter=gen.counter,
                        image_size=lambda p: (p.image.width, p.image.height)).tokens or 0
    total = base + sum(gen._session_tokens(s) for p in placed for _, s in p.sessions)
    if total > target * (1 + TOLERANCE):
        fits = math.ceil(total / (1 + TOLERANCE) / 1024)
        raise ConfigError(f"tier {tier} ({target} tokens) is smaller than the evidence of "
                          f"{len(placed)} questions on one timeline ({total} tokens); use "
                          f"tiers of at least {fits}k, or fewer --questions")
    return total


def timeline_episode(gen: Generator, placed: list[Placed], tier: str) -> Episode:
    """Every plan's sessions plus haystack up to the tier, sorted by time, and every
    question with its ``asked_after`` and a question date at its ask time."""
    from ._generate import date_stamp

    target = gen.targets[tier]
    fixed = sorted((ws for p in placed for ws in p.sessions), key=lambda x: x[0])
    asks = sorted((a for p in placed for a in p.asks), key=lambda x: (x[0], x[1].question_id))
    start = fixed[0][0] if fixed else min(w for w, _ in asks) - timedelta(days=240)
    end = max([w for w, _ in asks] + [w for w, _ in fixed])
    exclusive = {base_key(k) for p in placed for k in p.plan.exclusive}
    probe = max((q for _, q in asks), key=lambda q: len(q.text))
    def size_of(p):
        return p.image.width, p.image.height

    total = evidence_tokens(gen, placed, tier)
    stamps = list(fixed)
    stamps += _haystack(gen, tier, total, fixed, exclusive, start, end)
    stamps.sort(key=lambda x: x[0])
    sessions = [s.model_copy(update={"date": date_stamp(w)}) if s.date != date_stamp(w) else s
                for w, s in stamps]
    times = [w for w, _ in stamps]
    questions = []
    for when, q in asks:
        after = bisect.bisect_right(times, when) - 1
        if after < 0:
            if q.question_id.endswith("-before"):
                continue  # nothing precedes its evidence at this tier: not askable before it
            after = 0
        questions.append(q.model_copy(update={"asked_after": after,
                                              "question_date": date_stamp(when)}))
    exact = build_prompt(sessions, probe, counter=gen.counter, image_size=size_of).tokens
    return Episode.model_construct(
        episode_id=f"synth-{gen.config.seed}-timeline", sessions=sessions, questions=questions,
        benchmark=BenchmarkInfo(name="synth", version=_version(), tier=tier),
        meta={"tokens": int(exact or 0), "target": target, "seed": gen.config.seed,
              "layout": "timeline"})


def _version() -> str:
    from ._generate import TIMELINE_GENERATOR_VERSION

    return TIMELINE_GENERATOR_VERSION


def _haystack(gen: Generator, tier: str, total: int, fixed: list[tuple[datetime, Session]],
              exclusive: set[str], start: datetime, end: datetime,
              ) -> list[tuple[datetime, Session]]:
    """Pool sessions in one fixed order (so a larger tier extends a smaller one), each at a
    random time across the timeline, until the count is within the tolerance."""
    from ._generate import TOLERANCE

    target = gen.targets[tier]
    hay_rng = random.Random(f"{gen.config.seed}:timeline:haystack")  # same for every tier
    size = gen.pool.size
    order = {True: hay_rng.sample(range(size), size), False: hay_rng.sample(range(size), size)}
    pos = {True: 0, False: 0}
    # The ratio is held within the haystack: counted with the evidence, whose many images
    # would leave the haystack text-only and evidence given away by its image talk (0029).
    text_tokens, n_images = 0, 0
    low, high = target * (1 - TOLERANCE / 3), target * (1 + TOLERANCE / 3)
    span = max(1, int((end - start).total_seconds() // 60))
    out: list[tuple[datetime, Session]] = []
    fills = 0
    lines = Counter(line_key(t.text) for _, s in fixed for t in s.turns)
    while total < low:
        want_image = text_tokens >= gen.config.text_tokens_per_image * (n_images + 1)
        entry = None
        while pos[want_image] < size:
            index = order[want_image][pos[want_image]]
            cand = gen.pool.get(want_image, index)
            pos[want_image] += 1
            if cand.keys & exclusive or total + cand.tokens > high:
                continue
            if not cand.fits(lines):
                cand = gen.pool.reworded_copy(want_image, index, lines, "timeline")
                if cand is None or total + cand.tokens > high:
                    continue
            entry = cand
            break
        if entry is None:
            entry = gen._top_up(f"timeline:{tier}:fill{fills}", hay_rng, high - total, lines)
            fills += 1
            if entry is None:
                break
        out.append((start + timedelta(minutes=hay_rng.randint(0, span)), entry.session))
        lines.update(map(line_key, entry.lines))
        total += entry.tokens
        text_tokens += entry.text_tokens
        n_images += entry.images
    return out
