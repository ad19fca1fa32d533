"""Name pools the question families draw from (stores, brands, events, people, values)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

STORES = ["Blue Fern Cafe", "Harbour Books", "Maple & Salt", "Corner Pantry", "Lumen Hardware",
          "Olive Tree Deli", "North Star Bakery", "Pebble Market", "Copper Kettle", "Green Basket",
          "Tidewater Grill", "Saffron House", "Juniper Florist", "Atlas Outdoor", "Velvet Noodle",
          "Orchard Lane Grocer"]
ITEMS = {
    "cafe": [("Latte", "4.50"), ("Espresso", "2.80"), ("Croissant", "3.20"), ("Bagel", "3.25"),
             ("Tea", "2.60"), ("Muffin", "3.10"), ("Sandwich", "6.90"), ("Juice", "4.20")],
    "shop": [("Notebook", "5.40"), ("Batteries", "7.99"), ("Tape", "3.49"), ("Candles", "8.25"),
             ("Soap", "2.95"), ("Socks", "9.50"), ("Pens", "4.10"), ("Light bulb", "6.75")],
    "food": [("Apples", "3.60"), ("Bread", "2.90"), ("Cheese", "6.40"), ("Coffee", "8.80"),
             ("Pasta", "1.95"), ("Tomatoes", "2.70"), ("Yoghurt", "1.85"), ("Olive oil", "9.30")],
}
CURRENCIES = ["USD", "EUR", "GBP", "DKK", "SEK"]
SYMBOL = {"USD": "$", "EUR": "€", "GBP": "£"}
BRANDS = ["Kestrel", "Mirabel", "Ostara", "Quillon", "Brightwater", "Halcyon", "Tamsin",
          "Verdant", "Solace", "Calloway", "Nimbus", "Fennick"]
PRODUCTS = ["green tea", "coffee beans", "granola", "honey", "olive oil", "dark chocolate",
            "hot sauce", "oat milk"]
ORIGINS = ["Darjeeling", "Kyoto", "Nairobi", "Oaxaca", "Tasmania", "Porto", "Bergen", "Hanoi",
           "Cusco", "Zanzibar", "Galway", "Nelson"]
EVENTS = ["the jazz concert", "the museum exhibition", "the football match", "the theatre play",
          "the food festival", "the comedy show", "the boat tour", "the planetarium show"]
VENUES = ["Riverside Hall", "City Museum", "North Stadium", "Old Playhouse", "Harbour Square",
          "Grand Theatre", "Pier 4", "Star Dome"]
APPS = ["TripNest", "StayWell", "RailGo", "ParkSmart", "FitLog", "BankBee", "MediBook"]
PEOPLE = ["Maya", "Tom", "Priya", "Jonas", "Aiko", "Leon", "Sara", "Omar", "Nina", "Felix"]
ACTIVITIES = [("baking bread", "the bread baking"), ("a hike", "the hike"),
              ("painting the fence", "the fence painting"), ("a bike ride", "the bike ride"),
              ("cleaning the garage", "the garage clean-up"), ("a board game", "the board game"),
              ("a pottery class", "the pottery class"), ("fixing the bike", "the bike repair")]
ENTITY_KINDS = ["mug", "cat", "dog", "plant", "bottle", "sneaker", "backpack", "lamp"]
COLOURS = ["red", "orange", "yellow", "green", "teal", "blue", "navy", "purple", "pink",
           "brown", "black", "white", "grey", "beige", "maroon", "olive"]
PATTERNS = ["none", "stripes", "dots", "zigzag"]
MARKS = ["none", "star", "heart", "moon", "bolt", "leaf"]
OWNERS = ["my sister", "my neighbour", "my friend Maya", "my cousin", "my colleague Tom",
          "my aunt"]
APPOINTMENTS = ["dentist appointment", "passport renewal", "piano recital", "car service",
                "moving day", "job interview", "eye test", "haircut"]
ARRANGED = ["toys", "magnets", "cookies", "game pieces", "stickers", "candles", "buttons"]
PET_NAMES = ["Biscuit", "Pepper", "Miso", "Juno", "Olive", "Rocket", "Tofu", "Ziggy"]
SPOTS = ["B12", "C07", "A03", "D21", "E15", "F02", "G18", "H09", "B04", "C22", "K11", "L05"]


# More names of the same sorts, for a timeline's haystack only: many plans on one timeline
# exclude most of the names above (their keys), and the haystack would lose its image talk.
MORE_STORES = ["Birch & Barley", "Silver Spoon Diner", "Quayside Books", "Marigold Market",
               "Foxglove Pharmacy", "Driftwood Cafe", "Cobalt Cycles", "Hearth Bakery",
               "Little Fig Grocer", "Granite Hardware", "Lantern Tea Room", "Meadow Sweets",
               "Red Door Pizzeria", "Willow Stationers", "Sunday Market Hall",
               "Pine Needle Outfitters"]
MORE_EVENTS = [("the opera night", "Opera House"), ("the poetry reading", "Garden Library"),
               ("the tennis final", "Court Arena"), ("the film premiere", "Regal Cinema"),
               ("the ballet", "Royal Ballet Hall"), ("the wine tasting", "Cellar Rooms"),
               ("the science fair", "Expo Centre"), ("the charity run", "Park Gates")]
MORE_PRODUCTS = ["maple syrup", "peanut butter", "rye crackers", "jasmine rice", "sea salt",
                 "apricot jam", "rooibos tea", "almond butter"]
MORE_ACTIVITIES = [("repotting the plants", "the plant repotting"), ("a swim", "the swim"),
                   ("washing the car", "the car wash"), ("a yoga class", "the yoga class"),
                   ("sorting the attic", "the attic sort-out"), ("a run", "the run"),
                   ("knitting a scarf", "the scarf knitting"), ("a chess game", "the chess game")]
MORE_APPOINTMENTS = ["vet visit", "tax meeting", "book club", "flu shot", "boiler check",
                     "school play", "wedding fitting", "driving lesson"]
MORE_ARRANGED = ["shells", "pebbles", "marbles", "coasters", "ornaments", "dice", "beads"]
MORE_ENTITY_KINDS = ["vase", "teapot", "hat", "umbrella", "cushion", "jar"]  # render knows them
# Subjects only the MemEye export's haystack names (0036): with the plans' free ones alone
# (one vehicle, one locker, two arrangements left), one name was in every haystack chain
# line and in no evidence, a tell for the other sessions; these spread the lines over about
# as many subjects as the plans' chains use.
HAYSTACK_VEHICLES = ("scooter", "truck", "minibus")
HAYSTACK_LOCKERS = ("library", "station", "sports hall")
HAYSTACK_ARRANGED = ("keys", "coins", "spoons", "pens", "stones")
SCREENS = ("booking", "parcel", "parking")  # the app screenshots a question can be about


@dataclass(frozen=True)
class World:
    """The names haystack sessions draw from. Each name is a key (``store:<name>``, ...);
    :meth:`without` drops the names a question holds exclusively, so a haystack drawn from
    what is left never clashes with it and still talks about images (0029)."""

    stores: tuple[str, ...]
    events: tuple[tuple[str, str], ...]  # (event, venue)
    products: tuple[str, ...]
    entity_kinds: tuple[str, ...]
    activities: tuple[tuple[str, str], ...]  # (activity, how a question refers to it)
    appointments: tuple[str, ...]
    arranged: tuple[str, ...]
    screens: tuple[str, ...] = SCREENS
    # Subjects the MemEye export's variants name (0036), free for the haystack only when the
    # timeline's plans claim some of them by tag: empty in the default worlds.
    vehicles: tuple[str, ...] = ()
    lockers: tuple[str, ...] = ()
    desk_kinds: tuple[str, ...] = ()
    app_screens: tuple[tuple[str, str], ...] = ()  # (booking | parcel, app)

    def without(self, keys: set[str]) -> World:
        return replace(
            self,
            stores=tuple(v for v in self.stores if f"store:{v}" not in keys),
            events=tuple(e for e in self.events if f"event:{e[0]}" not in keys),
            products=tuple(v for v in self.products if f"label:{v}" not in keys),
            entity_kinds=tuple(v for v in self.entity_kinds if f"entity:{v}" not in keys),
            activities=tuple(a for a in self.activities if f"activity:{a[0]}" not in keys),
            appointments=tuple(v for v in self.appointments if f"what:{v}" not in keys),
            arranged=tuple(v for v in self.arranged if f"arranged:{v}" not in keys),
            screens=tuple(v for v in self.screens if f"app_ui:{v}" not in keys),
            desk_kinds=tuple(v for v in self.desk_kinds if f"entity:{v}" not in keys))


BASE_WORLD = World(stores=tuple(STORES), events=tuple(zip(EVENTS, VENUES, strict=True)),
                   products=tuple(PRODUCTS), entity_kinds=tuple(ENTITY_KINDS),
                   activities=tuple(ACTIVITIES), appointments=tuple(APPOINTMENTS),
                   arranged=tuple(ARRANGED))
LARGE_WORLD = replace(
    BASE_WORLD, stores=(*BASE_WORLD.stores, *MORE_STORES),
    entity_kinds=(*BASE_WORLD.entity_kinds, *MORE_ENTITY_KINDS),
    events=(*BASE_WORLD.events, *MORE_EVENTS), products=(*BASE_WORLD.products, *MORE_PRODUCTS),
    activities=(*BASE_WORLD.activities, *MORE_ACTIVITIES),
    appointments=(*BASE_WORLD.appointments, *MORE_APPOINTMENTS),
    arranged=(*BASE_WORLD.arranged, *MORE_ARRANGED))


def scene_facts(rng: random.Random) -> dict[str, Any]:
    cells = rng.sample([(c, r) for c in range(4) for r in range(3)], rng.randint(2, 6))
    objs = [{"shape": rng.choice(["circle", "square", "triangle", "star", "heart"]),
             "colour": rng.choice(COLOURS), "col": c, "row": r,
             "size": rng.choice(["small", "large"])} for c, r in cells]
    return {"background": rng.choice(COLOURS), "objects": objs}


def money(value: float) -> str:
    return f"{value:.2f}"


def fmt_amount(amount: str, currency: str) -> str:
    sym = SYMBOL.get(currency)
    return f"{sym}{amount}" if sym else f"{amount} {currency}"


def receipt_facts(rng: random.Random, store: str, date: str, currency: str) -> dict[str, Any]:
    pool = ITEMS[rng.choice(sorted(ITEMS))]
    chosen = rng.sample(pool, rng.randint(2, 4))
    items = [{"name": n, "qty": rng.randint(1, 3), "price": p} for n, p in chosen]
    cents = sum(round(float(i["price"]) * 100) * i["qty"] for i in items)
    return {"store": store, "date": date,
            "time": f"{rng.randint(8, 20):02d}:{rng.randint(0, 59):02d}",
            "items": items, "currency": currency, "total": money(cents / 100),
            "payment": f"VISA ****{rng.randint(1000, 9999)}"}


def entity_identity(rng: random.Random, kind: str) -> dict[str, Any]:
    body = rng.choice(COLOURS)
    return canonical_entity({
        "kind": kind, "body": body, "pattern": rng.choice(PATTERNS),
        "pattern_colour": rng.choice([c for c in COLOURS if c != body]),
        "mark": rng.choice(MARKS), "mark_colour": rng.choice(COLOURS)})


def canonical_entity(facts: dict[str, Any]) -> dict[str, Any]:
    """An absent pattern or mark has no visible colour: pin it, so facts hold only what is
    drawn (two identities never differ in an invisible attribute)."""
    out = dict(facts)
    if out["pattern"] == "none":
        out["pattern_colour"] = out["body"]
    if out["mark"] == "none":
        out["mark_colour"] = "black"
    return out


def identity_key(facts: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(facts.get(k) for k in ("kind", "body", "pattern", "pattern_colour", "mark",
                                        "mark_colour", "name_tag"))


def code(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.randint(10000, 99999)}"
