"""``gold``: the caption the data carries (synth's facts in words, LoCoMo's BLIP caption)."""

from __future__ import annotations

from typing import Any

from ..registry import captioner
from ..schema import ImageRef
from ._base import Caption, CaptionerSettings, no_argument

# The data's own kinds, in the order caption mode has always preferred them.
DATA_KINDS = ("gold", "dense", "generic", "ocr")


class GoldCaptioner:
    name = "gold"
    kind = "gold"
    version = "data"  # nothing is made: the data is the version (its sha256 is in the manifest)
    cacheable = False
    needs_pixels = False

    def describe(self) -> dict[str, Any]:
        return {"source": "the data's captions", "kinds": list(DATA_KINDS)}

    async def caption(self, ref: ImageRef, sha256: str | None) -> Caption | None:
        kind = next((k for k in DATA_KINDS if ref.captions.get(k)), None)
        return None if kind is None else Caption(kind=kind, text=ref.captions[kind])

    async def aclose(self) -> None:
        """Nothing to close (it reads the data's own captions: nothing is open)."""


@captioner("gold")
def make_gold(arg: str | None, settings: CaptionerSettings) -> GoldCaptioner:
    no_argument("gold", arg)
    return GoldCaptioner()
