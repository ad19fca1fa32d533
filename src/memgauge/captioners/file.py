"""``file:<jsonl>``: captions made elsewhere, one ``{"sha256": ..., "caption": ...}`` a line,
matched to images by the sha256 of their file bytes. The whole file is read and checked when
the run is set up, before the first request."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError
from ..registry import captioner
from ..schema import ImageRef
from ._base import Caption, CaptionerSettings, argument

_SHA256 = re.compile(r"[0-9a-f]{64}")


def read_captions(path: Path) -> dict[str, str]:
    """sha256 -> caption; an :class:`InputError` naming the file, line and field otherwise."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot be read as a captions file: {exc.strerror or exc}",
                         file=str(path)) from None
    out: dict[str, str] = {}
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        item = f"line {n}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"not a JSON object: {exc}", file=str(path), item=item) from None
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}",
                             file=str(path), item=item)
        sha, text = obj.get("sha256"), obj.get("caption")
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha.lower()):
            raise InputError("expected the image's sha256 as 64 hex digits, got "
                             f"{str(sha)[:80]!r}", file=str(path), item=item, field="sha256")
        if not isinstance(text, str) or not text.strip():
            raise InputError("expected a non-empty string", file=str(path), item=item,
                             field="caption")
        sha = sha.lower()
        if out.get(sha, text) != text:
            raise InputError(f"image {sha[:16]}… has another caption on an earlier line",
                             file=str(path), item=item, field="caption")
        out[sha] = text.strip()
    return out


class FileCaptioner:
    kind = "file"
    cacheable = False  # already a lookup table
    needs_pixels = True  # matched by the sha256 of the image's bytes

    def __init__(self, path: Path) -> None:
        self.path = path
        self.captions = read_captions(path)
        self.name = f"file:{path}"
        self.version = hashlib.sha256(path.read_bytes()).hexdigest()

    def describe(self) -> dict[str, Any]:
        return {"file": str(self.path), "file_sha256": self.version,
                "entries": len(self.captions)}

    async def caption(self, ref: ImageRef, sha256: str | None) -> Caption | None:
        text = self.captions.get(sha256 or "")
        return None if text is None else Caption(kind=self.kind, text=text)

    async def aclose(self) -> None:
        """Nothing to close (the captions were read at start: nothing is open)."""


@captioner("file")
def make_file(arg: str | None, settings: CaptionerSettings) -> FileCaptioner:
    path = Path(argument("file", arg, "jsonl"))
    if not path.is_file():
        raise InputError("no such captions file (--captioner file:<jsonl>)", file=str(path))
    return FileCaptioner(path)
