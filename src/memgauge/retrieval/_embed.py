"""Text embedders for the embed/visual/hybrid retrievers: texts in, unit-length rows out.

- ``model2vec`` (default): the 64-d static model ``tokenlearn-static-model`` ships, offline,
  through the analysis module's shared, cached encoder (so ``rag-embed`` scores as before);
  ``model2vec:<folder>`` loads another Model2Vec model from a folder.
- ``sentence-transformers:<name or folder>``: extra ``sentence-transformers``.
- ``openai:<model>``: any OpenAI-compatible ``/v1/embeddings`` endpoint (``base_url``),
  through the project's HTTP transport (models/_http.py); pre-flighted with the run's other
  endpoints (:meth:`OpenAIEmbedder.endpoint_check`).

The spec comes from ``--embedder`` (``--embedder-base-url``) or ``--system-option
embedder=`` (``embedder_base_url=``); :func:`check_embedder_spec` checks one before
anything is loaded or sent.

Local encoders run in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import ConfigError
from ..models import ModelError
from ..models._http import HttpClient, HttpError
from ._sessions import EmbedRetriever, get_retriever, require

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


@dataclass(frozen=True)
class EndpointSettings:
    timeout_s: float
    api_key_env: str


@dataclass
class EndpointCheck:
    """An embeddings endpoint as the run's pre-flight (models/_preflight.py) sees a model:
    its base URL and headers, the model name its ``/models`` should list, and the flags an
    error names. The finding is kept in ``served`` / ``served_note``."""

    name: str
    base: str
    headers: dict[str, str]
    label: str  # "embedder" | "image embedder"
    url_flag: str
    settings: EndpointSettings
    key_flag: str = "--api-key-env"
    served: dict[str, Any] | None = field(default=None, init=False)
    served_note: str | None = field(default=None, init=False)

    def preflight_target(self) -> tuple[str, dict[str, str]]:
        return self.base, dict(self.headers)

    def note_served(self, entry: dict[str, Any] | None, note: str | None = None) -> None:
        self.served, self.served_note = entry, note


def _number(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        raise ValueError(f"{x!r} is not a finite number")
    return float(x)


class OpenAIEmbedder:
    """``POST {base_url}/embeddings`` with ``{"model", "input": [texts]}``; the reply's
    ``data[i].embedding`` rows, ordered by ``index``. A non-2xx reply or a malformed body (a
    wrong number of rows, a value that is not a finite number, an all-zero row, a row whose
    size differs from the endpoint's earlier rows) is a :class:`ModelError` naming the URL
    and the field (the runner records it; nothing is cached)."""

    def __init__(self, model: str, base_url: str, api_key_env: str = "OPENAI_API_KEY",
                 timeout_s: float = 120.0, batch: int = 256,
                 url_flag: str = "--system-option embedder_base_url") -> None:
        self._transport_errors = (OSError, TimeoutError, HttpError)
        self.name = f"openai:{model}"
        self.model = model
        self.base = base_url.rstrip("/")
        self.url = self.base + "/embeddings"
        self.settings = EndpointSettings(timeout_s, api_key_env)
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self.headers = headers
        try:
            self._client = HttpClient(self.url, headers, timeout_s)
        except ValueError as exc:
            raise ConfigError(f"{url_flag}={base_url!r}: {exc}") from None
        self.batch = batch
        self.dims: int | None = None  # of the first reply; every later row must match
        self.requests = 0

    def endpoint_check(self, label: str = "embedder",
                       url_flag: str = "--embedder-base-url") -> EndpointCheck:
        return EndpointCheck(self.model, self.base, {k: v for k, v in self.headers.items()
                                                      if k == "Authorization"},
                             label, url_flag, self.settings)

    def check_dims(self, size: int, where: str) -> None:
        """The endpoint's rows keep one size: a model swapped behind the URL (or a cached
        row of another model) must not be compared with the others."""
        if self.dims is None:
            self.dims = size
        elif size != self.dims:
            raise ModelError("bad_response", f"{self.url}: {where} has {size} numbers where "
                             f"this endpoint's earlier embeddings had {self.dims}")

    async def request(self, payload: dict[str, Any], n: int) -> np.ndarray:
        """POST ``payload``; the reply's ``n`` rows, unit length, in input order."""
        body = json.dumps(payload).encode()
        self.requests += 1
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
            if not isinstance(data, list):
                raise TypeError(f"data is {type(data).__name__}, not a list")
            rows = sorted(data, key=lambda d: d.get("index", 0))
            vecs = [[_number(x) for x in d["embedding"]] for d in rows]
            if len(vecs) != n:
                raise ValueError(f"{len(vecs)} embeddings for {n} inputs")
            if len({len(v) for v in vecs}) != 1 or not vecs[0]:
                raise ValueError("rows of mixed or no size")
            if any(not any(v) for v in vecs):
                raise ValueError("an all-zero row")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelError("bad_response", f"{self.url}: the reply's data[].embedding is "
                             f"not usable ({type(exc).__name__}: {exc})") from None
        self.check_dims(len(vecs[0]), "the reply's data[].embedding")
        return unit_rows(vecs)

    async def _post(self, texts: list[str]) -> np.ndarray:
        return await self.request({"model": self.model, "input": texts}, len(texts))

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        texts = list(texts)
        parts = [await self._post(texts[i:i + self.batch])
                 for i in range(0, len(texts), self.batch)]
        return np.concatenate(parts)


def _model2vec(folder: str | None) -> LocalEmbedder:
    if folder is None:
        shared = get_retriever("embed")
        assert isinstance(shared, EmbedRetriever)
        return LocalEmbedder("model2vec", shared.embed)
    return LocalEmbedder(f"model2vec:{folder}", EmbedRetriever(model_path=folder).embed)


def _sentence_transformers(name: str) -> LocalEmbedder:
    st = require("sentence_transformers", extra="sentence-transformers",
                 purpose=f"the embedder sentence-transformers:{name}")
    holder: dict[str, Any] = {}

    def encode(texts: list[str]) -> Any:
        if "model" not in holder:  # loads on first use, in the worker thread
            holder["model"] = st.SentenceTransformer(name)
        return holder["model"].encode(texts, show_progress_bar=False)

    return LocalEmbedder(f"sentence-transformers:{name}", encode)


@dataclass(frozen=True)
class Flags:
    """How an error names the settings: the flags, or the system options."""

    spec: str = "--system-option embedder"
    url: str = "--system-option embedder_base_url"


OPTION_FLAGS = Flags()


def check_embedder_spec(spec: str, base_url: str | None = None,
                        flags: Flags = OPTION_FLAGS) -> tuple[str, str]:
    """``(kind, argument)`` of a well-formed spec, without loading or sending anything; a
    ConfigError naming the flag otherwise (a base URL belongs to an ``openai:`` spec only)."""
    kind, _, arg = spec.partition(":")
    if kind == "model2vec" and arg and not os.path.isdir(arg):
        raise ConfigError(f"{flags.spec} {spec}: no such folder {arg!r}")
    if kind == "openai" and arg and not base_url:
        raise ConfigError(f"{flags.spec} {spec} needs {flags.url} http://HOST:PORT/v1")
    if kind == "model2vec" or (kind in ("sentence-transformers", "openai") and arg):
        if base_url and kind != "openai":
            raise ConfigError(f"{flags.url} {base_url}: only an openai:<model> embedder has "
                              f"an endpoint ({flags.spec} is {spec})")
        return kind, arg
    raise ConfigError(f"{flags.spec} {spec!r}: unknown embedder; use one of "
                      f"{', '.join(EMBEDDERS)}")


def make_embedder(spec: str, base_url: str | None = None,
                  api_key_env: str = "OPENAI_API_KEY", flags: Flags = OPTION_FLAGS) -> Embedder:
    """The embedder ``spec`` names (see the module docstring); a ConfigError otherwise."""
    kind, arg = check_embedder_spec(spec, base_url, flags)
    if kind == "model2vec":
        return _model2vec(arg or None)
    if kind == "sentence-transformers":
        return _sentence_transformers(arg)
    assert base_url is not None
    return OpenAIEmbedder(arg, base_url, api_key_env, url_flag=flags.url)
