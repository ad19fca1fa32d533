"""Question families: each plans evidence sessions from facts and computes its answer.

A family has ``plan(rng, when)`` returning a :class:`QuestionPlan` whose gold answer is
computed from the facts it drew, and ``solve(program, images, texts)`` that recomputes the
answer from what an oracle can see (image facts and text facts of the evidence). The
planner and the solver are separate code paths, so the oracle gate checks every answer key.
Answers live only in images; the surrounding text refers to them indirectly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from ...schema import Ability, AnswerType, Labels
from . import _world as W
from ._text import (
    ARTICLE_REPLIES,
    CHAINS,
    LINE_VARIANTS,
    SHARE_LINES,
    Phrase,
    SessionPlan,
    TurnPlan,
    chain_line,
    chat_session,
    line,
    say,
    sentence_start,
    share_image,
)

REFUSAL = "Insufficient information"


@dataclass
class QuestionPlan:
    family: str
    ability: Ability
    subtype: str | None
    answer_type: AnswerType
    question: str
    answer: str
    labels: Labels
    sessions: list[SessionPlan]  # evidence sessions; meta["days_before"] fixes their time
    program: dict[str, Any]
    old_answers: list[str] = field(default_factory=list)
    exclusive: set[str] = field(default_factory=set)  # haystack may not share these keys
    needed: list[str] = field(default_factory=list)  # strings an image caption must carry
    decoys: list[SessionPlan] = field(default_factory=list)  # near-duplicates, not evidence


@dataclass(frozen=True)
class When:
    """The question's timeline: evidence days are chosen inside it."""

    question_date: date
    span_days: int = 240
    # 0: the family's own wording (the default benchmark). k >= 1 (the MemEye export, 0036):
    # its subject named in the question (the k-th vehicle, locker, the app) with exclusive
    # keys tagged ``base#subject``, and arrangements from the larger world, so several
    # plans of one family fit one timeline without answering each other.
    variant: int = 0

    def days(self, rng: random.Random, k: int, *, ordered: bool = True) -> list[float]:
        """k distinct evidence times (days before the question), oldest first."""
        picks = sorted((rng.uniform(2, self.span_days - 2) for _ in range(k)), reverse=True)
        return picks if ordered else rng.sample(picks, k)

    def day(self, days_before: float) -> date:
        return self.question_date - timedelta(days=int(days_before))


def tagged(key: str, subject: str, when: When) -> str:
    """``key`` claimed for ``subject`` only (variants) or whole (the default)."""
    return f"{key}#{subject}" if when.variant else key


def base_key(key: str) -> str:
    """What a haystack session must not share: the key less its subject tag."""
    return key.split("#", 1)[0]


def keys_clash(a: set[str], b: set[str]) -> bool:
    """Two plans' exclusive keys clash on the same key, or on one base that either claims
    whole (untagged): a tag makes two plans of one kind distinct only against each other."""
    return any(x == y or (base_key(x) == base_key(y) and ("#" not in x or "#" not in y))
               for x in a for y in b)


def _arranged(when: When) -> list[str]:
    return W.ARRANGED + W.MORE_ARRANGED if when.variant else W.ARRANGED


def _evidence(session: SessionPlan, days_before: float) -> SessionPlan:
    session.role = "evidence"
    session.meta["days_before"] = days_before
    return session


def _decoy(session: SessionPlan, days_before: float) -> SessionPlan:
    session.role = "haystack"
    session.meta["days_before"] = days_before
    session.meta["decoy"] = True
    return session


def _needle(turns: list[TurnPlan]) -> list[TurnPlan]:
    turns[0].facts.append({"needle": True})
    return turns


# --- IE: entity abstraction (two hops: image -> brand, text -> property) -------------------

def plan_ie_entity(rng: random.Random, when: When) -> QuestionPlan:
    brands = rng.sample(W.BRANDS, 3)
    origins = rng.sample(W.ORIGINS, 3)
    product = rng.choice(W.PRODUCTS)
    brand, origin = brands[0], origins[0]
    t1, t2 = when.days(rng, 2)
    label = {"product": product.title(), "brand": brand, "weight": f"{rng.choice([250, 400, 500])} "
                                                                   "g",
             "best_before": str(when.day(t1) + timedelta(days=200)),
             "lot": f"L{rng.randint(1000, 9999)}-{rng.randint(10, 99)}",
             "colour": rng.choice(W.COLOURS)}
    s1 = chat_session(rng, inserts=[_needle(share_image(
        rng, "label", label, line=line("label_morning", product=product)))])
    pairs = list(zip(brands, origins, strict=True))
    rng.shuffle(pairs)
    fact_text = "; ".join(f"{b} is based in {o}" for b, o in pairs)
    s2 = chat_session(rng, inserts=[[
        say("user", line("article", product=product, facts=fact_text),
            [{"entity": b, "based_in": o} for b, o in pairs] + [{"needle": True}],
            keep=tuple(f"{b} is based in {o}" for b, o in pairs)),
        say("assistant", rng.choice(ARTICLE_REPLIES))]])
    return QuestionPlan(
        family="ie_entity", ability=Ability.INFORMATION_EXTRACTION, subtype="entity",
        answer_type=AnswerType.FREE_TEXT,
        question=f"Where is the maker of the {product} I have every morning based?",
        answer=origin, labels=Labels(x="X2", y="Y2"),
        sessions=[_evidence(s1, t1), _evidence(s2, t2)],
        program={"op": "brand_origin"}, exclusive={f"label:{product}"}, needed=[brand])


def solve_ie_entity(program: dict[str, Any], images: list[dict[str, Any]],
                    texts: list[dict[str, Any]]) -> str | None:
    brands = [f["brand"] for f in images if f.get("_kind") == "label"]
    for t in texts:
        if brands and t.get("entity") == brands[0]:
            return t["based_in"]
    return None


# --- IE: a detail of an earlier screenshot -------------------------------------------------

def plan_ie_previnfo(rng: random.Random, when: When) -> QuestionPlan:
    app = rng.choice(W.APPS)
    kind = rng.choice(["booking", "parcel"])
    if kind == "booking":
        ref = W.code(rng, "BK")
        fields = [["Hotel", rng.choice(W.STORES).replace("Cafe", "Inn")],
                  ["Check-in", str(when.day(rng.uniform(2, 30)))],
                  ["Guests", str(rng.randint(1, 4))],
                  ["Reference", ref]]
        q = ("What was the reference number of my own booking, in the "
             f"{app + ' ' if when.variant else ''}confirmation I shared?")
        share = line("booking")
    else:
        ref = W.code(rng, "PK")
        fields = [["Carrier", rng.choice(["SwiftPost", "ParcelOne", "BoxRoute"])],
                  ["Status", "In transit"], ["Tracking", ref], ["Items", str(rng.randint(1, 3))]]
        q = ("What was the tracking number of my own parcel, in the "
             f"{app + ' ' if when.variant else ''}screenshot I shared?")
        share = line("parcel", variant=rng.randrange(4))
    facts = {"app": app, "title": "Confirmation" if kind == "booking" else "Your parcel",
             "fields": fields, "accent": rng.choice(W.COLOURS)}
    (t1,) = when.days(rng, 1)
    label = "Reference" if kind == "booking" else "Tracking"
    # A decoy that differs only in the small print: a screenshot of the same card from the
    # same app, the code two characters off.
    digits = list(ref[3:])
    for i in rng.sample(range(len(digits)), 2):
        digits[i] = rng.choice([d for d in "0123456789" if d != digits[i]])
    twin_ref = ref[:3] + "".join(digits)
    twin = {**facts, "fields": [[k, twin_ref if k == label else v] for k, v in fields]}
    owner = rng.choice(W.OWNERS)
    theirs = line("someone_else", owner=owner, what=kind)
    # Whose screenshot is asked about is drawn: half the time someone else's, the user's
    # own the decoy. (Always the user's own, "screenshot of my neighbour's booking from the
    # same app" was said only by decoys, most of the other sessions at 8k: seed 19 at 200
    # questions read evidence by it at AUC 0.60; design 0041.)
    if rng.random() < 0.5:
        q = q.replace("my own", f"{owner}'s")
        share, theirs = theirs, share
    s = chat_session(rng, inserts=[_needle(share_image(rng, "app_ui", facts, line=share))])
    decoy = chat_session(rng, inserts=[share_image(rng, "app_ui", twin, line=theirs)])
    return QuestionPlan(
        decoys=[_decoy(decoy, when.days(rng, 1)[0])],
        family="ie_previnfo", ability=Ability.INFORMATION_EXTRACTION, subtype="previnfo",
        answer_type=AnswerType.FREE_TEXT, question=q, answer=ref,
        labels=Labels(x="X4", y="Y1"),
        sessions=[_evidence(s, t1)], program={"op": "ui_field", "field": label},
        exclusive={tagged(f"app_ui:{kind}", app, when)}, needed=[ref])


def solve_ie_previnfo(program, images, texts):
    for f in images:
        for k, v in f.get("fields", []):
            if k == program["field"]:
                return v
    return None


# --- IE: a whole-scene detail (X1) -------------------------------------------------------

def plan_ie_scene(rng: random.Random, when: When) -> QuestionPlan:
    thing = rng.choice(_arranged(when))
    facts = W.scene_facts(rng)
    (t1,) = when.days(rng, 1)
    s = chat_session(rng, inserts=[_needle(share_image(
        rng, "scene", facts, line=line("arranged", variant=rng.randrange(4), thing=thing)))])
    # A decoy differing only at the scene level: same objects, another table-top colour.
    other = rng.choice([t for t in _arranged(when) if t != thing])
    twin = {**facts, "background": rng.choice([c for c in W.COLOURS if c != facts["background"]])}
    said = line("arranged", variant=rng.randrange(4), thing=other)
    decoy = chat_session(rng, inserts=[share_image(rng, "scene", twin, line=said)])
    return QuestionPlan(
        decoys=[_decoy(decoy, when.days(rng, 1)[0])],
        family="ie_scene", ability=Ability.INFORMATION_EXTRACTION, subtype="previnfo",
        answer_type=AnswerType.FREE_TEXT,
        question=f"What colour was the table-top in the photo of the {thing} I arranged?",
        answer=facts["background"], labels=Labels(x="X1", y="Y1"),
        sessions=[_evidence(s, t1)], program={"op": "scene_background"},
        needed=[facts["background"]],  # a colour: no caption of the text in the image has it
        exclusive={f"arranged:{thing}", f"arranged:{other}"})


def solve_ie_scene(program, images, texts):
    scenes = [f for f in images if f.get("_kind") == "scene"]
    return scenes[-1]["background"] if scenes else None


# --- MSR: arithmetic over receipts ---------------------------------------------------------

def plan_msr_arithmetic(rng: random.Random, when: When) -> QuestionPlan:
    store = rng.choice(W.STORES)
    currency = rng.choice(W.CURRENCIES)
    k = rng.randint(3, 5)
    days = when.days(rng, k)
    sessions, total, totals = [], Decimal(0), []
    first = rng.randrange(len(SHARE_LINES["receipt"]))  # each receipt worded differently
    for i, d in enumerate(days):
        facts = W.receipt_facts(rng, store, str(when.day(d)), currency)
        total += Decimal(facts["total"])
        totals.append(facts["total"])
        sessions.append(_evidence(chat_session(rng, inserts=[_needle(
            share_image(rng, "receipt", facts, place=store, variant=first + i))]), d))
    answer = W.fmt_amount(W.money(float(total)), currency)
    return QuestionPlan(
        family="msr_arithmetic", ability=Ability.MULTI_SESSION_REASONING, subtype="arithmetic",
        answer_type=AnswerType.CURRENCY,
        question=f"How much did I spend in total at {store}, adding up all the receipts I shared "
                 "from there?",
        answer=answer, labels=Labels(x="X2", y="Y2"),
        sessions=sessions, program={"op": "sum_totals", "store": store},
        exclusive={f"store:{store}"}, needed=totals)


def solve_msr_arithmetic(program, images, texts):
    recs = [f for f in images if f.get("_kind") == "receipt" and f["store"] == program["store"]]
    if not recs:
        return None
    total = sum(Decimal(f["total"]) for f in recs)
    return W.fmt_amount(W.money(float(total)), recs[0]["currency"])


# --- MSR: counting distinct entities seen only in images -----------------------------------

def plan_msr_counting(rng: random.Random, when: When) -> QuestionPlan:
    kind = rng.choice(["plant", "mug", "sneaker", "backpack", "lamp", "bottle"])
    distinct = rng.randint(2, 4)
    identities: list[dict[str, Any]] = []
    while len(identities) < distinct:
        ident = W.entity_identity(rng, kind)
        if len(identities) == 1:  # a look-alike of the first: one instance attribute differs
            attr = rng.choice(["pattern", "mark"])
            pool = W.PATTERNS if attr == "pattern" else W.MARKS
            ident = W.canonical_entity({**identities[0], attr: rng.choice(
                [v for v in pool if v != identities[0][attr]])})
        if all(W.identity_key(ident) != W.identity_key(o) for o in identities):
            identities.append(ident)
    shots = identities + [rng.choice(identities) for _ in range(rng.randint(1, 2))]  # repeats
    rng.shuffle(shots)
    days = when.days(rng, len(shots))
    sessions = []
    first = rng.randrange(len(LINE_VARIANTS["collection"]) + 1)  # each shot worded differently
    for i, (d, ident) in enumerate(zip(days, shots, strict=True)):
        facts = dict(ident)  # the photo (pose, backdrop) varies by render variant
        sessions.append(_evidence(chat_session(rng, inserts=[_needle(share_image(
            rng, "entity", facts, line=line("collection", variant=first + i, kind=kind)))]), d))
    return QuestionPlan(
        family="msr_counting", ability=Ability.MULTI_SESSION_REASONING, subtype="counting",
        answer_type=AnswerType.INTEGER,
        question=f"How many different {kind}s from my collection have I shown you photos of?",
        answer=str(distinct), labels=Labels(x="X3", y="Y2"),
        sessions=sessions, program={"op": "count_distinct", "kind": kind},
        needed=sorted({f"{i['body']} {i['pattern']}" for i in identities}),
        exclusive={f"entity:{kind}"})


def solve_msr_counting(program, images, texts):
    shots = [f for f in images if f.get("_kind") == "entity" and f["kind"] == program["kind"]]
    return str(len({W.identity_key(f) for f in shots})) if shots else None


# --- MSR: is the vaguely referenced one the same as the named one? -------------------------

def plan_msr_entity(rng: random.Random, when: When) -> QuestionPlan:
    kind = rng.choice(["cat", "dog"])
    owner = rng.choice(W.OWNERS)
    name = rng.choice(W.PET_NAMES)
    named = W.entity_identity(rng, kind)
    same = rng.random() < 0.5
    other = dict(named)
    if not same:  # a look-alike differing in one instance attribute
        attr = rng.choice(["pattern", "mark", "body"])
        pool = {"pattern": W.PATTERNS, "mark": W.MARKS, "body": W.COLOURS}[attr]
        other[attr] = rng.choice([v for v in pool if v != named[attr]])
        other = W.canonical_entity(other)
        if W.identity_key(other) == W.identity_key(named):  # e.g. a recoloured absent mark
            other = W.canonical_entity({**other, "body": rng.choice(
                [c for c in W.COLOURS if c != named["body"]])})
    t1, t2 = when.days(rng, 2)
    s1 = chat_session(rng, inserts=[_needle(share_image(
        rng, "entity", other,
        line=line("visitor", owner=sentence_start(owner), kind=kind)))])
    s2 = chat_session(rng, inserts=[_needle(share_image(
        rng, "entity", named,
        line=line("named", name=name, kind=kind)))])
    return QuestionPlan(
        family="msr_entity", ability=Ability.MULTI_SESSION_REASONING, subtype="entity_resolution",
        answer_type=AnswerType.YES_NO,
        question=f"Was the {kind} that {owner} brought along the same {kind} as {name}?",
        answer="Yes" if same else "No", labels=Labels(x="X3", y="Y2"),
        sessions=[_evidence(s1, t1), _evidence(s2, t2)], program={"op": "same_entity"},
        needed=[f"{named['body']} {named['pattern']}"],
        exclusive={f"entity:{kind}"})


def solve_msr_entity(program, images, texts):
    shots = [f for f in images if f.get("_kind") == "entity"]
    if len(shots) != 2:
        return None
    return "Yes" if W.identity_key(shots[0]) == W.identity_key(shots[1]) else "No"


# --- TR: which activity took longer (times on clocks) ---------------------------------------

def plan_tr_duration(rng: random.Random, when: When) -> QuestionPlan:
    (a1, a1_ref), (a2, a2_ref) = rng.sample(W.ACTIVITIES, 2)
    durations = rng.sample(range(35, 230, 5), 2)
    sessions, facts_all = [], []
    for (act, _), dur, d in zip([(a1, a1_ref), (a2, a2_ref)], durations, when.days(rng, 2),
                                strict=True):
        start = rng.randint(7 * 60, 15 * 60)
        end = start + dur
        f1 = {"hour": start // 60, "minute": start % 60, "face_colour": rng.choice(W.COLOURS)}
        f2 = {"hour": end // 60, "minute": end % 60, "face_colour": f1["face_colour"]}
        facts_all.append((f1, f2))
        sessions.append(_evidence(chat_session(rng, inserts=[
            _needle(share_image(rng, "clock", f1, line=line(
                "clock_start", variant=rng.randrange(4), activity=act))),
            _needle(share_image(rng, "clock", f2, line=line(
                "clock_end", variant=rng.randrange(4), activity=act)))]),
            d))
    answer = "A" if durations[0] > durations[1] else "B"
    q = (f"Which took longer, {a1_ref} or {a2_ref}? A. Duration 1 ({a1_ref}) is longer. "
         f"B. Duration 2 ({a2_ref}) is longer.")
    return QuestionPlan(
        family="tr_duration", ability=Ability.TEMPORAL_REASONING, subtype="duration_comparison",
        answer_type=AnswerType.CHOICE, question=q, answer=answer,
        labels=Labels(x="X2", y="Y2"), sessions=sessions,
        needed=[f"{c['hour']:02d}:{c['minute']:02d}" for pair in facts_all for c in pair],
        program={"op": "duration_compare"}, exclusive={f"activity:{a1}", f"activity:{a2}"})


def solve_tr_duration(program, images, texts):
    clocks = [f for f in images if f.get("_kind") == "clock"]
    if len(clocks) != 4:
        return None
    mins = [c["hour"] * 60 + c["minute"] for c in clocks]
    d1, d2 = mins[1] - mins[0], mins[3] - mins[2]
    return "A" if d1 > d2 else "B"


# --- TR: order events by the dates printed on their tickets -------------------------------

def plan_tr_order(rng: random.Random, when: When) -> QuestionPlan:
    k = rng.randint(3, 4)
    events = rng.sample(range(len(W.EVENTS)), k)
    share_days = when.days(rng, k)  # shared oldest first; event dates in another order
    event_dates = rng.sample(range(5, 60), k)
    sessions, tickets = [], []
    for i, (ev, d) in enumerate(zip(events, share_days, strict=True)):
        ev_date = when.question_date + timedelta(days=event_dates[i])
        facts = {"event": W.EVENTS[ev].removeprefix("the ").title(), "venue": W.VENUES[ev],
                 "date": str(ev_date),
                 "time": f"{rng.randint(10, 21):02d}:{rng.choice(['00', '30'])}",
                 "seat": f"{rng.choice('ABCDEFGH')}{rng.randint(1, 30)}",
                 "price": W.money(rng.randint(12, 90)), "currency": rng.choice(W.CURRENCIES),
                 "code": W.code(rng, "TK")}
        tickets.append(facts)
        sessions.append(_evidence(chat_session(rng, inserts=[_needle(share_image(
            rng, "ticket", facts, line=line("ticket", event=W.EVENTS[ev])))]), d))
    listing = rng.sample(range(k), k)  # the numbering in the question
    names = [W.EVENTS[events[j]] for j in listing]
    order = sorted(range(k), key=lambda n: tickets[listing[n]]["date"])
    answer = "".join(f"({n + 1})" for n in order)
    q = ("Put these events in the order they will happen, earliest first: "
         + ", ".join(f"({n + 1}) {name}" for n, name in enumerate(names))
         + ". Answer with the numbers, e.g. (2)(1)(3).")
    return QuestionPlan(
        family="tr_order", ability=Ability.TEMPORAL_REASONING, subtype="order_ranking",
        answer_type=AnswerType.ORDER, question=q, answer=answer,
        labels=Labels(x="X2", y="Y2"), sessions=sessions,
        needed=[t["date"] for t in tickets],
        program={"op": "order_by_ticket_date",
                 "events": [W.EVENTS[events[j]].removeprefix("the ").title() for j in listing]},
        exclusive={f"event:{W.EVENTS[e]}" for e in events})


def solve_tr_order(program, images, texts):
    dates = {f["event"]: f["date"] for f in images if f.get("_kind") == "ticket"}
    if any(e not in dates for e in program["events"]):
        return None
    order = sorted(range(len(program["events"])), key=lambda n: dates[program["events"][n]])
    return "".join(f"({n + 1})" for n in order)


# --- TR: the date marked on a calendar -----------------------------------------------------

def plan_tr_date(rng: random.Random, when: When) -> QuestionPlan:
    what = rng.choice(W.APPOINTMENTS)
    (t1,) = when.days(rng, 1)
    shared = when.day(t1)
    target = shared + timedelta(days=rng.randint(3, 25))
    facts = {"year": target.year, "month": target.month, "marked_day": target.day,
             "marker_colour": rng.choice(["red", "blue", "green", "orange", "purple"])}
    s = chat_session(rng, inserts=[_needle(share_image(
        rng, "calendar", facts, line=line("calendar", variant=rng.randrange(4), what=what)))])
    # A decoy differing only in the marked cell: same month, another day, another event.
    other = rng.choice([w for w in W.APPOINTMENTS if w != what])
    days_in = [d for d in range(1, 29) if d != target.day]
    twin = {**facts, "marked_day": rng.choice(days_in)}
    said = line("calendar", variant=rng.randrange(4), what=other)
    decoy = chat_session(rng, inserts=[share_image(rng, "calendar", twin, line=said)])
    return QuestionPlan(
        decoys=[_decoy(decoy, when.days(rng, 1)[0])],
        family="tr_date", ability=Ability.TEMPORAL_REASONING, subtype="temporal_info_extraction",
        answer_type=AnswerType.DATE, question=f"On what date is my {what}? Answer as YYYY/MM/DD.",
        answer=target.strftime("%Y/%m/%d"),
        labels=Labels(x="X2", y="Y1"), sessions=[_evidence(s, t1)],
        program={"op": "marked_date"}, exclusive={f"what:{what}", f"what:{other}"},
        needed=[str(target)])  # the marked day is a circle, not text


def solve_tr_date(program, images, texts):
    cals = [f for f in images if f.get("_kind") == "calendar"]
    if not cals:
        return None
    c = cals[-1]
    return f"{c['year']:04d}/{c['month']:02d}/{c['marked_day']:02d}"


# --- KU: a value that changes four times, shown only in photos -----------------------------

VEHICLES = ("car", "van", "motorbike")  # the subjects of ku_update's variants
PARKING_CHAIN = 4  # images in ku_update's chain
CHAIN_LENGTHS = (3, 4)  # images in the other Y3 chains (ku_scene, ku_instance, ku_code)
# How many images each haystack chain style's evidence chains share (the haystack mirrors it)
CHAIN_STYLE_LENGTHS = {"parking_of": (PARKING_CHAIN,), "locker": CHAIN_LENGTHS,
                       "desk": CHAIN_LENGTHS}
LOCKERS = ("gym", "office", "swimming pool")  # ku_code's


def plan_ku_update(rng: random.Random, when: When) -> QuestionPlan:
    vehicle = VEHICLES[(when.variant - 1) % len(VEHICLES)] if when.variant else "car"
    spots = rng.sample(W.SPOTS, PARKING_CHAIN)
    colour = rng.choice(W.COLOURS)
    start = rng.randrange(7)  # the moves' wordings, in turn from a random one (LINE_VARIANTS)
    sessions = []
    for i, (spot, d) in enumerate(zip(spots, when.days(rng, PARKING_CHAIN), strict=True)):
        facts = {"app": "ParkSmart", "title": "Parked", "fields": [["Level", spot[0]],
                 ["Bay", spot], ["Since", f"{rng.randint(7, 20):02d}:{rng.randint(0, 59):02d}"]],
                 "accent": colour}
        if when.variant:
            line_text = chain_line(rng, "parking_of", i, vehicle=vehicle)
        else:
            line_text = (line("parking_first", variant=start) if i == 0
                         else line("parking_move", variant=start + i - 1))
        sessions.append(_evidence(chat_session(rng, inserts=[_needle(share_image(
            rng, "app_ui", facts, line=line_text))]), d))
    return QuestionPlan(
        family="ku_update", ability=Ability.KNOWLEDGE_UPDATE, subtype=None,
        answer_type=AnswerType.FREE_TEXT, question=f"Which bay is my {vehicle} parked in now?",
        answer=spots[-1], old_answers=spots[:-1],
        labels=Labels(x="X2", y="Y3"), sessions=sessions,
        program={"op": "latest_field", "field": "Bay"},
        exclusive={tagged("app_ui:parking", vehicle, when)},
        needed=[spots[-1]])


def solve_ku_update(program, images, texts):
    values = [v for f in images for k, v in f.get("fields", []) if k == program["field"]]
    return values[-1] if values else None


# --- The rest of the X x Y grid (MemEye, 0036) ---------------------------------------------
# Y3 families are update chains over images: each photo supersedes the last, the latest
# state is the gold and the earlier states are ``old_answers`` (stale decoys).

def _distinct_colours(rng: random.Random, k: int) -> list[str]:
    return rng.sample(W.COLOURS, k)


def plan_ie_instance(rng: random.Random, when: When) -> QuestionPlan:
    """X3 Y1: one attribute of one named entity seen once."""
    kind = rng.choice(["cat", "dog"])
    name = rng.choice(W.PET_NAMES)
    named = W.entity_identity(rng, kind)
    (t1,) = when.days(rng, 1)
    s = chat_session(rng, inserts=[_needle(share_image(
        rng, "entity", named, line=line("named", name=name, kind=kind)))])
    # A decoy at the instance level: someone else's look-alike, another body colour.
    twin = W.canonical_entity({**named, "body": rng.choice(
        [c for c in W.COLOURS if c != named["body"]])})
    decoy = chat_session(rng, inserts=[share_image(rng, "entity", twin, line=line(
        "visitor", owner=sentence_start(rng.choice(W.OWNERS)), kind=kind))])
    return QuestionPlan(
        decoys=[_decoy(decoy, when.days(rng, 1)[0])],
        family="ie_instance", ability=Ability.INFORMATION_EXTRACTION, subtype="entity",
        answer_type=AnswerType.FREE_TEXT,
        question=f"What is the main colour of {name}, the {kind} from down the street?",
        answer=named["body"], labels=Labels(x="X3", y="Y1"),
        sessions=[_evidence(s, t1)], program={"op": "entity_body"},
        needed=[named["body"]], exclusive={f"entity:{kind}"})


def solve_ie_instance(program, images, texts):
    shots = [f for f in images if f.get("_kind") == "entity"]
    return shots[-1]["body"] if shots else None


def plan_msr_scenes(rng: random.Random, when: When) -> QuestionPlan:
    """X1 Y2: the scene level of several photos combined (how many table-top colours)."""
    things = rng.sample(_arranged(when), 3)
    distinct = rng.randint(1, 3)
    palette = _distinct_colours(rng, distinct)
    backgrounds = palette + [rng.choice(palette) for _ in range(3 - distinct)]
    rng.shuffle(backgrounds)
    sessions = []
    for thing, bg, d in zip(things, backgrounds, when.days(rng, 3), strict=True):
        facts = {**W.scene_facts(rng), "background": bg}
        sessions.append(_evidence(chat_session(rng, inserts=[_needle(share_image(
            rng, "scene", facts,
            line=line("arranged", variant=rng.randrange(4), thing=thing)))]), d))
    listed = ", the ".join(things[:-1]) + f" and the {things[-1]}"
    return QuestionPlan(
        family="msr_scenes", ability=Ability.MULTI_SESSION_REASONING, subtype="counting",
        answer_type=AnswerType.INTEGER,
        question=f"Across the photos of the {listed} I arranged, how many different "
                 "table-top colours were there?",
        answer=str(distinct), labels=Labels(x="X1", y="Y2"), sessions=sessions,
        program={"op": "count_backgrounds"}, needed=sorted(set(backgrounds)),
        exclusive={f"arranged:{t}" for t in things})


def solve_msr_scenes(program, images, texts):
    scenes = [f for f in images if f.get("_kind") == "scene"]
    return str(len({f["background"] for f in scenes})) if scenes else None


def plan_msr_parcels(rng: random.Random, when: When) -> QuestionPlan:
    """X4 Y2: small print on several screenshots added up (items across parcels)."""
    k = rng.randint(2, 3)
    app, accent = rng.choice(W.APPS), rng.choice(W.COLOURS)
    counts = [rng.randint(1, 4) for _ in range(k)]
    sessions = []
    start = rng.randrange(4)  # the parcel lines' wordings, in turn (LINE_VARIANTS)
    for i, (items, d) in enumerate(zip(counts, when.days(rng, k), strict=True)):
        facts = {"app": app, "title": "Your parcel", "accent": accent, "fields": [
            ["Carrier", rng.choice(["SwiftPost", "ParcelOne", "BoxRoute"])],
            ["Status", "In transit"], ["Tracking", W.code(rng, "PK")], ["Items", str(items)]]}
        sessions.append(_evidence(chat_session(rng, inserts=[_needle(share_image(
            rng, "app_ui", facts, line=line("parcel", variant=start + i)))]), d))
    return QuestionPlan(
        family="msr_parcels", ability=Ability.MULTI_SESSION_REASONING, subtype="arithmetic",
        answer_type=AnswerType.INTEGER,
        question=f"Adding up the {app + ' ' if when.variant else ''}parcel screenshots I "
                 "shared, how many items are on their way to me in total?",
        answer=str(sum(counts)), labels=Labels(x="X4", y="Y2"), sessions=sessions,
        program={"op": "sum_field", "field": "Items"}, needed=[str(c) for c in counts],
        exclusive={tagged("app_ui:parcel", app, when)})


def solve_msr_parcels(program, images, texts):
    values = [int(v) for f in images for key, v in f.get("fields", []) if key == program["field"]]
    return str(sum(values)) if values else None


def _chain_days(rng: random.Random, when: When) -> list[float]:
    return when.days(rng, rng.randint(min(CHAIN_LENGTHS), max(CHAIN_LENGTHS)))


def _chain_line(rng: random.Random, when: When, chain: str, step: int, **slots: str,
                ) -> Phrase:
    """A Y3 chain's line: the export's (variants) from several; the family's own otherwise,
    each update in the next of the chain's wordings (no line more than twice an episode)."""
    if when.variant:
        return chain_line(rng, chain, step, **slots)
    first, updates = CHAINS[chain]
    return line(first if step == 0 else updates[(step - 1) % len(updates)], variant=0, **slots)


def plan_ku_scene(rng: random.Random, when: When) -> QuestionPlan:
    """X1 Y3: the table-top under one arrangement changes from photo to photo."""
    thing = rng.choice(_arranged(when))
    days = _chain_days(rng, when)
    backgrounds = _distinct_colours(rng, len(days))
    sessions = [_evidence(chat_session(rng, inserts=[_needle(share_image(
        rng, "scene", {**W.scene_facts(rng), "background": bg},
        line=line("arranged", variant=rng.randrange(4), thing=thing)))]), d)
        for bg, d in zip(backgrounds, days, strict=True)]
    return QuestionPlan(
        family="ku_scene", ability=Ability.KNOWLEDGE_UPDATE, subtype=None,
        answer_type=AnswerType.FREE_TEXT,
        question=f"I keep re-doing the table where I arrange the {thing}. What colour is "
                 "the table-top there now?",
        answer=backgrounds[-1], old_answers=backgrounds[:-1], labels=Labels(x="X1", y="Y3"),
        sessions=sessions, program={"op": "latest_background"},
        needed=[backgrounds[-1]], exclusive={f"arranged:{thing}"})


def solve_ku_scene(program, images, texts):
    scenes = [f for f in images if f.get("_kind") == "scene"]
    return scenes[-1]["background"] if scenes else None


def plan_ku_instance(rng: random.Random, when: When) -> QuestionPlan:
    """X3 Y3: which entity holds a role changes; its colour identifies the current one."""
    kind = rng.choice(["mug", "plant", "lamp", "bottle"])
    days = _chain_days(rng, when)
    bodies = _distinct_colours(rng, len(days))
    shots = [W.entity_identity(rng, kind) for _ in days]
    shots = [W.canonical_entity({**s, "body": b}) for s, b in zip(shots, bodies, strict=True)]
    sessions = [_evidence(chat_session(rng, inserts=[_needle(share_image(
        rng, "entity", shot, line=_chain_line(rng, when, "desk", i, kind=kind)))]), d)
        for i, (shot, d) in enumerate(zip(shots, days, strict=True))]
    return QuestionPlan(
        family="ku_instance", ability=Ability.KNOWLEDGE_UPDATE, subtype=None,
        answer_type=AnswerType.FREE_TEXT,
        question=f"What colour is the {kind} on my desk now?",
        answer=bodies[-1], old_answers=bodies[:-1], labels=Labels(x="X3", y="Y3"),
        sessions=sessions, program={"op": "latest_entity_body", "kind": kind},
        needed=[bodies[-1]], exclusive={f"entity:{kind}"})


def solve_ku_instance(program, images, texts):
    shots = [f for f in images if f.get("_kind") == "entity" and f["kind"] == program["kind"]]
    return shots[-1]["body"] if shots else None


def _respell(rng: random.Random, code: str, seen: set[str]) -> str:
    """``code`` with one or two digits changed: the next state differs in small print."""
    while True:
        digits = list(code)
        for i in rng.sample(range(len(digits)), rng.randint(1, 2)):
            digits[i] = rng.choice([d for d in "0123456789" if d != digits[i]])
        out = "".join(digits)
        if out not in seen:
            return out


def plan_ku_code(rng: random.Random, when: When) -> QuestionPlan:
    """X4 Y3: a code in small print is reset again and again; each differs by a digit or two."""
    days = _chain_days(rng, when)
    codes = [f"{rng.randint(0, 999999):06d}"]
    while len(codes) < len(days):
        codes.append(_respell(rng, codes[-1], set(codes)))
    locker = f"{rng.choice('ABCD')}{rng.randint(10, 99)}"
    place = LOCKERS[(when.variant - 1) % len(LOCKERS)] if when.variant else "gym"
    sessions = [_evidence(chat_session(rng, inserts=[_needle(share_image(
        rng, "app_ui", {"app": "FitLog", "title": "Locker", "accent": "teal",
                        "fields": [["Locker", locker], ["Code", c]]},
        line=_chain_line(rng, when, "locker", i, place=place)))]), d)
        for i, (c, d) in enumerate(zip(codes, days, strict=True))]
    return QuestionPlan(
        family="ku_code", ability=Ability.KNOWLEDGE_UPDATE, subtype=None,
        answer_type=AnswerType.FREE_TEXT, question=f"What is my {place} locker code now?",
        answer=codes[-1], old_answers=codes[:-1], labels=Labels(x="X4", y="Y3"),
        sessions=sessions, program={"op": "latest_field", "field": "Code"},
        needed=[codes[-1]], exclusive={tagged("app_ui:locker", place, when)})


@dataclass(frozen=True)
class Family:
    name: str
    plan: Callable[[random.Random, When], QuestionPlan]
    solve: Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]], str | None]


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("ie_entity", plan_ie_entity, solve_ie_entity),
    Family("ie_previnfo", plan_ie_previnfo, solve_ie_previnfo),
    Family("ie_scene", plan_ie_scene, solve_ie_scene),
    Family("msr_arithmetic", plan_msr_arithmetic, solve_msr_arithmetic),
    Family("msr_counting", plan_msr_counting, solve_msr_counting),
    Family("msr_entity", plan_msr_entity, solve_msr_entity),
    Family("tr_duration", plan_tr_duration, solve_tr_duration),
    Family("tr_order", plan_tr_order, solve_tr_order),
    Family("tr_date", plan_tr_date, solve_tr_date),
    Family("ku_update", plan_ku_update, solve_ku_update),
    Family("ie_instance", plan_ie_instance, solve_ie_instance),
    Family("msr_scenes", plan_msr_scenes, solve_msr_scenes),
    Family("msr_parcels", plan_msr_parcels, solve_msr_parcels),
    Family("ku_scene", plan_ku_scene, solve_ku_scene),
    Family("ku_instance", plan_ku_instance, solve_ku_instance),
    Family("ku_code", plan_ku_code, solve_ku_update),
]}
ANSWERABLE = tuple(FAMILIES)
# The default set (and the refusals' sources): the families before the grid was filled, so
# the default benchmark, its gates and its digest stay as they were; the others are asked
# for with --families, and --format memeye takes every family a 4-way choice can hold (0036).
DEFAULT_FAMILIES = ("ie_entity", "ie_previnfo", "ie_scene", "msr_arithmetic", "msr_counting",
                    "msr_entity", "tr_duration", "tr_order", "tr_date", "ku_update")
# Two-way answers (yes/no, A/B): no 4-option multiple choice with 4 rotations holds them.
TWO_WAY_FAMILIES = ("msr_entity", "tr_duration")
MEMEYE_FAMILIES = tuple(f for f in FAMILIES if f not in TWO_WAY_FAMILIES)
# Answer refusal: an answerable plan whose evidence sessions are left out of the history.
AR_FAMILY = "ar"


def evidence_facts(plan: QuestionPlan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(image facts, text facts) of a plan's evidence turns, as an oracle sees them."""
    images: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for session in plan.sessions:
        for turn in session.turns:
            if not any(f.get("needle") for f in turn.facts):
                continue
            texts += [f for f in turn.facts if not f.get("needle")]
            images += [{**facts, "_kind": kind} for kind, facts in turn.images]
    return images, texts


def with_image_dependency(plan: QuestionPlan) -> QuestionPlan:
    """The plan labelled by the facts its answer is computed from: its family's solver is
    run on the image facts alone and on the text facts alone. An answer that needs the
    images and not the text is ``essential``, one that needs both is ``mixed``, one that
    needs only text is ``text``."""
    images, texts = evidence_facts(plan)
    solver = FAMILIES[plan.family].solve
    if solver(plan.program, images, texts) != plan.answer:
        raise AssertionError(f"{plan.family}: the evidence does not give the answer")
    needs_images = solver(plan.program, [], texts) != plan.answer
    needs_texts = solver(plan.program, images, []) != plan.answer
    dep = ("mixed" if needs_images and needs_texts else "essential" if needs_images
           else "text")
    plan.labels = plan.labels.model_copy(update={"image_dependency": dep})
    return plan


def make_refusal(plan: QuestionPlan) -> QuestionPlan:
    """The answerable ``plan`` with its evidence left out; it keeps the source's labels (the
    modality of what is missing)."""
    plan = with_image_dependency(plan)
    return QuestionPlan(
        family=AR_FAMILY, ability=Ability.ANSWER_REFUSAL, subtype=None,
        answer_type=AnswerType.REFUSAL, question=plan.question, answer=REFUSAL,
        labels=plan.labels, sessions=[], decoys=plan.decoys,  # look-alikes stay: a trap
        program={"op": "refuse", "source_family": plan.family}, exclusive=plan.exclusive)


def solve(program: dict[str, Any], family: str, images: list[dict[str, Any]],
          texts: list[dict[str, Any]]) -> str:
    """The oracle's answer from visible facts; a refusal when they do not determine it."""
    if family == AR_FAMILY:
        return REFUSAL
    out = FAMILIES[family].solve(program, images, texts)
    return REFUSAL if out is None else out
