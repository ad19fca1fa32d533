"""Field readers shared by the loaders: each names the file, item and field of a problem
through the caller's context (anything with ``error(message, field) -> InputError``, such as
``_streaming.ItemContext``)."""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import InputError


class Where(Protocol):
    def error(self, message: str, field: str | None = None) -> InputError: ...


def type_name(value: Any) -> str:
    """A JSON-ish name of ``value``'s type for messages: ``null``, ``str``, ``list``, ..."""
    return "null" if value is None else type(value).__name__


def scalar_str(item: dict[str, Any], key: str, ctx: Where, required: bool) -> str | None:
    """``item[key]`` as text: a string, or a number written as text (``3.0`` as ``3``)."""
    value = item.get(key)
    if value is None:
        if required:
            raise ctx.error("missing required field" if key not in item else "must not be null",
                            key)
        return None
    if type(value) is str:
        return value
    if type(value) in (int, float):
        return str(int(value)) if type(value) is float and value.is_integer() else str(value)
    raise ctx.error(f"expected str, got {type_name(value)}", key)


def opt_str(item: dict[str, Any], key: str, ctx: Where) -> str | None:
    """``item[key]`` when it is a string or absent/null; anything else is an error."""
    value = item.get(key)
    if value is None or type(value) is str:
        return value
    raise ctx.error(f"expected str, got {type_name(value)}", key)
