"""memgauge: evaluations of long-term multimodal memory.

The library API (imported on first use, so ``import memgauge`` stays light):
:func:`run` answers a benchmark with a system into a run folder, :func:`score` adds
LLM-judge scores to one; see :mod:`memgauge.api` and docs/guide/api.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .api import RunSummary, ScoreConfig, ScoreSummary, run, score
    from .errors import ConfigError, ConfigFieldError, InputError
    from .runner import RunConfig

_LAZY = {"run": "api", "score": "api", "RunSummary": "api", "ScoreConfig": "api",
         "ScoreSummary": "api", "RunConfig": "runner", "ConfigError": "errors",
         "ConfigFieldError": "errors", "InputError": "errors"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memgauge' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)


__all__ = ["ConfigError", "ConfigFieldError", "InputError", "RunConfig", "RunSummary",
           "ScoreConfig", "ScoreSummary", "run", "score"]
