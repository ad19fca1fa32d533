"""Retrieval for memory systems: units, embedders, the per-episode index.

The session retrievers and the session-ranking measurement (Recall@k of evidence sessions)
are in :mod:`memgauge.retrieval._sessions` (moved from ``analysis/_retrieval.py``, issue 26
§2, so systems need not import the analysis); the units and the index reuse its BM25
tokenisation and shared Model2Vec encoder, so ``rag-bm25``/``rag-embed`` score as they did.
"""

from ._embed import (
    EMBEDDERS,
    Embedder,
    EndpointCheck,
    Flags,
    LocalEmbedder,
    OpenAIEmbedder,
    check_embedder_spec,
    make_embedder,
)
from ._image_embed import IMAGE_EMBEDDERS, SHAPES, OpenAIImageEmbedder, check_image_embedder_spec
from ._index import FUSIONS, RETRIEVERS, UnitIndex, with_recency
from ._units import UNITS, Unit, as_sessions, split
from ._visual import STAND_IN

__all__ = ["EMBEDDERS", "FUSIONS", "IMAGE_EMBEDDERS", "RETRIEVERS", "SHAPES", "STAND_IN", "UNITS",
           "Embedder", "EndpointCheck", "Flags", "LocalEmbedder", "OpenAIEmbedder",
           "OpenAIImageEmbedder", "Unit", "UnitIndex", "as_sessions", "check_embedder_spec",
           "check_image_embedder_spec", "make_embedder", "split", "with_recency"]
