"""The ``memgauge`` command line: the app, its callback (``--version``) and where each
command is defined (``COMMANDS``; one module per command group)."""

from __future__ import annotations

import gc
import os
import sys
from typing import Annotated

import typer

from .. import __version__
from ..report import show_controls
from ._common import EXIT_CONFIG
from ._config import load_env_file
from ._lazy import LazyGroup

# Every command, in the order `memgauge --help` lists them, and where it is defined
# ("module:attribute" in this package); a module is imported when its command is named.
COMMANDS = {
    "run": "_run:run",
    "report": "_report:report",
    "merge": "_run:merge",
    "demo": "_demo:demo",
    "validate": "_validate:validate",
    "serve-memory": "_serve:serve_memory",
    "play": "_play:play_command",
    "list": "_show:list_",
    "show": "_show:show",
    "compare": "_report:compare",
    "audit": "_report:audit",
    "score": "_score:score",
    "models": "_models:models_app",
    "generate": "_generate:generate_app",
    "cache": "_cache:cache_app",
    "probe": "_probe:probe_app",
}


class _Commands(LazyGroup):
    command_modules = COMMANDS


app = typer.Typer(cls=_Commands, add_completion=False, no_args_is_help=True,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Build, run, score and explain evaluations of long-term multimodal memory.")


def _version(value: bool) -> None:
    if value:
        print(f"memgauge {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit")] = False,
) -> None:
    """Build, run, score and explain evaluations of long-term multimodal memory."""


def main() -> None:
    # pydantic looks for its plugins by scanning every installed distribution's entry points
    # (~25 ms of start-up) and memgauge uses none; a user's explicit setting wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    try:
        try:
            load_env_file()  # ./.env: keys and endpoints kept out of shell history
        except ValueError as exc:
            print(f"error: {show_controls(str(exc))}", file=sys.stderr)
            sys.exit(EXIT_CONFIG)
        app()
    finally:
        # The process ends here: the interpreter's last cyclic collection would walk every
        # module's objects (~0.1-0.15 s at the end of a run) only to free memory the OS takes
        # back anyway. Files are closed by now; refcounted objects are still released.
        gc.freeze()


if __name__ == "__main__":
    main()
