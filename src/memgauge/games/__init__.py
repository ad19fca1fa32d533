"""Episodic memory from play (issue 15, design 0032): environments, players, trajectories,
and the question templates that turn a trajectory into a benchmark with computed answers."""

from ._trajectory import (
           FORMAT,
           PlayerTrace,
           Step,
           TrajectoryMeta,
           TrajectoryWriter,
           read_trajectory,
)

__all__ = ["FORMAT", "PlayerTrace", "Step", "TrajectoryMeta", "TrajectoryWriter",
           "read_trajectory"]
