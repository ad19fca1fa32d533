"""Players: random, scripted, replay and llm (design 0032).

    player = make_player("scripted", env_name="crafter", seed=0)
    player = make_player("replay:trajs/crafter-0", env_name="crafter")
    player = make_player("llm:openai:gpt-4o", env_name="crafter", model=chat_model)
"""

from __future__ import annotations

from typing import Any

from ...errors import ConfigError
from ._base import Decision, Observation, Player

PLAYER_KINDS = ("random", "scripted", "replay:<trajectory folder>", "llm:<model spec>")


def make_player(spec: str, *, env_name: str, seed: int = 0, model: Any = None,
                noise: float = 0.0, **llm_options: Any) -> Player:
    """The player a ``--player`` spec names. ``llm:`` needs ``model``, the ChatModel made
    from the spec's model part (``llm_spec_model`` gives it)."""
    kind, sep, arg = spec.partition(":")
    if kind == "random" and not sep:
        from .random import RandomPlayer

        return RandomPlayer(seed)
    if kind == "scripted" and not sep:
        from .scripted import scripted_player

        return scripted_player(env_name, seed=seed, noise=noise)
    if kind == "replay" and arg:
        from .replay import ReplayPlayer

        return ReplayPlayer(arg, env_name)
    if kind == "llm" and arg:
        if model is None:
            raise ConfigError(f"--player {spec}: the llm player needs its model built first")
        from .llm import LLMPlayer

        return LLMPlayer(model, game=env_name, seed=seed, **llm_options)
    raise ConfigError(f"unknown player {spec!r}; choose one of {', '.join(PLAYER_KINDS)}")


def llm_spec_model(spec: str) -> str | None:
    """The model spec inside ``llm:<model spec>`` (None for other players)."""
    kind, _, arg = spec.partition(":")
    return arg if kind == "llm" and arg else None


__all__ = ["PLAYER_KINDS", "Decision", "Observation", "Player", "llm_spec_model",
           "make_player"]
