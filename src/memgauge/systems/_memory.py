"""What the built-in memory agents share (design 0026): rendering a session for an LLM with
labels that map back to evidence pointers, asking for JSON and reading it robustly, counting
ingest-time calls, ranking stored items, and answering from written memory.

Ingest-time calls carry ``question_id=None``; the per-session prompts hold the session's turns
and nothing else (not its date, which a generated benchmark varies per episode; stored items
carry the date instead), so the response cache serves a haystack session that several
episodes share from the first reading.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ..errors import InputError, option_error
from ..jsontext import json_objects
from ..models import (
    EndpointChecked,
    GenerateConfig,
    ImagePart,
    Message,
    ModelError,
    Part,
    TextPart,
)
from ..prompt import (
    CAPTION_KINDS,
    INSTRUCTIONS,
    QUESTION_TEMPLATE,
    clean_prediction,
    question_message,
    turn_parts,
)
from ..schema import (
    INGEST_FAILED,
    ErrorInfo,
    EvidenceRef,
    ImageRef,
    Question,
    Response,
    RetrievedItem,
    Session,
    Usage,
)
from ._base import SystemContext

T = TypeVar("T")

# "The full ranking they chose from": at least this many candidates, or all when fewer.
RANKING_DEPTH = 50

ANSWER_SYSTEM = (
    "You answer questions about a user's conversation history from memory notes that were "
    "written while reading that history. Use only the notes. If they do not hold the answer, "
    'respond with "Insufficient information".'
)
JSON_RETRY = "That reply was not the JSON asked for. Reply again with only the JSON object."


def prompt_version(*texts: str) -> str:
    """A short digest of prompt texts: a changed wording is a new version (as the judge
    rubrics do), so describe() and the manifest say which prompts produced a run."""
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:8]


def boolean(value: Any) -> bool:
    """An option's yes/no value (``bool("false")`` is True, so ``bool`` will not do)."""
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


# --- reading JSON out of a reply ------------------------------------------------------------


def json_replies(text: str) -> list[dict[str, Any]]:
    """The JSON objects in a reply, best first: the judge's reading (whole reply, fenced
    blocks, flat objects), then any nested object embedded in prose."""
    text = clean_prediction(text or "")
    found = json_objects(text)
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and obj not in found:
            found.append(obj)
    return found


def list_field(key: str) -> Callable[[dict[str, Any]], list[dict[str, Any]] | None]:
    """A picker for replies of the shape ``{key: [{...}, ...]}`` (non-object items dropped)."""

    def pick(obj: dict[str, Any]) -> list[dict[str, Any]] | None:
        value = obj.get(key)
        if not isinstance(value, list):
            return None
        return [v for v in value if isinstance(v, dict)]

    return pick


def text_field(key: str) -> Callable[[dict[str, Any]], str | None]:
    def pick(obj: dict[str, Any]) -> str | None:
        value = obj.get(key)
        return value.strip() if isinstance(value, str) else None

    return pick


# --- asking for JSON that fits (design 0042) -----------------------------------------------

# Folded into each agent's prompt version: its requests now carry reply schemas.
SCHEMA_VERSION = "reply-schemas-1"
CHARS_PER_TOKEN = 3  # a low guess (prose runs ~4 a token): a bounded string fits its tokens
JSON_FRAME_TOKENS = 12  # the braces, key, quotes and line breaks around a reply's one field
# An ingest reply's floor, whatever --max-tokens (sized for answers) says: held to a schema,
# SmolLM2 pretty-prints (a line and an indent per field), and at the demo's 48 tokens half
# its fact lists were cut off unclosed. A reply stops where its JSON closes, so the floor
# costs only the replies that need it.
INGEST_MIN_TOKENS = 128


# How a reply that the token limit cut inside its JSON is closed, tried in this order: a
# small model repeating itself ("10:00am, 10:00am, ...") runs a schema's string to the limit
# (its maxLength is counted at a low guess of characters a token, but repeats run shorter).
# What it wrote before the cut is what it remembered; the value is kept, cut.
_CLOSERS = ('"}', '"]}', '"}]}', "]}", "}")


def closed_at_limit(text: str) -> str:
    """``text`` (a JSON reply cut at the token limit) closed by the first closer that makes
    it parse; unchanged (and still unreadable) when none does or it did not start as JSON.

    >>> closed_at_limit('{"summary": "Morning! I started climbing, 10:00am, 10:0')
    '{"summary": "Morning! I started climbing, 10:00am, 10:0"}'
    """
    body = text.strip()
    if not body.startswith("{"):
        return text
    for closer in _CLOSERS:
        try:
            json.loads(body + closer)
        except ValueError:
            continue
        return body + closer
    return text


def string(tokens: int, *, nullable: bool = False) -> dict[str, Any]:
    """A JSON string of at most ``tokens`` tokens (by the low guess), or null."""
    out: dict[str, Any] = {"type": ["string", "null"] if nullable else "string",
                           "maxLength": max(1, tokens) * CHARS_PER_TOKEN}
    return out


def object_schema(properties: dict[str, dict[str, Any]],
                  title: str | None = None) -> dict[str, Any]:
    """An object with exactly these fields, all present (null where a field allows it)."""
    out: dict[str, Any] = {"type": "object", "properties": properties,
                           "required": list(properties), "additionalProperties": False}
    return {"title": title, **out} if title else out


def text_reply(key: str, max_tokens: int) -> dict[str, Any]:
    """The schema of ``{key: "..."}`` whose text fits a reply of ``max_tokens``: held to
    it, a small model cannot run past its budget and leave the JSON unclosed."""
    return object_schema({key: string(max_tokens - JSON_FRAME_TOKENS)}, title=key)


def list_reply(key: str, item: dict[str, dict[str, Any]], max_tokens: int, item_tokens: int,
               *, at_most: int | None = None) -> dict[str, Any]:
    """The schema of ``{key: [item, ...]}`` with as many items of ``item_tokens`` as fit a
    reply of ``max_tokens`` (at least one: the caller sizes an item to fit), and no more
    than ``at_most``."""
    n = max(1, (max_tokens - JSON_FRAME_TOKENS) // max(1, item_tokens))
    if at_most is not None:
        n = max(1, min(n, at_most))
    return object_schema({key: {"type": "array", "maxItems": n,
                                "items": object_schema(item)}}, title=key)


def item_text_tokens(max_tokens: int, fixed_tokens: int, wanted: int) -> int:
    """Tokens for an item's free text: ``wanted``, or what is left of the reply once its
    frame and the item's fixed fields are counted (at least 4)."""
    return max(4, min(wanted, max_tokens - JSON_FRAME_TOKENS - fixed_tokens))


# --- rendering sessions with labels --------------------------------------------------------


@dataclass
class Rendered:
    """A session as content parts, with the labels it shows mapped to evidence pointers
    (``T3`` a turn, ``I2`` an image)."""

    parts: list[Part]
    labels: dict[str, EvidenceRef]
    images: dict[str, ImageRef] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


def _caption(ref: ImageRef) -> str | None:
    return next((ref.captions[k] for k in CAPTION_KINDS if ref.captions.get(k)), None)


def render_session(session: Session, *, images: str = "caption", prefix: str = "") -> Rendered:
    """One line per turn, ``[T1] user: text``; each image becomes ``[I1: caption]``
    (``images="caption"``; ``[I1: image]`` without one), ``[I1]`` followed by the image
    itself (``"image"``), or ``[I1]`` alone (``"text"``). ``prefix`` makes labels unique
    across sessions (``3.T1``)."""
    parts: list[Part] = []
    labels: dict[str, EvidenceRef] = {}
    refs: dict[str, ImageRef] = {}
    buf: list[str] = []
    n_image = 0

    def flush() -> None:
        if buf:
            parts.append(TextPart("".join(buf)))
            buf.clear()

    for t_idx, turn in enumerate(session.turns, 1):
        t_label = f"{prefix}T{t_idx}"
        labels[t_label] = EvidenceRef(session_id=session.session_id, turn_id=turn.turn_id)
        buf.append(f"[{t_label}] {turn.speaker or turn.role}: ")
        pieces = (turn.text or "").split("<image>")
        shown = [(i, im) for i, im in enumerate(turn.images) if not im.missing]
        queue = list(shown)

        def image(i: int, ref: ImageRef, turn_id: str = turn.turn_id) -> None:
            nonlocal n_image
            n_image += 1
            label = f"{prefix}I{n_image}"
            labels[label] = EvidenceRef(session_id=session.session_id, turn_id=turn_id,
                                        image_index=i)
            refs[label] = ref
            if images == "image":
                buf.append(f"[{label}] ")
                flush()
                parts.append(ImagePart(ref))
                buf.append(" ")
            elif images == "caption":
                buf.append(f"[{label}: {_caption(ref) or 'image'}] ")
            else:
                buf.append(f"[{label}] ")

        if len(pieces) == 1:  # no placeholder: images first, as the full-context layout does
            for i, ref in queue:
                image(i, ref)
            buf.append(pieces[0].strip())
        else:
            for k, piece in enumerate(pieces):
                if k and queue:
                    image(*queue.pop(0))
                buf.append(piece.strip() + (" " if piece.strip() else ""))
            for i, ref in queue:
                image(i, ref)
        buf.append("\n")
    flush()
    return Rendered(parts=parts, labels=labels, images=refs)


def pointer_of(labels: dict[str, EvidenceRef], raw: Any) -> EvidenceRef | None:
    """The pointer a label in a reply names (``T3``, ``[T3]``, ``t3``), or None."""
    if not isinstance(raw, str | int):
        return None
    key = str(raw).strip().strip("[]").upper()
    if isinstance(raw, int) or key.isdigit():
        key = f"T{key}"
    for label, ref in labels.items():
        if label.upper() == key:
            return ref
    return None


def message(role: str, text: str) -> Message:
    return Message(role, [TextPart(text)])  # type: ignore[arg-type]


# --- ingest-time calls -----------------------------------------------------------------------


@dataclass
class IngestFailure:
    session_id: str
    stage: str
    kind: str  # unparsable | model error kind | bad_input | unknown_label ...
    message: str
    # What the session gave the memory is lost (an extraction, summary or rewrite that could
    # not be read); False when the agent kept it another way (a fact added undecided).
    lost: bool = True

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"session_id": self.session_id, "stage": self.stage,
                               "kind": self.kind, "message": self.message}
        if not self.lost:
            out["lost"] = False
        return out


def needed_failures(question: Question, failures: Sequence[IngestFailure]) -> list[IngestFailure]:
    """The lost sessions a question needs: those among its evidence sessions, or, when it
    names none, any (every session ingested before it may hold the answer)."""
    lost = [f for f in failures if f.lost]
    wanted = {p.session_id for p in question.evidence}
    return [f for f in lost if f.session_id in wanted] if wanted else lost


def ingest_failed(question: Question, failures: Sequence[IngestFailure],
                  meta: dict[str, Any]) -> Response | None:
    """The answer of a question whose needed sessions failed to ingest: an ``ingest_failed``
    error naming them (never a score from a memory that lacks them; design 0042). Not
    retryable: a rerun reads the same replies again (from the response cache)."""
    needed = needed_failures(question, failures)
    if not needed:
        return None
    sessions = list(dict.fromkeys(f.session_id for f in needed))
    why = needed[0]
    named = ", ".join(sessions[:5]) + (f" and {len(sessions) - 5} more" if len(sessions) > 5
                                       else "")
    which = "its evidence session" if question.evidence else "a session before it"
    return Response(error=ErrorInfo(
        kind=INGEST_FAILED, retryable=False,
        message=f"{which} did not reach memory: {len(sessions)} session(s) failed to ingest "
                f"({named}); first: {why.session_id} ({why.stage}) {why.kind}: "
                f"{why.message[:200]}"), meta=meta)


@dataclass
class Ledger:
    """An episode's ingest-time LLM use, totals since reset (the shape cost reporting reads:
    ``meta["ingest"]``), and what went wrong while ingesting."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: list[IngestFailure] = field(default_factory=list)
    # The first model error: memory is incomplete from here, so answers become errors.
    fatal: tuple[IngestFailure, ErrorInfo] | None = None
    json_replies: int = 0  # replies that were to be JSON (first asks and retries)
    unreadable: int = 0  # of those, the ones no usable JSON could be read from

    def count(self, usage: Usage, cached: bool) -> None:
        self.calls += 1
        self.cached += int(cached)
        self.prompt_tokens += usage.input_tokens or 0
        self.completion_tokens += usage.output_tokens or 0

    def as_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"ingest": {"calls": self.calls, "cached": self.cached,
                                           "prompt_tokens": self.prompt_tokens,
                                           "completion_tokens": self.completion_tokens}}
        if self.json_replies:
            meta["ingest_replies"] = {"json": self.json_replies, "unreadable": self.unreadable}
        if self.failures:
            meta["ingest_failures"] = [f.as_dict() for f in self.failures]
        return meta


class Caller:
    """Makes a system's LLM calls at ingest (``question_id=None``, counted in the ledger)
    and at answer time (counted in the answer's usage)."""

    def __init__(self, ctx: SystemContext) -> None:
        self.ctx = ctx
        self.ledger = Ledger()

    def config(self, max_tokens: int | None,
               schema: dict[str, Any] | None = None) -> GenerateConfig:
        """An ingest call's settings: ``max_tokens`` when given (a rewrite's bound), else
        the run's cap but at least INGEST_MIN_TOKENS; ``schema`` as structured output."""
        g = self.ctx.generate
        g = replace(g, max_tokens=max_tokens if max_tokens is not None
                    else max(g.max_tokens, INGEST_MIN_TOKENS))
        return g if schema is None else replace(g, json_schema=schema)

    def tokens(self, max_tokens: int | None = None) -> int:
        """The completion tokens an ingest reply gets (what its schema is sized to)."""
        return self.config(max_tokens).max_tokens

    async def ingest_json(self, messages: list[Message], pick: Callable[[dict[str, Any]], T | None],
                          *, stage: str, session_id: str, max_tokens: int | None = None,
                          schema: dict[str, Any] | None = None, loses: bool = True) -> T | None:
        """Ask at ingest for a JSON reply (following ``schema``, sent as structured output
        where the endpoint takes it: design 0042); one retry (showing the bad reply, so the
        retry is a new request and not the cached bad one) when it cannot be read. None,
        with the failure recorded, when it still cannot be, or when the model fails (then
        the ledger's ``fatal`` is set and later ingest calls are skipped). ``loses``: an
        unreadable reply loses what the session gives memory (False where the agent keeps
        it another way)."""
        if self.ledger.fatal is not None:
            return None
        try:
            text = await self._ingest_call(messages, max_tokens, schema)
            value = self._read(text, pick)
            if value is None:
                retry = [*messages, message("assistant", text), message("user", JSON_RETRY)]
                text = await self._ingest_call(retry, max_tokens, schema)
                value = self._read(text, pick)
        except ModelError as exc:
            self._fatal(session_id, stage, ErrorInfo(kind=exc.kind, message=exc.message,
                                                     retryable=exc.retryable,
                                                     attempts=exc.attempts))
            return None
        except (InputError, OSError) as exc:  # an image that cannot be read
            self._fatal(session_id, stage, ErrorInfo(kind="bad_input", message=str(exc)))
            return None
        if value is None:
            self.ledger.failures.append(IngestFailure(
                session_id, stage, "unparsable", f"no usable JSON after a retry: {text[:200]!r}",
                lost=loses))
        return value

    async def ingest_text(self, messages: list[Message], *, stage: str, session_id: str,
                          max_tokens: int | None = None) -> str | None:
        if self.ledger.fatal is not None:
            return None
        try:
            return await self._ingest_call(messages, max_tokens)
        except ModelError as exc:
            self._fatal(session_id, stage, ErrorInfo(kind=exc.kind, message=exc.message,
                                                     retryable=exc.retryable,
                                                     attempts=exc.attempts))
        except (InputError, OSError) as exc:
            self._fatal(session_id, stage, ErrorInfo(kind="bad_input", message=str(exc)))
        return None

    def _read(self, text: str, pick: Callable[[dict[str, Any]], T | None]) -> T | None:
        value = first(json_replies(text), pick)
        if value is None:
            value = first(json_replies(closed_at_limit(text)), pick)
        self.ledger.json_replies += 1
        self.ledger.unreadable += value is None
        return value

    async def _ingest_call(self, messages: list[Message], max_tokens: int | None,
                           schema: dict[str, Any] | None = None) -> str:
        out = await self.ctx.model.generate(messages, self.config(max_tokens, schema),
                                            question_id=None)
        self.ledger.count(out.usage, out.cached)
        return out.text

    def _fatal(self, session_id: str, stage: str, info: ErrorInfo) -> None:
        failure = IngestFailure(session_id, stage, info.kind, info.message)
        self.ledger.failures.append(failure)
        self.ledger.fatal = (failure, info)

    def failed(self, memory: dict[str, int], question: Question) -> Response | None:
        """The answer when ingest failed: after a model error, an error naming the session
        and cause; when sessions the question needs could not be read, ``ingest_failed``
        (never an answer from a memory that silently lacks sessions)."""
        meta = {**self.ledger.as_meta(), "memory": memory}
        if self.ledger.fatal is None:
            return ingest_failed(question, self.ledger.failures, meta)
        failure, info = self.ledger.fatal
        return Response(error=ErrorInfo(
            kind="system_error", retryable=info.retryable, attempts=info.attempts,
            message=f"ingest of session {failure.session_id} ({failure.stage}) failed: "
                    f"{info.kind}: {info.message}"), meta=meta)


def first(objects: Sequence[dict[str, Any]],
          pick: Callable[[dict[str, Any]], T | None]) -> T | None:
    for obj in objects:
        value = pick(obj)
        if value is not None:
            return value
    return None


# --- retrieval and answering -----------------------------------------------------------------


def rank(texts: Sequence[str], query: str, retriever: str = "bm25") -> list[tuple[int, float]]:
    """``(index, score)`` best first over ``texts`` (the analysis package's retrievers)."""
    # lazy: numpy and the retrievers load only when used
    from ..retrieval._sessions import get_retriever

    if not texts:
        return []
    return get_retriever(retriever).rank(list(texts), query)


def embedder_requirements(spec: str | None) -> list[tuple[str, str, str]]:
    """What ``embedder=<spec>`` needs installed (an ``openai:`` one needs nothing)."""
    spec = spec or "model2vec"
    kind = spec.partition(":")[0]
    if kind == "model2vec":
        return [("model2vec", "validate", f"the embedder {spec}")]
    if kind == "sentence-transformers":
        return [("sentence_transformers", "pip install sentence-transformers",
                 f"the embedder {spec}")]
    return []


def retriever_requirements(options: dict[str, Any]) -> list[tuple[str, str, str]]:
    """What the ``retriever`` option (bm25 by default; embed; rag's hybrid with its
    ``text_retriever``) needs installed: checked before the first request, so a missing
    extra is one error at start, not an error on every question."""
    retriever = str(options.get("retriever", "bm25"))
    text_side = str(options.get("text_retriever", "embed")) if retriever == "hybrid" else None
    out: list[tuple[str, str, str]] = []
    if "bm25" in (retriever, text_side):
        out.append(("bm25s", "validate", f"retriever={retriever}"))
    if "embed" in (retriever, text_side):
        out += embedder_requirements(options.get("embedder"))
    return out


EMBEDDER_OPTIONS = {
    "embedder": (str, "retriever=embed: model2vec (default) | model2vec:DIR | "
                      + "sentence-transformers:NAME | openai:MODEL (as --embedder)"),
    "embedder_base_url": (str, "the endpoint of embedder=openai:<model>"),
}


class EmbeddedTexts:
    """A run's text embedder for an agent's ``retriever=embed``, shared by its episodes, with
    the rows of the texts it embedded (stored facts and summaries are ranked again at every
    question and new item: each is embedded once per run)."""

    MAX_ROWS = 50_000

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.rows: dict[str, Any] = {}

    async def rank(self, texts: Sequence[str], query: str) -> list[tuple[int, float]]:
        # lazy: numpy and the retrievers load only when used
        from ..retrieval._sessions import _order

        if not texts:
            return []
        todo = [t for t in dict.fromkeys([*texts, query]) if t not in self.rows]
        if todo:
            if len(self.rows) + len(todo) > self.MAX_ROWS:
                self.rows.clear()
            self.rows.update(zip(todo, await self.embedder.embed(todo), strict=True))
        q = self.rows[query]
        return _order([float(self.rows[t] @ q) for t in texts])

    def endpoints(self) -> list[Any]:
        embedder = self.embedder
        return [embedder.endpoint_check()] if isinstance(embedder, EndpointChecked) else []


def embedded_texts(name: str, opts: dict[str, Any], retriever: str,
                   api_key_env: str = "OPENAI_API_KEY") -> EmbeddedTexts | None:
    """The agent's embedder when ``embedder`` (or ``--embedder``) names one; None keeps the
    analysis package's shared static model (the scores every earlier run had)."""
    if "embedder" not in opts and "embedder_base_url" not in opts:
        return None
    if retriever != "embed":
        raise option_error("embedder", f"{name} with retriever={retriever} embeds nothing "
                           "(use retriever=embed)")
    # lazy: numpy and the embedders load only for a system that retrieves
    from ..retrieval import make_embedder

    return EmbeddedTexts(make_embedder(opts.get("embedder", "model2vec"),
                                       opts.get("embedder_base_url"), api_key_env))


async def rank_with(texts: Sequence[str], query: str, retriever: str,
                    embedded: EmbeddedTexts | None) -> list[tuple[int, float]]:
    """:func:`rank`, or through the run's embedder when one was named."""
    if embedded is None:
        return rank(texts, query, retriever)
    return await embedded.rank(texts, query)


def retrieved_list(chosen: Sequence[tuple[EvidenceRef, float | None]],
                   ranking: Sequence[tuple[EvidenceRef, float | None]]) -> list[RetrievedItem]:
    """The chosen pointers first, then the rest of the ranking they were chosen from (to
    :data:`RANKING_DEPTH` candidates in all), each pointer once."""
    out: list[RetrievedItem] = []
    seen: set[tuple[str, str | None, int | None]] = set()
    for group, is_chosen in ((chosen, True), (ranking, False)):
        for ref, score in group:
            key = (ref.session_id, ref.turn_id, ref.image_index)
            if key in seen:
                continue
            if not is_chosen and len(out) >= RANKING_DEPTH:
                return out
            seen.add(key)
            out.append(_item(ref, score, is_chosen))
    return out


def _item(ref: EvidenceRef, score: float | None, chosen: bool) -> RetrievedItem:
    if "chosen" in RetrievedItem.model_fields:
        return RetrievedItem(pointer=ref, score=score, chosen=chosen)
    return RetrievedItem(pointer=ref, score=score)


def add_usage(total: Usage, more: Usage) -> Usage:
    def plus(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    return Usage(input_tokens=plus(total.input_tokens, more.input_tokens),
                 output_tokens=plus(total.output_tokens, more.output_tokens),
                 total_tokens=plus(total.total_tokens, more.total_tokens),
                 cached_tokens=plus(total.cached_tokens, more.cached_tokens))


async def answer_from(ctx: SystemContext, question: Question, notes: str, *,
                      images: Sequence[ImageRef] = (), usage: Usage | None = None,
                      meta: dict[str, Any] | None = None) -> Response:
    """The run's model reads the notes (and any images) and answers; a model error is the
    answer's error. ``usage`` adds earlier answer-time calls (a question-aware reading)."""
    memory_parts: list[Part] = [TextPart(f"Memory notes:\n{notes or '(empty)'}")]
    for ref in images:
        memory_parts.append(ImagePart(ref))
    messages = [message("system", ANSWER_SYSTEM), Message("user", memory_parts),
                question_message(question, ctx.instruction, ctx.context_mode)]
    meta = dict(meta or {})
    if ctx.count_tokens:
        meta["input_tokens"] = ctx.counter.messages(messages, ctx.image_size)
    meta["n_images"] = len(images)
    t0 = time.perf_counter()
    try:
        out = await ctx.model.generate(messages, ctx.generate, question_id=question.question_id)
    except ModelError as exc:
        return Response(latency_s=time.perf_counter() - t0, meta=meta, usage=usage or Usage(),
                        error=ErrorInfo(kind=exc.kind, message=exc.message,
                                        retryable=exc.retryable, attempts=exc.attempts))
    except (InputError, OSError) as exc:
        return Response(latency_s=time.perf_counter() - t0, meta=meta, usage=usage or Usage(),
                        error=ErrorInfo(kind="bad_input", message=str(exc)))
    meta["raw"] = out.text
    total = out.usage if usage is None else add_usage(usage, out.usage)
    return Response(text=clean_prediction(out.text, ctx.instruction), usage=total,
                    latency_s=time.perf_counter() - t0, cached=out.cached, meta=meta)


def library_prompt(ctx: SystemContext, question: Question, *, system: str, heading: str,
                   listing: str) -> list[Message]:
    """The library adapters' reading prompt: ``system``, then ``heading:`` over the listing of
    what the library found, then the question (its images as captions) in the house template."""
    images = " ".join(p.text for p in turn_parts("", question.images, "caption", False, 0)[0]
                      if isinstance(p, TextPart))
    asked = QUESTION_TEMPLATE.format(instruction=INSTRUCTIONS[ctx.instruction],
                                     question_date=question.question_date or "unknown",
                                     question=f"{question.text} {images}".strip())
    return [Message("system", [TextPart(system)]),
            Message("user", [TextPart(f"{heading}:\n{listing}\n\n{asked}")])]


async def read_and_answer(ctx: SystemContext, messages: list[Message], question: Question, *,
                          retrieved: list[RetrievedItem], meta: dict[str, Any]) -> Response:
    """The run's model answers from a library's retrieved memories (the prompt built by the
    adapter); a model error is the answer's error, keeping what was retrieved. Shared by the
    library adapters (Mem0, A-MEM, LangMem, Letta), whose memories decide the prompt."""
    t0 = time.perf_counter()
    try:
        out = await ctx.model.generate(messages, ctx.generate, question_id=question.question_id)
    except ModelError as exc:
        return Response(retrieved=retrieved, latency_s=time.perf_counter() - t0, meta=meta,
                        error=ErrorInfo(kind=exc.kind, message=exc.message,
                                        retryable=exc.retryable, attempts=exc.attempts))
    meta["raw"] = out.text
    return Response(text=clean_prediction(out.text, ctx.instruction), usage=out.usage,
                    latency_s=time.perf_counter() - t0, cached=out.cached,
                    retrieved=retrieved, meta=meta)


def text_modality(ctx: SystemContext) -> str:
    """What a text-reading agent sees of images: captions (image and caption modes) or
    nothing but their labels (text modes)."""
    return "text" if ctx.context_mode in ("text", "no-context") else "caption"


def image_rendering(ctx: SystemContext) -> str:
    return "text" if ctx.context_mode in ("text", "no-context") else "caption"
