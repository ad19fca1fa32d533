"""Prompt assembly for long-context models, byte-compatible with the MemLens reference layout.

Layout (image mode): a system message; one message per turn with its role; the session
header ``=== Session i (Date: d) ===`` joined by a newline to the first text block of each
session's first turn (or as its own block when the turn starts with an image); ``<image>``
placeholders replaced in order by the turn's images (surplus images after the text, surplus
placeholders dropped); a turn with images but no placeholder puts all images before its
text; a final user message ``{instruction}\\nQuestion Date: {date}\\nQuestion: {q}\\n``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, ContextOverflowError
from .models import ImagePart, Message, Part, TextPart
from .schema import ImageRef, Question, Session
from .tokens import TokenCounter

SYSTEM_PROMPT = (
    "Provide answers based on the given conversation history. "
    "If the question cannot be answered based on the given conversation, "
    'respond with "Insufficient information".'
)
INSTRUCTIONS = {
    "direct": "Directly output the answer with no extra output.",
    "cot": "Think step by step before providing your answer.",
    "reasoning": ("First provide your reasoning inside [REASONING], then provide your final "
                  "answer inside [ANSWER].\nFormat:\n[REASONING] your reasoning here\n"
                  "[ANSWER] your answer here"),
}
QUESTION_TEMPLATE = "{instruction}\nQuestion Date: {question_date}\nQuestion: {question}\n"
CONTEXT_MODES = ("image", "text", "caption", "no-context")
CAPTION_KINDS = ("gold", "dense", "generic", "ocr")
_PLACEHOLDER = re.compile(r"(<image>)")


@dataclass
class Prompt:
    messages: list[Message]
    tokens: int | None = None
    dropped_sessions: int = 0
    images: list[ImageRef] = field(default_factory=list)


def shown_caption(ref: ImageRef) -> str | None:
    """The caption a text reader gets for an image: the run's captioner's when one ran
    (``--captioner``; it marks ``meta["caption_kind"]``, and an image it had no caption for
    gets none rather than another source's), else the data's, first of CAPTION_KINDS."""
    chosen = ref.meta.get("caption_kind")
    if chosen is not None:
        return ref.captions.get(chosen) or None
    return next((ref.captions[k] for k in CAPTION_KINDS if ref.captions.get(k)), None)


def _caption_text(ref: ImageRef) -> str:
    caption = shown_caption(ref)
    return f"[Image: {caption}]" if caption else "[Image]"


def _image_or_caption(ref: ImageRef) -> Part:
    """An image part, or, for a shared photo the data kept only as a caption (a loader marks
    it ``meta["caption_only"]``; LoCoMo's release dropped some URLs), the caption in its
    place: the data has no image to send, and its caption is what it holds of it. A missing
    file is never replaced: it stays an image part and fails as missing (design 0004)."""
    if ref.path is None and not ref.url and ref.meta.get("caption_only"):
        return _text_part(_caption_text(ref))
    return _image_part(ref)


def turn_parts(text: str, images: Sequence[ImageRef], mode: str, label_images: bool,
               image_offset: int) -> tuple[list[Part], int]:
    """Content parts of one turn, and the next global image number."""
    if mode == "text" or not images:
        stripped = text.replace("<image>", "").strip()
        return ([_text_part(stripped)] if stripped else []), \
            image_offset + (0 if mode == "text" else len(images))
    image_part = _image_part
    if mode == "image" and any(im.path is None and not im.url for im in images):
        image_part = _image_or_caption
    if not label_images and mode == "image":  # the common case, without the helper below
        return _images_in_place(text, images, image_part), image_offset + len(images)
    return (_labelled_or_captioned(text, images, mode, label_images, image_offset, image_part),
            image_offset + len(images))


def _images_in_place(text: str, images: Sequence[ImageRef],
                     image_part: Callable[[ImageRef], Part]) -> list[Part]:
    """Image mode, unlabelled: each image where its ``<image>`` placeholder stands, the
    surplus after the text; with no placeholder, all of them before it."""
    text_part, n = _text_part, len(images)
    if "<image>" not in text:
        parts: list[Part] = [image_part(im) for im in images]
        stripped = text.strip()
        if stripped:
            parts.append(text_part(stripped))
        return parts
    parts = []
    pieces = text.split("<image>")
    if pieces[0].strip():
        parts.append(text_part(pieces[0]))
    used = 0
    for piece in pieces[1:]:
        if used < n:
            parts.append(image_part(images[used]))
            used += 1
        if piece.strip():
            parts.append(text_part(piece))
    while used < n:
        parts.append(image_part(images[used]))
        used += 1
    return parts


def _labelled_or_captioned(text: str, images: Sequence[ImageRef], mode: str,
                           label_images: bool, image_offset: int,
                           image_part: Callable[[ImageRef], Part]) -> list[Part]:
    """Labelled images (``[Image 3]`` before each) or caption mode, placed as in
    :func:`_images_in_place`."""
    parts: list[Part] = []
    text_part, n = _text_part, len(images)

    def image(i: int) -> None:
        ref = images[i]
        if label_images:
            parts.append(text_part(f"[Image {image_offset + i + 1}]"))
        if mode == "caption":
            parts.append(text_part(_caption_text(ref)))
        else:
            parts.append(image_part(ref))

    if "<image>" in text:
        used = 0
        # str.split: text pieces with a placeholder between each two (as re.split with the
        # captured "<image>" gives, at a fraction of the cost)
        for k, piece in enumerate(text.split("<image>")):
            if k and used < n:
                image(used)
                used += 1
            if piece.strip():
                parts.append(text_part(piece))
        while used < n:
            image(used)
            used += 1
    else:
        for i in range(n):
            image(i)
        stripped = text.strip()
        if stripped:
            parts.append(text_part(stripped))
    return parts


def _one_slot_maker(cls: type, name: str):
    """``cls(value)`` for a one-field frozen slots dataclass, without the dataclass's
    ``__init__`` (which goes through ``object.__setattr__``): the same object at about half
    the cost. Falls back to ``cls`` itself if the class is not the plain shape assumed."""
    import dataclasses

    slot: Any = cls.__dict__.get(name)
    if tuple(f.name for f in dataclasses.fields(cls)) != (name,) or \
            hasattr(cls, "__post_init__") or \
            type(slot).__name__ != "member_descriptor":  # pragma: no cover - guards a change
        return cls, None, None
    new, set_value = object.__new__, slot.__set__

    def make(value: Any) -> Any:
        obj = new(cls)
        set_value(obj, value)
        return obj

    return make, new, set_value


_text_part, _NEW_TEXT, _SET_TEXT = _one_slot_maker(TextPart, "text")
_image_part = _one_slot_maker(ImagePart, "image")[0]


def session_messages(sessions: Sequence[Session], *, mode: str, label_images: bool = False,
                     numbers: Sequence[int] | None = None) -> list[list[Message]]:
    """Messages per session (so an over-length policy can drop whole sessions)."""
    return _session_messages(sessions, mode, label_images, numbers, None)


def _session_messages(sessions: Sequence[Session], mode: str, label_images: bool,
                      numbers: Sequence[int] | None,
                      images_out: list[list[ImageRef]] | None) -> list[list[Message]]:
    """As :func:`session_messages`; with ``images_out`` given, also appends each session's
    images in the order its messages hold them."""
    out: list[list[Message]] = []
    offset = 0
    message = Message
    new_part, set_text = _NEW_TEXT, _SET_TEXT  # TextPart(...), inlined (see _one_slot_maker)
    for idx, session in enumerate(sessions):
        number = numbers[idx] if numbers is not None else idx + 1
        header = f"=== Session {number} (Date: {session.date or 'unknown'}) ==="
        msgs: list[Message] = []
        append = msgs.append
        pending = True
        images: list[ImageRef] = []
        for turn in session.turns:
            text = turn.text
            # The common case, kept cheap: no images, no placeholder ("<" is a one-byte
            # search, several times faster than looking for "<image>" in a long turn).
            if not turn.images and ("<" not in text or "<image>" not in text):
                stripped = text.strip()
                if not pending:
                    if stripped:
                        if new_part is None or set_text is None:  # pragma: no cover
                            part = TextPart(stripped)
                        else:
                            part = new_part(TextPart)
                            set_text(part, stripped)
                        append(message("assistant" if turn.role == "assistant" else "user",
                                       [part]))
                    continue
                parts: list[Part] = [TextPart(stripped)] if stripped else []
            else:
                visible = [im for im in turn.images if not im.missing]
                parts, offset = turn_parts(text, visible, mode, label_images, offset)
                if images_out is not None and visible and mode == "image":
                    images.extend(visible)  # image mode shows every visible image, in order
            if pending:
                if parts and isinstance(parts[0], TextPart):
                    parts[0] = TextPart(f"{header}\n{parts[0].text}")
                else:
                    parts.insert(0, TextPart(header))
                pending = False
            if parts:
                role = "assistant" if turn.role == "assistant" else "user"
                append(message(role, parts))
        out.append(msgs)
        if images_out is not None:
            images_out.append(images)
    return out


def question_message(question: Question, instruction: str, mode: str = "image") -> Message:
    """The final user turn. The question's own images (MemEye's ``question_image``) follow
    the context mode as history images do: captions in caption mode, nothing in text mode,
    so a caption or text system never receives their pixels."""
    if instruction not in INSTRUCTIONS:
        raise ConfigError(f"unknown instruction {instruction!r}; known: {', '.join(INSTRUCTIONS)}")
    text = QUESTION_TEMPLATE.format(instruction=INSTRUCTIONS[instruction],
                                    question_date=question.question_date or "unknown",
                                    question=question.text)
    visible = [im for im in question.images if not im.missing]
    if mode == "caption":
        parts: list[Part] = [_text_part(_caption_text(im)) for im in visible]
    elif mode == "text":
        parts = []
    else:
        parts = [ImagePart(im) for im in visible]
    return Message("user", [*parts, TextPart(text)])


def build_prompt(sessions: Sequence[Session], question: Question, *, mode: str = "image",
                 instruction: str = "direct", label_images: bool = False,
                 counter: TokenCounter | None = None, image_size=None,
                 max_tokens: int | None = None, overflow: str = "error") -> Prompt:
    """Assemble the prompt; count it when a counter is given; apply the over-length policy.

    ``overflow`` is ``error`` (raise :class:`ContextOverflowError`) or ``drop-oldest``
    (remove whole sessions from the start, keeping their original numbers, and record how
    many were dropped).
    """
    if mode not in CONTEXT_MODES:
        raise ConfigError(f"unknown context mode {mode!r}; known: {', '.join(CONTEXT_MODES)}")
    if overflow not in ("error", "drop-oldest"):
        raise ConfigError(f"unknown overflow policy {overflow!r}; use error or drop-oldest")
    system = Message("system", [TextPart(SYSTEM_PROMPT)])
    final = question_message(question, instruction, mode)
    per_images: list[list[ImageRef]] = []
    per_session = [] if mode == "no-context" else _session_messages(
        sessions, mode, label_images, None, per_images)
    dropped = 0
    tokens = None
    if counter is not None:
        size = image_size or (lambda p: (p.image.width, p.image.height))
        costs = [counter.messages(msgs, size) - counter.reply_priming for msgs in per_session]
        tokens = counter.messages([system, final], size) + sum(costs)
        if max_tokens is not None and tokens > max_tokens:
            if overflow == "error":
                raise ContextOverflowError(tokens, max_tokens)
            while dropped < len(costs) and tokens > max_tokens:
                tokens -= costs[dropped]
                dropped += 1
            if tokens > max_tokens:
                raise ContextOverflowError(tokens, max_tokens)
    messages = [system]
    for msgs in per_session[dropped:]:
        messages.extend(msgs)
    messages.append(final)
    # The prompt's images in message order (collected while the session messages were built).
    images = [im for session_images in per_images[dropped:] for im in session_images]
    images.extend(p.image for p in final.parts if isinstance(p, ImagePart))
    return Prompt(messages=messages, tokens=tokens, dropped_sessions=dropped, images=images)


_THINK = re.compile(r"^.*?</think>", re.DOTALL)
_SPECIAL = re.compile(r"<\|[^|>]*\|>")
_BOX = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.DOTALL)
_ANSWER = re.compile(r"\[ANSWER\]\s*", re.IGNORECASE)


def clean_prediction(raw: str, instruction: str = "direct") -> str:
    """The answer part of a reply: drop a leading think block and special tokens (as the
    MemLens reference does); in reasoning mode keep what follows ``[ANSWER]``."""
    text = _THINK.sub("", raw, count=1) if "</think>" in raw else raw
    text = _BOX.sub(r"\1", text)
    text = _SPECIAL.sub("", text).replace("[CONTENT_FILTER_REJECTED]", "").strip()
    if instruction == "reasoning":
        pieces = _ANSWER.split(text)
        if len(pieces) >= 2:
            text = pieces[1].strip()
    return text
