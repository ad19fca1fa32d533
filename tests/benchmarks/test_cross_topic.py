"""Cross-topic scaling: --bench combined joins task histories at fixed questions, and
`memgauge probe history` reads accuracy against history size (issue 17)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memgauge.analysis import RunData
from memgauge.analysis._cross_topic import history_points
from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.combined import combine, partition
from memgauge.cli import app
from memgauge.errors import ConfigError, InputError
from memgauge.registry import lookup
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    Question,
    Record,
    Response,
    Session,
    Turn,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "memeye"
IDS = ["t1", "t2", "t3", "t4", "t5"]


def test_groupings() -> None:
    assert partition(IDS, "single", 0) == [[i] for i in IDS]
    assert partition(IDS, "pairs", 0) == [["t1", "t2"], ["t3", "t4"], ["t5"]]
    assert partition(IDS, "size:4", 0) == [["t1", "t2", "t3", "t4"], ["t5"]]
    assert partition(IDS, "all", 0) == [IDS]
    assert partition(IDS, "t5+t1/t2", 0) == [["t5", "t1"], ["t2"]]
    drawn = partition(IDS, "random:2", 7)
    assert drawn == partition(IDS, "random:2", 7)  # the seed fixes the draw
    assert sorted(i for g in drawn for i in g) == IDS and [len(g) for g in drawn] == [2, 2, 1]
    draws = {json.dumps(partition(IDS, "random:2", s)) for s in range(10)}
    assert len(draws) > 1


@pytest.mark.parametrize(("group", "message"), [
    ("pair", "use single, pairs"), ("size:0", "whole number"), ("random:x", "whole number"),
    ("t1+t9", "'t9' is no episode"), ("t1+t2/t2", "in two groups"), ("t1+/", "empty group"),
])
def test_grouping_mistakes_are_named(group: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        partition(IDS, group, 0)


def _episode(eid: str, dates: list[str | None]) -> Episode:
    sessions = [Session(session_id=f"S{i}", date=d,
                        turns=[Turn(turn_id=f"S{i}:1", role="user", text=f"{eid} {i}")])
                for i, d in enumerate(dates)]
    q = Question(question_id=f"{eid}:q", text="?", answer="x", answer_type=AnswerType.FREE_TEXT,
                 ability=Ability.INFORMATION_EXTRACTION, asked_after=0,
                 evidence=[EvidenceRef(session_id="S0", turn_id="S0:1")])
    return Episode(episode_id=eid, sessions=sessions, questions=[q],
                   benchmark=BenchmarkInfo(name="x"))


def test_combine_merges_by_date_and_keeps_questions_pointing_at_their_sessions() -> None:
    a = _episode("A", ["2024-01-01", "2024-03-01"])
    b = _episode("B", ["2024-02-01", "2024-02-01T10:00"])
    ep = combine([a, b], BenchmarkInfo(name="combined"), "all")
    assert ep.episode_id == "A+B"
    assert [s.session_id for s in ep.sessions] == ["A/S0", "B/S0", "B/S1", "A/S1"]
    qa, qb = ep.questions
    assert (qa.question_id, qb.question_id) == ("A:q", "B:q")  # fixed questions
    assert qa.evidence[0].session_id == "A/S0" and qb.evidence[0].session_id == "B/S0"
    assert (qa.asked_after, qb.asked_after) == (0, 1)  # right after their own session
    assert ep.meta["combined"] == {"group": "all", "members": ["A", "B"], "sessions": 4,
                                   "turns": 4, "images": 0}
    undated = combine([_episode("A", [None, None]), b], BenchmarkInfo(name="c"), "all")
    assert [s.session_id for s in undated.sessions] == ["A/S0", "A/S1", "B/S0", "B/S1"]


def test_bench_option_mistakes_fail_before_loading() -> None:
    make = lookup("benchmark", "combined")
    with pytest.raises(ConfigError, match="of=BENCH"):
        make(BenchmarkOptions(data=str(FIXTURE), extra={}))
    with pytest.raises(ConfigError, match="combined takes"):
        make(BenchmarkOptions(data=str(FIXTURE), extra={"of": "memeye", "grup": "all"}))
    with pytest.raises(ConfigError, match="format"):  # the joined loader checks its own
        make(BenchmarkOptions(data=str(FIXTURE), extra={"of": "memeye", "of.format": "x"}))


def _run(tmp_path: Path, group: str) -> str:
    out = tmp_path / group
    res = CliRunner().invoke(app, [
        "run", "--bench", "combined", "--data", str(FIXTURE), "--bench-option", "of=memeye",
        "--bench-option", f"group={group}", "--bench-option", "of.format=mcq",
        "--system", "clue-all", "--context-mode", "text", "--model", "none:",
        "--out", str(out), "--no-cache"])
    assert res.exit_code == 0, res.output
    return str(out)


def test_runs_at_two_groupings_pair_question_by_question(tmp_path: Path) -> None:
    single, joined = _run(tmp_path, "single"), _run(tmp_path, "all")
    res = CliRunner().invoke(app, ["probe", "history", single, joined, "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    by_group = {p["group"]: p for p in data["points"]}
    assert by_group["all"]["sessions"] == 5  # the fixture's two tasks: 3 + 2 sessions
    assert by_group["single"]["sessions"] < 5
    assert by_group["all"]["n"] == by_group["single"]["n"] > 0
    # clue-all reads only the gold clues: joining histories changes nothing it sees
    assert by_group["all"]["accuracy"] == by_group["single"]["accuracy"]
    assert by_group["all"]["delta_vs_single"] == 0.0
    assert by_group["all"]["n_paired"] == by_group["all"]["n"]
    md = CliRunner().invoke(app, ["probe", "history", single, joined])
    assert "Accuracy against combined history size" in md.output and "+0.0 pts" in md.output


def _record(qid: str, episode: str, value: float) -> Record:
    return Record(question_id=qid, episode_id=episode, benchmark=BenchmarkInfo(name="c"),
                  status="ok", ability=Ability.INFORMATION_EXTRACTION,
                  answer_type=AnswerType.MCQ, question="?", gold="A",
                  response=Response(text="A"), scores={"rule": value})


def _data(label: str, group: str, episodes: dict, records: list[Record]) -> RunData:
    manifest = {"config": {"identity": {"system": "full-context", "model": "m"}},
                "benchmark": {"name": "combined", "group": group, "episodes": episodes}}
    return RunData(label=label, manifest=manifest, records=records)


def test_history_points_hand_computed() -> None:
    single = _data("s", "single", {"A": {"sessions": 2, "turns": 4, "images": 1},
                                   "B": {"sessions": 4, "turns": 8, "images": 3}},
                   [_record("A:q1:r1", "A", 1), _record("A:q1:r2", "A", 1),
                    _record("B:q2:r1", "B", 1), _record("B:q2:r2", "B", 0)])
    joined = _data("j", "all", {"A+B": {"sessions": 6, "turns": 12, "images": 4}},
                   [_record("A:q1:r1", "A+B", 0), _record("A:q1:r2", "A+B", 1),
                    _record("B:q2:r1", "A+B", 0), _record("B:q2:r2", "A+B", 0)])
    other = RunData(label="plain", manifest={"benchmark": {"name": "memeye"}}, records=[])
    points, skipped = history_points([joined, single, other], "rule")
    assert skipped == ["plain"]
    s, j = points  # by history size
    assert (s.group, s.sessions, s.turns, s.accuracy) == ("single", 3.0, 6.0, 0.75)
    assert (j.group, j.sessions, j.accuracy) == ("all", 6.0, 0.25)
    assert j.delta_vs_single == pytest.approx(-0.5) and j.n_paired == 2


# -- MemEye's own groupings: group=release reads concat_* membership from the data ---------

def _combined(data: Path, group: str) -> dict[str, Episode]:
    bench = lookup("benchmark", "combined")(BenchmarkOptions(
        data=str(data), extra={"of": "memeye", "group": group}))
    return {ep.episode_id: ep for ep in bench.episodes()}


def _release_copy(tmp_path: Path) -> Path:
    root = tmp_path / "release"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("*.py"))
    return root


def test_release_grouping_derives_its_tasks_and_joins_them_as_a_fixed_group() -> None:
    release = _combined(FIXTURE, "release")
    assert list(release) == ["Demo_Task+Card_Task"]  # from concat_demo_card's content
    fixed = _combined(FIXTURE, "Demo_Task+Card_Task")
    for got, want in ((release, fixed), (_combined(FIXTURE, "release:concat_demo_card"), fixed),
                      (_combined(FIXTURE, "release:demo_card"), fixed)):
        [ep] = got.values()
        [ref] = want.values()
        assert [q.model_dump() for q in ep.questions] == [q.model_dump() for q in ref.questions]
        assert [s.model_dump() for s in ep.sessions] == [s.model_dump() for s in ref.sessions]
        assert ep.meta["members"] == ["Demo_Task", "Card_Task"]


def test_overlapping_release_groupings_are_refused_and_run_one_at_a_time(tmp_path: Path) -> None:
    root = _release_copy(tmp_path)
    demo = json.loads((root / "dialog" / "Demo_Task.json").read_text(encoding="utf-8"))
    (root / "dialog" / "concat_demo_only.json").write_text(json.dumps(
        {"task_name": "concat_demo_only", "multi_session_dialogues":
         demo["multi_session_dialogues"], "qas": demo["human-annotated QAs"]}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"concat_demo_card and concat_demo_only both hold "
                                          r"task 'Demo_Task'.*one grouping per run"):
        _combined(root, "release")
    assert list(_combined(root, "release:concat_demo_only")) == ["Demo_Task"]
    assert list(_combined(root, "release:concat_demo_card")) == ["Demo_Task+Card_Task"]


@pytest.mark.parametrize(("change", "says"), [
    (lambda d: d["qas"][3].update(question="Which circle colour did I draw last?"),
     "matches no task file's question"),
    (lambda d: d["multi_session_dialogues"][4].update(date="2026-05-01"),
     "matches no task file's question"),  # card_q1 names S1 and S2: S2's date differs
    (lambda d: d["multi_session_dialogues"].pop(2), "lacks session 'D3' of its member task"),
])
def test_a_concat_file_that_does_not_match_the_task_files_is_named(tmp_path: Path, change,
                                                                   says: str) -> None:
    root = _release_copy(tmp_path)
    path = root / "dialog" / "concat_demo_card.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=says) as err:
        _combined(root, "release")
    assert "concat_demo_card.json" in str(err.value)


def test_release_grouping_mistakes_fail_before_loading(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such concat file"):
        _combined(FIXTURE, "release:concat_nothing")
    with pytest.raises(ConfigError, match="release:<stem>"):
        _combined(FIXTURE, "release:a+")
    with pytest.raises(ConfigError, match="not from episode ids"):
        partition(IDS, "release", 0)
    root = _release_copy(tmp_path)
    (root / "dialog" / "concat_demo_card.json").unlink()
    with pytest.raises(ConfigError, match=r"no concat_\*\.json"):
        _combined(root, "release")
