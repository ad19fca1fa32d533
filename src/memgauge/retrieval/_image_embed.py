"""Image embeddings from an endpoint the user serves (CLIP, SigLIP, VLM2Vec on vLLM...).

``openai:<model>`` at ``base_url``: ``POST {base_url}/embeddings``, one image per request,
in one of two request shapes (no shape for images on ``/v1/embeddings`` is standard):

- ``messages`` (default; vLLM's embeddings API for multimodal models)::

    {"model": M, "encoding_format": "float",
     "messages": [{"role": "user", "content": [
         {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}]}]}

- ``input`` (servers that take image items in ``input``, Jina-style)::

    {"model": M, "encoding_format": "float", "input": [{"image": "data:..."}]}

Text (a question) goes through the same model as ``{"model": M, "input": [text]}``: vLLM
embeds text and images of CLIP/SigLIP in separate requests. Images are sent as data URLs
resized like the run's sent images (the run's ``ImagePolicy``); an image with only a URL is
sent as that URL; one with neither (a caption only) has no vector. Each image's vector is
kept in the response cache (kind ``image_embedding``) under (model, endpoint, shape, resize
policy, image sha256), so a rerun, or another run against the same endpoint, sends no
request for an image it has embedded; within a run each image is asked for once.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._secrets import redact_url
from ..cache import ResponseCache, cache_key
from ..errors import ConfigError, InputError
from ..media import ImageEncoder, ImagePolicy
from ..schema import ImageRef
from ._embed import EndpointCheck, Flags, OpenAIEmbedder, unit_rows

IMAGE_EMBEDDERS = ("openai:<model>",)
SHAPES = ("messages", "input")
OPTION_FLAGS = Flags("--system-option image_embedder", "--system-option image_embedder_base_url")


def _file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def check_image_embedder_spec(spec: str, base_url: str | None,
                              flags: Flags = OPTION_FLAGS) -> str:
    """The model name of a well-formed ``openai:<model>`` spec with its endpoint; a
    ConfigError naming the flag otherwise."""
    kind, _, model = spec.partition(":")
    if kind != "openai" or not model:
        raise ConfigError(f"{flags.spec} {spec!r}: use one of {', '.join(IMAGE_EMBEDDERS)} "
                          "(an image-embeddings endpoint you serve, e.g. CLIP on vLLM)")
    if not base_url:
        raise ConfigError(f"{flags.spec} {spec} needs {flags.url} http://HOST:PORT/v1")
    return model


class OpenAIImageEmbedder:
    """Texts and images into one vector space through one endpoint (module docstring)."""

    def __init__(self, model: str, base_url: str, *, policy: ImagePolicy,
                 cache: ResponseCache | None = None, shape: str = "messages",
                 api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 120.0,
                 flags: Flags = OPTION_FLAGS) -> None:
        if shape not in SHAPES:
            raise ConfigError(f"--system-option image_embedder_shape={shape}: use "
                              f"{' or '.join(SHAPES)}")
        self.endpoint = OpenAIEmbedder(model, base_url, api_key_env, timeout_s,
                                       url_flag=flags.url)
        self.name = self.endpoint.name
        self.model, self.shape, self.policy = model, shape, policy
        self.encoder = ImageEncoder(policy)
        self.cache = cache.for_kind("image_embedding") if cache is not None else None
        self._made: dict[str, asyncio.Task[np.ndarray]] = {}
        self._shas: dict[str, str] = {}  # path -> sha256 of its bytes
        self.from_cache = 0

    def describe(self) -> str:
        shown = redact_url(self.endpoint.base)
        return (f"cosine of image embeddings from {self.name} at {shown} ({self.shape} "
                "requests; text questions embedded by the same model)")

    def endpoint_check(self) -> EndpointCheck:
        return self.endpoint.endpoint_check("image embedder", "--image-embedder-base-url")

    async def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return await self.endpoint.embed(texts)

    async def embed_images(self, refs: Sequence[ImageRef]) -> list[np.ndarray | None]:
        """One unit-length row per image, None for an image with no pixels to send."""
        return list(await asyncio.gather(*(self._vector(ref) for ref in refs)))

    async def _sha(self, path: str) -> str:
        # Hashing the file is all a cached image costs: resizing and encoding wait for a miss.
        sha = self._shas.get(path)
        if sha is None:
            try:
                sha = await asyncio.to_thread(_file_sha256, path)
            except OSError as exc:
                raise InputError(f"cannot be read for the image embedder ({exc.strerror or exc})",
                                 file=path) from None
            self._shas[path] = sha
        return sha

    async def _vector(self, ref: ImageRef) -> np.ndarray | None:
        if ref.path is None and not ref.url:
            return None
        if ref.path is not None:
            sha = ref.sha256 or await self._sha(ref.path)
        else:
            sha = ref.sha256 or f"url:{ref.url}"
        task = self._made.get(sha)
        if task is None:  # once per image per run, however many units and episodes hold it
            task = self._made[sha] = asyncio.ensure_future(self._make(sha, ref))
        try:
            return await asyncio.shield(task)
        except BaseException:
            if task.done():
                self._made.pop(sha, None)  # a failure is asked again, never kept
            raise

    def _key(self, sha: str) -> str:
        return cache_key({"image_embedder": self.model, "endpoint": redact_url(self.endpoint.base),
                          "shape": self.shape, "resize": self.policy.describe(), "image": sha})

    async def _url(self, ref: ImageRef) -> str:
        if ref.path is None:
            assert ref.url is not None
            return ref.url
        hit = self.encoder.cached(ref)
        enc = hit if hit is not None else await asyncio.to_thread(self.encoder.encode, ref)
        return enc.data_url.decode("ascii")

    async def _make(self, sha: str, ref: ImageRef) -> np.ndarray:
        key = self._key(sha)
        if self.cache is not None:
            hit = await asyncio.to_thread(self.cache.get, key)
            if hit is not None and isinstance(hit.get("embedding"), list):
                row = unit_rows([hit["embedding"]])[0]
                self.endpoint.check_dims(row.size, f"the cached embedding of image {sha[:12]}")
                self.from_cache += 1
                return row
        [row] = await self.endpoint.request(self._payload(await self._url(ref)), 1)
        if self.cache is not None:
            await asyncio.to_thread(self.cache.put, key, {"embedding": row.tolist()})
        return row

    def _payload(self, url: str) -> dict[str, Any]:
        if self.shape == "input":
            return {"model": self.model, "encoding_format": "float", "input": [{"image": url}]}
        return {"model": self.model, "encoding_format": "float", "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]}
