"""``memgauge play GAME --player P --out TRAJ_DIR``: play one episode and log it as a
trajectory folder (design 0032). This module only declares the command (imported by the
CLI at start-up, so it imports nothing heavy); the loop is ``games._play``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

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
    api_key_env: Annotated[str, typer.Option(help="Env var holding the API key")] = "OPENAI_API_KEY",
    model_option: Annotated[list[str] | None, typer.Option(
        help="key=value for a local: model (repeatable)")] = None,
    game_option: Annotated[list[str] | None, typer.Option(
        help="key=value for the game (repeatable): textworld rooms, objects, quest_length, "
             "game_dir; jericho walkthrough")] = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds")] = 120.0,
    max_attempts: Annotated[int, typer.Option(help="Attempts per model request")] = 6,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the response cache")] = False,
    cache_path: Annotated[str | None, typer.Option(help="Response cache SQLite file")] = None,
) -> None:
    """Play one episode of a game and log every step's action and true state to --out."""
    from .cli import _fail, _options
    from .errors import MemgaugeError

    try:
        summary = _play(game=game, out=out, player=player, seed=seed, steps=steps, rom=rom,
                        frame_size=frame_size, noise=noise, images=images, history=history,
                        reasks=reasks, fallback=fallback, model_base_url=model_base_url,
                        api_key_env=api_key_env,
                        model_options=_options(model_option or [], "--model-option"),
                        game_options=_options(game_option or [], "--game-option"),
                        timeout=timeout, max_attempts=max_attempts, cache=not no_cache,
                        cache_path=cache_path)
    except KeyboardInterrupt:
        print(f"interrupted; the steps so far are in {out} (meta.json end: player_stopped)")
        raise typer.Exit(130) from None
    except MemgaugeError as exc:
        _fail(exc)
    print(summary)


def _play(*, game: str, out: str, player: str, seed: int | None, steps: int | None,
          rom: str | None,
          frame_size: int | None, noise: float, images: bool, history: int, reasks: int,
          fallback: str | None, model_base_url: str | None, api_key_env: str,
          model_options: dict[str, str], timeout: float, max_attempts: int, cache: bool,
          cache_path: str | None, game_options: dict[str, str] | None = None) -> str:
    """Check everything, open the env and the player, play; the one-line summary."""
    import asyncio
    from pathlib import Path

    from .errors import ConfigError, MemgaugeError
    from .games._play import new_meta
    from .games.envs import env_names, open_env
    from .games.players import llm_spec_model, make_player
    from .models import ModelError

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
        source = getattr(chosen, "source", None)  # a replay plays its own seed by default
        if seed is None:
            seed = source.seed if source is not None and source.seed is not None else 0
        if steps is None:
            steps = source.steps if source is not None and source.steps else DEFAULT_STEPS
        env = open_env(game, seed=seed, options=options)
        try:
            player_options = {"noise": noise} if player == "scripted" else dict(llm_options)
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
        if not played and hasattr(chat_model, "aclose"):
            asyncio.run(chat_model.aclose())  # a local: server stops with its client
        if closer is not None:
            closer()
    return _summary(meta, out)


async def _play_then_close(env: Any, player: Any, out: str, meta: Any, steps: int,
                           model: Any) -> Any:
    """Play, then close the model's client on the same event loop it ran on."""
    from .games._play import play

    try:
        return await play(env, player, out, meta, steps)
    finally:
        aclose = getattr(model, "aclose", None)
        if aclose is not None:
            await aclose()


def _llm_model(spec: str, *, base_url: str | None, api_key_env: str,
               model_options: dict[str, str], timeout: float, max_attempts: int, cache: bool,
               cache_path: str | None) -> tuple[Any, Any]:
    """The player's ChatModel, made as ``memgauge run`` makes its model (the same
    settings, the response cache, ``local:`` models), and checked before the first step."""
    from .cache import ResponseCache
    from .models import ModelSettings, create_model
    from .runner._preflight import Role
    from .runner._preflight import check as preflight

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
    last = _last_achievements(out) if meta.env == "crafter" else None
    if last is not None:
        got = ", ".join(f"{k} {v}" for k, v in sorted(last.items()) if v)
        line += f"; achievements: {got or 'none'}"
    return f"{line} -> {out}"


def _last_achievements(out: str) -> dict[str, int] | None:
    import json
    from pathlib import Path

    last = None
    with open(Path(out) / "trajectory.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                last = line
    return json.loads(last).get("achievements") if last else None
