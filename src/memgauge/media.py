"""Images: resolving source entries to files, and encoding each image once per run.

The MemLens reference re-reads and re-encodes every PNG for every request (80 % of its CPU)
and silently drops images it cannot find. Here an unresolvable image is an error naming the
item (or, with ``allow_missing``, a recorded gap), and encoded images are kept by
(path, size, mtime, policy) so each is read, resized and base64-encoded once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import re
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from PIL import Image, UnidentifiedImageError
from pybase64 import b64encode  # SIMD: ~20x the stdlib's speed on image-sized inputs

from .errors import InputError
from .schema import ImageRef

PATH_KEYS = ("file", "path", "file_path", "img_file")
URL_KEYS = ("image_hf_url", "image_url", "url")
_MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


# Images are refused above PIL's own warning level (~89.5 megapixels, 256 MiB as RGB)
# rather than warned about: PIL only refuses at twice that, and a 20000x20000 PNG of one
# colour is a few KB on disk and 1.2 GB once decoded. The size is read from the header;
# nothing is decoded (docs/design/0017-hostile-inputs.md).
MAX_IMAGE_PIXELS = 1024 * 1024 * 1024 // 4 // 3
_BOMB_PIXELS = re.compile(r"\((\d+) pixels\)")


class ImageTooLarge(ValueError):
    """An image whose header says it has more than :data:`MAX_IMAGE_PIXELS` pixels."""

    def __init__(self, width: int | None, height: int | None, pixels: int) -> None:
        self.width, self.height, self.pixels = width, height, pixels
        size = f"{width}x{height} = {pixels:,} pixels" if width else f"{pixels:,} pixels"
        super().__init__(f"image is {size}, over the {MAX_IMAGE_PIXELS:,}-pixel limit (a "
                         "decompression bomb?); it is not decoded")


def header_size(fp: str | IO[bytes]) -> tuple[int, int, str | None]:
    """(width, height, format) from an image's header, without decoding it. Raises
    :class:`ImageTooLarge` past the bound, PIL's errors for what is not an image."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # refused just below
        try:
            with Image.open(fp) as im:
                (w, h), fmt = im.size, im.format
        except Image.DecompressionBombError as exc:  # over 2x PIL's level: no size given
            m = _BOMB_PIXELS.search(str(exc))
            raise ImageTooLarge(None, None, int(m.group(1)) if m else 0) from None
    if w * h > MAX_IMAGE_PIXELS:
        raise ImageTooLarge(w, h, w * h)
    return w, h, fmt


def inline_image(url: str) -> tuple[bytes, int, int] | None:
    """A ``data:image/...;base64,`` URL's bytes and size (None when it holds no readable
    image); :class:`ImageTooLarge` past the bound."""
    try:
        data = base64.b64decode(url.split(",", 1)[1], validate=False)
    except (IndexError, ValueError, binascii.Error):
        return None
    try:
        w, h, _ = header_size(io.BytesIO(data))
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        if isinstance(exc, ImageTooLarge):
            raise
        return None
    return data, w, h


def _is_url(value: str) -> bool:
    return value.startswith(("http://", "https://"))


def _is_data_url(value: str) -> bool:
    return value.startswith("data:")


def _shown(value: str) -> str:
    """A source for a message: a data: URL by its media type and length, not its bytes."""
    if _is_data_url(value):
        kind = value[5:value.find(";")] if ";" in value else "data"
        return f"inline {kind} ({len(value):,} chars)"
    return value if len(value) <= 200 else value[:200] + "…"


class ImageResolver:
    """Turns image entries (strings or dicts) into :class:`ImageRef` objects.

    Local paths are resolved against ``root`` (the ``--image-dir``) and must stay inside it.
    Each distinct file is checked once (exists, is an image, its size), then memoised.
    """

    def __init__(self, root: str | os.PathLike[str], *, allow_missing: bool = False) -> None:
        self.root = Path(root).resolve()
        self.allow_missing = allow_missing
        self._checked: dict[str, tuple[int, int] | str | ImageTooLarge | _LinksOut] = {}
        self._refs: dict[tuple[str, str | None, str | None], ImageRef] = {}
        # Entries seen before, by their exact content (a string, or an object's items in
        # order): a shared pool repeats the same entries thousands of times.
        self._entries: dict[Any, ImageRef] = {}

    def resolve_list(self, entries: list[Any], *, file: str, item: str,
                     field: str) -> list[ImageRef]:
        """``resolve`` for each entry of a list (``field`` names the list in errors)."""
        memo = self._entries
        out: list[ImageRef] = []
        for entry in entries:
            t = type(entry)
            try:
                key = entry if t is str else tuple(entry.items()) if t is dict else None
                ref = memo.get(key) if key is not None else None
            except TypeError:  # an unhashable value (e.g. a list of paths)
                key = ref = None
            if ref is None:
                ref = self.resolve(entry, file=file, item=item, field=f"{field}[{len(out)}]")
                if key is not None and len(memo) < 1_000_000:
                    memo[key] = ref
            out.append(ref)
        return out

    def resolve(self, entry: Any, *, file: str, item: str, field: str) -> ImageRef:
        if isinstance(entry, str):
            source = entry
            path_value, url = ((None, entry) if _is_url(entry) or _is_data_url(entry)
                               else (entry, None))
        elif isinstance(entry, dict):
            source = entry
            path_value = next((entry[k] for k in PATH_KEYS if entry.get(k)), None)
            if isinstance(path_value, list):
                path_value = path_value[0] if path_value else None
            url = next((entry[k] for k in URL_KEYS if isinstance(entry.get(k), str)
                        and (_is_url(entry[k]) or _is_data_url(entry[k]))), None)
            if path_value is not None and not isinstance(path_value, str):
                raise InputError(f"image path must be a string, got {type(path_value).__name__}",
                                 file=file, item=item, field=field)
            if path_value and (_is_url(path_value) or _is_data_url(path_value)):
                path_value, url = None, url or path_value
        else:
            raise InputError(f"image entry must be a string or an object, got "
                             f"{type(entry).__name__}",
                             file=file, item=item, field=field)
        src = source if isinstance(source, str) else (path_value or url or "")
        memo_key = (src, path_value, url)
        hit = self._refs.get(memo_key)
        if hit is not None:  # the same entry again (a shared pool): share its ImageRef
            return hit
        ref = self._resolve(src, path_value, url, file=file, item=item, field=field)
        self._refs[memo_key] = ref
        return ref

    def _resolve(self, src: str, path_value: str | None, url: str | None, *, file: str,
                 item: str, field: str) -> ImageRef:
        if not path_value and not url:
            raise InputError("image entry has neither a file path nor a URL",
                             file=file, item=item, field=field)
        if not path_value:
            width = height = sha = None
            meta: dict[str, Any] = {}
            if url is not None and _is_data_url(url):
                try:
                    got = inline_image(url)
                except ImageTooLarge as exc:
                    raise InputError(f"{exc} ({_shown(url)})", file=file, item=item,
                                     field=field) from None
                if got is None:
                    raise InputError(f"inline image ({_shown(url)}) holds no readable image",
                                     file=file, item=item, field=field)
                data, width, height = got
                sha = hashlib.sha256(data).hexdigest()
                meta = {"inline": True}
            return ImageRef.model_construct(source=src, path=None, url=url, sha256=sha,
                                            width=width, height=height, captions={},
                                            missing=False, meta=meta)
        full = os.path.normpath(os.path.join(self.root, path_value))
        if not (full == str(self.root) or full.startswith(str(self.root) + os.sep)):
            raise InputError(f"image path {path_value!r} escapes the image dir",
                             file=file, item=item, field=field)
        checked = self._checked.get(full)
        if checked is None:
            # The path may stay inside while a link in it leads out: what is read is where
            # the links end, and a file outside the image dir must never reach an endpoint.
            real = os.path.realpath(full)
            root = str(self.root)
            inside = real == root or real.startswith(root + os.sep)
            checked = self._check(real) if inside else _LINKS_OUT
            self._checked[full] = checked
        if isinstance(checked, ImageTooLarge):  # refused even with allow_missing: not a gap
            raise InputError(f"{checked} ({path_value!r})", file=file, item=item, field=field)
        if isinstance(checked, _LinksOut):
            raise InputError(f"image path {path_value!r} is a link to a file outside the image "
                             f"dir ({os.path.realpath(full)}); it is not read",
                             file=file, item=item, field=field)
        if isinstance(checked, str):  # a problem description
            if not self.allow_missing:
                raise InputError(f"image {path_value!r} {checked} (under {self.root}); "
                                 "pass --allow-missing-images to record it and go on",
                                 file=file, item=item, field=field)
            return ImageRef.model_construct(source=src, path=full, url=url, sha256=None, width=None,
                                            height=None, captions={}, missing=True,
                                            meta={"problem": checked})
        w, h = checked
        return ImageRef.model_construct(source=src, path=full, url=url, sha256=None, width=w,
                                        height=h, captions={}, missing=False, meta={})

    @staticmethod
    def _check(real: str) -> tuple[int, int] | str | ImageTooLarge:
        if not os.path.isfile(real):
            return "was not found"
        try:
            w, h, _ = header_size(real)
        except ImageTooLarge as exc:
            return exc
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            return f"is not a readable image ({type(exc).__name__})"
        return w, h


class _LinksOut:
    """The mark in ImageResolver._checked of a path whose links lead out of the image dir."""


_LINKS_OUT = _LinksOut()


@dataclass(frozen=True)
class ImagePolicy:
    """How images are prepared before sending. Recorded in the run manifest."""

    max_side: int | None = 800  # longest side cap (LANCZOS); None keeps the original size
    format: str = "keep"  # keep | png | jpeg
    jpeg_quality: int = 90

    def describe(self) -> dict[str, Any]:
        return {"max_side": self.max_side, "format": self.format, "jpeg_quality": self.jpeg_quality}

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        if self.max_side is None or max(width, height) <= self.max_side:
            return width, height
        scale = self.max_side / max(width, height)
        return max(1, round(width * scale)), max(1, round(height * scale))


@dataclass(frozen=True)
class EncodedImage:
    sha256: str  # of the original file bytes
    mime: str
    data_url: bytes  # b"data:<mime>;base64,..." (ASCII, JSON-safe: spliced into bodies as is)
    width: int
    height: int


class ImageEncoder:
    """Reads, resizes and base64-encodes images, each once, kept in a byte-bounded LRU."""

    def __init__(self, policy: ImagePolicy | None = None, budget_bytes: int = 1 << 30) -> None:
        self.policy = policy or ImagePolicy()
        self.budget = budget_bytes
        self._cache: OrderedDict[tuple[Any, ...], EncodedImage] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._keys: dict[str, tuple[Any, ...]] = {}
        self.encodes = 0
        self.hits = 0

    def _key(self, path: str) -> tuple[Any, ...]:
        # A file is stat-ed once per run: (path, size, mtime) names its content from then on.
        key = self._keys.get(path)
        if key is None:
            st = os.stat(path)
            key = self._keys[path] = (path, st.st_size, st.st_mtime_ns)
        return key

    def cached(self, ref: ImageRef) -> EncodedImage | None:
        """The encoded image if it is already in memory (no file read), else None."""
        if ref.path is None:
            return None
        key = self._key(ref.path)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self.hits += 1
            return hit

    def encode(self, ref: ImageRef) -> EncodedImage:
        if ref.path is None:
            raise InputError(f"image {ref.source!r} has no file to read" + (
                " (it is missing)" if ref.missing else ""))
        key = self._key(ref.path)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return hit
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # one encode per image even when many requests want it at once
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self.hits += 1
                    return hit
            enc = self._encode_file(ref.path)
            with self._lock:
                self.encodes += 1
                self._cache[key] = enc
                self._bytes += len(enc.data_url)
                while self._bytes > self.budget and len(self._cache) > 1:
                    _, old = self._cache.popitem(last=False)
                    self._bytes -= len(old.data_url)
                self._key_locks.pop(key, None)
            return enc

    def _encode_file(self, path: str) -> EncodedImage:
        raw = Path(path).read_bytes()
        sha = hashlib.sha256(raw).hexdigest()
        try:  # checked when resolved; the file may have been replaced since
            header_size(io.BytesIO(raw))
        except ImageTooLarge as exc:
            raise InputError(str(exc), file=path) from None
        with Image.open(io.BytesIO(raw)) as im:
            fmt = im.format or "PNG"
            size = im.size
            target = self.policy.target_size(*size)
            out_fmt = {"keep": fmt, "png": "PNG", "jpeg": "JPEG"}[self.policy.format]
            if out_fmt not in _MIME:
                out_fmt = "PNG"
            if target == size and out_fmt == fmt:
                data = raw  # already fine: send the original bytes untouched
            else:
                img = im.convert("RGB") if out_fmt == "JPEG" or im.mode not in ("RGB", "RGBA",
                                                                                "L") else im
                if target != size:
                    img = img.resize(target, Image.Resampling.LANCZOS)
                buf = io.BytesIO()
                if out_fmt == "JPEG":
                    img.save(buf, format="JPEG", quality=self.policy.jpeg_quality)
                else:
                    img.save(buf, format=out_fmt)
                data = buf.getvalue()
        mime = _MIME[out_fmt]
        url = b"data:" + mime.encode() + b";base64," + b64encode(data)
        return EncodedImage(sha256=sha, mime=mime, data_url=url, width=target[0], height=target[1])

    def stats(self) -> dict[str, int]:
        return {"encodes": self.encodes, "hits": self.hits, "cached_bytes": self._bytes}
