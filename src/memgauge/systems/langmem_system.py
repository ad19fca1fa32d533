"""``--system langmem``: LangMem (the ``langmem`` package, extra ``agents``) forms the memory;
the run's model reads what it retrieves.

Per episode a fresh langgraph ``InMemoryStore`` whose index embeds with memgauge's own
embedder (``--embedder``; offline Model2Vec by default). ``ingest`` hands each session, in
order, its turns labelled with the session date and turn id, to LangMem's memory manager
together with the stored memories most like the session (found as LangMem's store manager
finds them: its dilated windows of the conversation as queries). The manager's tool calls
insert, patch or remove memories; memgauge writes the result to the store with the sessions
and turns each memory came from. ``answer`` searches the store for the question, then the
run's model answers from the memories; ``retrieved`` lists their sessions and turns, best
first.

LangMem's manager needs a chat model that calls tools: ``langchain_openai.ChatOpenAI`` at the
run's model's OpenAI-compatible endpoint (a ``local:`` model's llama.cpp server included),
its replies kept in memgauge's response cache. LangSmith tracing is off whatever the
environment says; tiktoken is never called (the store embeds with our embedder, and LangMem counts
no tokens). See
docs/design/0028-mem0.md.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import os
import re
import time
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ..cache import cache_key
from ..errors import ConfigError, option_error
from ..models import EndpointChecked, KnownContext, Message, OpenAIEndpoint, TextPart
from ..prompt import turn_parts
from ..registry import system, uses_model
from ..schema import Episode, EvidenceRef, Question, Response, Session
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import (
    EMBEDDER_OPTIONS,
    RANKING_DEPTH,
    IngestFailure,
    boolean,
    ingest_failed,
    library_prompt,
    read_and_answer,
    retrieved_list,
)

OPTIONS = {
    "top_k": (int, "memories in the answer prompt (default 20)"),
    "query_limit": (int, "stored memories LangMem's manager sees per session (default 10)"),
    "enable_deletes": (str, "true (default): the manager may remove memories; false: never"),
    "ingest_max_tokens": (int, "tokens of each LangMem manager reply (default 1024)"),
    **EMBEDDER_OPTIONS,
}
INSTALL_HINT = "pip install 'memgauge[agents]' (langmem, langchain-openai, langgraph)"
ANSWER_SYSTEM = (
    "You answer questions about a user's past conversations. All you know of them is the "
    "memories below, formed from those conversations; each carries the date of the "
    "conversation it came from. If the memories do not hold the answer, respond with "
    '"Insufficient information".')
NAMESPACE = ("memories", "memgauge")  # one episode = one store, so one namespace
CACHE_KIND = "langmem"
PROMPT_BYTES_PER_TOKEN = 4  # generous: a timeout too short is resent or lost
# LangMem tags each session in its prompt with a fresh uuid4; with it no prompt would ever
# repeat and no reply could come from the cache, so the tag is made constant.
_SESSION_TAG = re.compile(r"session_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class LangMemOptions:
    top_k: int = 20
    query_limit: int = 10
    enable_deletes: bool = True
    ingest_max_tokens: int = 1024
    embedder: str = "model2vec"
    embedder_base_url: str | None = None

    @classmethod
    def parse(cls, ctx: SystemContext) -> LangMemOptions:
        raw = ctx.typed_options("langmem", OPTIONS)
        try:
            deletes = boolean(raw.pop("enable_deletes", "true"))
        except ValueError:
            raise option_error("enable_deletes", "use true or false") from None
        opts = cls(enable_deletes=deletes, **raw)
        for name, low in (("top_k", 1), ("query_limit", 1), ("ingest_max_tokens", 16)):
            if getattr(opts, name) < low:
                raise option_error(name, f"must be at least {low}", getattr(opts, name))
        return opts


# -- the run's model as a langchain chat model -----------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None
    timeout_s: float
    max_retries: int


def run_model_endpoint(ctx: SystemContext, max_tokens: int) -> Endpoint:
    """The OpenAI-compatible endpoint the run's model talks to (a ``local:`` model's own
    llama.cpp server included); a ConfigError for a model that has none (scripted, replay).

    The timeout and retries follow the model's own policy: a local server's timeout is
    scaled to the longest prompt its context takes, and a timed-out request is not sent
    again (the server is still computing it; resending piles up work)."""
    model = ctx.model
    if not isinstance(model, OpenAIEndpoint):
        raise ConfigError(f"--system langmem: LangMem calls tools through an OpenAI-compatible "
                          f"endpoint, and the model {model.name!r} has none: use an endpoint "
                          "(--base-url) or a local: model")
    settings = model.settings
    key = os.environ.get(settings.api_key_env) if model.sends_key() else None  # local: none
    longest = int(model.context_tokens * PROMPT_BYTES_PER_TOKEN) \
        if isinstance(model, KnownContext) else 0
    retries = max(0, settings.max_attempts - 1) if model.timeout_retryable() else 0
    return Endpoint(base_url=model.base, model=model.name, api_key=key,
                    timeout_s=model.request_timeout(longest, max_tokens), max_retries=retries)


@dataclass
class Tally:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    sessions: int = 0
    inserted: int = 0
    updated: int = 0
    removed: int = 0
    no_tool_calls: int = 0  # manager replies with no tool call: LangMem then stores nothing
    # trustcall re-asks (up to twice) after tool arguments its schema rejects, then drops them
    repair_calls: int = 0
    unchanged_sessions: int = 0  # sessions after which the store was as before
    ingest_s: float = 0.0
    # sessions whose manager replies held no tool call and stored nothing
    failures: list[IngestFailure] = field(default_factory=list)

    def ingest(self) -> dict[str, int]:
        return {"calls": self.calls, "cached": self.cached, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


_TALLY: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("langmem_tally",
                                                                      default=None)


# Settings of the client, not of the reply: a local server's port and its timeout (scaled
# with the speed measured at start) are new every run, and would make every key new.
_TRANSPORT = frozenset({"openai_api_base", "base_url", "request_timeout", "timeout",
                        "max_retries", "http_async_client", "http_client", "cache"})


def stable_llm_string(llm_string: str) -> str:
    """langchain's model string (the chat model's serialised constructor, ``---``, the call's
    parameters: tools, tool choice) without the client's transport settings."""
    try:
        head, end = json.JSONDecoder().raw_decode(llm_string)
    except ValueError:
        return llm_string  # not a serialisable model's string: its parameters only
    if isinstance(head, dict) and isinstance(head.get("kwargs"), dict):
        head["kwargs"] = {k: v for k, v in head["kwargs"].items() if k not in _TRANSPORT}
    return json.dumps(head, sort_keys=True) + llm_string[end:]


@functools.cache
def _langmem() -> SimpleNamespace:
    """LangMem and langchain, imported on first use (the core never imports them), and the
    adapter classes built on their bases."""
    try:
        from langchain_core._api import LangChainBetaWarning
        from langchain_core.caches import BaseCache
        from langchain_core.callbacks import AsyncCallbackHandler
        from langchain_core.load import dumpd, load
        from langchain_openai import ChatOpenAI
        from langgraph.store.memory import InMemoryStore
        from langmem import utils as langmem_utils
        from langmem.knowledge.extraction import MemoryManager
        from langsmith.run_helpers import tracing_context
        from pydantic import BaseModel, Field
    except ImportError as exc:
        raise ConfigError(f"--system langmem needs the `agents` extra ({exc}): "
                          f"{INSTALL_HINT}") from None
    # trustcall logs each rejected tool call at ERROR on stderr; they are counted instead
    # (meta.langmem.repair_calls, unchanged_sessions).
    logging.getLogger("extraction").setLevel(logging.CRITICAL)

    class Memory(BaseModel):
        """One memory: a fact, preference or event from the conversation, self-contained,
        with the turns it comes from."""

        content: str = Field(description="the memory, with the date it refers to")
        turns: list[str] = Field(default_factory=list, description=(
            "the ids of the turns it comes from (the `turn …` labels)"))

    class StableTagManager(MemoryManager):
        def _prepare_messages(self, messages: list[Any], max_steps: int = 1) -> list[dict]:
            prepared = super()._prepare_messages(messages, max_steps)
            return [{**m, "content": _SESSION_TAG.sub("session", m["content"])}
                    for m in prepared]

    return SimpleNamespace(ChatOpenAI=ChatOpenAI, InMemoryStore=InMemoryStore, Memory=Memory,
                           Manager=StableTagManager,
                           RunCache=_run_cache_class(BaseCache, load, dumpd,
                                                     LangChainBetaWarning),
                           Counter=_counter_class(AsyncCallbackHandler),
                           windows=langmem_utils.get_dialated_windows,
                           untraced=functools.partial(tracing_context, enabled=False))


def _run_cache_class(base_cache: Any, load: Any, dumpd: Any, beta_warning: Any) -> Any:
    """langchain's cache interface over memgauge's response cache (``base_cache``, ``load``,
    ``dumpd`` and the beta warning are langchain's, passed in from the extra)."""

    class RunCache(base_cache):
        """The manager's replies in memgauge's response cache (kind ``langmem``), keyed by
        the run model's identity, langchain's model string (tools included) and prompt."""

        def __init__(self, cache: Any, identity: dict[str, Any]) -> None:
            self.cache = cache
            self.identity = identity

        def _key(self, prompt: str, llm_string: str) -> str:
            return cache_key({"langmem": self.identity, "llm": stable_llm_string(llm_string),
                              "prompt": prompt})

        def lookup(self, prompt: str, llm_string: str) -> Any:
            hit = self.cache.get(self._key(prompt, llm_string))
            if hit is None:
                return None
            tally = _TALLY.get()
            if tally is not None:
                tally.cached += 1
            with warnings.catch_warnings():  # langchain marks its (stable) loader beta
                warnings.simplefilter("ignore", beta_warning)
                return [load(g, allowed_objects="core") for g in hit["generations"]]

        def update(self, prompt: str, llm_string: str, return_val: Any) -> None:
            self.cache.put(self._key(prompt, llm_string),
                           {"generations": [dumpd(g) for g in return_val]}, kind=CACHE_KIND)

        async def alookup(self, prompt: str, llm_string: str) -> Any:
            return await asyncio.to_thread(self.lookup, prompt, llm_string)

        async def aupdate(self, prompt: str, llm_string: str, return_val: Any) -> None:
            await asyncio.to_thread(self.update, prompt, llm_string, return_val)

        def clear(self, **kwargs: Any) -> None:
            # Not a placeholder: the cache is shared by every system and run, so langchain
            # must never empty it; `memgauge cache` is the tool for that.
            raise NotImplementedError("memgauge's cache is cleared with `memgauge cache`")

    return RunCache


def _counter_class(async_callback_handler: Any) -> Any:
    """The tally's langchain callback, on langchain's base class (passed in from the extra)."""

    class Counter(async_callback_handler):
        """Counts the manager's calls and tokens into the episode's tally."""

        def __init__(self, tally: Tally) -> None:
            self.tally = tally

        async def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            self.tally.calls += 1
            for gens in response.generations:
                for gen in gens:
                    if not getattr(getattr(gen, "message", None), "tool_calls", None):
                        self.tally.no_tool_calls += 1
                    usage = getattr(getattr(gen, "message", None), "usage_metadata", None) or {}
                    self.tally.prompt_tokens += int(usage.get("input_tokens") or 0)
                    self.tally.completion_tokens += int(usage.get("output_tokens") or 0)

    return Counter


# -- what is stored ---------------------------------------------------------------------------

def session_messages(session: Session) -> list[dict[str, str]]:
    """A session as LangMem messages: each turn's text labelled with the session date and
    its turn id, images as their caption or ``[Image]`` (LangMem here reads text)."""
    date = session.date or "unknown date"
    out = []
    for turn in session.turns:
        parts, _ = turn_parts(turn.text, turn.images, "caption", False, 0)
        text = " ".join(p.text.strip() for p in parts if isinstance(p, TextPart)).strip()
        if text:
            out.append({"role": turn.role, "content": f"[{date} · turn {turn.turn_id}] {text}"})
    return out


def memory_text(content: Any) -> tuple[str, list[str]]:
    """(text, turn ids) of a manager's memory: the Memory model, or the dict it came as."""
    if hasattr(content, "model_dump"):
        content = content.model_dump(mode="json")
    if isinstance(content, dict):
        turns = content.get("turns") or []
        return str(content.get("content") or ""), [str(t) for t in turns
                                                   if isinstance(t, str | int)]
    return str(content), []


def _is_removal(content: Any) -> bool:
    return hasattr(content, "__repr_name__") and content.__repr_name__() == "RemoveDoc"


def pointers(value: dict[str, Any], score: float | None) -> list[tuple[EvidenceRef, float | None]]:
    """Where a stored memory came from: the turns of its newest source (the session when
    the manager named none of its turns), then its older sources' sessions."""
    out: list[tuple[EvidenceRef, float | None]] = []
    for n, src in enumerate(value.get("sources") or []):
        sid = src.get("session_id")
        if not isinstance(sid, str):
            continue
        turns = (src.get("turn_ids") or []) if n == 0 else []
        out.extend((EvidenceRef(session_id=sid, turn_id=t), score) for t in turns)
        if not turns:
            out.append((EvidenceRef(session_id=sid), score))
    return out


@dataclass
class Shared:
    """What a run's episodes share: the embedder (one model, one pool), its dimension, the
    chat model (one connection pool on the run's loop)."""

    embedder: Any
    dims: int = 0
    llm: Any = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class LangMemSystem:
    name = "langmem"
    modality = "caption"

    def __init__(self, ctx: SystemContext, opts: LangMemOptions, endpoint: Endpoint,
                 shared: Shared) -> None:
        self.ctx = ctx
        self.opts = opts
        self.endpoint = endpoint
        self.shared = shared
        self.tally = Tally()
        self.store: Any = None
        self.manager: Any = None

    def describe(self) -> dict[str, Any]:
        from importlib.metadata import version

        o = self.opts
        return {"name": self.name, "langmem": version("langmem"), "top_k": o.top_k,
                "query_limit": o.query_limit, "enable_deletes": o.enable_deletes,
                "embedder": self.shared.embedder.name, "ingest_max_tokens": o.ingest_max_tokens,
                "llm": "the run's --model endpoint through langchain-openai ChatOpenAI, "
                       "replies in memgauge's response cache",
                "instruction": self.ctx.instruction}

    # -- the protocol -------------------------------------------------------------------------

    async def reset(self, episode: Episode) -> None:
        m = _langmem()
        await self._share(m)
        self.tally = Tally()
        embedder = self.shared.embedder

        async def embed(texts: list[str]) -> list[list[float]]:
            return (await embedder.embed(texts)).tolist()

        self.store = m.InMemoryStore(index={"dims": self.shared.dims, "embed": embed,
                                            "fields": ["content"]})
        self.manager = m.Manager(self.shared.llm, schemas=(m.Memory,),
                                 enable_deletes=self.opts.enable_deletes)

    async def ingest(self, session: Session) -> None:
        messages = session_messages(session)
        if not messages:
            return
        m = _langmem()
        t0 = time.perf_counter()
        existing = await self._similar(m, messages)
        calls, changes = self.tally.calls, self._changes()
        no_tools = self.tally.no_tool_calls
        token = _TALLY.set(self.tally)
        try:
            # A user's LANGSMITH_TRACING=true would send every prompt to LangSmith.
            with m.untraced():
                extracted = await self.manager.ainvoke(
                    {"messages": messages,
                     "existing": [(k, "Memory", m.Memory(content=v["content"]))
                                  for k, v in existing.items()]},
                    config={"callbacks": [m.Counter(self.tally)]})
        finally:
            _TALLY.reset(token)
            self.tally.ingest_s += time.perf_counter() - t0
        await self._apply(extracted, existing, session)
        self.tally.sessions += 1
        self.tally.repair_calls += max(0, self.tally.calls - calls - 1)
        self.tally.unchanged_sessions += int(self._changes() == changes)
        if self.tally.no_tool_calls > no_tools and self._changes() == changes:
            self.tally.failures.append(IngestFailure(
                session.session_id, "manage", "no_tool_calls",
                "LangMem's manager replied without a tool call and stored nothing"))

    async def answer(self, question: Question) -> Response:
        # The ranking the prompt's top_k come from is recorded to RANKING_DEPTH.
        found = await self.store.asearch(NAMESPACE, query=question.text,
                                         limit=max(self.opts.top_k, RANKING_DEPTH))
        memories = found[: self.opts.top_k]
        retrieved = retrieved_list(_sources(memories), _sources(found))
        meta: dict[str, Any] = {
            "ingest": self.tally.ingest(), "memory": await self._stored(),
            "langmem": {"sessions": self.tally.sessions, "inserted": self.tally.inserted,
                        "updated": self.tally.updated, "removed": self.tally.removed,
                        "no_tool_calls": self.tally.no_tool_calls,
                        "repair_calls": self.tally.repair_calls,
                        "unchanged_sessions": self.tally.unchanged_sessions,
                        "memories": [_memory_view(item) for item in memories]}}
        if self.tally.failures:
            meta["ingest_failures"] = [f.as_dict() for f in self.tally.failures]
        failed = ingest_failed(question, self.tally.failures, meta)
        if failed is not None:
            return failed
        messages = self._prompt(memories, question)
        return await read_and_answer(self.ctx, messages, question,
                                     retrieved=retrieved, meta=meta)

    # -- helpers ------------------------------------------------------------------------------

    def _changes(self) -> int:
        return self.tally.inserted + self.tally.updated + self.tally.removed

    async def _share(self, m: SimpleNamespace) -> None:
        async with self.shared.lock:
            if not self.shared.dims:
                probe = await self.shared.embedder.embed(["dimension probe"])
                self.shared.dims = int(probe.shape[1])
            if self.shared.llm is None:
                self.shared.llm = self._chat_model(m)

    def _chat_model(self, m: SimpleNamespace) -> Any:
        e = self.endpoint
        # read now, after the run's pre-flight: what the server serves is part of it
        model: Any = self.ctx.model  # an OpenAIEndpoint: __init__ refused any other model
        cache = (m.RunCache(self.ctx.cache, model.cache_identity())
                 if self.ctx.cache is not None else False)
        import httpx

        # langchain-openai shares one default client per process, bound to the first event
        # loop that used it; a run's own client lives on the run's loop.
        client = httpx.AsyncClient(timeout=e.timeout_s)
        return m.ChatOpenAI(model=e.model, base_url=e.base_url, api_key=e.api_key or "none",
                            temperature=0.0, seed=self.ctx.generate.seed,
                            max_tokens=self.opts.ingest_max_tokens, timeout=e.timeout_s,
                            max_retries=e.max_retries, cache=cache,
                            http_async_client=client,
                            extra_body=dict(self.ctx.generate.extra_body) or None)

    async def _similar(self, m: SimpleNamespace, messages: list[dict[str, str]]
                       ) -> dict[str, dict[str, Any]]:
        """The stored memories LangMem's store manager would show its manager: the best
        ``query_limit`` over searches for the session's last 1, 2, 4, … turns."""
        queries = m.windows(messages, max(1, self.opts.query_limit // 4))
        found = await asyncio.gather(*(self.store.asearch(NAMESPACE, query=q,
                                                          limit=self.opts.query_limit)
                                       for q in queries))
        best: dict[str, Any] = {}
        for item in (i for items in found for i in items):
            if item.key not in best or (item.score or 0) > (best[item.key].score or 0):
                best[item.key] = item
        ranked = sorted(best.values(), key=lambda i: i.score or 0, reverse=True)
        return {i.key: i.value for i in ranked[: self.opts.query_limit]}

    async def _apply(self, extracted: list[Any], existing: dict[str, dict[str, Any]],
                     session: Session) -> None:
        """The manager's output into the store: removals of stored memories, patched ones
        with this session as their newest source, new ones under stable keys."""
        known_turns = {t.turn_id for t in session.turns}
        fresh = 0
        for mem in extracted:
            if _is_removal(mem.content):
                doc = getattr(mem.content, "json_doc_id", None)
                if doc in existing:
                    await self.store.adelete(NAMESPACE, doc)
                    self.tally.removed += 1
                continue
            text, turns = memory_text(mem.content)
            if not text.strip():
                continue
            source = {"session_id": session.session_id, "session_date": session.date,
                      "turn_ids": [t for t in dict.fromkeys(turns) if t in known_turns]}
            old = existing.get(mem.id)
            if old is not None:
                if old.get("content") == text:
                    continue  # shown to the manager, left as it was
                older = [s for s in old.get("sources", [])
                         if s.get("session_id") != session.session_id]
                await self.store.aput(NAMESPACE, mem.id,
                                      {"content": text, "sources": [source, *older]})
                self.tally.updated += 1
                continue
            fresh += 1
            await self.store.aput(NAMESPACE, f"{session.session_id}#{fresh}",
                                  {"content": text, "sources": [source]})
            self.tally.inserted += 1

    async def _stored(self) -> dict[str, int]:
        items = await self.store.asearch(NAMESPACE, limit=1_000_000)
        return {"items": len(items),
                "bytes": sum(len(str(i.value.get("content", "")).encode()) for i in items)}

    def _prompt(self, memories: list[Any], question: Question) -> list[Message]:
        lines = []
        for item in memories:
            sources = item.value.get("sources") or [{}]
            date = sources[0].get("session_date") or "unknown date"
            scored = f" (relevance {item.score:.3f})" if item.score is not None else ""
            lines.append(f"- {item.value.get('content')} [{date}]{scored}")
        listing = "\n".join(lines) if lines else "(no memories were found)"
        return library_prompt(self.ctx, question, system=ANSWER_SYSTEM,
                              heading="Memories, most relevant first", listing=listing)


def _sources(items: list[Any]) -> list[tuple[EvidenceRef, float | None]]:
    return [p for item in items
            for p in pointers(item.value, float(item.score) if item.score is not None else None)]


def _memory_view(item: Any) -> dict[str, Any]:
    sources = item.value.get("sources") or []
    return {"key": item.key, "memory": item.value.get("content"),
            "sources": sources,
            "score": round(float(item.score), 6) if item.score is not None else None}


@system("langmem", OPTIONS, lambda o: [(m, "agents", "itself") for m in
                                       ("langmem", "langgraph", "langchain_openai")],
        uses_model)
def langmem(ctx: SystemContext) -> SystemFactory:
    """LangMem as the memory: its manager forms memories per session with tool calls, a
    langgraph store searched per question, the model reads (replies in the run's cache)"""
    opts = LangMemOptions.parse(ctx)
    _langmem()  # the install hint, before anything else
    endpoint = run_model_endpoint(ctx, opts.ingest_max_tokens)
    # lazy: numpy and the embedders load only for a system that retrieves
    from ..retrieval import make_embedder

    shared = Shared(embedder=make_embedder(opts.embedder, opts.embedder_base_url,
                                           ctx.api_key_env))

    def make() -> MemorySystem:
        return LangMemSystem(ctx, opts, endpoint, shared)

    def endpoints() -> list[Any]:  # the run's pre-flight checks an embeddings endpoint
        embedder = shared.embedder
        return [embedder.endpoint_check()] if isinstance(embedder, EndpointChecked) else []

    make.endpoints = endpoints  # type: ignore[attr-defined]
    return make
