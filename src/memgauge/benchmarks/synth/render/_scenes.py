"""Object scenes (a 4x3 table-top layout) and re-identifiable entities (mug, cat, ...)."""

from __future__ import annotations

import copy
import math

from PIL import Image, ImageChops, ImageDraw

from ._base import (
    PALETTE,
    Frame,
    KindSpec,
    Presentation,
    _fail,
    change_chars,
    check_colour,
    check_enum,
    check_str,
    close_colour,
    ellipse_points,
    far_colour,
    fmt_list,
    heart_points,
    luminance,
    mark_points,
    mix,
    other_choice,
    post,
    register,
    regular_polygon,
    replaced,
    require,
    rgba,
    rrect_points,
    shade,
    star_points,
)

SHAPES = ("circle", "square", "triangle", "star", "heart")
SIZES = ("small", "large")
ROW_NAMES = ("top", "middle", "bottom")
COL_NAMES = ("1st", "2nd", "3rd", "4th")
N_COLS, N_ROWS = 4, 3

# ============================================================================================
# scene


def _validate_scene(f):
    k = "scene"
    require(k, f, ("background", "objects"))
    check_colour(k, "background", f["background"])
    objs = f["objects"]
    if not isinstance(objs, list) or not 1 <= len(objs) <= N_COLS * N_ROWS:
        _fail(k, "objects", "must be a list of 1-12 objects")
    seen = set()
    for o in objs:
        if not isinstance(o, dict):
            _fail(k, "objects", f"entries must be dicts, got {o!r}")
        for key in ("shape", "colour", "col", "row", "size"):
            if key not in o:
                _fail(k, "objects", f"entry is missing {key!r}: {o!r}")
        check_enum(k, "objects", o["shape"], SHAPES)
        check_colour(k, "objects", o["colour"])
        check_enum(k, "objects", o["size"], SIZES)
        check_enum(k, "objects", o["col"], range(N_COLS))
        check_enum(k, "objects", o["row"], range(N_ROWS))
        if isinstance(o["col"], bool) or isinstance(o["row"], bool):
            _fail(k, "objects", "col/row must be ints")
        cell = (o["col"], o["row"])
        if cell in seen:
            _fail(k, "objects", f"has two objects in cell col={cell[0]}, row={cell[1]}")
        seen.add(cell)


def shape_polygon(shape: str, cx: float, cy: float, r: float,
                  rot: float) -> list[tuple[float, float]]:
    if shape == "circle":
        return ellipse_points(cx, cy, r, r, steps=48)
    if shape == "square":
        return regular_polygon(cx, cy, r * 1.2, 4, rot=45 + rot)
    if shape == "triangle":
        return regular_polygon(cx, cy + r * 0.18, r * 1.22, 3, rot=rot)
    if shape == "star":
        return star_points(cx, cy + r * 0.06, r * 1.18, rot=rot)
    if shape == "heart":
        return heart_points(cx, cy, r * 1.05, rot=rot)
    raise ValueError(shape)


def _draw_scene(f, size, pres: Presentation):
    bgc = PALETTE[f["background"]]
    fr = Frame.canvas(size, ss=2, mode="RGB", fill=bgc)
    dark_bg = luminance(bgc) < 0.3
    grid = shade(bgc, 0.16) if dark_bg else shade(bgc, -0.13)
    outline = (236, 236, 236) if dark_bg else (28, 28, 28)
    m = 8.0
    cw, ch = (384 - 2 * m) / N_COLS, (288 - 2 * m) / N_ROWS
    for c in range(N_COLS + 1):
        fr.line([(m + c * cw, m), (m + c * cw, 288 - m)], grid, 1.5, joint=None)
    for r in range(N_ROWS + 1):
        fr.line([(m, m + r * ch), (384 - m, m + r * ch)], grid, 1.5, joint=None)
    rng = pres.rng
    for o in f["objects"]:
        jx = jy = rot = 0.0
        if not pres.plain:
            jx, jy = rng.uniform(-6, 6), rng.uniform(-5, 5)
            rot = rng.uniform(-10, 10) if o["shape"] != "circle" else 0.0
        cx = m + (o["col"] + 0.5) * cw + jx
        cy = m + (o["row"] + 0.5) * ch + jy
        r = min(cw, ch) * (0.37 if o["size"] == "large" else 0.19)
        pts = shape_polygon(o["shape"], cx, cy, r, rot)
        fr.polygon([(x + 3, y + 4) for x, y in pts], fill=(0, 0, 0, 70))
        fr.polygon(pts, fill=PALETTE[o["colour"]])
        fr.line(pts + [pts[0]], outline, 2.0)
    return post(fr.img.reduce(2), pres, grain=5.0)


def cell_name(col: int, row: int) -> str:
    corner = {(0, 0): "top-left", (N_COLS - 1, 0): "top-right", (0, N_ROWS - 1): "bottom-left",
              (N_COLS - 1, N_ROWS - 1): "bottom-right"}.get((col, row))
    base = f"{ROW_NAMES[row]} row, {COL_NAMES[col]} column from the left"
    return f"{base} ({corner} corner)" if corner else base


def _describe_scene(f):
    objs = sorted(f["objects"], key=lambda o: (o["row"], o["col"]))
    parts = [f"a {o['size']} {o['colour']} {o['shape']} in the {cell_name(o['col'], o['row'])}"
             for o in objs]
    counts: dict[tuple[str, str], int] = {}
    for o in objs:
        counts[(o["colour"], o["shape"])] = counts.get((o["colour"], o["shape"]), 0) + 1
    ctext = fmt_list([f"{n} {c} {s}{'s' if n != 1 else ''}"
                      for (c, s), n in sorted(counts.items())])
    return (f"A top-down view of a {f['background']} table-top divided by faint lines into a "
            f"grid of 4 columns and 3 rows, with {len(objs)} object(s), one per cell: "
            + "; ".join(parts) + f". In total: {ctext}.")


def _near_scene_obj(f, rng, what):
    objs = copy.deepcopy(f["objects"])
    i = rng.randrange(len(objs))
    o = objs[i]
    if what == "move":
        used = {(p["col"], p["row"]) for p in objs}
        free = [(c, r) for r in range(N_ROWS) for c in range(N_COLS) if (c, r) not in used]
        if not free:
            raise ValueError("scene: X2 needs an empty cell to move an object into")
        o["col"], o["row"] = rng.choice(free)
    elif what == "attr":
        if rng.random() < 0.5:
            o["shape"] = other_choice(rng, SHAPES, [o["shape"]])
        else:
            o["colour"] = far_colour(rng, o["colour"])
    else:
        o["colour"] = close_colour(rng, o["colour"])
    return replaced(f, "objects", objs)


register(KindSpec(
    name="scene",
    required=("background", "objects"),
    validate=_validate_scene,
    draw=_draw_scene,
    describe=_describe_scene,
    near={
        "X1": lambda f, rng: replaced(f, "background", far_colour(rng, f["background"])),
        "X2": lambda f, rng: _near_scene_obj(f, rng, "move"),
        "X3": lambda f, rng: _near_scene_obj(f, rng, "attr"),
        "X4": lambda f, rng: _near_scene_obj(f, rng, "close"),
    },
    near_doc={
        "X1": "background: the whole table-top becomes a clearly different colour",
        "X2": "objects: one object moves to an empty cell",
        "X3": "objects: one object's shape or colour (clearly different) changes",
        "X4": "objects: one object's colour becomes a close palette neighbour",
    },
    example={"background": "beige",
             "objects": [{"shape": "circle", "colour": "red", "col": 0, "row": 0, "size": "large"},
                         {"shape": "star", "colour": "blue", "col": 2, "row": 0, "size": "small"},
                         {"shape": "circle", "colour": "red", "col": 3, "row": 1, "size": "small"},
                         {"shape": "triangle", "colour": "green", "col": 1, "row": 2,
                          "size": "large"},
                         {"shape": "heart", "colour": "pink", "col": 3, "row": 2, "size": "large"},
                         {"shape": "square", "colour": "yellow", "col": 1, "row": 1,
                          "size": "small"}]},
))


# ============================================================================================
# entity

ENTITY_KINDS = ("mug", "cat", "dog", "plant", "bottle", "sneaker", "backpack", "lamp")
# Drawn for a timeline's larger haystack world only (synth/_world.py MORE_ENTITY_KINDS); kept
# apart so near-duplicates of the kinds above draw from the same kinds as before.
MORE_ENTITY_KINDS = ("vase", "teapot", "hat", "umbrella", "cushion", "jar")
PATTERNS = ("none", "stripes", "dots", "zigzag")
MARKS = ("none", "star", "heart", "moon", "bolt", "leaf")
NAME_POOL = ("Milo", "Luna", "Pip", "Basil", "Juno", "Otto", "Fig", "Nova", "Bean", "Ziggy",
             "Mochi", "Rex")
COLLAR = (44, 44, 52)
FIXTURE = (72, 72, 80)  # lamp stand, bottle cap
LEAF = (56, 146, 66)
SOLE = (244, 242, 236)
BACKDROPS = (((232, 229, 222), (196, 184, 166)), ((214, 224, 232), (170, 160, 150)),
             ((226, 216, 206), (150, 120, 96)), ((220, 228, 214), (186, 186, 180)),
             ((238, 234, 228), (124, 128, 134)), ((212, 208, 218), (202, 190, 174)))

# how the body colour, mark and tag are worded per kind
ENTITY_WORDS = {
    "mug": ("a mug with a handle; its inside is a darker shade", "mug", "front of the mug",
            "handle"),
    "cat": ("a sitting cat with pointed ears, whiskers, a curled tail and a dark collar",
            "fur", "chest", "collar"),
    "dog": (("a sitting dog with floppy ears (a darker shade of its fur), a snout with a black "
             "nose and pink tongue, a tail "
             "and a dark collar"), "fur", "chest", "collar"),
    "plant": ("a potted plant with green leaves", "pot", "pot", "pot rim"),
    "bottle": ("a bottle with a dark grey cap", "bottle", "middle of the bottle", "neck"),
    "sneaker": ("a sneaker seen from the side, with a white sole and laces", "upper",
                "side of the shoe", "heel"),
    "backpack": ("a backpack with a top handle, dark grey side straps and a front pocket", "fabric",
                 "front pocket", "top handle"),
    "lamp": ("a table lamp with a dark stand and base", "lampshade", "lampshade",
             "pull chain"),
    "vase": ("a vase with a round belly, a narrow neck and a darker rim", "vase",
             "belly of the vase", "neck"),
    "teapot": ("a teapot with a spout, a handle and a darker lid with a grey knob", "teapot",
               "side of the teapot", "lid"),
    "hat": ("a hat with a round crown, a wide brim and a darker band", "hat", "crown",
            "brim"),
    "umbrella": ("an open umbrella on a dark grey shaft with a hooked handle", "canopy",
                 "canopy", "tip"),
    "cushion": ("a square cushion with rounded corners and darker corner tassels", "cover",
                "middle of the cushion", "corner"),
    "jar": ("a jar with a dark grey screw lid", "jar", "middle of the jar", "lid"),
}


def _validate_entity(f):
    k = "entity"
    require(k, f, ("kind", "body", "pattern", "pattern_colour", "mark", "mark_colour"))
    check_enum(k, "kind", f["kind"], ENTITY_KINDS + MORE_ENTITY_KINDS)
    check_colour(k, "body", f["body"])
    check_enum(k, "pattern", f["pattern"], PATTERNS)
    check_colour(k, "pattern_colour", f["pattern_colour"])
    check_enum(k, "mark", f["mark"], MARKS)
    check_colour(k, "mark_colour", f["mark_colour"])
    if f.get("name_tag") is not None:
        check_str(k, "name_tag", f["name_tag"])


def _curve(p0, p1, p2, n=14):
    out = []
    for i in range(n + 1):
        t = i / n
        out.append(((1 - t) ** 2 * p0[0] + 2 * (1 - t) * t * p1[0] + t * t * p2[0],
                    (1 - t) ** 2 * p0[1] + 2 * (1 - t) * t * p1[1] + t * t * p2[1]))
    return out


def _entity_parts(kind: str, body):
    """Local geometry in a 200x200 box, floor at y=190.

    Returns dict with: body (shapes that take body colour + pattern), behind (shape, colour)
    drawn first, front (shape, colour) drawn over the pattern, mark (cx, cy, r), tag (x, y).
    Shapes: ("ell", cx, cy, rx, ry[, rot]) | ("poly", pts) | ("rrect", x0, y0, x1, y1, r) |
    ("ring", cx, cy, rx, ry, w) | ("stroke", pts, w)."""
    dark = shade(body, -0.42)
    light = mix(body, (255, 255, 255), 0.4)
    eye = (250, 250, 240)
    if kind == "mug":
        return {
            "behind": [],
            "body": [("ring", 146, 122, 27, 33, 13), ("rrect", 44, 58, 146, 188, 14)],
            "front": [("ell", 95, 62, 48, 8, 0, dark)],
            "mark": (95, 120, 19), "tag": (168, 140)}
    if kind == "cat":
        tail = _curve((134, 178), (186, 170), (170, 112))
        return {
            "behind": [],
            "body": [("stroke", tail, 12), ("ell", 100, 142, 46, 48), ("ell", 86, 186, 13, 6),
                     ("ell", 114, 186, 13, 6),
                     ("poly", [(70, 70), (70, 28), (98, 52)]),
                     ("poly", [(130, 70), (130, 28), (102, 52)]),
                     ("ell", 100, 80, 34, 30)],
            "front": [("poly", [(74, 60), (74, 38), (90, 52)], (236, 150, 170)),
                      ("poly", [(126, 60), (126, 38), (110, 52)], (236, 150, 170)),
                      ("ell", 87, 76, 6, 7, 0, eye), ("ell", 113, 76, 6, 7, 0, eye),
                      ("ell", 87, 77, 2.2, 5, 0, (20, 20, 20)),
                      ("ell", 113, 77, 2.2, 5, 0, (20, 20, 20)),
                      ("poly", [(95, 88), (105, 88), (100, 94)], (232, 112, 138)),
                      ("stroke", [(60, 90), (84, 93)], 1, (60, 60, 60)),
                      ("stroke", [(60, 98), (84, 96)], 1, (60, 60, 60)),
                      ("stroke", [(140, 90), (116, 93)], 1, (60, 60, 60)),
                      ("stroke", [(140, 98), (116, 96)], 1, (60, 60, 60)),
                      ("rrect", 72, 104, 128, 112, 4, COLLAR)],
            "mark": (100, 160, 15), "tag": (100, 112)}
    if kind == "dog":
        tail = _curve((138, 176), (172, 168), (176, 130))
        return {
            "behind": [],
            "body": [("stroke", tail, 11), ("ell", 100, 144, 46, 46), ("ell", 84, 186, 14, 6),
                     ("ell", 116, 186, 14, 6), ("ell", 100, 78, 33, 31)],
            "front": [("ell", 67, 84, 11, 26, 18, dark), ("ell", 133, 84, 11, 26, -18, dark),
                      ("ell", 100, 96, 18, 13, 0, light),
                      ("ell", 100, 90, 7, 5, 0, (20, 20, 20)),
                      ("ell", 100, 106, 5, 6, 0, (232, 108, 128)),
                      ("ell", 87, 72, 4.5, 4.5, 0, (20, 20, 20)),
                      ("ell", 113, 72, 4.5, 4.5, 0, (20, 20, 20)),
                      ("ell", 88.5, 70.5, 1.3, 1.3, 0, (255, 255, 255)),
                      ("ell", 114.5, 70.5, 1.3, 1.3, 0, (255, 255, 255)),
                      ("rrect", 70, 108, 130, 116, 4, COLLAR)],
            "mark": (100, 162, 15), "tag": (100, 116)}
    if kind == "plant":
        leaves = []
        for cx, cy, rx, ry, rot in ((100, 50, 12, 34, 0), (72, 64, 11, 30, -38),
                                    (128, 64, 11, 30, 38), (56, 92, 10, 24, -68),
                                    (144, 92, 10, 24, 68), (86, 40, 9, 24, -14),
                                    (114, 40, 9, 24, 14)):
            leaves.append(("ell", cx, cy, rx, ry, rot, LEAF))
        return {
            "behind": [("stroke", [(100, 112), (100, 30)], 3, (40, 110, 50)), *leaves],
            "body": [("poly", [(58, 120), (142, 120), (130, 188), (70, 188)]),
                     ("rrect", 50, 108, 150, 126, 4)],
            "front": [("ell", 100, 110, 44, 3, 0, (74, 52, 36))],
            "mark": (100, 156, 17), "tag": (146, 124)}
    if kind == "bottle":
        return {
            "behind": [],
            "body": [("rrect", 84, 38, 116, 84, 4), ("ell", 100, 88, 38, 24),
                     ("rrect", 62, 84, 138, 188, 16)],
            "front": [("rrect", 81, 24, 119, 44, 4, FIXTURE)],
            "mark": (100, 132, 18), "tag": (116, 60)}
    if kind == "sneaker":
        upper = [(26, 172), (27, 120), (38, 92), (60, 84), (82, 90), (98, 110), (130, 122),
                 (162, 132), (183, 148), (190, 172)]
        lace = light if luminance(body) < 0.5 else dark
        laces = [("stroke", [(96 + 10 * i, 104 + 5 * i), (106 + 10 * i, 116 + 4 * i)], 2.6, lace)
                 for i in range(4)]
        return {
            "behind": [],
            "body": [("poly", upper)],
            "front": [("rrect", 16, 166, 196, 189, 9, SOLE), ("ell", 60, 90, 21, 6, -6, dark),
                      *laces],
            "mark": (124, 150, 14), "tag": (30, 110, -1)}
    if kind == "backpack":
        return {
            "behind": [("rrect", 38, 72, 54, 172, 6, FIXTURE),
                       ("rrect", 146, 72, 162, 172, 6, FIXTURE)],
            "body": [("ring", 100, 48, 17, 14, 6), ("rrect", 52, 52, 148, 188, 26)],
            "front": [("rrect", 66, 116, 134, 178, 12, None, dark),
                      ("stroke", [(72, 128), (128, 128)], 2, dark)],
            "mark": (100, 152, 15), "tag": (114, 42)}
    if kind == "lamp":
        return {
            "behind": [("rrect", 95, 100, 105, 180, 2, FIXTURE),
                       ("ell", 100, 183, 42, 8, 0, FIXTURE),
                       ("stroke", [(132, 108), (132, 136)], 1.5, (150, 150, 150))],
            "body": [("poly", [(68, 36), (132, 36), (160, 110), (40, 110)])],
            "front": [],
            "mark": (100, 76, 17), "tag": (132, 136)}
    return _more_entity_parts(kind, dark)


def _more_entity_parts(kind: str, dark):
    """:data:`MORE_ENTITY_KINDS`, in the geometry of :func:`_entity_parts`."""
    if kind == "vase":
        return {
            "behind": [],
            "body": [("rrect", 80, 36, 120, 90, 8), ("ell", 100, 136, 50, 54)],
            "front": [("ell", 100, 38, 24, 6, 0, dark)],
            "mark": (100, 138, 18), "tag": (120, 70)}
    if kind == "teapot":
        return {
            "behind": [],
            "body": [("ring", 46, 130, 18, 26, 10),
                     ("poly", [(140, 128), (182, 86), (192, 92), (152, 150)]),
                     ("ell", 100, 138, 56, 50)],
            "front": [("ell", 100, 90, 28, 9, 0, dark), ("ell", 100, 78, 8, 7, 0, FIXTURE)],
            "mark": (100, 142, 18), "tag": (124, 92)}
    if kind == "hat":
        return {
            "behind": [],
            "body": [("ell", 100, 160, 86, 18), ("rrect", 60, 72, 140, 158, 22)],
            "front": [("rrect", 60, 132, 140, 146, 2, dark)],
            "mark": (100, 104, 17), "tag": (176, 160)}
    if kind == "umbrella":
        handle = _curve((100, 170), (100, 190), (120, 182))
        return {
            "behind": [("stroke", [(100, 40), (100, 170)], 4, FIXTURE),
                       ("stroke", handle, 4, FIXTURE)],
            "body": [("poly", [(16, 116), (34, 80), (62, 56), (100, 44), (138, 56), (166, 80),
                               (184, 116)])],
            "front": [("stroke", [(100, 26), (100, 44)], 3, FIXTURE)],
            "mark": (100, 82, 17), "tag": (100, 28)}
    if kind == "cushion":
        return {
            "behind": [],
            "body": [("rrect", 30, 84, 170, 186, 28)],
            "front": [("ell", 36, 90, 6, 6, 0, dark), ("ell", 164, 90, 6, 6, 0, dark),
                      ("ell", 36, 180, 6, 6, 0, dark), ("ell", 164, 180, 6, 6, 0, dark)],
            "mark": (100, 135, 20), "tag": (164, 90)}
    if kind == "jar":
        return {
            "behind": [],
            "body": [("rrect", 58, 72, 142, 188, 18)],
            "front": [("rrect", 54, 50, 146, 76, 6, FIXTURE)],
            "mark": (100, 132, 18), "tag": (100, 62)}
    raise ValueError(kind)


def _shape(fr: Frame, d: ImageDraw.ImageDraw, shp, fill, grow: float = 0.0):
    """Draw one shape filled with ``fill`` (any mode); ``grow`` enlarges it (outline pass).
    Everything is drawn as polygons/polylines so the frame's rotation applies."""
    t = shp[0]
    if t == "ell":
        cx, cy, rx, ry = shp[1:5]
        rot = shp[5] if len(shp) > 5 and isinstance(shp[5], (int, float)) else 0
        d.polygon(fr.pts(ellipse_points(cx, cy, rx + grow, ry + grow, rot=rot)), fill=fill)
    elif t == "poly":
        pts = fr.pts(shp[1])
        d.polygon(pts, fill=fill)
        if grow:
            d.line(pts + [pts[0]], fill=fill, width=fr.lw(2 * grow), joint="curve")
            rr = grow * fr.s
            for p in pts:
                d.ellipse([p[0] - rr, p[1] - rr, p[0] + rr, p[1] + rr], fill=fill)
    elif t == "rrect":
        x0, y0, x1, y1, r = shp[1:6]
        d.polygon(fr.pts(rrect_points(x0 - grow, y0 - grow, x1 + grow, y1 + grow, r + grow)),
                  fill=fill)
    elif t == "ring":
        cx, cy, rx, ry, w = shp[1:6]
        pts = fr.pts(ellipse_points(cx, cy, rx, ry))
        d.line(pts + pts[:2], fill=fill, width=fr.lw(w + 2 * grow), joint="curve")
    elif t == "stroke":
        pts, w = shp[1], shp[2]
        d.line(fr.pts(pts), fill=fill, width=fr.lw(w + 2 * grow), joint="curve")
        rr = (w / 2 + grow) * fr.s
        for p in (fr.p(*pts[0]), fr.p(*pts[-1])):
            d.ellipse([p[0] - rr, p[1] - rr, p[0] + rr, p[1] + rr], fill=fill)


def _detail(fr: Frame, shp, outline_col):
    """A front/behind detail: shape tuple + fill colour (+ optional outline colour)."""
    t = shp[0]
    if t == "ell":
        geom, col = shp[:6], shp[6]
        _shape(fr, fr.draw, geom, rgba(outline_col), grow=1.0)
        _shape(fr, fr.draw, geom, rgba(col))
    elif t == "rrect":
        geom, col = shp[:6], shp[6]
        oc = shp[7] if len(shp) > 7 else outline_col
        if col is None:  # outline only
            fr.polygon(rrect_points(*geom[1:6]), outline=oc, width=2)
        else:
            _shape(fr, fr.draw, geom, rgba(oc), grow=1.0)
            _shape(fr, fr.draw, geom, rgba(col))
    elif t == "poly":
        _shape(fr, fr.draw, shp[:2], rgba(shp[2]))
    elif t == "stroke":
        _shape(fr, fr.draw, shp[:3], rgba(shp[3]))


def _pattern_mask(pf: Frame, pattern: str, grow: float = 0.0) -> None:
    """Draw the pattern (value 255) on the L surface of ``pf``, in local entity units."""
    d = pf.draw
    if pattern == "stripes":
        for i in range(-12, 14):
            x = i * 19.0
            pts = pf.pts([(x - grow, -10), (x + 8.5 + grow, -10), (x + 8.5 + grow + 126, 210),
                          (x - grow + 126, 210)])
            d.polygon(pts, fill=255)
    elif pattern == "dots":
        for j in range(13):
            for i in range(12):
                cx = i * 19.0 + (9.5 if j % 2 else 0) + 4
                cy = j * 17.0 + 6
                X, Y = pf.p(cx, cy)
                r = (5.2 + grow) * pf.s
                d.ellipse([X - r, Y - r, X + r, Y + r], fill=255)
    elif pattern == "zigzag":
        for j in range(11):
            y = j * 20.0 + 4
            pts = [(x * 8.0 - 8, y + (6 if x % 2 else -6)) for x in range(30)]
            d.line(pf.pts(pts), fill=255, width=pf.lw(4.6 + 2 * grow), joint="curve")


def _draw_entity(f, size, pres: Presentation):
    ss = 2
    rng = pres.rng
    if pres.plain:
        cx, cy, k, rot, horizon = 192.0, 146.0, 1.16, 0.0, 196.0
        wall, floor = BACKDROPS[0]
    else:
        k = rng.uniform(0.96, 1.24)
        cx = 192 + rng.uniform(-72, 72)
        cy = 146 + rng.uniform(-10, 10)
        rot = rng.uniform(-6, 6)
        horizon = rng.uniform(168, 214)
        wall, floor = BACKDROPS[pres.surface % len(BACKDROPS)]
    fr = Frame.canvas(size, ss=ss, mode="RGB", fill=wall)
    W2, H2 = fr.img.size
    hy = fr.p(0, horizon)[1]
    fr.draw.rectangle([0, hy, W2, H2], fill=floor)
    fr.draw.line([(0, hy), (W2, hy)], fill=shade(floor, -0.2), width=fr.lw(2))
    body = PALETTE[f["body"]]
    outline = (30, 30, 34) if luminance(body) > 0.18 else (150, 150, 160)
    parts = _entity_parts(f["kind"], body)
    # the entity's own frame: local box point (100, 110) lands on (cx, cy), scaled by k and
    # rotated by ``rot`` about that point
    X, Y = fr.p(cx, cy)
    s_local = fr.s * k
    local = Frame(fr.img, s_local, X - 100 * s_local, Y - 110 * s_local, rot=rot, pivot=(100, 110))
    foot_y = cy + (190 - 110) * k
    fr.ellipse(cx, foot_y, 70 * k, 9 * k, fill=(0, 0, 0, 55))
    for shp in parts["behind"]:
        _detail(local, shp, outline)
    for shp in parts["body"]:
        _shape(local, local.draw, shp, rgba(outline), grow=2.2)
    for shp in parts["body"]:
        _shape(local, local.draw, shp, rgba(body))
    if f["pattern"] != "none":
        mask = Image.new("L", fr.img.size, 0)
        mf = local.sub(mask)
        for shp in parts["body"]:
            _shape(mf, mf.draw, shp, 255)
        pc = PALETTE[f["pattern_colour"]]
        box = mask.getbbox() or (0, 0, W2, H2)
        mbox = mask.crop(box)
        if f["pattern_colour"] == f["body"]:  # keep a same-colour pattern visible: an edge
            edge = shade(pc, 0.5) if luminance(pc) < 0.3 else shade(pc, -0.4)
            em = Image.new("L", fr.img.size, 0)
            _pattern_mask(local.sub(em), f["pattern"], grow=1.2)
            fr.img.paste(edge, box, ImageChops.multiply(em.crop(box), mbox))
        pm = Image.new("L", fr.img.size, 0)
        _pattern_mask(local.sub(pm), f["pattern"])
        fr.img.paste(pc, box, ImageChops.multiply(pm.crop(box), mbox))
    for shp in parts["front"]:
        _detail(local, shp, outline)
    if f["mark"] != "none":
        mx, my, mr = parts["mark"]
        mc = PALETTE[f["mark_colour"]]
        medge = (30, 30, 34) if luminance(mc) > 0.35 else (245, 245, 245)
        for poly in mark_points(f["mark"], mx, my, mr):
            local.polygon(poly, fill=mc)
            local.line(poly + [poly[0]], medge, 1.4)
        if f["mark"] == "leaf":  # midrib + stalk make the lens shape read as a leaf
            a = math.radians(-35)
            ux, uy = math.cos(a), math.sin(a)
            local.line([(mx - ux * mr * 1.25, my - uy * mr * 1.25), (mx + ux * mr * 0.8,
                                                                      my + uy * mr * 0.8)],
                       medge, 1.4)
    if f.get("name_tag"):
        tx, ty, *rest = parts["tag"]
        side = rest[0] if rest else 1  # the tag hangs to the right (1) or left (-1)
        text = f["name_tag"]
        ts = max(10.5 / k, 9.0)
        w = local.tw(text, ts) + 10
        lx = tx + 2 if side > 0 else tx - 2 - w
        local.line([(tx, ty), (tx + 6 * side, ty + 8)], (90, 90, 90), 1.2)
        local.rect(lx, ty + 8, lx + w, ty + 24, fill=(252, 250, 242),
                   outline=(60, 60, 60), width=1, radius=3)
        local.ellipse(tx + 6 * side, ty + 8, 1.6, 1.6, fill=(90, 90, 90))
        local.text(lx + w / 2, ty + 16.5, text, ts, (30, 30, 30), anchor="mm")
    return post(fr.img.reduce(ss), pres, grain=4.0)


def _pattern_words(f) -> str:
    p = f["pattern"]
    if p == "none":
        return "plain, with no pattern"
    noun = {"stripes": "diagonal stripes", "dots": "dots", "zigzag": "zigzag lines"}[p]
    return f"covered in {f['pattern_colour']} {noun} (pattern: {p}, {f['pattern_colour']})"


def _describe_entity(f):
    what, part, mark_place, tag_place = ENTITY_WORDS[f["kind"]]
    mark = ("It carries no logo or mark." if f["mark"] == "none" else
            f"A {f['mark_colour']} {f['mark']} mark is on the {mark_place}.")
    tag = (f" A small white tag reading '{f['name_tag']}' hangs from the {tag_place}."
           if f.get("name_tag") else "")
    return (f"A photo of a single {f['kind']} standing on the floor against a plain wall: "
            f"{what}. Its {part} is {f['body']}, {_pattern_words(f)}. {mark}{tag}")


def _near_entity_x1(f, rng):
    if rng.random() < 0.5:
        return replaced(f, "kind", other_choice(rng, ENTITY_KINDS, [f["kind"]]))
    avoid = [f["pattern_colour"]] if f["pattern"] != "none" else []
    if f["mark"] != "none":
        avoid.append(f["mark_colour"])
    return replaced(f, "body", far_colour(rng, f["body"], avoid))


def _near_entity_x2(f, rng):
    return replaced(f, "name_tag", other_choice(rng, NAME_POOL, [f.get("name_tag")]))


def _near_entity_x3(f, rng):
    opts = ["pattern", "mark"]
    if f["pattern"] != "none":
        opts.append("pattern_colour")
    which = rng.choice(opts)
    if which == "pattern":
        return replaced(f, "pattern", other_choice(rng, PATTERNS, [f["pattern"]]))
    if which == "mark":
        return replaced(f, "mark", other_choice(rng, MARKS, [f["mark"]]))
    return replaced(f, "pattern_colour", far_colour(rng, f["pattern_colour"], [f["body"]]))


def _near_entity_x4(f, rng):
    opts = ["body"]
    if f["pattern"] != "none":
        opts.append("pattern_colour")
    if f["mark"] != "none":
        opts.append("mark_colour")
    if f.get("name_tag"):
        opts.append("name_tag")
    which = rng.choice(opts)
    if which == "name_tag":
        return replaced(f, "name_tag", change_chars(f["name_tag"], rng, 2))
    avoid = [f[k] for k in ("body", "pattern_colour", "mark_colour") if k != which]
    try:
        return replaced(f, which, close_colour(rng, f[which], avoid))
    except ValueError:
        return replaced(f, which, close_colour(rng, f[which]))


register(KindSpec(
    name="entity",
    required=("kind", "body", "pattern", "pattern_colour", "mark", "mark_colour"),
    validate=_validate_entity,
    draw=_draw_entity,
    describe=_describe_entity,
    near={"X1": _near_entity_x1, "X2": _near_entity_x2, "X3": _near_entity_x3,
          "X4": _near_entity_x4},
    near_doc={
        "X1": "kind (another object altogether) or body (a clearly different colour)",
        "X2": "name_tag: the little tag reads another name (or a tag appears)",
        "X3": "pattern, mark, or pattern_colour (clearly different)",
        "X4": "body/pattern_colour/mark_colour -> close palette neighbour, or 2 name_tag chars",
    },
    example={"kind": "cat", "body": "orange", "pattern": "stripes", "pattern_colour": "brown",
             "mark": "star", "mark_colour": "white", "name_tag": "Milo"},
))

