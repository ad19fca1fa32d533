"""What every command module of the CLI shares: the stderr console, the exit statuses, and
turning a user's mistake into one line and exit 2 (``fail``), a note into a line on stderr
(``say``), and ``key=value`` / JSON flags into values."""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any, NoReturn

import typer

from .._secrets import redact_urls_in_text
from ..errors import ConfigFieldError, MemgaugeError
from ..registry import known_names
from ..report import show_controls


class LazyConsole:
    """A rich console made on first use: ``memgauge run`` reaches its first request before
    anything is printed, and importing rich costs ~40 ms of that."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._console: Any = None

    def get(self) -> Any:
        if self._console is None:
            # deferred: rich costs ~40 ms, and most runs print nothing through it
            from rich.console import Console

            self._console = Console(**self._kwargs)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


err = LazyConsole(stderr=True)


# Exit statuses (README, "Exit status"): 0 every question answered; 2 a configuration or
# input error (nothing, or only what was done before the stop, was answered); 3 some
# questions failed and are recorded as errors (rerun to retry them); 130 interrupted.
EXIT_CONFIG = 2
EXIT_SOME_FAILED = 3
EXIT_BUDGET = 4  # a budget stopped the run; rerunning with a higher one resumes it
EXIT_INTERRUPTED = 130

# RunConfig fields whose flag is not ``--`` and the field's name with dashes
FLAG_OF_FIELD = {"timeout_s": "--timeout", "ray_keep_warm_s": "--ray-keep-warm",
                 "out": "--out", "cache": "--no-cache", "system_options": "--system-option",
                 "model_options": "--model-option", "bench_options": "--bench-option",
                 "judge_model_options": "--judge-model-option",
                 "captioner_model_options": "--captioner-model-option"}


def registry_help(kind: str, lead: str) -> str:
    """``lead`` and the registered names of ``kind`` (from the registry, plugins included),
    when help is being shown: listing them imports every built-in (about a second), which
    no other command line should pay."""
    if not {"--help", "-h"} & set(sys.argv[1:]):
        return lead
    return f"{lead}: {', '.join(known_names(kind))}"


def flag_for(field: str, key: str | None = None) -> str:
    """The flag that gives a configuration field, or one ``key=value`` of a mapping field
    (``--system-option top_k``): a config error names what the user typed."""
    flag = FLAG_OF_FIELD.get(field, "--" + field.replace("_", "-"))
    return flag if key is None else f"{flag} {key}"


def fail(exc: Exception) -> NoReturn:
    """One line naming the mistake, on stderr, and exit 2 (never a traceback)."""
    from rich.markup import escape  # deferred: rich (~40 ms), only once a command fails

    # The message is user text (paths, hints like memgauge[local]): never read as markup,
    # and its control characters (ESC sequences from a file name or a server) shown, not run.
    text = exc.render(flag_for) if isinstance(exc, ConfigFieldError) else str(exc)
    message = redact_urls_in_text(text)  # a URL's password never reaches the terminal
    err.print(f"[bold red]error:[/] {escape(show_controls(message))}", highlight=False,
              soft_wrap=True)
    # a run cut short (a killed worker) is not a mistake to fix: its own status, 3
    raise typer.Exit(exc.exit_code if isinstance(exc, MemgaugeError) else EXIT_CONFIG)


def say(text: str, style: str | None = None) -> None:
    """A line on stderr: through rich on a terminal, plain otherwise (importing rich would
    cost ~40 ms at the end of every scripted run)."""
    text = show_controls(redact_urls_in_text(text))  # it quotes servers' error messages
    if sys.stderr.isatty():
        err.print(text, style=style, markup=False, highlight=False, soft_wrap=True)
    else:
        print(text, file=sys.stderr, flush=True)


def json_object(text: str | None, flag: str = "--extra-body") -> dict[str, Any]:
    """A flag's JSON object (``--extra-body``), else a MemgaugeError naming the flag."""
    if not text:
        return {}
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise MemgaugeError(f"{flag} is not valid JSON: {exc}") from None
    except RecursionError:
        raise MemgaugeError(f"{flag} is nested too deep to be read") from None
    if not isinstance(obj, dict):
        raise MemgaugeError(f"{flag} must be a JSON object ({{...}}), got {type(obj).__name__}")
    return obj


def parse_options(pairs: list[str], flag: str = "--system-option") -> dict[str, str]:
    """``key=value`` flags as a dict, else a MemgaugeError naming the flag and the pair."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise MemgaugeError(f"{flag} must look like key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def reflow_help(app: typer.Typer) -> None:
    """Each command's help with one line per paragraph. Typer's rich help keeps a docstring's
    line breaks in the list of commands, so a description broke mid-sentence where the
    docstring did and again where the terminal did; joined, the terminal alone wraps it."""
    for info in app.registered_commands:
        text = info.help or (inspect.getdoc(info.callback) if info.callback else None)
        if text:
            info.help = "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
