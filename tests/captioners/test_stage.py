"""Each captioner on real tiny images, through the caption stage (and its cache)."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
from _images import colour_png, label_png

from memgauge.cache import ResponseCache
from memgauge.captioners import CaptionStage, create_captioner
from memgauge.errors import ConfigError, InputError
from memgauge.prompt import shown_caption
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    ImageRef,
    Question,
    Session,
    Turn,
)


def _episode(refs: list[ImageRef]) -> Episode:
    turn = Turn(turn_id="t0", role="user", text="see", images=refs)
    return Episode(episode_id="e", benchmark=BenchmarkInfo(name="test"),
                   sessions=[Session(session_id="s0",
                   turns=[turn])], questions=[Question(question_id="q", text="?", answer="x",
                                        answer_type=AnswerType.FREE_TEXT,
                                        ability=Ability.SINGLE_HOP)])


def _ref(path: Path, **kw) -> ImageRef:
    return ImageRef(source=path.name, path=str(path), **kw)


def _apply(stage: CaptionStage, episode: Episode) -> None:
    asyncio.run(stage.apply(episode))


def test_gold_shows_the_datas_caption_and_counts_the_rest_missing(tmp_path):
    a = _ref(tmp_path / "a.png", captions={"generic": "a photo of a dog"})  # LoCoMo's BLIP
    b = _ref(tmp_path / "b.png", captions={"gold": "receipt: total 12.50",
                                            "generic": "a receipt"})
    c = _ref(tmp_path / "c.png")
    stage = CaptionStage(create_captioner("gold"))
    _apply(stage, _episode([a, b, c]))
    assert [shown_caption(r) for r in (a, b, c)] == ["a photo of a dog", "receipt: total 12.50",
                                                     None]
    assert a.captions == {"generic": "a photo of a dog"}  # never relabelled as gold
    assert stage.counts.to_dict() == {"images": 3, "captioned": 2, "from_cache": 0,
                                      "failed": 0, "missing": 1}


def test_ocr_reads_the_printed_label_and_a_second_run_reads_it_from_the_cache(tmp_path):
    label = _ref(tmp_path / "label.png")
    label_png(Path(label.path))
    blank = _ref(tmp_path / "blank.png")
    colour_png(Path(blank.path), "white")  # no text: no caption from OCR
    cache = ResponseCache(tmp_path / "c.sqlite")
    stage = CaptionStage(create_captioner("ocr"), cache)
    _apply(stage, _episode([label, blank]))
    text = shown_caption(label)
    assert "Nordic" in text and "2024-05-01" in text and "L42" in text
    assert shown_caption(blank) is None
    assert stage.counts.to_dict() == {"images": 2, "captioned": 1, "from_cache": 0,
                                      "failed": 0, "missing": 1}

    again = _ref(tmp_path / "label.png")
    stage2 = CaptionStage(create_captioner("ocr"), cache)

    async def no_ocr(ref, sha):  # a second run must not call the engine
        raise AssertionError("captioner called despite the cache")

    stage2.captioner.caption = no_ocr
    _apply(stage2, _episode([again, _ref(tmp_path / "blank.png")]))
    assert shown_caption(again) == text
    assert stage2.counts.from_cache == 2 and stage2.counts.captioned == 0
    cache.close()


def test_one_caption_per_distinct_image_however_many_episodes_share_it(tmp_path):
    sha = colour_png(tmp_path / "a.png", "red")
    calls = []
    stage = CaptionStage(create_captioner("gold"))

    async def counting(ref, sha256):
        calls.append(sha256)
        await asyncio.sleep(0)

    stage.captioner.caption = counting
    stage.captioner.needs_pixels = True  # keyed by content, as the model captioners are

    async def both():
        await asyncio.gather(*(stage.apply(_episode([_ref(tmp_path / "a.png")]))
                               for _ in range(5)))

    asyncio.run(both())
    assert calls == [sha] and stage.counts.images == 1


def test_file_captions_by_sha256_and_counts_unknown_images_missing(tmp_path):
    known = colour_png(tmp_path / "a.png", "red")
    colour_png(tmp_path / "b.png", "blue")
    jsonl = tmp_path / "captions.jsonl"
    jsonl.write_text(f'{{"sha256": "{known}", "caption": "a red square"}}\n\n')
    a, b = _ref(tmp_path / "a.png"), _ref(tmp_path / "b.png")
    stage = CaptionStage(create_captioner(f"file:{jsonl}"))
    _apply(stage, _episode([a, b]))
    assert shown_caption(a) == "a red square"
    assert shown_caption(b) is None  # no fallback to another source
    assert stage.counts.missing == 1 and stage.counts.captioned == 1
    assert stage.describe()["file_sha256"] == hashlib.sha256(jsonl.read_bytes()).hexdigest()


@pytest.mark.parametrize(("line", "where"), [
    ("{not json", "line 2"),
    ('["a list"]', "line 2"),
    ('{"sha256": "abc", "caption": "x"}', "field 'sha256'"),
    ('{"sha256": "' + "0" * 64 + '", "caption": ""}', "field 'caption'"),
])
def test_a_malformed_captions_file_is_refused_naming_file_and_line(tmp_path, line, where):
    jsonl = tmp_path / "captions.jsonl"
    jsonl.write_text('{"sha256": "' + "1" * 64 + '", "caption": "ok"}\n' + line + "\n")
    with pytest.raises(InputError) as info:
        create_captioner(f"file:{jsonl}")
    assert str(jsonl) in str(info.value) and "line 2" in str(info.value)
    assert where in str(info.value)


@pytest.mark.parametrize(("spec", "says"), [
    ("nope", "unknown captioner 'nope'"),
    ("ocr:x", "takes no argument"),
    ("openai:", "needs model"),
    ("file:/no/such/captions.jsonl", "no such captions file"),
])
def test_captioner_spec_mistakes_are_config_errors(spec, says):
    with pytest.raises((ConfigError, InputError), match=says):
        create_captioner(spec)


@pytest.mark.parametrize(("spec", "said", "flagged"), [
    ("ocr:x", "captioner ocr:x: ocr takes no argument", "--captioner ocr:x: ocr takes"),
    (":x", "captioner ':x': name a captioner", "--captioner ':x': name a captioner"),
])
def test_captioner_spec_mistakes_name_the_field_and_the_cli_its_flag(spec, said, flagged):
    from memgauge.cli._common import flag_for
    from memgauge.errors import ConfigFieldError

    with pytest.raises(ConfigFieldError) as info:
        create_captioner(spec)
    assert str(info.value).startswith(said) and "--" not in str(info.value)
    assert info.value.render(flag_for).startswith(flagged)


def test_the_chosen_captioners_caption_wins_over_the_datas(tmp_path):
    from memgauge.prompt import turn_parts

    sha = colour_png(tmp_path / "a.png", "red")
    jsonl = tmp_path / "captions.jsonl"
    jsonl.write_text(f'{{"sha256": "{sha}", "caption": "made elsewhere"}}\n')
    ref = _ref(tmp_path / "a.png", captions={"gold": "the data's caption"})
    other = _ref(tmp_path / "b.png", captions={"gold": "only the data has one"})
    colour_png(Path(other.path), "blue")
    before, _ = turn_parts("x <image>", [ref], "caption", False, 0)
    assert before[1].text == "[Image: the data's caption]"
    _apply(CaptionStage(create_captioner(f"file:{jsonl}")), _episode([ref, other]))
    after, _ = turn_parts("x <image> <image>", [ref, other], "caption", False, 0)
    assert [p.text for p in after] == ["x ", "[Image: made elsewhere]", "[Image]"]
