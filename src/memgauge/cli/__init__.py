"""The ``memgauge`` command: one module per command group (``_app``: the typer app and the
run/report/score family; ``_execute``, ``_cache``, ``_config``, ``_games``, ``_inspect``,
``_play``, ``_probe``, ``_serve``; ``_common``: what they share). Commands parse their
flags and call the library (:mod:`memgauge.api`)."""

from ._app import app, main
from ._common import EXIT_BUDGET, EXIT_CONFIG, EXIT_INTERRUPTED, EXIT_SOME_FAILED

__all__ = ["EXIT_BUDGET", "EXIT_CONFIG", "EXIT_INTERRUPTED", "EXIT_SOME_FAILED", "app", "main"]
