"""Text from runs made harmless for a terminal.

A model's output, a server's error message or a data file can hold control characters:
ESC starts ANSI/OSC sequences (``\\x1b]0;title\\x07`` retitles the window, ``\\x1b[2J`` clears
the screen), ``\\r`` and backspace overwrite what was printed, and 8-bit C1 codes
(``\\x9b`` = CSI) do the same on some terminals. rich strips only BEL, BS, VT, FF and CR, so
everything printed from a run goes through :func:`show_controls` first. Standard library
only: the CLI imports it on its error path.
"""

from __future__ import annotations

import re

__all__ = ["show_controls"]

# C0 except tab and newline, DEL, C1.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _x(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def _u(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def show_controls(text: str, *, json: bool = False) -> str:
    """``text`` with each control character (C0 but tab and newline, DEL, C1) written as a
    visible escape: ``\\x1b``, or with ``json=True`` ``\\u001b``, which keeps a JSON
    document valid and equal (JSON escapes C0 itself; DEL and C1 it leaves raw)."""
    return _CONTROL.sub(_u if json else _x, text)
