"""The player contract (design 0032).

    player = make_player("scripted", env_name="crafter", seed=0, model=None)
    decision = await player.act(Observation(step=1, text=..., frame_png=..., legal=[...]))
    decision.action, decision.trace      # the chosen action and how it was chosen

``act`` is async so an LLM player can await the run's ChatModel; the others return at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .._trajectory import PlayerTrace


@dataclass(frozen=True)
class Observation:
    """What the player is shown before choosing the action of ``step``."""

    step: int
    text: str
    frame_png: bytes | None = None
    legal: list[str] | None = None  # None: the env cannot list them
    state: dict[str, Any] = field(default_factory=dict)  # the Step fields after the last action


@dataclass(frozen=True)
class Decision:
    action: str
    trace: PlayerTrace | None = None
    stop: bool = False  # the player has nothing more to do (a walkthrough ran out)


class Player(Protocol):
    name: str

    async def act(self, observation: Observation) -> Decision: ...
