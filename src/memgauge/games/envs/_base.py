"""The environment contract the play loop drives (design 0032).

    env = open_env("crafter", seed=0, options={})
    initial = env.reset()            # Step fields at reset (no step number, no action)
    fields = env.step("move_left")   # Step fields after the action (no step number)
    env.legal_actions()              # names the player may choose from (None: unknown)
    env.close()

An env returns plain dicts of ``Step`` fields; the play loop numbers the steps, stores the
frames (``frame_png`` is the picture after the last reset/step, or None) and writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...errors import ConfigError


class GameEnv(Protocol):
    name: str  # crafter | textworld | jericho
    kind: str  # the template game kind: crafter | text

    def reset(self) -> dict[str, Any]: ...

    def step(self, action: str) -> dict[str, Any]: ...

    def legal_actions(self) -> list[str] | None: ...

    def frame_png(self) -> bytes | None: ...

    def info(self) -> dict[str, Any]:
        """``env_version``, ``game`` (file name, sha256, settings), ``admissible_note``,
        ``frame_size`` for meta.json."""
        ...

    def close(self) -> None: ...


EnvFactory = Callable[..., GameEnv]
_ENVS: dict[str, tuple[str, str]] = {}  # name -> (module, factory attribute), imported lazily


def register_env(name: str, module: str, attr: str) -> None:
    _ENVS[name] = (module, attr)


def env_names() -> list[str]:
    from . import _known  # noqa: F401  (registers the built-in names)

    return sorted(_ENVS)


def open_env(name: str, **kwargs: Any) -> GameEnv:
    """Open an env by name; its package is imported only now (extra ``games``), and a missing
    package is a ConfigError saying what to install."""
    import importlib

    env_names()
    if name not in _ENVS:
        raise ConfigError(f"unknown game {name!r}; choose one of {', '.join(env_names())}")
    module, attr = _ENVS[name]
    factory: EnvFactory = getattr(importlib.import_module(module), attr)
    return factory(**kwargs)
