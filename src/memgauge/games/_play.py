"""The play loop: an env, a player and a trajectory folder (design 0032).

reset → ``writer.start`` (the state at reset and its frame) → up to ``max_steps`` times:
Observation → Decision → ``env.step`` → ``writer.add`` → until the game is done, the step
cap, or the player stops. An error or an interrupt keeps every written step and writes
meta.json with ``end = "player_stopped"`` and the message (``end_message``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._trajectory import EndReason, Step, TrajectoryMeta, TrajectoryWriter
from .envs import GameEnv
from .players import Player

END_REASONS: frozenset[str] = frozenset({"step_cap", "death", "game_over", "won",
                                         "player_stopped"})


def new_meta(env: GameEnv, *, seed: int | None, player: str, max_steps: int,
             player_options: dict[str, Any] | None = None) -> TrajectoryMeta:
    info = env.info()
    return TrajectoryMeta(env=env.name, env_version=info.get("env_version"), seed=seed,
                          player=player, player_options=dict(player_options or {}),
                          max_steps=max_steps, game=info.get("game") or {},
                          admissible_note=info.get("admissible_note"),
                          frame_size=info.get("frame_size"))


def _with_frame(env: GameEnv, writer: TrajectoryWriter,
                fields: dict[str, Any]) -> tuple[dict[str, Any], bytes | None]:
    png = env.frame_png()
    if png is not None:
        fields["frame"] = writer.save_frame(png)
    return fields, png


def _end_of(fields: dict[str, Any]) -> EndReason:
    """A done step may name why the game ended (``end``); it goes to meta.json, not the
    step line."""
    end = fields.pop("end", None) or "game_over"
    if end not in END_REASONS:
        raise ValueError(f"the env ended with {end!r}, not one of {sorted(END_REASONS)}")
    return end  # type: ignore[return-value]


async def play(env: GameEnv, player: Player, out: str | Path, meta: TrajectoryMeta,
               max_steps: int) -> TrajectoryMeta:
    """Play one episode into ``out``; return the finished meta."""
    writer = TrajectoryWriter(out, meta)
    state, png = _with_frame(env, writer, env.reset())
    state.pop("end", None)
    writer.start(state)
    end: EndReason = "step_cap"
    try:
        for number in range(1, max_steps + 1):
            observation_fields = {k: v for k, v in state.items() if k != "frame"}
            decision = await player.act(_observation(env, number, state, png,
                                                     observation_fields))
            if decision.stop:
                end = "player_stopped"
                break
            fields, png = _with_frame(env, writer, env.step(decision.action))
            done_end = _end_of(fields) if fields.get("done") else None
            writer.add(Step(step=number, action=decision.action, player=decision.trace,
                            **fields))
            state = fields
            if done_end is not None:
                end = done_end
                break
    except BaseException as exc:  # an interrupt too: keep what was written, say why
        writer.meta.end_message = _describe(exc)
        writer.finish("player_stopped")
        raise
    writer.finish(end)
    return writer.meta


def _observation(env: GameEnv, number: int, state: dict[str, Any], png: bytes | None,
                 fields: dict[str, Any]) -> Any:
    from .players import Observation

    return Observation(step=number, text=str(state.get("observation", "")), frame_png=png,
                       legal=env.legal_actions(), state=fields)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    name = type(exc).__name__
    if name == "CancelledError":
        return "interrupted"
    return f"{name}: {exc}" if str(exc) else name
