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
    library does not know how it was given. ``template`` marks each field as ``{name}``
    and an entry of a mapping field as ``{name[key]}`` (:func:`entry` writes one);
    ``str()`` shows field names (``system_options top_k``), and the CLI shows its
    flags instead (``--system-option top_k``; :meth:`render`)."""

    def __init__(self, template: str, *fields: str) -> None:
        self.template, self.fields = template, fields
        super().__init__(_render(template, fields, field_name))

    @property
    def field(self) -> str:
        """The field the mistake is in (the first one named)."""
        return self.fields[0]

    def render(self, name_of: Callable[..., str]) -> str:
        """The message with each field shown as ``name_of(field)`` (e.g. its flag), and
        each entry of one as ``name_of(field, key)``."""
        return _render(self.template, self.fields, name_of)


class FieldText(str):
    """A note that names configuration fields (``workers 4 reduced to 2: ...``), marked as
    in :class:`ConfigFieldError`: it reads as the field names, and :meth:`render` shows
    what the reader gave instead (the CLI: its flags)."""

    template: str
    fields: tuple[str, ...]

    def __new__(cls, template: str, *fields: str) -> FieldText:
        text = super().__new__(cls, _render(template, fields, field_name))
        text.template, text.fields = template, fields
        return text

    def render(self, name_of: Callable[..., str]) -> str:
        return _render(self.template, self.fields, name_of)

    def __reduce__(self) -> tuple[type[FieldText], tuple[str, ...]]:
        return (FieldText, (self.template, *self.fields))  # pickled (a worker's) as made


def _render(template: str, fields: tuple[str, ...], name_of: Callable[..., str]) -> str:
    return template.format_map({f: _Named(f, name_of) for f in fields})


class _Named:
    """A field in a template: formats as its name, and indexes to one of its entries (so
    ``{system_options[top_k]}`` names the key the way the reader gave it)."""

    def __init__(self, field: str, name_of: Callable[..., str]) -> None:
        self.field, self.name_of = field, name_of

    def __format__(self, spec: str) -> str:
        return self.name_of(self.field)

    def __getitem__(self, key: object) -> str:
        return self.name_of(self.field, str(key))


def field_name(field: str, key: str | None = None) -> str:
    """How the library names a field, or an entry of a mapping field, in its errors
    (``system_options top_k``: the field, then the key as the CLI's flag is followed by
    it, so ``system_options top_k=0`` reads like ``concurrency 0``)."""
    return field if key is None else f"{field} {key}"


def literal(value: object) -> str:
    """``value`` as text in a ConfigFieldError's template (its braces shown as they are)."""
    return str(value).replace("{", "{{").replace("}", "}}")


def entry(field: str, key: str) -> str:
    """The template mark for the entry ``key`` of the mapping ``field`` (a system or model
    option); a key the mark cannot hold (empty, digits, a ``]``) is shown after the field."""
    if not key or key.isdigit() or "]" in key:
        return f"{{{field}}} {literal(key)}"
    return f"{{{field}[{key}]}}"  # the text between brackets is taken as it is


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


_NO_VALUE = object()


def option_error(key: str, reason: str, value: object = _NO_VALUE, *,
                 field: str = "system_options") -> ConfigFieldError:
    """A bad entry of a mapping field, as ``key=value: reason`` (``reason`` plain text):
    ``system_options top_k=0: must be at least 1`` to a Python caller,
    ``--system-option top_k=0: ...`` on the command line."""
    shown = "" if value is _NO_VALUE else f"={literal(value)}"
    return ConfigFieldError(f"{entry(field, key)}{shown}: {literal(reason)}", field)
