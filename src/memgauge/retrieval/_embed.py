"""Text embedders for the embed/visual/hybrid retrievers: texts in, unit-length rows out.

- ``model2vec`` (default): the 64-d static model ``tokenlearn-static-model`` ships, offline,
  through the analysis module's shared, cached encoder (so ``rag-embed`` scores as before);
  ``model2vec:<folder>`` loads another Model2Vec model from a folder.
- ``sentence-transformers:<name or folder>``: extra ``sentence-transformers``.
- ``openai:<model>``: any OpenAI-compatible ``/v1/embeddings`` endpoint (``base_url``),
  through the project's HTTP transport (models/_http.py).

Local encoders run in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..errors import ConfigError
from ..models import ModelError

EMBEDDERS = ("model2vec", "model2vec:<folder>", "sentence-transformers:<name>", "openai:<model>")


class Embedder(Protocol):
    name: str

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def unit_rows(vecs: Any) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float32)
    if vecs.ndim != 2:
        vecs = vecs.reshape(len(vecs), -1)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return np.divide(vecs, norms, out=np.zeros_like(vecs), where=norms > 0)


class LocalEmbedder:
    """An in-process encoder (texts -> 2-D array), called in a worker thread, one call at
    a time (the shared analysis encoder's cache is not made for concurrent writers)."""

    _lock = threading.Lock()

    def __init__(self, name: str, encode: Callable[[list[str]], Any]) -> None:
        self.name = name
        self._encode = encode

    def _run(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return unit_rows(self._encode(texts))

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return await asyncio.to_thread(self._run, list(texts))


class OpenAIEmbedder:
    """``POST {base_url}/embeddings`` with ``{"model", "input": [texts]}``; the reply's
    ``data[i].embedding`` rows, ordered by ``index``. A non-2xx reply or a malformed body is a
    :class:`ModelError` naming the URL (the runner records it; nothing is cached)."""

    def __init__(self, model: str, base_url: str, api_key_env: str = "OPENAI_API_KEY",
                 timeout_s: float = 120.0, batch: int = 256) -> None:
        from ..models._http import HttpClient, HttpError

        self._transport_errors = (OSError, TimeoutError, HttpError)
        self.name = f"openai:{model}"
        self.model = model
        self.url = base_url.rstrip("/") + "/embeddings"
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            self._client = HttpClient(self.url, headers, timeout_s)
        except ValueError as exc:
            raise ConfigError(f"--system-option embedder_base_url={base_url!r}: {exc}") from None
        self.batch = batch

    async def _post(self, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": texts}).encode()
        try:
            resp = await self._client.post([body])
        except self._transport_errors as exc:
            raise ModelError("connection", f"{self.url}: {type(exc).__name__}: {exc}",
                             retryable=True) from None
        if not 200 <= resp.status < 300:
            raise ModelError("http_error", f"{self.url} answered {resp.status}: "
                             f"{resp.body[:300].decode(errors='replace')}",
                             retryable=resp.status >= 500 or resp.status == 429)
        try:
            data = json.loads(resp.body)["data"]
            rows = sorted(data, key=lambda d: d.get("index", 0))
            vecs = [list(map(float, d["embedding"])) for d in rows]
            if len(vecs) != len(texts) or len({len(v) for v in vecs}) != 1:
                raise ValueError(f"{len(vecs)} embeddings of mixed or wrong size for "
                                 f"{len(texts)} inputs")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelError("bad_response", f"{self.url}: the reply's data[].embedding is "
                             f"not usable ({type(exc).__name__}: {exc})") from None
        return unit_rows(vecs)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        texts = list(texts)
        parts = [await self._post(texts[i:i + self.batch])
                 for i in range(0, len(texts), self.batch)]
        return np.concatenate(parts)


def _model2vec(folder: str | None) -> LocalEmbedder:
    from ..analysis._retrieval import EmbedRetriever, get_retriever

    if folder is None:
        shared = get_retriever("embed")
        assert isinstance(shared, EmbedRetriever)
        return LocalEmbedder("model2vec", shared.embed)
    if not os.path.isdir(folder):
        raise ConfigError(f"--system-option embedder=model2vec:{folder}: no such folder")
    return LocalEmbedder(f"model2vec:{folder}", EmbedRetriever(model_path=folder).embed)


def _sentence_transformers(name: str) -> LocalEmbedder:
    from ..analysis._retrieval import require

    st = require("sentence_transformers", extra="sentence-transformers",
                 purpose=f"the embedder sentence-transformers:{name}")
    holder: dict[str, Any] = {}

    def encode(texts: list[str]) -> Any:
        if "model" not in holder:  # loads on first use, in the worker thread
            holder["model"] = st.SentenceTransformer(name)
        return holder["model"].encode(texts, show_progress_bar=False)

    return LocalEmbedder(f"sentence-transformers:{name}", encode)


def make_embedder(spec: str, base_url: str | None = None,
                  api_key_env: str = "OPENAI_API_KEY") -> Embedder:
    """The embedder ``spec`` names (see the module docstring); a ConfigError otherwise."""
    kind, _, arg = spec.partition(":")
    if kind == "model2vec":
        return _model2vec(arg or None)
    if kind == "sentence-transformers" and arg:
        return _sentence_transformers(arg)
    if kind == "openai" and arg:
        if not base_url:
            raise ConfigError(f"--system-option embedder={spec} needs "
                              "--system-option embedder_base_url=http://HOST:PORT/v1")
        return OpenAIEmbedder(arg, base_url, api_key_env)
    raise ConfigError(f"--system-option embedder={spec!r}: unknown embedder; use one of "
                      f"{', '.join(EMBEDDERS)}")
