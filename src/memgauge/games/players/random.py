"""The random player: uniform over the env's legal actions, from its own seeded generator."""

from __future__ import annotations

import random

from ...errors import ConfigError
from ._base import Decision, Observation


class RandomPlayer:
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    async def act(self, observation: Observation) -> Decision:
        if not observation.legal:
            raise ConfigError("the random player needs the game's legal actions, and this "
                              "game cannot list them; choose another --player")
        return Decision(action=self._rng.choice(observation.legal))
