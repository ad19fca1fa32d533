"""``ocr``: the printed text RapidOCR reads in the image (offline; the ``ocr`` extra)."""

from __future__ import annotations

import asyncio
from importlib import metadata
from typing import Any

from ..errors import ConfigError, InputError
from ..registry import captioner
from ..schema import ImageRef
from ._base import Caption, CaptionerSettings, CaptionFailed, no_argument

PACKAGE = "rapidocr-onnxruntime"


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
        from ..analysis._gates import rapidocr_text

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
        pass  # the engine is shared by the process (analysis/_gates.py)


@captioner("ocr")
def make_ocr(arg: str | None, settings: CaptionerSettings) -> OcrCaptioner:
    no_argument("ocr", arg)
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError:
        raise ConfigError("--captioner ocr needs RapidOCR: pip install 'memgauge[ocr]'") from None
    return OcrCaptioner(metadata.version(PACKAGE))
