"""Cross-episode questions (design 0032): several trajectories of one game kind as games
played one after another, answers computed across them and checked by hand."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from memgauge.benchmarks._base import BenchmarkOptions
from memgauge.benchmarks.games import GamesBenchmark, answer_text
from memgauge.cli import app
from memgauge.errors import InputError
from memgauge.games.templates import NOT_ANSWERABLE, all_templates
from memgauge.games.templates._crafter_timeline import CrafterTimeline
from memgauge.games.templates._life import Life
from memgauge.games.templates._text_timeline import TextTimeline

from .crafter_fixtures import tiny
from .text_fixtures import house


def _by_params(template_id: str, life: Life) -> dict[str, object]:
    fn = all_templates()[template_id].fn
    return {json.dumps(q.params, sort_keys=True): q for q in fn(life, random.Random(0))}


@pytest.fixture
def crafter_life() -> Life:
    meta, steps = tiny()  # game 1: wood 4 and 5, a table at 8, sleeps at 10, ends with no wood
    meta2, steps2 = tiny()
    return Life("life-crafter", "crafter", [("a", CrafterTimeline(meta, steps)),
                                            ("b", CrafterTimeline(meta2, steps2[:5]))])


def test_crafter_answers_across_games(crafter_life):
    most = _by_params("life.crafter_game_with_most", crafter_life)
    assert most['{"item": "wood"}'].answer == "game 2"  # game 1 ends with 0, game 2 with 2
    assert most['{"item": "wood"}'].evidence_refs == [("b", 5)]
    first = _by_params("life.crafter_first_game_with", crafter_life)
    assert first['{"event": "place_table"}'].answer == "game 1"
    assert first['{"event": "place_table"}'].evidence_refs == [("a", 8)]
    assert first['{"event": "collect_wood"}'].answer == "game 1"
    assert first['{"event": "place_furnace"}'].answer == NOT_ANSWERABLE
    assert not first['{"event": "place_furnace"}'].answerable
    total = _by_params("life.crafter_total_action_count", crafter_life)
    for key, q in total.items():
        action = json.loads(key)["action"]
        by_hand = {"do": 4, "move_up": 4, "move_right": 2, "place_table": 2, "move_down": 1,
                   "move_left": 2, "sleep": 1, "noop": 1}[action]
        assert q.answer == by_hand and len(q.evidence_refs) == by_hand
    for q in _by_params("life.crafter_games_with", crafter_life).values():
        event = q.params["event"]
        assert q.answer == {"collect_wood": 2, "place_table": 1, "sleep": 1, "drink": 0,
                            "eat": 0, "place_furnace": 0, "make_wood_pickaxe": 0,
                            "make_stone_pickaxe": 0, "collect_stone": 0}[event]


def test_text_answers_across_games():
    life = Life("life-text", "text", [("a", TextTimeline(*house())),
                                      ("b", TextTimeline(*house(cut=3)))])
    rooms = _by_params("life.text_game_of_room", life)
    answered = {q.params["room"]: q.answer for q in rooms.values() if q.answerable}
    assert answered and all(a == "game 1" for a in answered.values())  # game 2 saw no new room
    assert set(answered) <= {"Kitchen", "Hall", "Study"}
    unseen = [q for q in rooms.values() if not q.answerable]
    assert [q.params["room"] for q in unseen] in (["Cellar"], ["Pantry"])  # in the world only
    common = _by_params("life.text_rooms_in_every_game", life)["{}"]
    assert sorted(common.answer) == ["Hall", "Kitchen"]  # the Study only in game 1


def test_a_life_needs_two_games():
    with pytest.raises(ValueError, match="at least two"):
        Life("x", "crafter", [("a", CrafterTimeline(*tiny()))])


def test_generate_load_and_score_across_two_played_crafter_games(tmp_path):
    pytest.importorskip("crafter")
    runner = CliRunner()
    for seed in (1, 2):
        result = runner.invoke(app, ["play", "crafter", "--player", "scripted", "--steps", "30",
                                     "--seed", str(seed), "--out", str(tmp_path / f"c{seed}")])
        assert result.exit_code == 0, result.output
    bench = tmp_path / "bench"
    one = runner.invoke(app, ["generate", "games", str(tmp_path / "c1"), "--cross-episode",
                              "--out", str(bench)])
    assert one.exit_code == 2 and "at least two trajectories" in one.output
    result = runner.invoke(app, ["generate", "games", str(tmp_path / "c1"), str(tmp_path / "c2"),
                                 "--cross-episode", "--out", str(bench)])
    assert result.exit_code == 0, result.output
    info = json.loads((bench / "benchmark.json").read_text())
    assert info["lives"][0]["trajectories"] == ["c1", "c2"] and info["lives"][0]["steps"] == 60
    loaded = GamesBenchmark(BenchmarkOptions(data=str(bench)))
    life = next(ep for ep in loaded.episodes() if ep.episode_id == "life-crafter")
    starts = [t.text for s in life.sessions for t in s.turns if t.turn_id == "game-start"]
    assert starts == ["Game 1 of 2 begins (crafter).", "Game 2 of 2 begins (crafter)."]
    assert [s.session_id.split(":")[0] for s in life.sessions] == ["c1", "c1", "c2", "c2"]
    assert life.questions and all(q.asked_after == len(life.sessions) - 1
                                  for q in life.questions)
    rows = [json.loads(x) for x in (bench / "questions.jsonl").open()]
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"question_id": r["id"],
                                         "prediction": answer_text(r["answer"])}) + "\n"
                             for r in rows))
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "--bench", "games", "--data", str(bench), "--system",
                                 "full-context", "--model", f"replay:{preds}", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in (out / "records.jsonl").open()]
    life_records = [r for r in records if r["question_id"].startswith("life-")]
    assert life_records and all(r["scores"]["rule"] == 1 for r in records)
    # evidence of a cross-episode question points into the sessions of the right game
    evidence_games = {r["id"]: {tid for tid, _ in r.get("evidence", [])} for r in rows}
    for r in life_records:
        assert {p["session_id"].split(":")[0] for p in r.get("evidence", [])} == \
            evidence_games[r["question_id"]]
    # a cross-episode row whose evidence names a trajectory outside its life is refused
    bad = [dict(r) for r in rows]
    target = next(r for r in bad if r["trajectory"] == "life-crafter")
    target["evidence"] = [["nowhere", 1]]
    (bench / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bad))
    with pytest.raises(InputError, match="evidence"):
        GamesBenchmark(BenchmarkOptions(data=str(bench)))
