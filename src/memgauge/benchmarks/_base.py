"""The Benchmark protocol and the streaming-JSON plumbing loaders share."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

import ijson

from ..errors import InputError
from ..schema import Episode


@dataclass(frozen=True)
class BenchmarkOptions:
    """What the command line gives a benchmark factory."""

    data: str
    image_dir: str | None = None
    allow_missing_images: bool = False
    question_ids: str | None = None  # a file listing question ids to keep (a subset)
    tier: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Benchmark(Protocol):
    """A source of episodes, streamed.

    Example::

        @benchmark("mine")
        def mine(opts: BenchmarkOptions) -> Benchmark:
            return MyBench(opts.data)

        class MyBench:
            name = "mine"
            def episodes(self): yield from parse(self.path)
            def manifest(self): return {"name": "mine", "inputs": {...}}
    """

    name: str

    def episodes(self) -> Iterator[Episode]: ...

    def manifest(self) -> dict[str, Any]: ...


class HashingReader:
    """A binary file reader whose file digest is computed on a background thread (hashlib
    and file reads release the GIL), so hashing a large input costs the parser nothing.

    The hash starts once the parser has read ``start_after`` bytes (or when the digest is
    asked for): on a large file the first items, and the first request, are not slowed by it.
    """

    def __init__(self, path: str | os.PathLike[str], start_after: int = 8 << 20) -> None:
        self.path = str(path)
        self._f = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._start_after = start_after
        self._read = 0
        self._digest: Future[str] | None = None

    def _start(self) -> Future[str]:
        if self._digest is None:
            self._digest = _HASH_POOL.submit(file_sha256, self.path)
        return self._digest

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        if self._digest is None:
            self._read += len(data)
            if self._read >= self._start_after or not data:
                self._start()
        return data

    def peek(self, n: int) -> bytes:
        return self._f.peek(n)

    def hexdigest(self) -> str:
        """The file's sha256 (waits for the background hash if it is still running)."""
        return self._start().result()

    def close(self) -> None:
        self._f.close()


_HASH_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memgauge-hash")


def file_sha256(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def iter_json_items(reader: HashingReader) -> Iterator[tuple[int, Any]]:
    """Stream the items of a JSON list, or of ``{"data": [...]}``, or of JSON Lines.

    Yields ``(index, item)``. Never holds the whole file. Non-UTF-8 bytes and broken JSON
    become :class:`InputError` naming the file and the item index.
    """
    path = reader.path
    head = reader.peek(64)
    first = head.lstrip()[:1]
    index = -1
    try:
        if first == b"[":
            for index, item in enumerate(ijson.items(reader, "item", use_float=True)):
                yield index, item
        elif first == b"{" and _looks_like_jsonl(path):
            yield from _iter_jsonl(reader)
        elif first == b"{":
            for index, item in enumerate(ijson.items(reader, "data.item", use_float=True)):
                yield index, item
        elif not first:
            raise InputError("file is empty", file=path)
        else:
            raise InputError("expected a JSON list, an object with a 'data' list, or JSON Lines",
                             file=path)
    except UnicodeDecodeError as exc:
        raise InputError(f"file is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                         file=path, item=f"#{index + 1}") from None
    except ijson.JSONError as exc:
        msg = str(exc)
        if "utf-8" in msg.lower() or "utf8" in msg.lower() or "decode" in msg.lower():
            raise InputError(f"file is not valid UTF-8 ({msg})", file=path,
                             item=f"#{index + 1}") from None
        raise InputError(f"invalid JSON ({msg})", file=path, item=f"#{index + 1}") from None


def _looks_like_jsonl(path: str) -> bool:
    return Path(path).suffix in (".jsonl", ".ndjson")


def _iter_jsonl(reader: HashingReader) -> Iterator[tuple[int, Any]]:
    import orjson

    buf = b""
    index = 0
    while True:
        chunk = reader.read(1 << 20)
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line.strip():
                yield index, _load_line(orjson, line, reader.path, index)
                index += 1
    if buf.strip():
        yield index, _load_line(orjson, buf, reader.path, index)


def _load_line(orjson: Any, line: bytes, path: str, index: int) -> Any:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"file is not valid UTF-8 ({exc.reason})", file=path,
                         item=f"line {index + 1}") from None
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc})", file=path, item=f"line {index + 1}") from None


def read_id_list(path: str) -> set[str]:
    """Read a question-id list: a JSON list, a JSON object with a list under a key such as
    ``question_ids``, or one id per line."""
    import json

    text = Path(path).read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc})", file=path) from None
        if isinstance(obj, dict):
            lists = [v for k, v in obj.items() if isinstance(v, list) and "id" in k.lower()]
            if not lists:
                raise InputError("no list of question ids found (looked for keys containing 'id')",
                                 file=path)
            obj = lists[0]
        ids = set()
        for i, v in enumerate(obj):
            if isinstance(v, dict):
                v = v.get("question_id")
            if not isinstance(v, str | int):
                raise InputError(f"entry {i} is not a question id", file=path)
            ids.add(str(v))
        return ids
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


# Shared field checks: loaders call these so every error names file, item and field.

def require(obj: dict[str, Any], key: str, typ: type | tuple[type, ...], *, file: str,
            item: str) -> Any:
    if key not in obj:
        raise InputError("missing required field", file=file, item=item, field=key)
    value = obj[key]
    if not isinstance(value, typ):
        want = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise InputError(f"expected {want}, got {type(value).__name__}", file=file, item=item,
                         field=key)
    return value


def optional(obj: dict[str, Any], key: str, typ: type | tuple[type, ...], *, file: str,
             item: str, default: Any = None) -> Any:
    if obj.get(key) is None:
        return default
    return require(obj, key, typ, file=file, item=item)
