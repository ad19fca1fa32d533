"""``memgauge play GAME --player P --out TRAJ_DIR``: play one episode and log it as a
trajectory folder (design 0032). The loop is ``games._play``; this module is imported only
when ``play`` is named (``_lazy``)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..cache import ResponseCache
from ..errors import ConfigError, MemgaugeError
from ..games import read_trajectory
from ..games._play import new_meta, play
from ..games._self_play import (
    SelfExperience,
    check_folder,
    generate_questions,
    needs_play,
    needs_questions,
)
from ..games.envs import env_names, open_env
from ..games.players import llm_spec_model, make_player
from ..games.players.llm import LLMPlayer
from ..games.players.replay import ReplayPlayer
from ..models import Closable, ModelError, ModelSettings, aclose_if_closable, create_model
from ..models._preflight import Role
from ..models._preflight import check as preflight
from ..registry import lookup
from ..runner import RunConfig
from ._common import fail, parse_options
from ._execute import execute_run

DEFAULT_STEPS = 200


def play_command(
    game: Annotated[str, typer.Argument(help="crafter | textworld | jericho")],
    out: Annotated[str, typer.Option("--out", help="Trajectory folder to write")],
    player: Annotated[str, typer.Option(
        help="random | scripted | replay:<trajectory folder> | llm:<model spec>")] = "scripted",
    seed: Annotated[int | None, typer.Option(
        help="World seed (default 0; a replay defaults to its trajectory's seed)")] = None,
    steps: Annotated[int | None, typer.Option(
        help=f"Step cap (default {DEFAULT_STEPS}; a replay: its trajectory's length)")] = None,
    rom: Annotated[str | None, typer.Option(help="Game file to play (jericho)")] = None,
    frame_size: Annotated[int | None, typer.Option(
        help="Frame side in pixels (crafter; default 64)")] = None,
    noise: Annotated[float, typer.Option(
        help="Scripted player: the fraction of steps taken at random")] = 0.0,
    images: Annotated[bool, typer.Option(
        "--images", help="LLM player: send the frame as an image (the model must take images)"
    )] = False,
    history: Annotated[int, typer.Option(help="LLM player: recent steps shown")] = 8,
    reasks: Annotated[int, typer.Option(
        help="LLM player: times an unparsable reply is asked again before the fallback")] = 2,
    fallback: Annotated[str | None, typer.Option(
        help="LLM player: the action taken (and flagged) when no reply parses")] = None,
    model_base_url: Annotated[str | None, typer.Option(
        help="LLM player: OpenAI-compatible endpoint URL")] = None,
    api_key_env: Annotated[str, typer.Option(
        help="Env var holding the API key")] = "OPENAI_API_KEY",
    model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: model (repeatable)")] = None,
    game_option: Annotated[list[str] | None, typer.Option(
        help="key=value for the game (repeatable): textworld rooms, objects, quest_length, "
             "game_dir; jericho walkthrough")] = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds")] = 120.0,
    max_attempts: Annotated[int, typer.Option(help="Attempts per model request")] = 6,
    no_cache: Annotated[bool, typer.Option("--no-cache",
                                           help="Do not use the response cache")] = False,
    cache_path: Annotated[str | None, typer.Option(help="Response cache SQLite file")] = None,
    system: Annotated[str | None, typer.Option(
        help="Self-experience: the memory system that remembers this play and answers the "
             "questions made from it; --out is then a run folder (play/, bench/, records)")] = None,
    system_option: Annotated[list[str] | None, typer.Option(
        help="Self-experience: key=value for the system (repeatable)")] = None,
    model: Annotated[str | None, typer.Option(
        help="Self-experience: the model the system answers with (default: the llm player's, "
             "so the agent that played answers)")] = None,
    horizon: Annotated[list[int] | None, typer.Option(
        help="Self-experience: also ask about steps 1..N only, right after step N (repeatable)"
    )] = None,
    max_per_template: Annotated[int, typer.Option(
        help="Self-experience: questions per template and horizon")] = 3,
    question_seed: Annotated[int, typer.Option(
        help="Self-experience: seed of the question generator")] = 0,
    bench_option: Annotated[list[str] | None, typer.Option(
        help="Self-experience: key=value for the games loader (steps_per_session, frames)")] = None,
    concurrency: Annotated[int, typer.Option(
        help="Self-experience: questions in flight while answering")] = 4,
    max_tokens: Annotated[int, typer.Option(
        help="Self-experience: the longest answer (and memory write), in tokens")] = 512,
) -> None:
    """Play one episode of a game and log every step's action and true state to --out."""
    # With --system (self-experience) the play is then turned into questions with the fixed
    # template recipe and the system answers them online (design 0032, "Self-experience").
    play_args: dict[str, Any] = {
        "game": game, "player": player, "seed": seed, "steps": steps, "rom": rom,
        "frame_size": frame_size, "noise": noise, "images": images, "history": history,
        "reasks": reasks, "fallback": fallback, "model_base_url": model_base_url,
        "api_key_env": api_key_env, "timeout": timeout, "max_attempts": max_attempts,
        "cache": not no_cache, "cache_path": cache_path}
    try:
        play_args["model_options"] = parse_options(model_option or [], "--model-option")
        play_args["game_options"] = parse_options(game_option or [], "--game-option")
        if system is not None:
            _self_experience(play_args, out=out, system=system,
                             system_options=parse_options(system_option or []), model=model,
                             horizons=horizon or [], max_per_template=max_per_template,
                             question_seed=question_seed,
                             bench_options=parse_options(bench_option or [], "--bench-option"),
                             concurrency=concurrency, max_tokens=max_tokens)
            return
        summary = _play(out=out, **play_args)
    except KeyboardInterrupt:
        print(f"interrupted; the steps so far are in {out} (meta.json end: player_stopped)")
        raise typer.Exit(130) from None
    except MemgaugeError as exc:
        fail(exc)
    print(summary)


def _self_experience(play_args: dict[str, Any], *, out: str, system: str,
                     system_options: dict[str, str], model: str | None, horizons: list[int],
                     max_per_template: int, question_seed: int, bench_options: dict[str, str],
                     concurrency: int, max_tokens: int) -> None:
    """Play (unless a finished play of this recipe is there), make the questions (unless
    made), then answer them with ``memgauge run``'s runner, online (design 0032)."""
    player = play_args["player"]
    if player.startswith("replay:"):
        raise ConfigError("--system with a replay player is controlled exposure: run "
                          "`memgauge generate games` on the trajectory, then `memgauge run "
                          "--bench games`")
    reader = model or llm_spec_model(player)
    if reader is None:
        raise ConfigError(f"--system with --player {player}: give --model, the model the "
                          "system answers with (an llm: player's model is the default)")
    lookup("system", system)  # an unknown name is refused before any step is played
    steps = play_args["steps"] or DEFAULT_STEPS
    late = [h for h in horizons if not 1 <= h <= steps]
    if late:
        raise ConfigError(f"--horizon {late[0]}: must be within 1..{steps} (the step cap)")
    plan = SelfExperience(
        run_dir=Path(out), game=play_args["game"], seed=play_args["seed"] or 0, steps=steps,
        player=player, horizons=tuple(sorted(set(horizons))), max_per_template=max_per_template,
        question_seed=question_seed,
        player_options={k: play_args[k] for k in ("noise", "images", "history", "reasks",
                                                  "fallback", "rom", "frame_size",
                                                  "game_options")})
    check_folder(plan)
    if needs_play(plan):
        print(_play(out=str(plan.trajectory_dir), **{**play_args, "seed": plan.seed,
                                                     "steps": plan.steps}))
    else:
        print(f"play already done: {plan.trajectory_dir}")
    meta, _ = read_trajectory(plan.trajectory_dir)
    reached = tuple(h for h in plan.horizons if h <= meta.steps)  # the game may end early
    if reached != plan.horizons:
        print(f"the play ended at step {meta.steps}: horizons "
              f"{', '.join(str(h) for h in plan.horizons if h not in reached)} not asked")
    effective = dataclasses.replace(plan, horizons=reached)
    if needs_questions(effective):
        counts = generate_questions(effective)["counts"]
        print(f"{counts['questions']} questions from {len(counts['per_template'])} templates "
              f"-> {plan.bench_dir}")
    config = RunConfig(
        bench="games", data=str(plan.bench_dir), out=str(plan.run_dir), system=system,
        system_options=system_options, model=reader, base_url=play_args["model_base_url"],
        api_key_env=play_args["api_key_env"], model_options=play_args["model_options"],
        bench_options=bench_options, concurrency=concurrency, protocol="online",
        max_tokens=max_tokens,
        timeout_s=play_args["timeout"], max_attempts=play_args["max_attempts"],
        cache=play_args["cache"], cache_path=play_args["cache_path"], argv=sys.argv[1:])
    execute_run(config)


def _play(*, game: str, out: str, player: str, seed: int | None, steps: int | None,
          rom: str | None,
          frame_size: int | None, noise: float, images: bool, history: int, reasks: int,
          fallback: str | None, model_base_url: str | None, api_key_env: str,
          model_options: dict[str, str], timeout: float, max_attempts: int, cache: bool,
          cache_path: str | None, game_options: dict[str, str] | None = None) -> str:
    """Check everything, open the env and the player, play; the one-line summary."""
    if game not in env_names():
        raise ConfigError(f"unknown game {game!r}; choose one of {', '.join(env_names())}")
    if steps is not None and steps < 1:
        raise ConfigError(f"--steps {steps}: give at least 1")
    if Path(out).exists() and not Path(out).is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the trajectory")
    held = Path(out) / "trajectory.jsonl"
    if held.is_file() and held.stat().st_size:  # before a game is generated into --out/game
        raise ConfigError(f"{held} already holds a trajectory; choose another --out")
    game_options = dict(game_options or {})
    options: dict[str, Any] = {}
    if frame_size is not None:
        options["frame_size"] = frame_size
    if rom is not None:
        options["rom"] = rom
    options.update(game_options)
    if game == "textworld" and "game_dir" not in options:
        # The generated game is kept with its trajectory, so `memgauge play jericho --rom
        # TRAJ_DIR/game/game.z8` replays the very game (a temporary folder would be gone).
        options["game_dir"] = str(Path(out) / "game")
    model_spec = llm_spec_model(player)
    chat_model = closer = None
    if model_spec is not None:
        chat_model, closer = _llm_model(model_spec, base_url=model_base_url,
                                        api_key_env=api_key_env, model_options=model_options,
                                        timeout=timeout, max_attempts=max_attempts,
                                        cache=cache, cache_path=cache_path)
    played = False
    try:
        llm_options = ({"images": images, "history": history, "reasks": reasks,
                        "fallback": fallback} if model_spec is not None else {})
        chosen = make_player(player, env_name=game, seed=seed or 0, model=chat_model,
                             noise=noise, **llm_options)
        # a replay plays its own seed and length by default
        source = chosen.source if isinstance(chosen, ReplayPlayer) else None
        if seed is None:
            seed = source.seed if source is not None and source.seed is not None else 0
        if steps is None:
            replay_steps: int | None = source.steps if source is not None else None
            steps = replay_steps or DEFAULT_STEPS
        env = open_env(game, seed=seed, options=options)
        try:
            player_options = {"noise": noise} if player == "scripted" else dict(llm_options)
            if isinstance(chosen, LLMPlayer):  # whether its decoding was held to the legal actions
                player_options["constrained_choice"] = chosen.constrained
                player_options["structured_choice"] = chosen.structured
            meta = new_meta(env, seed=seed, player=player, max_steps=steps,
                            player_options=player_options)
            try:
                played = True  # from here the model's client is closed by the play's loop
                meta = asyncio.run(_play_then_close(env, chosen, out, meta, steps,
                                                    chat_model))
            except (ModelError, OSError) as exc:  # a model that failed for good, a full disk
                kind = "the model failed" if isinstance(exc, ModelError) else "play stopped"
                raise MemgaugeError(f"{kind} ({exc}); the steps so far are in {out} "
                                    "(meta.json end: player_stopped)") from None
        finally:
            env.close()
    finally:
        if not played and isinstance(chat_model, Closable):
            asyncio.run(chat_model.aclose())  # a local: server stops with its client
        if closer is not None:
            closer()
    return _summary(meta, out)


async def _play_then_close(env: Any, player: Any, out: str, meta: Any, steps: int,
                           model: Any) -> Any:
    """Play, then close the model's client on the same event loop it ran on."""
    try:
        return await play(env, player, out, meta, steps)
    finally:
        await aclose_if_closable(model)


def _llm_model(spec: str, *, base_url: str | None, api_key_env: str,
               model_options: dict[str, str], timeout: float, max_attempts: int, cache: bool,
               cache_path: str | None) -> tuple[Any, Any]:
    """The player's ChatModel, made as ``memgauge run`` makes its model (the same
    settings, the response cache, ``local:`` models), and checked before the first step."""
    response_cache = ResponseCache(cache_path) if cache else None
    try:
        model = create_model(spec, ModelSettings(
            base_url=base_url, api_key_env=api_key_env, concurrency=1, timeout_s=timeout,
            max_attempts=max_attempts, cache=response_cache, model_options=model_options))
        preflight([(model, Role("model", "--model-base-url", "--api-key-env"))], {})
    except BaseException:
        if response_cache is not None:
            response_cache.close()
        raise

    def close() -> None:
        if response_cache is not None:
            response_cache.close()

    return model, close


def _summary(meta: Any, out: str) -> str:
    line = f"played {meta.steps} steps of {meta.env} (end: {meta.end})"
    last, logged, fell_back = _read_log(out)
    achievements = last.get("achievements") if last and meta.env == "crafter" else None
    if achievements is not None:
        got = ", ".join(f"{k} {v}" for k, v in sorted(achievements.items()) if v)
        line += f"; achievements: {got or 'none'}"
    if meta.player.startswith("llm:"):
        line += "; " + _fallback_rate(logged, fell_back, meta.player_options)
    return f"{line} -> {out}"


def _fallback_rate(logged: int, fell_back: int, player_options: dict[str, Any]) -> str:
    """How often the LLM player named no legal action and took its fallback: a play that
    is mostly fallbacks is the fallback's play, not the model's (design 0032)."""
    share = f" ({fell_back / logged:.0%})" if logged else ""
    how = ("its choice held to the legal actions" if player_options.get("constrained_choice")
           else "its choice asked as structured output (a JSON schema of the legal actions)"
           if player_options.get("structured_choice") else "its choice unconstrained")
    return (f"fallback action on {fell_back} of {logged} steps{share} (no reply named a "
            f"legal action); {how}")


def _read_log(out: str) -> tuple[dict[str, Any] | None, int, int]:
    """The last step, the number of steps and how many of them were fallbacks."""
    last, logged, fell_back = None, 0, 0
    with open(Path(out) / "trajectory.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                last = json.loads(line)
                logged += 1
                fell_back += bool((last.get("player") or {}).get("fallback"))
    return last, logged, fell_back
