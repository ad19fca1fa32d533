"""Errors that name the file, the item and the field, so bad input is easy to fix."""

from __future__ import annotations

from collections.abc import Callable


class MemgaugeError(Exception):
    """Base class for errors memgauge raises on purpose."""

    # The command line's exit status when this error ends a command: 2, a mistake to fix
    # (README, "Exit status"); a run cut short for another reason says 3.
    exit_code: int = 2


class EpisodeFailure(MemgaugeError):
    """A failure that stops an episode before its questions are asked (its captions could
    not be made): the runner records each unanswered question of the episode as an error
    of kind ``error_kind``. Any other exception there is recorded as ``system_error``."""

    error_kind: str = "system_error"


class InputError(MemgaugeError):
    """Bad input data: names where it is so the user can fix it."""

    def __init__(self, message: str, *, file: str | None = None, item: str | None = None,
                 field: str | None = None) -> None:
        self.file, self.item, self.field, self.reason = file, item, field, message
        where = []
        if file:
            where.append(f"file {file}")
        if item:
            where.append(f"item {item}")
        if field:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ConfigError(MemgaugeError):
    """A bad command-line option or configuration value."""


class ConfigFieldError(ConfigError):
    """A bad configuration value, named by its field (``concurrency``), not by a flag: the
    library does not know how it was given. ``template`` marks each field as ``{name}``;
    ``str()`` shows the field names, and the CLI shows its flags instead
    (:meth:`render`)."""

    def __init__(self, template: str, *fields: str) -> None:
        self.template, self.fields = template, fields
        super().__init__(self.render(lambda name: name))

    @property
    def field(self) -> str:
        """The field the mistake is in (the first one named)."""
        return self.fields[0]

    def render(self, name_of: Callable[[str], str]) -> str:
        """The message with each field shown as ``name_of(field)`` (e.g. its flag)."""
        return self.template.format_map({f: name_of(f) for f in self.fields})


class RunIncomplete(MemgaugeError):
    """A run that stopped short for a reason outside the configuration (a worker process
    killed): what was recorded is kept and a rerun resumes. The CLI exits with 3 (some
    questions not answered; rerun), not 2 (a mistake to fix)."""

    exit_code = 3


class ContextOverflowError(MemgaugeError):
    """The assembled prompt is longer than the model's context and the policy is 'error'."""

    def __init__(self, tokens: int, limit: int) -> None:
        self.tokens, self.limit = tokens, limit
        super().__init__(f"prompt has {tokens} tokens, over the limit of {limit}")
