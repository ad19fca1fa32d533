"""Retrieval for memory systems: units, embedders, the per-episode index.

The session-ranking analysis (Recall@k of evidence sessions) stays in
:mod:`memgauge.analysis._retrieval`, whose BM25 tokenisation and shared Model2Vec encoder
this package reuses, so ``rag-bm25``/``rag-embed`` score as they did.
"""

from ._embed import EMBEDDERS, Embedder, LocalEmbedder, OpenAIEmbedder, make_embedder
from ._index import FUSIONS, RETRIEVERS, UnitIndex, with_recency
from ._units import UNITS, Unit, as_sessions, split
from ._visual import STAND_IN

__all__ = ["EMBEDDERS", "FUSIONS", "RETRIEVERS", "STAND_IN", "UNITS", "Embedder",
           "LocalEmbedder", "OpenAIEmbedder", "Unit", "UnitIndex", "as_sessions",
           "make_embedder", "split", "with_recency"]
