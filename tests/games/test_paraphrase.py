"""The paraphrase guard (issue 24): a paraphrase keeps every number and named entity and is
still a question of a length like the original's, else the original stays."""

from __future__ import annotations

import json

import pytest

from memgauge.games._generate import GamesConfig, generate_games
from memgauge.games._paraphrase import protected, why_rejected
from memgauge.models import ScriptedModel

from .gamebench_fixtures import Timeline, register_test_templates, write_trajectory

# Questions as the real templates word them, with their parameters.
PICKAXE = (("How many wood pickaxe did you have right after the first time you made a wood "
           "pickaxe?"), {"event": "make:wood_pickaxe", "item": "wood_pickaxe"})
HURT = ("At which step did a zombie or an arrow hurt you for the last time?", {})
KEYWORD = ("At how many steps did the game's reply to your action mention 'bench'?",
           {"keyword": "bench", "source": "observation"})
KEY = ("At which step did key join your inventory for the first time?",
       {"item": "key", "ordinal": "first"})
COUNT = (("From step 14 to step 39, at how many steps did you take the action move_up "
         "(whether or not it worked)?"), {"action": "move_up", "from_step": 14, "to_step": 39})
LIST = ("List every step after which you made a wood pickaxe.", {"event": "make:wood_pickaxe"})


@pytest.mark.parametrize(("original", "candidate", "why"), [
    (("What killed you?", {}), "A", "not a question"),
    (("What killed you?", {}), "A?", "1 words for a question of 3"),
    (("What killed you?", {}), ("What exactly was it that ended your life in the game, and "
                               "how did it happen to you?"), "words for a question of 3"),
    (PICKAXE, "How many pickaxes did you have right after you first made one?",
     "lost 'wood_pickaxe'"),
    (HURT, "At which step were you last hurt by an enemy?", "lost 'zombie', 'arrow'"),
    (KEY, "At which step did the monkey first join your inventory?", "lost 'key'"),
    (KEYWORD, "How many of the game's replies named a bench?", None),  # the quotes may go
    (KEYWORD, "How many of the game's replies named a seat?", "lost 'bench'"),
    (PICKAXE, ("Right after you first made a wood_pickaxe, how many wood pickaxe did you "
              "hold?"), None),  # either spelling of a name
    (HURT, "When did a zombie or an arrow last hurt you?", None),
    (COUNT, "From step 14 to step 39, how many times did you take the action move_up?",
     "lost '(whether or not it worked)'"),  # attempts became successes
    (COUNT, ("From step 14 to step 39 (whether or not it worked), how often did you take the "
            "action move_up?"), None),
    (LIST, "Which steps saw you make a wood pickaxe?", None),  # an instruction may become a
    (LIST, "Give every step at which you made a wood pickaxe", "not a sentence"),  # question
])
def test_a_paraphrase_keeps_every_name_and_stays_a_question(original, candidate, why):
    text, params = original
    got = why_rejected(text, candidate, params)
    if why is None:
        assert got is None
    else:
        assert got is not None and why in got


def test_names_inside_longer_names_and_apostrophes_are_not_entities():
    assert protected(*PICKAXE)[1] == ["wood_pickaxe"]  # "wood" is part of "wood pickaxe"
    assert protected("How many wood do you need for a wood pickaxe?", {})[1] == [
        "wood_pickaxe", "wood"]
    assert protected(*KEYWORD)[1] == ["bench"]  # not "s reply to your action mention "


def test_a_paraphraser_that_always_says_A_changes_no_question(tmp_path, monkeypatch):
    """Today's guard kept "A" for every question without a number or a name."""
    register_test_templates(monkeypatch)
    traj = write_trajectory(tmp_path / "traj-a")
    info = generate_games(GamesConfig(
        trajectories=[traj], out=tmp_path / "b", make_timeline=Timeline,
        paraphraser=ScriptedModel(fn=lambda messages, qid: "A")))["options"]["paraphrase"]
    assert info["guard_version"] == "2" and info["kept"] == 0
    rows = [json.loads(line) for line in (tmp_path / "b" / "questions.jsonl").open()]
    assert any(r["template"] == "test.last_step" for r in rows)  # no number, no name in it
    assert {r["paraphrase"]["status"] for r in rows} == {"rejected"}
    assert all(r["text"] == r["paraphrase"]["original"] for r in rows)
