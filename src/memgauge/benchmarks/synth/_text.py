"""Conversation text: one session generator for evidence and haystack alike.

Evidence and haystack sessions come from the same topics, lengths and turn templates; a
session that carries a needle differs only in which image it shares and what the user says
about it (indirectly, never restating the image's content). That keeps evidence sessions
indistinguishable from haystack ones by construction.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

TOPICS: dict[str, dict[str, list[str]]] = {
    "travel": {
        "user": [
            "I'm thinking about a long weekend in {city}. Is {month} a good time to go?",
            "We finally booked the trip to {city}. What should we not miss there?",
            "How do I keep my luggage light for a {n}-day trip?",
            "Is it worth renting a car in {city}, or is public transport fine?",
            "My flight to {city} leaves early. Any tips for sleeping before a dawn departure?",
            "What's a good way to spend a rainy afternoon in {city}?",
        ],
        "assistant": [
            "{city} in {month} is usually pleasant; mornings can be cool, so pack a light layer.",
            "I'd plan one slow day for wandering the old town and one for a day trip nearby.",
            "Rolling your clothes and limiting yourself to two pairs of shoes saves a lot of space.",
            "Public transport there is reliable; a car mostly helps for the countryside.",
            "Museums and covered markets are good bets; many have late opening on weekends.",
            "Set out everything the night before and keep your documents in one pocket.",
        ],
    },
    "cooking": {
        "user": [
            "I want to try making {dish} this week. Any advice for a beginner?",
            "My {dish} came out a bit dry last time. What did I do wrong?",
            "Can I prepare {dish} a day ahead and reheat it?",
            "What goes well with {dish} as a side?",
            "I'm cooking for {n} people on Saturday. How much {ingredient} should I buy?",
        ],
        "assistant": [
            "Start with a simple version and taste as you go; seasoning late is easier to fix.",
            "Dryness usually comes from a little too much heat or time; try lowering the oven.",
            "Most stews and bakes reheat well, often better the next day.",
            "A crisp salad with a sharp dressing balances something rich.",
            "Plan on a generous handful per person and a little extra for seconds.",
        ],
    },
    "shopping": {
        "user": [
            "I keep buying things on impulse. How do I stop?",
            "Is it better to buy {item} online or in a shop?",
            "I picked up a few things at {store} today.",
            "Do you think {store} is more expensive than the market down the road?",
            "I'm trying to track what I spend on small things this month.",
        ],
        "assistant": [
            "A 24-hour rule helps: if you still want it tomorrow, it's probably worth it.",
            "Shops let you check the quality; online is easier for comparing prices.",
            "Keeping the receipts makes it much easier to see where the money goes.",
            "Prices vary by item; staples are often cheaper at markets, brands at chains.",
            "A simple note with date, place and amount is enough to spot patterns.",
        ],
    },
    "pets": {
        "user": [
            "My neighbour asked me to look after their {pet} for a few days.",
            "How often should a {pet} go to the vet for a check-up?",
            "We are thinking about adopting a {pet}. Is it a lot of work?",
            "The {pet} keeps waking me up at night. Any ideas?",
            "What's a good toy for a bored {pet}?",
        ],
        "assistant": [
            "Ask them for the feeding routine and the vet's number before they leave.",
            "Once a year is typical for a healthy adult; more often when they get older.",
            "It is a commitment, but a steady routine makes it much easier.",
            "A late play session and a consistent bedtime often help a lot.",
            "Puzzle feeders and anything they can chase tend to be favourites.",
        ],
    },
    "plants": {
        "user": [
            "My balcony gets a lot of afternoon sun. What should I grow there?",
            "The leaves on one of my plants are turning yellow.",
            "How often should I water houseplants in {month}?",
            "I repotted a few plants this weekend.",
            "Are there plants that survive if I forget to water them?",
        ],
        "assistant": [
            "Herbs like rosemary and thyme love sun and forgive a dry spell.",
            "Yellow leaves often mean too much water; let the soil dry out a bit.",
            "Check the soil with a finger; water when the top few centimetres are dry.",
            "Give them a week out of direct sun while the roots settle.",
            "Snake plants and succulents are famously hard to kill.",
        ],
    },
    "fitness": {
        "user": [
            "I started running again after a long break. How far should I go at first?",
            "My knees hurt after long walks. Should I worry?",
            "What's a good warm-up before {activity}?",
            "I want to be able to do {activity} for an hour by summer.",
            "Is it fine to train every day?",
        ],
        "assistant": [
            "Short and easy is best at first; build up by about ten percent a week.",
            "Good shoes and a gentler surface help; see someone if it persists.",
            "Five minutes of easy movement and a few dynamic stretches is plenty.",
            "Add a little time each week and keep one day easy.",
            "Light days count; hard sessions need a rest day after them.",
        ],
    },
    "work": {
        "user": [
            "I have a presentation on {weekday}. How do I keep it short?",
            "My inbox is out of control after the holidays.",
            "How do I ask my manager for a day off at short notice?",
            "I keep getting distracted in the afternoons.",
            "We're moving offices next month and I have to pack my desk.",
        ],
        "assistant": [
            "Pick three points and cut everything that doesn't support them.",
            "Sort by sender first, archive anything older than a month, then reply in batches.",
            "Be direct about the date and mention how your work will be covered.",
            "A short walk after lunch and one clear task per hour can help.",
            "Label the boxes by what you need first, not by where things were.",
        ],
    },
    "home": {
        "user": [
            "A tap in the kitchen keeps dripping. Can I fix it myself?",
            "We're repainting the living room. Any tips?",
            "How do I get rid of the damp smell in a cupboard?",
            "I finally cleared out the garage this weekend.",
            "What's the easiest way to keep the fridge organised?",
        ],
        "assistant": [
            "Usually it's a worn washer; turn the water off at the valve first.",
            "Tape the edges well and do two thin coats rather than one thick one.",
            "Air it out, wipe with diluted vinegar and leave a bowl of baking soda.",
            "Great job. Keeping one shelf empty makes it easier to stay tidy.",
            "Group by type and put what expires first at the front.",
        ],
    },
    "events": {
        "user": [
            "I'm going to see a {genre} concert soon and I'm really excited.",
            "Have you heard of the {genre} festival this year?",
            "I bought tickets for something fun next month.",
            "Do you think it's worth paying for better seats?",
            "What should I bring to an outdoor event?",
        ],
        "assistant": [
            "That sounds fun. Arriving early usually means shorter queues.",
            "It's popular; people say the evening sets are the best.",
            "Nice! Keep the ticket somewhere safe so you can find it on the day.",
            "For a show you care about, a better view often makes the evening.",
            "Water, a light jacket and a charged phone cover most things.",
        ],
    },
    "family": {
        "user": [
            "My {relative} is visiting next weekend. What could we do together?",
            "It's my {relative}'s birthday soon and I have no idea what to get.",
            "I had a long call with my {relative} yesterday.",
            "We're planning a small family dinner.",
            "My {relative} gave me something nice last week.",
        ],
        "assistant": [
            "A relaxed lunch and a walk somewhere new is hard to beat.",
            "Something tied to a shared memory tends to land well.",
            "It's lovely to stay in touch like that.",
            "Keep the menu simple so you can enjoy the evening too.",
            "That's thoughtful of them.",
        ],
    },
}

FOLLOW_USER = [
    "That makes sense, thanks.", "Good point, I hadn't thought of that.",
    "Okay, I'll try that this week.", "Do you have any other suggestions?",
    "What would you do in my place?", "Interesting. How long does that usually take?",
    "I'll let you know how it goes.", "Is there anything I should avoid?",
]
FOLLOW_ASSISTANT = [
    "Happy to help. Small steps add up.", "It usually takes a couple of tries to get right.",
    "I'd keep it simple to begin with and adjust from there.",
    "Avoid rushing it; most problems come from doing too much at once.",
    "Keeping a short note of what worked will save you time next time.",
    "That's a sensible plan.",
]
SLOTS: dict[str, list[str]] = {
    "city": ["Lisbon", "Kyoto", "Valencia", "Oslo", "Porto", "Tallinn", "Bologna", "Ghent",
             "Seville", "Bergen", "Krakow", "Lyon", "Nara", "Graz"],
    "month": ["March", "April", "May", "June", "September", "October", "November"],
    "n": ["3", "4", "5", "6", "8"],
    "dish": ["lasagne", "a lentil curry", "banana bread", "risotto", "a fish pie",
             "shakshuka", "dumplings", "a tarte tatin"],
    "ingredient": ["rice", "pasta", "potatoes", "cheese", "bread"],
    "item": ["running shoes", "a desk lamp", "headphones", "a rain jacket", "a kettle"],
    "store": ["the corner shop", "the market", "the big supermarket", "the bakery"],
    "pet": ["cat", "dog", "rabbit", "parrot"],
    "activity": ["swimming", "cycling", "yoga", "rowing", "climbing"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "genre": ["jazz", "folk", "indie", "classical", "electronic"],
    "relative": ["sister", "brother", "cousin", "aunt", "uncle", "grandmother"],
}

# What a user says when sharing an image of each kind: indirect, never the content itself.
SHARE_LINES: dict[str, list[str]] = {
    "receipt": ["Here's the receipt from {place} today <image>", "Kept the receipt from {place} <image>",
                "Just got back from {place}, receipt attached <image>"],
    "ticket": ["Look what I just booked <image>", "Tickets are sorted <image>",
               "Got my ticket for {place} <image>"],
    "label": ["This is the one I picked up <image>", "Found this at {place} <image>",
              "Trying this one now <image>"],
    "calendar": ["I marked it on my calendar <image>", "Put it in the calendar <image>"],
    "schedule": ["Here's the plan for the day <image>", "This is what the day looks like <image>"],
    "clock": ["Quick photo of the clock <image>", "Checking the time <image>"],
    "chat": ["Look at this message I got <image>", "Screenshot of the chat <image>"],
    "app_ui": ["Here's a screenshot from the app <image>", "This is what the app shows <image>"],
    "scene": ["This is how the table looks right now <image>", "Photo of the shelf <image>"],
    "entity": ["Look at this <image>", "Here's a photo <image>", "Snapped this earlier <image>"],
}
# Lines that tie an image to something a question asks about. Evidence and haystack draw
# from the same templates (haystack with other fillers), so wording never marks evidence.
LINES: dict[str, str] = {
    "label_morning": "This is the {product} I've been having every morning <image>",
    "article": "I read an article about {product} makers: {facts}.",
    "booking": "Finally booked somewhere to stay, here's the confirmation <image>",
    "parcel": "My parcel is on its way, screenshot from the app <image>",
    "parking_first": "Parked the car, saving the spot <image>",
    "parking_move": "Had to move the car again, new spot <image>",
    "parking_first_of": "Parked the {vehicle}, saving the spot <image>",
    "parking_move_of": "Had to move the {vehicle} again, new spot <image>",
    "collection": "Another photo for my {kind} collection <image>",
    "visitor": "{owner} came over today and brought their {kind} along <image>",
    "named": "This is {name}, the {kind} from down the street <image>",
    "clock_start": "Starting {activity} now <image>",
    "clock_end": "Finished {activity} <image>",
    "ticket": "Got tickets for {event} <image>",
    "calendar": "I marked the day of my {what} <image>",
    "arranged": "Here's how I arranged the {thing} on the table <image>",
    "someone_else": "Screenshot of {owner}'s {what} from the same app <image>",
    "desk_first": "This is the {kind} that sits on my desk these days <image>",
    "desk_swap": "Swapped the {kind} on my desk for another one <image>",
    "locker_first": "Got a locker at the {place}, here's the app screen <image>",
    "locker_change": "The {place} reset my locker code again <image>",
    # the MemEye export's update chains say an update in one of several ways (see CHAINS)
    "parking_move_of_bay": "Moved the {vehicle} to another bay today <image>",
    "parking_move_of_spot": "The {vehicle} is in a different spot now <image>",
    "locker_change_new": "New code for my {place} locker, here's the app screen <image>",
    "locker_change_today": "Changed the code on my {place} locker today <image>",
    "desk_swap_new": "There's a different {kind} on my desk now <image>",
    "desk_swap_replaced": "Replaced the {kind} on my desk this week <image>",
}
# The MemEye export's update chains (0036): the first image's line, then each update's from
# several. With one update line, its words ("again") were in most of a chain's sessions and
# in few others: a tell for evidence. The haystack draws its lines through the same table.
CHAINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "parking_of": ("parking_first_of",
                   ("parking_move_of", "parking_move_of_bay", "parking_move_of_spot")),
    "locker": ("locker_first", ("locker_change", "locker_change_new", "locker_change_today")),
    "desk": ("desk_first", ("desk_swap", "desk_swap_new", "desk_swap_replaced")),
}
class Phrase(str):
    """Text with the phrases an optional LLM naturaliser must keep verbatim."""

    keep: tuple[str, ...] = ()


def line(template_name: str, /, **slots: str) -> Phrase:
    """``LINES[template_name]`` filled in; the slot values it uses are phrases to keep."""
    template = LINES[template_name]
    phrase = Phrase(template.format(**slots))
    phrase.keep = tuple(str(v) for k, v in slots.items() if "{" + k + "}" in template)
    return phrase


def chain_line(rng: random.Random, chain: str, step: int, /, **slots: str) -> Phrase:
    """The line of a ``chain`` (a key of ``CHAINS``) sharing its ``step``-th image (0: the first)."""
    first, updates = CHAINS[chain]
    return line(first if step == 0 else rng.choice(updates), **slots)


SHARE_REPLIES = [
    "Thanks for sharing, I've got it.", "Nice, thanks for the photo.", "Got it, thanks.",
    "Thanks, that's clear.", "Noted, thanks for sending it over.",
]


def _fill(template: str, rng: random.Random, extra: dict[str, str] | None = None) -> str:
    values = {k: rng.choice(v) for k, v in SLOTS.items()}
    if extra:
        values.update(extra)
    return template.format(**values)


@dataclass
class TurnPlan:
    role: str
    text: str
    images: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (kind, facts)
    facts: list[dict[str, Any]] = field(default_factory=list)  # text facts, for oracles
    keep: tuple[str, ...] = ()  # phrases a naturaliser must not touch


@dataclass
class SessionPlan:
    topic: str
    turns: list[TurnPlan]
    role: str = "haystack"  # evidence | haystack | filler
    meta: dict[str, Any] = field(default_factory=dict)


def chat_session(rng: random.Random, *, topic: str | None = None, n_exchanges: int | None = None,
                 inserts: list[list[TurnPlan]] | None = None) -> SessionPlan:
    """A topical user/assistant session; ``inserts`` are turn groups (e.g. a shared image and
    its reply) placed at random exchange boundaries, in the given order."""
    topic = topic or rng.choice(sorted(TOPICS))
    bank = TOPICS[topic]
    n = n_exchanges if n_exchanges is not None else rng.randint(3, 6)
    turns: list[TurnPlan] = []
    for i in range(n):
        if i == 0:
            user = _fill(rng.choice(bank["user"]), rng)
            reply = _fill(rng.choice(bank["assistant"]), rng)
        else:
            user = rng.choice(FOLLOW_USER) if rng.random() < 0.5 else _fill(rng.choice(bank["user"]), rng)
            reply = rng.choice(FOLLOW_ASSISTANT) if rng.random() < 0.5 else _fill(
                rng.choice(bank["assistant"]), rng)
        turns.append(TurnPlan("user", user))
        turns.append(TurnPlan("assistant", reply))
    if inserts:
        # Insert after whole exchanges (keeps user/assistant alternation), in the given
        # order: the slots are sorted and filled from the last so indices stay valid.
        slots = sorted(rng.choice(range(2, len(turns) + 1, 2)) for _ in inserts)
        for pos, group in sorted(zip(slots, range(len(inserts)), strict=True), reverse=True):
            turns[pos:pos] = inserts[group]
    return SessionPlan(topic=topic, turns=turns)


def share_image(rng: random.Random, kind: str, facts: dict[str, Any], *, line: str | None = None,
                place: str = "the shop", text_facts: list[dict[str, Any]] | None = None,
                reply: str | None = None) -> list[TurnPlan]:
    """A user turn sharing an image (with an indirect line) and the assistant's reply."""
    if line is not None:
        text, keep = line, tuple(getattr(line, "keep", ()))
    else:
        text = rng.choice(SHARE_LINES[kind]).format(place=place)
        keep = (place,) if place in text else ()
    if "<image>" not in text:
        text = f"{text} <image>"
    return [TurnPlan("user", str(text), images=[(kind, facts)], facts=list(text_facts or []),
                     keep=keep),
            TurnPlan("assistant", reply or rng.choice(SHARE_REPLIES))]


def say(role: str, text: str, facts: list[dict[str, Any]] | None = None,
        keep: tuple[str, ...] = ()) -> TurnPlan:
    return TurnPlan(role, str(text), facts=list(facts or []),
                    keep=tuple(keep) + tuple(getattr(text, "keep", ())))
