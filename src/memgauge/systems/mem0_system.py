"""``--system mem0``: Mem0 (the ``mem0ai`` package, extra ``agents``) is the memory; the
run's model reads what it retrieves.

Per episode a fresh ``mem0.Memory`` with its own vector store and history database in a
temporary folder. ``ingest`` adds each session as one ``add`` call: its turns as messages,
each prefixed with the session date, images as their caption (``[Image: …]``) or
``[Image]``, with ``session_id``/``session_date`` in the metadata. ``answer`` searches the
question (``top_k``), then the run's model answers from the memories; ``retrieved`` lists
the sessions the memories came from, best first.

Mem0's own LLM calls (fact extraction at ``add``) go to the run's ``--model`` through
memgauge's model client — its cache, retries, concurrency limits and token counts — by an
adapter that takes the place of Mem0's LLM object. Embeddings come from an OpenAI-compatible
``/v1/embeddings`` endpoint (``embedder_base_url``, ``embedder_model``) through Mem0's own
OpenAI embedder, or offline from the static Model2Vec model ``rag-embed`` uses. Telemetry is
off and Mem0's home folder is a temporary one: nothing leaves the machine but calls to the
endpoints the user named. See docs/design/0028-mem0.md.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

from ..errors import ConfigError, ConfigFieldError, entry, option_error
from ..models import GenerateConfig, KnownContext, Message, ModelError, ModelOutput, TextPart
from ..prompt import turn_parts
from ..registry import system, uses_model
from ..schema import Episode, EvidenceRef, Question, Response, Session
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import (
    RANKING_DEPTH,
    IngestFailure,
    boolean,
    ingest_failed,
    library_prompt,
    read_and_answer,
    retrieved_list,
)

OPTIONS = {
    "top_k": (int, "memories retrieved per question (default 20)"),
    "infer": (str, "true (default): Mem0's LLM extracts facts at ingest; false: raw messages"),
    "vector_store": (str, "faiss (default, cosine) | qdrant (local, in memory)"),
    "embedder_base_url": (str, "an OpenAI-compatible /v1 base for embeddings (default: "
                               + "the offline static model of rag-embed)"),
    "embedder_model": (str, "the embedding model's name at embedder_base_url"),
    "embedder_api_key_env": (str, "the variable holding that endpoint's key (default: none)"),
    "ingest_max_tokens": (int, "tokens of each Mem0 extraction reply (default 1024)"),
}
INSTALL_HINT = "pip install 'memgauge[agents]' (mem0ai, faiss-cpu)"
ANSWER_SYSTEM = (
    "You answer questions about a user's past conversations. All you know of them is the "
    "memories below, extracted from those conversations; each carries the date of the "
    "conversation it came from. If the memories do not hold the answer, respond with "
    '"Insufficient information".')
USER_ID = "memgauge"  # one episode = one Memory, so one user per Memory


@dataclass(frozen=True)
class Mem0Options:
    top_k: int = 20
    infer: bool = True
    vector_store: str = "faiss"
    embedder_base_url: str | None = None
    embedder_model: str | None = None
    embedder_api_key_env: str | None = None
    ingest_max_tokens: int = 1024
    embedding_dims: int = 0  # learned when the factory is built

    @classmethod
    def parse(cls, ctx: SystemContext) -> Mem0Options:
        raw = ctx.typed_options("mem0", OPTIONS)
        try:
            infer = boolean(raw.pop("infer", "true"))
        except ValueError:
            raise option_error("infer", "use true or false") from None
        opts = cls(infer=infer, **raw)
        if opts.top_k < 1:
            raise option_error("top_k", "must be at least 1", opts.top_k)
        if opts.ingest_max_tokens < 16:
            raise option_error("ingest_max_tokens", "must be at least 16",
                               opts.ingest_max_tokens)
        if opts.vector_store not in ("faiss", "qdrant"):
            raise option_error("vector_store", "use faiss or qdrant", repr(opts.vector_store))
        if (opts.embedder_base_url is None) != (opts.embedder_model is None):
            raise ConfigFieldError(f"{entry('system_options', 'embedder_base_url')} and "
                                   "embedder_model go together (an endpoint and the model it "
                                   "serves)", "system_options")
        if opts.embedder_api_key_env and not os.environ.get(opts.embedder_api_key_env):
            raise option_error("embedder_api_key_env", "that variable is not set",
                               opts.embedder_api_key_env)
        return opts


# -- importing Mem0 without it calling home ------------------------------------------------

_HOME: list[str] = []


@functools.cache
def _mem0() -> SimpleNamespace:
    """Mem0's classes and our adapters, imported on first use (the core never imports it).

    Mem0 sends telemetry (PostHog) and fetches notices from GitHub unless MEM0_TELEMETRY is
    false, read once at import; it writes ``~/.mem0/config.json`` at import unless MEM0_DIR
    says elsewhere. Both are set first; a user's MEM0_TELEMETRY=true is overridden."""
    os.environ["MEM0_TELEMETRY"] = "False"
    if not os.environ.get("MEM0_DIR"):
        home = tempfile.mkdtemp(prefix="memgauge-mem0-home-")
        _HOME.append(home)
        atexit.register(shutil.rmtree, home, True)
        os.environ["MEM0_DIR"] = home
    try:
        import mem0.memory.main as mem0_main
        import mem0.memory.telemetry as mem0_telemetry
        from mem0 import Memory
        from mem0.configs.base import MemoryConfig
        from mem0.configs.embeddings.base import BaseEmbedderConfig
        from mem0.configs.llms.base import BaseLlmConfig
        from mem0.embeddings.base import EmbeddingBase
        from mem0.embeddings.openai import OpenAIEmbedding
        from mem0.llms.base import LLMBase
        from mem0.memory.utils import extract_json, remove_code_blocks
    except ImportError as exc:
        raise ConfigError(f"--system mem0 needs the `agents` extra ({exc}): "
                          f"{INSTALL_HINT}") from None
    # Imported before we set the variable (by the user's own code): switch it off in place.
    mem0_telemetry.MEM0_TELEMETRY = False
    mem0_main.MEM0_TELEMETRY = False
    _no_spacy_download()
    # One warning per Memory that FAISS has no keyword search: said once, in describe().
    logging.getLogger("mem0").setLevel(logging.ERROR)
    # Its one line per unreadable extraction reply (86 on a SmolLM2 run): the tally counts
    # them per session and the run's summary says how many questions they cost.
    main_log = logging.getLogger("mem0.memory.main")
    if _drop_parse_errors not in main_log.filters:
        main_log.addFilter(_drop_parse_errors)

    class RunModelLLM(LLMBase):
        """Mem0's LLM, answered by the run's ChatModel on the run's event loop (Mem0 runs
        in a worker thread and waits)."""

        def __init__(self, system: Mem0System) -> None:
            super().__init__(BaseLlmConfig(model=system.ctx.model.name))
            self.system = system

        # Mem0's bases are unannotated: their `pass` bodies infer None as the return type
        def generate_response(  # pyright: ignore[reportIncompatibleMethodOverride]
                self, messages: list[dict[str, Any]], tools: Any = None,
                              tool_choice: str = "auto", response_format: Any = None,
                              **kwargs: Any) -> str:  # Mem0 passes all but messages by name
            if tools:
                raise ModelError("unsupported", "Mem0 asked for tool calls, which memgauge's "
                                 "adapter does not forward")
            s = self.system
            config = s.ingest_config
            if response_format:
                config = replace(config, extra_body={**config.extra_body,
                                                     "response_format": response_format})
            msgs = [Message(m["role"], [TextPart(_content_text(m.get("content")))])
                    for m in messages]
            assert s.loop is not None  # set by ingest before Mem0 runs in its thread
            out = asyncio.run_coroutine_threadsafe(
                s.ctx.model.generate(msgs, config), s.loop).result()
            s.tally.add(out, parsed=_parses(out.text))
            return out.text

    class StaticEmbedder(EmbeddingBase):
        """The offline static Model2Vec embeddings of ``rag-embed`` (unit length)."""

        def __init__(self, retriever: Any, dims: int) -> None:
            super().__init__(BaseEmbedderConfig(embedding_dims=dims))
            self.retriever = retriever

        # the base's return type is inferred None, as generate_response's above
        def embed(  # pyright: ignore[reportIncompatibleMethodOverride]
                self, text: str, memory_action: Any = None) -> list[float]:
            return self.retriever.embed([text])[0].tolist()

        def embed_batch(  # pyright: ignore[reportIncompatibleMethodOverride]
                self, texts: list[str], memory_action: Any = "add") -> list[list[float]]:
            return self.retriever.embed(list(texts)).tolist() if texts else []

    def _parses(text: str) -> bool:
        try:
            body = remove_code_blocks(text)
            if not body.strip():
                return True
            try:
                data = json.loads(body, strict=False)
            except json.JSONDecodeError:
                data = json.loads(extract_json(body), strict=False)
            return isinstance(data, dict) and isinstance(data.get("memory", []), list)
        except (ValueError, TypeError):
            return False

    return SimpleNamespace(Memory=Memory, MemoryConfig=MemoryConfig,
                           OpenAIEmbedding=OpenAIEmbedding,
                           BaseEmbedderConfig=BaseEmbedderConfig, RunModelLLM=RunModelLLM,
                           StaticEmbedder=StaticEmbedder)


def _drop_parse_errors(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Error parsing extraction response")


def _no_spacy_download() -> None:
    """Mem0 downloads spaCy's en_core_web_sm when spaCy is installed without it; offline that
    is a network call that fails. Mark its loaders as failed instead (no entity boosts)."""
    import importlib.util

    if importlib.util.find_spec("spacy") is None:
        return  # Mem0 then finds no spaCy and goes without it
    import spacy.util

    if spacy.util.is_package("en_core_web_sm"):
        return
    from mem0.utils import spacy_models

    spacy_models._load_failed_full = True
    spacy_models._load_failed_lemma = True


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else str(content)


# -- what one episode's Mem0 did -------------------------------------------------------------

@dataclass
class Tally:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unparsed: int = 0  # extraction replies Mem0 could not read (it then stores nothing)
    adds: int = 0
    add_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    failures: list[IngestFailure] = field(default_factory=list)  # sessions stored as nothing

    def add(self, out: ModelOutput, *, parsed: bool) -> None:
        self.calls += 1
        self.cached += int(out.cached)
        self.prompt_tokens += out.usage.input_tokens or 0
        self.completion_tokens += out.usage.output_tokens or 0
        self.unparsed += int(not parsed)

    def ingest(self) -> dict[str, int]:
        return {"calls": self.calls, "cached": self.cached, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


def session_messages(session: Session) -> list[dict[str, str]]:
    """A session as Mem0 messages: each turn's text prefixed with the session date, images
    as their caption or ``[Image]`` (Mem0 here reads text)."""
    date = session.date or "unknown date"
    out = []
    for turn in session.turns:
        parts, _ = turn_parts(turn.text, turn.images, "caption", False, 0)
        text = " ".join(p.text.strip() for p in parts if isinstance(p, TextPart)).strip()
        if text:
            out.append({"role": turn.role, "content": f"[{date}] {text}"})
    return out


def _model_error(exc: BaseException) -> ModelError | None:
    """The run's model's error under Mem0's wrapping (LLMError from ModelError), if any."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, ModelError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


class Mem0System:
    name = "mem0"
    modality = "caption"

    def __init__(self, ctx: SystemContext, opts: Mem0Options) -> None:
        self.ctx = ctx
        self.opts = opts
        self.ingest_config = GenerateConfig(max_tokens=opts.ingest_max_tokens, temperature=0.0,
                                            seed=ctx.generate.seed,
                                            extra_body=dict(ctx.generate.extra_body))
        self.tally = Tally()
        self.memory: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._lock = asyncio.Lock()  # Mem0's Memory is not made for concurrent calls

    def describe(self) -> dict[str, Any]:
        from importlib.metadata import version

        o = self.opts
        return {"name": self.name, "mem0ai": version("mem0ai"), "top_k": o.top_k,
                "infer": o.infer, "vector_store": o.vector_store,
                "keyword_search": o.vector_store != "faiss",
                "embedder": (f"openai-compatible {o.embedder_model}" if o.embedder_base_url
                             else "static model2vec (tokenlearn-static-model, offline)"),
                "embedding_dims": o.embedding_dims, "ingest_max_tokens": o.ingest_max_tokens,
                "llm": "the run's --model, through memgauge's client and response cache",
                "instruction": self.ctx.instruction}

    # -- the protocol -------------------------------------------------------------------------

    async def reset(self, episode: Episode) -> None:
        self.loop = asyncio.get_running_loop()
        self.tally = Tally()
        self._dir = tempfile.TemporaryDirectory(prefix="memgauge-mem0-")
        self.memory = await asyncio.to_thread(self._new_memory, self._dir.name)

    async def ingest(self, session: Session) -> None:
        messages = session_messages(session)
        if not messages:
            return
        metadata = {"session_id": session.session_id, "session_date": session.date}
        t0 = time.perf_counter()
        unparsed = self.tally.unparsed
        async with self._lock:
            try:
                await asyncio.to_thread(self.memory.add, messages, user_id=USER_ID,
                                        metadata=metadata, infer=self.opts.infer)
                if self.tally.unparsed > unparsed:  # Mem0 stored nothing from it
                    self.tally.failures.append(IngestFailure(
                        session.session_id, "extract", "unparsable",
                        "Mem0 could not read its extraction reply and stored nothing"))
            except Exception as exc:
                cause = _model_error(exc)
                if cause is not None:  # the run's model failed: say so, not Mem0's wrapping
                    raise cause from None
                raise
            finally:
                self.tally.adds += 1
                self.tally.add_s += time.perf_counter() - t0

    async def answer(self, question: Question) -> Response:
        async with self._lock:
            # The ranking the prompt's top_k come from is recorded to RANKING_DEPTH.
            found = await asyncio.to_thread(self.memory.search, question.text,
                                            filters={"user_id": USER_ID},
                                            top_k=max(self.opts.top_k, RANKING_DEPTH))
            stored = await asyncio.to_thread(self._stored)
        ranking = [m for m in (found or {}).get("results", []) if m.get("memory")]
        memories = ranking[: self.opts.top_k]
        retrieved = retrieved_list(_sources(memories), _sources(ranking))
        meta: dict[str, Any] = {
            "ingest": self.tally.ingest(), "memory": stored,
            "mem0": {"unparsed_replies": self.tally.unparsed, "adds": self.tally.adds,
                     "memories": [_memory_view(m) for m in memories]}}
        if self.tally.failures:
            meta["ingest_failures"] = [f.as_dict() for f in self.tally.failures]
        failed = ingest_failed(question, self.tally.failures, meta)
        if failed is not None:
            return failed
        messages = self._prompt(memories, question)
        return await read_and_answer(self.ctx, messages, question,
                                     retrieved=retrieved, meta=meta)

    # -- helpers ------------------------------------------------------------------------------

    def _new_memory(self, folder: str) -> Any:
        m = _mem0()
        o = self.opts
        store: dict[str, Any] = {"collection_name": "memgauge",
                                 "embedding_model_dims": o.embedding_dims}
        if o.vector_store == "faiss":
            store |= {"path": os.path.join(folder, "faiss"), "distance_strategy": "cosine"}
        else:
            store |= {"path": os.path.join(folder, "qdrant"), "on_disk": False}
        config = m.MemoryConfig(
            vector_store={"provider": o.vector_store, "config": store},
            # Placeholders, never called: both are replaced below (the LLM always; the
            # embedder unless an endpoint was given). Mem0's config names only providers it
            # knows, so an object of ours cannot go in through it.
            llm={"provider": "openai", "config": {"api_key": "unused",
                                                  "openai_base_url": "http://127.0.0.1:9/v1"}},
            embedder={"provider": "openai", "config": _embedder_config(o)},
            history_db_path=os.path.join(folder, "history.db"))
        memory = m.Memory(config)
        memory.llm = m.RunModelLLM(self)
        if o.embedder_base_url is None:
            memory.embedding_model = m.StaticEmbedder(_static_retriever(), o.embedding_dims)
        return memory

    def _stored(self) -> dict[str, int]:
        listed = self.memory.get_all(filters={"user_id": USER_ID}, top_k=1_000_000)
        texts = [r.get("memory") or "" for r in (listed or {}).get("results", [])]
        return {"items": len(texts), "bytes": sum(len(t.encode()) for t in texts)}

    def _prompt(self, memories: list[dict[str, Any]], question: Question) -> list[Message]:
        lines = []
        for mem in memories:
            meta = mem.get("metadata") or {}
            date = meta.get("session_date") or "unknown date"
            score = mem.get("score")
            scored = f" (relevance {score:.3f})" if isinstance(score, int | float) else ""
            lines.append(f"- {mem['memory']} [{date}]{scored}")
        listing = "\n".join(lines) if lines else "(no memories were found)"
        return library_prompt(self.ctx, question, system=ANSWER_SYSTEM,
                              heading="Memories, most relevant first", listing=listing)


def _embedder_config(o: Mem0Options) -> dict[str, Any]:
    if o.embedder_base_url is None:
        return {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1",
                "embedding_dims": o.embedding_dims or None}
    key = os.environ.get(o.embedder_api_key_env) if o.embedder_api_key_env else None
    return {"api_key": key or "none", "openai_base_url": o.embedder_base_url.rstrip("/"),
            "model": o.embedder_model, "embedding_dims": o.embedding_dims or None}


@functools.cache
def _static_retriever() -> Any:
    # lazy: numpy and the retrievers load only when used
    from ..retrieval._sessions import get_retriever

    return get_retriever("embed")


def _sources(memories: list[dict[str, Any]]) -> list[tuple[EvidenceRef, float | None]]:
    """The sessions the memories came from, in the memories' order (``retrieved_list`` keeps
    each session once, at its best memory's place)."""
    out = []
    for mem in memories:
        sid = (mem.get("metadata") or {}).get("session_id")
        if isinstance(sid, str):
            score = mem.get("score")
            out.append((EvidenceRef(session_id=sid),
                        float(score) if isinstance(score, int | float) else None))
    return out


def _memory_view(mem: dict[str, Any]) -> dict[str, Any]:
    meta = mem.get("metadata") or {}
    score = mem.get("score")
    return {"id": mem.get("id"), "memory": mem.get("memory"),
            "session_id": meta.get("session_id"), "session_date": meta.get("session_date"),
            "score": round(float(score), 6) if isinstance(score, int | float) else None}


def _embedding_dims(opts: Mem0Options) -> int:
    """The embedder's dimension (the vector store is made for it), from one request: also
    the embedding endpoint's pre-flight — a mistake there is a ConfigError before any
    question."""
    m = _mem0()
    try:
        if opts.embedder_base_url is None:
            return int(_static_retriever().embed(["dimension probe"]).shape[1])
        embedder = m.OpenAIEmbedding(m.BaseEmbedderConfig(**_embedder_config(opts)))
        return len(embedder.embed("dimension probe", "search"))
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the probe is a setup mistake
        where = opts.embedder_base_url or "the static embedder"
        raise ConfigError(f"--system mem0: the embedder at {where} did not embed a probe text: "
                          f"{type(exc).__name__}: {str(exc)[:300]}") from None


def _check_context(ctx: SystemContext, opts: Mem0Options) -> None:
    """Mem0's extraction prompt is long (its system prompt alone is ~8k tokens): a model
    whose context is known to be shorter would fail every ingest; say so before the first."""
    context = ctx.model.context_tokens if isinstance(ctx.model, KnownContext) else None
    if not opts.infer or not isinstance(context, int):
        return
    from mem0.configs.prompts import ADDITIVE_EXTRACTION_PROMPT

    need = ctx.counter.text(ADDITIVE_EXTRACTION_PROMPT) + opts.ingest_max_tokens + 512
    if need > context:
        raise ConfigError(f"--system mem0: Mem0's extraction prompt needs about {need} tokens "
                          f"with its reply, and the model takes {context}: give it a longer "
                          "context (for local: --model-option n_ctx=16384), or use "
                          "--system-option infer=false (Mem0 stores the raw messages)")


def _requires(options: dict[str, Any]) -> list[tuple[str, str, str]]:
    local = [] if options.get("embedder_base_url") else [
        ("model2vec", "agents", "its offline embedder")]
    return [("mem0", "agents", "itself"), ("faiss", "agents", "its vector store"),
            *local]


@system("mem0", OPTIONS, _requires, uses_model)
def mem0(ctx: SystemContext) -> SystemFactory:
    """Mem0 (mem0ai) as the memory: add per session, search per question, the model reads
    (Mem0's LLM calls go through the run's model and cache)"""
    opts = Mem0Options.parse(ctx)
    _mem0()  # the install hint, before anything else
    _check_context(ctx, opts)
    opts = replace(opts, embedding_dims=_embedding_dims(opts))

    def make() -> MemorySystem:
        return Mem0System(ctx, opts)

    return make
