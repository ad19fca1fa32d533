"""The Crafter timeline and templates (design 0032, "Crafter templates"): every template's
answer against one worked out by hand on the tiny trajectory of ``crafter_fixtures.tiny``
(its docstring has the world and every step), its unanswerable cases, the reference's
answer-key bugs, and properties over simulated trajectories cut at two horizons."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgauge.errors import InputError
from memgauge.games.templates import ABILITIES, NOT_ANSWERABLE, all_templates, templates_for
from memgauge.games.templates import crafter_events as ev
from memgauge.games.templates import crafter_patterns as pat
from memgauge.games.templates import crafter_recall as rec
from memgauge.games.templates import crafter_spatial as sp
from memgauge.games.templates._crafter_timeline import (
    ACHIEVEMENTS,
    ACTIONS,
    ITEMS,
    MATERIALS,
    MAX_PATHS,
    MOVES,
    PLACEMENTS,
    RECIPES,
    CrafterTimeline,
)

from .crafter_fixtures import grid, inventory, short, simulate, state, tiny

NA = NOT_ANSWERABLE


@pytest.fixture(scope="module")
def tl() -> CrafterTimeline:
    return CrafterTimeline(*tiny())


def answer(q):
    assert q is not None
    return q.answer


# -- every template against a hand-computed answer on tiny() (NA cases included) ----------

HAND = [
    (rec.ask_action_at_step, {"step": 6}, "place_table"),
    (rec.ask_vital_at_step, {"vital": "health", "step": 10}, 7),
    (rec.ask_vital_at_step, {"vital": "food", "step": 11}, 8),
    (rec.ask_inventory_at_step, {"item": "wood", "step": 5}, 2),
    (rec.ask_inventory_at_step, {"item": "wood", "step": 6}, 2),  # the failed table kept it
    (rec.ask_inventory_at_step, {"item": "wood", "step": 8}, 0),
    (rec.ask_terrain_under, {"step": 12}, "sand"),
    (rec.ask_terrain_under, {"step": 7}, "grass"),
    (rec.ask_action_occurrence, {"action": "move_left", "ordinal": "second"}, 12),
    (rec.ask_action_occurrence, {"action": "move_up", "ordinal": "last"}, 3),
    (rec.ask_action_occurrence, {"action": "move_up", "ordinal": "third"}, NA),
    (rec.ask_action_occurrence, {"action": "place_furnace", "ordinal": "first"}, NA),
    (rec.ask_terrain_occurrence, {"material": "sand", "ordinal": "first"}, 12),
    (rec.ask_terrain_occurrence, {"material": "grass", "ordinal": "second"}, 2),
    (rec.ask_terrain_occurrence, {"material": "sand", "ordinal": "second"}, NA),
    (rec.ask_terrain_occurrence, {"material": "path", "ordinal": "first"}, NA),
    (pat.ask_adjacent_count, {"material": "tree"}, 5),  # steps 2..6 at (3,1) below the tree
    (pat.ask_adjacent_count, {"material": "table"}, 1),  # step 8 only: known from step 8
    (pat.ask_adjacent_count, {"material": "water"}, 0),
    (pat.ask_longest_stay, {}, 4),  # steps 3..6 left the player at (3,1)
    (sp.ask_farthest_step, {"material": "water"}, 7),  # (3,2) is 5 from (0,0); 8 ties later
    (sp.ask_farthest_step, {"material": "tree"}, 12),
    (sp.ask_farthest_step, {"material": "coal"}, NA),
    (rec.ask_action_around_terrain,
     {"material": "sand", "ordinal": "first", "offset": 1, "direction": "before"}, "noop"),
    (rec.ask_action_around_terrain,
     {"material": "grass", "ordinal": "first", "offset": 2, "direction": "after"}, "move_up"),
    (rec.ask_action_around_terrain,  # step 13 is past the horizon
     {"material": "sand", "ordinal": "first", "offset": 1, "direction": "after"}, NA),
    (rec.ask_action_around_terrain,
     {"material": "path", "ordinal": "first", "offset": 1, "direction": "after"}, NA),
    (rec.ask_terrain_at_event, {"event": "place:table"}, "grass"),
    (rec.ask_terrain_at_event, {"event": "wake"}, "sand"),
    (rec.ask_terrain_at_event, {"event": "eat"}, NA),
    (rec.ask_first_increase_step, {"item": "wood"}, 4),
    (rec.ask_first_increase_step, {"item": "stone"}, NA),
    (rec.ask_achievement_first_step, {"achievement": "place_table"}, 8),
    (rec.ask_achievement_first_step, {"achievement": "wake_up"}, 12),
    (rec.ask_achievement_first_step, {"achievement": "eat_cow"}, NA),
    (rec.ask_action_around_occurrence,
     {"action": "do", "ordinal": "first", "offset": 2, "direction": "after"}, "place_table"),
    (rec.ask_action_around_occurrence,
     {"action": "sleep", "ordinal": "first", "offset": 3, "direction": "before"}, "move_down"),
    (rec.ask_action_around_occurrence,  # step 0 has no action
     {"action": "move_up", "ordinal": "first", "offset": 1, "direction": "before"}, NA),
    (rec.ask_action_around_occurrence,  # step 13 is past the horizon
     {"action": "move_left", "ordinal": "second", "offset": 1, "direction": "after"}, NA),
    (rec.ask_action_around_occurrence,
     {"action": "place_stone", "ordinal": "first", "offset": 1, "direction": "after"}, NA),
    (rec.ask_inventory_at_event, {"item": "wood", "event": "place:table"}, 0),
    (rec.ask_inventory_at_event, {"item": "wood", "event": "collect:wood"}, 1),
    (rec.ask_inventory_at_event, {"item": "wood", "event": "eat"}, NA),
    (rec.ask_count_change_since, {"item": "wood", "step": 5}, -2),
    (pat.ask_action_count, {"action": "move_left", "from_step": 1, "to_step": 12}, 2),
    (pat.ask_action_count, {"action": "place_table", "from_step": 1, "to_step": 7}, 1),
    (pat.ask_action_count, {"action": "move_up", "from_step": 2, "to_step": 3}, 1),
    (pat.ask_action_count, {"action": "place_stone", "from_step": 1, "to_step": 12}, 0),
    (pat.ask_longest_run, {"action": "do"}, 2),
    (pat.ask_longest_run, {"action": "move_left"}, 1),
    (pat.ask_collect_count, {"item": "wood"}, 2),
    (pat.ask_peak_step, {"item": "wood"}, 5),
    (pat.ask_peak_step, {"item": "coal"}, NA),
    (pat.ask_net_change, {"item": "wood", "from_step": 5, "to_step": 8}, -1),
    (pat.ask_net_change, {"item": "wood", "from_step": 4, "to_step": 4}, 1),
    (pat.ask_visible_count, {"material": "tree"}, 2),
    (pat.ask_visible_count, {"material": "water"}, 0),  # only at reset, before any step
    (pat.ask_distinct_cells, {"material": "stone"}, 3),
    (pat.ask_distinct_cells, {"material": "tree"}, 1),
    (sp.ask_displacement, {"from_step": 1, "to_step": 12}, "1 step left"),
    (sp.ask_displacement, {"from_step": 2, "to_step": 3}, "1 step right"),
    (sp.ask_displacement, {"from_step": 1, "to_step": 9}, "0 steps"),
    (sp.ask_displacement, {"from_step": 1, "to_step": 2}, "1 step right and 1 step up"),
    (sp.ask_path_length, {"from_step": 1, "to_step": 12}, 5),
    (sp.ask_path_length, {"from_step": 3, "to_step": 6}, 0),
    (sp.ask_nearest_direction, {"material": "water", "step": 2}, "up-left"),
    (sp.ask_nearest_direction, {"material": "stone", "step": 2}, NA),  # first seen at 3
    (sp.ask_nearest_direction, {"material": "stone", "step": 3}, "right"),
    (sp.ask_navigate, {"material": "table", "step": 7}, NA),
    (sp.ask_navigate, {"material": "table", "step": 9}, ["move_down"]),
    (sp.ask_terrain_at_offset, {"step": 2, "direction": "right", "distance": 2}, NA),
    (sp.ask_terrain_at_offset, {"step": 3, "direction": "right", "distance": 2}, "stone"),
    (sp.ask_terrain_at_offset, {"step": 7, "direction": "down", "distance": 1}, "grass"),
    (sp.ask_terrain_at_offset, {"step": 8, "direction": "down", "distance": 1}, "table"),
    (sp.ask_closest_step, {"material": "tree"}, 2),
    (sp.ask_closest_step, {"material": "stone"}, 3),
    (sp.ask_closest_step, {"material": "coal"}, NA),
    (sp.ask_terrain_dwell, {"material": "sand"}, 1),
    (sp.ask_terrain_dwell, {"material": "grass"}, 11),
    (sp.ask_terrain_dwell, {"material": "path"}, 0),
    (sp.ask_material_seen_by, {"material": "stone", "step": 2}, "no"),
    (sp.ask_material_seen_by, {"material": "stone", "step": 3}, "yes"),
    (sp.ask_material_seen_by, {"material": "water", "step": 1}, "yes"),
    (ev.ask_event_order, {"a": "collect:wood", "b": "place:table"}, "before"),
    (ev.ask_event_order, {"a": "sleep", "b": "place:table"}, "after"),
    (ev.ask_event_order, {"a": "place:furnace", "b": "sleep"}, NA),
    (ev.ask_event_interval, {"a": "place:table", "b": "sleep"}, 2),
    (ev.ask_event_interval, {"a": "place:table", "b": "eat"}, NA),
    (ev.ask_event_count_between,
     {"a": "collect:wood", "b": "wake", "condition": "health_drop"}, 1),
    (ev.ask_event_count_between, {"a": "place:table", "b": "wake", "condition": "food_low"}, 0),
    (ev.ask_event_count_between, {"a": "collect:wood", "b": "eat", "condition": "drink"}, NA),
    (ev.ask_vital_around_event,
     {"vital": "health", "event": "sleep", "offset": 1, "direction": "after"}, 7),
    (ev.ask_vital_around_event,
     {"vital": "food", "event": "sleep", "offset": 1, "direction": "after"}, 8),
    (ev.ask_vital_around_event,  # step 13 is past the horizon
     {"vital": "health", "event": "wake", "offset": 1, "direction": "after"}, NA),
    (ev.ask_vital_around_event,
     {"vital": "food", "event": "eat", "offset": 1, "direction": "after"}, NA),
    (ev.ask_vital_around_event,
     {"vital": "food", "event": "wake", "offset": 1, "direction": "before"}, 8),
    (ev.ask_vital_around_event,
     {"vital": "drink", "event": "wake", "offset": 1, "direction": "before"}, 9),
    (ev.ask_vital_around_event,
     {"vital": "health", "event": "sleep", "offset": 1, "direction": "before"}, 9),
    (ev.ask_vital_around_event,
     {"vital": "food", "event": "eat", "offset": 2, "direction": "before"}, NA),
    (ev.ask_count_now, {"item": "wood"}, 0),
    (ev.ask_successful_placements, {"what": "table", "to_step": 7}, 0),
    (ev.ask_successful_placements, {"what": "table", "to_step": 8}, 1),
    (ev.ask_successful_placements, {"what": "furnace", "to_step": 12}, 0),
    (ev.ask_place_feasible, {"what": "table", "step": 5}, "no"),  # faces the tree
    (ev.ask_place_feasible, {"what": "table", "step": 7}, "yes"),  # 2 wood, faces grass
    (ev.ask_place_feasible, {"what": "table", "step": 9}, "no"),  # no wood left
    (ev.ask_place_feasible, {"what": "stone", "step": 7}, "no"),
    (ev.ask_inventory_contents, {"step": 5}, ["wood: 2"]),
    (ev.ask_damage_count, {}, 1),
    (ev.ask_attack_step, {"ordinal": "first"}, 10),
    (ev.ask_attack_step, {"ordinal": "last"}, 10),
    (ev.ask_event_steps, {"event": "collect:wood"}, [4, 5]),
    (ev.ask_event_steps, {"event": "place:table"}, [8]),
    (ev.ask_event_steps, {"event": "sleep"}, [10]),
    (ev.ask_event_steps, {"event": "wake"}, [12]),
    (ev.ask_event_steps, {"event": "drink"}, NA),
    (ev.ask_first_sighting, {"material": "stone"}, 3),
    (ev.ask_first_sighting, {"material": "table"}, 8),
    (ev.ask_first_sighting, {"material": "coal"}, NA),
    (ev.ask_first_creature, {"creature": "zombie"}, 10),
    (ev.ask_first_creature, {"creature": "skeleton"}, NA),
    (ev.ask_unused_move, {"action": "move_down"}, 7),
]


@pytest.mark.parametrize(("ask", "params", "expected"), HAND,
                         ids=[f"{a.__name__}-{i}" for i, (a, _, _) in enumerate(HAND)])
def test_answer_by_hand(tl, ask, params, expected):
    q = ask(tl, **params)
    assert q.answer == expected
    assert q.answerable == (expected != NA)
    assert q.ability == all_templates()[q.template].ability
    assert q.horizon == (1, 12)
    assert set(q.evidence_steps) <= set(range(1, 13))


def test_hand_table_covers_every_template():
    asked = {ask(CrafterTimeline(*tiny()), **params).template for ask, params, _ in HAND}
    asked |= {"crafter.most_common_move", "crafter.navigate", "crafter.craft_feasible",
              "crafter.death_cause"}  # tested below, on their own trajectories
    assert asked == {t.id for t in templates_for("crafter")}


def test_seven_abilities_and_the_four_contract_ids():
    ts = {t.id: t for t in templates_for("crafter")}
    assert {t.ability for t in ts.values()} == set(ABILITIES)
    assert ts["crafter.inventory_at_step"].answer_type == "integer"
    q = rec.ask_inventory_at_step(CrafterTimeline(*tiny()), "wood", 5)
    assert q.params == {"item": "wood", "step": 5}
    assert rec.ask_first_increase_step(CrafterTimeline(*tiny()), "wood").params == {"item": "wood"}
    q = pat.ask_action_count(CrafterTimeline(*tiny()), "do", 1, 12)
    assert q.params == {"action": "do", "from_step": 1, "to_step": 12}
    q = ev.ask_successful_placements(CrafterTimeline(*tiny()), "table", 12)
    assert q.params == {"what": "table", "to_step": 12}


def test_ties_are_alternatives(tl):
    q = sp.ask_nearest_direction(tl, "stone", 3)  # (5,1) right and (4,0) up-right, both 2
    assert (q.answer, q.alternatives) == ("right", ["up-right"])
    q = sp.ask_navigate(tl, "table", 9)  # below or right of (2,2), both one move
    assert (q.answer, q.alternatives) == (["move_down"], [["move_right"]])


def test_map_evidence_is_the_steps_that_showed_the_cells(tl):
    assert sp.ask_nearest_direction(tl, "stone", 3).evidence_steps == [3]
    assert sp.ask_nearest_direction(tl, "stone", 7).evidence_steps == [3, 7]
    assert sp.ask_terrain_at_offset(tl, 8, "down", 1).evidence_steps == [8]  # the new table
    assert sp.ask_terrain_at_offset(tl, 7, "down", 1).evidence_steps == [7]  # seen at reset
    assert sp.ask_navigate(tl, "table", 9).evidence_steps == [8, 9]


def test_most_common_move_ties_and_no_moves(tl):
    q = pat.ask_most_common_move(tl)  # move_up 1,3 and move_left 9,12; right 2, down 7
    assert (q.answer, q.alternatives) == ("move_left", ["move_up"])
    still = CrafterTimeline(*short(state((0, 0), (0, 1), inventory(), seen=grid(["gg"])),
                                   ("noop", state((0, 0), (0, 1), inventory())),
                                   ("do", state((0, 0), (0, 1), inventory()))))
    assert pat.ask_most_common_move(still).answer == NA
    assert ev.ask_unused_move(still, "move_left").answer == NA


# -- navigation: lava, unseen cells, every shortest path, the cap ----------------------------

def brute_force_paths(tl: CrafterTimeline, material: str, t: int, longest: int = 8):
    """Every move sequence, shortest first, that walks only known grass/sand/path cells and
    ends on (walkable) or next to (others) a known cell of the material."""
    known = tl.map_at(t)
    targets = {c for c, m in known.items() if m == material}
    for length in range(1, longest + 1):
        found = []
        for moves in itertools.product(sorted(MOVES), repeat=length):
            x, y = tl.pos[t]
            ok = True
            for m in moves:
                x, y = x + MOVES[m][0], y + MOVES[m][1]
                if known.get((x, y)) not in ("grass", "sand", "path"):
                    ok = False
                    break
            if not ok:
                continue
            near = {(x, y)} if material in ("grass", "sand", "path") else {
                (x + dx, y + dy) for dx, dy in MOVES.values()}
            if near & targets:
                found.append(list(moves))
        if found:
            return sorted(found)
    return None


def test_navigation_matches_brute_force(tl):
    for material, step in [("sand", 3), ("lava", 3), ("water", 9), ("stone", 12)]:
        q = sp.ask_navigate(tl, material, step)
        assert sorted([q.answer, *q.alternatives]) == brute_force_paths(tl, material, step)
    q = sp.ask_navigate(tl, "sand", 3)
    assert len([q.answer, *q.alternatives]) == 3  # LLD, LDL, DLL from (3,1) to (1,2)


def test_navigation_never_through_lava_or_unseen_cells():
    corridor = grid(["gLgs",
                     "gggg"])
    meta, steps = short(state((0, 0), (1, 0), inventory(), seen=corridor),
                        ("noop", state((0, 0), (1, 0), inventory())))
    q = sp.ask_navigate(CrafterTimeline(meta, steps), "sand", 1)
    assert q.answer == ["move_down", "move_right", "move_right", "move_right", "move_up"]
    assert all(p[0] != "move_right" for p in [q.answer, *q.alternatives])
    # the same sand behind cells never seen: no known route, so not answerable
    meta, steps = short(state((0, 0), (1, 0), inventory(), seen=grid(["gLgs", "g???"])),
                        ("noop", state((0, 0), (1, 0), inventory())))
    assert sp.ask_navigate(CrafterTimeline(meta, steps), "sand", 1).answer == NA


def test_navigation_skips_more_than_the_cap():
    field = grid(["g" * 7] * 6 + ["g" * 6 + "s"])  # 6 right and 6 down: C(12, 6) = 924 paths
    meta, steps = short(state((0, 0), (1, 0), inventory(), seen=field),
                        ("noop", state((0, 0), (1, 0), inventory())))
    timeline = CrafterTimeline(meta, steps)
    assert timeline.route_length("sand", 1) == 12
    assert timeline.shortest_paths("sand", 1) is None and MAX_PATHS == 50
    assert sp.ask_navigate(timeline, "sand", 1) is None
    small = grid(["ggg", "ggs"])  # 2 right and 1 down: 3 paths
    meta, steps = short(state((0, 0), (1, 0), inventory(), seen=small),
                        ("noop", state((0, 0), (1, 0), inventory())))
    assert len(CrafterTimeline(meta, steps).shortest_paths("sand", 1)) == 3


# -- feasibility and death, on their own small trajectories --------------------------------

def one_step(after: dict, seen_rows: list[str], end: str = "step_cap") -> CrafterTimeline:
    initial = state((1, 1), (0, 1), inventory(), seen=grid(seen_rows))
    return CrafterTimeline(*short(initial, ("noop", after), end=end))


@pytest.mark.parametrize(("tool", "inv", "pos", "rows", "expected"), [
    ("wood_pickaxe", {"wood": 1}, (0, 0), ["ggg", "ggg", "ggT"], "no"),  # two cells away
    ("wood_pickaxe", {"wood": 1}, (1, 1), ["Tgg", "ggg", "ggg"], "yes"),  # diagonal: 3×3
    ("wood_pickaxe", {"wood": 0}, (1, 1), ["Tgg", "ggg", "ggg"], "no"),
    ("stone_sword", {"wood": 1, "stone": 1}, (1, 1), ["gTg", "ggg", "ggg"], "yes"),
    ("stone_sword", {"wood": 1}, (1, 1), ["gTg", "ggg", "ggg"], "no"),
    ("iron_pickaxe", {"wood": 1, "coal": 1, "iron": 1}, (1, 1), ["gTg", "ggg", "ggg"], "no"),
    ("iron_pickaxe", {"wood": 1, "coal": 1, "iron": 1}, (1, 1), ["gTg", "ggg", "gFg"], "yes"),
])
def test_craft_feasible(tool, inv, pos, rows, expected):
    timeline = one_step(state(pos, (0, 1), inventory(**inv)), rows)
    assert ev.ask_craft_feasible(timeline, tool, 1).answer == expected


def test_place_feasible_needs_a_free_cell():
    free = one_step(state((1, 1), (0, 1), inventory(wood=2)), ["ggg", "ggg", "ggg"])
    assert ev.ask_place_feasible(free, "table", 1).answer == "yes"
    cow = one_step(state((1, 1), (0, 1), inventory(wood=2),
                         creatures=[{"kind": "cow", "pos": [1, 2]}]), ["ggg", "ggg", "ggg"])
    assert ev.ask_place_feasible(cow, "table", 1).answer == "no"
    water = one_step(state((1, 1), (0, 1), inventory(stone=1)), ["ggg", "ggg", "gwg"])
    assert ev.ask_place_feasible(water, "stone", 1).answer == "yes"
    assert ev.ask_place_feasible(water, "table", 1).answer == "no"


@pytest.mark.parametrize(("after", "rows", "cause"), [
    (state((1, 1), (0, 1), inventory(health=0),
           creatures=[{"kind": "zombie", "pos": [2, 1]}]), ["ggg", "ggg"], "zombie"),
    (state((1, 1), (0, 1), inventory(health=0),
           creatures=[{"kind": "arrow", "pos": [1, 0]}]), ["ggg", "ggg"], "arrow"),
    (state((1, 1), (0, 1), inventory(health=0)), ["ggg", "gLg"], "lava"),
    (state((1, 1), (0, 1), inventory(health=0, food=0)), ["ggg", "ggg"], "starvation"),
    (state((1, 1), (0, 1), inventory(health=0, drink=0)), ["ggg", "ggg"], "dehydration"),
])
def test_death_cause(after, rows, cause):
    assert ev.ask_death_cause(one_step(after, rows, end="death")).answer == cause


def test_an_arrow_hits_where_the_player_moved_to():
    """Seen in a random Crafter run: the player stepped next to an arrow and died; the arrow
    is gone from the state after the step."""
    initial = state((3, 0), (-1, 0), inventory(health=1),
                    creatures=[{"kind": "arrow", "pos": [1, 0]}], seen=grid(["gggg"]))
    meta, steps = short(initial, ("move_left", state((2, 0), (-1, 0), inventory(health=0))),
                        end="death")
    assert ev.ask_death_cause(CrafterTimeline(meta, steps)).answer == "arrow"


def test_death_cause_unknown_is_skipped_not_guessed():
    timeline = one_step(state((1, 1), (0, 1), inventory(health=0)), ["ggg", "ggg"],
                        end="death")
    assert ev.ask_death_cause(timeline) is None


# -- the reference's answer-key bugs, one test each ----------------------------------------

def test_bug_terrain_names_are_crafters_own():
    """EMemBench decoded map digits 6–9 wrongly (lava as coal...). Names come from the log."""
    rows = ["gLci", "gdgg"]
    timeline = one_step(state((0, 1), (0, 1), inventory()), rows)
    assert sp.ask_terrain_at_offset(timeline, 1, "right", 1).answer == "diamond"
    timeline = one_step(state((0, 0), (1, 0), inventory()), rows)
    assert [sp.ask_terrain_at_offset(timeline, 1, "right", k).answer for k in (1, 2, 3)] == \
        ["lava", "coal", "iron"]


def test_vocabulary_is_crafters_data_yaml():
    crafter = pytest.importorskip("crafter")
    import pathlib

    import ruamel.yaml

    data = ruamel.yaml.YAML(typ="safe").load(
        (pathlib.Path(crafter.__file__).parent / "data.yaml").read_text())
    assert list(ACTIONS) == data["actions"]
    assert list(MATERIALS) == data["materials"]
    assert sorted(ACHIEVEMENTS) == sorted(data["achievements"])
    assert set(ITEMS) | {"health", "food", "drink", "energy"} == set(data["items"])
    assert {k: (dict(v["uses"]), tuple(v["nearby"])) for k, v in data["make"].items()} == RECIPES
    assert {k: (dict(v["uses"]), tuple(v["where"])) for k, v in data["place"].items()} == \
        PLACEMENTS
    assert set(data["walkable"]) == {"grass", "sand", "path"}


def test_bug_global_map_peeking(tl):
    """Map answers at step t use only cells seen by t: stone is first seen at step 3."""
    assert sp.ask_nearest_direction(tl, "stone", 2).answer == NA
    assert sp.ask_navigate(tl, "stone", 2).answer == NA
    assert sp.ask_terrain_at_offset(tl, 2, "right", 2).answer == NA
    assert sp.ask_material_seen_by(tl, "stone", 2).answer == "no"
    assert tl.map_at(2).get((5, 1)) is None and tl.map_at(3)[(5, 1)] == "stone"


def test_bug_attempts_are_not_successes(tl):
    """The place_table at step 6 failed (it faced a tree); the table went down at step 8."""
    assert tl.action_steps("place_table") == [6, 8]
    assert tl.placements("table") == [8]
    assert ev.ask_successful_placements(tl, "table", 7).answer == 0
    assert ev.ask_event_interval(tl, "collect:wood", "place:table").answer == 4
    assert pat.ask_action_count(tl, "place_table", 1, 12).answer == 2  # attempts, by contract


def test_bug_sleep_detector_fires(tl):
    """Sleep comes from the sleeping flag (EMemBench looked for energy rising by >1)."""
    assert tl.sleep_starts() == [10] and tl.wake_steps() == [12]
    assert all(tl.delta("energy", t) <= 1 for t in tl.steps_range())


def test_bug_no_death_anchor_without_a_death():
    assert ev.ask_death_cause(CrafterTimeline(*tiny())).answer == NA
    meta, steps = tiny(end="death")
    assert CrafterTimeline(meta, steps).death_step() == 12
    assert CrafterTimeline(meta, steps[:11]).death_step() is None  # died after the horizon
    assert ev.ask_death_cause(CrafterTimeline(meta, steps[:11])).answer == NA


def test_bug_starvation_is_not_an_attack():
    far_zombie = [{"kind": "zombie", "pos": [4, 1]}]  # in view, three cells away
    hungry = one_step(state((1, 1), (0, 1), inventory(health=8, food=0), creatures=far_zombie),
                      ["ggggg"])
    assert ev.ask_damage_count(hungry).answer == 1
    assert ev.ask_attack_step(hungry, "first").answer == NA
    assert hungry.health_drops()[0].causes == ("starvation",)


def test_bug_no_observation_off_by_one():
    meta, steps = tiny()
    meta.initial["observation"] = "at reset"
    for i, s in enumerate(steps, 1):
        s.observation = f"after {i}"
    timeline = CrafterTimeline(meta, steps)
    assert timeline.observation_before(1) == "at reset"
    assert timeline.observation_before(5) == "after 4"


def test_bug_change_over_a_range_includes_its_first_step(tl):
    """EMemBench's change and displacement started at lo and missed the change at lo."""
    assert pat.ask_net_change(tl, "wood", 4, 5).answer == 2
    assert sp.ask_displacement(tl, 1, 1).answer == "1 step up"


def test_bug_no_phantom_final_step(tl):
    assert list(tl.steps_range()) == list(range(1, 13))
    assert all(tl.actions[t] for t in tl.steps_range())
    assert pat.ask_action_count(tl, "noop", 1, 12).answer == 1


def test_bug_no_duplicates_with_different_answers():
    meta, steps = simulate(3, 80)
    timeline = CrafterTimeline(meta, steps)
    seen: dict = {}
    for seed in range(5):
        for t in templates_for("crafter"):
            for q in t.fn(timeline, random.Random(seed)):
                assert seen.setdefault(q.key(), q.answer) == q.answer


def test_a_step_without_pos_is_named():
    meta, steps = tiny()
    steps[4].pos = None
    with pytest.raises(InputError, match="step 5.*pos"):
        CrafterTimeline(meta, steps)
    meta.initial.pop("inventory")
    with pytest.raises(InputError, match="initial.inventory"):
        CrafterTimeline(meta, tiny()[1])


# -- properties over simulated trajectories ------------------------------------------------

def all_questions(timeline: CrafterTimeline, seed: int) -> list:
    return [q for t in templates_for("crafter") for q in t.fn(timeline, random.Random(seed))]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), cut=st.integers(1, 39),
       tail_seed=st.integers(0, 10_000))
def test_questions_at_a_horizon_ignore_later_steps(seed, n, cut, tail_seed):
    cut = min(cut, n - 1)
    meta, steps = simulate(seed, n, end="death")
    other_meta, other = simulate(tail_seed, n + 5, end="step_cap")
    changed = steps[:cut] + [s.model_copy(update={"step": i}) for i, s in
                             enumerate(other[cut:], cut + 1)]
    other_meta = meta.model_copy(update={"steps": len(changed), "end": "step_cap"})
    first = all_questions(CrafterTimeline(meta, steps[:cut]), seed)
    second = all_questions(CrafterTimeline(other_meta, changed[:cut]), seed)
    assert first == second
    for q in first:
        assert q.horizon == (1, cut)
        assert set(q.evidence_steps) <= set(range(1, cut + 1))
        assert q.answerable == (q.answer != NA)


def _raw_increases(steps, initial, item):
    counts = [initial["inventory"].get(item, 0)] + [s.inventory.get(item, 0) for s in steps]
    return [t for t in range(1, len(counts)) if counts[t] > counts[t - 1]]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40))
def test_not_answerable_exactly_when_the_precondition_fails(seed, n):
    meta, steps = simulate(seed, n, end=random.Random(seed).choice(["death", "step_cap"]))
    timeline = CrafterTimeline(meta, steps)
    seen_by = {}
    for t in range(n + 1):
        cells = meta.initial["seen"] if t == 0 else steps[t - 1].seen
        for _x, _y, m in cells:
            seen_by.setdefault(m, t)
    for item in ITEMS:
        q = rec.ask_first_increase_step(timeline, item)
        rises = _raw_increases(steps, meta.initial, item)
        assert q.answerable == bool(rises) and (not rises or q.answer == rises[0])
    for action in ACTIONS:
        taken = [s.step for s in steps if s.action == action]
        assert rec.ask_action_occurrence(timeline, action, "first").answerable == bool(taken)
    for material in MATERIALS:
        assert sp.ask_closest_step(timeline, material).answerable == (material in seen_by)
        step = n
        q = sp.ask_nearest_direction(timeline, material, step)
        if q is not None:
            assert q.answerable == (seen_by.get(material, n + 1) <= step)
    assert ev.ask_death_cause(timeline) is None or (
        ev.ask_death_cause(timeline).answerable == (meta.end == "death"))


# -- a second, plain implementation over the raw steps ------------------------------------

def raw_state(meta, steps, t):
    return meta.initial if t == 0 else steps[t - 1].model_dump()


def raw_seen_by(meta, steps, t):
    known = {}
    for k in range(t + 1):
        for x, y, m in raw_state(meta, steps, k)["seen"]:
            known[(x, y)] = m
    return known


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), pick_seed=st.integers(0, 10_000))
def test_answers_match_a_plain_reimplementation(seed, n, pick_seed):
    meta, steps = simulate(seed, n)
    timeline = CrafterTimeline(meta, steps)
    rng = random.Random(pick_seed)
    t = rng.randint(1, n)
    a, b = sorted((rng.randint(1, n), rng.randint(1, n)))
    item = rng.choice(("wood", "health", "food"))
    action = rng.choice(ACTIONS)
    after = raw_state(meta, steps, t)
    assert rec.ask_inventory_at_step(timeline, item, t).answer == after["inventory"][item]
    assert pat.ask_action_count(timeline, action, a, b).answer == sum(
        1 for s in steps[a - 1:b] if s.action == action)
    placed = [k for k in range(1, n + 1)
              if raw_state(meta, steps, k)["achievements"].get("place_table", 0)
              > raw_state(meta, steps, k - 1)["achievements"].get("place_table", 0)]
    assert ev.ask_successful_placements(timeline, "table", b).answer == len(
        [k for k in placed if k <= b])
    moves = sum(1 for k in range(a, b + 1)
                if raw_state(meta, steps, k)["pos"] != raw_state(meta, steps, k - 1)["pos"])
    assert sp.ask_path_length(timeline, a, b).answer == moves
    direction = rng.choice(("left", "right", "up", "down"))
    dx, dy = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}[direction]
    x, y = after["pos"]
    cell = raw_seen_by(meta, steps, t).get((x + 2 * dx, y + 2 * dy), NA)
    assert sp.ask_terrain_at_offset(timeline, t, direction, 2).answer == cell
    material = rng.choice(MATERIALS)
    ever = any(m == material for m in raw_seen_by(meta, steps, t).values())
    assert sp.ask_material_seen_by(timeline, material, t).answer == ("yes" if ever else "no")
    x0, y0 = raw_state(meta, steps, a - 1)["pos"]
    x1, y1 = raw_state(meta, steps, b)["pos"]
    words = sp.ask_displacement(timeline, a, b).answer
    expected_words = []
    if x1 != x0:
        expected_words.append(f"{abs(x1 - x0)} step{'s' * (abs(x1 - x0) != 1)} "
                              f"{'right' if x1 > x0 else 'left'}")
    if y1 != y0:
        expected_words.append(f"{abs(y1 - y0)} step{'s' * (abs(y1 - y0) != 1)} "
                              f"{'down' if y1 > y0 else 'up'}")
    assert words == (" and ".join(expected_words) or "0 steps")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 25), t=st.integers(1, 25))
def test_navigation_matches_brute_force_on_simulated_maps(seed, n, t):
    meta, steps = simulate(seed, n, size=7)
    timeline = CrafterTimeline(meta, steps)
    t = min(t, n)
    for material in ("tree", "water", "sand", "table"):
        q = sp.ask_navigate(timeline, material, t)
        length = timeline.route_length(material, t)
        if q is None or not q.answerable or length is None or length > 6:
            continue
        assert sorted([q.answer, *q.alternatives]) == brute_force_paths(timeline, material, t,
                                                                        longest=length)


def test_folded_cells_and_bounded_map_cache_agree_with_a_plain_fold():
    meta, steps = simulate(11, 200)
    timeline = CrafterTimeline(meta, steps)
    for t in range(1, 201):  # more maps than the cache holds
        timeline.map_at(t)
    for t in (1, 50, 199, 200):
        plain = raw_seen_by(meta, steps, t)
        assert timeline.map_at(t) == plain
        assert {c: timeline.material_at(c, t) for c in plain} == plain
        assert timeline.material_at((-1, -1), t) is None
    for material in ("tree", "water", "table"):
        for t, cells in timeline.cells_over_time(material):
            assert cells == {c for c, m in raw_seen_by(meta, steps, t).items() if m == material}
        plain = [(timeline.nearest(material, t)[0], t) for t in timeline.steps_range()
                 if timeline.nearest(material, t)]
        q = sp.ask_closest_step(timeline, material)
        assert q.answer == (min(plain)[1] if plain else NA)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), cut=st.integers(1, 40))
def test_event_questions_are_not_answerable_exactly_when_the_event_did_not_happen(seed, n, cut):
    meta, steps = simulate(seed, n, end="death")
    cut = min(cut, n)
    timeline = CrafterTimeline(meta, steps[:cut])
    states = [meta.initial] + [s.model_dump() for s in steps[:cut]]
    raw = {
        "place:table": [t for t in range(1, cut + 1) if steps[t - 1].action == "place_table"
                        and states[t]["achievements"].get("place_table", 0)
                        > states[t - 1]["achievements"].get("place_table", 0)],
        "collect:wood": [t for t in range(1, cut + 1)
                         if states[t]["achievements"].get("collect_wood", 0)
                         > states[t - 1]["achievements"].get("collect_wood", 0)],
        "sleep": [t for t in range(1, cut + 1)
                  if states[t]["sleeping"] and not states[t - 1]["sleeping"]],
        "health_drop": [t for t in range(1, cut + 1) if states[t]["inventory"]["health"]
                        < states[t - 1]["inventory"]["health"]],
        "eat": [],
    }
    for event, happened in raw.items():
        q = ev.ask_event_steps(timeline, event)
        assert q.answer == (happened or NA)
        other = "collect:wood" if event != "collect:wood" else "sleep"
        order = ev.ask_event_order(timeline, event, other)
        if order is not None:
            assert order.answerable == bool(happened and raw[other])
    death = ev.ask_death_cause(timeline)
    if cut < n:
        assert death.answer == NA
    elif death is not None:
        assert death.answerable


def test_first_increase_at_two_horizons():
    meta, steps = tiny()
    assert rec.ask_first_increase_step(CrafterTimeline(meta, steps[:3]), "wood").answer == NA
    assert rec.ask_first_increase_step(CrafterTimeline(meta, steps[:4]), "wood").answer == 4
    assert ev.ask_successful_placements(CrafterTimeline(meta, steps[:7]), "table", 7).answer == 0


def test_adversarial_templates_mix_in_an_answerable_question(tl):
    """Water and the cow were in view at reset, so the answerable ones are stone or tree and
    the zombie; the rest name things Crafter has that never appeared."""
    for tid, answerable_names in [("crafter.first_sighting", {"stone", "table", "lava", "tree"}),
                                  ("crafter.first_creature", {"zombie"})]:
        for seed in range(5):
            qs = list(all_templates()[tid].fn(tl, random.Random(seed)))
            assert [q for q in qs if q.answerable]
            assert all(next(iter(q.params.values())) in answerable_names
                       for q in qs if q.answerable)


def test_sampling_asks_the_traps_and_no_mirrored_pairs(tl):
    for seed in range(10):
        rng = random.Random(seed)
        pairs = [frozenset((q.params["a"], q.params["b"]))
                 for q in all_templates()["crafter.event_order"].fn(tl, rng)]
        assert len(pairs) == len(set(pairs))
        for q in all_templates()["crafter.material_seen_by"].fn(tl, random.Random(seed)):
            assert q.params["material"] != "grass"
            if q.params["step"] < 3 and q.params["material"] == "stone":
                assert q.answer == "no"  # seen at step 3, inside the window, after step t
    asked = {(q.params["material"], q.answer) for seed in range(10)
             for q in all_templates()["crafter.material_seen_by"].fn(tl, random.Random(seed))}
    assert any(answer == "no" for _, answer in asked)
    text = ev.ask_craft_feasible(tl, "iron_pickaxe", 3).text
    assert "made an iron pickaxe" in text


def test_on_a_trajectory_played_in_crafter(tmp_path):
    """The real env's log (design 0032 fields) through every template at two horizons."""
    pytest.importorskip("crafter")
    import asyncio

    from memgauge.games._play import new_meta, play
    from memgauge.games._trajectory import read_trajectory
    from memgauge.games.envs import open_env
    from memgauge.games.players import make_player

    env = open_env("crafter", seed=0, options={})
    meta = new_meta(env, seed=0, player="scripted", max_steps=80)
    asyncio.run(play(env, make_player("scripted", env_name="crafter", seed=0), tmp_path / "t",
                     meta, 80))
    meta, steps = read_trajectory(tmp_path / "t")
    for cut in (20, len(steps)):
        timeline = CrafterTimeline(meta, steps[:cut])
        questions = all_questions(timeline, 0)
        assert {q.template for q in questions} >= {"crafter.inventory_at_step",
                                                    "crafter.action_count"}
        for q in questions:
            assert q.horizon == (1, cut)
            assert set(q.evidence_steps) <= set(range(1, cut + 1))
        for to_step in (1, cut):
            counter = steps[to_step - 1].achievements["place_table"]
            assert ev.ask_successful_placements(timeline, "table", to_step).answer == counter


def test_displacement_told_in_either_order_is_an_alternative(tl):
    q = sp.ask_displacement(tl, 1, 2)
    assert q.answer == "1 step right and 1 step up"
    assert q.alternatives == ["1 step up and 1 step right"]
    assert sp.ask_displacement(tl, 2, 3).alternatives == []  # one part: one order


def test_closed_templates_offer_every_candidate_so_the_rare_answer_is_found(tl):
    """Design 0039: two random steps found a feasible craft or placement in 0 of 44
    questions. Every step and option is offered now (the generator balances them), and the
    closed templates declare their answer values."""
    placed = {(q.params["what"], q.params["step"]): q.answer
              for q in all_templates()["crafter.place_feasible"].fn(tl, random.Random(0))}
    assert placed[("table", 7)] == "yes" and placed[("table", 5)] == "no"
    assert {w for w, _ in placed} == {"table", "furnace", "stone", "plant"}
    crafted = list(all_templates()["crafter.craft_feasible"].fn(tl, random.Random(0)))
    assert len(crafted) == 12 * 6  # every step with every tool
    ordered = list(all_templates()["crafter.event_order"].fn(tl, random.Random(0)))
    pairs = {frozenset((q.params["a"], q.params["b"])) for q in ordered if q.answerable}
    assert pairs == {frozenset(p) for p in itertools.combinations(ev._happened(tl), 2)
                     if ev._first(tl, p[0]) != ev._first(tl, p[1])}  # a tie is not asked
    assert all_templates()["crafter.event_order"].values == ("before", "after")
    assert all_templates()["crafter.craft_feasible"].values == ("yes", "no")
