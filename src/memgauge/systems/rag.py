"""Retrieval baselines: rank sessions for the question, answer from the top k.

``rag-bm25`` and ``rag-embed`` keep every ingested session; at answer time they rank them
against the question (BM25, or a static embedding model that ships in its wheel) and hand the
top ``k`` sessions, in chronological order, to a reader:

- ``reader=model`` (default): the run's ``--model`` with the full-context prompt layout;
- ``reader=oracle``: the generated benchmark's oracle, allowed to use only the evidence that
  was retrieved — accuracy then measures retrieval alone, fully offline.

Every response lists what was retrieved, so runs report evidence recall.
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import ConfigError, ContextOverflowError
from ..models import ModelError
from ..registry import system
from ..schema import Episode, ErrorInfo, EvidenceRef, Question, Response, RetrievedItem, Session
from ._base import MemorySystem, SystemContext, SystemFactory
from ._context import build_prompt, clean_prediction
from .oracle import evidence_facts

OPTIONS = {"top_k": (int, "sessions put in the prompt (default 5)"),
           "reader": (str, "model (default) | oracle: who answers from what was retrieved")}


class Rag:
    def __init__(self, ctx: SystemContext, retriever: str) -> None:
        self.ctx = ctx
        self.retriever = retriever
        self.name = f"rag-{retriever}"
        opts = ctx.typed_options(self.name, OPTIONS)
        self.top_k = opts.get("top_k", 5)
        if self.top_k < 1:
            raise ConfigError(f"--system-option top_k={self.top_k}: must be at least 1")
        self.reader = opts.get("reader", "model")
        if self.reader not in ("model", "oracle"):
            raise ConfigError(f"unknown reader {self.reader!r}; use model or oracle")
        self.modality = "text" if self.reader == "model" and ctx.context_mode != "image" else "image"
        self.sessions: list[Session] = []

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "top_k": self.top_k, "reader": self.reader,
                "context_mode": self.ctx.context_mode}

    async def reset(self, episode: Episode) -> None:
        self.sessions = []

    async def ingest(self, session: Session) -> None:
        self.sessions.append(session)

    async def answer(self, question: Question) -> Response:
        from ..analysis import rank_sessions

        ranked = rank_sessions(self.sessions, question.text, self.retriever)[: self.top_k]
        retrieved = [RetrievedItem(pointer=EvidenceRef(session_id=sid), score=float(score))
                     for sid, score in ranked]
        keep = {sid for sid, _ in ranked}
        chosen = [s for s in self.sessions if s.session_id in keep]  # chronological order
        if self.reader == "oracle":
            from ..benchmarks.synth import solve

            family = question.meta.get("family")
            if family is None:
                return Response(retrieved=retrieved, error=ErrorInfo(
                    kind="not_applicable", message="reader=oracle needs a generated benchmark"))
            images, texts = evidence_facts({s.session_id: s for s in chosen}, question,
                                           images=True)
            text = solve(question.meta.get("program", {}), family, images, texts)
            return Response(text=text, retrieved=retrieved)
        c = self.ctx
        t0 = time.perf_counter()
        try:
            prompt = build_prompt(chosen, question, mode=c.context_mode, instruction=c.instruction,
                                  label_images=c.label_images,
                                  counter=c.counter if c.count_tokens else None,
                                  image_size=c.image_size,  # counted at the size sent
                                  max_tokens=c.max_context_tokens, overflow=c.overflow)
            out = await c.model.generate(prompt.messages, c.generate,
                                         question_id=question.question_id)
        except ContextOverflowError as exc:
            return Response(retrieved=retrieved, meta={"input_tokens": exc.tokens},
                            error=ErrorInfo(kind="context_overflow", message=str(exc)))
        except ModelError as exc:
            return Response(retrieved=retrieved, latency_s=time.perf_counter() - t0,
                            meta={k: v for k, v in exc.details.items()
                                  if k in ("input_tokens", "context_tokens")},
                            error=ErrorInfo(kind=exc.kind, message=exc.message,
                                            retryable=exc.retryable, attempts=exc.attempts))
        return Response(text=clean_prediction(out.text, c.instruction), usage=out.usage,
                        latency_s=time.perf_counter() - t0, cached=out.cached,
                        retrieved=retrieved, meta={"raw": out.text,
                                                   "input_tokens": prompt.tokens,
                                                   "dropped_sessions": prompt.dropped_sessions,
                                                   "n_images": len(prompt.images)})


def _factory(retriever: str):  # type: ignore[no-untyped-def]
    def build(ctx: SystemContext) -> SystemFactory:
        Rag(ctx, retriever)  # validate options once, up front

        def make() -> MemorySystem:
            return Rag(ctx, retriever)

        return make

    build.__doc__ = (f"Retrieves the top_k sessions by {_BY[retriever]}, then the model "
                     "answers from them (in --context-mode)")
    return build


_BY = {"bm25": "BM25 over their text and captions", "embed": "embedding similarity"}


rag_bm25 = system("rag-bm25", OPTIONS)(_factory("bm25"))
rag_embed = system("rag-embed", OPTIONS)(_factory("embed"))
