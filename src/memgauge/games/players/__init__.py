"""Players: random, scripted, replay and llm (design 0032)."""

from ._base import Decision, Observation, Player

__all__ = ["Decision", "Observation", "Player"]
