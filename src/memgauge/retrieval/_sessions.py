"""How hard is it to *find* a question's evidence? Session retrieval over one episode.

Each episode's sessions are ranked against the question text by a text retriever, and the
evidence sessions' ranks give Recall@k, all-found@k and MRR. The document for a session is
its turns' text with ``<image>`` placeholders removed: image captions are never used, so the
numbers show what a text-only retriever can find.

Two retrievers are built in, both offline (``pip install 'memgauge[validate]'``):

- ``bm25``: BM25 via ``bm25s``, one small index per episode;
- ``embed``: cosine similarity of static Model2Vec embeddings (the 64-d model that
  ``tokenlearn-static-model`` ships), with numpy.

:func:`rank_sessions` and :func:`get_retriever` are reusable by retrieval-based systems.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memgauge.errors import ConfigError
from memgauge.schema import Episode, Session

__all__ = [
    "RETRIEVERS",
    "BM25Retriever",
    "EmbedRetriever",
    "RetrievalResult",
    "Retriever",
    "get_retriever",
    "rank_sessions",
    "retrieval_recall",
    "session_text",
]

_PLACEHOLDER = re.compile(r"<image\d*>")
_SPACES = re.compile(r"\s+")
VALIDATE_HINT = "pip install 'memgauge[validate]'"


def require(module: str, *, extra: str = "validate", purpose: str = "") -> Any:
    """Import an optional dependency, or raise a :class:`ConfigError` saying how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        what = f" for {purpose}" if purpose else ""
        raise ConfigError(f"the optional package {module!r} is needed{what} and is not "
                          f"installed ({exc}); install it with: pip install "
                          f"'memgauge[{extra}]'") from None


def session_text(session: Session) -> str:
    """A session as one text document: its turns' text joined by newlines, with ``<image>``
    placeholders removed and runs of spaces collapsed. Captions are not included."""
    parts = []
    for turn in session.turns:
        text = _SPACES.sub(" ", _PLACEHOLDER.sub(" ", turn.text or "")).strip()
        if text:
            parts.append(text)
    return "\n".join(parts)


@runtime_checkable
class Retriever(Protocol):
    """Scores texts against a query. ``rank`` returns ``(index into texts, score)`` pairs,
    best first; ties keep the texts' order. Every text appears once."""

    name: str

    def rank(self, texts: Sequence[str], query: str) -> list[tuple[int, float]]: ...


def _order(scores: Sequence[float] | np.ndarray) -> list[tuple[int, float]]:
    values = [float(s) for s in scores]
    idx = sorted(range(len(values)), key=lambda i: (-values[i], i))
    return [(i, values[i]) for i in idx]


class BM25Retriever:
    """BM25 (``bm25s``, English stop words, no stemming) over the given texts."""

    name = "bm25"

    def __init__(self) -> None:
        self._bm25s = require("bm25s", purpose="the bm25 retriever")

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        return self._bm25s.tokenize(texts, stopwords="english", show_progress=False,
                                    return_ids=False)

    def scores(self, texts: Sequence[str], query: str) -> np.ndarray:
        docs = self._tokenize(list(texts))
        [q] = self._tokenize([query])
        if not q or not any(docs):
            return np.zeros(len(docs))
        index = self._bm25s.BM25()
        index.index(docs, show_progress=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.asarray(index.get_scores(q), dtype=float)
        return np.nan_to_num(out)

    def rank(self, texts: Sequence[str], query: str) -> list[tuple[int, float]]:
        if not texts:
            return []
        return _order(self.scores(texts, query))


def static_model_path() -> str:
    """The folder of the 64-d Model2Vec model bundled in ``tokenlearn-static-model``
    (import name ``static_model``), found without importing that package."""
    spec = importlib.util.find_spec("static_model")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the optional package 'tokenlearn-static-model' is needed for the "
                          f"embed retriever and is not installed; install it with: "
                          f"{VALIDATE_HINT}")
    return os.path.join(next(iter(spec.submodule_search_locations)), "model")


class EmbedRetriever:
    """Cosine similarity of static embeddings.

    By default the Model2Vec model bundled in ``tokenlearn-static-model`` (loaded once, on
    first use, a few seconds). ``encode`` (texts -> 2-D array) replaces it, e.g. in tests.
    Embeddings of recent texts are cached, since haystack sessions repeat across episodes.
    """

    name = "embed"

    def __init__(self, encode: Callable[[list[str]], Any] | None = None, *,
                 model_path: str | None = None, cache_size: int = 50_000) -> None:
        self._encode_fn = encode
        self._model_path = model_path
        self._lock = threading.Lock()
        self._cache: dict[str, np.ndarray] = {}
        self._cache_size = cache_size
        if encode is None:
            require("model2vec", purpose="the embed retriever")
            if model_path is None:
                static_model_path()  # fail early, with the install hint

    def _encoder(self) -> Callable[[list[str]], Any]:
        with self._lock:
            if self._encode_fn is None:
                from model2vec import StaticModel

                model = StaticModel.from_pretrained(self._model_path or static_model_path())
                self._encode_fn = lambda texts: model.encode(texts, show_progress_bar=False)
            return self._encode_fn

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length rows (all-zero for a text with no known tokens)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            vecs = np.asarray(self._encoder()(list(todo)), dtype=np.float32)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = np.divide(vecs, norms, out=np.zeros_like(vecs), where=norms > 0)
            if len(self._cache) + len(todo) > self._cache_size:
                self._cache.clear()
            self._cache.update(zip(todo, vecs, strict=True))
        return np.stack([self._cache[t] for t in texts])

    def rank(self, texts: Sequence[str], query: str) -> list[tuple[int, float]]:
        if not texts:
            return []
        vecs = self.embed([*texts, query])
        return _order(vecs[:-1] @ vecs[-1])


RETRIEVERS: dict[str, Callable[[], Retriever]] = {"bm25": BM25Retriever, "embed": EmbedRetriever}


@cache
def get_retriever(name: str) -> Retriever:
    """The shared instance of a built-in retriever (``bm25`` or ``embed``); the embed model
    loads once per process."""
    try:
        factory = RETRIEVERS[name]
    except KeyError:
        raise ConfigError(f"unknown retriever {name!r}; known: {sorted(RETRIEVERS)}") from None
    return factory()


def _resolve(retriever: str | Retriever) -> Retriever:
    return get_retriever(retriever) if isinstance(retriever, str) else retriever


def rank_sessions(sessions: Sequence[Session], query: str,
                  retriever: str | Retriever = "bm25") -> list[tuple[str, float]]:
    """Rank sessions against a query: ``(session_id, score)`` best first, ties in session
    order. A session's document is :func:`session_text` (no captions)."""
    ranked = _resolve(retriever).rank([session_text(s) for s in sessions], query)
    return [(sessions[i].session_id, score) for i, score in ranked]


@dataclass(frozen=True)
class RetrievalResult:
    """Session retrieval over a set of episodes (a report: no threshold).

    ``recall_at[k]``: mean over questions of the share of their evidence sessions ranked in
    the top k. ``all_found_at[k]``: share of questions with every evidence session in the
    top k. ``mrr``: mean reciprocal rank of the first evidence session (0 when none of them is
    in the episode). Keys of the ``*_at`` maps are ``k`` as a string (JSON-ready).
    Questions with no evidence (e.g. refusals) are counted in ``n_without_evidence`` only.
    """

    retriever: str
    ks: list[int]
    n_questions: int
    n_without_evidence: int
    mean_sessions: float | None
    mean_evidence_sessions: float | None
    recall_at: dict[str, float | None] = field(default_factory=dict)
    all_found_at: dict[str, float | None] = field(default_factory=dict)
    mrr: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"retriever": self.retriever, "ks": list(self.ks),
                "n_questions": self.n_questions, "n_without_evidence": self.n_without_evidence,
                "mean_sessions": self.mean_sessions,
                "mean_evidence_sessions": self.mean_evidence_sessions,
                "recall_at": dict(self.recall_at), "all_found_at": dict(self.all_found_at),
                "mrr": self.mrr}


def _avg(values: list[float]) -> float | None:
    return round(float(sum(values) / len(values)), 6) if values else None


def retrieval_recall(episodes: Iterable[Episode], *, ks: Sequence[int] = (1, 3, 5, 10),
                     retriever: str | Retriever = "bm25") -> RetrievalResult:
    """Recall@k, all-found@k and MRR of evidence sessions when each episode's sessions are
    ranked against each of its questions (see :class:`RetrievalResult`).

    ``retriever``: ``"bm25"``, ``"embed"`` or any :class:`Retriever`. Evidence sessions are
    the distinct ``session_id`` values of ``question.evidence``.
    """
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ConfigError("retrieval_recall: every k must be a positive integer")
    impl = _resolve(retriever)
    recall: dict[int, list[float]] = {k: [] for k in ks}
    found: dict[int, list[float]] = {k: [] for k in ks}
    rr: list[float] = []
    sizes: list[float] = []
    n_ev: list[float] = []
    without = 0
    for ep in episodes:
        texts: list[str] | None = None
        for q in ep.questions:
            evidence = list(dict.fromkeys(e.session_id for e in q.evidence))
            if not evidence:
                without += 1
                continue
            if texts is None:
                texts = [session_text(s) for s in ep.sessions]
            ranked = [ep.sessions[i].session_id for i, _ in impl.rank(texts, q.text)]
            pos = {sid: r for r, sid in enumerate(ranked)}
            ranks = sorted(pos[sid] for sid in evidence if sid in pos)
            for k in ks:
                hits = sum(r < k for r in ranks)
                recall[k].append(hits / len(evidence))
                found[k].append(float(hits == len(evidence)))
            rr.append(1.0 / (ranks[0] + 1) if ranks else 0.0)
            sizes.append(len(ep.sessions))
            n_ev.append(len(evidence))
    return RetrievalResult(
        retriever=impl.name, ks=ks, n_questions=len(rr), n_without_evidence=without,
        mean_sessions=_avg(sizes), mean_evidence_sessions=_avg(n_ev),
        recall_at={str(k): _avg(v) for k, v in recall.items()},
        all_found_at={str(k): _avg(v) for k, v in found.items()}, mrr=_avg(rr))
