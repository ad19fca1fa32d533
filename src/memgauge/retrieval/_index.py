"""One episode's retrieval index: units added as sessions arrive, searched per question.

What is computed when:

- at ``add`` (ingest): the session is split into units; BM25 tokens, text embeddings, caption
  embeddings and image features (for the retrievers that use them) are computed for the new
  units only, in a worker thread or through the embedder;
- at the first ``search`` after an ``add``: the BM25 index and the embedding matrices are
  (re)built from what ``add`` stored (``builds`` counts this: once per episode when the
  questions follow the sessions, as in every built-in benchmark; again only when a question
  is asked part-way and more sessions arrive);
- at ``search``: the question is embedded (if needed) and scored against every unit in a
  worker thread, off the event loop. The result is the whole ranking, best first.

Scores: ``bm25`` raw BM25; ``embed`` cosine; ``visual`` the best image similarity: with an
image embedder (``image_embedder``, retrieval/_image_embed.py) the best cosine between the
question's vectors (its text, and its images, embedded by that model) and the unit's image
vectors; without one the offline stand-in (question images by appearance, else the question
text against image captions); ``hybrid`` 0.5 ·
min-max(text) + 0.5 · min-max(visual) (``fusion=weighted``) or reciprocal-rank fusion
(``fusion=rrf``, k=60). ``recency=α`` then gives s' = (1-α)·z(s) + α·t̂, z min-max over the
candidates and t̂ the unit's chronological position scaled to [0, 1] (MemEye's probe).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError, option_error
from ..schema import ImageRef, Question, Session
from ._embed import Embedder
from ._image_embed import OpenAIImageEmbedder
from ._sessions import require
from ._units import Unit, split
from ._visual import Look, look, similarity

RETRIEVERS = ("bm25", "embed", "visual", "hybrid")
FUSIONS = ("weighted", "rrf")
RRF_K = 60
_CAPTION_KINDS = ("gold", "dense", "generic", "ocr")


def caption(ref: ImageRef) -> str:
    return next((ref.captions[k] for k in _CAPTION_KINDS if ref.captions.get(k)), "")


def min_max(scores: np.ndarray) -> np.ndarray:
    if scores.size == 0:
        return scores
    lo, hi = float(scores.min()), float(scores.max())
    return (scores - lo) / (hi - lo) if hi > lo else np.zeros_like(scores)


def with_recency(scores: np.ndarray, alpha: float) -> np.ndarray:
    """s' = (1-α)·z(s) + α·t̂ over units in chronological order (α=0: s unchanged)."""
    if alpha == 0 or scores.size == 0:
        return scores
    n = scores.size
    t = np.arange(n, dtype=float) / (n - 1) if n > 1 else np.ones(1)
    return (1 - alpha) * min_max(scores) + alpha * t


def _ranks(scores: np.ndarray) -> np.ndarray:
    order = sorted(range(scores.size), key=lambda i: (-float(scores[i]), i))
    ranks = np.empty(scores.size, dtype=float)
    ranks[order] = np.arange(1, scores.size + 1)
    return ranks


class UnitIndex:
    """Units of one episode and what ``retriever`` needs of them (module docstring)."""

    def __init__(self, unit: str, retriever: str, *, embedder: Embedder | None = None,
                 text_retriever: str = "embed", fusion: str = "weighted",
                 recency: float = 0.0, image_embedder: OpenAIImageEmbedder | None = None) -> None:
        if retriever not in RETRIEVERS:
            raise ConfigError(f"unknown retriever {retriever!r}; use {', '.join(RETRIEVERS)}")
        if fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {fusion!r}; use {', '.join(FUSIONS)}")
        if text_retriever not in ("bm25", "embed"):
            raise ConfigError(f"unknown text retriever {text_retriever!r}; use bm25 or embed")
        if not 0.0 <= recency <= 1.0:
            raise option_error("recency", "must be within [0, 1]", recency)
        self.unit, self.retriever, self.fusion, self.recency = unit, retriever, fusion, recency
        self.text_kind = retriever if retriever in ("bm25", "embed") else (
            text_retriever if retriever == "hybrid" else None)
        self.visual = retriever in ("visual", "hybrid")
        self.embedder = embedder
        self.image_embedder = image_embedder if self.visual else None
        # the stand-in matches text questions against captions with the text embedder
        self.captions = self.visual and self.image_embedder is None
        if embedder is None and (self.text_kind == "embed" or self.captions):
            raise ConfigError(f"retriever {retriever} needs an embedder")
        self.units: list[Unit] = []
        self.builds = 0
        self._tokens: list[list[str]] = []
        self._vec_parts: list[np.ndarray] = []
        self._caption_parts: list[list[np.ndarray]] = []  # per unit: its captions' rows
        self._looks: list[list[Look]] = []
        self._image_rows: list[np.ndarray] = []  # per unit: its images' vectors (image embedder)
        self._dirty = True
        self._lock = threading.Lock()
        self._bm25: Any = None
        self._vecs: np.ndarray | None = None
        self._bm25s: Any = None
        if self.text_kind == "bm25":
            self._bm25s = require("bm25s", purpose="the bm25 retriever")

    # -- ingest ------------------------------------------------------------------------

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        return self._bm25s.tokenize(texts, stopwords="english", show_progress=False,
                                    return_ids=False)

    async def add(self, session: Session) -> None:
        new = split(session, self.unit, len(self.units))
        if not new:
            return
        texts = [u.text() for u in new]
        if self.text_kind == "bm25":
            self._tokens.extend(await asyncio.to_thread(self._tokenize, texts))
        if self.text_kind == "embed":
            assert self.embedder is not None
            self._vec_parts.append(await self.embedder.embed(texts))
        if self.image_embedder is not None:
            for u in new:
                rows = [r for r in await self.image_embedder.embed_images(u.images)
                        if r is not None]
                self._image_rows.append(np.stack(rows) if rows else np.zeros((0, 0)))
        elif self.visual:
            assert self.embedder is not None
            caps = [[c for c in map(caption, u.images) if c] for u in new]
            flat = [c for cs in caps for c in cs]
            rows = await self.embedder.embed(flat) if flat else np.zeros((0, 0))
            at = 0
            for cs in caps:
                self._caption_parts.append([rows[at + i] for i in range(len(cs))])
                at += len(cs)
            self._looks.extend(await asyncio.to_thread(
                lambda: [[x for x in map(look, u.images) if x is not None] for u in new]))
        self.units.extend(new)
        self._dirty = True

    # -- search ------------------------------------------------------------------------

    def _build(self) -> None:
        with self._lock:
            if not self._dirty:
                return
            if self.text_kind == "bm25" and any(self._tokens):
                self._bm25 = self._bm25s.BM25()
                self._bm25.index(self._tokens, show_progress=False)
            if self.text_kind == "embed" and self._vec_parts:
                self._vecs = np.concatenate(self._vec_parts)
            self.builds += 1
            self._dirty = False

    def _text_scores(self, query: str, qvec: np.ndarray | None) -> np.ndarray:
        n = len(self.units)
        if self.text_kind == "bm25":
            [q] = self._tokenize([query])
            if not q or self._bm25 is None:
                return np.zeros(n)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.nan_to_num(np.asarray(self._bm25.get_scores(q), dtype=float))
        assert self._vecs is not None and qvec is not None
        return (self._vecs @ qvec).astype(float)

    def _visual_scores(self, qvec: np.ndarray | None, qlooks: list[Look],
                       qimage: np.ndarray | None = None) -> np.ndarray:
        out = np.zeros(len(self.units))
        if self.image_embedder is not None:
            assert qimage is not None
            for i, rows in enumerate(self._image_rows):
                if rows.size:
                    out[i] = float((rows @ qimage.T).max())
            return out
        for i in range(len(self.units)):
            if qlooks:
                sims = [similarity(a, b) for a in qlooks for b in self._looks[i]]
            else:
                sims = [float(row @ qvec) for row in self._caption_parts[i]
                        if qvec is not None and row.size == qvec.size]
            out[i] = max(sims, default=0.0)
        return out

    def _scores(self, query: str, qvec: np.ndarray | None, qlooks: list[Look],
                qimage: np.ndarray | None = None) -> np.ndarray:
        self._build()
        if self.retriever in ("bm25", "embed"):
            return self._text_scores(query, qvec)
        image = self._visual_scores(qvec, qlooks, qimage)
        if self.retriever == "visual":
            return image
        text = self._text_scores(query, qvec)
        if self.fusion == "rrf":
            return 1.0 / (RRF_K + _ranks(text)) + 1.0 / (RRF_K + _ranks(image))
        return 0.5 * min_max(text) + 0.5 * min_max(image)

    def rank(self, query: str, qvec: np.ndarray | None, qlooks: Sequence[Look] = (),
             qimage: np.ndarray | None = None) -> list[tuple[Unit, float]]:
        """Every unit with its score, best first (ties: the older unit first). ``qimage``:
        the question's rows in the image embedder's space (its text first, then its images)."""
        if not self.units:
            return []
        scores = with_recency(self._scores(query, qvec, list(qlooks), qimage), self.recency)
        order = sorted(range(len(self.units)), key=lambda i: (-float(scores[i]), i))
        return [(self.units[i], float(scores[i])) for i in order]

    async def search(self, question: Question) -> list[tuple[Unit, float]]:
        qvec = None
        if self.embedder is not None and (self.text_kind == "embed" or self.captions):
            qvec = (await self.embedder.embed([question.text]))[0]
        qlooks: list[Look] = []
        qimage = None
        if self.image_embedder is not None:
            rows = [*await self.image_embedder.embed_texts([question.text]),
                    *(r for r in await self.image_embedder.embed_images(
                        [im for im in question.images if not im.missing]) if r is not None)]
            qimage = np.stack(rows)
        elif self.visual and question.images:
            qlooks = await asyncio.to_thread(
                lambda: [x for im in question.images if not im.missing
                         for x in [look(im)] if x is not None])
        return await asyncio.to_thread(self.rank, question.text, qvec, qlooks, qimage)
