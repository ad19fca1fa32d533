from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks._base import Benchmark
from memgauge.benchmarks._streaming import guess_tier
from memgauge.benchmarks.memlens import answer_type_for, memlens
from memgauge.errors import InputError
from memgauge.io import file_sha256
from memgauge.registry import lookup
from memgauge.schema import Ability, AnswerType, ImageRef, Session, Turn

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "memlens"
MINI = FIX / "mini.json"
BAD = FIX / "malformed"
DEMO = Path(__file__).resolve().parents[2] / "src" / "memgauge" / "data" / "memlens_mini"


def load(path: Path | str, **kw):
    bench = memlens(BenchmarkOptions(data=str(path), **kw))
    return bench, list(bench.episodes())


def test_registered_and_protocol():
    factory = lookup("benchmark", "memlens")
    bench = factory(BenchmarkOptions(data=str(MINI)))
    assert isinstance(bench, Benchmark)
    assert bench.name == "memlens"


def test_mini_counts_types_and_answer_types():
    bench, eps = load(MINI)
    assert [e.episode_id for e in eps] == ["m1", "m2", "m3", "m4"]
    qs = {e.episode_id: e.questions[0] for e in eps}
    assert qs["m1"].ability is Ability.INFORMATION_EXTRACTION
    assert qs["m1"].subtype == "previnfo"
    assert qs["m1"].answer_type is AnswerType.FREE_TEXT
    assert qs["m1"].question_date == "2024/03/01"
    assert qs["m2"].answer_type is AnswerType.CURRENCY and qs["m2"].answer == "€15"
    assert qs["m3"].ability is Ability.KNOWLEDGE_UPDATE and qs["m3"].old_answers == ["Bergen"]
    assert qs["m4"].ability is Ability.ANSWER_REFUSAL
    assert qs["m4"].answer_type is AnswerType.REFUSAL
    assert qs["m4"].answer == "Insufficient information"  # absent in the data
    assert qs["m1"].meta == {"question_type": "information_extraction",
                             "question_subtype": "previnfo"}
    m = bench.manifest()
    assert m["name"] == "memlens" and m["version"] == "1"
    assert m["counts"] == {"episodes": 4, "questions": 4, "images": 2, "missing_images": 0}
    assert m["inputs"] == {str(MINI): file_sha256(MINI)}
    assert "missing_images" not in m  # only listed in allow-missing mode


def test_sessions_turns_dates_and_images():
    _, eps = load(MINI)
    e = eps[0]
    assert e.benchmark.name == "memlens"
    assert [s.session_id for s in e.sessions] == ["1", "2"]
    # A bare list takes its date from haystack_dates; a {"date", "session"} dict uses its own.
    assert [s.date for s in e.sessions] == ["2024/02/01", "2024/02/09"]
    t = e.sessions[0].turns[0]
    assert isinstance(t, Turn) and t.turn_id == "S1:1" and t.role == "user"
    assert t.text == "Look <image> at this."  # placeholder kept
    img = t.images[0]
    assert isinstance(img, ImageRef)
    assert img.source == "images/red.png"
    assert Path(img.path).is_absolute() and Path(img.path) == (FIX / "images/red.png").resolve()
    assert (img.width, img.height) == (32, 24) and not img.missing
    t2 = e.sessions[1].turns[0]
    assert t2.turn_id == "S2:1" and "<image>" not in t2.text  # image without a placeholder
    assert t2.images[0].url == "https://example.org/blue.png"
    assert t2.images[0].path.endswith("blue.png")
    assert e.sessions[1].turns[1].images == []
    # Missing haystack_dates → no date; sessions of m2 are bare lists.
    assert [s.date for s in eps[1].sessions] == [None, None]


def test_fast_built_objects_equal_validated_ones():
    _, eps = load(MINI)
    s = eps[0].sessions[0]
    again = Session.model_validate(s.model_dump())
    assert again == s
    assert s.turns[0].model_fields_set == set(Turn.model_fields)
    s.turns[1].text = "changed"  # assignment still works on a fast-built turn
    assert s.turns[1].text == "changed"


@pytest.mark.parametrize("name", ["mini.json", "mini_data.json", "mini.jsonl"])
def test_containers(name):
    _, eps = load(FIX / name)
    assert [e.episode_id for e in eps] == ["m1", "m2", "m3", "m4"]


def test_evidence_indices():
    _, eps = load(MINI)
    m3 = eps[2].questions[0]
    assert [(r.session_id, r.turn_id) for r in m3.evidence] == [("1", None)]
    assert eps[0].questions[0].evidence == []


def test_subset_by_id_list():
    bench, eps = load(MINI, question_ids=str(FIX / "subset_ids.txt"))
    assert [e.episode_id for e in eps] == ["m1", "m3"]
    m = bench.manifest()
    assert m["counts"]["episodes"] == 2 and m["counts"]["images"] == 2
    assert str(FIX / "subset_ids.txt") in m["inputs"]


def test_subset_missing_ids_raise_at_the_end():
    bench = memlens(BenchmarkOptions(data=str(MINI),
                                     question_ids=str(FIX / "subset_missing_ids.json")))
    got = []
    with pytest.raises(InputError) as exc:
        for e in bench.episodes():
            got.append(e.episode_id)
    assert got == ["m1"]  # found ones are still yielded first
    assert "nope-1" in str(exc.value) and "nope-2" in str(exc.value)
    assert "2 question id(s)" in str(exc.value)


@pytest.mark.parametrize("case, item, field, words", [
    ("missing_answer", "m1", "answer", "missing required field"),
    ("missing_question_id", "#1", "question_id", "missing required field"),
    ("sessions_string", "m1", "haystack_sessions", "expected list"),
    ("content_int", "m1", "haystack_sessions[2][0].content", "expected str, got int"),
    ("bad_role", "m1", "haystack_sessions[0][0].role", "'system'"),
    ("bad_type", "m1", "question_type", "unknown question_type"),
    ("unreadable_image", "m1", "haystack_sessions[0][0].images[0]", "not a readable image"),
    ("escaping_image", "m1", "haystack_sessions[0][0].images[0]", "escapes the image dir"),
    ("missing_image", "m1", "haystack_sessions[0][0].images[0]", "was not found"),
])
def test_malformed_items_name_file_item_and_field(case, item, field, words):
    path = BAD / f"{case}.json"
    with pytest.raises(InputError) as exc:
        load(path, image_dir=str(FIX))
    err = exc.value
    assert err.file == str(path) and err.item == item and err.field == field
    msg = str(err)
    assert str(path) in msg and f"item {item}" in msg and repr(field) in msg and words in msg


def test_dict_session_field_path(tmp_path):
    items = json.loads(MINI.read_text())
    items[0]["haystack_sessions"][1]["session"][0]["role"] = "bot"
    p = tmp_path / "d.json"
    p.write_text(json.dumps(items))
    with pytest.raises(InputError) as exc:
        load(p, image_dir=str(FIX))
    assert exc.value.field == "haystack_sessions[1].session[0].role"


def test_missing_image_allowed_is_recorded():
    path = BAD / "missing_image.json"
    bench, eps = load(path, image_dir=str(FIX), allow_missing_images=True)
    ref = eps[1].sessions[0].turns[0].images[0]
    assert ref.missing and ref.width is None
    m = bench.manifest()
    assert m["counts"]["missing_images"] == 1 and m["counts"]["images"] == 1
    assert m["missing_images"] == [{"item": "m1", "source": "images/gone.png",
                                    "problem": "was not found"}]


def test_non_utf8_file():
    path = BAD / "latin1.json"
    with pytest.raises(InputError) as exc:
        load(path)
    assert exc.value.file == str(path) and exc.value.item == "#0"
    assert "UTF-8" in str(exc.value)


def test_data_file_not_found(tmp_path):
    with pytest.raises(InputError, match="not found"):
        memlens(BenchmarkOptions(data=str(tmp_path / "nope.json")))


def test_duplicate_question_id(tmp_path):
    items = json.loads(MINI.read_text())
    items[1]["question_id"] = "m1"
    p = tmp_path / "dup.json"
    p.write_text(json.dumps(items))
    with pytest.raises(InputError, match="duplicate"):
        load(p, image_dir=str(FIX))


def test_manifest_before_full_iteration_hashes_file():
    bench = memlens(BenchmarkOptions(data=str(MINI)))
    it = bench.episodes()
    next(it)
    it.close()
    assert bench.manifest()["inputs"][str(MINI)] == file_sha256(MINI)


def test_manifest_before_any_pass_hashes_file():
    bench = memlens(BenchmarkOptions(data=str(MINI)))  # no pass: no reader to ask
    assert bench.manifest()["inputs"][str(MINI)] == file_sha256(MINI)


def test_image_dir_default_is_data_dir(tmp_path):
    shutil.copytree(FIX / "images", tmp_path / "images")
    shutil.copy(MINI, tmp_path / "dataset_32k.json")
    _, eps = load(tmp_path / "dataset_32k.json")
    assert eps[0].benchmark.tier == "32k"
    assert eps[0].sessions[0].turns[0].images[0].path.startswith(str(tmp_path.resolve()))
    _, eps = load(tmp_path / "dataset_32k.json", tier="custom")
    assert eps[0].benchmark.tier == "custom"


def test_tier_guess():
    assert guess_tier("/x/dataset_256k.json") == "256k"
    assert guess_tier("dataset_64K.json") == "64k"
    assert guess_tier("dataset.json") is None


@pytest.mark.parametrize("qtype, sub, answer, want", [
    ("temporal_reasoning", "duration_comparison", "A", AnswerType.CHOICE),
    ("temporal_reasoning", "order_ranking", "(5)(8)(1)", AnswerType.ORDER),
    ("temporal_reasoning", "temporal_info_extraction", "2024/01/02", AnswerType.DATE),
    ("temporal_reasoning", None, "2024/01/02", AnswerType.DATE),
    ("multi_session_reasoning", "entity_resolution", "No", AnswerType.YES_NO),
    ("multi_session_reasoning", "entity_resolution", "4", AnswerType.INTEGER),
    ("multi_session_reasoning", "counting", "7", AnswerType.INTEGER),
    ("multi_session_reasoning", "arithmetic", "$260.00", AnswerType.CURRENCY),
    ("multi_session_reasoning", "arithmetic", "185 DKK", AnswerType.CURRENCY),
    ("multi_session_reasoning", "arithmetic", "€15", AnswerType.CURRENCY),
    ("multi_session_reasoning", "arithmetic", "12.5", AnswerType.NUMBER),
    ("multi_session_reasoning", "arithmetic", "42 km", AnswerType.NUMBER),
    ("knowledge_update", None, "brioche", AnswerType.FREE_TEXT),
    ("answer_refusal", None, "Insufficient information", AnswerType.REFUSAL),
    ("information_extraction", "previnfo", "ESPRESSO", AnswerType.FREE_TEXT),
])
def test_answer_type_table(qtype, sub, answer, want):
    assert answer_type_for(qtype, sub, answer)[0] is want


def test_ie_subtypes():
    assert answer_type_for("information_extraction", "previnfo", "x")[1] == "previnfo"
    assert answer_type_for("information_extraction", None, "x")[1] == "entity"
    assert answer_type_for("information_extraction", "spatial", "x")[1] == "entity"


# -- the packaged offline demo ---------------------------------------------------------------

def test_packaged_demo_loads_and_predictions_match():
    bench, eps = load(DEMO / "dataset.json")
    assert len(eps) >= 12
    qs = [e.questions[0] for e in eps]
    assert {q.ability for q in qs} == {Ability.INFORMATION_EXTRACTION,
                                       Ability.MULTI_SESSION_REASONING,
                                       Ability.TEMPORAL_REASONING, Ability.KNOWLEDGE_UPDATE,
                                       Ability.ANSWER_REFUSAL}
    subs = {q.meta["question_subtype"] for q in qs}
    assert {"previnfo", "arithmetic", "counting", "entity_resolution", "duration_comparison",
            "order_ranking", "temporal_info_extraction"} <= subs
    assert {q.subtype for q in qs if q.ability is Ability.INFORMATION_EXTRACTION} == {
        "previnfo", "entity"}
    assert {q.answer_type for q in qs} >= {AnswerType.CURRENCY, AnswerType.INTEGER,
                                           AnswerType.YES_NO, AnswerType.CHOICE,
                                           AnswerType.ORDER, AnswerType.DATE,
                                           AnswerType.REFUSAL, AnswerType.FREE_TEXT}
    assert any(q.old_answers for q in qs)
    m = bench.manifest()
    assert m["counts"]["missing_images"] == 0 and m["counts"]["images"] > 10
    for e in eps:
        assert 2 <= len(e.sessions) <= 4
        for s in e.sessions:
            assert s.date
            for t in s.turns:
                for img in t.images:
                    assert img.width <= 96 and img.height <= 72
    raw = json.loads((DEMO / "dataset.json").read_text())
    shapes = {type(s).__name__ for it in raw for s in it["haystack_sessions"]}
    assert shapes == {"list", "dict"}
    entries = [i for it in raw for s in it["haystack_sessions"]
               for t in (s["session"] if isinstance(s, dict) else s) for i in t.get("images", [])]
    assert {type(i).__name__ for i in entries} == {"str", "dict"}

    preds = json.loads((DEMO / "predictions.json").read_text())["data"]
    by_id = {q.question_id: q for q in qs}
    assert sorted(p["question_id"] for p in preds) == sorted(by_id)
    for p in preds:
        q = by_id[p["question_id"]]
        assert p["reference_answer"] == q.answer
        assert p["question"] == q.text
        for key in ("question_type", "question_subtype", "raw_prediction", "prediction"):
            assert key in p
    refusals = [p for p in preds if p["prediction"] == "Insufficient information"]
    assert 1 <= len(refusals) <= 3


def test_packaged_demo_is_small():
    total = sum(p.stat().st_size for p in DEMO.parent.rglob("*") if p.is_file())
    assert total < 200_000
