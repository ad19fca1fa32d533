"""Retrieval-augmented answering: one ``rag`` system with options, and its two aliases.

``rag`` indexes each episode as its sessions arrive (units of ``unit=turn|round|session``)
and, per question, ranks every unit with ``retriever=bm25|embed|visual|hybrid`` (optionally
mixed with recency, ``recency=α``), takes the ``top_k`` best and hands them, in chronological
order under their session headers, to a reader:

- ``reader=model`` (default): the run's ``--model`` with the full-context prompt layout;
  ``images=keep`` sends the retrieved turns' images (a multimodal reader sees them),
  ``caption`` their captions in their place, ``drop`` neither;
- ``reader=oracle``: the generated benchmark's oracle, allowed to use only the evidence that
  was retrieved — accuracy then measures retrieval alone, fully offline.

Every response lists the chosen units first (``chosen``) and then the rest of the ranking
they were chosen from (``ranking`` entries in all, default 50), as evidence pointers.

``rag-bm25`` and ``rag-embed`` are ``rag`` with ``unit=session`` and that retriever, taking
only ``top_k`` and ``reader``; they describe themselves as before (docs/design/0025).
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import ConfigError, ContextOverflowError, option_error
from ..models import EndpointChecked, ModelError
from ..prompt import build_prompt, clean_prediction
from ..registry import BASELINE, MEMORY_AGENT, NEEDS_MODEL, NEEDS_PROGRAM, system
from ..schema import Episode, ErrorInfo, Question, Response, RetrievedItem, Session
from ._base import MemorySystem, SystemContext, SystemFactory
from ._memory import retriever_requirements
from .oracle import evidence_facts

ALIAS_OPTIONS = {"top_k": (int, "sessions put in the prompt (default 5)"),
                 "reader": (str, "model (default) | oracle: who answers from what was retrieved")}
OPTIONS = {
    "unit": (str, "turn | round | session (default): what is indexed and retrieved"),
    "retriever": (str, "bm25 (default) | embed | visual | hybrid"),
    "top_k": (int, "units put in the prompt (default 5)"),
    "recency": (float, "α in [0, 1]: s' = (1-α)·z(score) + α·position (default 0)"),
    "images": (str, "keep | caption | drop: retrieved images in the prompt (default: per mode)"),
    "reader": (str, "model (default) | oracle: who answers from what was retrieved"),
    "embedder": (str, "model2vec (default) | model2vec:DIR | sentence-transformers:NAME | "
                      + "openai:MODEL"),
    "embedder_base_url": (str, "the OpenAI-compatible endpoint of embedder=openai:<model>"),
    "image_embedder": (str, "visual/hybrid: openai:MODEL (image embeddings from an endpoint "
                            + "you serve: CLIP, SigLIP); default: the offline stand-in"),
    "image_embedder_base_url": (str, "the endpoint of image_embedder=openai:<model>"),
    "image_embedder_shape": (str, "how images are sent: messages (vLLM, default) | input"),
    "text_retriever": (str, "hybrid's text side: embed (default) | bm25"),
    "fusion": (str, "hybrid: weighted (0.5·text + 0.5·image, default) | rrf"),
    "ranking": (int, "candidates recorded, the chosen included (default 50; 0: all)"),
}
_IMAGES = {"keep": "image", "caption": "caption", "drop": "text"}
_MODE_IMAGES = {"image": "keep", "caption": "caption", "text": "drop", "no-context": "drop"}


class Rag:
    def __init__(self, ctx: SystemContext, name: str = "rag",
                 fixed: dict[str, Any] | None = None, embedder: Any = None,
                 image_embedder: Any = None) -> None:
        # lazy: numpy and the embedders load only for a system that retrieves
        from ..retrieval import UNITS

        self.ctx = ctx
        self.name = name
        self.alias = fixed is not None
        opts = ctx.typed_options(name, ALIAS_OPTIONS if self.alias else OPTIONS)
        opts.update(fixed or {})
        self.unit = opts.get("unit", "session")
        if self.unit not in UNITS:
            raise option_error("unit", f"use {', '.join(UNITS)}", self.unit)
        self.retriever = opts.get("retriever", "bm25")
        self.top_k = opts.get("top_k", 5)
        if self.top_k < 1:
            raise option_error("top_k", "must be at least 1", self.top_k)
        self.ranking = opts.get("ranking", 50)
        if self.ranking < 0:
            raise option_error("ranking", "must be 0 (all) or more", self.ranking)
        self.reader = opts.get("reader", "model")
        if self.reader not in ("model", "oracle"):
            raise ConfigError(f"unknown reader {self.reader!r}; use model or oracle")
        self.images = opts.get("images", _MODE_IMAGES.get(ctx.context_mode, "keep"))
        if self.images not in _IMAGES:
            raise option_error("images", "use keep, caption or drop", self.images)
        if "images" in opts and ctx.context_mode == "no-context":
            raise option_error("images", "rag puts no memory in a no-context prompt")
        self.mode = ctx.context_mode if "images" not in opts else _IMAGES[self.images]
        if self.alias:
            self.modality = "text" if self.reader == "model" and ctx.context_mode != "image" \
                else "image"
        else:
            self.modality = {"image": "image", "caption": "caption"}.get(
                self.mode if self.reader == "model" else "image", "text")
        self.embedder_spec = opts.get("embedder", "model2vec")
        self.embedder_base_url = opts.get("embedder_base_url")
        self.text_retriever = opts.get("text_retriever", "embed")
        self.fusion = opts.get("fusion", "weighted")
        self.recency = opts.get("recency", 0.0)
        self._embedder = embedder  # shared by the episodes of a run (one model, one pool)
        self._image_embedder = image_embedder or self._make_image_embedder(opts)
        text_kind = self.retriever if self.retriever in ("bm25", "embed") else (
            self.text_retriever if self.retriever == "hybrid" else None)
        # the stand-in matches text questions against captions with the text embedder
        needs_embedder = text_kind == "embed" or (
            self.retriever in ("visual", "hybrid") and self._image_embedder is None)
        if embedder is None and needs_embedder:
            # lazy: numpy and the embedders load only for a system that retrieves
            from ..retrieval import make_embedder

            self._embedder = make_embedder(self.embedder_spec, self.embedder_base_url,
                                           self.ctx.api_key_env)
        elif not needs_embedder and ("embedder" in opts or self.embedder_base_url):
            raise option_error("embedder", f"retriever={self.retriever}"
                               + (" with text_retriever=bm25" if self.retriever == "hybrid"
                                 else "") + " embeds no text"
                              + (" (the image embedder embeds the questions)"
                                 if self._image_embedder is not None else ""))
        self.index = self._new_index()  # checks the retriever options up front

    def _make_image_embedder(self, opts: dict[str, Any]) -> Any:
        spec = opts.get("image_embedder")
        if spec is None:
            if "image_embedder_base_url" in opts or "image_embedder_shape" in opts:
                raise option_error("image_embedder_base_url", "it and image_embedder_shape "
                                   "belong to image_embedder=openai:<model>")
            return None
        if self.retriever not in ("visual", "hybrid"):
            raise option_error("image_embedder", f"retriever={self.retriever} compares no "
                               "images (use retriever=visual or hybrid)")
        # lazy: numpy and the embedders load only for a system that retrieves
        from ..retrieval import OpenAIImageEmbedder, check_image_embedder_spec

        base_url = opts.get("image_embedder_base_url")
        model = check_image_embedder_spec(spec, base_url)
        assert base_url is not None
        return OpenAIImageEmbedder(model, base_url, policy=self.ctx.image_policy,
                                   cache=self.ctx.cache,
                                   shape=opts.get("image_embedder_shape", "messages"),
                                   api_key_env=self.ctx.api_key_env)

    def endpoints(self) -> list[Any]:
        """The embeddings endpoints this system sends to, for the run's pre-flight."""
        out = [e.endpoint_check() for e in (self._embedder, self._image_embedder)
               if isinstance(e, EndpointChecked)]
        return out

    def _new_index(self):  # type: ignore[no-untyped-def]
        # lazy: numpy and the embedders load only for a system that retrieves
        from ..retrieval import UnitIndex

        return UnitIndex(self.unit, self.retriever, embedder=self._embedder,
                         text_retriever=self.text_retriever, fusion=self.fusion,
                         recency=self.recency, image_embedder=self._image_embedder)

    def describe(self) -> dict[str, Any]:
        if self.alias:  # as before the options existed: old run folders resume unchanged
            return {"name": self.name, "top_k": self.top_k, "reader": self.reader,
                    "context_mode": self.ctx.context_mode}
        out: dict[str, Any] = {
            "name": self.name, "unit": self.unit, "retriever": self.retriever,
            "top_k": self.top_k, "recency": self.recency, "images": self.images,
            "reader": self.reader, "ranking": self.ranking,
            "context_mode": self.ctx.context_mode}
        if self._embedder is not None:
            out["embedder"] = self._embedder.name
        if self.retriever == "hybrid":
            out.update(text_retriever=self.text_retriever, fusion=self.fusion)
        if self._image_embedder is not None:
            out["image_embedder"] = self._image_embedder.name
            out["image_similarity"] = self._image_embedder.describe()
        elif self.retriever in ("visual", "hybrid"):
            # lazy: numpy and the embedders load only for a system that retrieves
            from ..retrieval import STAND_IN

            out["image_similarity"] = STAND_IN
        return out

    async def reset(self, episode: Episode) -> None:
        self.index = self._new_index()

    async def ingest(self, session: Session) -> None:
        await self.index.add(session)

    def _retrieved(self, ranked: list[tuple[Any, float]]) -> list[RetrievedItem]:
        keep = ranked if self.ranking == 0 else ranked[: max(self.ranking, self.top_k)]
        return [RetrievedItem(pointer=u.pointer.model_copy(),
                              score=score, chosen=i < self.top_k)
                for i, (u, score) in enumerate(keep)]

    async def answer(self, question: Question) -> Response:
        # lazy: numpy and the embedders load only for a system that retrieves
        from ..retrieval import as_sessions

        ranked = await self.index.search(question)
        retrieved = self._retrieved(ranked)
        chosen = as_sessions([u for u, _ in ranked[: self.top_k]])  # chronological order
        if self.reader == "oracle":
            # lazy: the synth package loads only when its questions are solved
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
            prompt = build_prompt(chosen, question, mode=self.mode, instruction=c.instruction,
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


def _factory(name: str, fixed: dict[str, Any] | None, doc: str):  # type: ignore[no-untyped-def]
    def build(ctx: SystemContext) -> SystemFactory:
        first = Rag(ctx, name, fixed)  # validates the options once, up front

        def make() -> MemorySystem:
            return Rag(ctx, name, fixed, first._embedder, first._image_embedder)

        make.endpoints = first.endpoints  # type: ignore[attr-defined]  # the run pre-flights them
        return make

    build.__doc__ = doc
    return build


def _reader_kind(options: dict[str, Any]) -> str:
    """With the oracle reading what was retrieved, its accuracy is what retrieval alone
    allows: a baseline, not a memory agent."""
    return BASELINE if options.get("reader") == "oracle" else MEMORY_AGENT


def _reader_needs(options: dict[str, Any]) -> set[str]:
    """The model reads what was retrieved, or the oracle does (from the gold program)."""
    return {NEEDS_PROGRAM} if options.get("reader") == "oracle" else {NEEDS_MODEL}


rag = system("rag", OPTIONS, retriever_requirements, _reader_needs, _reader_kind)(_factory(
    "rag", None, "Indexes turns, rounds or sessions at ingest; retrieves the top_k by BM25, "
    "embeddings, image similarity or both (with recency), then the model answers from them"))
rag_bm25 = system("rag-bm25", ALIAS_OPTIONS,
                  lambda o: retriever_requirements({**o, "retriever": "bm25"}),
                  _reader_needs, _reader_kind)(_factory(
    "rag-bm25", {"retriever": "bm25"}, "rag with unit=session, retriever=bm25: the top_k "
    "sessions by BM25 over their text, then the model answers from them (in --context-mode)"))
rag_embed = system("rag-embed", ALIAS_OPTIONS,
                   lambda o: retriever_requirements({**o, "retriever": "embed"}),
                   _reader_needs, _reader_kind)(_factory(
    "rag-embed", {"retriever": "embed"}, "rag with unit=session, retriever=embed: the top_k "
    "sessions by embedding similarity, then the model answers from them (in --context-mode)"))
