"""Paper documents: receipt, ticket, label, calendar, schedule.

All are drawn as a sheet lying on a desk surface; a variant moves/rotates the sheet slightly,
changes the desk, the lighting and the paper noise, never the printed content.
"""

from __future__ import annotations

import calendar as _cal
import copy
import datetime as _dt
import random
from typing import Any

from ._base import (
    PALETTE,
    Frame,
    KindSpec,
    Presentation,
    _fail,
    alternative_name,
    change_chars,
    check_colour,
    check_currency,
    check_date,
    check_int,
    check_money,
    check_str,
    check_time,
    close_colour,
    far_colour,
    heart_points,
    ink_for,
    mix,
    money_display,
    other_choice,
    photo_of,
    register,
    regular_polygon,
    replaced,
    require,
    shade,
    stable_index,
    star_points,
)

INK = (34, 34, 38)
GREY = (120, 120, 124)
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
WEEKDAYS = ("Mo", "Tu", "We", "Th", "Fr", "Sa", "Su")


def _minute_two_chars(hhmm: str, rng: random.Random) -> str:
    """Same hour, both minute digits changed."""
    h, m = hhmm.split(":")
    opts = [f"{t:02d}" for t in range(60) if f"{t:02d}"[0] != m[0] and f"{t:02d}"[1] != m[1]]
    return f"{h}:{rng.choice(opts)}"


def _minute_one_char(hhmm: str, rng: random.Random) -> str:
    h, m = hhmm.split(":")
    return f"{h}:{m[0]}{rng.choice([d for d in '0123456789' if d != m[1]])}"


def _logo(fr: Frame, logo: str, cx: float, cy: float, r: float, fill) -> None:
    if logo == "circle":
        fr.ellipse(cx, cy, r, r, fill=fill)
    elif logo == "square":
        fr.rect(cx - r * 0.85, cy - r * 0.85, cx + r * 0.85, cy + r * 0.85, fill=fill)
    elif logo == "triangle":
        fr.polygon(regular_polygon(cx, cy + r * 0.15, r * 1.1, 3), fill=fill)
    elif logo == "star":
        fr.polygon(star_points(cx, cy, r * 1.1), fill=fill)
    elif logo == "heart":
        fr.polygon(heart_points(cx, cy, r), fill=fill)
    elif logo == "diamond":
        fr.polygon(regular_polygon(cx, cy, r * 1.1, 4), fill=fill)


# ============================================================================================
# receipt

RECEIPT_PAPERS = (("white", (252, 252, 250)), ("cream", (250, 242, 222)),
                  ("pale yellow", (252, 247, 196)), ("pale blue", (230, 240, 252)),
                  ("pale pink", (252, 232, 236)), ("pale green", (230, 246, 228)))
RECEIPT_ACCENTS = ("red", "orange", "green", "teal", "blue", "navy", "purple", "maroon",
                   "brown", "black")
RECEIPT_LOGOS = ("circle", "square", "triangle", "star", "heart", "diamond")
RECEIPT_FOOTER = "THANK YOU - PLEASE COME AGAIN"
STORE_POOL = ("Blue Fern Cafe", "Harbour Books", "Maple & Salt", "Corner Pantry",
              "Lumen Hardware", "Olive Tree Deli", "North Star Bakery", "Pebble Market",
              "Copper Kettle", "Green Basket", "Tidewater Grill", "Saffron House")
ITEM_POOL = ("Latte", "Espresso", "Croissant", "Bagel", "Tea", "Muffin", "Sandwich", "Juice",
             "Notebook", "Batteries", "Tape", "Candles", "Soap", "Socks", "Pens", "Apples",
             "Bread", "Cheese", "Coffee", "Pasta", "Tomatoes", "Yoghurt", "Scone", "Cookie")
CURRENCY_POOL = ("USD", "EUR", "GBP", "DKK", "SEK", "NOK", "CHF")
PAYMENT_POOL = ("VISA", "MASTERCARD", "AMEX", "DEBIT", "CASH")


def receipt_theme(store: str) -> tuple[str, tuple[int, int, int], str, str]:
    """(paper name, paper rgb, accent palette name, logo) - a function of the store only."""
    pname, prgb = RECEIPT_PAPERS[stable_index("paper:" + store, len(RECEIPT_PAPERS))]
    accent = RECEIPT_ACCENTS[stable_index("accent:" + store, len(RECEIPT_ACCENTS))]
    logo = RECEIPT_LOGOS[stable_index("logo:" + store, len(RECEIPT_LOGOS))]
    return pname, prgb, accent, logo


def _validate_receipt(f: dict[str, Any]) -> None:
    k = "receipt"
    require(k, f, ("store", "date", "time", "items", "currency", "total"))
    check_str(k, "store", f["store"])
    check_date(k, "date", f["date"])
    check_time(k, "time", f["time"])
    items = f["items"]
    if not isinstance(items, list) or not items:
        _fail(k, "items", "must be a non-empty list")
    for it in items:
        if not isinstance(it, dict):
            _fail(k, "items", f"entries must be dicts, got {it!r}")
        for key in ("name", "qty", "price"):
            if key not in it:
                _fail(k, "items", f"entry is missing {key!r}: {it!r}")
        check_str(k, "items", it["name"])
        check_int(k, "items", it["qty"], 1, 999)
        check_money(k, "items", it["price"])
    check_currency(k, "currency", f["currency"])
    check_money(k, "total", f["total"])
    if "payment" in f and f["payment"] is not None:
        check_str(k, "payment", f["payment"])


def _receipt_lines(f):
    return [(f"{it['qty']} x {it['name']}", f"@ {it['price']}") for it in f["items"]]


def _draw_receipt(f: dict[str, Any], size, pres: Presentation):
    fr = Frame.canvas(size)
    _pname, paper, accent, logo = receipt_theme(f["store"])
    acc = PALETTE[accent]
    lines = _receipt_lines(f)
    n = len(lines)
    pad = 12.0
    total_txt = money_display(f["total"], f["currency"])
    payment = f.get("payment")
    # the largest item font (>= 11 px at 384x288) whose layout fits on the canvas; every
    # other metric scales with it (``g``)
    for item_size, lh in ((16.0, 19.0), (15.0, 18.0), (14.0, 17.0), (13.0, 16.0), (12.0, 15.0),
                          (11.0, 13.0)):
        g = item_size / 12.0
        need = max(fr.tw(a, item_size) + fr.tw(b, item_size) + 18 for a, b in lines)
        need = max(need, fr.tw(f["store"], 15 * g) + 44 * g,
                   fr.tw("TOTAL", 14 * g) + fr.tw(total_txt, 14 * g) + 24,
                   fr.tw(RECEIPT_FOOTER, 9 * g) + 8)
        if payment:
            need = max(need, fr.tw(f"PAID {payment}", 11 * g) + 8)
        pw = max(196.0 * g, need + 2 * pad)
        ph = (44 * g + 14 * g + 10 + n * lh + 8 + 20 * g
              + (15 * g if payment else 0) + 16 * g + 6)
        if pw <= 350 and ph <= 266:
            break
    else:
        if pw > 350:
            _fail("receipt", "items", "has an item line too long to print legibly")
        _fail("receipt", "items", f"has too many entries ({n}) to fit legibly on the receipt")
    x0 = 192 - pw / 2
    y0 = 144 - ph / 2
    x1, y1 = x0 + pw, y0 + ph
    # shadow + paper with a torn (zigzag) bottom edge
    teeth = max(6, int(pw // 8))
    tw_ = pw / teeth
    edge = [(x1, y1 - 4)]
    for i in range(teeth, -1, -1):
        edge.append((x0 + i * tw_, y1 - (0 if i % 2 else 4)))
    body = [(x0, y0), (x1, y0), *edge, (x0, y1 - 4)]
    fr.polygon([(x + 3, y + 3) for x, y in body], fill=(0, 0, 0, 60))
    fr.polygon(body, fill=paper)
    y = y0 + 8 * g
    # header band
    bh = 28 * g
    fr.rect(x0 + 6, y, x1 - 6, y + bh, fill=acc, radius=3)
    hink = ink_for(acc)
    _logo(fr, logo, x0 + 6 + 14 * g, y + bh / 2, 8 * g, hink)
    hs = fr.fit_size(f["store"], 15 * g, pw - 12 - 34 * g, 9)
    fr.text((x0 + 6 + 28 * g + x1 - 6) / 2, y + bh / 2, f["store"], hs, hink, anchor="mm",
            bold=True)
    y += bh + 8 * g
    fr.text(192, y, f"{f['date']}   {f['time']}", 11 * g, INK, anchor="ma")
    y += 14 * g + 4
    fr.hline_dashed(x0 + pad, x1 - pad, y, GREY)
    y += 6
    for a, b in lines:
        fr.text(x0 + pad, y, a, item_size, INK)
        fr.text(x1 - pad, y, b, item_size, INK, anchor="ra")
        y += lh
    y += 3
    fr.hline_dashed(x0 + pad, x1 - pad, y, GREY)
    y += 5
    fr.text(x0 + pad, y, "TOTAL", 14 * g, INK, bold=True)
    fr.text(x1 - pad, y, total_txt, 14 * g, INK, anchor="ra", bold=True)
    y += 20 * g
    if payment:
        fr.text(x0 + pad, y, f"PAID {payment}", 11 * g, INK)
        y += 15 * g
    fr.text(192, y + 2, RECEIPT_FOOTER, 9 * g, GREY, anchor="ma")
    return photo_of(fr, pres, size)


def _describe_receipt(f: dict[str, Any]) -> str:
    pname, _, accent, logo = receipt_theme(f["store"])
    items = "; ".join(f"{a} {b}" for a, b in _receipt_lines(f))
    disp = money_display(f["total"], f["currency"])
    pay = f" Payment line: PAID {f['payment']}." if f.get("payment") else ""
    return (f"A printed till receipt from {f['store']} on {pname} paper with a torn bottom edge, "
            f"lying on a table. The header is a {accent} band with a {logo} logo and the store "
            f"name '{f['store']}'. Dated {f['date']} at {f['time']}. Items (quantity x name "
            f"@ unit price): {items}. TOTAL {disp} (currency {f['currency']}, total "
            f"{f['total']}).{pay} Footer: '{RECEIPT_FOOTER}'.")


def _near_receipt_x1(f, rng):
    pname, _, accent, _ = receipt_theme(f["store"])
    return replaced(f, "store", alternative_name(
        rng, STORE_POOL, f["store"],
        lambda s: receipt_theme(s)[0] != pname and receipt_theme(s)[2] != accent, " Market"))


def _near_receipt_x2(f, rng):
    items = copy.deepcopy(f["items"])
    i = rng.randrange(len(items))
    items[i]["name"] = other_choice(rng, ITEM_POOL, [it["name"] for it in items])
    return replaced(f, "items", items)


def _near_receipt_x3(f, rng):
    opts = ["currency"]
    if f.get("payment"):
        opts.append("payment")
    which = rng.choice(opts)
    if which == "currency":
        return replaced(f, "currency", other_choice(rng, CURRENCY_POOL, [f["currency"]]))
    parts = f["payment"].split(" ", 1)
    brand = other_choice(rng, PAYMENT_POOL, [parts[0]])
    return replaced(f, "payment", " ".join([brand, *parts[1:]]))


def _near_receipt_x4(f, rng):
    opts = ["time"]
    if f.get("payment") and any(c.isdigit() for c in f["payment"]):
        opts.append("payment")
    if rng.choice(opts) == "time":
        return replaced(f, "time", _minute_two_chars(f["time"], rng))
    pay = f["payment"]
    digits = [i for i, c in enumerate(pay) if c.isdigit()]
    chars = list(pay)
    for i in rng.sample(digits, min(2, len(digits))):
        chars[i] = rng.choice([d for d in "0123456789" if d != chars[i]])
    return replaced(f, "payment", "".join(chars))


register(KindSpec(
    name="receipt",
    required=("store", "date", "time", "items", "currency", "total"),
    validate=_validate_receipt,
    draw=_draw_receipt,
    describe=_describe_receipt,
    near={"X1": _near_receipt_x1, "X2": _near_receipt_x2, "X3": _near_receipt_x3,
          "X4": _near_receipt_x4},
    near_doc={
        "X1": "store: another shop, whose paper tint, header band colour and logo all differ",
        "X2": "items: one item line's name replaced (price kept, so the total stays right)",
        "X3": "currency (or payment method brand): same amounts, different currency/card",
        "X4": "time: both minute digits changed (or 2 digits of the card number)",
    },
    example={"store": "Blue Fern Cafe", "date": "2024-03-05", "time": "14:20",
             "items": [{"name": "Latte", "qty": 2, "price": "4.50"},
                       {"name": "Bagel", "qty": 1, "price": "3.25"}],
             "currency": "USD", "total": "12.25", "payment": "VISA ****4821"},
))


# ============================================================================================
# ticket

TICKET_THEMES = ("red", "orange", "green", "teal", "blue", "navy", "purple", "maroon", "pink",
                 "olive")
EVENT_POOL = ("Jazz Night", "Museum Late", "City Derby", "Hamlet", "Food Festival",
              "Comedy Hour", "Harbour Boat Tour", "Planetarium Show", "Spring Ballet",
              "Indie Film Gala")
VENUE_POOL = ("Riverside Hall", "City Museum", "North Stadium", "Old Playhouse",
              "Harbour Square", "Grand Theatre", "Pier 4", "Star Dome")


def ticket_theme(event: str) -> str:
    return TICKET_THEMES[stable_index("ticket:" + event, len(TICKET_THEMES))]


def _validate_ticket(f):
    k = "ticket"
    require(k, f, ("event", "venue", "date", "time", "seat", "price", "currency", "code"))
    for key in ("event", "venue", "seat", "code"):
        check_str(k, key, f[key])
    check_date(k, "date", f["date"])
    check_time(k, "time", f["time"])
    check_money(k, "price", f["price"])
    check_currency(k, "currency", f["currency"])


BARCODE = [1, 2, 1, 1, 3, 1, 2, 2, 1, 1, 2, 3, 1, 1, 2, 1, 3, 2, 1, 1, 2, 1, 1, 3, 2, 1]


def _draw_ticket(f, size, pres):
    fr = Frame.canvas(size)
    theme = PALETTE[ticket_theme(f["event"])]
    paper = (251, 250, 245)
    x0, y0, x1, y1 = 22.0, 62.0, 362.0, 226.0
    xs = x1 - 92  # perforation
    fr.shadow(x0, y0, x1, y1, radius=8)
    fr.rect(x0, y0, x1, y1, fill=paper, radius=8)
    fr.rect(xs, y0, x1, y1, fill=mix(theme, (255, 255, 255), 0.78), radius=8)
    fr.rect(xs, y0, xs + 10, y1, fill=mix(theme, (255, 255, 255), 0.78))
    # header band with the event
    fr.rect(x0, y0, xs, y0 + 38, fill=theme, radius=8)
    fr.rect(x0, y0 + 20, xs, y0 + 38, fill=theme)
    hink = ink_for(theme)
    es = fr.fit_size(f["event"], 17, xs - x0 - 24, 10)
    fr.text(x0 + 12, y0 + 19, f["event"], es, hink, anchor="lm", bold=True)
    # fields
    def field(x, y, cap, val, vs=13):
        fr.text(x, y, cap, 9, GREY)
        fr.text(x, y + 11, val, fr.fit_size(val, vs, xs - x - 10, 9), INK)
    field(x0 + 12, y0 + 46, "VENUE", f["venue"])
    field(x0 + 12, y0 + 80, "DATE", f["date"])
    field(x0 + 134, y0 + 80, "TIME", f["time"])
    field(x0 + 12, y0 + 114, "SEAT", f["seat"])
    field(x0 + 134, y0 + 114, "PRICE", money_display(f["price"], f["currency"]))
    # perforation + notches
    fr.line([(xs, y0 + 10), (xs, y1 - 10)], (0, 0, 0, 0), 1)
    yy = y0 + 10
    while yy < y1 - 12:
        fr.line([(xs, yy), (xs, yy + 4)], GREY, 1.2)
        yy += 8
    for cy in (y0, y1):
        fr.ellipse(xs, cy, 7, 7, fill=(0, 0, 0, 0))
    # stub: admit one, barcode, code (small print)
    sx = (xs + x1) / 2
    fr.text(sx, y0 + 12, "ADMIT  ONE", 10.5, INK, anchor="ma")
    bx, by, bh = xs + 14, y0 + 34, 78
    total = sum(BARCODE) + len(BARCODE)
    unit = (x1 - 14 - bx) / total
    x = bx
    for i, w in enumerate(BARCODE):
        if i % 2 == 0:
            fr.rect(x, by, x + w * unit, by + bh, fill=INK)
        x += (w + 1) * unit
    fr.text(sx, by + bh + 8, f["code"], 9.5, INK, anchor="ma")
    return photo_of(fr, pres, size)


def _describe_ticket(f):
    theme = ticket_theme(f["event"])
    return (f"An event ticket lying on a table, with a {theme} header band reading "
            f"'{f['event']}'. Venue: {f['venue']}. Date: {f['date']}. Time: {f['time']}. "
            f"Seat: {f['seat']}. Price: {money_display(f['price'], f['currency'])} "
            f"(currency {f['currency']}, price {f['price']}). A perforated stub on the right "
            f"says 'ADMIT ONE' above a barcode, with the ticket code {f['code']} in small print "
            f"under the barcode.")


def _near_ticket_x1(f, rng):
    theme = ticket_theme(f["event"])
    return replaced(f, "event", alternative_name(
        rng, EVENT_POOL, f["event"], lambda e: ticket_theme(e) != theme, " Night"))


def _near_ticket_x2(f, rng):
    if rng.random() < 0.5:
        return replaced(f, "venue", other_choice(rng, VENUE_POOL, [f["venue"]]))
    d = _dt.date.fromisoformat(f["date"]) + _dt.timedelta(days=rng.choice((-9, -5, -2, 3, 6, 11)))
    return replaced(f, "date", d.isoformat())


def _near_ticket_x3(f, rng):
    seat = f["seat"]
    for _ in range(50):
        new = f"{rng.choice('ABCDEFGHJK')}{rng.randint(1, 30)}"
        if new != seat:
            return replaced(f, "seat", new)
    return replaced(f, "seat", seat + "A")


def _near_ticket_x4(f, rng):
    return replaced(f, "code", change_chars(f["code"], rng, 2))


register(KindSpec(
    name="ticket",
    required=("event", "venue", "date", "time", "seat", "price", "currency", "code"),
    validate=_validate_ticket,
    draw=_draw_ticket,
    describe=_describe_ticket,
    near={"X1": _near_ticket_x1, "X2": _near_ticket_x2, "X3": _near_ticket_x3,
          "X4": _near_ticket_x4},
    near_doc={
        "X1": "event: another event, whose ticket colour theme also differs",
        "X2": "venue or date: one field block of the ticket changes",
        "X3": "seat: a different seat on the same ticket",
        "X4": "code: 2 characters of the small-print ticket code change",
    },
    example={"event": "Jazz Night", "venue": "Riverside Hall", "date": "2024-05-17",
             "time": "19:30", "seat": "B12", "price": "35.00", "currency": "EUR",
             "code": "TK-48213"},
))


# ============================================================================================
# label

PRODUCT_POOL = ("Green Tea", "Coffee Beans", "Granola", "Wildflower Honey", "Olive Oil",
                "Dark Chocolate", "Hot Sauce", "Oat Milk", "Sea Salt", "Rye Crackers")
BRAND_POOL = ("Kestrel", "Mirabel", "Ostara", "Quillon", "Brightwater", "Halcyon", "Tamsin",
              "Verdant", "Solace", "Calloway", "Nimbus", "Fennick")
WEIGHT_POOL = ("100 g", "125 g", "200 g", "250 g", "300 g", "400 g", "500 g", "750 g", "1 kg",
               "330 ml", "500 ml", "1 l")


def _validate_label(f):
    k = "label"
    require(k, f, ("product", "brand", "weight", "best_before", "lot", "colour"))
    for key in ("product", "brand", "weight", "lot"):
        check_str(k, key, f[key])
    check_date(k, "best_before", f["best_before"])
    check_colour(k, "colour", f["colour"])


def _wrap2(fr: Frame, text: str, size: float, max_w: float) -> list[str]:
    """Split ``text`` into the two lines of most even width."""
    words = text.split()
    if len(words) < 2:
        return [text]
    best = min(range(1, len(words)),
               key=lambda i: max(fr.tw(" ".join(words[:i]), size),
                                 fr.tw(" ".join(words[i:]), size)))
    return [" ".join(words[:best]), " ".join(words[best:])]


def _draw_label(f, size, pres):
    fr = Frame.canvas(size)
    col = PALETTE[f["colour"]]
    ink = ink_for(col)
    x0, y0, x1, y1 = 40.0, 40.0, 344.0, 248.0
    fr.shadow(x0, y0, x1, y1, radius=14)
    fr.rect(x0, y0, x1, y1, fill=col, outline=shade(col, -0.35), width=2, radius=14)
    fr.rect(x0 + 7, y0 + 7, x1 - 7, y1 - 7, outline=ink, width=1, radius=10)
    cx = (x0 + x1) / 2
    fr.text(cx, y0 + 18, f["brand"], fr.fit_size(f["brand"], 15, 260, 9), ink, anchor="ma")
    fr.line([(cx - 40, y0 + 40), (cx + 40, y0 + 40)], ink, 1)
    psize = fr.fit_size(f["product"], 25, 272, 15)
    if fr.tw(f["product"], psize) > 272:
        lines = _wrap2(fr, f["product"], 18, 272)
        psize = min(fr.fit_size(ln, 18, 272, 9) for ln in lines)
    else:
        lines = [f["product"]]
    py = y0 + 68 - (len(lines) - 1) * 11
    for ln in lines:
        fr.text(cx, py, ln, psize, ink, anchor="mm", bold=True)
        py += 22
    fr.text(cx, y0 + 104, f"NET WT {f['weight']}", 15, ink, anchor="ma")
    bx0, by0, bx1, by1 = x0 + 26, y0 + 134, x1 - 26, y1 - 16
    fr.rect(bx0, by0, bx1, by1, fill=(255, 255, 255), outline=(40, 40, 40), width=1, radius=4)
    fr.text(cx, by0 + 8, f"BEST BEFORE {f['best_before']}", 12, INK, anchor="ma")
    fr.text(cx, by0 + 28, f"LOT {f['lot']}", 9.5, INK, anchor="ma")
    return photo_of(fr, pres, size)


def _describe_label(f):
    return (f"A {f['colour']} product label lying on a table. Brand: {f['brand']}. Product: "
            f"{f['product']}. Net weight: {f['weight']} (printed 'NET WT {f['weight']}'). A "
            f"white box at the bottom reads 'BEST BEFORE {f['best_before']}' and, in small "
            f"print, 'LOT {f['lot']}'.")


def _near_label_x4(f, rng):
    if rng.random() < 0.5:
        return replaced(f, "lot", change_chars(f["lot"], rng, 2))
    return replaced(f, "colour", close_colour(rng, f["colour"]))


register(KindSpec(
    name="label",
    required=("product", "brand", "weight", "best_before", "lot", "colour"),
    validate=_validate_label,
    draw=_draw_label,
    describe=_describe_label,
    near={
        "X1": lambda f, rng: replaced(f, "colour", far_colour(rng, f["colour"])),
        "X2": lambda f, rng: (replaced(f, "product",
                                       other_choice(rng, PRODUCT_POOL, [f["product"]]))
                              if rng.random() < 0.5 else
                              replaced(f, "brand", other_choice(rng, BRAND_POOL, [f["brand"]]))),
        "X3": lambda f, rng: replaced(f, "weight", other_choice(rng, WEIGHT_POOL, [f["weight"]])),
        "X4": _near_label_x4,
    },
    near_doc={
        "X1": "colour: the whole label background becomes a clearly different palette colour",
        "X2": "product or brand: one text block changes",
        "X3": "weight: a different net weight",
        "X4": "lot (2 small-print characters) or colour -> a close palette neighbour",
    },
    example={"product": "Green Tea", "brand": "Kestrel", "weight": "250 g",
             "best_before": "2025-09-01", "lot": "L2403-17", "colour": "teal"},
))


# ============================================================================================
# calendar


def _validate_calendar(f):
    k = "calendar"
    require(k, f, ("year", "month", "marked_day", "marker_colour"))
    check_int(k, "year", f["year"], 1900, 2200)
    check_int(k, "month", f["month"], 1, 12)
    ndays = _cal.monthrange(f["year"], f["month"])[1]
    check_int(k, "marked_day", f["marked_day"], 1, ndays)
    check_colour(k, "marker_colour", f["marker_colour"])
    if f.get("note") is not None:
        check_str(k, "note", f["note"])


def _draw_calendar(f, size, pres):
    fr = Frame.canvas(size)
    year, month, day = f["year"], f["month"], f["marked_day"]
    first = _dt.date(year, month, 1).weekday()
    ndays = _cal.monthrange(year, month)[1]
    nrows = (first + ndays + 6) // 7
    note = f.get("note")
    x0, y0, x1, y1 = 24.0, 12.0, 360.0, 278.0
    fr.shadow(x0, y0, x1, y1, radius=4)
    fr.rect(x0, y0, x1, y1, fill=(252, 252, 250), radius=4)
    for i in range(9):  # ring binding
        rx = x0 + 30 + i * (x1 - x0 - 60) / 8
        fr.ellipse(rx, y0 + 5, 3, 3, fill=(90, 90, 96))
    fr.text(192, y0 + 14, f"{MONTHS[month - 1]} {year}", 17, INK, anchor="ma", bold=True)
    gx0, gx1 = x0 + 12, x1 - 12
    cw = (gx1 - gx0) / 7
    hy = y0 + 42
    for i, wd in enumerate(WEEKDAYS):
        fr.text(gx0 + (i + 0.5) * cw, hy, wd, 11, GREY, anchor="mm", bold=True)
    gy0 = hy + 10
    bottom = y1 - (26 if note else 8)
    rh = min(34.0, (bottom - gy0) / nrows)
    for r in range(nrows + 1):
        fr.line([(gx0, gy0 + r * rh), (gx1, gy0 + r * rh)], (214, 214, 218), 1)
    mc = PALETTE[f["marker_colour"]]
    for d in range(1, ndays + 1):
        idx = first + d - 1
        cx = gx0 + (idx % 7 + 0.5) * cw
        cy = gy0 + (idx // 7 + 0.5) * rh
        if d == day:
            r = min(cw, rh) * 0.46
            fr.aa_ellipse(cx, cy, r, r, fill=mc, outline=shade(mc, -0.45), width=1.5)
            fr.text(cx, cy, str(d), 13, ink_for(mc), anchor="mm", bold=True)
        else:
            fr.text(cx, cy, str(d), 13, INK, anchor="mm")
    if note:
        fr.text(gx0 + 2, y1 - 21, f"Note: {note}", fr.fit_size(f"Note: {note}", 12, gx1 - gx0, 8),
                (30, 40, 110))
    return photo_of(fr, pres, size)


def _describe_calendar(f):
    year, month, day = f["year"], f["month"], f["marked_day"]
    first = _dt.date(year, month, 1).weekday()
    idx = first + day - 1
    wd = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")[idx % 7]
    note = (f" Under the grid a handwritten-style note reads 'Note: {f['note']}'."
            if f.get("note") else "")
    return (f"A paper wall calendar page with ring binding for {MONTHS[month - 1]} {year} "
            f"({year}-{month:02d}), a month grid with weekday header Mo to Su (weeks start on "
            f"Monday). Day {day} ({wd} {year}-{month:02d}-{day:02d}, row {idx // 7 + 1} of the "
            f"grid) is marked with a filled {f['marker_colour']} circle.{note}")


def _near_calendar_x1(f, rng):
    months = [m for m in range(1, 13)
              if m != f["month"] and _cal.monthrange(f["year"], m)[1] >= f["marked_day"]
              and _dt.date(f["year"], m, 1).weekday() != _dt.date(f["year"], f["month"],
                                                                  1).weekday()]
    return replaced(f, "month", rng.choice(months))


def _near_calendar_x2(f, rng):
    ndays = _cal.monthrange(f["year"], f["month"])[1]
    days = [d for d in range(1, ndays + 1) if abs(d - f["marked_day"]) >= 2]
    return replaced(f, "marked_day", rng.choice(days))


register(KindSpec(
    name="calendar",
    required=("year", "month", "marked_day", "marker_colour"),
    validate=_validate_calendar,
    draw=_draw_calendar,
    describe=_describe_calendar,
    near={
        "X1": _near_calendar_x1,
        "X2": _near_calendar_x2,
        "X3": lambda f, rng: replaced(f, "marker_colour", far_colour(rng, f["marker_colour"])),
        "X4": lambda f, rng: replaced(f, "marker_colour", close_colour(rng, f["marker_colour"])),
    },
    near_doc={
        "X1": "month: another month (title and the whole grid layout shift)",
        "X2": "marked_day: the marker moves to another cell",
        "X3": "marker_colour: a clearly different colour",
        "X4": "marker_colour: a close palette neighbour",
    },
    example={"year": 2024, "month": 3, "marked_day": 14, "marker_colour": "red",
             "note": "dentist 9:30"},
))


# ============================================================================================
# schedule

ACTIVITY_POOL = ("Standup", "Yoga class", "Dentist", "Team lunch", "Piano lesson",
                 "Pick up kids", "Gym", "Book club", "Design review", "Call with Mum",
                 "Swimming", "Market run", "Train to Leeds", "Haircut")
TITLE_POOL = ("Monday plan", "Weekend plan", "Conference day 2", "Tuesday schedule",
              "Trip itinerary", "Studio timetable")


def _validate_schedule(f):
    k = "schedule"
    require(k, f, ("title", "rows"))
    check_str(k, "title", f["title"])
    rows = f["rows"]
    if not isinstance(rows, list) or not 1 <= len(rows) <= 6:
        _fail(k, "rows", "must be a list of 1-6 {'time', 'what'} entries")
    for r in rows:
        if not isinstance(r, dict) or "time" not in r or "what" not in r:
            _fail(k, "rows", f"entries need 'time' and 'what', got {r!r}")
        check_time(k, "rows", r["time"])
        check_str(k, "rows", r["what"])


def _draw_schedule(f, size, pres):
    fr = Frame.canvas(size)
    rows = f["rows"]
    rh = 36.0
    h = 48 + rh * len(rows) + 10
    x0, x1 = 30.0, 354.0
    y0 = max(8.0, 144 - h / 2)
    y1 = y0 + h
    head = (44, 62, 80)
    fr.shadow(x0, y0, x1, y1, radius=6)
    fr.rect(x0, y0, x1, y1, fill=(251, 251, 249), radius=6)
    fr.rect(x0, y0, x1, y0 + 40, fill=head, radius=6)
    fr.rect(x0, y0 + 24, x1, y0 + 40, fill=head)
    fr.text(192, y0 + 20, f["title"], fr.fit_size(f["title"], 17, x1 - x0 - 24, 10),
            (255, 255, 255), anchor="mm", bold=True)
    top = y0 + 48
    for i, r in enumerate(rows):
        ry = top + i * rh
        if i % 2 == 1:
            fr.rect(x0 + 6, ry, x1 - 6, ry + rh, fill=(236, 240, 245))
        fr.text(x0 + 18, ry + rh / 2, r["time"], 15, INK, anchor="lm", bold=True)
        fr.text(x0 + 90, ry + rh / 2, r["what"], fr.fit_size(r["what"], 14, x1 - x0 - 104, 9),
                INK, anchor="lm")
    fr.line([(x0 + 80, top), (x0 + 80, top + rh * len(rows))], (190, 196, 204), 1)
    return photo_of(fr, pres, size)


def _describe_schedule(f):
    rows = "; ".join(f"{r['time']} {r['what']}" for r in f["rows"])
    return (f"A printed schedule card with a dark slate header titled '{f['title']}' and "
            f"{len(f['rows'])} rows (time, then activity): {rows}.")


def _new_rows(rng, old):
    n = rng.choice([k for k in range(2, 7) if k != len(old)])
    start = rng.randint(7, 11)
    acts = rng.sample([a for a in ACTIVITY_POOL if a not in {r['what'] for r in old}], n)
    return [{"time": f"{start + i * 2:02d}:{rng.choice(('00', '15', '30', '45'))}", "what": a}
            for i, a in enumerate(acts)]


def _near_schedule_x2(f, rng):
    if rng.random() < 0.3:
        return replaced(f, "title", other_choice(rng, TITLE_POOL, [f["title"]]))
    rows = copy.deepcopy(f["rows"])
    i = rng.randrange(len(rows))
    rows[i]["what"] = other_choice(rng, ACTIVITY_POOL, [r["what"] for r in rows])
    return replaced(f, "rows", rows)


def _near_schedule_time(f, rng, x4: bool):
    rows = copy.deepcopy(f["rows"])
    i = rng.randrange(len(rows))
    t = rows[i]["time"]
    if x4:
        rows[i]["time"] = _minute_one_char(t, rng)
    else:
        h = int(t[:2])
        nh = rng.choice([x for x in range(6, 23) if 1 <= abs(x - h) <= 4])
        rows[i]["time"] = f"{nh:02d}{t[2:]}"
    return replaced(f, "rows", rows)


register(KindSpec(
    name="schedule",
    required=("title", "rows"),
    validate=_validate_schedule,
    draw=_draw_schedule,
    describe=_describe_schedule,
    near={
        "X1": lambda f, rng: replaced(f, "rows", _new_rows(rng, f["rows"])),
        "X2": _near_schedule_x2,
        "X3": lambda f, rng: _near_schedule_time(f, rng, x4=False),
        "X4": lambda f, rng: _near_schedule_time(f, rng, x4=True),
    },
    near_doc={
        "X1": "rows: an entirely different list of rows (count, times, activities)",
        "X2": "one row's activity text (or the title) replaced",
        "X3": "one row's hour changed (1-4 hours)",
        "X4": "one row's last minute digit changed",
    },
    example={"title": "Monday plan",
             "rows": [{"time": "09:00", "what": "Standup"},
                      {"time": "12:30", "what": "Team lunch"},
                      {"time": "17:45", "what": "Yoga class"}]},
))

