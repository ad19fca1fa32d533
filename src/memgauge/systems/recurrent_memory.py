"""recurrent-memory: MemAgent's reading loop, built in (design 0026).

The history is read chunk by chunk (``chunk_tokens``, cut at turn boundaries); after each
chunk the LLM rewrites a bounded memory (``memory_tokens``, counted with the run's token
counter and cut to the bound when a rewrite exceeds it). Two variants:

- ``variant=aware`` (MemAgent): the reading happens at answer time, with the question in
  every rewrite prompt, once per question;
- ``variant=blind``: the memory is rewritten at ingest, without the question, once per
  episode; every question reads the same memory.

The memory cites its sources as ``[S2.T3]`` (session 2, turn 3); what the final memory cites
is the response's ``retrieved`` (there is no ranking to choose from, so no scores).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigFieldError, InputError, entry, option_error
from ..models import ModelError
from ..registry import system, uses_model
from ..schema import Episode, ErrorInfo, EvidenceRef, Question, Response, Session, Usage
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import (
    JSON_RETRY,
    SCHEMA_VERSION,
    Caller,
    add_usage,
    answer_from,
    first,
    image_rendering,
    json_replies,
    message,
    prompt_version,
    render_session,
    retrieved_list,
    text_field,
    text_modality,
    text_reply,
)

OPTIONS = {"memory_tokens": (int, "bound of the rewritten memory, in tokens (default 1024)"),
           "chunk_tokens": (int, "history read per rewrite, in tokens (default 4096)"),
           "variant": (str, "aware (default: reads with the question) | blind")}

REWRITE_PROMPT = (
    "You read a long conversation history one chunk at a time and keep a memory of it that "
    "must stay under {limit} tokens. Turns are labelled like [S2.T3] (session 2, turn 3) and "
    "images like [S2.I1]. Rewrite the memory so that it keeps what matters from the old memory "
    "and adds what matters from the new chunk{focus}; drop what does not. Keep dates, names "
    "and numbers exact and cite the source labels of what you keep.\n"
    'Reply with JSON only: {{"memory": "..."}}'
)
AWARE_FOCUS = " for answering the question below"
VERSION = prompt_version(REWRITE_PROMPT, AWARE_FOCUS, SCHEMA_VERSION)
_CITATION = re.compile(r"S\d+\.[TI]\d+", re.IGNORECASE)
_JSON_SLACK = 32  # completion tokens beyond the bound for the JSON around the memory


@dataclass
class Chunk:
    text: str
    session_id: str  # the last session it covers (named in failures)


class RecurrentMemory:
    name = "recurrent-memory"

    def __init__(self, ctx: SystemContext) -> None:
        self.ctx = ctx
        opts = ctx.typed_options(self.name, OPTIONS)
        self.memory_tokens = opts.get("memory_tokens", 1024)
        self.chunk_tokens = opts.get("chunk_tokens", 4096)
        self.variant = opts.get("variant", "aware")
        if self.memory_tokens < 16 or self.chunk_tokens < 16:
            raise ConfigFieldError(f"{entry('system_options', 'memory_tokens')} and "
                                   "chunk_tokens must be at least 16", "system_options")
        if self.variant not in ("aware", "blind"):
            raise option_error("variant", "use aware or blind", repr(self.variant))
        self.modality = text_modality(ctx)
        self.reset_state()

    def reset_state(self) -> None:
        self.caller = Caller(self.ctx)
        self.chunks: list[Chunk] = []
        self.labels: dict[str, EvidenceRef] = {}
        self.pending: list[str] = []  # turn lines not yet in a chunk
        self.pending_tokens = 0
        self.pending_session = ""
        self.n_sessions = 0
        self.memory_text = ""  # blind: the memory after the last ingested chunk
        self.truncations = 0

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "memory_tokens": self.memory_tokens,
                "chunk_tokens": self.chunk_tokens, "variant": self.variant,
                "context_mode": self.ctx.context_mode, "instruction": self.ctx.instruction,
                "token_counter": self.ctx.counter.describe()["text_tokenizer"],
                "prompt_version": VERSION}

    async def reset(self, episode: Episode) -> None:
        self.reset_state()

    # --- chunking ---

    async def ingest(self, session: Session) -> None:
        self.n_sessions += 1
        prefix = f"S{self.n_sessions}."
        shown = render_session(session, images=image_rendering(self.ctx), prefix=prefix)
        self.labels.update(shown.labels)
        header = f"--- Session {self.n_sessions} (Date: {session.date or 'unknown'}) ---"
        lines = [line for line in shown.text.split("\n") if line.strip()] or [""]
        lines[0] = f"{header}\n{lines[0]}"  # a header never ends a chunk on its own
        self.pending_session = session.session_id
        for line in lines:
            n = self.ctx.counter.text(line + "\n")
            if self.pending and self.pending_tokens + n > self.chunk_tokens:
                await self._close_chunk()
            self.pending.append(line)
            self.pending_tokens += n
        # A question may come after any session (online protocol): the chunk under way is
        # closed here, so a session boundary is always a chunk boundary.
        await self._close_chunk()

    async def _close_chunk(self) -> None:
        if not self.pending:
            return
        chunk = Chunk("\n".join(self.pending), self.pending_session)
        self.pending, self.pending_tokens = [], 0
        self.chunks.append(chunk)
        if self.variant == "blind":
            memory = await self.caller.ingest_json(
                self._rewrite_messages(self.memory_text, chunk, None), text_field("memory"),
                stage="rewrite", session_id=chunk.session_id,
                max_tokens=self.memory_tokens + _JSON_SLACK,
                schema=text_reply("memory", self.memory_tokens + _JSON_SLACK))
            if memory is not None:
                self.memory_text = self.bound(memory)
                self.truncations += self.memory_text != memory

    def _rewrite_messages(self, memory: str, chunk: Chunk, question: Question | None) -> list:
        focus = AWARE_FOCUS if question is not None else ""
        body = f"Old memory:\n{memory or '(empty)'}\n\nNew chunk:\n{chunk.text}\n"
        if question is not None:
            body += f"\nQuestion: {question.text}\n"
        return [message("system", REWRITE_PROMPT.format(limit=self.memory_tokens, focus=focus)),
                message("user", body)]

    def bound(self, memory: str) -> str:
        """The memory cut to ``memory_tokens`` (as the run counts tokens), at the longest
        prefix that fits."""
        count = self.ctx.counter.text
        if count(memory) <= self.memory_tokens:
            return memory
        lo, hi = 0, len(memory)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(memory[:mid]) <= self.memory_tokens:
                lo = mid
            else:
                hi = mid - 1
        return memory[:lo]

    # --- answer ---

    def memory(self, text: str | None = None) -> dict[str, int]:
        blob = (self.memory_text if text is None else text).encode()
        return {"items": len(self.chunks), "bytes": len(blob)}

    async def answer(self, question: Question) -> Response:
        failed = self.caller.failed(self.memory(), question)
        if failed is not None:
            return failed
        usage: Usage | None = None
        reading: dict[str, Any] = {}
        if self.variant == "aware":
            read = await self._read(question)
            if isinstance(read, Response):
                return read
            memory, usage, reading = read
        else:
            memory = self.memory_text
        cited = [self.labels[c.upper()] for c in dict.fromkeys(
            m.upper() for m in _CITATION.findall(memory)) if c.upper() in self.labels]
        meta = {**self.caller.ledger.as_meta(), "memory": self.memory(memory),
                "memory_tokens_used": self.ctx.counter.text(memory),
                "truncations": self.truncations, **reading}  # aware: this reading's
        response = await answer_from(self.ctx, question, memory, usage=usage, meta=meta)
        response.retrieved = retrieved_list([(ref, None) for ref in cited], [])
        return response

    async def _read(self, question: Question) -> tuple[str, Usage, dict[str, Any]] | Response:
        """The question-aware reading: every chunk, in order, with the question."""
        memory, usage = "", Usage()
        calls = failures = truncations = 0
        config = self.caller.config(self.memory_tokens + _JSON_SLACK,
                                    text_reply("memory", self.memory_tokens + _JSON_SLACK))
        for chunk in self.chunks:
            messages = self._rewrite_messages(memory, chunk, question)
            try:
                out = await self.ctx.model.generate(messages, config,
                                                    question_id=question.question_id)
                calls += 1
                usage = add_usage(usage, out.usage)
                value = first(json_replies(out.text), text_field("memory"))
                if value is None:  # one retry, showing the bad reply
                    retry = [*messages, message("assistant", out.text),
                             message("user", JSON_RETRY)]
                    out = await self.ctx.model.generate(retry, config,
                                                        question_id=question.question_id)
                    calls += 1
                    usage = add_usage(usage, out.usage)
                    value = first(json_replies(out.text), text_field("memory"))
            except ModelError as exc:
                return Response(usage=usage, meta={"reading": {"calls": calls}},
                                error=ErrorInfo(kind=exc.kind, message=exc.message,
                                                retryable=exc.retryable, attempts=exc.attempts))
            except (InputError, OSError) as exc:
                return Response(usage=usage, error=ErrorInfo(kind="bad_input", message=str(exc)))
            if value is None:
                failures += 1  # the memory stays as it was; the count is in the record
                continue
            memory = self.bound(value)
            truncations += memory != value
        return memory, usage, {"reading": {"calls": calls, "chunks": len(self.chunks),
                                           "unparsable": failures},
                               "truncations": truncations}


@system("recurrent-memory", OPTIONS, needs=uses_model)
def recurrent_memory(ctx: SystemContext) -> SystemFactory:
    """MemAgent-style: reads the history chunk by chunk, rewriting a memory bounded to
    memory_tokens (variant=aware reads with the question, blind at ingest)"""
    RecurrentMemory(ctx)

    def make() -> MemorySystem:
        return RecurrentMemory(ctx)

    return make
