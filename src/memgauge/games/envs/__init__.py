"""Game environments behind one contract (``GameEnv``); each imports its package lazily."""

from ._base import GameEnv, env_names, open_env, register_env

__all__ = ["GameEnv", "env_names", "open_env", "register_env"]
