"""The cost of ingesting, measured per episode and shared out among its questions
(design 0027).

A system reports its ingest LLM use in every answer's ``Response.meta["ingest"]`` as totals
since ``reset`` (``{"calls", "cached", "prompt_tokens", "completion_tokens"}``) and its size in
``Response.meta["memory"]`` (``{"items", "bytes"}``). The runner times ``reset``/``ingest``
itself. What was spent between two answer points belongs to the questions asked at the
second, split evenly, so an episode's shares sum to its total and nothing is counted twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..schema import Cost, Response

INGEST_KEYS = ("calls", "cached", "prompt_tokens", "completion_tokens")


def _count(value: Any) -> int | None:
    """A whole number ≥ 0, else None (a system's malformed count costs only that count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def reported_ingest(response: Response) -> dict[str, int] | None:
    """The totals since reset a response reports in ``meta["ingest"]``; None when it reports
    none (a system without ingest-time calls, or one written before issue 13)."""
    raw = response.meta.get("ingest")
    if not isinstance(raw, Mapping):
        return None
    return {k: n for k in INGEST_KEYS if (n := _count(raw.get(k))) is not None}


def reported_memory(response: Response) -> tuple[int | None, int | None]:
    raw = response.meta.get("memory")
    if not isinstance(raw, Mapping):
        return None, None
    return _count(raw.get("items")), _count(raw.get("bytes"))


def split(total: int, n: int, i: int) -> int:
    """Share ``i`` of ``n`` of a whole ``total``: even, the remainder to the first ones."""
    base, rest = divmod(total, n)
    return base + (1 if i < rest else 0)


@dataclass(frozen=True)
class Share:
    """One answer point's ingest, as seen by question ``index`` of the ``n`` asked there."""

    wall_s: float
    sessions: int
    n: int
    index: int
    before: Mapping[str, int]  # the reported totals at the previous answer point

    def cost(self, response: Response, answer_s: float | None) -> Cost:
        now = reported_ingest(response)
        tokens: dict[str, int | None] = dict.fromkeys(INGEST_KEYS)
        if now is not None:
            for key, total in now.items():
                spent = max(0, total - self.before.get(key, 0))
                tokens[key] = split(spent, self.n, self.index)
        items, size = reported_memory(response)
        return Cost(answer_s=None if answer_s is None else round(answer_s, 4),
                    ingest_s=round(self.wall_s / self.n, 4), ingest_sessions=self.sessions,
                    ingest_shared_by=self.n, ingest_calls=tokens["calls"],
                    ingest_cached=tokens["cached"],
                    ingest_prompt_tokens=tokens["prompt_tokens"],
                    ingest_completion_tokens=tokens["completion_tokens"],
                    memory_items=items, memory_bytes=size)


@dataclass
class IngestMeter:
    """One episode's ingest time and reported totals between answer points."""

    wall_s: float = 0.0
    sessions: int = 0
    reported: dict[str, int] = field(default_factory=dict)

    @contextmanager
    def timing(self, sessions: int = 0) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.wall_s += time.perf_counter() - t0
            self.sessions += sessions

    def shares(self, n: int) -> list[Share]:
        """The ingest since the last answer point, for the ``n`` questions asked now; the
        meter starts again from zero."""
        out = [Share(self.wall_s, self.sessions, n, i, dict(self.reported)) for i in range(n)]
        self.wall_s, self.sessions = 0.0, 0
        return out

    def answered(self, responses: list[Response | None]) -> None:
        """After an answer point: the totals its responses report become the baseline."""
        for response in responses:
            now = reported_ingest(response) if response is not None else None
            for key, total in (now or {}).items():
                self.reported[key] = max(self.reported.get(key, 0), total)
