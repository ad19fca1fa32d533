"""summary-memory: MemoryBank / MemGPT-style summaries and a rolling profile (design 0026).

At ingest the LLM writes a summary of each session (a prompt that depends on the session
alone, so a shared haystack session is summarised once per configuration: the response
cache) and, with ``profile=yes``, rewrites a rolling profile of the user from the previous
profile and the new summary. At answer time the summaries are ranked against the question
(BM25); the reader sees the profile, then for each of the top ``top_k`` sessions (oldest
first) its summary and its raw turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import option_error
from ..registry import system, uses_model
from ..schema import Episode, EvidenceRef, Question, Response, Session
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import (
    EMBEDDER_OPTIONS,
    SCHEMA_VERSION,
    Caller,
    EmbeddedTexts,
    answer_from,
    boolean,
    embedded_texts,
    image_rendering,
    message,
    prompt_version,
    rank_with,
    render_session,
    retrieved_list,
    retriever_requirements,
    text_field,
    text_modality,
    text_reply,
)

OPTIONS = {"top_k": (int, "sessions whose summary and raw turns the reader sees (default 3)"),
           "profile": (boolean, "yes (default) | no: keep a rolling user profile"),
           "retriever": (str, "bm25 (default) | embed: how summaries are ranked"),
           **EMBEDDER_OPTIONS}

SUMMARY_PROMPT = (
    "Summarise one session of a conversation for a memory that will be searched later: who "
    "did, said, showed or planned what, with the exact names, numbers, dates, places and what "
    "the images show. Be concise and factual.\n"
    'Reply with JSON only: {"summary": "..."}'
)
PROFILE_PROMPT = (
    "You keep a short profile of the user: stable facts about them, their preferences, "
    "people, possessions and plans. Update the profile with what the new session summary "
    "adds or changes; keep it under 200 words.\n"
    'Reply with JSON only: {"profile": "..."}'
)
VERSION = prompt_version(SUMMARY_PROMPT, PROFILE_PROMPT, SCHEMA_VERSION)


@dataclass
class Entry:
    session: Session
    summary: str | None  # None: the summary could not be written (recorded)

    def document(self) -> str:
        # lazy: numpy and the retrievers load only when used
        from ..retrieval._sessions import session_text

        # Without a summary the session's own text stands in, so it can still be found.
        body = self.summary if self.summary is not None else session_text(self.session)
        return f"{self.session.date or ''} {body}"


class SummaryMemory:
    name = "summary-memory"

    def __init__(self, ctx: SystemContext, embedded: EmbeddedTexts | None = None) -> None:
        self.ctx = ctx
        opts = ctx.typed_options(self.name, OPTIONS)
        self.top_k = opts.get("top_k", 3)
        self.profile_on = opts.get("profile", True)
        self.retriever = opts.get("retriever", "bm25")
        if self.top_k < 1:
            raise option_error("top_k", "must be at least 1", self.top_k)
        if self.retriever not in ("bm25", "embed"):
            raise option_error("retriever", "use bm25 or embed", repr(self.retriever))
        self.embedded = embedded or embedded_texts(self.name, opts, self.retriever,
                                                   ctx.api_key_env)
        self.modality = text_modality(ctx)
        self.reset_state()

    def reset_state(self) -> None:
        self.caller = Caller(self.ctx)
        self.entries: list[Entry] = []
        self.profile = ""

    def describe(self) -> dict[str, Any]:
        out = {"name": self.name, "top_k": self.top_k, "profile": self.profile_on,
               "retriever": self.retriever, "context_mode": self.ctx.context_mode,
               "instruction": self.ctx.instruction, "prompt_version": VERSION}
        if self.embedded is not None:  # only when named: earlier manifests read the same
            out["embedder"] = self.embedded.embedder.name
        return out

    async def reset(self, episode: Episode) -> None:
        self.reset_state()

    async def ingest(self, session: Session) -> None:
        shown = render_session(session, images=image_rendering(self.ctx))
        summary = await self.caller.ingest_json(
            [message("system", SUMMARY_PROMPT),
             message("user", shown.text)],
            text_field("summary"), stage="summary", session_id=session.session_id,
            schema=text_reply("summary", self.caller.tokens()))
        self.entries.append(Entry(session, summary))
        if self.profile_on and summary:
            profile = await self.caller.ingest_json(
                [message("system", PROFILE_PROMPT),
                 message("user", f"Profile so far:\n{self.profile or '(empty)'}\n\n"
                                 f"New session ({session.date or 'unknown date'}):\n{summary}\n")],
                text_field("profile"), stage="profile", session_id=session.session_id,
                schema=text_reply("profile", self.caller.tokens()),
                loses=False)  # the session's summary holds it
            if profile is not None:
                self.profile = profile

    def memory(self) -> dict[str, int]:
        blob = json.dumps([self.profile, *(e.summary for e in self.entries)])
        return {"items": len(self.entries), "bytes": len(blob.encode())}

    async def answer(self, question: Question) -> Response:
        failed = self.caller.failed(self.memory(), question)
        if failed is not None:
            return failed
        ranking = await rank_with([e.document() for e in self.entries], question.text,
                                  self.retriever, self.embedded)
        top = ranking[: self.top_k]
        chosen = sorted(i for i, _ in top)  # chronological
        blocks = [f"User profile:\n{self.profile}"] if self.profile_on and self.profile else []
        mode = image_rendering(self.ctx)
        for i in chosen:
            e = self.entries[i]
            raw = render_session(e.session, images=mode).text.strip()
            blocks.append(f"=== Session (Date: {e.session.date or 'unknown'}) ===\n"
                          f"Summary: {e.summary if e.summary is not None else '(none)'}\n"
                          f"Turns:\n{raw}")
        ref = [EvidenceRef(session_id=e.session.session_id) for e in self.entries]
        retrieved = retrieved_list([(ref[i], s) for i, s in top],
                                   [(ref[i], s) for i, s in ranking])
        meta = {**self.caller.ledger.as_meta(), "memory": self.memory(),
                "sessions_read": len(chosen)}
        response = await answer_from(self.ctx, question, "\n\n".join(blocks), meta=meta)
        response.retrieved = retrieved
        return response


@system("summary-memory", OPTIONS, retriever_requirements, uses_model)
def summary_memory(ctx: SystemContext) -> SystemFactory:
    """A summary per session and a rolling profile; the model answers from the profile and
    the top_k sessions' summaries and raw turns (BM25 over summaries)"""
    first = SummaryMemory(ctx)

    def make() -> MemorySystem:
        return SummaryMemory(ctx, first.embedded)

    make.endpoints = first.embedded.endpoints if first.embedded else list  # type: ignore[attr-defined]
    return make
