"""The Crafter env: state read from Crafter's own objects, names from Crafter's own id table,
success read from the state, a seed and an action list that replay exactly."""

from __future__ import annotations

import asyncio
import io
import sys

import pytest

crafter = pytest.importorskip("crafter")

from memgauge.errors import ConfigError
from memgauge.games import read_trajectory
from memgauge.games._play import new_meta, play
from memgauge.games.envs import open_env
from memgauge.games.envs.crafter_env import CrafterEnv, hud_text, open_crafter
from memgauge.games.players import make_player


def _played(tmp_path, seed: int, steps: int, player: str = "scripted"):
    env = open_env("crafter", seed=seed, options={})
    chosen = make_player(player, env_name="crafter", seed=seed)
    meta = new_meta(env, seed=seed, player=player, max_steps=steps)
    asyncio.run(play(env, chosen, tmp_path / f"traj-{seed}", meta, steps))
    return read_trajectory(tmp_path / f"traj-{seed}")


@pytest.mark.parametrize("seed", [0, 3])
def test_replaying_the_logged_actions_reproduces_every_position_and_inventory(tmp_path, seed):
    meta, steps = _played(tmp_path, seed, 120, player="random")
    fresh = open_crafter(seed, {})
    initial = fresh.reset()
    assert initial["pos"] == meta.initial["pos"]
    assert initial["inventory"] == meta.initial["inventory"]
    for step in steps:
        fields = fresh.step(step.action)
        assert fields["pos"] == step.pos, f"step {step.step}"
        assert fields["inventory"] == step.inventory, f"step {step.step}"
        assert fields["achievements"] == step.achievements, f"step {step.step}"
        assert fields["view"] == step.view, f"step {step.step}"


def _semantic_names(env: CrafterEnv) -> dict[tuple[int, int], str]:
    """Crafter's own semantic map, decoded with Crafter's own id tables (the SemanticView's
    material ids and its object ids), for every cell of the world."""
    sem = env.env._sem_view
    names = {i: str(name) for name, i in sem._mat_ids.items()}
    names.update({i: cls.__name__.lower() for cls, i in sem._obj_ids.items()})
    grid = sem()
    return {(x, y): names[int(grid[x, y])] for x in range(grid.shape[0])
            for y in range(grid.shape[1])}


def test_view_and_seen_agree_with_crafters_semantic_map():
    env = open_crafter(1, {})
    state = env.reset()
    checked = 0
    for n in range(60):
        semantic = _semantic_names(env)
        creatures = {tuple(c["pos"]): c["kind"] for c in state["creatures"]}
        for row_cells, row_names in zip(env.view_cells(), state["view"], strict=True):
            for cell, name in zip(row_cells, row_names, strict=True):
                if cell in creatures:
                    assert semantic[cell] == creatures[cell]
                elif cell != tuple(state["pos"]):
                    assert semantic[cell] == name, cell
                    checked += 1
        for x, y, name in state["seen"]:
            if (x, y) not in creatures and [x, y] != state["pos"]:
                assert semantic[(x, y)] == name
        state = env.step(["move_left", "move_up", "do", "move_right"][n % 4])
    assert checked > 1000


@pytest.mark.parametrize("material", ["lava", "coal", "iron", "diamond"])
def test_a_known_cell_is_named_by_its_id_in_crafters_table(material):
    """The ids EMemBench decoded one off (6-9): a cell set to each is named right."""
    env = open_crafter(0, {})
    state = env.reset()
    px, py = state["pos"]
    cell = (px + 2, py - 1)
    env.env._world[cell] = material
    world = env.env._world
    assert world._mat_map[cell] == crafter.constants.materials.index(material) + 1
    state = env._state()
    grid = env.view_cells()
    row = next(i for i, r in enumerate(grid) if cell in r)
    assert state["view"][row][grid[row].index(cell)] == material
    assert [cell[0], cell[1], material] in state["seen"]


def _cleared(seed: int = 0) -> CrafterEnv:
    """An env whose view is all grass and holds no creature but the player."""
    env = open_crafter(seed, {})
    env.reset()
    world = env.env._world
    for row in env.view_cells():
        for cell in row:
            world[cell] = "grass"
    for obj in world.objects:
        if obj is not env.env._player and env.env._player.distance(obj) <= 12:
            world.remove(obj)
    env.env._player.facing = (-1, 0)
    return env


def test_a_move_into_a_tree_fails_and_a_move_onto_grass_succeeds():
    env = _cleared()
    px, py = (int(v) for v in env.env._player.pos)
    env.env._world[(px - 1, py)] = "tree"
    fields = env.step("move_left")
    assert fields["success"] is False
    assert fields["pos"] == [px, py] and fields["facing"] == [-1, 0]
    fields = env.step("move_right")
    assert fields["success"] is True and fields["pos"] == [px + 1, py]


def test_do_on_a_tree_succeeds_and_noop_has_no_success():
    env = _cleared()
    px, py = (int(v) for v in env.env._player.pos)
    env.env._world[(px - 1, py)] = "tree"
    fields = env.step("do")
    assert fields["success"] is True and fields["inventory"]["wood"] == 1
    assert env.step("noop")["success"] is None


@pytest.mark.parametrize(("what", "item"), [("table", "wood"), ("furnace", "stone")])
def test_placing_succeeds_only_with_what_crafters_data_requires(what, item):
    need = crafter.constants.place[what]["uses"][item]
    assert need >= 1
    env = _cleared()
    player = env.env._player
    px, py = (int(v) for v in player.pos)
    player.inventory[item] = need - 1
    fields = env.step(f"place_{what}")
    assert fields["success"] is False
    assert env.material((px - 1, py)) == "grass"
    assert fields["inventory"][item] == need - 1
    player.inventory[item] = need
    fields = env.step(f"place_{what}")
    assert fields["success"] is True
    assert env.material((px - 1, py)) == what
    assert fields["view"][3][3] == what  # the cell left of the player in the 9x7 view
    assert fields["inventory"][item] == 0


def test_making_a_pickaxe_needs_a_table_nearby():
    env = _cleared()
    player = env.env._player
    px, py = (int(v) for v in player.pos)
    player.inventory["wood"] = 3
    assert env.step("make_wood_pickaxe")["success"] is False
    env.env._world[(px + 1, py + 1)] = "table"  # diagonal: Crafter's "nearby" is the 3x3
    fields = env.step("make_wood_pickaxe")
    assert fields["success"] is True and fields["inventory"]["wood_pickaxe"] == 1


def test_the_hud_names_what_is_in_view_and_where():
    env = _cleared()
    px, py = (int(v) for v in env.env._player.pos)
    env.env._world[(px - 2, py - 1)] = "tree"
    env.env._world[(px + 3, py)] = "water"
    text = env._state()["observation"]
    assert "tree 2 left 1 up" in text and "water 3 right" in text
    assert text.startswith("health 9 food 9 drink 9 energy 9 | inventory: nothing")
    assert "facing 1 left: grass" in text
    assert hud_text(env._state()) == text


def test_frames_are_pngs_of_the_frame_size_and_the_size_is_recorded():
    from PIL import Image

    env = open_crafter(0, {"frame_size": 96})
    env.reset()
    env.step("move_left")
    image = Image.open(io.BytesIO(env.frame_png()))
    assert image.format == "PNG" and image.size == (96, 96)
    assert env.info()["frame_size"] == [96, 96]
    assert env.info()["env_version"] == "1.8.3"


def test_the_scripted_trajectory_reads_back_with_frames_and_meta(tmp_path):
    meta, steps = _played(tmp_path, 0, 40)
    assert meta.env == "crafter" and meta.seed == 0 and meta.steps == len(steps) == 40
    assert meta.end == "step_cap" and meta.frame_size == [64, 64]
    assert meta.initial["frame"] and len(meta.initial["view"]) == 7
    assert all(len(row) == 9 for s in steps for row in s.view)
    assert all(s.frame for s in steps)
    assert [s.step for s in steps] == list(range(1, 41))


def test_death_ends_the_episode_with_death_in_meta(tmp_path):
    env = open_crafter(0, {})

    class Walker:
        name = "walker"

        async def act(self, observation):
            from memgauge.games.players import Decision

            if observation.step == 3:
                env.env._player.inventory["health"] = 0  # Crafter's health lives here
            return Decision(action="noop")

    meta = new_meta(env, seed=0, player="walker", max_steps=10)
    done = asyncio.run(play(env, Walker(), tmp_path / "t", meta, 10))
    assert done.end == "death" and done.steps == 3
    _, steps = read_trajectory(tmp_path / "t")
    assert steps[-1].done is True and "end" not in steps[-1].model_dump(exclude_none=True)


def test_bad_options_and_a_missing_package_are_config_errors(monkeypatch):
    with pytest.raises(ConfigError, match="takes no option rom"):
        open_crafter(0, {"rom": "x.z5"})
    with pytest.raises(ConfigError, match="--frame-size 4"):
        open_crafter(0, {"frame_size": 4})
    with pytest.raises(ConfigError, match="no action 'jump'"):
        env = open_crafter(0, {})
        env.reset()
        env.step("jump")
    monkeypatch.setitem(sys.modules, "crafter", None)
    with pytest.raises(ConfigError, match=r'pip install "memgauge\[games\]"'):
        open_crafter(0, {})
