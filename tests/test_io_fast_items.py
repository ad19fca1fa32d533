"""The orjson fast path of iter_json_items must give exactly what ijson gives, and hand
anything unusual to ijson (same errors, same item numbers)."""

from __future__ import annotations

import hashlib
import json

import ijson
import pytest

from memgauge import io as file_io
from memgauge.errors import InputError
from memgauge.io import HashingReader, RawItem, _FastArray, file_sha256, iter_json_items


@pytest.fixture(autouse=True, params=["mapped", "read"])
def mode(request, monkeypatch):
    """Every test here runs twice: with the file mapped (where the platform allows it) and
    read in chunks (the fallback)."""
    if request.param == "read":
        monkeypatch.setattr(file_io, "_map_file", lambda fd: None)
    elif not file_io._CAN_MAP:
        pytest.skip("no mmap.madvise here: the read path is the only one")
    return request.param


def _items(path):
    reader = HashingReader(path)
    try:
        return list(iter_json_items(reader))
    finally:
        reader.close()


def _ijson(path):
    with open(path, "rb") as f:
        return list(enumerate(ijson.items(f, "item", use_float=True)))


def _item(i, text="hello"):
    return {"question_id": f"q{i}", "n": i, "x": 1.5, "big": 2 ** 40,
            "haystack_sessions": [[{"role": "user", "content": f"{text} {i}"},
                                   {"role": "assistant", "content": "ok", "images": []}]]}


LAYOUTS = {
    "compact": lambda items: json.dumps(items, separators=(",", ":")),
    "default": json.dumps,
    "indent": lambda items: json.dumps(items, indent=2),
    "lines": lambda items: "[\n" + ",\n".join(json.dumps(i) for i in items) + "\n]\n",
    "crlf": lambda items: "[\r\n" + ",\r\n".join(json.dumps(i) for i in items) + "\r\n]",
    "unicode": lambda items: json.dumps(items, ensure_ascii=False),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_same_items_as_ijson(tmp_path, layout, n):
    items = [_item(i, "héllo wörld 你好" if layout == "unicode" else "hi") for i in range(n)]
    p = tmp_path / "d.json"
    p.write_text(LAYOUTS[layout](items), encoding="utf-8")
    got = _items(p)
    assert got == _ijson(p)
    assert [i for i, _ in got] == list(range(n))


def test_separator_inside_strings_and_nested_same_key(tmp_path):
    tricky = 'x"},\n{"question_id": "fake"} and }, {"question_id": 1}'
    items = [_item(i, tricky) for i in range(5)]
    items[2]["nested"] = [{"question_id": "inner"}, {"question_id": "inner2"}]
    for layout in ("default", "lines", "compact"):
        p = tmp_path / f"{layout}.json"
        p.write_text(LAYOUTS[layout](items), encoding="utf-8")
        assert _items(p) == _ijson(p)


def test_varying_first_keys_and_non_objects(tmp_path):
    items = [_item(0), {"n": 1, "question_id": "q1"}, _item(2), 5, _item(4)]
    p = tmp_path / "d.json"
    p.write_text(LAYOUTS["lines"](items))
    assert _items(p) == _ijson(p)


def test_numbers_orjson_reads_as_floats_are_ijsons_business(tmp_path):
    # orjson reads integers past 64 bits as floats; ijson (as before) refuses them.
    p = tmp_path / "d.json"
    p.write_text('[{"question_id": "a"},\n{"question_id": "b", "huge": '
                 '123456789012345678901234567890},\n'
                 '{"question_id": "c"}]')
    with pytest.raises(InputError) as exc:
        _items(p)
    assert exc.value.item == "#1" and "invalid JSON" in str(exc.value)
    p.write_text('[{"question_id": "a"},\n{"question_id": "b", "n": 10000000000000000000}]')
    with pytest.raises(InputError) as exc:
        _items(p)
    assert exc.value.item == "#1"
    p.write_text('[{"question_id": "a"},\n{"question_id": "b", "f": 1e30, "g": [-1e300]}]')
    assert _items(p) == _ijson(p)


@pytest.mark.parametrize("bad_at", [0, 1, 3])
def test_broken_json_names_the_item(tmp_path, bad_at):
    lines = [json.dumps(_item(i)) for i in range(5)]
    lines[bad_at] = lines[bad_at][:-10]  # cut short
    p = tmp_path / "d.json"
    p.write_text("[\n" + ",\n".join(lines) + "\n]\n")
    with pytest.raises(InputError) as exc:
        _items(p)
    assert exc.value.item == f"#{bad_at}" and "invalid JSON" in str(exc.value)


@pytest.mark.parametrize("bad_at", [0, 2])
def test_bad_utf8_names_the_item(tmp_path, bad_at):
    lines = [json.dumps(_item(i)).encode() for i in range(4)]
    lines[bad_at] = lines[bad_at].replace(b"hello", b"h\xe9llo")
    p = tmp_path / "d.json"
    p.write_bytes(b"[\n" + b",\n".join(lines) + b"\n]\n")
    with pytest.raises(InputError) as exc:
        _items(p)
    assert exc.value.item == f"#{bad_at}" and "UTF-8" in str(exc.value)


@pytest.mark.parametrize("tail", ["\n]\ngarbage", "\n", ",\n]"])
def test_bad_ending_is_ijsons_error(tmp_path, tail):
    p = tmp_path / "d.json"
    p.write_text("[\n" + ",\n".join(json.dumps(_item(i)) for i in range(3)) + tail)
    with pytest.raises(InputError, match="invalid JSON"):
        _items(p)


def test_items_larger_than_a_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(_FastArray, "CHUNK", 1000)
    items = [_item(i, "y" * (5000 + i)) for i in range(6)]
    for layout in ("lines", "default"):
        p = tmp_path / f"{layout}.json"
        p.write_text(LAYOUTS[layout](items))
        assert _items(p) == _ijson(p)


def test_an_item_far_larger_than_the_first_is_left_to_ijson(tmp_path, monkeypatch, mode):
    # The end of an item is looked for within max(MIN_AHEAD, 4x the largest item so far);
    # past that the fast path hands the rest of the file to ijson, which reads it as before.
    monkeypatch.setattr(_FastArray, "MIN_AHEAD", 400)
    monkeypatch.setattr(_FastArray, "CHUNK", 100)
    items = [_item(0), _item(1), _item(2, "z" * 5000), _item(3)]
    for layout in ("lines", "default"):
        p = tmp_path / f"{layout}.json"
        p.write_text(LAYOUTS[layout](items))
        reader = HashingReader(p)
        fast = _FastArray(reader)
        got = []
        for index, item in fast:
            got.append((index, item))
        assert [i for i, _ in got] == [0, 1]  # the fast path stopped before the large item
        rest = list(enumerate(ijson.items(fast.rest(), "item", use_float=True), 2))
        reader.close()
        assert got + rest == _ijson(p)
        assert _items(p) == _ijson(p)


def test_mapped_pages_are_dropped_behind_the_parser_and_the_hash_starts(tmp_path, monkeypatch,
                                                                       mode):
    monkeypatch.setattr(_FastArray, "DROP_EVERY", 1)
    items = [_item(i, "w" * 3000) for i in range(20)]
    p = tmp_path / "d.json"
    p.write_text(LAYOUTS["lines"](items))
    reader = HashingReader(p, start_after=10_000)
    fast = _FastArray(reader)
    got = list(fast)
    assert got == _ijson(p)
    if mode == "mapped":
        assert fast.mm is not None and fast._dropped > 40_000  # pages behind were unmapped
    assert reader._digest is not None  # started on the way, as reading would have
    assert reader.hexdigest() == hashlib.sha256(p.read_bytes()).hexdigest()
    reader.close()


@pytest.mark.parametrize("size", [0, 1, (8 << 20) + 12345])
def test_file_sha256_is_the_sha256_of_the_bytes(tmp_path, size):
    p = tmp_path / "f.bin"
    p.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    assert file_sha256(p) == hashlib.sha256(p.read_bytes()).hexdigest()


# -- a worker's pass: items of other parts may stay unparsed ---------------------------------


def _part_items(path, k, n):
    reader = HashingReader(path)
    try:
        return list(iter_json_items(reader, skip=lambda i: i % n != k))
    finally:
        reader.close()


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("n", [2, 3])
def test_parts_parse_their_own_items_and_agree_on_every_id(tmp_path, layout, n):
    items = [_item(i, 'say "hi" \\ ok, 你好') for i in range(8)]
    items[3]["question_id"] = 'q"3\\é'  # an id that needs unescaping
    p = tmp_path / "d.json"
    p.write_text(LAYOUTS[layout](items), encoding="utf-8")
    whole = _ijson(p)
    one_per_line = layout in ("lines", "crlf")
    for k in range(n):
        got = _part_items(p, k, n)
        assert [i for i, _ in got] == list(range(8))  # every part sees every index
        for (i, item), (_, truth) in zip(got, whole, strict=True):
            if i % n == k or i in (0, 7) or not one_per_line:
                # its own items; the first (which teaches the layout) and the last (no
                # separator after it); every item of any other layout
                assert item == truth
            else:  # another part's item: left unparsed, but its id is read right
                assert isinstance(item, RawItem)
                assert item.get("question_id") == truth["question_id"]
                assert item.get("n") == truth["n"]  # not the first key: parsed after all


def test_parts_split_a_multi_line_item_when_the_lines_are_unambiguous(tmp_path):
    lines = [json.dumps(_item(i)) for i in range(8)]
    lines[4] = json.dumps(_item(4), indent=1)
    p = tmp_path / "d.json"
    p.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")
    whole = _ijson(p)
    for k in (0, 1):
        got = _part_items(p, k, 2)
        assert [i for i, _ in got] == list(range(8))
        assert [item.get("question_id") for _, item in got] == [f"q{i}" for i in range(8)]
        assert got[4][1] == whole[4][1]  # the multi-line item is parsed by every part


def test_parts_stop_on_an_item_they_cannot_split_by_lines(tmp_path):
    # item 4 breaks a line where the item separator seems to be: every part must stop
    # (loudly) rather than guess, or the parts would disagree on where items begin
    lines = [json.dumps(_item(i)) for i in range(8)]
    lines[4] = ('{"question_id": "q4", "nested": [{"question_id": "a"},\n'
                '{"question_id": "b"}], "n": 4}')
    p = tmp_path / "d.json"
    p.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")
    assert _items(p) == _ijson(p)  # one process reads it as before
    for k, bad in ((0, 4), (1, 5)):  # whichever part owns a fragment
        with pytest.raises(InputError, match=f"#{bad}") as err:
            _part_items(p, k, 2)
        assert "several lines" in str(err.value) and "--workers 1" in str(err.value)
