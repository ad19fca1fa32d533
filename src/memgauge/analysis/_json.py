"""Strict-JSON values for analysis results."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def json_safe(obj: Any) -> Any:
    """``obj`` with non-finite floats (``nan`` = "no data") as ``None`` and mapping keys as
    strings, so ``json.dumps(..., allow_nan=False)`` accepts it."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj
