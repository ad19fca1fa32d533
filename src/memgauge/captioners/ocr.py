"""``ocr``: the printed text RapidOCR reads in the image (offline; the ``ocr`` extra)."""

from __future__ import annotations

import asyncio
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..registry import captioner
from ..retrieval._sessions import require
from ..schema import ImageRef
from ._base import Caption, CaptionerSettings, CaptionFailed, no_argument

PACKAGE = "rapidocr-onnxruntime"

# Also the caption-proof gate's reader (validation/_gates.py), which owned it until issue 26 §2.
_OCR_LOCK = threading.Lock()
_OCR_ENGINE: list[Any] = []


def rapidocr_text(path: str) -> str:
    """Text that RapidOCR (``rapidocr-onnxruntime``, bundled ONNX models) reads in an image,
    its boxes joined by newlines. The engine is created once per process."""
    with _OCR_LOCK:
        if not _OCR_ENGINE:
            mod = require("rapidocr_onnxruntime", extra="ocr", purpose="caption-proof OCR")
            _OCR_ENGINE.append(mod.RapidOCR())
        engine = _OCR_ENGINE[0]
    if not Path(path).is_file():
        raise InputError("image file not found", file=str(path))
    try:
        result, _ = engine(str(path))
    except Exception as exc:  # rapidocr's own errors (e.g. LoadImageError) derive from Exception
        raise InputError(f"OCR failed: {exc}", file=str(path)) from exc
    return "\n".join(str(box[1]) for box in (result or []))


class OcrCaptioner:
    name = "ocr"
    kind = "ocr"
    cacheable = True
    needs_pixels = True

    def __init__(self, engine_version: str) -> None:
        # The engine's version (its bundled models come with it) keys the cache.
        self.version = f"{PACKAGE}-{engine_version}"

    def describe(self) -> dict[str, Any]:
        return {"engine": PACKAGE, "engine_version": self.version.removeprefix(PACKAGE + "-")}

    async def caption(self, ref: ImageRef, sha256: str | None) -> Caption | None:
        if ref.path is None:
            return None  # an inline image: nothing on disk for the engine to read
        try:
            # ONNX inference takes tens to hundreds of milliseconds: off the event loop
            text = await asyncio.to_thread(rapidocr_text, ref.path)
        except InputError as exc:
            raise CaptionFailed(str(exc)) from None
        text = " ".join(line.strip() for line in text.splitlines() if line.strip())
        return Caption(kind=self.kind, text=text) if text else None

    async def aclose(self) -> None:
        pass  # the engine is shared by the process (rapidocr_text)


@captioner("ocr")
def make_ocr(arg: str | None, settings: CaptionerSettings) -> OcrCaptioner:
    no_argument("ocr", arg)
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError:
        raise ConfigError("--captioner ocr needs RapidOCR: pip install 'memgauge[ocr]'") from None
    return OcrCaptioner(metadata.version(PACKAGE))
