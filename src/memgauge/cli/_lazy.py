"""Commands imported when named: click's "lazy loading of subcommands", adapted to Typer.

The top-level group knows each command's name and the module that defines it
(``"report": "_report:report"``); the module is imported only when the command line names
the command, or when the list of commands is shown (``memgauge --help``). So each command
module imports what it uses at its top, and ``memgauge show`` does not import the runner,
the games or the validators (design 0046)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, ClassVar

import typer
import typer.main
from typer.core import TyperGroup

from ._common import reflow_help

# A click command as typer makes it: typer vendors click as a private module (typer._click),
# so its class is not named here.
Command = Any


def load_command(name: str, where: str) -> Command:
    """The click command ``name`` from ``where`` (``"_module:attribute"`` in this package):
    a command function, or a ``typer.Typer`` of subcommands, registered as the top-level app
    would register it (``app.command(name)`` / ``app.add_typer(sub, name=name)``)."""
    module_name, _, attribute = where.partition(":")
    target: Any = getattr(importlib.import_module(f"{__package__}.{module_name}"), attribute)
    holder = typer.Typer()
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
    reflow_help(holder)
    return typer.main.get_group(holder).commands[name]


class LazyCommands(MutableMapping[str, Command]):
    """A group's commands by name, each loaded on first access. Iterating gives the names
    without loading anything (a mistyped command's "did you mean" reads only names)."""

    def __init__(self, where: Mapping[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._loaded:
            self._loaded[name] = load_command(name, self._where[name])  # KeyError: unknown
        return self._loaded[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._loaded[name] = command
        self._where.setdefault(name, "")

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


class LazyGroup(TyperGroup):
    """A Typer group whose commands are those of ``command_modules`` (name -> where),
    loaded by :class:`LazyCommands`; a subclass names them."""

    command_modules: ClassVar[Mapping[str, str]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        registered = dict(self.commands)  # those added on the Typer app itself
        self.commands = LazyCommands(self.command_modules)
        self.commands.update(registered)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # in the map's order, nothing imported
