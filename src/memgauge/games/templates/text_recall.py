"""Text-game templates that recall one step (single_hop) or one step reached from an anchor
(multi_hop). Design 0032, "Text-game templates"."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

from ._base import GameQuestion, template
from ._text_timeline import (
    ORDINAL_WORDS,
    ORDINALS,
    TextTimeline,
    pick_ordinal,
    shuffled,
    whole_number,
)

Questions = Iterator[GameQuestion]
# Keywords are counted in the game's replies only: the player's stated reason is never shown
# to the answering system (design 0039), so no question reads it.
SOURCE_PHRASE = {"observation": "the game's reply to your action"}


@template("text.action_at_step", ability="single_hop", answer_type="action", games=("text",))
def action_at_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """The command typed at step t, as typed (its canonical spelling is an alternative)."""
    for t in shuffled(rng, tl.step_range()):
        typed, canonical = tl.action(t), tl.command(t)
        yield tl.question("text.action_at_step", params={"step": t}, answer=typed,
                          alternatives=[canonical] if canonical != typed else [],
                          text=f"What command did you enter at step {t}?", evidence_steps=[t])


@template("text.room_at_step", ability="single_hop", answer_type="string", games=("text",))
def room_at_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """The room before (the previous step's) or after the action at step t."""
    for t in shuffled(rng, tl.step_range()):
        for when in shuffled(rng, ("before", "after")):
            room = tl.room_before(t) if when == "before" else tl.room_after(t)
            if room is None:
                continue
            evidence = [t] if when == "after" else ([t - 1] if t > 1 else [])
            yield tl.question("text.room_at_step", params={"step": t, "when": when},
                              answer=room, evidence_steps=evidence,
                              text=f"Which room were you in {when} your action at step {t}?")


@template("text.score_after_step", ability="single_hop", answer_type="integer", games=("text",))
def score_after_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """The score after the action at step t (skipped where the score is not a whole number)."""
    for t in shuffled(rng, tl.step_range()):
        score = whole_number(tl.score_after(t))
        if score is not None:
            yield tl.question("text.score_after_step", params={"step": t}, answer=score,
                              text=f"What was your score after your action at step {t}?",
                              evidence_steps=[t])


@template("text.keyword_step", ability="single_hop", answer_type="integer", games=("text",))
def keyword_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """The first/second/last/second-to-last step whose reply mentions a word;
    not answerable when the word is mentioned once and the second is asked."""
    for source, phrase in SOURCE_PHRASE.items():
        for word in shuffled(rng, tl.keywords(source)):
            hits = tl.steps_mentioning(source, word)
            for ordinal in shuffled(rng, ORDINALS):
                params = {"source": source, "keyword": word, "ordinal": ordinal}
                text = (f"At which step was {phrase} the "
                        f"{ORDINAL_WORDS[ordinal]} one to mention '{word}'?")
                hit = pick_ordinal(hits, ordinal)
                if hit is None:
                    yield tl.unanswerable("text.keyword_step", params=params, text=text,
                                          evidence_steps=hits)
                else:
                    yield tl.question("text.keyword_step", params=params, answer=hit,
                                      text=text, evidence_steps=[hit])


ROOM_EVENTS = {"first_enter": "first take you into", "first_leave": "first take you out of",
               "last_enter": "last take you into"}


@template("text.room_event_step", ability="single_hop", answer_type="integer", games=("text",))
def room_event_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """The step whose action first/last took you into a room, or first out of it; not
    answerable for "out of" a room you never left. Being there at reset is no entering."""
    if not tl.fully_known("room"):  # an unknown room could hide the entering or leaving
        return
    entries, exits = tl.entries(), tl.exits()
    for room in shuffled(rng, tl.rooms_visited()):
        into = [t for t, r in entries if r == room]
        out = [t for t, r in exits if r == room]
        for event in shuffled(rng, ROOM_EVENTS):
            steps = out if event == "first_leave" else into
            if not steps and event != "first_leave":
                continue
            params = {"room": room, "event": event}
            text = f"At which step did your action {ROOM_EVENTS[event]} {room}?"
            if not steps:
                yield tl.unanswerable("text.room_event_step", params=params, text=text)
            else:
                step = steps[-1] if event == "last_enter" else steps[0]
                yield tl.question("text.room_event_step", params=params, answer=step,
                                  text=text, evidence_steps=[step])


@template("text.item_gain_step", ability="single_hop", answer_type="integer", games=("text",))
def item_gain_step(tl: TextTimeline, rng: random.Random) -> Questions:
    """The step after whose action an item was first/second/last added to the inventory;
    not answerable for the second time of an item gained once."""
    gains = tl.gains()
    for item in shuffled(rng, dict.fromkeys(i for _, i in gains)):
        steps = [t for t, i in gains if i == item]
        for ordinal in shuffled(rng, ("first", "second", "last")):
            params = {"item": item, "ordinal": ordinal}
            text = (f"At which step did {item} join your inventory for the "
                    f"{ORDINAL_WORDS[ordinal]} time?")
            step = pick_ordinal(steps, ordinal)
            if step is None:
                yield tl.unanswerable("text.item_gain_step", params=params, text=text,
                                      evidence_steps=steps)
            else:
                yield tl.question("text.item_gain_step", params=params, answer=step, text=text,
                                  evidence_steps=[step])


@template("text.observation_after", ability="single_hop", answer_type="string",
          games=("text",))
def observation_after(tl: TextTimeline, rng: random.Random) -> Questions:
    """The game's reply to the action at step t."""
    for t in shuffled(rng, tl.texts("observation")):
        yield tl.question("text.observation_after", params={"step": t}, answer=tl.obs_after(t),
                          text=f"What did the game reply to your action at step {t}?",
                          evidence_steps=[t])


@template("text.observation_before", ability="single_hop", answer_type="string",
          games=("text",))
def observation_before(tl: TextTimeline, rng: random.Random) -> Questions:
    """The text shown just before the action at step t: step t-1's reply, or the opening
    text at step 1."""
    for t in shuffled(rng, tl.step_range()):
        if tl.obs_before(t):
            yield tl.question("text.observation_before", params={"step": t},
                              answer=tl.obs_before(t), evidence_steps=[t - 1] if t > 1 else [],
                              text=f"What text were you looking at when you chose your action "
                                   f"at step {t}?")


# --- multi_hop: an anchor, then a step a few steps later ----------------------------------
ASKS: dict[str, tuple[str, str, Callable[[TextTimeline, int], Any]]] = {
    "action": ("action", "what command did you enter {d} step(s) later?",
               lambda tl, t: tl.action(t)),
    "room": ("string", "which room were you in after your action {d} step(s) later?",
             lambda tl, t: tl.room_after(t)),
    "score": ("integer", "what was your score after your action {d} step(s) later?",
              lambda tl, t: whole_number(tl.score_after(t))),
    "observation": ("string", "what did the game reply to your action {d} step(s) later?",
                    lambda tl, t: tl.obs_after(t) or None),
}


def _keyword_anchors(tl: TextTimeline, rng: random.Random) -> Iterator[tuple[dict, str, int]]:
    for source, phrase in SOURCE_PHRASE.items():
        for word in shuffled(rng, tl.keywords(source)):
            hits = tl.steps_mentioning(source, word)
            for ordinal in shuffled(rng, ("first", "last")):
                anchor = pick_ordinal(hits, ordinal)
                if anchor is not None:
                    yield ({"source": source, "keyword": word, "ordinal": ordinal},
                           (f"Take the step where {phrase} was the "
                            f"{ORDINAL_WORDS[ordinal]} one to mention '{word}':"), anchor)


def _gain_anchors(tl: TextTimeline, rng: random.Random) -> Iterator[tuple[dict, str, int]]:
    first: dict[str, int] = {}
    for t, item in tl.gains():
        first.setdefault(item, t)
    for item in shuffled(rng, first):
        yield {"item": item}, f"Take the step at which {item} first joined your inventory:", \
            first[item]


def _register_offsets(kind: str, anchors: Callable[..., Iterator[tuple[dict, str, int]]],
                      ask: str) -> None:
    answer_type, phrase, value = ASKS[ask]
    template_id = f"text.{kind}_then_{ask}"

    def offsets(tl: TextTimeline, rng: random.Random) -> Questions:
        for anchor_params, lead, anchor in anchors(tl, rng):
            for delta in shuffled(rng, (1, 2, 3)):
                params = {**anchor_params, "offset": delta}
                text = f"{lead} {phrase.format(d=delta)}"
                target = anchor + delta
                if target > tl.last_step:  # that step had not happened yet
                    yield tl.unanswerable(template_id, params=params, text=text,
                                          evidence_steps=[anchor])
                elif (answer := value(tl, target)) is not None:
                    yield tl.question(template_id, params=params, answer=answer, text=text,
                                      evidence_steps=[anchor, target])

    offsets.__doc__ = (f"After the {kind} anchor, the {ask} {{offset}} steps later; not "
                       f"answerable when that step is past the window.")
    offsets.__name__ = f"{kind}_then_{ask}"
    template(template_id, ability="multi_hop", answer_type=answer_type,
             games=("text",))(offsets)


for _ask in ASKS:
    _register_offsets("keyword", _keyword_anchors, _ask)
    _register_offsets("gain", _gain_anchors, _ask)
