"""The loader's and prompt assembly's shortcut constructors build exactly what the ordinary
constructors build (pydantic ``model_construct`` / validation, the dataclasses' ``__init__``)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pytest
from helpers.datasets import make_png

from memgauge import prompt as C
from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks import _streaming as S
from memgauge.benchmarks import memlens as M
from memgauge.errors import InputError
from memgauge.media import ImageResolver
from memgauge.models import ImagePart, TextPart
from memgauge.schema import Ability, AnswerType, ImageRef, Question, Session, Turn
from memgauge.systems import build_prompt


def _same_model(fast, other) -> None:
    assert type(fast) is type(other)
    assert fast == other and other == fast
    assert fast.model_dump() == other.model_dump()
    assert fast.model_dump_json() == other.model_dump_json()
    assert fast.model_fields_set == other.model_fields_set
    assert fast.model_dump(exclude_unset=True) == other.model_dump(exclude_unset=True)
    assert fast.__pydantic_extra__ == other.__pydantic_extra__
    assert fast.__pydantic_private__ == other.__pydantic_private__


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    for name in ("a", "b"):
        make_png(tmp_path / "img" / f"{name}.png", "red")
    item = {
        "question_id": "q1", "question": "What?", "answer": "red",
        "question_type": "information_extraction", "question_date": "2024/03/01",
        "haystack_dates": ["2024/02/01", "2024/02/02"],
        "haystack_sessions": [
            [{"role": "user", "content": " hi <image> there ",
              "images": [{"file": "img/a.png", "image_hf_url": "https://x/a.png"}, "img/b.png"]},
             {"role": "assistant", "content": "ok", "has_answer": True},
             {"role": "user", "content": None, "images": []}],
            {"date": "2024/02/05", "session": [
                {"role": "assistant", "content": "again",
                 "images": [{"file": "img/a.png", "image_hf_url": "https://x/a.png"}]}]},
        ],
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps([item, {**item, "question_id": "q2"}]), encoding="utf-8")
    return path


def _episodes(path: Path):
    return list(M.memlens(BenchmarkOptions(data=str(path))).episodes())


def test_loader_objects_equal_model_construct_and_validated(data: Path) -> None:
    eps = _episodes(data)
    for ep in eps:
        for s in ep.sessions:
            values = dict(s.__dict__)
            _same_model(s, Session.model_construct(**values))
            _same_model(s, Session.model_validate(s.model_dump()))
            for t in s.turns:
                _same_model(t, Turn.model_construct(**dict(t.__dict__)))
                _same_model(t, Turn.model_validate(t.model_dump()))
                for im in t.images:
                    _same_model(im, ImageRef.model_construct(**dict(im.__dict__)))
                    _same_model(im, ImageRef.model_validate(im.model_dump()))
    turns = eps[0].sessions[0].turns
    assert [t.turn_id for t in turns] == ["S1:1", "S1:2", "S1:3"]
    assert eps[0].sessions[1].turns[0].turn_id == "S2:1"
    assert turns[2].text == "" and turns[1].meta == {}
    # no turn can change another: each owns its mutable parts; the fields set (all fields)
    # is shared but refuses changes, and copies of it are the copier's own
    a, b = turns[0], turns[1]
    assert a.meta is not b.meta and a.images is not b.images
    b.speaker = "bob"  # ordinary assignment still works
    assert b.speaker == "bob" and a.speaker is None
    assert a.model_fields_set == b.model_fields_set == set(S.TURN_FIELDS)
    with pytest.raises(TypeError, match="shared"):
        b.model_fields_set.discard("speaker")
    with pytest.raises(TypeError, match="shared"):
        b.model_fields_set.add("not_a_field")
    c = b.model_copy(update={"text": "changed"})
    c.model_fields_set.discard("speaker")  # a plain set of its own
    assert c.text == "changed" and c.model_fields_set == set(S.TURN_FIELDS) - {"speaker"}
    assert a.model_fields_set == set(S.TURN_FIELDS)
    assert b.model_dump(exclude_unset=True) == b.model_dump()
    again = pickle.loads(pickle.dumps(b))
    assert again == b and type(again.model_fields_set) is set
    # the same image entry resolves to the same ImageRef (as ImageResolver's memo did)
    assert eps[0].sessions[0].turns[0].images[0] is eps[1].sessions[1].turns[0].images[0]


def test_turn_ids_beyond_the_cache(monkeypatch) -> None:
    monkeypatch.setattr(S, "_TURN_IDS", {})
    assert S._turn_ids(3, 2)[:2] == ["S3:1", "S3:2"]
    assert S._turn_ids(3, 4)[:4] == ["S3:1", "S3:2", "S3:3", "S3:4"]
    big = S._TURN_IDS_MAX + 1
    assert S._turn_ids(big, 2) == [f"S{big}:1", f"S{big}:2"]
    assert S._turn_ids(1, big)[-1] == f"S1:{big}"
    assert big not in S._TURN_IDS and len(S._TURN_IDS.get(1, [])) <= S._TURN_IDS_MAX


def test_turn_errors_still_name_the_position(tmp_path: Path) -> None:
    ctx = S.ItemContext("f.json", ImageResolver(tmp_path))
    ctx.item = "q1"
    turns = [{"role": "user", "content": "a"}, {"role": "user", "content": 3}]
    with pytest.raises(InputError) as e:
        S.parse_turns(turns, 1, "haystack_sessions[0]", ctx)
    assert e.value.field == "haystack_sessions[0][1].content"
    with pytest.raises(InputError) as e:
        S.parse_turns([{"role": "user"}, "x"], 1, "hs", ctx)
    assert e.value.field == "hs[1]"
    with pytest.raises(InputError) as e:
        S.parse_turns([{"role": "user", "images": ["nope.png"]}], 1, "hs", ctx)
    assert e.value.field == "hs[0].images[0]"


def test_resolve_list_matches_resolve(tmp_path: Path) -> None:
    make_png(tmp_path / "a.png", "red")
    entries = ["a.png", {"file": "a.png"}, {"file": ["a.png"]}, "https://x/y.png",
               {"file": "a.png", "image_hf_url": "https://x/a.png"}, "a.png",
               {"file": "a.png", "image_hf_url": "https://x/a.png"}]
    fast = ImageResolver(tmp_path).resolve_list(entries, file="f", item="i", field="images")
    slow_resolver = ImageResolver(tmp_path)
    slow = [slow_resolver.resolve(e, file="f", item="i", field="x") for e in entries]
    assert fast == slow
    assert fast[0] is fast[5] and fast[4] is fast[6]
    with pytest.raises(InputError) as e:
        ImageResolver(tmp_path).resolve_list(["a.png", {"file": 3}], file="f", item="i",
                                             field="images")
    assert e.value.field == "images[1]"


def test_the_schemas_turn_takes_the_inlined_fast_path() -> None:
    # parse_turns inlines the builder only for a Turn the shortcut fits (_plain)
    assert S._plain(S.Turn, S.TURN_FIELDS) and S._TURN_PARTS is not None
    assert not S._plain(S.Turn, S.TURN_FIELDS[:-1])  # a field the builder would not set


def test_fast_parts_equal_dataclass_parts() -> None:
    ref = ImageRef(source="x", path="/x")
    t = C._text_part("hello")
    assert type(t) is TextPart and t == TextPart("hello") and hash(t) == hash(TextPart("hello"))
    i = C._image_part(ref)
    assert type(i) is ImagePart and i == ImagePart(ref)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.text = "other"  # type: ignore[misc]


@pytest.mark.parametrize("mode", ["image", "text", "caption", "no-context"])
@pytest.mark.parametrize("label", [False, True])
def test_prompt_images_are_the_image_parts_in_order(mode: str, label: bool) -> None:
    def im(name: str, missing: bool = False) -> ImageRef:
        return ImageRef(source=name, path=f"/x/{name}", width=10, height=10, missing=missing)

    def turn(role, text, *images):
        return Turn(turn_id="t", role=role, text=text, images=list(images))

    sessions = [
        Session(session_id="1", date="d", turns=[turn("user", "<image> a", im("1")),
                                                turn("assistant", "b <image> c", im("2"),
                                                     im("3"))]),
        Session(session_id="2", turns=[turn("user", "plain"), turn("user", "x", im("4", True)),
                                       turn("assistant", "y <image>", im("5"))]),
    ]
    q = Question(question_id="q", text="?", answer="a", answer_type=AnswerType.FREE_TEXT,
                 ability=Ability.INFORMATION_EXTRACTION, images=[im("q1")])
    p = build_prompt(sessions, q, mode=mode, label_images=label)
    _check_images(p)
    if mode == "image" and not label:  # and with the oldest session dropped
        from memgauge.tokens import TokenCounter

        counter = TokenCounter()
        full = build_prompt(sessions, q, counter=counter)
        dropped = build_prompt(sessions, q, counter=counter, max_tokens=full.tokens - 1,
                               overflow="drop-oldest")
        assert dropped.dropped_sessions == 1
        _check_images(dropped)
        assert [i.source for i in dropped.images] == ["5", "q1"]


def _check_images(p) -> None:
    scanned = [part.image for m in p.messages for part in m.parts if isinstance(part, ImagePart)]
    assert p.images == scanned
    assert all(a is b for a, b in zip(p.images, scanned, strict=True))
