"""``--system letta``: a Letta server the user runs keeps the memory (extra ``agents``:
``letta-client``); the run's model reads what Letta's archival search finds.

Per episode one Letta agent with empty memory blocks. ``ingest`` inserts each turn of each
session, in order, as one archival-memory passage ``[<session date>] <role>: <text>`` tagged
``session:<id>`` and ``turn:<id>`` (images as their caption or ``[Image]``); Letta embeds it
with the agent's embedding model. ``answer`` searches the agent's archival memory with the
question; the first ``top_k`` passages go in the prompt and the run's ``--model`` answers, so
the reader is the same model, cache and token count as every other system. ``retrieved`` is
the (session, turn) of each passage, read back from its tags, best first. The agent is
deleted when its episode ends. See docs/design/0028-mem0.md.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
import uuid
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import orjson

from .._secrets import redact_url
from ..errors import ConfigError, ConfigFieldError, MemgaugeError, entry, option_error
from ..models import Message, TextPart
from ..models._preflight import PREFLIGHT_TIMEOUT_S
from ..prompt import turn_parts
from ..registry import system, uses_model
from ..schema import Episode, ErrorInfo, EvidenceRef, Question, Response, Session
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import RANKING_DEPTH, library_prompt, read_and_answer, retrieved_list

DEFAULT_BASE_URL = "http://localhost:8283"  # `letta server`'s own default
OPTIONS = {
    "base_url": (str, f"the Letta server (default $LETTA_BASE_URL, else {DEFAULT_BASE_URL})"),
    "token_env": (str, ("the variable holding the server's token (default LETTA_API_KEY; "
                       "unset: no token, as a local server without a password takes)")),
    "agent_model": (str, ("the agent's LLM handle on the server, e.g. openai/gpt-4o-mini "
                         "(default: the server's; memgauge never asks it to answer)")),
    "embedding": (str, ("the agent's embedding handle on the server, e.g. "
                       "openai/text-embedding-3-small (default: the server's)")),
    "embedding_base_url": (str, ("instead of a handle: an OpenAI-compatible /v1 base the "
                                 "server embeds with (with embedding_model, embedding_dim)")),
    "embedding_model": (str, "the model's name at embedding_base_url"),
    "embedding_dim": (int, "its vectors' size"),
    "top_k": (int, "passages read per question (default 20)"),
    "timeout": (float, "seconds per request (default 60)"),
    "max_attempts": (int, ("attempts per request: 5xx, 408, 409, 429 and lost connections "
                          "are retried with backoff (default 3)")),
}
INSTALL_HINT = "pip install 'memgauge[agents]' (letta-client)"
ANSWER_SYSTEM = (
    "You answer questions about a user's past conversations. All you know of them is the "
    "passages below, found in a memory of those conversations; each carries the date of the "
    "conversation it came from. If the passages do not hold the answer, respond with "
    '"Insufficient information".')
SESSION_TAG, TURN_TAG = "session:", "turn:"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LettaOptions:
    base_url: str = DEFAULT_BASE_URL
    token_env: str = "LETTA_API_KEY"
    agent_model: str | None = None
    embedding: str | None = None
    embedding_base_url: str | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = None
    top_k: int = 20
    timeout: float = 60.0
    max_attempts: int = 3

    @classmethod
    def parse(cls, ctx: SystemContext) -> LettaOptions:
        raw = ctx.typed_options("letta", OPTIONS)
        raw.setdefault("base_url", os.environ.get("LETTA_BASE_URL") or DEFAULT_BASE_URL)
        opts = cls(**raw)
        if not opts.base_url.startswith(("http://", "https://")):
            raise option_error("base_url", "use http://HOST:PORT (the Letta server's address)",
                               repr(opts.base_url))
        if opts.top_k < 1:
            raise option_error("top_k", "must be at least 1", opts.top_k)
        if not opts.timeout > 0:
            raise option_error("timeout", "must be more than 0", f"{opts.timeout:g}")
        if opts.max_attempts < 1:
            raise option_error("max_attempts", "must be at least 1", opts.max_attempts)
        endpoint = (opts.embedding_base_url, opts.embedding_model, opts.embedding_dim)
        if any(v is not None for v in endpoint) and (None in endpoint or opts.embedding):
            raise ConfigFieldError(f"{entry('system_options', 'embedding_base_url')}, "
                                   "embedding_model and embedding_dim go together, in place "
                                   "of embedding (a handle)", "system_options")
        if opts.embedding_dim is not None and opts.embedding_dim < 1:
            raise option_error("embedding_dim", "must be at least 1", opts.embedding_dim)
        if "token_env" in raw and not os.environ.get(opts.token_env):
            raise option_error("token_env", "that variable is not set", opts.token_env)
        return opts

    @property
    def token(self) -> str | None:
        return os.environ.get(self.token_env) or None

    def agent_fields(self) -> dict[str, Any]:
        """What every agent is created with: no memory blocks, no tools (nothing of Letta's
        own agent loop runs; memgauge writes and searches archival memory itself)."""
        out: dict[str, Any] = {"memory_blocks": [], "include_base_tools": False,
                               "tags": ["memgauge"]}
        if self.agent_model:
            out["model"] = self.agent_model
        if self.embedding:
            out["embedding"] = self.embedding
        if self.embedding_base_url:  # a self-hosted server lists no handle for such a model
            out["embedding_config"] = {
                "embedding_endpoint_type": "openai", "embedding_endpoint": self.embedding_base_url,
                "embedding_model": self.embedding_model, "embedding_dim": self.embedding_dim}
        return out


@functools.cache
def _letta() -> SimpleNamespace:
    """letta-client's classes, imported on first use (the core never imports it)."""
    try:
        import letta_client
        from letta_client.types.agents.passage_search_response import (
            PassageSearchResponse,
            Result,
        )
        from letta_client.types.passage import Passage
    except ImportError as exc:
        raise ConfigError(f"--system letta needs the `agents` extra ({exc}): "
                          f"{INSTALL_HINT}") from None
    from pydantic import TypeAdapter

    class Found(Result):
        id: str | None = None  # type: ignore[assignment]  # Letta 0.11 sends none

    class Search(PassageSearchResponse):
        results: list[Found]  # type: ignore[assignment]

    return SimpleNamespace(client=letta_client, version=letta_client.__version__,
                           passages=TypeAdapter(list[Passage]), search=TypeAdapter(Search))


class LettaReplyError(MemgaugeError):
    """The server answered something letta-client's models do not allow (route and field)."""


class LettaServerError(MemgaugeError):
    """A request failed after its retries; the server's own message is kept."""

    def __init__(self, message: str, *, retryable: bool, attempts: int) -> None:
        super().__init__(message)
        self.retryable, self.attempts = retryable, attempts


def _said(exc: Exception) -> tuple[str, bool]:
    """What went wrong, in the server's words where it gave any, and whether letta-client
    retried it (5xx, 408, 409, 429, timeouts and lost connections)."""
    lc = _letta().client
    if isinstance(exc, lc.APIStatusError):
        failed: Any = exc  # an APIStatusError: _letta() hands letta-client's classes untyped
        said = failed.body.get("detail", failed.body) if isinstance(failed.body, dict) \
            else failed.body
        status = failed.status_code
        return (f"HTTP {status}: {str(said or failed.message)[:500]}",
                status in (408, 409, 429) or status >= 500)
    if isinstance(exc, lc.APITimeoutError):
        return "no reply in time", True
    return f"{type(exc).__name__}: {exc}", True  # APIConnectionError and the rest


def _server_error(route: str, exc: Exception, max_attempts: int) -> LettaServerError:
    msg, retryable = _said(exc)
    attempts = max_attempts if retryable else 1
    return LettaServerError(f"{route}: {msg} (after {attempts} attempt"
                            f"{'s' if attempts > 1 else ''})", retryable=retryable,
                            attempts=attempts)


def _json(route: str, raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        shown = raw[:200].decode("utf-8", "replace") or "an empty body"
        raise LettaReplyError(f"{route}: the reply is not JSON: {shown}") from None


def _validated(route: str, raw: bytes, adapter: Any) -> Any:
    """The reply checked against letta-client's own model of it (a ``TypeAdapter``): the
    client does not validate, so a malformed reply would surface later as an AttributeError."""
    from pydantic import ValidationError

    try:
        return adapter.validate_python(_json(route, raw))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "the reply"
        raise LettaReplyError(f"{route}: {where}: {err['msg']}") from None


def _agent_id(route: str, raw: bytes) -> str:
    """The new agent's id: all memgauge reads of the AgentState (its other required fields
    differ between server versions)."""
    data = _json(route, raw)
    agent_id = data.get("id") if isinstance(data, dict) else None
    if not isinstance(agent_id, str) or not agent_id:
        raise LettaReplyError(f"{route}: id: expected the new agent's id (a string)")
    return agent_id


def session_passages(session: Session) -> list[tuple[str, list[str]]]:
    """A session as archival passages: one per turn with text, ``[date] role: text``, tagged
    with its session and turn (images as their caption or ``[Image]``; Letta stores text)."""
    date = session.date or "unknown date"
    out = []
    for turn in session.turns:
        parts, _ = turn_parts(turn.text, turn.images, "caption", False, 0)
        text = " ".join(p.text.strip() for p in parts if isinstance(p, TextPart)).strip()
        if text:
            out.append((f"[{date}] {turn.role}: {text}",
                        [SESSION_TAG + session.session_id, TURN_TAG + turn.turn_id]))
    return out


def pointer(tags: list[str] | None) -> EvidenceRef | None:
    """The (session, turn) a passage came from, read back from its tags."""
    found = {t.split(":", 1)[0] + ":": t.split(":", 1)[1] for t in tags or [] if ":" in t}
    sid = found.get(SESSION_TAG)
    return EvidenceRef(session_id=sid, turn_id=found.get(TURN_TAG)) if sid else None


@dataclass
class _Server:
    """What every episode of a run shares: the options, the server's version, and the
    agents this process created and has not deleted yet (swept when the run closes)."""

    opts: LettaOptions
    version: str = "?"
    live: set[str] = field(default_factory=set)

    def client(self, *, sync: bool = False, attempts: int | None = None) -> Any:
        lc = _letta().client
        cls = lc.Letta if sync else lc.AsyncLetta
        # base_url is always given: without it letta-client would go to Letta Cloud.
        return cls(base_url=self.opts.base_url, api_key=self.opts.token,
                   timeout=self.opts.timeout,
                   max_retries=(attempts or self.opts.max_attempts) - 1)


class LettaSystem:
    name = "letta"
    modality = "caption"

    def __init__(self, ctx: SystemContext, server: _Server) -> None:
        self.ctx = ctx
        self.server = server
        self.opts = server.opts
        self.client: Any = None
        self.agent_id: str | None = None
        self.items = 0
        self.bytes = 0

    def describe(self) -> dict[str, Any]:
        o = self.opts
        return {"name": self.name, "letta_client": _letta().version,
                "server": {"url": redact_url(o.base_url), "version": self.server.version},
                "agent_model": o.agent_model or "the server's default",
                "embedding": (f"openai-compatible {o.embedding_model} ({o.embedding_dim}-d) at "
                              f"{redact_url(o.embedding_base_url)}" if o.embedding_base_url
                              else o.embedding or "the server's default"), "top_k": o.top_k,
                "memory": "archival passages, one per turn, tagged with session and turn",
                "reader": "the run's --model (Letta's own agent loop is not run)",
                "timeout_s": o.timeout, "max_attempts": o.max_attempts,
                "instruction": self.ctx.instruction}

    # -- the protocol -------------------------------------------------------------------------

    async def reset(self, episode: Episode) -> None:
        self.client = self.server.client()
        self.items = self.bytes = 0
        route = "POST /v1/agents/"
        name = f"memgauge-{episode.episode_id}-{uuid.uuid4().hex[:8]}"
        raw = await self._call(route, self.client.agents.with_raw_response.create(
            name=name, **self.opts.agent_fields()))
        self.agent_id = _agent_id(route, raw)
        self.server.live.add(self.agent_id)

    async def ingest(self, session: Session) -> None:
        route = f"POST /v1/agents/{self.agent_id}/archival-memory"
        for text, tags in session_passages(session):
            raw = await self._call(route, self.client.agents.passages.with_raw_response.create(
                self.agent_id, text=text, tags=tags))
            _validated(route, raw, _letta().passages)
            self.items += 1
            self.bytes += len(text.encode())

    async def answer(self, question: Question) -> Response:
        route = f"GET /v1/agents/{self.agent_id}/archival-memory/search"
        t0 = time.perf_counter()
        try:
            raw = await self._call(route, self.client.agents.passages.with_raw_response.search(
                self.agent_id, query=question.text, top_k=max(self.opts.top_k, RANKING_DEPTH)))
            found = _validated(route, raw, _letta().search).results
        except LettaServerError as exc:
            return Response(latency_s=time.perf_counter() - t0, error=ErrorInfo(
                kind="system_error", message=str(exc), retryable=exc.retryable,
                attempts=exc.attempts))
        except LettaReplyError as exc:
            return Response(latency_s=time.perf_counter() - t0,
                            error=ErrorInfo(kind="bad_response", message=str(exc)))
        shown = found[: self.opts.top_k]  # what the prompt holds; the rest is the ranking
        retrieved = retrieved_list(_pointers(shown), _pointers(found))
        meta: dict[str, Any] = {
            "memory": {"items": self.items, "bytes": self.bytes},
            "letta": {"agent_id": self.agent_id, "found": len(found),
                      "passages": [{"id": r.id, "content": r.content, "tags": r.tags}
                                   for r in shown]}}
        return await read_and_answer(self.ctx, self._prompt(shown, question), question,
                                     retrieved=retrieved, meta=meta)

    async def end_episode(self) -> None:
        """Delete the episode's agent (the runner calls this when the episode is done); a
        failure is logged, and the run's close tries again."""
        if self.agent_id is not None:
            try:
                await self.client.agents.delete(self.agent_id)
                self.server.live.discard(self.agent_id)
            except Exception as exc:  # noqa: BLE001 - the records are written; keep going
                log.warning("letta: could not delete agent %s: %s", self.agent_id, exc)
            self.agent_id = None
        if self.client is not None:
            await self.client.close()
            self.client = None

    async def aclose(self) -> None:
        """At the run's close: delete the agents whose episodes did not end (a stopped run)."""
        if self.client is not None:
            await self.end_episode()
        if self.server.live:
            await asyncio.to_thread(_sweep, self.server)

    # -- helpers ------------------------------------------------------------------------------

    async def _call(self, route: str, request: Any) -> bytes:
        try:
            resp = await request
            return await resp.read()
        except _letta().client.APIError as exc:
            raise _server_error(route, exc, self.opts.max_attempts) from None

    def _prompt(self, passages: list[Any], question: Question) -> list[Message]:
        listing = "\n".join(f"- {p.content}" for p in passages) or "(no passages were found)"
        return library_prompt(self.ctx, question, system=ANSWER_SYSTEM,
                              heading="Passages, most relevant first", listing=listing)


def _pointers(found: list[Any]) -> list[tuple[EvidenceRef, float | None]]:
    """The passages' (session, turn), in their order; Letta's search gives no score."""
    return [(ref, None) for r in found if (ref := pointer(r.tags)) is not None]


def _sweep(server: _Server) -> None:
    with server.client(sync=True, attempts=1) as client:
        for agent_id in list(server.live):
            try:
                client.agents.delete(agent_id)
                server.live.discard(agent_id)
            except Exception as exc:  # noqa: BLE001 - said, and the run closes anyway
                log.warning("letta: could not delete agent %s: %s", agent_id, exc)


def preflight(opts: LettaOptions) -> str:
    """Before the first item: the server answers, takes the token, and creates (then deletes)
    an agent with the given handles. Any failure is one ConfigError; returns its version."""
    lc = _letta().client
    shown = redact_url(opts.base_url) or opts.base_url
    probe = replace(opts, timeout=min(opts.timeout, PREFLIGHT_TIMEOUT_S))
    token = f"the token in ${opts.token_env}" if opts.token else "no token"
    with _Server(probe).client(sync=True, attempts=1) as client:
        try:
            version = client.health().version
            agent = client.agents.create(name=f"memgauge-preflight-{uuid.uuid4().hex[:8]}",
                                         **opts.agent_fields())
            client.agents.delete(agent.id)
        except lc.APITimeoutError:
            raise ConfigError(f"--system letta: the Letta server at {shown} did not answer "
                              f"within {probe.timeout:g} s") from None
        except lc.APIConnectionError as exc:
            raise ConfigError(f"--system letta: nothing answers at {shown} ({exc}); start "
                              "your Letta server, or point --system-option base_url (or "
                              "LETTA_BASE_URL) at it") from None
        except (lc.AuthenticationError, lc.PermissionDeniedError) as exc:
            raise ConfigError(f"--system letta: the server at {shown} refused {token}: "
                              f"{_said(exc)[0]}") from None
        except lc.APIStatusError as exc:
            raise ConfigError(f"--system letta: the server at {shown} could not create an "
                              f"agent ({_said(exc)[0]}); check --system-option agent_model and "
                              "embedding against the handles it lists (GET /v1/models/, "
                              "/v1/models/embedding)") from None
        except (AttributeError, TypeError, ValueError) as exc:  # a reply of the wrong shape
            raise ConfigError(f"--system letta: {shown} does not answer as a Letta server "
                              f"does ({type(exc).__name__}: {exc})") from None
    return str(version)


@system("letta", OPTIONS, lambda o: [("letta_client", "agents", "itself")],
        uses_model)
def letta(ctx: SystemContext) -> SystemFactory:
    """Letta (a server the user runs, through letta-client): archival passages per turn,
    searched per question, the run's model reads"""
    opts = LettaOptions.parse(ctx)
    _letta()  # the install hint, before anything else
    server = _Server(opts, version=preflight(opts))

    def make() -> MemorySystem:
        return LettaSystem(ctx, server)

    return make
