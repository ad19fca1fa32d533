"""Name pools the question families draw from (stores, brands, events, people, values)."""

from __future__ import annotations

import random
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
    return {"store": store, "date": date, "time": f"{rng.randint(8, 20):02d}:{rng.randint(0, 59):02d}",
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
