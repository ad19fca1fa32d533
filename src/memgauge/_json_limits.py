"""Reading JSON that users hand us, within bounds (docs/design/0017-hostile-inputs.md).

Every user file memgauge parses goes through here or through a loader's streaming reader,
which wraps what it gives ijson in :class:`BoundedStream`. A parse failure of any kind
becomes an :class:`~memgauge.errors.InputError` naming the file (and the line or item):
never a traceback, never a process that grows until the kernel kills it.

- Nesting: at most :data:`MAX_DEPTH` levels. orjson has this limit built in; ijson has none,
  and its C backend keeps each level's path prefix (``item.item.item…``), so 400 KB of
  ``[`` took tens of GB. :class:`BoundedStream` counts the depth of the bytes before ijson
  sees them.
- Size: a whole document (a manifest, an id list) at most :data:`MAX_DOCUMENT_BYTES`; one
  item of a streamed file, or one line of a JSON Lines file, at most :data:`MAX_ITEM_BYTES`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import orjson

from .errors import InputError

MAX_DEPTH = 1024  # orjson's own fixed limit: the fast and the streaming paths agree
MAX_ITEM_BYTES = 256 << 20  # the largest real item (a LongMemEval_m haystack) is ~10 MB
MAX_DOCUMENT_BYTES = 64 << 20  # manifests and id lists are KB; an id list of 1M ids ~20 MB


class LimitExceeded(ValueError):
    """Raised inside a stream (by :class:`BoundedStream`); callers add where it happened."""


def loads(data: bytes | str, *, file: str, item: str | None = None) -> Any:
    """``orjson.loads`` whose every failure is an InputError naming ``file`` (and ``item``)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(describe_json_error(exc), file=file, item=item) from None


def describe_json_error(exc: Exception) -> str:
    msg = str(exc)
    if "recursion" in msg.lower() or "depth limit" in msg.lower():
        return f"nested deeper than {MAX_DEPTH} levels (refused: {msg})"
    return f"invalid JSON ({msg})"


def load_document(path: str | Path, *, what: str, max_bytes: int = MAX_DOCUMENT_BYTES,
                  field: str | None = None) -> Any:
    """A whole JSON file (``what`` says which, e.g. "run manifest") parsed within bounds."""
    p = Path(path)
    file = str(p)
    if not p.exists():
        raise InputError(f"no such file ({what})", file=file, field=field)
    if not p.is_file():
        raise InputError(f"not a file ({what}); is it a folder?", file=file, field=field)
    data = read_bounded(p, what=what, max_bytes=max_bytes, field=field)
    return loads(data, file=file)


def read_bounded(p: Path, *, what: str, max_bytes: int, field: str | None = None) -> bytes:
    """A file's bytes, refused (before reading them all) when over ``max_bytes``."""
    try:
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror or exc})", file=str(p),
                         field=field) from None
    if len(data) > max_bytes:
        raise InputError(f"over the {max_bytes:,}-byte limit for {what}; is it the right "
                         "file?", file=str(p), field=field)
    return data


class _Readable(Protocol):
    def read(self, n: int = -1) -> bytes: ...


_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = None  # bracket byte -> +1 / -1 (a numpy table, made on first use)


class BoundedStream:
    """A binary reader for ijson that refuses, as it reads, nesting deeper than ``max_depth``
    and more than ``max_item`` bytes since the last :meth:`item_done`.

    The depth is that of the bytes outside strings, counted per chunk with bytes methods
    (C speed): escapes are dropped, the chunk is split at quotes, and the brackets of the
    pieces outside strings are counted; only a chunk that could pass the limit is walked
    bracket by bracket. A chunk that ends inside a string, or after a backslash, carries
    that state to the next one.
    """

    def __init__(self, reader: _Readable, *, max_depth: int = MAX_DEPTH,
                 max_item: int = MAX_ITEM_BYTES) -> None:
        self._reader = reader
        self.max_depth, self.max_item = max_depth, max_item
        self.depth = 0
        self._in_string = False
        self._carry = b""
        self._read = 0
        self._mark = 0

    def read(self, n: int = -1) -> bytes:
        if n == 0:  # ijson probes the type of what read() returns with read(0)
            return b""
        data = self._reader.read(n)
        self._read += len(data)
        if self._read - self._mark > self.max_item:
            raise LimitExceeded(f"an item over {self.max_item:,} bytes (refused: is it the "
                                "right file?)")
        self._scan(data)
        return data

    def item_done(self) -> None:
        """The caller has an item: the size bound starts again from here."""
        self._mark = self._read

    def _scan(self, data: bytes) -> None:
        chunk = (b'"' if self._in_string else b"") + self._carry + data
        self._carry = b""
        if data:  # a trailing backslash may escape the next chunk's first byte
            cut = len(chunk) - len(chunk.rstrip(b"\\"))
            if cut:
                chunk, self._carry = chunk[:-cut], chunk[-cut:]
        # Escapes go first (pairs, left to right, as a JSON parser reads them); then every
        # quote left opens or closes a string, and the even pieces lie outside strings.
        if b"\\" in chunk:
            chunk = chunk.replace(b"\\\\", b"").replace(b'\\"', b"")
        pieces = chunk.split(b'"')
        self._in_string = len(pieces) % 2 == 0
        brackets = b"".join(pieces[0::2]).translate(None, _NOT_BRACKET)
        opens = brackets.count(b"[") + brackets.count(b"{")
        if self.depth + opens > self.max_depth and _peak(brackets, self.depth) > self.max_depth:
            raise LimitExceeded(f"nested deeper than {self.max_depth} levels (refused)")
        self.depth += 2 * opens - len(brackets)


def _peak(brackets: bytes, start: int) -> int:
    """The deepest level reached along ``brackets`` (only ``[]{}``) from depth ``start``."""
    if not brackets:
        return start
    import numpy as np

    global _STEP
    if _STEP is None:
        _STEP = np.zeros(256, dtype=np.int64)
        _STEP[list(b"[{")] = 1
        _STEP[list(b"]}")] = -1
    return start + int(np.cumsum(_STEP[np.frombuffer(brackets, dtype=np.uint8)]).max())
