"""The Captioner protocol and the caption stage a run puts between its data and its systems.

A captioner turns one image into text (``ocr``: the printed text; a VLM: a description;
``gold``: the caption the data carries; ``file:``: a caption made elsewhere). The stage
(:class:`CaptionStage`) runs it once per distinct image per run, keeps its captions in the
response cache under kind ``caption`` keyed by (captioner, prompt version, image sha256),
writes each into ``ref.captions[<kind>]`` and marks ``ref.meta["caption_kind"]`` so that the
prompt builder shows that caption and no other (``prompt.py``, ``shown_caption``).
A caption that cannot be made is an error of every question of the episode that needed it
(:class:`CaptionFailed`, recorded as ``caption_error``; design 0023).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..cache import ResponseCache, cache_key
from ..errors import ConfigFieldError, EpisodeFailure, literal
from ..media import ImagePolicy
from ..models import ChatModel
from ..registry import lookup
from ..schema import Episode, ImageRef

PROMPTS = ("dense", "task")
_NOTED_FAILURES = 5  # failure messages kept in the manifest


class CaptionFailed(EpisodeFailure):
    """An image's caption could not be made (the captioner's call failed for good)."""

    error_kind = "caption_error"  # the record's error kind


@dataclass(frozen=True)
class Caption:
    kind: str  # the ``ImageRef.captions`` key it fills
    text: str


@dataclass(frozen=True)
class CaptionerSettings:
    """What a captioner factory gets: the run's endpoint settings for a VLM captioner."""

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    prompt: str = "dense"  # dense | task (VLM captioners)
    concurrency: int = 4  # VLM calls in flight
    timeout_s: float = 120.0
    max_attempts: int = 6
    retry_base_s: float = 0.5
    max_tokens: int = 256
    image_policy: ImagePolicy = field(default_factory=ImagePolicy)
    # --captioner-model-option: a local: captioner's server options (mmproj, n_ctx, ...)
    model_options: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class Captioner(Protocol):
    """Turns an image into a caption.

    ``name`` is the ``--captioner`` value; ``kind`` the ``ImageRef.captions`` key it fills;
    ``version`` changes whenever its output for the same image would (prompt digest, OCR
    engine version): it is part of the cache key. ``cacheable`` is False for captioners
    whose captions cost nothing to look up again (``gold``, ``file:``); ``needs_pixels``
    False for those that never read the image file (``gold``). ``caption`` returns None when
    the captioner has no caption for the image (counted as missing), and raises
    :class:`CaptionFailed` when making one failed.
    """

    name: str
    kind: str
    version: str
    cacheable: bool
    needs_pixels: bool

    def describe(self) -> dict[str, Any]: ...

    async def caption(self, ref: ImageRef, sha256: str | None) -> Caption | None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ModelCaptioner(Protocol):
    """A captioner that asks a chat model (a VLM: ``openai:``, ``local:``). The run
    pre-flights ``model``'s endpoint with the run's others before the first question; a
    captioner without one (``gold``, ``ocr``, ``file:``) has no endpoint to check."""

    model: ChatModel


def create_captioner(spec: str, settings: CaptionerSettings | None = None) -> Captioner:
    """``gold``, ``ocr``, ``openai:<model>``, ``local:<gguf>`` or ``file:<jsonl>``."""
    provider, sep, arg = spec.partition(":")
    if not provider:
        raise ConfigFieldError(f"{{captioner}} {literal(repr(spec))}: name a captioner (gold, "
                               "ocr, openai:<model>, local:<gguf>, file:<jsonl>)", "captioner")
    settings = settings or CaptionerSettings()
    if settings.prompt not in PROMPTS:
        raise ConfigFieldError(f"{{captioner_prompt}} {literal(repr(settings.prompt))}: use "
                               f"one of {', '.join(PROMPTS)}", "captioner_prompt")
    return lookup("captioner", provider)(arg if sep else None, settings)


def no_argument(name: str, arg: str | None) -> None:
    if arg is not None:
        raise ConfigFieldError(f"{{captioner}} {literal(f'{name}:{arg}')}: {name} takes no "
                               "argument", "captioner")


def argument(name: str, arg: str | None, what: str) -> str:
    if not arg:
        raise ConfigFieldError(f"{{captioner}} {name}: needs {what} ({name}:<{what}>)",
                               "captioner")
    return arg


def episode_images(episode: Episode) -> Iterator[ImageRef]:
    """Every image of an episode a system may read: its turns' and its questions'."""
    for session in episode.sessions:
        for turn in session.turns:
            yield from (im for im in turn.images if not im.missing)
    for question in episode.questions:
        yield from (im for im in question.images if not im.missing)


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class CaptionCounts:
    """Distinct images of this invocation, by how their caption came."""

    images: int = 0
    captioned: int = 0  # made by the captioner now
    from_cache: int = 0
    failed: int = 0
    missing: int = 0  # the captioner has no caption for it (unknown sha, no text, no file)

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class CaptionStage:
    """Captions every image of an episode before its system sees it (see module doc)."""

    def __init__(self, captioner: Captioner, cache: ResponseCache | None = None) -> None:
        self.captioner = captioner
        self.cache = cache.for_kind("caption") if cache is not None and captioner.cacheable \
            else None
        self.counts = CaptionCounts()
        self.failures: list[str] = []
        self._made: dict[str, asyncio.Task[Caption | None]] = {}
        self._sha: dict[str, str] = {}  # path -> sha256 of its bytes

    def describe(self) -> dict[str, Any]:
        c = self.captioner
        return {"name": c.name, "kind": c.kind, "version": c.version,
                "cached": self.cache is not None, **c.describe()}

    def summary(self) -> dict[str, Any]:
        """For the manifest: what it is and this invocation's counts."""
        out = {**self.describe(), "counts": self.counts.to_dict()}
        if self.failures:
            out["failures"] = list(self.failures)
        return out

    async def aclose(self) -> None:
        await self.captioner.aclose()

    async def apply(self, episode: Episode) -> None:
        """Fill the captions of the episode's images; raise :class:`CaptionFailed` naming
        the first image whose caption failed (after every image was tried)."""
        refs = list(episode_images(episode))
        if not refs:
            return
        results = await asyncio.gather(*(self._caption_of(ref) for ref in refs),
                                       return_exceptions=True)
        failed: list[tuple[ImageRef, BaseException]] = []
        for ref, result in zip(refs, results, strict=True):
            if isinstance(result, BaseException):
                failed.append((ref, result))
                continue
            ref.meta["caption_kind"] = result.kind if result else self.captioner.kind
            if result is not None:
                ref.captions[result.kind] = result.text
        if failed:
            ref, exc = failed[0]
            if not isinstance(exc, Exception):
                raise exc
            more = f" (and {len(failed) - 1} more image(s))" if len(failed) > 1 else ""
            raise CaptionFailed(f"captioner {self.captioner.name} failed on image "
                                f"{ref.source}: {exc}{more}") from exc

    async def _caption_of(self, ref: ImageRef) -> Caption | None:
        sha = ref.sha256
        if sha is None and ref.path is not None and self.captioner.needs_pixels:
            sha = self._sha.get(ref.path)
            if sha is None:
                try:
                    sha = await asyncio.to_thread(_file_sha256, ref.path)
                except OSError as exc:
                    raise CaptionFailed(f"cannot read {ref.path}: {exc}") from None
                self._sha[ref.path] = sha
        key = sha or f"source:{ref.source}"
        task = self._made.get(key)
        if task is None:  # once per distinct image per run, however many episodes share it
            task = asyncio.ensure_future(self._make(ref, sha))
            self._made[key] = task
        return await asyncio.shield(task)

    async def _make(self, ref: ImageRef, sha: str | None) -> Caption | None:
        c = self.captioner
        self.counts.images += 1
        if c.needs_pixels and sha is None:
            self.counts.missing += 1  # nothing to read: no local file, no content hash
            return None
        cache = self.cache
        key = cache_key({"captioner": c.name, "version": c.version, "image": sha}) \
            if cache is not None else None
        if cache is not None and key is not None:
            hit = await asyncio.to_thread(cache.get, key)
            if hit is not None:
                self.counts.from_cache += 1
                if hit.get("text") is None:
                    self.counts.missing += 1
                    return None
                return Caption(kind=hit["kind"], text=hit["text"])
        try:
            caption = await c.caption(ref, sha)
        except Exception as exc:
            self.counts.failed += 1
            if len(self.failures) < _NOTED_FAILURES:
                self.failures.append(f"{ref.source}: {exc}")
            raise
        if caption is None:
            self.counts.missing += 1
        else:
            self.counts.captioned += 1
        if cache is not None and key is not None:  # a failure is never stored: a rerun asks again
            value = {"kind": caption.kind if caption else c.kind,
                     "text": caption.text if caption else None}
            await asyncio.to_thread(cache.put, key, value)
        return caption
