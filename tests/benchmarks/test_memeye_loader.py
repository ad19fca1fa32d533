"""The MemEye loader on the committed release-format fixture (tests/fixtures/memeye), its
refusals of bad input, and a run end to end with a replay model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.memeye import MemEyeBenchmark
from memgauge.cli import app
from memgauge.errors import ConfigError, InputError
from memgauge.schema import AnswerType, Episode, Record

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "memeye"
runner = CliRunner()


def load(data: Path | str = FIXTURE, **kw: Any) -> dict[str, Episode]:
    bench = MemEyeBenchmark(BenchmarkOptions(data=str(data), **kw))
    return {ep.episode_id: ep for ep in bench.episodes()}


@pytest.fixture(scope="module")
def episodes() -> dict[str, Episode]:
    return load()


def by_id(ep: Episode) -> dict[str, Any]:
    return {q.question_id: q for q in ep.questions}


def test_one_episode_per_task_with_the_sessions_in_file_order(episodes):
    assert list(episodes) == ["Card_Task", "Demo_Task"]  # concat_* is skipped
    demo = episodes["Demo_Task"]
    assert [s.session_id for s in demo.sessions] == ["D1", "D2", "D3"]
    assert [s.date for s in demo.sessions] == ["2026-03-01", "2026-03-08", "2026-03-15"]
    first = demo.sessions[0].turns
    assert [(t.turn_id, t.role) for t in first] == [
        ("D1:1", "user"), ("D1:1:assistant", "assistant"), ("D1:2", "user"),
        ("D1:2:assistant", "assistant")]
    assert first[0].text == "Here is my new desk mug." and first[1].text == "Nice mug!"
    image = first[0].images[0]
    assert image.captions == {"generic": "A white mug with a blue rim on a wooden desk."}
    assert image.meta["image_id"] == "IMG_001" and (image.width, image.height) == (64, 48)
    assert demo.meta["character_profile"] == {"name": "Alex"}
    assert demo.meta["files"] == ["Demo_Task.json", "Demo_Task_Open.json"]


def test_image_paths_resolve_with_the_reference_candidates_inside_the_root(episodes):
    turns = {t.turn_id: t for s in episodes["Demo_Task"].sessions for t in s.turns}
    root = FIXTURE.resolve()
    want = {"D1:1": "image/Demo_Task/mug_white.png",  # <dialog>/../p
            "D2:1": "image/Demo_Task/mug_red.png",  # <dialog>/p, written ../image/...
            "D2:2": "image/Demo_Task/plant.png"}  # file:// stripped, <root>/image/<p>
    for turn, rel in want.items():
        ref = turns[turn].images[0]
        assert Path(ref.path) == root / rel and not ref.missing
    assert turns["D2:2"].images[0].source == "file://Demo_Task/plant.png"


def test_each_rotation_is_its_own_question_with_lettered_options(episodes):
    qs = by_id(episodes["Demo_Task"])
    rots = [qs[f"Demo_Task:demo_q1:r{k}"] for k in range(1, 5)]
    assert [q.answer for q in rots] == ["A", "B", "C", "D"]
    assert all(q.answer_type is AnswerType.MCQ for q in rots)
    assert rots[1].options == ["White with a blue rim", "Red", "Blue", "Green"]
    assert rots[1].text == ("What colour is my desk mug now?\n\nA. White with a blue rim\n"
                            "B. Red\nC. Blue\nD. Green\n\n"
                            "Answer with only the option letter (A, B, C, D).")
    assert {q.meta["base_question_id"] for q in rots} == {"Demo_Task:demo_q1"}
    assert [q.meta["rotation"] for q in rots] == [1, 2, 3, 4]
    assert len({q.text for q in rots}) == 4  # so the response cache keys each rotation


def test_the_legacy_dict_is_one_rotation_with_the_gold_letter_from_answer(episodes):
    qs = by_id(episodes["Demo_Task"])
    legacy = [q for q in qs if q.startswith("Demo_Task:demo_q2:r")]
    assert legacy == ["Demo_Task:demo_q2:r1"]
    q = qs["Demo_Task:demo_q2:r1"]
    assert q.answer == "C" and q.options == ["A lamp", "A keyboard", "A mug", "A phone"]
    assert q.meta["gold_option"] == "A mug"


def test_point_multi_labels_are_the_cartesian_product(episodes):
    q = by_id(episodes["Demo_Task"])["Demo_Task:demo_q2:r1"]
    assert q.meta["xy_cells"] == ["X1_Y1", "X1_Y2", "X2_Y1", "X2_Y2"]
    assert (q.labels.x, q.labels.y) == ("X1", "Y1")
    card = by_id(episodes["Card_Task"])["Card_Task:card_q1:r1"]
    assert card.meta["xy_cells"] == ["X2_Y2", "X2_Y3"]


def test_clues_are_sorted_by_session_order_whatever_the_file_order(episodes):
    q = by_id(episodes["Demo_Task"])["Demo_Task:demo_q1:r1"]  # clue ["D2:1", "D1:1"]
    assert [(e.session_id, e.turn_id) for e in q.evidence] == [("D1", "D1:1"), ("D2", "D2:1")]
    assert q.meta["evidence_sessions"] == ["D2", "D1"]
    assert q.labels.image_dependency == "essential" and q.labels.image_dependency_inferred


def test_question_images_carry_their_captions(episodes):
    qs = by_id(episodes["Demo_Task"])
    single = qs["Demo_Task:demo_q2:r1"].images  # question_image + question_image_caption
    assert [(i.source, i.captions["generic"]) for i in single] == [
        ("image/Demo_Task/q_desk.png", "A wooden desk seen from above.")]
    listed = qs["Demo_Task:demo_q3:open"].images  # question_images + image_caption
    assert [i.captions["generic"] for i in listed] == ["A green plant in a brown pot, closer up."]
    assert Path(listed[0].path) == FIXTURE.resolve() / "image/Demo_Task/q_plant.png"


def test_the_open_twin_pairs_by_task_and_question(episodes):
    demo = by_id(episodes["Demo_Task"])
    q = demo["Demo_Task:demo_q3:open"]
    assert q.answer_type is AnswerType.FREE_TEXT and q.answer == "Yes, it is the same plant"
    assert q.text == "Is the plant in this photo the one I showed you?" and not q.options
    assert q.meta["base_question_id"] == "Demo_Task:demo_q3" and "rotation" not in q.meta
    card = by_id(episodes["Card_Task"])  # MCQ under human_annotated_qas, open under qas
    assert sorted(card) == ["Card_Task:card_q1:open"] + [f"Card_Task:card_q1:r{k}"
                                                          for k in range(1, 5)]


def test_a_single_file_loads_its_task_with_its_twin_and_format_picks_one(tmp_path):
    one = load(FIXTURE / "dialog" / "Card_Task.json")
    assert list(one) == ["Card_Task"] and len(one["Card_Task"].questions) == 5
    opened = load(FIXTURE / "dialog" / "Card_Task_Open.json", extra={"format": "open"})
    assert [q.question_id for q in opened["Card_Task"].questions] == ["Card_Task:card_q1:open"]
    mcq = load(FIXTURE / "dialog", extra={"format": "mcq"})  # the dialog folder itself
    assert all(q.answer_type is AnswerType.MCQ for ep in mcq.values() for q in ep.questions)
    concat = load(FIXTURE / "dialog" / "concat_demo_card.json")  # given alone, it loads
    # both tasks' MCQ QAs: Demo's 4 + 1 (legacy dict) + 4 rotations, Card's 4
    assert list(concat) == ["concat_demo_card"] and len(concat["concat_demo_card"].questions) == 13


def test_asked_after_evidence_is_the_latest_clue_session():
    eps = load(extra={"asked_after": "evidence"})
    qs = by_id(eps["Demo_Task"])
    assert qs["Demo_Task:demo_q1:r1"].asked_after == 1  # clues in D1 and D2
    assert qs["Demo_Task:demo_q2:r1"].asked_after == 0
    assert all(q.asked_after is None for q in load()["Demo_Task"].questions)  # default: end
    with pytest.raises(ConfigError, match="asked_after"):
        load(extra={"asked_after": "soon"})
    with pytest.raises(ConfigError, match="memeye takes"):
        load(extra={"tier": "x"})


def test_an_id_list_keeps_a_question_with_all_its_rotations(tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("Demo_Task:demo_q1\nCard_Task:card_q1:open\n")
    eps = load(question_ids=str(ids))
    assert len(eps["Demo_Task"].questions) == 5  # four rotations and the open twin
    assert [q.question_id for q in eps["Card_Task"].questions] == ["Card_Task:card_q1:open"]


# --- bad input --------------------------------------------------------------------------


def copy_fixture(tmp_path: Path) -> Path:
    root = tmp_path / "memeye"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("*.py"))
    return root


def edit(root: Path, name: str, change: Any) -> Path:
    path = root / "dialog" / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return path


def refused(root: Path, **kw: Any) -> InputError:
    with pytest.raises(InputError) as got:
        load(root, **kw)
    return got.value


def first_qa(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["human-annotated QAs"][0]


@pytest.mark.parametrize(("name", "change", "item", "field", "words"), [
    ("Demo_Task.json", lambda d: first_qa(d).update(point=[["X5"], ["Y1"]]),
     "Demo_Task:demo_q1", "point[0]", "'X5'"),
    ("Demo_Task.json", lambda d: first_qa(d).update(point="X1"),
     "Demo_Task:demo_q1", "point", "expected [[X"),
    ("Demo_Task.json", lambda d: first_qa(d).update(clue=["D9:9"]),
     "Demo_Task:demo_q1", "clue[0]", "names no round"),
    ("Demo_Task.json", lambda d: first_qa(d)["options"][2].update(answer="E"),
     "Demo_Task:demo_q1", "options[2].answer", "not one of the options"),
    ("Demo_Task.json", lambda d: first_qa(d).update(options="A, B"),
     "Demo_Task:demo_q1", "options", "expected a dict or a list"),
    ("Demo_Task.json", lambda d: d["human-annotated QAs"][1].update(answer="Z"),
     "Demo_Task:demo_q2", "answer", "not one of the options"),
    ("Demo_Task.json", lambda d: first_qa(d).pop("question"),
     "Demo_Task:demo_q1", "question", "missing"),
    ("Demo_Task.json", lambda d: first_qa(d).update(session_id=["D7"]),
     "Demo_Task:demo_q1", "session_id[0]", "names no session"),
    ("Demo_Task.json",
     lambda d: d["multi_session_dialogues"][0]["dialogues"][0].update(image_caption=[]),
     "Demo_Task", None, None),  # an empty caption list is no caption: accepted
    ("Demo_Task.json",
     lambda d: d["multi_session_dialogues"][0]["dialogues"][0].update(image_id=["a", "b"]),
     "Demo_Task", "multi_session_dialogues[0].dialogues[0].image_id", "2 entries for 1"),
    ("Demo_Task.json", lambda d: d["multi_session_dialogues"][1].update(session_id="D1"),
     "Demo_Task", "multi_session_dialogues[1].session_id", "duplicate session_id"),
    ("Demo_Task.json", lambda d: d.pop("human-annotated QAs"),
     "Demo_Task", None, "no questions"),
    ("Demo_Task_Open.json", lambda d: first_qa(d).update(question="Something else?"),
     "Demo_Task:demo_q1", "question", "differs from its MCQ twin"),
    ("Demo_Task_Open.json",
     lambda d: d["multi_session_dialogues"][2]["dialogues"][0].update(round="D3:9"),
     "Demo_Task", "multi_session_dialogues", "dialogue differs"),
])
def test_bad_fields_are_named(tmp_path, name, change, item, field, words):
    root = copy_fixture(tmp_path)
    path = edit(root, name, change)
    if words is None:
        load(root)
        return
    err = refused(root)
    assert err.file == str(path) and err.item == item and err.field == field
    assert words in str(err)


@pytest.mark.parametrize("written", ["../../outside.png", "/etc/hostname",
                                     "image/../../../outside.png"])
def test_an_image_path_escaping_the_data_root_is_refused(tmp_path, written):
    root = copy_fixture(tmp_path)
    (tmp_path / "outside.png").write_bytes((FIXTURE / "image/Demo_Task/plant.png").read_bytes())
    path = edit(root, "Demo_Task.json", lambda d: d["multi_session_dialogues"][0]["dialogues"][0]
                .update(input_image=[written]))
    err = refused(root)
    assert err.file == str(path) and err.field == (
        "multi_session_dialogues[0].dialogues[0].input_image[0]")
    assert "escapes the data root" in str(err)


def test_image_dir_elsewhere_is_the_image_root_and_the_data_root(tmp_path):
    dialog = tmp_path / "files" / "dialog"
    shutil.copytree(FIXTURE / "dialog", dialog)
    images = tmp_path / "pictures"
    shutil.copytree(FIXTURE / "image", images)  # <image-dir>/<Task>/..., as image_root
    eps = load(dialog, image_dir=str(images))
    ref = eps["Demo_Task"].sessions[0].turns[0].images[0]  # written image/Demo_Task/...
    assert Path(ref.path) == images.resolve() / "Demo_Task" / "mug_white.png"
    edit(tmp_path / "files", "Demo_Task.json", lambda d: d["multi_session_dialogues"][0]
         ["dialogues"][0].update(input_image=["../../../outside.png"]))
    assert "escapes the data root" in str(refused(dialog, image_dir=str(images)))


def test_a_link_out_of_the_root_is_refused(tmp_path):
    root = copy_fixture(tmp_path)
    (tmp_path / "outside.png").write_bytes((FIXTURE / "image/Demo_Task/plant.png").read_bytes())
    link = root / "image" / "Demo_Task" / "plant.png"
    link.unlink()
    link.symlink_to(tmp_path / "outside.png")
    assert "outside the image dir" in str(refused(root))


def test_a_missing_image_is_refused_or_recorded(tmp_path):
    root = copy_fixture(tmp_path)
    (root / "image" / "Card_Task" / "card_blue.png").unlink()
    err = refused(root)
    assert err.field == "multi_session_dialogues[0].dialogues[0].input_image[0]"
    assert "was not found" in str(err)
    assert "image/Card_Task/card_blue.png, image/card_blue.png)" in str(err)  # candidates
    eps = load(root, allow_missing_images=True)
    assert eps["Card_Task"].sessions[0].turns[0].images[0].missing


def test_a_broken_last_task_stops_the_run_before_its_first_request(tmp_path, episodes):
    root = copy_fixture(tmp_path)
    (root / "image" / "Demo_Task" / "plant.png").unlink()  # Demo_Task comes after Card_Task
    preds = {q.question_id: q.answer for ep in episodes.values() for q in ep.questions}
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", "--bench", "memeye", "--data", str(root), "--model",
                                 f"replay:{write_preds(tmp_path, preds)}", "--out", str(out)])
    assert result.exit_code == 2 and "Demo_Task.json" in result.output, result.output
    records = out / "records.jsonl"
    assert not records.exists() or not records.read_text().strip()  # Card_Task not asked


@pytest.mark.parametrize("content", [b"", b"[]", b"{\"a\": ", b"\x00\x01", b"null"])
def test_whole_file_garbage_is_one_error_line_naming_the_file(tmp_path, content):
    root = copy_fixture(tmp_path)
    (root / "dialog" / "Card_Task.json").write_bytes(content)
    result = runner.invoke(app, ["run", "--bench", "memeye", "--data", str(root), "--model",
                                 f"replay:{write_preds(tmp_path, {})}", "--out",
                                 str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Card_Task.json" in errors[0], result.output
    assert "Traceback" not in result.output


# --- the open twins as released: ids that differ, questions without a twin ---------------


def suffix_open_ids(doc: dict[str, Any]) -> None:
    for qa in doc["human-annotated QAs"]:
        qa["question_id"] += "_open"


def test_open_ids_that_differ_pair_by_sessions_and_question_text(tmp_path):
    root = copy_fixture(tmp_path)
    edit(root, "Demo_Task_Open.json", suffix_open_ids)
    bench = MemEyeBenchmark(BenchmarkOptions(data=str(root)))
    qs = by_id({ep.episode_id: ep for ep in bench.episodes()}["Demo_Task"])
    twin = qs["Demo_Task:demo_q1:open"]  # the MCQ twin's id: rotations and twin share a base
    assert twin.meta["base_question_id"] == qs["Demo_Task:demo_q1:r1"].meta["base_question_id"]
    assert twin.meta["source_question_id"] == "Demo_Task:demo_q1_open"
    assert twin.answer == "Red"
    assert bench.manifest()["pairing"] == {"by_id": 1, "by_text": 3, "open_alone": 0,
                                           "mcq_alone": 0}


def test_a_question_without_a_twin_is_loaded_as_its_own(tmp_path):
    def extra_open(doc: dict[str, Any]) -> None:
        doc["human-annotated QAs"].pop()  # demo_q3 has no open twin now
        doc["human-annotated QAs"].append({
            "question_id": "demo_only_open", "point": [["X1"], ["Y1"]],
            "question": "What did I have for lunch?", "answer": "Soup",
            "session_id": ["D1"], "clue": ["D1:2"]})

    root = copy_fixture(tmp_path)
    edit(root, "Demo_Task_Open.json", extra_open)
    bench = MemEyeBenchmark(BenchmarkOptions(data=str(root)))
    qs = by_id({ep.episode_id: ep for ep in bench.episodes()}["Demo_Task"])
    alone = qs["Demo_Task:demo_only_open:open"]
    assert alone.answer == "Soup" and alone.meta["base_question_id"] == "Demo_Task:demo_only_open"
    assert "Demo_Task:demo_q3:r1" in qs and "Demo_Task:demo_q3:open" not in qs
    assert bench.manifest()["pairing"] == {"by_id": 3, "by_text": 0, "open_alone": 1,
                                           "mcq_alone": 1}


def test_an_id_less_open_question_without_a_twin_keeps_its_own_base(tmp_path):
    def no_ids(doc: dict[str, Any]) -> None:
        for qa in doc["human-annotated QAs"]:
            qa.pop("question_id")
        doc["human-annotated QAs"][0]["question"] = "What did I have for lunch?"

    root = copy_fixture(tmp_path)
    edit(root, "Demo_Task_Open.json", no_ids)
    edit(root, "Demo_Task.json", lambda d: [qa.pop("question_id")
                                            for qa in d["human-annotated QAs"]])
    qs = by_id(load(root)["Demo_Task"])
    assert qs["Demo_Task:q1:open"].answer == "A mug"  # paired by text
    alone = qs["Demo_Task:open-q0:open"]  # not "q0": no MCQ question's place id
    assert alone.meta["base_question_id"] == "Demo_Task:open-q0"


def test_a_run_on_open_ids_with_a_suffix_answers_every_question(tmp_path, episodes):
    root = copy_fixture(tmp_path)
    edit(root, "Demo_Task_Open.json", suffix_open_ids)
    preds = {q.question_id: q.answer for ep in episodes.values() for q in ep.questions}
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "--bench", "memeye", "--data", str(root), "--model",
                                 f"replay:{write_preds(tmp_path, preds)}", "--out", str(out)])
    assert result.exit_code == 0, result.output  # was 2: "has no twin in the MCQ file"
    assert len((out / "records.jsonl").read_text().splitlines()) == 17


# --- inconsistent gold --------------------------------------------------------------------


def rotation(d: dict[str, Any], n: int) -> dict[str, Any]:
    return first_qa(d)["options"][n]


def drop_answer_and_move_gold(d: dict[str, Any]) -> None:
    first_qa(d).pop("answer")  # no gold text: the rotations must agree among themselves
    rotation(d, 1)["answer"] = "A"


INCONSISTENT = [
    ("Demo_Task.json", lambda d: rotation(d, 2).update(answer="A"), "options[2].answer",
     "points at 'White with a blue rim', not the gold 'Red'"),
    ("Demo_Task.json", drop_answer_and_move_gold, "options[1].answer",
     "rotation 2's gold 'White with a blue rim' differs from rotation 1's 'Red'"),
    ("Demo_Task.json", lambda d: rotation(d, 0).update(C="red"), "options[0]",
     "options A and C have the same text"),
    ("Demo_Task.json", lambda d: first_qa(d)["options"].__setitem__(
        3, {"A": "Blue", "B": "Red", "answer": "B"}), "options[3]",
     "2 options where the first rotation has 4"),
    ("Demo_Task_Open.json", lambda d: first_qa(d).update(answer="Blue"), "answer",
     "the open gold 'Blue' is not its MCQ twin's gold option 'Red'"),
    ("Demo_Task_Open.json", lambda d: first_qa(d).update(question="Something else?"),
     "question", "differs from its MCQ twin"),
]


@pytest.mark.parametrize(("name", "change", "field", "words"), INCONSISTENT)
def test_inconsistent_gold_is_a_named_error(tmp_path, name, change, field, words):
    root = copy_fixture(tmp_path)
    path = edit(root, name, change)
    err = refused(root)
    assert (err.file, err.item, err.field) == (str(path), "Demo_Task:demo_q1", field)
    assert words in str(err) and "--allow-inconsistent" in str(err)


@pytest.mark.parametrize(("name", "change", "field", "words"), INCONSISTENT)
def test_allow_inconsistent_loads_it_with_a_warning_in_the_manifest(tmp_path, name, change,
                                                                    field, words):
    root = copy_fixture(tmp_path)
    path = edit(root, name, change)
    bench = MemEyeBenchmark(BenchmarkOptions(data=str(root), allow_inconsistent=True))
    assert sum(len(ep.questions) for ep in bench.episodes()) > 0
    [warning] = bench.manifest()["inconsistencies"]
    assert (warning["file"], warning["item"], warning["field"]) == (
        str(path), "Demo_Task:demo_q1", field)
    assert words in str(warning["problem"])


def test_an_open_reference_that_says_more_than_its_option_is_consistent(episodes):
    q = by_id(episodes["Demo_Task"])["Demo_Task:demo_q3:open"]  # "Yes" in the MCQ file
    assert q.answer == "Yes, it is the same plant"
    bench = MemEyeBenchmark(BenchmarkOptions(data=str(FIXTURE), allow_inconsistent=True))
    assert bench.manifest()["inconsistencies"] == []
    assert "inconsistencies" not in MemEyeBenchmark(BenchmarkOptions(
        data=str(FIXTURE))).manifest()


def test_run_allow_inconsistent_puts_the_warnings_in_the_run_manifest(tmp_path, episodes):
    root = copy_fixture(tmp_path)
    edit(root, "Demo_Task_Open.json", lambda d: first_qa(d).update(answer="Blue"))
    preds = {q.question_id: q.answer for ep in episodes.values() for q in ep.questions}
    args = ["run", "--bench", "memeye", "--data", str(root), "--model",
            f"replay:{write_preds(tmp_path, preds)}", "--out", str(tmp_path / "run")]
    refused_run = runner.invoke(app, args)
    assert refused_run.exit_code == 2 and "--allow-inconsistent" in refused_run.output
    result = runner.invoke(app, [*args, "--allow-inconsistent"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    [warning] = manifest["benchmark"]["inconsistencies"]
    assert warning["item"] == "Demo_Task:demo_q1" and warning["field"] == "answer"
    shown = runner.invoke(app, ["show", str(tmp_path / "run"), "Demo_Task:demo_q1:open"])
    assert shown.exit_code == 0 and "What colour is my desk mug now?" in shown.output, \
        shown.output  # the prompt is rebuilt from the same data


# --- end to end -------------------------------------------------------------------------


def write_preds(tmp_path: Path, preds: dict[str, str]) -> Path:
    path = tmp_path / "preds.jsonl"
    lines = [json.dumps({"question_id": k, "hypothesis": v}) for k, v in preds.items()]
    path.write_text("\n".join(lines or ['{"question_id": "none", "hypothesis": "x"}']) + "\n")
    return path


def test_run_end_to_end_with_a_replay_model(tmp_path, episodes):
    preds = {q.question_id: q.answer for ep in episodes.values() for q in ep.questions}
    preds["Demo_Task:demo_q1:r3"] = "A or C"  # unparseable: scored 0, counted apart
    preds["Demo_Task:demo_q3:r2"] = "The answer is (B)."
    preds["Card_Task:card_q1:r1"] = "Blue"  # the option's text: A here
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "--bench", "memeye", "--data", str(FIXTURE),
                                 "--model", f"replay:{write_preds(tmp_path, preds)}",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = {r.question_id: r for r in map(Record.model_validate_json,
                                              (out / "records.jsonl").read_text().splitlines())}
    assert len(records) == 17 and all(r.status == "ok" for r in records.values())
    bad = records["Demo_Task:demo_q1:r3"]
    assert bad.scores["rule"] == 0.0
    assert bad.score_details["rule"].details["label"] == "unparseable"
    assert records["Demo_Task:demo_q3:r2"].scores["rule"] == 1.0
    assert records["Card_Task:card_q1:r1"].scores["rule"] == 1.0
    r = records["Demo_Task:demo_q2:r1"]
    assert r.meta["xy_cells"] == ["X1_Y1", "X1_Y2", "X2_Y1", "X2_Y2"]
    assert r.meta["base_question_id"] == "Demo_Task:demo_q2" and r.meta["rotation"] == 1
    assert r.benchmark.name == "memeye"
    rep = runner.invoke(app, ["report", str(out), "--format", "json"])
    assert rep.exit_code == 0, rep.output
    tables = json.loads(rep.output)["tables"]
    rot = tables["rotations"]["run"]
    # demo_q1: 3 of 4 rotations; the other three questions every rotation
    assert rot["n_questions"] == 4 and rot["debiased_em"] == pytest.approx((0.75 + 3) / 4)
    assert rot["all_rotations_correct"] == pytest.approx(3 / 4) and rot["unparseable"] == 1
    # open questions are the judge's alone: no judge ran, so no open grid and no rule score
    assert set(tables["xy"]) == {"run · MCQ (debiased EM)"}
    assert tables["xy"]["run · MCQ (debiased EM)"]["X4"]["Y3"]["accuracy"] == 0.75
    assert all(r.scores == {} for q, r in records.items() if q.endswith(":open"))
    assert all(set(r.scores) == {"rule"} for q, r in records.items() if ":r" in q)
    assert all(r.meta["measure"] == ("judge" if q.endswith(":open") else "letter")
               for q, r in records.items())
    rows = {r["run"]: r for r in tables["runs"]}  # the headline keeps the forms apart
    assert set(rows) == {"run · MCQ", "run · open"}
    assert rows["run · MCQ"]["accuracy"] == pytest.approx(12 / 13)  # 13 rotations, 1 wrong
    assert rows["run · open"]["accuracy"] is None and rows["run · open"]["n"] == 0


def test_a_limit_through_a_questions_rotations_leaves_it_incomplete(tmp_path, episodes):
    """--limit 6 asks Card_Task's four rotations and its open twin, then Demo_Task's first
    rotation only: that question is incomplete, not valued at one rotation's letter."""
    preds = {q.question_id: q.answer for ep in episodes.values() for q in ep.questions}
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "--bench", "memeye", "--data", str(FIXTURE),
                                 "--model", f"replay:{write_preds(tmp_path, preds)}",
                                 "--limit", "6", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [Record.model_validate_json(x) for x in
               (out / "records.jsonl").read_text().splitlines()]
    assert {r.meta.get("rotations") for r in records if "rotation" in r.meta} == {4}
    rep = runner.invoke(app, ["report", str(out), "--format", "json"])
    rot = json.loads(rep.output)["tables"]["rotations"]["run"]
    assert rot["n_questions"] == 1 and rot["incomplete_questions"] == 1


def test_judge_rubric_auto_picks_the_memeye_five_levels_for_the_open_questions_only(tmp_path,
                                                                            episodes):
    from memgauge.scoring._judge_run import JudgeOptions, JudgePipeline

    class NoModel:
        name = "none"

    pipeline = JudgePipeline(NoModel(), JudgeOptions())  # type: ignore[arg-type]
    preds = {q.question_id: q.answer for ep in episodes.values() for q in ep.questions}
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "--bench", "memeye", "--data", str(FIXTURE),
                                 "--model", f"replay:{write_preds(tmp_path, preds)}",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [Record.model_validate_json(line)
               for line in (out / "records.jsonl").read_text().splitlines()]
    rubrics = {r.question_id.rsplit(":", 1)[1][:1]: pipeline.scorer_for(r).rubric.name
               for r in records if pipeline.needs(r)}
    assert rubrics == {"o": "memeye"}  # the rotations are the letter rule's alone
