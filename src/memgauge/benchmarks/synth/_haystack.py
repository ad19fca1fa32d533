"""Haystack sessions: the same session generator, sharing decoy images of the same kinds.

Each haystack session carries ``keys`` naming what it mentions (a store, an entity kind, an
event); an episode skips pool sessions whose keys clash with its question, so no haystack
image can change a gold answer. Sessions draw their names from a :class:`~._world.World`:
the per-question layout's pool from ``BASE_WORLD``; a timeline's from the larger world
without its plans' keys, since many plans leave the base world's image talk mostly excluded.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from . import _world as W
from ._families import CHAIN_STYLE_LENGTHS, FAMILIES, When, base_key
from ._text import (
    TIMELINE_ARTICLE_REPLIES,
    SessionPlan,
    TurnPlan,
    chain_line,
    chat_session,
    limit_repeats,
    line,
    say,
    sentence_start,
    share_image,
)

HAYSTACK_APP_TITLES = [("FitLog", "Weekly steps",
                        [["Mon", "8,214"], ["Tue", "6,530"], ["Wed", "9,870"]]),
                       ("BankBee", "Balance", [["Current", "1,245.30"], ["Savings", "3,100.00"]]),
                       ("MediBook", "Next visit",
                        [["Clinic", "Elm Street"], ["Doctor", "Dr. Hale"]]),
                       ("RailGo", "Timetable",
                        [["From", "Central"], ["To", "Harbour"], ["Platform", "4"]])]
_BASE = date(2025, 1, 1)


def _day(rng: random.Random) -> date:
    return _BASE + timedelta(days=rng.randint(0, 364))


def decoy_image(rng: random.Random, kind: str, world: W.World = W.BASE_WORLD,
                ) -> tuple[dict[str, Any], set[str], str]:
    """(facts, keys, place) for a haystack image of ``kind``."""
    if kind == "receipt":
        store = rng.choice(world.stores)
        return W.receipt_facts(rng, store, str(_day(rng)),
                               rng.choice(W.CURRENCIES)), {f"store:{store}"}, store
    if kind == "ticket":
        event, venue = world.events[rng.randrange(len(world.events))]
        facts = {"event": event.removeprefix("the ").title(), "venue": venue,
                 "date": str(_day(rng)), "time": f"{rng.randint(10, 21):02d}:00",
                 "seat": f"{rng.choice('ABCDEFGH')}{rng.randint(1, 30)}",
                 "price": W.money(rng.randint(12, 90)), "currency": rng.choice(W.CURRENCIES),
                 "code": W.code(rng, "TK")}
        return facts, {f"event:{event}"}, venue
    if kind == "label":
        product = rng.choice(world.products)
        facts = {"product": product.title(), "brand": rng.choice(W.BRANDS),
                 "weight": f"{rng.choice([250, 400, 500])} g", "best_before": str(_day(rng)),
                 "lot": f"L{rng.randint(1000, 9999)}-{rng.randint(10, 99)}",
                 "colour": rng.choice(W.COLOURS)}
        return facts, {f"label:{product}"}, rng.choice(world.stores)
    if kind == "calendar":
        d = _day(rng)
        return ({"year": d.year, "month": d.month, "marked_day": d.day,
                 "marker_colour": rng.choice(["red", "blue", "green", "orange", "purple"])},
                set(), "")
    if kind == "schedule":
        rows = [{"time": f"{h:02d}:{rng.choice(['00', '15', '30', '45'])}",
                 "what": rng.choice(["Stand-up", "Lunch", "Gym", "Call with Sam", "Groceries",
                                     "Dentist", "Library", "Pick up parcel"])}
                for h in sorted(rng.sample(range(7, 21), rng.randint(2, 5)))]
        return {"title": rng.choice(["Saturday", "Tomorrow", "Monday plan"]),
                "rows": rows}, set(), ""
    if kind == "clock":
        return ({"hour": rng.randint(0, 23), "minute": rng.randint(0, 59),
                 "face_colour": rng.choice(W.COLOURS)}, set(), "")
    if kind == "chat":
        who = rng.choice(W.PEOPLE)
        msgs = [{"from": rng.choice(["me", "them"]),
                 "text": rng.choice(["Running late, sorry!", "See you at 7?", "Got the keys.",
                                     "Did you water the plants?", "Lunch tomorrow?", "On my way"]),
                 "time": f"{rng.randint(8, 22):02d}:{rng.randint(0, 59):02d}"}
                for _ in range(rng.randint(1, 4))]
        return {"app": "Chatter", "contact": who, "messages": msgs}, set(), ""
    if kind == "app_ui":
        app, title, fields = rng.choice(HAYSTACK_APP_TITLES)
        return {"app": app, "title": title, "fields": fields,
                "accent": rng.choice(W.COLOURS)}, set(), ""
    if kind == "scene":
        return W.scene_facts(rng), set(), ""
    if kind == "entity":
        ek = rng.choice(world.entity_kinds)
        facts = W.entity_identity(rng, ek)
        return facts, {f"entity:{ek}"}, ""
    raise ValueError(f"no decoy generator for image kind {kind!r}")


IMAGE_KINDS = ("receipt", "ticket", "label", "calendar", "schedule", "clock", "chat", "app_ui",
               "scene", "entity")
# Decoys shared with the same wording the question families use (with other fillers).
# Weighted like the evidence sessions they mirror: families with several evidence sessions
# (receipts, collection photos, tickets, parking spots) would otherwise make their lines a
# tell for evidence.
STYLE_WEIGHTS = {"label_morning": 1, "article": 1, "booking": 1, "parcel": 1, "parking": 4,
                 "collection": 4, "visitor": 1, "named": 1, "clock_pair": 2, "ticket": 3,
                 "calendar": 2, "arranged": 2, "receipt": 4}
# Worded like the MemEye export's variants (another vehicle, locker, desk object); open only
# in a timeline world that lists free subjects for them, so the default haystack is unchanged.
VARIANT_STYLES = ("parking_of", "locker", "desk", "booking_of", "parcel_of")
STYLED = (*STYLE_WEIGHTS, *VARIANT_STYLES)
MENTION_RATE = 0.75  # text-only fillers worded like an image session (image left out)
_PLACEHOLDER = re.compile(r"\s*<image>")


def _open_styles(world: W.World) -> tuple[str, ...]:
    """The styles ``world`` still has names for (all of them in the base world)."""
    needs = {"label_morning": world.products, "article": world.products,
             "booking": "booking" in world.screens, "parcel": "parcel" in world.screens,
             "parking": "parking" in world.screens, "collection": world.entity_kinds,
             "visitor": _pets(world), "named": _pets(world), "clock_pair": world.activities,
             "ticket": world.events, "calendar": world.appointments,
             "arranged": world.arranged, "receipt": world.stores,
             "parking_of": world.vehicles, "locker": world.lockers, "desk": world.desk_kinds,
             "booking_of": [a for s, a in world.app_screens if s == "booking"],
             "parcel_of": [a for s, a in world.app_screens if s == "parcel"]}
    return tuple(style for style in STYLED if needs[style])


def _open_kinds(world: W.World) -> tuple[str, ...]:
    needs = {"receipt": world.stores, "ticket": world.events, "label": world.products,
             "entity": world.entity_kinds}
    return tuple(kind for kind in IMAGE_KINDS if needs.get(kind, True))


def _pets(world: W.World) -> list[str]:
    return [k for k in ("cat", "dog") if k in world.entity_kinds]


def _chain_step(rng: random.Random, style: str) -> int:
    """Which image of an update chain a haystack session shares, as often as the export's
    chains share it: a chain's length drawn in proportion to its sessions, then a step.
    (Half first images, as before, left the update lines three times as frequent in
    evidence as in other sessions.)"""
    lengths = CHAIN_STYLE_LENGTHS[style]
    return rng.randrange(rng.choices(lengths, weights=lengths)[0])


def _styled(rng: random.Random, style: str, world: W.World = W.BASE_WORLD,
            ) -> tuple[list[list[TurnPlan]], set[str]]:
    """Insert groups for a haystack session worded like an evidence session."""
    if style == "label_morning":
        facts, keys, _ = decoy_image(rng, "label", world)
        return [share_image(rng, "label", facts, line=line(
            "label_morning", product=facts["product"].lower()))], keys
    if style == "article":
        product = rng.choice(world.products)
        pairs = list(zip(rng.sample(W.BRANDS, 3), rng.sample(W.ORIGINS, 3), strict=True))
        clauses = [f"{b} is based in {o}" for b, o in pairs]
        text = line("article", product=product, facts="; ".join(clauses))
        # The reply drawn as a timeline's ie_entity evidence draws it (one fixed reply was
        # an "other" line the evidence lacked, the line a timeline said most: design 0041).
        reply = TurnPlan("assistant", rng.choice(TIMELINE_ARTICLE_REPLIES),
                         wordings=TIMELINE_ARTICLE_REPLIES)
        return [[say("user", text, keep=tuple(clauses)), reply]], {f"label:{product}"}
    if style in ("booking", "parcel"):
        ref = W.code(rng, "BK" if style == "booking" else "PK")
        fields = ([["Hotel", rng.choice(world.stores)], ["Check-in", str(_day(rng))],
                   ["Guests", str(rng.randint(1, 4))], ["Reference", ref]] if style == "booking"
                  else [["Carrier", rng.choice(["SwiftPost", "ParcelOne", "BoxRoute"])],
                        ["Status", "In transit"], ["Tracking", ref], ["Items", "1"]])
        facts = {"app": rng.choice(W.APPS), "fields": fields, "accent": rng.choice(W.COLOURS),
                 "title": "Confirmation" if style == "booking" else "Your parcel"}
        share = line(style) if rng.random() < 0.5 else line(
            "someone_else", owner=rng.choice(W.OWNERS), what=style)
        return [share_image(rng, "app_ui", facts, line=share)], {f"app_ui:{style}"}
    if style == "parking":
        spot = rng.choice(W.SPOTS)
        facts = {"app": "ParkSmart", "title": "Parked", "accent": rng.choice(W.COLOURS),
                 "fields": [["Level", spot[0]], ["Bay", spot], ["Since", "09:15"]]}
        share = line(rng.choice(["parking_first", "parking_move"]), variant=rng.randrange(3))
        return [share_image(rng, "app_ui", facts, line=share)], {"app_ui:parking"}
    if style in ("booking_of", "parcel_of"):  # a screen of an app no plan names
        screen = style.removesuffix("_of")
        app = rng.choice([a for s, a in world.app_screens if s == screen])
        ref = W.code(rng, "BK" if screen == "booking" else "PK")
        fields = ([["Hotel", rng.choice(world.stores)], ["Check-in", str(_day(rng))],
                   ["Guests", str(rng.randint(1, 4))], ["Reference", ref]] if screen == "booking"
                  else [["Carrier", rng.choice(["SwiftPost", "ParcelOne", "BoxRoute"])],
                        ["Status", "In transit"], ["Tracking", ref],
                        ["Items", str(rng.randint(1, 4))]])
        facts = {"app": app, "fields": fields, "accent": rng.choice(W.COLOURS),
                 "title": "Confirmation" if screen == "booking" else "Your parcel"}
        # The export's evidence screens are all the user's own; someone else's are its
        # decoys, other sessions already (half of them here made that line a tell for them).
        share = line(screen)
        return [share_image(rng, "app_ui", facts, line=share)], {f"app_ui:{screen}#{app}"}
    if style == "parking_of":
        vehicle, spot = rng.choice(world.vehicles), rng.choice(W.SPOTS)
        facts = {"app": "ParkSmart", "title": "Parked", "accent": rng.choice(W.COLOURS),
                 "fields": [["Level", spot[0]], ["Bay", spot], ["Since", "09:15"]]}
        share = chain_line(rng, style, _chain_step(rng, style), vehicle=vehicle)
        return [share_image(rng, "app_ui", facts, line=share)], {f"app_ui:parking#{vehicle}"}
    if style == "locker":
        place = rng.choice(world.lockers)
        facts = {"app": "FitLog", "title": "Locker", "accent": "teal", "fields": [
            ["Locker", f"{rng.choice('ABCD')}{rng.randint(10, 99)}"],
            ["Code", f"{rng.randint(0, 999999):06d}"]]}
        share = chain_line(rng, style, _chain_step(rng, style), place=place)
        return [share_image(rng, "app_ui", facts, line=share)], {f"app_ui:locker#{place}"}
    if style == "desk":
        kind = rng.choice(world.desk_kinds)
        share = chain_line(rng, style, _chain_step(rng, style), kind=kind)
        return [share_image(rng, "entity", W.entity_identity(rng, kind), line=share)], {
            f"entity:{kind}"}
    if style in ("collection", "visitor", "named"):
        kind = rng.choice(_pets(world) if style != "collection" else world.entity_kinds)
        facts = W.entity_identity(rng, kind)
        share = line(style, variant=rng.randrange(4), kind=kind,
                     owner=sentence_start(rng.choice(W.OWNERS)), name=rng.choice(W.PET_NAMES))
        return [share_image(rng, "entity", facts, line=share)], {f"entity:{kind}"}
    if style == "clock_pair":
        act = rng.choice(world.activities)[0]
        start = rng.randint(7 * 60, 15 * 60)
        end = start + rng.randrange(35, 230, 5)
        colour = rng.choice(W.COLOURS)
        f1 = {"hour": start // 60, "minute": start % 60, "face_colour": colour}
        f2 = {"hour": end // 60, "minute": end % 60, "face_colour": colour}
        return [share_image(rng, "clock", f1, line=line("clock_start", activity=act)),
                share_image(rng, "clock", f2, line=line("clock_end", activity=act))], {
            f"activity:{act}"}
    if style == "ticket":
        facts, keys, _ = decoy_image(rng, "ticket", world)
        event = next(k for k in keys).removeprefix("event:")
        return [share_image(rng, "ticket", facts, line=line("ticket", event=event))], keys
    if style == "calendar":
        facts, _, _ = decoy_image(rng, "calendar")
        what = rng.choice(world.appointments)
        said = line("calendar", variant=rng.randrange(4), what=what)
        return [share_image(rng, "calendar", facts, line=said)], {
            f"what:{what}"}
    if style == "receipt":
        facts, keys, place = decoy_image(rng, "receipt", world)
        return [share_image(rng, "receipt", facts, place=place)], keys
    if style == "arranged":
        thing = rng.choice(world.arranged)
        return [share_image(rng, "scene", W.scene_facts(rng),
                            line=line("arranged", variant=rng.randrange(4), thing=thing))], {
            f"arranged:{thing}"}
    raise ValueError(f"unknown haystack style {style!r}")


def _image_inserts(rng: random.Random, world: W.World, weights: Mapping[str, float],
                   ) -> tuple[list[list[TurnPlan]], set[str]]:
    """The exchanges of a haystack session that shares images, and their keys."""
    if rng.random() < 0.75:
        styles = _open_styles(world)
        style = rng.choices(styles, weights=[weights[k] for k in styles])[0]
        return _styled(rng, style, world)
    kind = rng.choice(_open_kinds(world))
    facts, keys, place = decoy_image(rng, kind, world)
    return [share_image(rng, kind, facts, place=place or "the shop")], keys


def _without_images(groups: list[list[TurnPlan]]) -> list[list[TurnPlan]]:
    """The same exchanges with their images left out (as in a text-only chat export)."""
    return [[dataclasses.replace(t, text=_PLACEHOLDER.sub("", t.text).strip(), images=[])
             for t in group] for group in groups]


def haystack_session(rng: random.Random, *, with_image: bool, world: W.World = W.BASE_WORLD,
                     weights: Mapping[str, float] = STYLE_WEIGHTS,
                     ) -> tuple[SessionPlan, set[str]]:
    inserts: list[list[TurnPlan]] = []
    keys: set[str] = set()
    if with_image:
        inserts, keys = _image_inserts(rng, world, weights)
    elif rng.random() < MENTION_RATE:
        # A text-only filler that talks like an image session, its image left out: without
        # it, the share line and its reply alone tell evidence from fillers (design 0008).
        # Its keys keep it out of episodes whose question it could confuse.
        inserts, keys = _image_inserts(rng, world, weights)
        inserts = _without_images(inserts)
    session = chat_session(rng, inserts=inserts)
    session.role = "haystack" if with_image else "filler"
    return session, keys


# The most evidence sessions a default family's question has (msr_counting: 4 distinct
# entities and 2 repeats); a plan is kept with probability len(sessions) / this.
MAX_PLAN_SESSIONS = 6


def family_session(rng: random.Random, families: Sequence[str], *, with_image: bool,
                   ) -> tuple[SessionPlan, set[str]]:
    """A haystack session drawn exactly as an evidence session is: a question of one of
    ``families`` planned (as the benchmark plans its questions) and one of its evidence
    sessions taken, a plan kept in proportion to its sessions so that each family's
    sessions are as common here as among the evidence. Its words, subjects, share lines
    and lengths then follow the evidence's own distribution (the styled haystack only
    approximated it: seed 5 of issue 28 told evidence apart at AUC 0.600). Its keys are the
    plan's exclusive keys, so an episode whose question claims them leaves it out.

    Without an image (a text-only filler) the session keeps its words and drops its
    images: every evidence session talks about something shared, so a plain chat among
    the fillers would be a session the classifier could place (at 200 questions it did)."""
    while True:
        family = rng.choice(families)
        when = When(date(2025, 9, 1) + timedelta(days=rng.randint(0, 90)))
        plan = FAMILIES[family].plan(rng, when)
        if plan.sessions and rng.random() < len(plan.sessions) / MAX_PLAN_SESSIONS:
            break
    session = rng.choice(plan.sessions)
    for turn in session.turns:  # nothing here is a question's needle
        turn.facts = [f for f in turn.facts if not f.get("needle")]
    keys = {base_key(k) for k in plan.exclusive}
    # The family it was drawn as, for the gate's cross-validation folds (merge_by_family).
    session.meta = {"family": family}
    limit_repeats([session], rng)
    if with_image:
        session.role = "haystack"
    else:
        session = dataclasses.replace(session, turns=_without_images([session.turns])[0],
                                      role="filler")
    return session, keys
