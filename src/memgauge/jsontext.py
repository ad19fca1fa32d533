"""The JSON objects in a model's reply: shared by the judge (verdicts) and the memory systems
(their extraction calls). Moved out of scoring/_judge.py (issue 26 §2) so that systems need
not import the scoring layer."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL | re.IGNORECASE)
_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in a reply, best first: the whole reply, fenced ```json blocks, then
    any flat ``{...}``."""
    if not text:
        return []
    candidates = [text.strip()]
    candidates += [m.group(1) for m in _FENCED.finditer(text)]
    candidates += [m.group(0) for m in _OBJECT.finditer(text)]
    found = []
    for cand in candidates:
        try:
            obj = json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found
