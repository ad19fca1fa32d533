"""Rule scoring of game answers (design 0032, "Scoring and report"): every row of the
reference's verified-flaw table gets the right verdict, and each type's edge cases."""

from __future__ import annotations

from typing import Any

import pytest

from memgauge.schema import AnswerType, Question
from memgauge.scoring import TypedRuleScorer
from memgauge.scoring._game_rules import CRAFTER_ACTIONS

RULE = TypedRuleScorer()


def gq(answer: Any, answer_type: str, *, text: str = "What was it?", env: str = "crafter",
       alternatives: list[Any] | None = None, tolerance: float | None = None) -> Question:
    return Question(question_id="g1", text=text, answer=answer, answer_type=answer_type,
                    ability="single_hop",
                    meta={"game": {"env": env, "template": "t", "alternatives": alternatives or [],
                                   "tolerance": tolerance, "answerable": True}})


def verdict(question: Question, prediction: str) -> float:
    score = RULE.score(question, prediction)
    assert score is not None
    return score.value


# The reference's verified scoring table (emembench-repo §5.4), with the verdict it should
# have had. Its ANLS gave MOVE_RIGHT 0.6 for MOVE_LEFT and truncated 9.6 to 9.
FLAW_TABLE = [
    (gq("yes", "yes_no"), "Yes.", 1.0),
    (gq("yes", "yes_no"), "no", 0.0),
    (gq("MOVE_LEFT", "action"), "MOVE_RIGHT", 0.0),
    (gq("MOVE_LEFT", "action"), "move left", 1.0),
    (gq("3 steps right", "path"), "3 steps left", 0.0),
    (gq("before", "string"), "after", 0.0),
    (gq("12", "integer"), "Step 12", 1.0),
    (gq("9", "integer"), "9.6", 0.0),
    (gq("0.5", "number", tolerance=0.01), "0.5", 1.0),
    (gq("2 steps down, 6 steps right", "path",
        alternatives=["6 steps right, 2 steps down", "1 step down, 6 steps right, 1 step down"]),
     "6 steps right and 2 steps down", 1.0),
    (gq("down-left", "direction", alternatives=["left"]), "left", 1.0),
    (gq("wood: 2, sapling: 1", "set"), "sapling: 1, wood: 2", 1.0),
    (gq("1, 5, 9", "list"), "1, 5", 0.0),
    (gq("not answerable", "refusal"), "Not answerable.", 1.0),
    (gq("5", "integer"), "not answerable", 0.0),
]


@pytest.mark.parametrize(("question", "prediction", "expected"), FLAW_TABLE,
                         ids=[f"{q.answer}|{p}" for q, p, _ in FLAW_TABLE])
def test_the_reference_flaw_table_gets_the_right_verdict(question: Question, prediction: str,
                                                         expected: float) -> None:
    assert verdict(question, prediction) == expected


def test_a_categorical_miss_gets_no_partial_credit() -> None:
    for q, p in ((gq("move_left", "action"), "move_right"),
                 (gq("kitchen", "string", env="textworld"), "kitchenette"),
                 (gq("3 steps right", "path"), "3 steps left")):
        score = RULE.score(q, p)
        assert score is not None and score.value == 0.0 and "f1" not in score.details


# --- integers and numbers ----------------------------------------------------------------

def test_integers_are_exact_and_read_from_a_sentence() -> None:
    q = gq("12", "integer")
    assert verdict(q, "12") == 1.0
    assert verdict(q, "12.0") == 1.0
    assert verdict(q, "twelve") == 1.0
    assert verdict(q, "11.6") == 0.0
    assert verdict(q, "It was step 12.") == 1.0
    assert verdict(q, "I don't see a number") == 0.0


def test_numbers_the_question_states_are_set_aside() -> None:
    q = gq("3", "integer", text="How many wood did you have after your action at step 12?")
    score = RULE.score(q, "At step 12 I had 3 wood.")
    assert score is not None and score.value == 1.0
    assert score.details["set_aside"] == ["12"] and score.details["parsed"] == "3"
    assert verdict(q, "I had 3 wood at step 12") == 1.0
    # the answer may equal a stated number: with nothing else left it is kept
    q12 = gq("12", "integer", text="At which step, up to step 12, did wood rise first?")
    assert verdict(q12, "At step 12.") == 1.0


def test_several_different_numbers_commit_to_the_last() -> None:
    q = gq("4", "integer")
    assert verdict(q, "First I thought 3, but it is 4") == 1.0
    assert verdict(q, "4, or maybe 3") == 0.0


def test_numbers_within_tolerance() -> None:
    q = gq("2.5", "number", tolerance=0.1)
    assert verdict(q, "about 2.55") == 1.0
    assert verdict(q, "2.7") == 0.0
    exact = gq("2.5", "number")
    assert verdict(exact, "2.50") == 1.0 and verdict(exact, "2.55") == 0.0


# --- strings -----------------------------------------------------------------------------

def test_strings_are_canonical_and_accept_alternatives() -> None:
    q = gq("wood_pickaxe", "string", alternatives=["wooden pickaxe"])
    assert verdict(q, "Wood Pickaxe.") == 1.0
    assert verdict(q, "the wood pickaxe") == 1.0
    assert verdict(q, "a wooden pickaxe") == 1.0
    assert verdict(q, "stone pickaxe") == 0.0


def test_a_string_is_named_only_as_a_whole_name() -> None:
    room = gq("kitchen", "string", env="textworld")
    assert verdict(room, "I was in the Kitchen.") == 1.0
    assert verdict(room, "the kitchen, I think") == 1.0
    wood = gq("wood", "string")
    assert verdict(wood, "wood pickaxe") == 0.0
    assert verdict(gq("pickaxe", "string"), "wood pickaxe") == 0.0


# --- actions -----------------------------------------------------------------------------

def test_crafter_actions_are_direction_aware() -> None:
    q = gq("move_left", "action")
    for said in ("move_left", "move left", "MOVE_LEFT", "Move-Left", "left", "I moved left.",
                 "West", "move west"):
        assert verdict(q, said) == 1.0, said
    for said in ("move_right", "MOVE_RIGHT", "right", "I moved right.", "do"):
        assert verdict(q, said) == 0.0, said


def test_noop_spellings() -> None:
    assert verdict(gq("noop", "action"), "No-op.") == 1.0
    assert verdict(gq("noop", "action"), "NOOP") == 1.0
    assert verdict(gq("noop", "action"), "do") == 0.0


def test_naming_two_actions_is_ambiguous() -> None:
    score = RULE.score(gq("move_left", "action"), "move_left or move_right")
    assert score is not None and score.value == 0.0
    assert score.details["ambiguous"] == ["move_left", "move_right"]


def test_crafter_multiword_actions() -> None:
    assert verdict(gq("place_table", "action"), "place table") == 1.0
    assert verdict(gq("place_table", "action"), "place furnace") == 0.0
    assert verdict(gq("make_wood_pickaxe", "action"), "I made... make wood pickaxe") == 1.0
    assert verdict(gq("make_wood_pickaxe", "action"), "make stone pickaxe") == 0.0


def test_crafter_action_names_are_crafters_own() -> None:
    constants = pytest.importorskip("crafter.constants")
    assert tuple(constants.actions) == CRAFTER_ACTIONS


def test_text_game_actions_expand_directions() -> None:
    q = gq("go north", "action", env="textworld")
    assert verdict(q, "north") == 1.0
    assert verdict(q, "n") == 1.0
    assert verdict(q, "Go North.") == 1.0
    assert verdict(q, "go south") == 0.0
    take = gq("take key", "action", env="jericho")
    assert verdict(take, "Take the key") == 1.0
    assert verdict(take, "take lamp") == 0.0


# --- directions --------------------------------------------------------------------------

def test_crafter_directions_and_compass_names() -> None:
    q = gq("left", "direction")
    assert verdict(q, "left") == 1.0 and verdict(q, "West.") == 1.0
    assert verdict(q, "right") == 0.0 and verdict(q, "east") == 0.0
    assert verdict(q, "3 steps left") == 1.0
    diag = gq("down-left", "direction")
    for said in ("down-left", "left and down", "south-west", "southwest", "Down Left"):
        assert verdict(diag, said) == 1.0, said
    assert verdict(diag, "down") == 0.0
    assert verdict(gq("here", "direction"), "Here") == 1.0


def test_opposite_directions_are_ambiguous() -> None:
    score = RULE.score(gq("left", "direction"), "left or right")
    assert score is not None and score.value == 0.0 and score.details["ambiguous"]


def test_text_game_directions() -> None:
    q = gq("north", "direction", env="textworld")
    assert verdict(q, "N") == 1.0 and verdict(q, "You go north.") == 1.0
    assert verdict(q, "south") == 0.0 and verdict(q, "north or south") == 0.0
    ne = gq("northeast", "direction", env="jericho")
    assert verdict(ne, "north-east") == 1.0 and verdict(ne, "NE") == 1.0
    assert verdict(ne, "north") == 0.0
    # in a text game "up" is a direction of its own, not north
    assert verdict(gq("up", "direction", env="textworld"), "north") == 0.0


# --- lists and sets ----------------------------------------------------------------------

def test_lists_are_ordered() -> None:
    q = gq("kitchen, hallway, garden", "list", env="textworld")
    assert verdict(q, "Kitchen -> hallway -> garden") == 1.0
    assert verdict(q, "kitchen, then hallway and then the garden.") == 1.0
    assert verdict(q, "hallway, kitchen, garden") == 0.0
    assert verdict(q, "kitchen, hallway") == 0.0


def test_a_list_answer_given_as_a_list_is_one_answer() -> None:
    q = gq(["move_left", "do"], "list")
    assert verdict(q, "MOVE_LEFT, DO") == 1.0
    assert verdict(q, "move_left") == 0.0


def test_sets_ignore_order_and_read_counts() -> None:
    q = gq("wood: 2, sapling: 1", "set")
    for said in ("1 sapling and 2 wood", "sapling: 1, wood: 2", "I had 2 wood and 1 sapling.",
                 "wood x2, sapling x1", "two wood and one sapling", "2 wood, 1 saplings"):
        assert verdict(q, said) == 1.0, said
    for said in ("2 wood", "1 wood and 2 sapling", "2 wood, 1 sapling, 1 stone"):
        assert verdict(q, said) == 0.0, said


def test_a_set_without_counts_accepts_any_count() -> None:
    q = gq(["wood", "stone"], "set")
    assert verdict(q, "stone and wood") == 1.0
    assert verdict(q, "3 stone, 1 wood") == 1.0
    assert verdict(q, "stone") == 0.0


@pytest.mark.parametrize("said", ["nothing", "None.", "empty", "It was empty", "no items"])
def test_an_empty_set(said: str) -> None:
    assert verdict(gq("[]", "set"), said) == 1.0
    assert verdict(gq("nothing", "set"), said) == 1.0
    assert verdict(gq("wood: 1", "set"), said) == 0.0


def test_an_empty_reply_is_not_the_empty_set() -> None:
    assert verdict(gq("[]", "set"), "") == 0.0


# --- paths -------------------------------------------------------------------------------

@pytest.mark.parametrize("said", ["2 left, 3 up", "left left up up up",
                                  "move_left ×2 then move_up ×3", "2 steps west and 3 north",
                                  "Move left twice, then up 3 times", "two left, three up"])
def test_path_forms_expand_to_the_same_moves(said: str) -> None:
    assert verdict(gq("2 left, 3 up", "path"), said) == 1.0


def test_paths_match_the_answer_or_an_alternative_only() -> None:
    q = gq("2 left, 3 up", "path", alternatives=["3 up, 2 left"])
    assert verdict(q, "up up up left left") == 1.0
    assert verdict(q, "left up left up up") == 0.0  # not among the shortest paths given
    assert verdict(q, "2 right, 3 up") == 0.0
    assert verdict(q, "2 left, 2 up") == 0.0


def test_an_empty_path() -> None:
    assert verdict(gq("0", "path"), "here") == 1.0
    assert verdict(gq("0", "path"), "1 step left") == 0.0


def test_text_game_paths() -> None:
    q = gq("north, north, east", "path", env="textworld")
    assert verdict(q, "n, n, e") == 1.0
    assert verdict(q, "north twice then east") == 1.0
    assert verdict(q, "north, east, north") == 0.0


# --- refusals ----------------------------------------------------------------------------

@pytest.mark.parametrize("said", ["not answerable", "Not answerable.", "NOT ANSWERABLE!",
                                  "Not_answerable", "not-answerable", "It is not answerable."])
def test_not_answerable_is_canonical(said: str) -> None:
    assert verdict(gq("not answerable", AnswerType.REFUSAL), said) == 1.0


def test_refusing_an_answerable_game_question_is_wrong_and_flagged() -> None:
    score = RULE.score(gq("wood: 1", "set"), "Not answerable.")
    assert score is not None and score.value == 0.0 and score.details["refused"] is True


def test_a_missing_prediction_is_not_scored() -> None:
    assert RULE.score(gq("move_left", "action"), None) is None


# --- records keep what rescoring needs -----------------------------------------------------

def test_a_record_keeps_the_game_meta_and_rescoring_from_it_agrees() -> None:
    from memgauge.runner._execute import make_record
    from memgauge.schema import BenchmarkInfo, Episode, Response, Session, Turn
    from memgauge.scoring._judge_run import question_of

    # within tolerance only: without the game meta the reply would be scored wrong
    question = gq("2.5", "number", tolerance=0.1)
    episode = Episode(episode_id="e1", benchmark=BenchmarkInfo(name="games"), questions=[question],
                      sessions=[Session(session_id="s1",
                                        turns=[Turn(turn_id="t1", role="user", text="step 1")])])
    record = make_record(episode, question, Response(text="about 2.55"), [RULE], {}, missing=[])
    assert record.meta["game"] == question.meta["game"]
    assert record.scores["rule"] == 1.0
    rescored = RULE.score(question_of(record), record.prediction)
    assert rescored is not None and rescored.value == 1.0


def test_a_set_of_steps_reads_every_number_stated() -> None:
    q = gq(["12", "30", "45"], "set", text="At which steps did you drink, up to step 50?")
    assert verdict(q, "45, 12, 30") == 1.0
    assert verdict(q, "At steps 12, 30 and 45.") == 1.0
    assert verdict(q, "12 and 30") == 0.0
    assert verdict(q, "12, 30, 45, 50") == 0.0


def test_text_game_sets_and_lists_expand_directions() -> None:
    q = gq(["go north", "take key"], "set", env="textworld")
    assert verdict(q, "take the key and n") == 1.0
    assert verdict(q, "take key, go south") == 0.0
    assert verdict(gq(["n", "e"], "list", env="textworld"), "north, then east") == 1.0


def test_an_empty_list() -> None:
    q = gq("none", "list", env="textworld")
    assert verdict(q, "nothing") == 1.0 and verdict(q, "None.") == 1.0
    assert verdict(q, "kitchen") == 0.0 and verdict(q, "") == 0.0


def test_replies_in_a_sentence_around_an_empty_answer() -> None:
    for kind in ("set", "list"):
        q = gq("none", kind, env="textworld", alternatives=["nothing"])
        assert verdict(q, "The answer is none.") == 1.0, kind
        assert verdict(q, "Answer: nothing") == 1.0, kind


def test_a_step_index_in_a_path_reply_is_not_a_count() -> None:
    q = gq("3 right", "path", text="After your action at step 139, how do you reach the table?")
    assert verdict(q, "At step 139, move right three times.") == 1.0
    assert verdict(q, "Go 3 steps to the right") == 1.0
    assert verdict(q, "From step 139: right, right, right") == 1.0
    assert verdict(q, "I saw 3 zombies, then went right") == 0.0  # 3 counts zombies


def test_extract_then_match_scores_game_answers() -> None:
    import asyncio

    from memgauge.models.scripted import ScriptedModel
    from memgauge.scoring._extract import _FORMS, ExtractMatchScorer

    assert set(_FORMS) == set(AnswerType)  # every type can be asked for in its form
    model = ScriptedModel(fn=lambda messages, qid: '{"answer": "MOVE_LEFT"}')
    scorer = ExtractMatchScorer(model)
    got = asyncio.run(scorer.score_async(gq("move_left", "action"), "I think I went left."))
    assert getattr(got, "value", None) == 1.0
    wrong = asyncio.run(scorer.score_async(gq("move_right", "action"), "I went left."))
    assert getattr(wrong, "value", None) == 0.0


def test_a_name_is_read_clause_by_clause() -> None:
    room = gq("kitchen", "string", env="textworld")
    assert verdict(room, "Kitchen, I believe.") == 1.0
    assert verdict(room, "I think it was the kitchen; not sure") == 1.0
    assert verdict(room, "kitchen garden") == 0.0
    cmd = gq("take key", "action", env="textworld")
    assert verdict(cmd, "I chose take key.") == 1.0
    assert verdict(cmd, "The command was: take key") == 1.0
    assert verdict(cmd, "take key from box") == 0.0
    assert verdict(cmd, "take key and then open door") == 0.0


def test_every_generated_answer_scores_right_and_no_other_answer_does(tmp_path) -> None:
    """Through play, generate and the games loader: every gold value and alternative of a
    played Crafter trajectory, bare and in a sentence, scores 1; the gold of every other
    question of the same template that differs scores 0."""
    pytest.importorskip("crafter")
    from typer.testing import CliRunner

    from memgauge.benchmarks import BenchmarkOptions
    from memgauge.cli import app
    from memgauge.registry import lookup
    from memgauge.scoring._game_rules import gold_values

    runner = CliRunner()
    traj, bench = tmp_path / "traj", tmp_path / "bench"
    for args in (["play", "crafter", "--player", "scripted", "--seed", "3", "--steps", "150",
                  "--noise", "0.2", "--out", str(traj)],
                 ["generate", "games", str(traj), "--out", str(bench)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    loaded = lookup("benchmark", "games")(BenchmarkOptions(data=str(bench)))
    questions = [q for ep in loaded.episodes() for q in ep.questions]
    assert {q.answer_type for q in questions} >= {AnswerType.INTEGER, AnswerType.ACTION,
                                                  AnswerType.STRING, AnswerType.SET}

    def said(value: Any) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{n} {k}" for k, n in value.items())
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value)

    by_template: dict[str, list[Question]] = {}
    for q in questions:
        if q.answer_type == AnswerType.REFUSAL:
            assert verdict(q, "Not answerable.") == 1.0
            continue
        by_template.setdefault(q.meta["game"]["template"], []).append(q)
        for gold in map(said, gold_values(q)):
            for reply in (gold, f"The answer is {gold}.", f"**{gold}**"):
                assert verdict(q, reply) == 1.0, (q.meta["game"]["template"], reply)
    for group in by_template.values():
        for q in group:
            mine = {said(g) for g in gold_values(q)}
            for other in group:
                for gold in map(said, gold_values(other)):
                    if gold not in mine:
                        assert verdict(q, gold) == 0.0, (q.meta["game"]["template"], gold)
