"""Systems that see a chosen part of the gold evidence, or none of it (design 0036).

They answer from a history cut down to what the variant may see, through the run's model
(``--model``) and ``--context-mode`` (``image``: the clue rounds' original images; ``text``:
their text without the images; ``caption``: each image as its caption):

- ``clue-all``: every gold clue round (oracle screening, Caption-Proof);
- ``clue-latest``: only the latest clue round (chronologically: session order, then turn
  order); ``clue-stale``: only the earlier ones (a one-clue question has nothing stale: an
  error of kind ``not_applicable``, never a wrong answer) — the evolving-state (Y3) probes;
- ``shortcut-question``: the question and its options, no history;
  ``shortcut-options``: the options alone, no question, no history.

``--system-option caption=minimal`` cuts each shown caption to one short line (the
minimal-caption audit). Multiple-choice options are listed under the question as ``A. …``.

With ``--model none:`` a system answers with the offline baseline: the option sharing the
most words with what it was shown (``shortcut-options``: the longest option), the first such
option under a tie, so a baseline with nothing to go on sits at chance over rotations.
"""

from __future__ import annotations

import re
import time
from typing import Any

from ..errors import InputError, option_error
from ..models import ModelError
from ..models.none import NoModel
from ..prompt import build_prompt, clean_prediction, shown_caption
from ..registry import baseline, system
from ..schema import Episode, ErrorInfo, EvidenceRef, ImageRef, Question, Response, Session, Turn
from ._base import MemorySystem, SystemContext, SystemFactory

LETTERS = "ABCDEFGHIJ"
SCOPES = ("all", "latest", "stale", "question", "options")
CAPTIONS = ("full", "minimal")
OPTIONS = {"caption": (str, "full (default) | minimal: each shown caption cut to one line")}
MINIMAL_WORDS = 12
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(re.findall(r"\w+", "a an the of and or to in on at is are was were it its "
                             "this that with for by from as be my your his her their what "
                             "which who"))

ClueKey = tuple[str, str | None]


def options_block(question: Question) -> str:
    return "\n".join(f"{LETTERS[i]}. {opt}" for i, opt in enumerate(question.options))


def _option_lines(question: Question) -> set[str]:
    return {f"{LETTERS[i]}. {opt}" for i, opt in enumerate(question.options)}


def question_stem(question: Question) -> str:
    """The question's text without option lines a loader put in it (MemEye lists them)."""
    lines = _option_lines(question)
    return "\n".join(ln for ln in question.text.splitlines() if ln.strip() not in lines).strip()


def shown_question(question: Question, scope: str) -> Question:
    """The question as the variant shows it: its options listed under it (unless the text
    lists them already); for ``options`` the options alone (its text and images withheld)."""
    if not question.options:
        return question
    block = "Options:\n" + options_block(question)
    if scope == "options":
        return question.model_copy(update={"text": block, "images": []})
    present = {ln.strip() for ln in question.text.splitlines()}
    if _option_lines(question) <= present:
        return question
    return question.model_copy(update={"text": f"{question.text}\n\n{block}"})


def clue_keys(question: Question) -> list[ClueKey]:
    return list(dict.fromkeys((p.session_id, p.turn_id) for p in question.evidence))


def _in_round(turn: Turn, key: ClueKey) -> bool:
    """A clue names a session (all its turns) or a round: the turn of that id, or a turn the
    loader marked as belonging to it (``meta.round``: a round's user and assistant turns)."""
    return key[1] is None or turn.turn_id == key[1] or turn.meta.get("round") == key[1]


def chronological(sessions: list[Session], keys: list[ClueKey]) -> list[ClueKey]:
    """Clue keys by session order, then turn order; clues naming nothing ingested are left
    out (the question's evidence points outside its history)."""
    place: dict[ClueKey, tuple[int, int]] = {}
    for si, session in enumerate(sessions):
        for key in keys:
            if key[0] != session.session_id or key in place:
                continue
            at = next((ti for ti, t in enumerate(session.turns) if _in_round(t, key)), None)
            if at is not None:
                place[key] = (si, at)
    return sorted(place, key=place.__getitem__)


def select(sessions: list[Session], keys: list[ClueKey], *, caption: str) -> list[Session]:
    """The sessions cut down to the turns of ``keys``, in history order."""
    out = []
    for session in sessions:
        mine = [k for k in keys if k[0] == session.session_id]
        turns = [t for t in session.turns if any(_in_round(t, k) for k in mine)]
        if caption == "minimal":
            turns = [t.model_copy(update={"images": [minimal_caption(im) for im in t.images]})
                     for t in turns]
        if turns:
            out.append(session.model_copy(update={"turns": turns}))
    return out


def minimal_caption(image: ImageRef) -> ImageRef:
    """The image with its shown caption cut to its first sentence, at most
    ``MINIMAL_WORDS`` words (no caption: none)."""
    text = shown_caption(image)
    if not text:
        return image.model_copy(update={"captions": {}})
    first = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0]
    words = first.split()
    short = " ".join(words[:MINIMAL_WORDS]) + ("…" if len(words) > MINIMAL_WORDS else "")
    meta = {k: v for k, v in image.meta.items() if k != "caption_kind"}
    return image.model_copy(update={"captions": {"generic": short}, "meta": meta})


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def baseline_choice(shown: str, options: list[str]) -> str:
    """The offline baseline's letter: the option sharing the most words with ``shown`` (the
    share of its own words), else, with nothing shown, the longest option; the first under
    a tie."""
    seen = _words(shown)
    if seen:
        scores = [len(_words(o) & seen) / max(1, len(_words(o))) for o in options]
    else:
        scores = [float(len(o)) for o in options]
    return LETTERS[scores.index(max(scores))]


def _prompt_text(sessions: list[Session], question: Question, scope: str, mode: str) -> str:
    """What a text reader of this prompt sees, the options excepted (what the baseline
    matches the options against)."""
    bits = ["" if scope == "options" else question_stem(question)]
    for session in sessions:
        for turn in session.turns:
            bits.append(turn.text)
            if mode == "caption":
                bits += [c for im in turn.images if (c := shown_caption(im))]
    return "\n".join(bits)


class ClueView:
    shares_prefix = False

    def __init__(self, ctx: SystemContext, scope: str, caption: str) -> None:
        self.ctx = ctx
        self.scope = scope
        self.caption = caption
        self.name = f"clue-{scope}" if scope in ("all", "latest", "stale") else f"shortcut-{scope}"
        no_history = scope in ("question", "options")
        self.mode = "no-context" if no_history else ctx.context_mode
        # The question's own images (MemEye's question_image) follow --context-mode even
        # without a history: a text audit never sends their pixels, a caption one their
        # captions.
        self.prompt_mode = ctx.context_mode
        self.modality = {"image": "image", "caption": "caption"}.get(self.mode, "text")
        self.sessions: list[Session] = []

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "scope": self.scope, "context_mode": self.mode,
                "caption": self.caption, "instruction": self.ctx.instruction,
                "baseline": isinstance(self.ctx.model, NoModel)}

    async def reset(self, episode: Episode) -> None:
        self.sessions = []

    async def ingest(self, session: Session) -> None:
        self.sessions.append(session)

    def _visible(self, question: Question) -> list[Session] | ErrorInfo:
        if self.scope in ("question", "options"):
            return []
        keys = chronological(self.sessions, clue_keys(question))
        if not keys:
            return ErrorInfo(kind="not_applicable",
                             message="the question names no clue round in its history")
        if self.scope == "latest":
            keys = keys[-1:]
        elif self.scope == "stale":
            if len(keys) < 2:
                return ErrorInfo(kind="not_applicable",
                                 message="one clue round: nothing earlier than the latest")
            keys = keys[:-1]
        return select(self.sessions, keys, caption=self.caption)

    async def answer(self, question: Question) -> Response:
        visible = self._visible(question)
        if isinstance(visible, ErrorInfo):
            return Response(error=visible)
        shown = shown_question(question, self.scope)
        pointers = [EvidenceRef(session_id=s.session_id, turn_id=t.turn_id)
                    for s in visible for t in s.turns]
        if isinstance(self.ctx.model, NoModel):
            if not question.options:
                return Response(error=ErrorInfo(
                    kind="not_applicable",
                    message="the offline baseline answers multiple choice only; give --model"))
            text = baseline_choice(_prompt_text(visible, question, self.scope, self.mode),
                                   question.options)
            return Response(text=text, meta={"baseline": True, "shown_turns": len(pointers)})
        c = self.ctx
        prompt = build_prompt(visible, shown, mode=self.prompt_mode, instruction=c.instruction,
                              label_images=c.label_images, image_size=c.image_size)
        t0 = time.perf_counter()
        try:
            out = await c.model.generate(prompt.messages, c.generate,
                                         question_id=question.question_id)
        except ModelError as exc:
            return Response(error=ErrorInfo(kind=exc.kind, message=exc.message,
                                            retryable=exc.retryable, attempts=exc.attempts),
                            latency_s=time.perf_counter() - t0)
        except (InputError, OSError) as exc:  # an image that vanished since loading
            return Response(error=ErrorInfo(kind="bad_input", message=str(exc)),
                            latency_s=time.perf_counter() - t0)
        return Response(text=clean_prediction(out.text, c.instruction), usage=out.usage,
                        latency_s=time.perf_counter() - t0, cached=out.cached,
                        meta={"raw": out.text, "n_images": len(prompt.images),
                              "shown_turns": len(pointers)})


def _factory(scope: str, ctx: SystemContext) -> SystemFactory:
    name = f"clue-{scope}" if scope in ("all", "latest", "stale") else f"shortcut-{scope}"
    caption = ctx.typed_options(name, OPTIONS).get("caption", "full")
    if caption not in CAPTIONS:
        raise option_error("caption", f"{name} takes {' or '.join(CAPTIONS)}", repr(caption))

    def make() -> MemorySystem:
        return ClueView(ctx, scope, caption)

    return make


@system("clue-all", options=OPTIONS, kind=baseline)
def clue_all(ctx: SystemContext) -> SystemFactory:
    """Every gold clue round only (images, text or captions by --context-mode)."""
    return _factory("all", ctx)


@system("clue-latest", options=OPTIONS, kind=baseline)
def clue_latest(ctx: SystemContext) -> SystemFactory:
    """Only the latest gold clue round (the evolving-state probe)."""
    return _factory("latest", ctx)


@system("clue-stale", options=OPTIONS, kind=baseline)
def clue_stale(ctx: SystemContext) -> SystemFactory:
    """Only the gold clue rounds before the latest (the evolving-state probe)."""
    return _factory("stale", ctx)


@system("shortcut-question", options=OPTIONS, kind=baseline)
def shortcut_question(ctx: SystemContext) -> SystemFactory:
    """The question and its options without any history (a shortcut audit)."""
    return _factory("question", ctx)


@system("shortcut-options", options=OPTIONS, kind=baseline)
def shortcut_options(ctx: SystemContext) -> SystemFactory:
    """The options alone: no question, no history (a shortcut audit)."""
    return _factory("options", ctx)
