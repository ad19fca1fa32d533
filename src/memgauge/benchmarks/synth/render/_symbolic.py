"""Symbolic displays: analog clock, phone chat screenshot, app/web UI card."""

from __future__ import annotations

import copy
import math

from ._base import (
    PALETTE,
    TIME_RE,
    Frame,
    KindSpec,
    _fail,
    alternative_name,
    check_colour,
    check_int,
    check_str,
    check_time,
    close_colour,
    desk_colour,
    far_colour,
    ink_for,
    mix,
    other_choice,
    photo_of,
    post,
    register,
    replaced,
    require,
    shade,
    stable_index,
)

INK = (34, 34, 38)
GREY = (118, 118, 124)

# ============================================================================================
# clock

LABEL_POOL = ("Central Station", "Platform 2", "Kitchen", "Harbour Pier", "Town Hall",
              "Gate 14", "Office", "Airport Arrivals", "Library", "Bakery")


def _validate_clock(f):
    k = "clock"
    require(k, f, ("hour", "minute", "face_colour"))
    check_int(k, "hour", f["hour"], 0, 23)
    check_int(k, "minute", f["minute"], 0, 59)
    check_colour(k, "face_colour", f["face_colour"])
    if f.get("label") is not None:
        check_str(k, "label", f["label"])


def _hand(fr: Frame, cx, cy, deg, length, width, tail, fill):
    a = math.radians(deg)
    dx, dy = math.sin(a), -math.cos(a)
    px, py = math.cos(a), math.sin(a)
    w0, w1 = width / 2, width * 0.22
    pts = [(cx - dx * tail + px * w0, cy - dy * tail + py * w0),
           (cx + dx * length + px * w1, cy + dy * length + py * w1),
           (cx + dx * (length + width * 0.6), cy + dy * (length + width * 0.6)),
           (cx + dx * length - px * w1, cy + dy * length - py * w1),
           (cx - dx * tail - px * w0, cy - dy * tail - py * w0)]
    fr.polygon(pts, fill=fill)


def _ampm(hour: int) -> str:
    return "AM" if hour < 12 else "PM"


def _draw_clock(f, size, pres):
    plain = pres.plain
    fr = Frame.canvas(size, ss=2, mode="RGB", fill=desk_colour(pres),
                      rot=0.0 if plain else pres.angle,
                      shift=(0.0, 0.0) if plain else (pres.dx, pres.dy))
    face = PALETTE[f["face_colour"]]
    ink = ink_for(face)
    cx, cy, R = 192.0, 124.0, 110.0
    fr.ellipse(cx + 3, cy + 4, R, R, fill=(0, 0, 0, 70))
    fr.ellipse(cx, cy, R, R, fill=(46, 46, 52))
    fr.ellipse(cx, cy, R - 7, R - 7, fill=face)
    for i in range(60):
        a = math.radians(i * 6)
        major = i % 5 == 0
        r0, r1 = R - 12, R - (25 if major else 17)
        fr.line([(cx + math.sin(a) * r0, cy - math.cos(a) * r0),
                 (cx + math.sin(a) * r1, cy - math.cos(a) * r1)], ink, 3.2 if major else 1.3,
                joint=None)
    for n in range(1, 13):
        a = math.radians(n * 30)
        r = R - 40
        fr.text(cx + math.sin(a) * r, cy - math.cos(a) * r, str(n), 16, ink, anchor="mm",
                bold=True)
    # AM/PM window
    wy = cy + R * 0.40
    fr.rect(cx - 15, wy - 8, cx + 15, wy + 8, fill=(250, 250, 250), outline=(70, 70, 70),
            width=1, radius=3)
    fr.text(cx, wy, _ampm(f["hour"]), 10.5, INK, anchor="mm", bold=True)
    h, m = f["hour"], f["minute"]
    hand_col = ink
    _hand(fr, cx, cy, ((h % 12) + m / 60) * 30, R * 0.50, 9, 12, hand_col)
    _hand(fr, cx, cy, m * 6, R * 0.80, 6, 14, hand_col)
    fr.ellipse(cx, cy, 6, 6, fill=hand_col, outline=shade(face, -0.3), width=1)
    if f.get("label"):
        lab = f["label"]
        ls = fr.fit_size(lab, 15, 300, 9)
        w = fr.tw(lab, ls) + 24
        fr.rect(192 - w / 2, 244, 192 + w / 2, 272, fill=(250, 248, 240), outline=(60, 60, 60),
                width=1, radius=4)
        fr.text(192, 258, lab, ls, INK, anchor="mm")
    return post(fr.img.reduce(2), pres)


def clock_time(f) -> str:
    return f"{f['hour']:02d}:{f['minute']:02d}"


def _describe_clock(f):
    h12 = f["hour"] % 12 or 12
    lab = f" Below the clock a plaque reads '{f['label']}'." if f.get("label") else ""
    return (f"An analog clock with a {f['face_colour']} face, a dark rim, 60 minute ticks and "
            f"the numbers 1 to 12, plus a small window reading '{_ampm(f['hour'])}'. The hour "
            f"and minute hands show {clock_time(f)} ({h12}:{f['minute']:02d} "
            f"{_ampm(f['hour'])}).{lab}")


def _near_clock_x2(f, rng):
    return replaced(f, "label", other_choice(rng, LABEL_POOL, [f.get("label")]))


def _near_clock_x3(f, rng):
    h = f["hour"]
    nh = (h + rng.choice((-5, -4, -3, -2, 2, 3, 4, 5))) % 24
    return replaced(f, "hour", nh)


def _near_clock_x4(f, rng):
    m = f["minute"]
    opts = [x for x in range(m - 3, m + 4) if x != m and 0 <= x <= 59]
    return replaced(f, "minute", rng.choice(opts))


register(KindSpec(
    name="clock",
    required=("hour", "minute", "face_colour"),
    validate=_validate_clock,
    draw=_draw_clock,
    describe=_describe_clock,
    near={
        "X1": lambda f, rng: replaced(f, "face_colour", far_colour(rng, f["face_colour"])),
        "X2": _near_clock_x2,
        "X3": _near_clock_x3,
        "X4": _near_clock_x4,
    },
    near_doc={
        "X1": "face_colour: the whole dial becomes a clearly different colour",
        "X2": "label: the plaque under the clock reads something else (or gains a plaque)",
        "X3": "hour: the hour hand points 2-5 hours away",
        "X4": "minute: the minute hand moves 1-3 minutes",
    },
    example={"hour": 14, "minute": 20, "face_colour": "white", "label": "Central Station"},
))


# ============================================================================================
# chat

CHAT_THEMES = ("green", "teal", "blue", "navy", "purple", "maroon", "red", "orange")
CHAT_BG = (236, 231, 222)
APP_POOL = ("TripNest", "StayWell", "RailGo", "ParkSmart", "FitLog", "BankBee", "MediBook",
            "Chatterly", "Parley", "Hollr")
MESSAGE_POOL = ("See you at the station!", "Running 10 min late", "Can you bring the charger?",
                "Table is booked for 8", "Did you feed the cat?", "Happy birthday!!",
                "The parcel arrived", "Let's meet at the north gate", "I left my keys at yours",
                "Movie starts at 9", "Bring an umbrella", "Thanks for today")


def chat_theme(app: str) -> str:
    return CHAT_THEMES[stable_index("chat:" + app, len(CHAT_THEMES))]


def _validate_chat(f):
    k = "chat"
    require(k, f, ("app", "contact", "messages"))
    check_str(k, "app", f["app"])
    check_str(k, "contact", f["contact"])
    msgs = f["messages"]
    if not isinstance(msgs, list) or not 1 <= len(msgs) <= 5:
        _fail(k, "messages", "must be a list of 1-5 messages")
    for m in msgs:
        if not isinstance(m, dict) or any(x not in m for x in ("from", "text", "time")):
            _fail(k, "messages", f"entries need 'from', 'text', 'time', got {m!r}")
        if m["from"] not in ("me", "them"):
            _fail(k, "messages", f"'from' must be 'me' or 'them', got {m['from']!r}")
        check_str(k, "messages", m["text"])
        check_time(k, "messages", m["time"])


def _wrap(fr: Frame, text: str, size: float, max_w: float) -> list[str]:
    lines: list[str] = []
    cur = ""
    for word in text.split():
        cand = f"{cur} {word}" if cur else word
        if fr.tw(cand, size) <= max_w or not cur:
            cur = cand
        else:
            lines.append(cur)
            cur = word
    if cur:
        lines.append(cur)
    # hard-break over-long single words
    out = []
    for ln in lines:
        while fr.tw(ln, size) > max_w and len(ln) > 1:
            k = len(ln)
            while k > 1 and fr.tw(ln[:k], size) > max_w:
                k -= 1
            out.append(ln[:k])
            ln = ln[k:]
        out.append(ln)
    return out


CHAT_MAXW = 236.0  # max text width inside a bubble
TIME_SIZE = 9.5


def _chat_layout(fr: Frame, msgs, avail: float):
    """Per message: (lines, bubble height, bubble width, time inline?) at the largest font
    (12.5 down to 11 px) at which all bubbles fit on the screen."""
    for size, lh, gap in ((12.5, 15.5, 6.0), (11.5, 14.0, 5.0), (11.0, 13.0, 4.0)):
        blocks = []
        for m in msgs:
            lines = _wrap(fr, m["text"], size, CHAT_MAXW)
            tw = fr.tw(m["time"], TIME_SIZE)
            last = fr.tw(lines[-1], size)
            inline = last + tw + 10 <= CHAT_MAXW
            h = len(lines) * lh + (10 if inline else 21)
            w = max(max(fr.tw(ln, size) for ln in lines), last + tw + 10 if inline else tw) + 18
            blocks.append((lines, h, w, inline))
        total = sum(b[1] for b in blocks) + gap * (len(blocks) - 1)
        if total <= avail:
            return size, lh, gap, blocks
    _fail("chat", "messages", "are too long to fit legibly on one screen")


def _draw_chat(f, size, pres):
    fr = Frame.canvas(size)
    theme = PALETTE[chat_theme(f["app"])]
    tink = ink_for(theme)
    # phone bezel + screen
    fr.rect(8, 3, 376, 285, fill=(26, 26, 30), radius=18)
    sx0, sy0, sx1, sy1 = 15.0, 10.0, 369.0, 278.0
    bar = 40.0
    fr.rect(sx0, sy0, sx1, sy1, fill=CHAT_BG, radius=12)
    fr.rect(sx0, sy0, sx1, sy0 + bar, fill=theme, radius=12)
    fr.rect(sx0, sy0 + 20, sx1, sy0 + bar, fill=theme)
    fr.text(sx0 + 12, sy0 + bar / 2, "<", 18, tink, anchor="lm", bold=True)
    av = mix(theme, (255, 255, 255), 0.55)
    fr.ellipse(sx0 + 44, sy0 + bar / 2, 14, 14, fill=av)
    fr.text(sx0 + 44, sy0 + bar / 2, f["contact"][0].upper(), 14, ink_for(av), anchor="mm",
            bold=True)
    fr.text(sx0 + 66, sy0 + 4, f["contact"], fr.fit_size(f["contact"], 15, 270, 9), tink,
            bold=True)
    fr.text(sx0 + 66, sy0 + 23, f["app"], 10.5, tink)
    size_, lh, gap, blocks = _chat_layout(fr, f["messages"], sy1 - sy0 - bar - 12)
    y = sy0 + bar + 6
    mine = mix(theme, (255, 255, 255), 0.74)
    for m, (lines, bh, w, _inline) in zip(f["messages"], blocks, strict=True):
        if m["from"] == "me":
            bx0, bx1, col = sx1 - 10 - w, sx1 - 10, mine
        else:
            bx0, bx1, col = sx0 + 10, sx0 + 10 + w, (255, 255, 255)
        fr.rect(bx0 + 1, y + 2, bx1 + 1, y + bh + 2, fill=(0, 0, 0, 40), radius=8)
        fr.rect(bx0, y, bx1, y + bh, fill=col, radius=8)
        ty = y + 5
        for ln in lines:
            fr.text(bx0 + 9, ty, ln, size_, INK)
            ty += lh
        fr.text(bx1 - 8, y + bh - 4, m["time"], TIME_SIZE, GREY, anchor="rd")
        y += bh + gap
    return photo_of(fr, pres, size)


def _describe_chat(f):
    theme = chat_theme(f["app"])
    parts = []
    for i, m in enumerate(f["messages"], 1):
        who = (f"from me (right, light {theme} bubble)" if m["from"] == "me"
               else f"from them, {f['contact']} (left, white bubble)")
        parts.append(f"{i}) {who} at {m['time']}: '{m['text']}'")
    return (f"A phone screenshot of a chat in the {f['app']} app. The {theme} title bar shows a "
            f"back arrow, an avatar circle with the letter '{f['contact'][0].upper()}', the "
            f"contact name '{f['contact']}' and the app name '{f['app']}'. "
            f"{len(f['messages'])} message bubble(s), top to bottom: " + "; ".join(parts) + ".")


def _near_chat_x1(f, rng):
    theme = chat_theme(f["app"])
    return replaced(f, "app", alternative_name(rng, APP_POOL, f["app"],
                                               lambda a: chat_theme(a) != theme, " Chat"))


def _near_chat_msg(f, rng, what):
    msgs = copy.deepcopy(f["messages"])
    i = rng.randrange(len(msgs))
    if what == "text":
        msgs[i]["text"] = other_choice(rng, MESSAGE_POOL, [m["text"] for m in msgs])
    elif what == "from":
        msgs[i]["from"] = "them" if msgs[i]["from"] == "me" else "me"
    else:
        h, mm = msgs[i]["time"].split(":")
        opts = [f"{t:02d}" for t in range(60) if f"{t:02d}" != mm]
        msgs[i]["time"] = f"{h}:{rng.choice(opts)}"
    return replaced(f, "messages", msgs)


register(KindSpec(
    name="chat",
    required=("app", "contact", "messages"),
    validate=_validate_chat,
    draw=_draw_chat,
    describe=_describe_chat,
    near={
        "X1": _near_chat_x1,
        "X2": lambda f, rng: _near_chat_msg(f, rng, "text"),
        "X3": lambda f, rng: _near_chat_msg(f, rng, "from"),
        "X4": lambda f, rng: _near_chat_msg(f, rng, "time"),
    },
    near_doc={
        "X1": "app: another app, whose title-bar/bubble colour theme also differs",
        "X2": "one message's text replaced (one bubble region)",
        "X3": "one message's sender flipped (bubble side and colour change)",
        "X4": "one message's small timestamp changes its minutes (1-2 characters)",
    },
    example={"app": "Parley", "contact": "Maya",
             "messages": [{"from": "them", "text": "Are we still on for Saturday?",
                           "time": "18:02"},
                          {"from": "me", "text": "Yes! Meet at the north gate at 10",
                           "time": "18:05"},
                          {"from": "them", "text": "Perfect, see you there", "time": "18:06"}]},
))


# ============================================================================================
# app_ui

VALUE_POOL = ("Confirmed", "Pending", "Cancelled", "Delayed", "On time", "Boarding",
              "Paid", "Refunded", "Shipped", "Delivered", "Gate C4", "Room 214", "Platform 3",
              "Level 2, bay 17", "Dr. Osei", "2 adults")


def _validate_app_ui(f):
    k = "app_ui"
    require(k, f, ("app", "title", "fields", "accent"))
    check_str(k, "app", f["app"])
    check_str(k, "title", f["title"])
    check_colour(k, "accent", f["accent"])
    fields = f["fields"]
    if not isinstance(fields, list) or not 1 <= len(fields) <= 6:
        _fail(k, "fields", "must be a list of 1-6 [label, value] pairs")
    for p in fields:
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            _fail(k, "fields", f"entries must be [label, value] pairs, got {p!r}")
        check_str(k, "fields", p[0])
        check_str(k, "fields", p[1])


def _draw_app_ui(f, size, pres):
    fr = Frame.canvas(size)
    acc = PALETTE[f["accent"]]
    aink = ink_for(acc)
    fields = f["fields"]
    rh = min(32.0, (272 - 84 - 14) / len(fields))
    h = 84 + rh * len(fields) + 14
    x0, x1 = 28.0, 356.0
    y0 = max(8.0, 144 - h / 2)
    y1 = y0 + h
    fr.shadow(x0, y0, x1, y1, radius=10)
    fr.rect(x0, y0, x1, y1, fill=(253, 253, 253), outline=(205, 205, 210), width=1, radius=10)
    fr.rect(x0, y0, x1, y0 + 42, fill=acc, radius=10)
    fr.rect(x0, y0 + 24, x1, y0 + 42, fill=acc)
    fr.text(x0 + 16, y0 + 21, f["app"], fr.fit_size(f["app"], 15, 250, 9), aink, anchor="lm",
            bold=True)
    for i in range(3):
        fr.ellipse(x1 - 18, y0 + 13 + i * 8, 2, 2, fill=aink)
    fr.text(x0 + 16, y0 + 54, f["title"], fr.fit_size(f["title"], 17, x1 - x0 - 32, 10), INK,
            bold=True)
    top = y0 + 84
    for i, (lab, val) in enumerate(fields):
        ry = top + i * rh
        fr.line([(x0 + 14, ry), (x1 - 14, ry)], (226, 226, 230), 1)
        ls = fr.fit_size(lab, 12, 130, 9)
        fr.text(x0 + 16, ry + rh / 2, lab, ls, GREY, anchor="lm")
        room = x1 - x0 - 32 - fr.tw(lab, ls) - 14
        fr.text(x1 - 16, ry + rh / 2, val, fr.fit_size(val, 13.5, room, 9), INK, anchor="rm",
                bold=True)
    fr.line([(x0 + 14, top + rh * len(fields)), (x1 - 14, top + rh * len(fields))],
            (226, 226, 230), 1)
    return photo_of(fr, pres, size)


def _describe_app_ui(f):
    fields = "; ".join(f"{lab}: {val}" for lab, val in f["fields"])
    return (f"A screenshot of an app card in the {f['app']} app: a {f['accent']} header bar "
            f"with the app name '{f['app']}' and a three-dot menu icon, the title "
            f"'{f['title']}', then {len(f['fields'])} field row(s), label on the left and value "
            f"on the right: {fields}.")


def _near_app_x2(f, rng):
    fields = copy.deepcopy([list(p) for p in f["fields"]])
    i = rng.randrange(len(fields))
    fields[i][1] = other_choice(rng, VALUE_POOL, [p[1] for p in fields])
    return replaced(f, "fields", fields)


def _near_app_x3(f, rng):
    fields = [list(p) for p in f["fields"]]
    pairs = [(i, j) for i in range(len(fields)) for j in range(i + 1, len(fields))
             if fields[i][1] != fields[j][1]]
    if not pairs:
        raise ValueError("app_ui: X3 needs two fields with different values")
    i, j = rng.choice(pairs)
    fields[i][1], fields[j][1] = fields[j][1], fields[i][1]
    return replaced(f, "fields", fields)


def _near_app_x4(f, rng):
    fields = [list(p) for p in f["fields"]]
    with_digits = [i for i, p in enumerate(fields) if any(c.isdigit() for c in p[1])]
    if with_digits:
        i = rng.choice(with_digits)
        val = fields[i][1]
        if TIME_RE.match(val):  # stay a valid time: change both minute digits
            mm = val[3:]
            fields[i][1] = val[:3] + rng.choice(
                [f"{t:02d}" for t in range(60)
                 if f"{t:02d}"[0] != mm[0] and f"{t:02d}"[1] != mm[1]])
        else:
            pos = [k for k, c in enumerate(val) if c.isdigit()]
            chars = list(val)
            for k in rng.sample(pos, min(2, len(pos))):
                chars[k] = rng.choice([d for d in "123456789" if d != chars[k]])
            fields[i][1] = "".join(chars)
        return replaced(f, "fields", fields)
    return replaced(f, "accent", close_colour(rng, f["accent"]))


register(KindSpec(
    name="app_ui",
    required=("app", "title", "fields", "accent"),
    validate=_validate_app_ui,
    draw=_draw_app_ui,
    describe=_describe_app_ui,
    near={
        "X1": lambda f, rng: replaced(f, "accent", far_colour(rng, f["accent"])),
        "X2": _near_app_x2,
        "X3": _near_app_x3,
        "X4": _near_app_x4,
    },
    near_doc={
        "X1": "accent: the header bar becomes a clearly different colour",
        "X2": "fields: one field's value replaced by another value",
        "X3": "fields: the values of two fields are swapped (same texts, different binding)",
        "X4": "fields: 2 digits of a numeric value change (else accent -> close colour)",
    },
    example={"app": "RailGo", "title": "Booking confirmed",
             "fields": [["Train", "IC 724"], ["Departs", "08:42"], ["Platform", "5"],
                        ["Coach / seat", "C / 41"]],
             "accent": "navy"},
))

