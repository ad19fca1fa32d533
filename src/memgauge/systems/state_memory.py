"""state-memory: entity -> attribute -> value records with validity intervals (design 0026).

At ingest the LLM reads each session (in image context mode with its images) and lists the
states it states or shows: ``{entity, attribute, value, turn, images}``. Memory keeps, per
(entity, attribute), the history of values: a new value closes the interval of the previous
one at the session that changed it; a repeated value adds its sources to the current one.
Each value keeps pointers to its source turns and images. At answer time the (entity,
attribute) slots are ranked against the question (BM25); the reader sees, for the top
``top_k``, the latest valid value, the history of changes and, in image context mode, the
source images.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigFieldError, entry
from ..models import Message, TextPart
from ..registry import system, uses_model
from ..schema import Episode, EvidenceRef, ImageRef, Question, Response, Session
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import (
    SCHEMA_VERSION,
    Caller,
    answer_from,
    item_text_tokens,
    list_field,
    list_reply,
    message,
    pointer_of,
    prompt_version,
    rank,
    render_session,
    retrieved_list,
    string,
)

OPTIONS = {"top_k": (int, "entity/attribute slots the reader sees (default 10)"),
           "max_images": (int, "source images sent to a multimodal reader (default 8)")}

EXTRACT_PROMPT = (
    "You read one session of a conversation and record the state of things it mentions or "
    "shows: for each entity (a person, pet, object, place, account, ...) the attributes whose "
    "value the session gives (owner, colour, price, location, count, status, time, ...). "
    "Each turn is labelled [T1], [T2], ...; each image [I1], [I2], ....\n"
    'Reply with JSON only: {"states": [{"entity": "...", "attribute": "...", "value": "...", '
    '"turn": "T1", "images": ["I1"]}]}. Use {"states": []} when there are none.'
)
VERSION = prompt_version(EXTRACT_PROMPT, SCHEMA_VERSION)
# keys, quotes, line breaks, the entity and attribute, a label, two images
_STATE_FIXED_TOKENS = 56
_SPACES = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text.strip().lower())


@dataclass
class Value:
    value: str
    since: int  # session index (0-based) from which it holds
    since_date: str | None
    until: int | None = None  # the session index that replaced it; None: still valid
    until_date: str | None = None
    sources: list[EvidenceRef] = field(default_factory=list)
    images: list[ImageRef] = field(default_factory=list)


@dataclass
class Slot:
    entity: str
    attribute: str
    history: list[Value] = field(default_factory=list)

    @property
    def current(self) -> Value:
        return self.history[-1]

    def document(self) -> str:
        return " ".join([self.entity, self.attribute, *(v.value for v in self.history)])


class StateMemory:
    name = "state-memory"

    def __init__(self, ctx: SystemContext) -> None:
        self.ctx = ctx
        opts = ctx.typed_options(self.name, OPTIONS)
        self.top_k = opts.get("top_k", 10)
        self.max_images = opts.get("max_images", 8)
        if self.top_k < 1 or self.max_images < 0:
            raise ConfigFieldError(f"{entry('system_options', 'top_k')} must be at least 1, "
                                   "max_images at least 0", "system_options")
        self.images_mode = {"image": "image", "caption": "caption"}.get(ctx.context_mode, "text")
        # Honest: only image context mode sends pixels (at ingest and to the reader).
        self.modality = self.images_mode
        self.reset_state()

    def reset_state(self) -> None:
        self.caller = Caller(self.ctx)
        self.slots: dict[tuple[str, str], Slot] = {}
        self.n_sessions = 0

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "top_k": self.top_k, "max_images": self.max_images,
                "context_mode": self.ctx.context_mode, "instruction": self.ctx.instruction,
                "prompt_version": VERSION}

    async def reset(self, episode: Episode) -> None:
        self.reset_state()

    def _extract_schema(self) -> dict[str, Any]:
        budget = self.caller.tokens()
        value = item_text_tokens(budget, _STATE_FIXED_TOKENS, 16)
        item = {"entity": string(6), "attribute": string(5), "value": string(value),
                "turn": string(3), "images": {"type": "array", "maxItems": 2,
                                              "items": string(3)}}
        return list_reply("states", item, budget, value + _STATE_FIXED_TOKENS)

    async def ingest(self, session: Session) -> None:
        index = self.n_sessions
        self.n_sessions += 1
        shown = render_session(session, images=self.images_mode)
        raw = await self.caller.ingest_json(
            [message("system", EXTRACT_PROMPT),
             _user(shown.parts)],
            list_field("states"), stage="extract", session_id=session.session_id,
            schema=self._extract_schema())
        for item in raw or []:
            entity, attribute, value = (item.get(k) for k in ("entity", "attribute", "value"))
            if not all(isinstance(v, str | int | float) and str(v).strip()
                       for v in (entity, attribute, value)):
                continue
            labels = given if isinstance(given := item.get("images"), list) else []
            image_labels = [str(x).strip().strip("[]").upper() for x in labels]
            refs = [r for r in (pointer_of(shown.labels, x) for x in image_labels) if r]
            turn = pointer_of(shown.labels, item.get("turn"))
            sources = (([turn] if turn else []) + refs
                       or [EvidenceRef(session_id=session.session_id)])
            images = [shown.images[x] for x in image_labels if x in shown.images]
            self._record(str(entity).strip(), str(attribute).strip(), str(value).strip(),
                         index, session.date, sources, images)

    def _record(self, entity: str, attribute: str, value: str, index: int, date: str | None,
                sources: list[EvidenceRef], images: list[ImageRef]) -> None:
        key = (_norm(entity), _norm(attribute))
        slot = self.slots.setdefault(key, Slot(entity, attribute))
        if slot.history and _norm(slot.current.value) == _norm(value):
            slot.current.sources.extend(s for s in sources if s not in slot.current.sources)
            slot.current.images.extend(im for im in images if im not in slot.current.images)
            return
        if slot.history:
            slot.current.until, slot.current.until_date = index, date
        slot.history.append(Value(value, index, date, sources=list(sources), images=list(images)))

    def memory(self) -> dict[str, int]:
        blob = json.dumps([[s.entity, s.attribute, [v.value for v in s.history]]
                           for s in self.slots.values()])
        return {"items": sum(len(s.history) for s in self.slots.values()),
                "bytes": len(blob.encode())}

    async def answer(self, question: Question) -> Response:
        failed = self.caller.failed(self.memory(), question)
        if failed is not None:
            return failed
        slots = list(self.slots.values())
        ranking = rank([s.document() for s in slots], question.text)
        top = ranking[: self.top_k]
        images: list[ImageRef] = []
        lines = []
        for i, _ in top:
            lines.append(self._describe_slot(slots[i], images))
        retrieved = retrieved_list(
            [(ref, score) for i, score in top for ref in _sources(slots[i])],
            [(ref, score) for i, score in ranking for ref in _sources(slots[i])])
        notes = "\n".join(lines)
        if images:
            notes += f"\n(The {len(images)} source image(s) follow, numbered in this order.)"
        meta = {**self.caller.ledger.as_meta(), "memory": self.memory(), "slots_read": len(top)}
        response = await answer_from(self.ctx, question, notes, images=images, meta=meta)
        response.retrieved = retrieved
        return response

    def _describe_slot(self, slot: Slot, images: list[ImageRef]) -> str:
        def when(v: Value) -> str:
            start = v.since_date or f"session {v.since + 1}"
            end = "now" if v.until is None else (v.until_date or f"session {v.until + 1}")
            return f"{start} to {end}"

        def shown(v: Value) -> str:
            if self.images_mode != "image":
                return ""
            numbers = []
            for im in v.images:
                if im not in images and len(images) < self.max_images:
                    images.append(im)
                if im in images:
                    numbers.append(str(images.index(im) + 1))
            return f" [source image {', '.join(numbers)}]" if numbers else ""

        now = slot.current
        line = (f"- {slot.entity} / {slot.attribute}: {now.value} (valid {when(now)})"
                f"{shown(now)}")
        if len(slot.history) > 1:
            changes = "; ".join(f"{v.value} ({when(v)}){shown(v)}" for v in slot.history)
            line += f"\n  history: {changes}"
        return line


def _sources(slot: Slot) -> list[EvidenceRef]:
    """The latest value's sources first, then those of earlier values, newest first."""
    return [ref for v in reversed(slot.history) for ref in v.sources]


def _user(pieces: list[Any]) -> Any:
    parts = [TextPart(p) if isinstance(p, str) else p for p in pieces]
    return Message("user", parts)


@system("state-memory", OPTIONS, needs=uses_model)
def state_memory(ctx: SystemContext) -> SystemFactory:
    """Keeps entity/attribute/value states with validity intervals and source images; the
    model answers from the latest state and its history (with the source images in image
    context mode)"""
    StateMemory(ctx)

    def make() -> MemorySystem:
        return StateMemory(ctx)

    return make
