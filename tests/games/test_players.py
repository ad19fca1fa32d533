"""The players: random (seeded, legal only), scripted Crafter (competent, deterministic,
noisy on request), replay (the logged actions, then stop), llm (strict parsing, re-asks,
a flagged fallback, model errors that stop play and keep the log)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memgauge.errors import ConfigError
from memgauge.games import read_trajectory
from memgauge.games.players import Observation, make_player
from memgauge.games.players.llm import LLMPlayer, parse_action
from memgauge.models import ImagePart, ModelError, ScriptedModel, TextPart

CRAFTER_ACTIONS = ["noop", "move_left", "move_right", "move_up", "move_down", "do", "sleep",
                   "place_table", "make_wood_pickaxe"]


def _obs(step: int = 1, legal: list[str] | None = None, frame: bytes | None = None):
    return Observation(step=step, text="health 9 | in view: tree 1 left",
                       legal=CRAFTER_ACTIONS if legal is None else legal, frame_png=frame)


def _actions(player, n: int, legal=None) -> list[str]:
    return [asyncio.run(player.act(_obs(i, legal))).action for i in range(1, n + 1)]


def test_random_is_seeded_and_picks_only_legal_actions():
    a = _actions(make_player("random", env_name="crafter", seed=5), 50)
    assert a == _actions(make_player("random", env_name="crafter", seed=5), 50)
    assert a != _actions(make_player("random", env_name="crafter", seed=6), 50)
    assert set(a) <= set(CRAFTER_ACTIONS) and len(set(a)) > 3
    assert set(_actions(make_player("random", env_name="x", seed=1), 20,
                        legal=["go north", "look"])) <= {"go north", "look"}


def test_random_without_legal_actions_says_so():
    player = make_player("random", env_name="jericho", seed=0)
    with pytest.raises(ConfigError, match="legal actions"):
        asyncio.run(player.act(Observation(step=1, text="", legal=None)))


def test_unknown_players_and_games_without_a_scripted_player_are_config_errors():
    for spec in ("greedy", "replay:", "llm:", "scripted:x"):
        with pytest.raises(ConfigError, match="unknown player"):
            make_player(spec, env_name="crafter")
    with pytest.raises(ConfigError, match="no scripted player for 'chess'"):
        make_player("scripted", env_name="chess")
    with pytest.raises(ConfigError, match="needs its model"):
        make_player("llm:openai:gpt-4o", env_name="crafter")


# -- scripted Crafter --------------------------------------------------------------------

def _play_crafter(tmp_path: Path, name: str, seed: int, steps: int, player: str = "scripted",
                  noise: float = 0.0):
    pytest.importorskip("crafter")
    from memgauge.games._play import new_meta, play
    from memgauge.games.envs import open_env

    env = open_env("crafter", seed=seed, options={})
    chosen = make_player(player, env_name="crafter", seed=seed, noise=noise)
    meta = new_meta(env, seed=seed, player=player, max_steps=steps)
    asyncio.run(play(env, chosen, tmp_path / name, meta, steps))
    return read_trajectory(tmp_path / name)


def _first(steps, achievement: str) -> int | None:
    return next((s.step for s in steps if s.achievements[achievement] > 0), None)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scripted_crafter_places_a_table_and_makes_a_wood_pickaxe(tmp_path, seed):
    _, steps = _play_crafter(tmp_path, "t", seed, 150)
    table, pickaxe = _first(steps, "place_table"), _first(steps, "make_wood_pickaxe")
    assert table is not None and pickaxe is not None and table < pickaxe
    placed = next(s for s in steps if s.step == table)
    assert placed.action == "place_table" and placed.success is True
    assert _first(steps, "collect_wood") < table


def test_scripted_crafter_is_deterministic_and_noise_changes_it(tmp_path):
    _, a = _play_crafter(tmp_path, "a", 4, 60)
    _, b = _play_crafter(tmp_path, "b", 4, 60)
    _, noisy = _play_crafter(tmp_path, "n", 4, 60, noise=0.5)
    _, noisy2 = _play_crafter(tmp_path, "n2", 4, 60, noise=0.5)
    assert [s.action for s in a] == [s.action for s in b]
    assert [s.action for s in noisy] == [s.action for s in noisy2]
    assert [s.action for s in noisy] != [s.action for s in a]
    with pytest.raises(ConfigError, match="--noise 2"):
        make_player("scripted", env_name="crafter", noise=2.0)


def test_scripted_crafter_drinks_when_thirsty_and_water_is_next_to_it():
    pytest.importorskip("crafter")
    player = make_player("scripted", env_name="crafter", seed=0)
    view = [["grass"] * 9 for _ in range(7)]
    view[3][5] = "water"  # right of the player
    state = {"view": view, "pos": [10, 10], "facing": [1, 0], "creatures": [],
             "sleeping": False,
             "inventory": {"health": 9, "food": 9, "drink": 2, "energy": 9, "wood": 0,
                           "stone": 0, "coal": 0, "wood_pickaxe": 0, "wood_sword": 0,
                           "stone_pickaxe": 0}}
    decision = asyncio.run(player.act(Observation(step=1, text="", legal=CRAFTER_ACTIONS,
                                                  state=state)))
    assert decision.action == "do"
    state["facing"] = [0, 1]
    decision = asyncio.run(player.act(Observation(step=2, text="", legal=CRAFTER_ACTIONS,
                                                  state=state)))
    assert decision.action == "move_right"  # turns to face the water (it cannot walk on it)


# -- replay ------------------------------------------------------------------------------

def test_replay_plays_the_logged_actions_then_stops(tmp_path):
    _, steps = _play_crafter(tmp_path, "src", 2, 25)
    player = make_player(f"replay:{tmp_path / 'src'}", env_name="crafter")
    assert _actions(player, 25) == [s.action for s in steps]
    assert asyncio.run(player.act(_obs(26))).stop is True
    with pytest.raises(ConfigError, match="crafter trajectory; it cannot play textworld"):
        make_player(f"replay:{tmp_path / 'src'}", env_name="textworld")


def test_replay_through_the_loop_reproduces_and_ends_as_player_stopped(tmp_path):
    _, original = _play_crafter(tmp_path, "src", 3, 30)
    meta, replayed = _play_crafter(tmp_path, "again", 3, 40, player=f"replay:{tmp_path / 'src'}")
    assert meta.end == "player_stopped" and meta.steps == 30
    assert [(s.pos, s.inventory) for s in replayed] == [(s.pos, s.inventory) for s in original]


# -- llm ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "action"), [
    ("move_left", "move_left"), ("MOVE_LEFT", "move_left"), ("move left", "move_left"),
    ("`do`", "do"), ("Action: place_table", "place_table"), ("**sleep**.", "sleep"),
    ("  move_right\nbecause the tree is there", "move_right"),
])
def test_parse_action_accepts_one_legal_action_name(reply, action):
    assert parse_action(reply, CRAFTER_ACTIONS) == (action, None)


@pytest.mark.parametrize("reply", ["", "I will move_left", "move_leftt", "left", "jump",
                                   "move_left, then do"])
def test_parse_action_rejects_everything_else(reply):
    action, why = parse_action(reply, CRAFTER_ACTIONS)
    assert action is None and why


@pytest.mark.parametrize(("reply", "action"), [
    ("3", "move_right"), ("3.", "move_right"), ("3) move_right", "move_right"),
    ("**1. noop**", "noop"), ("Action: 9 - make_wood_pickaxe", "make_wood_pickaxe"),
])
def test_parse_action_takes_an_action_by_its_number_in_the_list(reply, action):
    assert parse_action(reply, CRAFTER_ACTIONS) == (action, None)


@pytest.mark.parametrize(("reply", "why"), [
    ("0", "0 is not the number of a legal action (1–9)"), ("10", "not the number"),
    ("3. move_left", "3 is move_right, not 'move_left'"), ("3 steps left", "not one of"),
])
def test_parse_action_refuses_a_number_that_is_no_action_or_names_another(reply, why):
    action, got = parse_action(reply, CRAFTER_ACTIONS)
    assert action is None and why in got


def test_parse_action_without_a_list_takes_the_command_line():
    assert parse_action("open the door\n", None) == ("open the door", None)


def _scripted(replies: list[str | Exception]) -> ScriptedModel:
    queue = list(replies)

    def answer(messages, question_id):
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return _ConfigKeeping(fn=answer)


class _ConfigKeeping(ScriptedModel):
    """A scripted model that also keeps the GenerateConfig of every call."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.configs = []

    async def generate(self, messages, config, *, question_id=None):
        self.configs.append(config)
        return await super().generate(messages, config, question_id=question_id)


def test_llm_unparsable_reply_is_logged_and_asked_again():
    model = _scripted(["I think going left is best", "move_left"])
    player = LLMPlayer(model, game="crafter", reasks=2)
    decision = asyncio.run(player.act(_obs()))
    assert decision.action == "move_left"
    assert decision.trace.attempts == 2 and decision.trace.fallback is False
    assert decision.trace.raw == "move_left" and decision.trace.parse_error is None
    retry = model.calls[1][0]
    assert retry[-2].role == "assistant" and retry[-2].parts[0].text.startswith("I think")
    assert "is not one of the legal actions" in retry[-1].parts[0].text
    assert "move_left, move_right" in retry[-1].parts[0].text


def test_llm_after_every_reask_fails_the_step_takes_the_flagged_fallback():
    model = _scripted(["go west", "west!", "westward"])
    player = LLMPlayer(model, game="crafter", reasks=2)
    decision = asyncio.run(player.act(_obs()))
    assert decision.action == "noop" and decision.trace.fallback is True
    assert decision.trace.attempts == 3 and decision.trace.raw == "westward"
    assert "'westward' is not one of the legal actions" in decision.trace.parse_error
    assert decision.trace.model_dump()["replies"] == ["go west", "west!", "westward"]


def test_llm_holds_a_constraining_model_to_the_legal_actions():
    """A small model continues the prompt instead of answering (issue 24: SmolLM2 fell back
    on every step): a model that can constrain its decoding gets the legal actions as the
    reply's only choices; one that cannot gets them in words only."""
    constraining = _scripted(["place_table"])
    constraining.constrains_choices = True
    player = LLMPlayer(constraining, game="crafter")
    assert asyncio.run(player.act(_obs())).action == "place_table" and player.constrained
    sent = constraining.configs[0]
    assert sent.choices == tuple(CRAFTER_ACTIONS)
    assert sent.max_tokens >= len("make_wood_pickaxe")
    plain = _scripted(["do"])
    player = LLMPlayer(plain, game="crafter")
    asyncio.run(player.act(_obs()))
    assert plain.configs[0].choices == () and not player.constrained
    free_text = _scripted(["open door"])
    free_text.constrains_choices = True
    unknown = Observation(step=1, text="You are in a hall.", legal=None)  # any command
    assert asyncio.run(LLMPlayer(free_text, game="jericho").act(unknown)).action == "open door"
    assert free_text.configs[0].choices == ()


def test_llm_asks_any_other_model_for_a_json_action_among_the_legal_ones():
    """Issue 29: a model without a grammar (vLLM, SGLang, OpenAI, a llama.cpp server by URL)
    gets the legal actions as a JSON schema, and its JSON reply names the action."""
    plain = _scripted(['{"action": "place_table"}'])
    player = LLMPlayer(plain, game="crafter")
    decision = asyncio.run(player.act(_obs()))
    assert decision.action == "place_table" and decision.trace.attempts == 1
    sent = plain.configs[0]
    assert sent.choices == () and player.structured and not player.constrained
    assert sent.json_schema["properties"]["action"] == {"enum": CRAFTER_ACTIONS}
    assert sent.max_tokens >= len("make_wood_pickaxe") + 8
    # an endpoint that ignored the schema: its plain reply still counts
    assert asyncio.run(LLMPlayer(_scripted(["noop"]), game="crafter").act(_obs())).action == "noop"


@pytest.mark.parametrize("reply, action", [('{"action": "do"}', "do"),
                                           ('{"action": "3"}', CRAFTER_ACTIONS[2])])
def test_parse_action_reads_a_structured_reply(reply, action):
    assert parse_action(reply, CRAFTER_ACTIONS) == (action, None)


def test_llm_fallback_must_be_legal():
    player = LLMPlayer(_scripted(["x"]), game="crafter", fallback="dance")
    with pytest.raises(ConfigError, match="'dance' is not a legal action"):
        asyncio.run(player.act(_obs()))


def test_llm_prompt_holds_the_observation_the_actions_history_and_the_frame(tmp_path):
    png = b"\x89PNG fake frame bytes"
    model = _scripted(["do", "move_up"])
    player = LLMPlayer(model, game="crafter", images=True, history=1)
    asyncio.run(player.act(_obs(1, frame=png)))
    asyncio.run(player.act(_obs(2, frame=png)))
    user = model.calls[1][0][1]
    image = next(p for p in user.parts if isinstance(p, ImagePart))
    assert Path(image.image.path).read_bytes() == png
    text = next(p for p in user.parts if isinstance(p, TextPart)).text
    assert "in view: tree 1 left" in text and "Legal actions: 1. noop, 2. move_left" in text
    assert "Your recent actions: step 1: do." in text
    no_images = _scripted(["do"])
    asyncio.run(LLMPlayer(no_images, game="crafter").act(_obs(1, frame=png)))
    assert not any(isinstance(p, ImagePart) for p in no_images.calls[0][0][1].parts)


def test_llm_model_error_stops_play_and_keeps_the_steps(tmp_path):
    pytest.importorskip("crafter")
    from memgauge.games._play import new_meta, play
    from memgauge.games.envs import open_env

    model = _scripted(["move_left", "do", ModelError("http_500", "server error", attempts=6)])
    env = open_env("crafter", seed=0, options={})
    player = make_player("llm:scripted", env_name="crafter", model=model)
    meta = new_meta(env, seed=0, player="llm:scripted", max_steps=10)
    with pytest.raises(ModelError):
        asyncio.run(play(env, player, tmp_path / "t", meta, 10))
    meta, steps = read_trajectory(tmp_path / "t")
    assert meta.end == "player_stopped" and meta.steps == 2
    assert "http_500" in meta.model_dump()["end_message"]
    assert [s.action for s in steps] == ["move_left", "do"]
    assert steps[0].player.raw == "move_left"


def test_an_interrupt_keeps_the_steps_and_says_so_in_meta(tmp_path):
    pytest.importorskip("crafter")
    from memgauge.games._play import new_meta, play
    from memgauge.games.envs import open_env
    from memgauge.games.players import Decision

    class Interrupted:
        name = "interrupted"

        async def act(self, observation):
            if observation.step == 4:
                raise KeyboardInterrupt
            return Decision(action="move_up")

    env = open_env("crafter", seed=0, options={})
    meta = new_meta(env, seed=0, player="interrupted", max_steps=10)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(play(env, Interrupted(), tmp_path / "t", meta, 10))
    meta, steps = read_trajectory(tmp_path / "t")
    assert meta.end == "player_stopped" and meta.steps == 3 == len(steps)
    assert meta.model_dump()["end_message"] == "interrupted"


def test_scripted_crafter_walls_itself_in_before_it_sleeps():
    """Two stone cells ahead with stone around them: mine in, step back, wall the entrance
    with the mined stone, sleep; then nothing a zombie can walk on touches the player."""
    pytest.importorskip("crafter")
    from memgauge.games.envs.crafter_env import open_crafter

    env = open_crafter(0, {})
    env.reset()
    world, me = env.env._world, env.env._player
    for obj in world.objects:
        if obj is not me and me.distance(obj) <= 12:
            world.remove(obj)
    x, y = (int(v) for v in me.pos)
    for row in env.view_cells():
        for cell in row:
            world[cell] = "grass"
    for dx in (1, 2, 3):
        for dy in (-1, 0, 1):
            world[(x + dx, y + dy)] = "stone"
    me.facing = (1, 0)
    me.inventory.update(energy=3, wood_pickaxe=1, stone=0)
    player = make_player("scripted", env_name="crafter", seed=0)
    state, actions = env._state(), []
    for step in range(1, 9):
        decision = asyncio.run(player.act(Observation(step=step, text="", state=state,
                                                      legal=env.legal_actions())))
        actions.append(decision.action)
        state = env.step(decision.action)
        if state["sleeping"]:
            break
    assert actions == ["do", "move_right", "do", "move_right", "move_left", "place_stone",
                       "sleep"]
    px, py = state["pos"]
    assert [px, py] == [x + 1, y]
    around = [env.material((px + dx, py + dy)) for dx, dy in ((-1, 0), (1, 0), (0, -1), (0, 1))]
    assert around.count("path") == 1 and around.count("stone") == 3  # path: the dead end
    assert env.material((px + 1, py)) == "path" and env.material((px + 2, py)) == "stone"
