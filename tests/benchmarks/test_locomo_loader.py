from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.locomo import ADVERSARIAL_GOLD, locomo
from memgauge.errors import InputError
from memgauge.io import file_sha256
from memgauge.registry import lookup
from memgauge.schema import Ability, AnswerType, EvidenceRef

REPO = Path(__file__).resolve().parents[2]
LOCOMO = (REPO / ".." / "shared" / "data" / "locomo10").resolve()

needs_data = pytest.mark.skipif(not LOCOMO.is_dir() or not list(LOCOMO.glob("*.json")),
                                reason="shared LoCoMo data (../shared/data/locomo10) is absent")


def load(path: Path | str, **kw):
    bench = locomo(BenchmarkOptions(data=str(path), **kw))
    return bench, list(bench.episodes())


@pytest.fixture(scope="module")
def loaded():
    if not LOCOMO.is_dir():
        pytest.skip("shared LoCoMo data is absent")
    return load(LOCOMO)


@pytest.fixture(scope="module")
def raw():
    if not LOCOMO.is_dir():
        pytest.skip("shared LoCoMo data is absent")
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(LOCOMO.glob("*.json"))}


@needs_data
def test_ten_conversations_and_all_questions(loaded, raw):
    bench, eps = loaded
    assert lookup("benchmark", "locomo") is locomo
    assert len(eps) == 10
    assert [e.episode_id for e in eps] == sorted(raw, key=int)
    assert sum(len(e.questions) for e in eps) == sum(len(c["qa"]) for c in raw.values())
    m = bench.manifest()
    assert m["counts"]["episodes"] == 10
    assert m["counts"]["questions"] == sum(len(c["qa"]) for c in raw.values())
    assert len(m["inputs"]) == 10
    first = str(min(LOCOMO.glob("*.json")))
    assert m["inputs"][first] == file_sha256(first)
    ids = [q.question_id for e in eps for q in e.questions]
    assert len(ids) == len(set(ids))


@needs_data
def test_sessions_in_numeric_order_with_dates_and_speakers(loaded, raw):
    _, eps = loaded
    for e in eps:
        conv = raw[e.episode_id]
        n = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        assert [s.session_id for s in e.sessions] == [f"session_{i}" for i in n]
        assert len(e.sessions) >= 10  # so lexical order would differ (session_10 < session_2)
        for s in e.sessions:
            assert s.date == conv[f"{s.session_id}_date_time"]
            raw_turns = conv[s.session_id]
            assert [t.turn_id for t in s.turns] == [t["dia_id"] for t in raw_turns]
            for t, r in zip(s.turns, raw_turns, strict=True):
                assert t.speaker == r["speaker"] and t.text == r["text"]
                assert t.role == ("user" if r["speaker"] == conv["speaker_a"] else "assistant")


@needs_data
def test_evidence_points_at_real_turns(loaded, raw):
    _, eps = loaded
    for e in eps:
        where = {t.turn_id: s.session_id for s in e.sessions for t in s.turns}
        for q in e.questions:
            for ref in q.evidence:
                assert where[ref.turn_id] == ref.session_id
    e26 = next(e for e in eps if e.episode_id == "26")
    k = next(i for i, q in enumerate(raw["26"]["qa"]) if q["evidence"] == ["D1:12"])
    q = e26.questions[k]
    assert q.question_id == f"26:q{k}"
    assert q.evidence == [EvidenceRef(session_id="session_1", turn_id="D1:12")]


@needs_data
def test_malformed_evidence_is_recorded_not_fatal(loaded):
    _, eps = loaded
    qs = {q.question_id: q for e in eps for q in e.questions}
    bad = {qid: q.meta["bad_evidence"] for qid, q in qs.items() if "bad_evidence" in q.meta}
    repaired = {qid: q.meta["evidence_repaired"] for qid, q in qs.items()
                if "evidence_repaired" in q.meta}
    assert any(v == ["D"] for v in bad.values())  # 42.json: ["D1:18", "D", "D1:20"]
    joined = [r for v in repaired.values() for r in v if r["raw"] == "D8:6; D9:17"]
    assert joined and joined[0]["as"] == ["D8:6", "D9:17"]
    assert any(r["raw"] == "D:11:26" and r["as"] == ["D11:26"]
               for v in repaired.values() for r in v)


@needs_data
def test_category_mapping_and_adversarial(loaded, raw):
    _, eps = loaded
    want = Counter(q["category"] for c in raw.values() for q in c["qa"])
    names = {1: Ability.MULTI_HOP, 2: Ability.TEMPORAL_REASONING, 3: Ability.OPEN_DOMAIN,
             4: Ability.SINGLE_HOP, 5: Ability.ADVERSARIAL}
    got = Counter(q.ability for e in eps for q in e.questions)
    assert got == Counter({names[c]: n for c, n in want.items()})
    for e in eps:
        for k, q in enumerate(e.questions):
            src = raw[e.episode_id]["qa"][k]
            assert q.subtype == f"category_{src['category']}"
            assert q.meta["category"] == src["category"]
            if src["category"] == 5:
                assert q.answer_type is AnswerType.REFUSAL and q.answer == ADVERSARIAL_GOLD
                assert q.meta["adversarial_answer"] == src["adversarial_answer"]
            else:
                assert q.answer_type is AnswerType.FREE_TEXT
                assert q.answer == str(src["answer"])  # ints (e.g. 2022) become strings


@needs_data
def test_images_recorded_never_fetched(loaded, raw):
    bench, eps = loaded
    images = [(t, i) for e in eps for s in e.sessions for t in s.turns for i in t.images]
    n_raw = sum(1 for c in raw.values() for k, v in c.items()
                if re.fullmatch(r"session_\d+", k) for t in v
                if t.get("img_url") or t.get("blip_caption"))
    assert len(images) == n_raw == bench.manifest()["counts"]["images"]
    assert all(i.path is None and not i.missing for _, i in images)
    web = [i for _, i in images if i.url and i.url.startswith("http")]
    assert web and all(i.source == i.url for i in web)
    # Two photos are inlined as data: URLs (42.json D5:6, 44.json D19:28); read for their size.
    inline = [i for _, i in images if i.url and i.url.startswith("data:")]
    assert len(inline) == 2 and all(i.meta["inline"] and i.width and i.sha256 for i in inline)
    assert all(len(i.source) < 100 for i in inline)  # not the whole base64 text
    assert all(i.url is None for _, i in images if i.meta.get("caption_only"))
    assert all(i.captions.get("generic") for _, i in images if "caption_only" in i.meta)
    t = eps[0].sessions[3].turns[0]  # 26.json D4:1 shares a photo
    assert t.turn_id == "D4:1"
    assert t.images[0].captions["generic"].startswith("a photo of")
    assert t.images[0].meta["query"] == "pendant transgender symbol"


@needs_data
def test_single_file_combined_list_and_subset(tmp_path, raw):
    _, eps = load(LOCOMO / "30.json")
    assert [e.episode_id for e in eps] == ["30"]
    # The combined release: a list of {sample_id, conversation: {...}, qa}.
    combined = []
    for stem in ("30", "26"):
        c = raw[stem]
        conv = {k: v for k, v in c.items() if k != "qa"}
        combined.append({"sample_id": f"conv-{stem}", "conversation": conv, "qa": c["qa"]})
    p = tmp_path / "locomo10.json"
    p.write_text(json.dumps(combined))
    _, eps2 = load(p)
    assert [e.episode_id for e in eps2] == ["conv-30", "conv-26"]
    assert eps2[0].sessions == eps[0].sessions
    assert len(eps2[1].questions) == len(raw["26"]["qa"])
    ids = tmp_path / "ids.txt"
    ids.write_text("conv-26:q0\nconv-26:q5\n")
    bench, eps3 = load(p, question_ids=str(ids))
    assert [q.question_id for e in eps3 for q in e.questions] == ["conv-26:q0", "conv-26:q5"]
    counts = bench.manifest()["counts"]
    assert (counts["episodes"], counts["questions"]) == (1, 2)
    ids.write_text("conv-26:q0\nconv-26:q9999\n")
    with pytest.raises(InputError, match="q9999"):
        load(p, question_ids=str(ids))


# -- synthetic (no shared data needed) -------------------------------------------------------

def _conv(**over):
    conv = {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_2_date_time": "2 pm on 2 May, 2023",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Later."}],
        "session_10_date_time": "3 pm on 3 June, 2023",
        "session_10": [{"speaker": "Ann", "dia_id": "D10:1", "text": "Much later."}],
        "session_1_date_time": "1 pm on 1 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi!",
                       "img_url": ["https://example.org/a.jpg"], "blip_caption": "a cat",
                       "query": "cat"},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Hello."}],
        "qa": [{"question": "Who said hi?", "answer": "Ann", "evidence": ["D1:1"],
                "category": 4},
               {"question": "What year?", "answer": 2023, "evidence": ["D10:1"],
                "category": 2},
               {"question": "What is Bo's dog called?", "adversarial_answer": "Rex",
                "evidence": [], "category": 5}],
    }
    conv.update(over)
    return conv


def test_synthetic_numeric_session_order(tmp_path):
    p = tmp_path / "c1.json"
    p.write_text(json.dumps(_conv()))
    _, eps = load(p)
    e = eps[0]
    assert e.episode_id == "c1"
    assert [s.session_id for s in e.sessions] == ["session_1", "session_2", "session_10"]
    assert e.sessions[0].turns[0].images[0].url == "https://example.org/a.jpg"
    assert e.questions[1].answer == "2023"
    assert e.questions[2].answer_type is AnswerType.REFUSAL
    assert e.questions[2].meta["adversarial_answer"] == "Rex"


def test_synthetic_errors_name_file_item_field(tmp_path):
    p = tmp_path / "c1.json"
    conv = _conv()
    conv["session_2"][0]["speaker"] = "Cy"
    p.write_text(json.dumps(conv))
    with pytest.raises(InputError) as exc:
        load(p)
    assert (exc.value.file, exc.value.item, exc.value.field) == (str(p), "c1",
                                                                 "session_2[0].speaker")
    conv = _conv()
    del conv["qa"][0]["answer"]
    p.write_text(json.dumps(conv))
    with pytest.raises(InputError) as exc:
        load(p)
    assert (exc.value.item, exc.value.field) == ("c1:q0", "qa[0].answer")
    p.write_bytes(json.dumps(_conv(speaker_a="Åsa"), ensure_ascii=False).encode("latin-1"))
    with pytest.raises(InputError, match="UTF-8"):
        load(p)


def test_empty_folder(tmp_path):
    with pytest.raises(InputError, match="no \\*.json"):
        locomo(BenchmarkOptions(data=str(tmp_path)))
