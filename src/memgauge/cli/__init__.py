"""The ``memgauge`` command: ``_app`` holds the typer app and ``COMMANDS``, where each command
is defined, one module per command group (``_run``: run, merge; ``_report``: report,
compare, audit; ``_show``: list, show; ``_score``, ``_demo``, ``_validate``, ``_models``,
``_generate``, ``_cache``, ``_probe``, ``_serve``, ``_play``), each imported when its command
is named (``_lazy``). ``_common`` is what they share. Commands parse their flags and call
the library (:mod:`memgauge.api`)."""

from ._app import app, main
from ._common import EXIT_BUDGET, EXIT_CONFIG, EXIT_INTERRUPTED, EXIT_SOME_FAILED

__all__ = ["EXIT_BUDGET", "EXIT_CONFIG", "EXIT_INTERRUPTED", "EXIT_SOME_FAILED", "app", "main"]
