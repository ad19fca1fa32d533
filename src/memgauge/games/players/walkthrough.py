"""The scripted text-game player: the game's own walkthrough, with optional noise (design 0032).

    player = WalkthroughPlayer(seed=0, noise=0.1)
    decision = await player.act(observation)   # the next walkthrough command, or a detour

The walkthrough is the one the env reports at reset (``walkthrough`` in the reset state:
TextWorld's winning commands, Jericho's ``get_walkthrough()`` or a file given to the env).
With noise ε, on a fraction ε of the steps it sends a seeded random command instead —
an admissible one when the env lists them, else one of the walkthrough's own commands or
``look``/``inventory`` — and then resumes the walkthrough where it left off. When the
walkthrough is used up and the game goes on, it stops (``Decision(stop=True)``).
"""

from __future__ import annotations

import random

from ...errors import ConfigError
from .._trajectory import PlayerTrace
from ._base import Decision, Observation

_ALWAYS_KNOWN = ("look", "inventory")


class WalkthroughPlayer:
    name = "scripted"

    def __init__(self, seed: int = 0, noise: float = 0.0,
                 walkthrough: list[str] | None = None) -> None:
        self._rng = random.Random(seed)
        self.noise = noise
        self._commands = list(walkthrough) if walkthrough is not None else None
        self._next = 0

    def _walkthrough(self, observation: Observation) -> list[str]:
        if self._commands is None:
            commands = observation.state.get("walkthrough")
            if not commands:
                raise ConfigError("the scripted text player follows the game's walkthrough, "
                                  "and this game reports none (meta.json game.walkthrough_note "
                                  "says why; for jericho give the option walkthrough=FILE)")
            self._commands = [str(c) for c in commands]
        return self._commands

    async def act(self, observation: Observation) -> Decision:
        commands = self._walkthrough(observation)
        if self._next >= len(commands):
            return Decision(action="", stop=True,
                            trace=PlayerTrace(reason="the walkthrough is done"))
        planned = commands[self._next]
        if self.noise and self._rng.random() < self.noise:
            detours = sorted(set(observation.legal or [*commands, *_ALWAYS_KNOWN]) - {planned})
            if detours:
                return Decision(action=self._rng.choice(detours),
                                trace=PlayerTrace(reason="noise"))
        self._next += 1
        return Decision(action=planned, trace=PlayerTrace(
            reason=f"walkthrough {self._next}/{len(commands)}"))
