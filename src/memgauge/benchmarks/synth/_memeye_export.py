"""The MemEye release format from a timeline episode (0036).

One task per tier: the tier's timeline is the task's dialog history, and each plan's own
question is asked after all of it (MemEye asks every question at the end). Written per task:
``dialog/<task>.json`` with multiple choice (four rotations, the gold at A, B, C and D in
turn, the distractors in one fixed order), ``dialog/<task>_Open.json`` (the same without
``options``), and the images under ``image/Synth/`` (``<dialog dir>/../<path>`` is the
reference loader's second candidate). Distractors: the stale states of an update chain first,
then values of the answer's own kind (other colours, nearby numbers and dates, the code with
a digit changed, other orders). Deterministic for a seed.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
from collections import Counter
from datetime import date, timedelta
from itertools import permutations
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...schema import AnswerType, Episode, Question, Session, Turn
from . import _world as W
from ._families import AR_FAMILY, FAMILIES, TWO_WAY_FAMILIES, QuestionPlan
from ._memeye_cells import check_questions

IMAGE_DIR = "image/Synth"
LETTERS = "ABCD"
PROFILE = {"name": "User"}
_VOCABULARIES = (W.COLOURS, W.ORIGINS, W.SPOTS, W.PATTERNS)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def check_config(families: list[str] | None, layout: str, questions: int) -> None:
    """Mistakes in a MemEye-format request, caught before anything is written."""
    if layout != "timeline":
        raise ConfigError(f"--format memeye needs --layout timeline (one history per task), "
                          f"not {layout!r}")
    for family in families or []:
        if family == AR_FAMILY:
            raise ConfigError("--format memeye: family 'ar' (refusals) has no MemEye form; "
                              "leave it out of --families")
        if family in TWO_WAY_FAMILIES:
            raise ConfigError(f"--format memeye: family {family!r} has a two-way answer, which "
                              "a 4-option multiple choice cannot hold; leave it out of --families")
    if families is not None and any(f not in FAMILIES for f in families):
        return  # the generator names unknown families
    check_questions(families, questions)


def coverage(plans: list[QuestionPlan], tiers: list[str]) -> dict[str, Any]:
    """The tasks written and the questions per X x Y cell; ``missing`` names the cells with
    none (only cells the chosen --families do not cover: the others are filled, 0036)."""
    cells = Counter(f"{p.labels.x}{p.labels.y}" for p in plans)
    grid = [f"X{x}Y{y}" for x in range(1, 5) for y in range(1, 4)]
    return {"tasks": [task_name(t) for t in tiers], "cells": {c: cells[c] for c in grid},
            "missing": [c for c in grid if not cells[c]]}


def task_name(tier: str) -> str:
    return f"Synth_{tier}"


def write_task(episode: Episode, own_ids: set[str], bench_root: Path, out: Path, tier: str,
               seed: int) -> list[Path]:
    """Write one task (its MCQ file, open twin and images); returns the files written."""
    (out / "dialog").mkdir(parents=True, exist_ok=True)
    (out / IMAGE_DIR).mkdir(parents=True, exist_ok=True)
    dialogues, rounds, images = _dialogues(episode.sessions)
    written = []
    for src in images:
        dest = out / IMAGE_DIR / Path(src).name
        if not dest.exists():
            shutil.copyfile(bench_root / src, dest)
        written.append(dest)
    session_of = {s.session_id: f"D{n}" for n, s in enumerate(episode.sessions, 1)}
    open_qas, mcq_qas = [], []
    for q in episode.questions:
        if q.question_id not in own_ids:
            continue
        qa = _qa(q, rounds, session_of)
        open_qas.append(qa)
        clue_text = " ".join(t.text for s in episode.sessions for t in s.turns
                             if (s.session_id, t.turn_id) in evidence_turns(q))
        mcq_qas.append({**qa, "options": rotations(q.answers[0],
                                                   distractors(q, seed, named=clue_text))})
    name = task_name(tier)
    for suffix, qas in (("", mcq_qas), ("_Open", open_qas)):
        doc = {"task_name": name, "character_profile": PROFILE,
               "multi_session_dialogues": dialogues, "human-annotated QAs": qas}
        path = out / "dialog" / f"{name}{suffix}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written.append(path)
    return written


def _day(stamp: str | None) -> str:
    return (stamp or "").split(" ", 1)[0].replace("/", "-")


def _dialogues(sessions: list[Session],
               ) -> tuple[list[dict[str, Any]], dict[tuple[str, str], str], list[str]]:
    """MemEye sessions (rounds pair a user turn with the reply after it), our (session, turn)
    -> round id, and the image files in order of first use."""
    out, rounds, images = [], {}, []
    image_ids: dict[str, str] = {}
    for n, s in enumerate(sessions, 1):
        sid, items = f"D{n}", []
        for turn in s.turns:
            if turn.role == "user" or not items or items[-1]["assistant"]:
                items.append({"round": f"{sid}:{len(items) + 1}", "user": "", "assistant": ""})
            item = items[-1]
            item["user" if turn.role == "user" else "assistant"] = _text(turn)
            rounds[(s.session_id, turn.turn_id)] = item["round"]
            for im in turn.images:
                if im.source not in image_ids:
                    image_ids[im.source] = f"IMG_{len(image_ids) + 1:04d}"
                    images.append(im.source)
                item.setdefault("input_image", []).append(f"{IMAGE_DIR}/{Path(im.source).name}")
                item.setdefault("image_id", []).append(image_ids[im.source])
                item.setdefault("image_caption", []).append(im.captions.get("gold", ""))
        out.append({"session_id": sid, "date": _day(s.date), "dialogues": items})
    return out, rounds, images


def _text(turn: Turn) -> str:
    return turn.text.replace("<image>", "").strip()


def _qa(q: Question, rounds: dict[tuple[str, str], str], session_of: dict[str, str],
        ) -> dict[str, Any]:
    clue: list[str] = []
    for p in q.evidence:
        r = rounds.get((p.session_id, p.turn_id or ""))
        if r and r not in clue:
            clue.append(r)
    order = {sid: n for n, sid in enumerate(session_of.values())}
    sessions = sorted({r.split(":", 1)[0] for r in clue}, key=order.__getitem__)
    return {"question_id": q.question_id, "point": [[q.labels.x], [q.labels.y]],
            "question": q.text, "answer": q.answers[0], "session_id": sessions, "clue": clue}


def rotations(gold: str, wrong: list[str]) -> list[dict[str, str]]:
    """Four rotations: the distractors keep their order, the gold moves from A to D."""
    out = []
    for at in range(len(LETTERS)):
        values = [*wrong[:at], gold, *wrong[at:]]
        out.append({**dict(zip(LETTERS, values, strict=True)), "answer": LETTERS[at]})
    return out


def evidence_turns(q: Question) -> set[tuple[str, str | None]]:
    return {(p.session_id, p.turn_id) for p in q.evidence}


def distractors(q: Question, seed: int, k: int = 3, named: str = "") -> list[str]:
    """``k`` wrong options: stale states first, then values of the gold's own kind that the
    clue text ``named`` names too (a clue that names three cities with their makers must not
    leave only the right city among the options: the text alone would answer without the
    image), then the rest of the gold's kind."""
    gold = q.answers[0]
    rng = random.Random(f"{seed}:{q.question_id}:options")
    picked: list[str] = []
    seen = {gold.casefold()}
    kind = _alternatives(gold, q.answer_type, rng)
    in_clues = [v for v in kind if named and re.search(rf"\b{re.escape(v)}\b", named)]
    for value in [*reversed(q.old_answers), *in_clues, *kind]:
        if value.casefold() not in seen:
            seen.add(value.casefold())
            picked.append(value)
        if len(picked) == k:
            break
    if len(picked) < k:  # every answer type we emit has more alternatives than this
        raise AssertionError(f"{q.question_id}: only {len(picked)} distractors for {gold!r}")
    rng.shuffle(picked)
    return picked


def _alternatives(gold: str, answer_type: AnswerType, rng: random.Random) -> list[str]:
    """Values of the gold's kind, placed so the gold is not the odd one out: a window of
    consecutive numbers or days with the gold at a random rank, or the same digit positions
    changed in every option (all options pairwise equally far apart). Distractors made by
    nudging the gold independently would leave it the centroid (n-1, n+1, n+2 around n; codes
    each a digit off the gold and two off one another), which a reader of the options alone
    could pick without the images."""
    if answer_type == AnswerType.INTEGER:
        n, rank = int(gold), rng.randrange(4)
        low = max(1, n - rank)
        return [str(v) for v in range(low, low + 4)] + [str(low + 4)]
    if answer_type == AnswerType.DATE:
        day, rank, step = date(*map(int, gold.split("/"))), rng.randrange(4), rng.choice([1, 7])
        return [(day + timedelta(days=(j - rank) * step)).strftime("%Y/%m/%d") for j in range(4)]
    if answer_type == AnswerType.ORDER:
        parts = re.findall(r"\(\d+\)", gold)
        return ["".join(p) for p in rng.sample(list(permutations(parts)),
                                               min(24, math.factorial(len(parts))))]
    for vocabulary in _VOCABULARIES:
        if gold in vocabulary:
            return rng.sample(vocabulary, len(vocabulary))
    if answer_type == AnswerType.CURRENCY or _NUMBER.search(gold):
        return _respelled(gold, rng)
    return []


def _respelled(gold: str, rng: random.Random, k: int = 3) -> list[str]:
    """``k`` variants of ``gold`` differing from it, and from each other, in the same one or
    two digit positions of its number (same length, same format, no new leading zero)."""
    match = _NUMBER.search(gold)
    assert match is not None
    number = match.group()
    spots = [i for i, c in enumerate(number) if c.isdigit()]
    chosen = rng.sample(spots, min(len(spots), 2 if len(spots) >= 4 else 1))
    variants = [list(number) for _ in range(k)]
    for i in chosen:
        pool = "123456789" if i == 0 and number[0] != "0" else "0123456789"
        for v, digit in zip(variants, rng.sample([d for d in pool if d != number[i]], k),
                            strict=True):
            v[i] = digit
    return [gold[:match.start()] + "".join(v) + gold[match.end():] for v in variants]
