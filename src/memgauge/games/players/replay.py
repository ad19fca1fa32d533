"""The replay player: the actions of a logged trajectory, in order, then stop."""

from __future__ import annotations

from pathlib import Path

from ...errors import ConfigError
from .._trajectory import TrajectoryMeta, read_trajectory
from ._base import Decision, Observation


class ReplayPlayer:
    name = "replay"

    def __init__(self, folder: str | Path, env_name: str) -> None:
        self.meta, steps = read_trajectory(folder)
        if self.meta.env != env_name:
            raise ConfigError(f"replay:{folder} is a {self.meta.env} trajectory; it cannot "
                              f"play {env_name}")
        self._actions = [s.action for s in steps]

    @property
    def source(self) -> TrajectoryMeta:
        return self.meta

    async def act(self, observation: Observation) -> Decision:
        if observation.step > len(self._actions):
            return Decision(action="", stop=True)
        return Decision(action=self._actions[observation.step - 1])
