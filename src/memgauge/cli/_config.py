"""Where a command's settings come from besides its flags: ``--config FILE.toml`` and ``.env``.

Precedence, highest first: a flag on the command line, an environment variable, the config
file, the built-in default. The config file takes the same keys as the flags (``base-url``
or ``base_url`` for ``--base-url``); a file shared by several commands puts each one's keys
in a table named after it (``[run]``, ``[score]``). Paths in it are read like paths given as
flags: relative to the working directory.

Example ``run.toml``::

    bench = "memlens"
    data = "data/dataset_32k.json"
    out = "runs/qwen-32k"
    model = "openai:qwen2.5-vl-7b"
    base-url = "http://localhost:8000/v1"
    system-option = { top_k = 5 }
"""

from __future__ import annotations

import difflib
import os
import tomllib
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

ENV_FILE = ".env"


def load_env_file(path: str | os.PathLike[str] = ENV_FILE) -> list[str]:
    """Set the variables a ``.env`` file in the working directory names, unless already set
    (the environment wins); returns the names it set. Only the working directory's file is
    read: a ``.env`` higher up belongs to some other project."""
    if not Path(path).is_file():
        return []
    from dotenv import dotenv_values  # deferred: only where a .env file is

    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read as a .env file ({exc})") from None
    set_now = []
    for name, value in values.items():
        if value is not None and name not in os.environ:
            os.environ[name] = value
            set_now.append(name)
    return set_now


def _keys(command: Any) -> dict[str, Any]:
    """Each flag's config key (its long name, with ``-`` or ``_``) -> its parameter."""
    keys: dict[str, Any] = {}
    for param in command.params:
        if param.param_type_name != "option" or param.name in (None, "config_file", "help"):
            continue
        for opt in param.opts:
            if opt.startswith("--"):
                keys[opt[2:]] = param
                keys[opt[2:].replace("-", "_")] = param
    return keys


def _value(param: Any, key: str, value: Any, where: str) -> Any:
    """A TOML value as the flag would take it; a table of key=value pairs (``{top_k = 5}``)
    stands for a repeated ``key=value`` flag."""
    if param.multiple:
        if isinstance(value, dict):
            value = [f"{k}={_scalar(v)}" for k, v in value.items()]
        elif not isinstance(value, list):
            value = [value]
        return [_scalar(v) for v in value]
    if isinstance(value, (dict, list)):
        raise typer.BadParameter(f"{where}: {key} takes one value, got a "
                                 f"{'table' if isinstance(value, dict) else 'list'}")
    return value


def _scalar(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def read_config(path: str, ctx: Any) -> dict[str, Any]:
    """The ``default_map`` of ``command`` (called ``name``) from a TOML file, every key and
    value checked: a typo or a wrong type is an error naming the file and the key."""
    command, name = ctx.command, ctx.info_name or ctx.command.name or ""
    p = Path(path)
    if not p.is_file():
        raise typer.BadParameter(f"{path}: no such file" if not p.exists()
                                 else f"{path}: not a file")
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise typer.BadParameter(f"{path}: not a UTF-8 text file") from None
    except tomllib.TOMLDecodeError as exc:
        raise typer.BadParameter(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise typer.BadParameter(f"{path}: cannot be read ({exc.strerror})") from None
    section = doc.get(name)
    if isinstance(section, dict):
        table, where = section, f"{path} [{name}]"
    else:
        # a flat file; tables named after other commands belong to them
        root = ctx.find_root().command
        commands = set(root.list_commands(ctx)) if isinstance(root, TyperGroup) else set()
        table = {k: v for k, v in doc.items() if not (isinstance(v, dict) and k in commands)}
        where = path
    keys = _keys(command)
    out: dict[str, Any] = {}
    for key, value in table.items():
        param = keys.get(key)
        if param is None:
            near = difflib.get_close_matches(key, list(keys), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise typer.BadParameter(f"{where}: {key!r} is not an option of "
                                     f"`memgauge {name}`{hint}")
        value = _value(param, key, value, where)
        try:
            param.get_runtime_param().coerce(value, param=param, ctx=ctx)
        except typer.BadParameter as exc:
            raise typer.BadParameter(f"{where}: {key} = {value!r}: {exc.message}") from None
        out[param.name] = value
    return out


def apply_config(ctx: Any, value: str | None) -> str | None:
    """Callback of an eager ``--config`` option: the file's settings become the command's
    defaults, so flags still win and required options may come from the file."""
    if value:
        settings = read_config(value, ctx)
        ctx.default_map = {**(ctx.default_map or {}), **settings}
    return value


# "\\[": rich help would read [run] as a style tag and drop it
CONFIG_HELP = ("TOML file of settings, with the same keys as the flags (flags win); "
               "a \\[run] or \\[score] table holds one command's keys")


def config_callback(ctx: typer.Context, param: typer.CallbackParam,
                    value: str | None) -> str | None:
    """The ``--config`` option's callback (eager, on run and score)."""
    return apply_config(ctx, value)
