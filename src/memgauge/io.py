"""File input shared by every layer: a reader that hashes the file on a background thread,
memory-mapped JSON array and JSONL iteration with bounded items, and question-id lists.
Moved out of benchmarks/_base.py (issue 26 §2): runner, models, games and the CLI read
files too, and must not depend on the benchmarks for it."""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import stat
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import ijson
import orjson

from ._json_limits import (
    MAX_ITEM_BYTES,
    BoundedStream,
    LimitExceeded,
    describe_json_error,
    loads,
    read_bounded,
)
from .errors import InputError


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
        if self._digest is None and _background_hashing:
            self._read += len(data)
            if self._read >= self._start_after or not data:
                self._start()
        return data

    def peek(self, n: int) -> bytes:
        return self._f.peek(n)

    def fileno(self) -> int:
        return self._f.fileno()

    def seek(self, pos: int) -> None:
        self._f.seek(pos)

    def passed(self, pos: int) -> None:
        """A parser reading a mapping of the file (not ``read``) has got to ``pos``: the
        background hash starts as it would have after reading that far."""
        if self._digest is None and _background_hashing and pos >= self._start_after:
            self._start()

    def hexdigest(self) -> str:
        """The file's sha256 (waits for the background hash if it is still running)."""
        return self._start().result()

    def close(self) -> None:
        self._f.close()


def _new_hash_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="memgauge-hash")


_HASH_POOL = _new_hash_pool()
_background_hashing = True


def _after_fork_in_child() -> None:
    # A forked child inherits the pool object but none of its threads: the pool would
    # believe an idle thread exists and never run a job (a run's workers fork).
    global _HASH_POOL
    _HASH_POOL = _new_hash_pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def set_background_hashing(enabled: bool) -> None:
    """Whether readers start hashing their file on their own. A run's worker processes turn
    it off: the parent hashes the inputs once for the manifest."""
    global _background_hashing
    _background_hashing = enabled


def file_sha256(path: str | os.PathLike[str]) -> str:
    # Hashed from a mapping of the file where possible: reading copied the 786 MB tier out of
    # the page cache first (~0.3 s of CPU here). Each update releases the GIL; large pieces,
    # because every time this thread takes the GIL back it can stall a parser on the main
    # thread. Pages already hashed are dropped from the process, so RSS stays one piece.
    h = hashlib.sha256()
    step = 8 << 20
    with open(path, "rb", buffering=0) as f:
        mm = _map_file(f.fileno())
        if mm is not None:
            try:
                whole = memoryview(mm)
                for start in range(0, len(mm), step):
                    with whole[start:start + step] as piece:
                        h.update(piece)
                    _drop_pages(mm, start, min(len(mm), start + step))
                whole.release()
            finally:
                mm.close()
            return h.hexdigest()
        buf = bytearray(step)
        view = memoryview(buf)
        while n := f.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


_CAN_MAP = hasattr(mmap, "MADV_DONTNEED") and hasattr(mmap.mmap, "madvise")
_PAGE = mmap.PAGESIZE


def _map_file(fd: int) -> mmap.mmap | None:
    """A read-only mapping of a whole regular file, or None where one is not to be used (an
    empty or special file, or no ``madvise`` to keep RSS bounded)."""
    if not _CAN_MAP:
        return None
    try:
        st = os.fstat(fd)
        if not st.st_size or not stat.S_ISREG(st.st_mode):
            return None
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def _drop_pages(mm: mmap.mmap, start: int, stop: int) -> None:
    """Unmap the pages of ``[start, stop)`` from the process (they stay in the page cache and
    come back on access): a mapping read front to back counts in RSS only as a window."""
    start -= start % _PAGE
    if stop > start:
        mm.madvise(mmap.MADV_DONTNEED, start, stop - start)


def iter_json_items(reader: HashingReader, skip: Callable[[int], bool] | None = None,
                    ) -> Iterator[tuple[int, Any]]:
    """Stream the items of a JSON list, or of ``{"data": [...]}``, or of JSON Lines.

    Yields ``(index, item)``. Never holds the whole file. Non-UTF-8 bytes, broken JSON,
    nesting deeper than ``MAX_DEPTH`` and items over ``MAX_ITEM_BYTES`` become
    :class:`InputError` naming the file and the item index (``_json_limits``). Items whose index
    ``skip`` accepts may come as a :class:`RawItem` (unparsed) where the layout allows it
    (see ``_FastArray``); every other item is parsed.
    """
    path = reader.path
    head = reader.peek(64)
    first = head.lstrip()[:1]
    index = -1
    try:
        if first == b"[":
            fast = _FastArray(reader, skip)
            for index, item in fast:
                yield index, item
            # Whatever the fast path left (nothing, or the rest of an unusual file): ijson.
            start = index + 1
            stream = BoundedStream(fast.rest())
            for index, item in enumerate(ijson.items(stream, "item", use_float=True), start):
                stream.item_done()
                yield index, item
        elif first == b"{" and _looks_like_jsonl(path):
            yield from _iter_jsonl(reader)
        elif first == b"{":
            stream = BoundedStream(reader)
            for index, item in enumerate(ijson.items(stream, "data.item", use_float=True)):
                stream.item_done()
                yield index, item
        elif not first:
            raise InputError("file is empty", file=path)
        else:
            raise InputError("expected a JSON list, an object with a 'data' list, or JSON Lines",
                             file=path)
    except UnicodeDecodeError as exc:
        raise InputError(f"file is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                         file=path, item=f"#{index + 1}") from None
    except LimitExceeded as exc:
        raise InputError(str(exc), file=path, item=f"#{index + 1}") from None
    except ijson.JSONError as exc:
        msg = str(exc)
        if "utf-8" in msg.lower() or "utf8" in msg.lower() or "decode" in msg.lower():
            raise InputError(f"file is not valid UTF-8 ({msg})", file=path,
                             item=f"#{index + 1}") from None
        raise InputError(f"invalid JSON ({msg})", file=path, item=f"#{index + 1}") from None


class _Chain:
    """A reader that returns ``head`` first, then what ``reader`` has left."""

    def __init__(self, head: bytes, reader: HashingReader) -> None:
        self._head = head
        self._reader = reader

    def read(self, n: int = -1) -> bytes:
        if n == 0:  # ijson probes the type of what read() returns with read(0)
            return b""
        if self._head:
            data, self._head = self._head, b""
            return data
        return self._reader.read(n)


_WS = b" \t\r\n"
_AFTER_ITEM = re.compile(rb'[ \t\r\n]*,[ \t\r\n]*\{[ \t\r\n]*"(?:[^"\\]|\\.)*"')
_FIRST_STR = re.compile(rb'\{[ \t\r\n]*"([A-Za-z_]+)"[ \t\r\n]*:[ \t\r\n]*"((?:[^"\\]|\\.)*)"')


class RawItem:
    """An item left unparsed for whoever converts it (another worker's share of the file):
    its bytes, and its id read cheaply when that is its first key."""

    __slots__ = ("data",)

    def __init__(self, data: memoryview | bytes) -> None:
        self.data = data

    def get(self, key: str) -> Any:
        m = _FIRST_STR.match(self.data)
        if m is not None and m.group(1) == key.encode():
            value = m.group(2)
            return value.decode("utf-8") if b"\\" not in value else \
                orjson.loads(b'"' + value + b'"')
        obj = orjson.loads(self.data)  # not the first key: parse it after all
        return obj.get(key) if type(obj) is dict else None


class _FastArray:
    """The leading items of a top-level JSON list, each parsed whole by orjson (several times
    faster than ijson building the same objects).

    The first item's end is found exactly (the json module's ``raw_decode``); the bytes
    from its closing ``}`` to the next item's first key (e.g. ``},\n{"question_id"``) then
    serve as the separator to search for. A candidate end is accepted only if the bytes
    from the item's ``{`` up to it parse as one JSON value, which (JSON being read left to
    right) can only be the whole item. On anything unusual (non-object items, a layout
    that varies, invalid JSON or UTF-8, numbers orjson refuses) iteration stops and
    :meth:`rest` hands the remaining items to ijson, so errors and their messages are
    ijson's, as before. Memory stays bounded by a few items.
    """

    CHUNK = 2 << 20
    MAX_MISSES = 4  # failed candidates in one item before handing over
    MIN_AHEAD = 32 << 20  # look this far (or 4x the largest item so far) for an item's end
    DROP_EVERY = 16 << 20  # mapped mode: unmap what lies behind the parser this often

    def __init__(self, reader: HashingReader, skip: Callable[[int], bool] | None = None) -> None:
        self.reader = reader
        self.skip = skip
        self.buf = b""
        self.pos = 0
        self.eof = False
        self.largest = 0
        self._nl = -1  # where the separator's newline is, when searching by newline
        # Mapped mode: ``buf`` is the whole file, mapped (no copy out of the page cache;
        # ~0.5 s on the 786 MB tier here), ``eof`` is set and ``pos`` is a file offset.
        self.mm: mmap.mmap | None = None
        self._dropped = 0  # pages before this offset are unmapped from the process
        self._win = self.CHUNK  # mapped mode: how far _first looks

    def rest(self) -> _Chain:
        if self.mm is not None:  # ijson reads on from the file itself
            self.reader.seek(self.pos)
            self.buf, self.mm = b"", None
            return _Chain(b"[", self.reader)
        head, self.buf, self.pos = b"[" + self.buf[self.pos:], b"", 0
        return _Chain(head, self.reader)

    def _map(self) -> bool:
        mm = _map_file(self.reader.fileno())
        if mm is None:
            return False
        self.buf = self.mm = mm
        self.eof = True
        return True

    def _advance(self) -> None:
        """Mapped mode, after each item: start the input's hash once past its threshold, and
        unmap what lies well behind the parser."""
        self.reader.passed(self.pos)
        if self.pos - self._dropped >= self.DROP_EVERY:
            _drop_pages(self.mm, self._dropped, self.pos)  # type: ignore[arg-type]
            self._dropped = self.pos - self.pos % _PAGE

    def _limit(self) -> int:
        """Mapped mode: how far to search for the end of the item at ``pos`` before handing
        the rest to ijson (as far as the read path's buffer would have grown)."""
        return self.pos + max(self.MIN_AHEAD, 4 * self.largest, self.CHUNK)

    def _grow(self, seen: int) -> bool:
        """Look further for the first item's end: read on, or (mapped) widen the window."""
        if self.mm is None:
            return self._more(seen)
        if self.pos + self._win >= len(self.buf):
            return False
        self._win *= 2
        return True

    def _more(self, at_least: int = 0) -> bool:
        """Append to the buffer (dropping what lies before ``pos``); False at EOF."""
        if self.eof:
            return False
        # joined below: one copy, not two
        chunks: list[bytes | memoryview] = [memoryview(self.buf)[self.pos:]]
        got = 0
        while True:
            chunk = self.reader.read(max(self.CHUNK, at_least - got))
            if not chunk:
                self.eof = True
                break
            chunks.append(chunk)
            got += len(chunk)
            if got >= at_least:
                break
        self.buf = b"".join(chunks)
        self.pos = 0
        return got > 0

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        self._open_array()
        sep: bytes | None = None
        index = 0
        while True:
            while True:  # to the next item's first byte (reading on as needed)
                buf, n = self.buf, len(self.buf)
                pos = self.pos
                while pos < n and buf[pos] in _WS:
                    pos += 1
                self.pos = pos
                if pos < n or not self._more():
                    break
            if self.pos >= len(self.buf) or self.buf[self.pos] != 0x7B:  # not "{": ijson
                return
            if sep is None:
                got = self._first()
            elif self.skip is not None and self._nl >= 0:
                got = self._by_line(sep, index, parse=not self.skip(index))
            else:
                got = self._next(sep)
            if got is None:
                return
            item, end = got  # end: just past the item's "}" (relative to pos)
            self.largest = max(self.largest, end)
            if sep is None:
                sep = self._learn_layout(end)
            if type(item) is dict and _has_big_float(item):  # an integer orjson made a float
                item = _ijson_one(self.buf[self.pos:self.pos + end])
            yield index, item
            index += 1
            self.pos += end
            if sep is not None:
                # past the separator's comma, to the next "{"
                i = self.buf.find(b",", self.pos, self.pos + len(sep))
                if i >= 0:
                    self.pos = i + 1
            if self.mm is not None:
                self._advance()

    def _open_array(self) -> None:
        """Map the file (or read its start) and stand just past the array's "["."""
        import orjson

        self._loads = orjson.loads
        self._error = orjson.JSONDecodeError
        if not self._map():
            self._more()
        self.pos = self.buf.find(b"[") + 1  # the caller saw "[" first

    def _learn_layout(self, end: int) -> bytes | None:
        """After the first item: the separator to search for, and whether to find the
        candidates by newline instead (one item per line, json.dump's usual layout: memchr
        speed rather than a search for the whole separator)."""
        sep = self._learn(end)
        if sep is not None and b"\n" in sep and \
                self.buf[self.pos:self.pos + end].count(b"\n") <= 2:
            self._nl = sep.index(b"\n")
        return sep

    def _first(self) -> tuple[Any, int] | None:
        """The first item and its exact end, via json.raw_decode on decoded text."""
        decoder = json.JSONDecoder()
        while True:
            raw = self.buf[self.pos:] if self.mm is None else \
                self.buf[self.pos:self.pos + self._win]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                if exc.start < len(raw) - 4 or not self._grow(len(raw)):
                    return None  # invalid UTF-8: let ijson say so
                continue
            try:
                _, end_char = decoder.raw_decode(text)
            except RecursionError:  # nested too deep for the json module: ijson says so
                return None
            except json.JSONDecodeError:
                if len(raw) > self.MIN_AHEAD or not self._grow(len(raw)):
                    return None
                continue
            end = end_char if text.isascii() else len(text[:end_char].encode("utf-8"))
            try:
                item = self._loads(memoryview(self.buf)[self.pos:self.pos + end])
            except self._error:
                return None
            return (item, end) if type(item) is dict else None

    def _learn(self, end: int) -> bytes | None:
        """The separator after the first item: ``}``, comma and blanks, ``{"key"``."""
        while True:
            at = self.pos + end
            m = _AFTER_ITEM.match(self.buf, at)
            if m is not None or len(self.buf) - at > 4096 or not self._more():
                break
        return None if m is None else b"}" + m.group(0)

    def _by_line(self, sep: bytes, index: int, parse: bool) -> tuple[Any, int] | None:
        """The next item in a worker's pass over a one-item-per-line file. An item with no
        line break of its own ends at the first line break, where the separator must sit:
        found at memchr speed and, for another worker's item, left unparsed. An item whose
        first line break is not a separator spans lines: it is split and checked by parsing
        (``_next``), by every worker alike, so all of them agree on where items begin. An
        item that does not parse between the bounds found stops the run loudly."""
        nl = self._nl
        if self.mm is not None:
            buf, pos, limit = self.buf, self.pos, self._limit()
            i = buf.find(b"\n", pos, limit)
            if i < 0:
                if limit < len(buf):
                    return None  # as _next does: ijson reads on (every worker stops here)
                end = _last_item_end(buf, pos)
                return None if end is None else self._whole(end, index, parse)
        else:
            while True:
                buf, pos = self.buf, self.pos
                i = buf.find(b"\n", pos)
                if i >= 0:
                    break
                if len(buf) - pos > max(self.MIN_AHEAD, 4 * self.largest):
                    return None  # as _next does: ijson reads on (every worker stops here)
                if not self._more():  # EOF
                    end = _last_item_end(buf, pos)
                    return None if end is None else self._whole(end, index, parse)
        k = i - nl
        if k <= pos or buf[k:k + len(sep)] != sep:
            return self._next(sep)  # a line break inside the item
        return self._whole(k + 1 - pos, index, parse)

    def _whole(self, end: int, index: int, parse: bool) -> tuple[Any, int]:
        view = memoryview(self.buf)[self.pos:self.pos + end]
        if not parse:
            return RawItem(view), end
        try:
            item = self._loads(view)
        except self._error as exc:
            raise InputError(f"invalid JSON, or an item laid out over several lines ({exc}); "
                             "read it with one process (--workers 1) to see which",
                             file=self.reader.path, item=f"#{index}") from None
        if type(item) is not dict:
            raise InputError(f"expected an item object, got {type(item).__name__}",
                             file=self.reader.path, item=f"#{index}")
        return item, end

    def _next(self, sep: bytes) -> tuple[Any, int] | None:
        loads, error = self._loads, self._error
        misses = 0
        frm = 1  # where to search on, relative to pos
        n_sep = len(sep)
        mapped = self.mm is not None
        while True:
            buf, pos = self.buf, self.pos
            nl = self._nl
            limit = self._limit() if mapped else len(buf)
            if nl < 0:
                k = buf.find(sep, pos + frm, limit)
            else:
                i = buf.find(b"\n", pos + frm + nl, limit)
                while i >= 0 and buf[i - nl:i - nl + n_sep] != sep:
                    i = buf.find(b"\n", i + 1, limit)
                k = i if i < 0 else i - nl
            if k >= 0:
                end = k + 1 - pos
                try:
                    item = loads(memoryview(buf)[pos:k + 1])
                except error:
                    misses += 1
                    if misses > self.MAX_MISSES:
                        return None
                    frm = end
                    continue
                return item, end
            frm = max(1, len(buf) - pos - n_sep)
            if mapped:
                if limit < len(buf):
                    return None
            elif len(buf) - pos > max(self.MIN_AHEAD, 4 * self.largest):
                return None
            if mapped or not self._more():  # EOF
                end = _last_item_end(buf, pos)
                if end is None:
                    return None
                try:
                    item = loads(memoryview(buf)[pos:pos + end])
                except error:
                    return None
                return (item, end) if type(item) is dict else None


def _last_item_end(buf: bytes | mmap.mmap, pos: int) -> int | None:
    """At the end of the file: where the last item (from ``pos``) ends, just before the
    closing ``]``; None if the file does not end with one (ijson will say why)."""
    base = pos if type(buf) is bytes else max(pos, len(buf) - (64 << 10))  # mapped: the tail
    tail = buf[base:].rstrip(_WS)
    return base + len(tail[:-1].rstrip(_WS)) - pos if tail.endswith(b"]") else None


_BIG = float(1 << 63)


def _has_big_float(item: dict[str, Any]) -> bool:
    """A number at or beyond 2**63 among the item's top-level values (or in their lists and
    objects): orjson reads integers up to 2**64 as ints and larger ones as floats, where
    ijson (as before) refuses integers past 64-bit signed range. Such an item is re-read by
    ijson. Fields the loaders read as numbers all sit at these levels."""
    for value in item.values():
        t = type(value)
        if t is float or t is int:
            if not -_BIG <= value < _BIG:
                return True
        elif t is dict or t is list:
            for v in (value.values() if t is dict else value):
                if (type(v) is float or type(v) is int) and not -_BIG <= v < _BIG:
                    return True
    return False


def _ijson_one(raw: bytes) -> Any:
    import io

    return next(ijson.items(io.BytesIO(b"[" + raw + b"]"), "item", use_float=True))


def _looks_like_jsonl(path: str) -> bool:
    return Path(path).suffix in (".jsonl", ".ndjson")


def _iter_jsonl(reader: HashingReader) -> Iterator[tuple[int, Any]]:
    """The items of a JSON Lines file; ``index`` counts non-blank lines, ``line_no`` all.
    A line over ``MAX_ITEM_BYTES`` is refused before it is held whole."""
    max_line = MAX_ITEM_BYTES
    pending: list[bytes] = []  # the start of a line longer than a chunk, in pieces
    size = 0
    index = 0
    line_no = 0
    while True:
        chunk = reader.read(1 << 20)
        if not chunk:
            break
        *lines, tail = chunk.split(b"\n")
        if lines and pending:
            lines[0] = b"".join([*pending, lines[0]])
            pending, size = [], 0
        for line in lines:
            line_no += 1
            if len(line) > max_line:
                raise InputError(f"line over {max_line:,} bytes (refused: is it the right "
                                 "file?)", file=reader.path, item=f"line {line_no}")
            if line.strip():
                yield index, _load_line(line, reader.path, line_no)
                index += 1
        if tail:
            pending.append(tail)
            size += len(tail)
            if size > max_line:
                raise InputError(f"line over {max_line:,} bytes (refused: is it the right "
                                 "file?)", file=reader.path, item=f"line {line_no + 1}")
    rest = b"".join(pending)
    if rest.strip():
        yield index, _load_line(rest, reader.path, line_no + 1)


def _load_line(line: bytes, path: str, line_no: int) -> Any:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"file is not valid UTF-8 ({exc.reason})", file=path,
                         item=f"line {line_no}") from None
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise InputError(describe_json_error(exc), file=path, item=f"line {line_no}") from None


def read_id_list(path: str) -> set[str]:
    """Read a question-id list: a JSON list (of ids, or of items carrying ``question_id``),
    a JSON object ``{"question_ids": [...]}``, or one id per line (``#`` starts a comment
    line). Anything else is refused by name."""
    from ._json_limits import MAX_DOCUMENT_BYTES  # read at call time: the bound can be lowered


    if not Path(path).is_file():
        raise InputError("no such file" if not Path(path).exists() else "not a file",
                         file=path, field="--question-ids")
    data = read_bounded(Path(path), what="a list of question ids",
                        max_bytes=MAX_DOCUMENT_BYTES, field="--question-ids")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a text file (invalid UTF-8 at byte {exc.start}); expected "
                         "question ids, one per line or as JSON", file=path,
                         field="--question-ids") from None
    if "\x00" in text:
        raise InputError("not a text file (it holds NUL bytes); expected question ids, one "
                         "per line or as JSON", file=path, field="--question-ids")
    ids = _parse_id_list(text, path)
    if not ids:
        raise InputError("the list of question ids is empty: it would select nothing",
                         file=path)
    return ids


def check_ids_found(keep: set[str], seen: set[str], path: str) -> None:
    """An ``InputError`` naming the ids of the ``--question-ids`` file ``path`` that the data
    does not hold: a subset that silently ran fewer questions would read as complete."""
    absent = sorted(keep - seen)
    if absent:
        shown = ", ".join(absent[:20]) + (f" … ({len(absent)} in all)" if len(absent) > 20
                                          else "")
        raise InputError(f"{len(absent)} question id(s) in the id list are not in the "
                         f"data: {shown}", file=path, field="--question-ids")


def _parse_id_list(text: str, path: str) -> set[str]:
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        obj = loads(text, file=path)
        if isinstance(obj, dict):
            # Only the one key: a file may hold other id lists ("excluded_ids", "episode_ids"),
            # and taking the first list under any key with "id" in it selected the wrong one.
            if not isinstance(obj.get("question_ids"), list):
                keys = ", ".join(map(repr, list(obj)[:8])) or "none"
                raise InputError("expected a JSON list of question ids, or an object whose "
                                 f"'question_ids' is that list (its keys: {keys})",
                                 file=path, field="--question-ids")
            obj = obj["question_ids"]
        elif not isinstance(obj, list):
            raise InputError(f"expected a JSON list of question ids, got {type(obj).__name__}",
                             file=path, field="--question-ids")
        ids = set()
        for i, v in enumerate(obj):
            if isinstance(v, dict):
                v = v.get("question_id")
            if isinstance(v, bool) or not isinstance(v, str | int):
                raise InputError(f"entry {i} is not a question id (got {type(v).__name__})",
                                 file=path, field="--question-ids")
            ids.add(str(v))
        return ids
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}
