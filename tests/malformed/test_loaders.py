"""Malformed data files for every loader, through ``memgauge run``: each is refused with
exit status 2 and one line naming the file (never a traceback), or legitimately accepted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _inputs import (
    check,
    data_url,
    deep,
    forged_png,
    locomo_valid,
    longmemeval_valid,
    memlens_valid,
    mutated,
    run_args,
    synth_episode,
    write_synth,
)

# --- whole files, the same for every single-file loader ----------------------------------

FILES: dict[str, bytes] = {
    "empty": b"",
    "blank": b"  \n\n ",
    "empty-list": b"[]",
    "empty-object": b"{}",
    "foreign-object": b'{"foo": 1}',
    "empty-data": b'{"data": []}',
    "null": b"null",
    "number": b"5",
    "string": b'"questions"',
    "list-of-numbers": b"[1, 2]",
    "list-of-lists": b"[[1], [2]]",
    "truncated": b'[{"question_id": "q1", "question": "Wh',
    "unclosed": b"[{",
    "garbage": b"<html>not json</html>",
    "binary": bytes(range(256)) * 4,
    "nul-bytes": b"\x00" * 64,
    "latin1": '[{"question_id": "caf\xe9"}]'.encode("latin-1"),
    "nested-list-400k": deep(200_000).encode(),
    "nested-data-400k": b'{"data": ' + deep(200_000).encode() + b"}",
    "nested-in-item": b'[{"question_id": "q1", "x": ' + deep().encode() + b"}]",
    "nested-objects": b'[{"a": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"}]",
    "trailing-garbage": b'[{"question_id": "q1"}] trailing',
}

SINGLE_FILE = ("memlens", "longmemeval", "locomo", "memeye")


@pytest.mark.parametrize("bench", SINGLE_FILE)
@pytest.mark.parametrize("name", sorted(FILES))
def test_whole_file(tmp_path, bench, name):
    data = tmp_path / "data.json"
    data.write_bytes(FILES[name])
    check(run_args(bench, data, tmp_path), names="data.json")


@pytest.mark.parametrize("bench", [*SINGLE_FILE, "synth"])
@pytest.mark.parametrize("where", ["missing", "folder"])
def test_data_path_not_a_file(tmp_path, bench, where):
    data = tmp_path / "nothing-here"
    if where == "folder":
        data.mkdir()
    check(run_args(bench, data, tmp_path), names="nothing-here")


def test_jsonl_line_too_long_is_refused_by_line(tmp_path, monkeypatch):
    from memgauge import io as file_io

    monkeypatch.setattr(file_io, "MAX_ITEM_BYTES", 4096)  # the bound is 256 MB; a small one here
    data = tmp_path / "data.jsonl"
    items = memlens_valid(tmp_path)
    data.write_text(json.dumps(items[0]) + "\n" + '{"question_id": "' + "x" * 20_000 + '"}\n')
    out = check(run_args("memlens", data, tmp_path), names="data.jsonl")
    assert "line 2" in out and "4,096" in out


def test_jsonl_line_nested_too_deep(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(memlens_valid(tmp_path)[0]) + "\n" + deep() + "\n")
    out = check(run_args("memlens", data, tmp_path), names="data.jsonl")
    assert "line 2" in out and "nested deeper than 1024" in out


# --- memlens items --------------------------------------------------------------------------

def _turn(i: int = 0, j: int = 0) -> tuple[Any, ...]:
    return (0, "haystack_sessions", i, j)


MEMLENS: dict[str, tuple[tuple[Any, ...], Any]] = {
    "question_id-null": (("question_id",), None),
    "question_id-list": (("question_id",), ["q"]),
    "question_id-empty": (("question_id",), ""),
    "question_id-float": (("question_id",), 1.5),
    "question-int": (("question",), 5),
    "question_type-unknown": (("question_type",), "nope"),
    "question_type-list": (("question_type",), ["information_extraction"]),
    "answer-object": (("answer",), {"a": 1}),
    "sessions-string": (("haystack_sessions",), "x"),
    "sessions-null": (("haystack_sessions",), None),
    "session-int": ((0, "haystack_sessions", 0), 5),
    "session-object-without-session": ((0, "haystack_sessions", 1), {"date": "x"}),
    "turn-int": (_turn(), 5),
    "turn-role-bot": ((*_turn(), "role"), "bot"),
    "turn-content-int": ((*_turn(), "content"), 5),
    "turn-images-string": ((*_turn(), "images"), "img/mug0.png"),
    "turn-image-int": ((*_turn(), "images"), [5]),
    "turn-image-escapes": ((*_turn(), "images"), ["../../etc/passwd"]),
    "turn-image-missing": ((*_turn(), "images"), ["img/nope.png"]),
    "turn-image-not-an-image": ((*_turn(), "images"), ["notimage.png"]),
    "turn-image-path-int": ((*_turn(), "images"), [{"path": 5}]),
    "turn-image-empty-object": ((*_turn(), "images"), [{}]),
    "dates-int": (("haystack_dates",), 5),
    "date-int": (("haystack_dates",), [5]),
    "field-100k-deep": (("extra",), "DEEP"),
}


@pytest.mark.parametrize("name", sorted(MEMLENS))
def test_memlens_item(tmp_path, name):
    items = memlens_valid(tmp_path)
    (tmp_path / "notimage.png").write_text("not a png")
    path, value = MEMLENS[name]
    path = path if isinstance(path[0], int) else (0, *path)
    if value == "DEEP":
        text = json.dumps(items).replace('"question_id": "q000"',
                                          '"question_id": "q000", "extra": ' + deep(), 1)
    else:
        text = json.dumps(mutated(items, path, value))
    data = tmp_path / "dataset.json"
    data.write_text(text)
    check(run_args("memlens", data, tmp_path), names="dataset.json")


@pytest.mark.parametrize("layout", ["list", "data", "jsonl"])
def test_memlens_duplicate_ids_name_both_items(tmp_path, layout):
    items = memlens_valid(tmp_path)
    items[1]["question_id"] = items[0]["question_id"]
    data = tmp_path / ("dataset.jsonl" if layout == "jsonl" else "dataset.json")
    data.write_text("\n".join(json.dumps(i) for i in items) if layout == "jsonl" else
                    json.dumps(items if layout == "list" else {"data": items}))
    out = check(run_args("memlens", data, tmp_path), names=data.name)
    assert "#0" in out and "#1" in out, out


# --- images: bombs in files and in data: URLs -------------------------------------------------

@pytest.mark.parametrize("size", [(20000, 20000), (10000, 10000)])
@pytest.mark.parametrize("allow_missing", [False, True])
def test_memlens_decompression_bomb_file(tmp_path, size, allow_missing):
    """20000x20000 is past PIL's own refusal; 10000x10000 (100 MP) only made PIL warn."""
    items = memlens_valid(tmp_path)
    forged_png(tmp_path / "img" / "mug0.png", *size)
    data = tmp_path / "dataset.json"
    data.write_text(json.dumps(items))
    extra = ["--allow-missing-images"] if allow_missing else []
    out = check(run_args("memlens", data, tmp_path, *extra), names="dataset.json")
    assert "q000" in out and "images[0]" in out and "pixel limit" in out, out
    if size == (10000, 10000):
        assert "10000x10000" in out


def test_memlens_decompression_bomb_data_url(tmp_path):
    items = memlens_valid(tmp_path)
    url = data_url(forged_png(tmp_path / "bomb.png", 20000, 20000))
    items[0]["haystack_sessions"][0][0]["images"] = [url]
    data = tmp_path / "dataset.json"
    data.write_text(json.dumps(items))
    out = check(run_args("memlens", data, tmp_path), names="dataset.json")
    assert "pixel limit" in out and "inline image/png" in out and "base64" not in out, out


def test_memlens_data_url_that_is_no_image(tmp_path):
    items = memlens_valid(tmp_path)
    items[0]["haystack_sessions"][0][0]["images"] = ["data:image/png;base64,bm90IGFuIGltYWdl"]
    data = tmp_path / "dataset.json"
    data.write_text(json.dumps(items))
    out = check(run_args("memlens", data, tmp_path), names="dataset.json")
    assert "holds no readable image" in out


def test_locomo_decompression_bomb_data_url(tmp_path):
    conv = locomo_valid()
    turn = conv["conversation"]["session_1"][0]
    turn["img_url"] = [data_url(forged_png(tmp_path / "bomb.png", 20000, 20000))]
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(conv))
    out = check(run_args("locomo", data, tmp_path), names="conv.json")
    assert "session_1[0].img_url[0]" in out and "pixel limit" in out, out


# --- longmemeval ------------------------------------------------------------------------------

LONGMEMEVAL: dict[str, tuple[tuple[Any, ...], Any]] = {
    "question_id-missing": (("question_id",), ...),
    "question_id-object": (("question_id",), {}),
    "question-missing": (("question",), ...),
    "question_type-unknown": (("question_type",), "multi"),
    "answer-list-of-objects": (("answer",), [{}]),
    "session_ids-string": (("haystack_session_ids",), "s1"),
    "session_ids-too-few": (("haystack_session_ids",), ["s1"]),
    "session_ids-duplicate": (("haystack_session_ids",), ["s1", "s1"]),
    "answer_session_ids-int": (("answer_session_ids",), 5),
    "sessions-object": (("haystack_sessions",), {"s1": []}),
    "turn-role-missing": (("haystack_sessions", 0, 0, "role"), ...),
    "turn-content-list": (("haystack_sessions", 0, 0, "content"), ["x"]),
    "question_date-int": (("question_date",), 20230530),
}


@pytest.mark.parametrize("name", sorted(LONGMEMEVAL))
def test_longmemeval_item(tmp_path, name):
    path, value = LONGMEMEVAL[name]
    items = mutated(longmemeval_valid(), (0, *path), drop=value is ...) if value is ... else \
        mutated(longmemeval_valid(), (0, *path), value)
    data = tmp_path / "longmemeval_s.json"
    data.write_text(json.dumps(items))
    check(run_args("longmemeval", data, tmp_path), names="longmemeval_s.json")


def test_longmemeval_duplicate_ids_name_both_items(tmp_path):
    items = longmemeval_valid() * 2
    data = tmp_path / "longmemeval_s.json"
    data.write_text(json.dumps(items))
    out = check(run_args("longmemeval", data, tmp_path), names="longmemeval_s.json")
    assert "#0" in out and "#1" in out


# --- locomo -----------------------------------------------------------------------------------

LOCOMO: dict[str, tuple[tuple[Any, ...], Any]] = {
    "sample_id-list": (("sample_id",), ["c1"]),
    "conversation-list": (("conversation",), []),
    "speaker_a-missing": (("conversation", "speaker_a"), ...),
    "speakers-same": (("conversation", "speaker_b"), "Ann"),
    "session-object": (("conversation", "session_1"), {}),
    "turn-string": (("conversation", "session_1", 0), "hi"),
    "turn-speaker-unknown": (("conversation", "session_1", 0, "speaker"), "Eve"),
    "turn-dia_id-missing": (("conversation", "session_1", 0, "dia_id"), ...),
    "turn-dia_id-duplicate": (("conversation", "session_1", 1, "dia_id"), "D1:1"),
    "turn-text-int": (("conversation", "session_1", 0, "text"), 5),
    "turn-img_url-int": (("conversation", "session_1", 0, "img_url"), 5),
    "qa-missing": (("qa",), ...),
    "qa-object": (("qa",), {}),
    "question-category-9": (("qa", 0, "category"), 9),
    "question-answer-missing": (("qa", 0, "answer"), ...),
    "question-evidence-string": (("qa", 0, "evidence"), "D1:1"),
    "date-int": (("conversation", "session_1_date_time"), 5),
}


@pytest.mark.parametrize("name", sorted(LOCOMO))
def test_locomo_conversation(tmp_path, name):
    path, value = LOCOMO[name]
    conv = mutated(locomo_valid(), path, drop=True) if value is ... else \
        mutated(locomo_valid(), path, value)
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(conv))
    check(run_args("locomo", data, tmp_path), names="conv.json")


def test_locomo_duplicate_conversation_names_both_files(tmp_path):
    folder = tmp_path / "locomo"
    folder.mkdir()
    for name in ("1.json", "2.json"):
        (folder / name).write_text(json.dumps(locomo_valid()))
    out = check(run_args("locomo", folder, tmp_path), names="2.json")
    assert "1.json #0" in out


def test_locomo_folder_without_conversations(tmp_path):
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "notes.txt").write_text("nothing")
    check(run_args("locomo", folder, tmp_path), names="locomo")


# --- synth ------------------------------------------------------------------------------------

SYNTH_MANIFESTS: dict[str, str] = {
    "list": "[]",
    "invalid": "{not json",
    "no-tiers": '{"digest": "d"}',
    "tiers-string": '{"tiers": "8k"}',
    "tiers-empty": '{"tiers": {}}',
    "tiers-of-numbers": '{"tiers": [8, 32]}',
    "deep": '{"tiers": ' + deep() + "}",
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(SYNTH_MANIFESTS))
def test_synth_manifest(tmp_path, name):
    root = write_synth(tmp_path / "bench", manifest=SYNTH_MANIFESTS[name])
    check(run_args("synth", root, tmp_path), names="manifest.json")


def test_synth_tier_without_episodes(tmp_path):
    root = write_synth(tmp_path / "bench", manifest={"tiers": {"8k": {}, "32k": {}}})
    check(run_args("synth", root, tmp_path, "--tier", "32k"), names="episodes.jsonl")


SYNTH_LINES: dict[str, list[Any]] = {
    "invalid-line": [synth_episode(), "{oops"],
    "list-line": ["[]"],
    "list-then-lines": ["[]", json.dumps(synth_episode())],
    "number-line": ["5"],
    "deep-line": [synth_episode(), deep()],
    "episode-without-id": [mutated(synth_episode(), ("episode_id",), drop=True)],
    "questions-string": [mutated(synth_episode(), ("questions",), "q")],
    "answer_type-unknown": [mutated(synth_episode(), ("questions", 0, "answer_type"), "poem")],
    "turn-role-int": [mutated(synth_episode(), ("sessions", 0, "turns", 0, "role"), 1)],
    "duplicate-episode": [synth_episode("e1", "sq1"), synth_episode("e1", "sq2")],
    "duplicate-question": [synth_episode("e1", "sq1"), synth_episode("e2", "sq1")],
    "no-episodes": [],
    "list-of-nothing": ["[]"],
}


@pytest.mark.parametrize("name", sorted(SYNTH_LINES))
def test_synth_episodes(tmp_path, name):
    root = write_synth(tmp_path / "bench", episodes=SYNTH_LINES[name])
    # a file that starts with "[" is read as one JSON list: an empty one holds no questions
    names = "bench" if SYNTH_LINES[name] == ["[]"] else "episodes.jsonl"
    out = check(run_args("synth", root, tmp_path), names=names)
    if name.startswith("duplicate"):
        assert "lines 1 and 2" in out, out


# --- replay predictions -----------------------------------------------------------------------

REPLAY: dict[str, str] = {
    "empty": "",
    "empty-list": "[]",
    "empty-data": '{"data": []}',
    "invalid": "[{",
    "not-objects": "[1, 2]",
    "no-question_id": '[{"prediction": "red"}]',
    "question_id-bool": '[{"question_id": true, "prediction": "red"}]',
    "no-text": '[{"question_id": "q000"}]',
    "text-int": '[{"question_id": "q000", "prediction": 5}]',
    "duplicate": '[{"question_id": "q000", "prediction": "red"}, '
                 '{"question_id": "q000", "prediction": "blue"}]',
    "deep": '[{"question_id": "q000", "prediction": "red", "x": ' + deep() + "}]",
    "nested-400k": deep(200_000),
}


@pytest.mark.parametrize("name", sorted(REPLAY))
def test_replay_predictions(tmp_path, name):
    data = tmp_path / "dataset.json"
    data.write_text(json.dumps(memlens_valid(tmp_path)))
    preds = tmp_path / "mine.json"
    preds.write_text(REPLAY[name])
    out = check(run_args("memlens", data, tmp_path, model=f"replay:{preds}"), names="mine.json")
    if name == "duplicate":
        assert "#1" in out and "#2" in out, out


@pytest.mark.parametrize("where", ["missing", "folder"])
def test_replay_predictions_not_a_file(tmp_path, where):
    data = tmp_path / "dataset.json"
    data.write_text(json.dumps(memlens_valid(tmp_path)))
    preds = tmp_path / "mine.json"
    if where == "folder":
        preds.mkdir()
    check(run_args("memlens", data, tmp_path, model=f"replay:{preds}"), names="mine.json")


def test_replay_of_a_records_file_keeps_the_latest_line(tmp_path):
    """Our own records.jsonl may hold a question twice (a failure, then its retry): not a
    duplicate, the later line wins, as for `memgauge report`."""
    from memgauge.models.replay import ReplayModel

    lines = [{"question_id": "q000", "episode_id": "e", "status": "error"},
             {"question_id": "q000", "episode_id": "e", "status": "ok", "prediction": "red"},
             {"question_id": "q001", "episode_id": "e", "status": "ok", "prediction": "x"},
             {"question_id": "q001", "episode_id": "e", "status": "error"}]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert ReplayModel(str(path)).predictions == {"q000": "red"}


# --- --question-ids -------------------------------------------------------------------------

ID_LISTS: dict[str, bytes | None] = {
    "missing": None,
    "folder": None,
    "empty": b"",
    "blank-lines": b"\n\n# a comment only\n",
    "binary": bytes(range(256)),
    "nul-bytes": b"q000\x00\x00\n",
    "unknown-ids": b"nope1\nnope2\n",
    "invalid-json": b"[\"q000\"",
    "deep-json": deep().encode(),
    "object-without-list": b'{"keep": 1}',
    "list-of-bools": b"[true]",
    "list-of-floats": b"[1.5]",
    "empty-json-list": b"[]",
}


@pytest.mark.parametrize("bench", ["memlens", "synth"])
@pytest.mark.parametrize("name", sorted(ID_LISTS))
def test_question_ids(tmp_path, bench, name):
    if bench == "memlens":
        data: Path = tmp_path / "dataset.json"
        data.write_text(json.dumps(memlens_valid(tmp_path)))
    else:
        data = write_synth(tmp_path / "bench")
    ids = tmp_path / "ids.txt"
    if name == "folder":
        ids.mkdir()
    elif ID_LISTS[name] is not None:
        ids.write_bytes(ID_LISTS[name])  # type: ignore[arg-type]
    check(run_args(bench, data, tmp_path, "--question-ids", str(ids)), names="ids.txt")


def test_question_ids_over_the_size_bound(tmp_path, monkeypatch):
    from memgauge import _json_limits

    monkeypatch.setattr(_json_limits, "MAX_DOCUMENT_BYTES", 1000)
    from memgauge import io as file_io  # reads the bound at call time

    assert file_io  # imported for the monkeypatch's effect on the shared module
    data = tmp_path / "dataset.json"
    data.write_text(json.dumps(memlens_valid(tmp_path)))
    ids = tmp_path / "ids.txt"
    ids.write_text("q000\n" * 1000)
    out = check(run_args("memlens", data, tmp_path, "--question-ids", str(ids)), names="ids.txt")
    assert "1,000-byte limit" in out


@pytest.mark.parametrize("body", ["[", "[1]", deep(), '{"a": ' + deep() + "}"])
def test_extra_body(tmp_path, body):
    data = tmp_path / "dataset.json"
    data.write_text(json.dumps(memlens_valid(tmp_path)))
    out = check(run_args("memlens", data, tmp_path, "--extra-body", body), names=None)
    assert "--extra-body" in out, out


@pytest.mark.parametrize("url", ["file:///etc/passwd", "/etc/passwd", "../../secret.png",
                                 "ftp://example.org/a.jpg", "gopher://169.254.169.254/"])
def test_locomo_img_url_that_is_not_http_is_refused_before_any_request(tmp_path, stub, url):
    # URL mode sends an image's URL to the model as it stands: only http(s) may go
    conv = locomo_valid()
    conv["conversation"]["session_1"][0]["img_url"] = [url]
    data = tmp_path / "conv.json"
    data.write_text(json.dumps(conv))
    out = check(run_args("locomo", data, tmp_path, "--image-mode", "url", "--base-url",
                         stub.base_url, model="openai:m"), names="conv.json")
    assert "session_1[0].img_url[0]" in out and "http" in out, out
    assert stub.requests == []
