"""Adaptive concurrency for one endpoint: AIMD between a floor and ``--concurrency``
(docs/design/0034).

The level starts at the ceiling (a healthy endpoint runs as it did before). A 429 cuts it
to ``backoff`` (0.8) of itself, at least by one, and the level it came from is remembered:
below that level each success adds one (slow start back), at or above it a window of
successes (as many as the level) adds one. A timeout, or latency well above its running
baseline, halves it, and it grows back by windows only: the server is struggling, not just
full. Only a request sent since the last decrease can decrease it again: a burst of 429s
from requests that were all in flight together counts once, not once per request.

Waiters get a freed place lowest priority key first, as the runner's
:class:`~memgauge.runner._prefix.PriorityGate` does. The runner puts its gate key in
:data:`PRIORITY`, so when the level is below the gate's slots the queue here keeps the
warm-first order (an episode's followers before later episodes' first questions).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections import Counter
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

# The order a waiting request gets its place in (the runner's gate key); unset: last.
PRIORITY: ContextVar[Any] = ContextVar("memgauge_priority", default=None)
_LAST = (float("inf"),)

REASONS = ("429", "timeout", "latency")


@dataclass(frozen=True)
class AimdSettings:
    """``floor`` ≤ level ≤ ``ceiling``. Latency counts as overload when the fast average
    (weight ``fast``) exceeds ``latency_factor`` times the slow one (weight ``slow``, the
    baseline), once ``min_samples`` successes have been seen. A 429 multiplies the level by
    ``backoff``, a timeout or latency by ``struggle_backoff``."""

    ceiling: int
    floor: int = 1
    adaptive: bool = True
    latency_factor: float = 2.0
    min_samples: int = 20
    fast: float = 0.3
    slow: float = 0.05
    backoff: float = 0.8
    struggle_backoff: float = 0.5
    slow_start: bool = True  # False: windows only after a 429 too (the first rule, 0034)


class AdaptiveLimit:
    """An async limit on requests in flight to one endpoint whose level moves by AIMD."""

    def __init__(self, settings: AimdSettings) -> None:
        s = settings
        if not 1 <= s.floor <= s.ceiling:
            raise ValueError(f"need 1 <= floor ({s.floor}) <= ceiling ({s.ceiling})")
        if not (0 < s.backoff < 1 and 0 < s.struggle_backoff < 1):
            raise ValueError(f"need 0 < backoff ({s.backoff}), struggle_backoff "
                             f"({s.struggle_backoff}) < 1")
        self.settings = s
        self.level = s.ceiling
        self.min_level = self.max_level = s.ceiling
        self.in_flight = 0
        self.decreases: Counter[str] = Counter()
        self.increases = 0
        self._epoch = 0  # bumped by each decrease
        self._refused_at: int | None = None  # the level the last 429 came from
        self._successes = 0  # since the level last changed
        self._fast: float | None = None
        self._slow: float | None = None
        self._samples = 0
        self._waiting: list[tuple[Any, int, asyncio.Future[None]]] = []
        self._arrival = itertools.count()

    # -- the limit --------------------------------------------------------------------
    async def acquire(self) -> int:
        """Wait for a place; the epoch the request is sent in (pass it back on outcome)."""
        if self.in_flight < self.level and not self._waiting:
            self.in_flight += 1
            return self._epoch
        key = PRIORITY.get()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (_LAST if key is None else key, next(self._arrival), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted, then cancelled: pass it on
                self.release()
            else:
                self._waiting = [w for w in self._waiting if w[2] is not fut]
                heapq.heapify(self._waiting)
            raise
        return self._epoch

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiting and self.in_flight < self.level:
            _, _, fut = heapq.heappop(self._waiting)
            if not fut.done():
                self.in_flight += 1  # the place passes straight to the waiter
                fut.set_result(None)

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[int]:
        epoch = await self.acquire()
        try:
            yield epoch
        finally:
            self.release()

    # -- outcomes ---------------------------------------------------------------------
    def success(self, latency_s: float, epoch: int) -> None:
        """A reply came back (any status but 429) after ``latency_s``."""
        if not self.settings.adaptive:
            return
        s = self.settings
        self._samples += 1
        self._fast = latency_s if self._fast is None else (
            s.fast * latency_s + (1 - s.fast) * self._fast)
        self._slow = latency_s if self._slow is None else (
            s.slow * latency_s + (1 - s.slow) * self._slow)
        if (self._samples >= s.min_samples and self._slow > 0
                and self._fast > s.latency_factor * self._slow):
            # One rise, one decrease: the next latency verdict waits for min_samples more
            # replies, by which time a lasting rise has mostly become the baseline.
            self._fast, self._samples = self._slow, 0
            self.overload("latency", epoch)
            return
        if latency_s > s.latency_factor * self._slow:
            return  # slow: not a success that earns more in flight
        self._successes += 1
        # slow start back to where the server last refused, then probing by windows
        below = (s.slow_start and self._refused_at is not None
                 and self.level < self._refused_at)
        window = 1 if below else self.level
        if self._successes >= window and self.level < s.ceiling:
            self.level += 1
            self.increases += 1
            self._successes = 0
            self.max_level = max(self.max_level, self.level)
            self._wake()

    def overload(self, reason: str, epoch: int) -> None:
        """A 429, a timeout, or latency (``REASONS``) for a request sent in ``epoch``."""
        if not self.settings.adaptive or epoch != self._epoch:
            return  # sent before the last decrease: that decrease already answered it
        self._epoch += 1
        self._successes = 0
        s = self.settings
        refused = reason == "429"
        # A 429 says "one too many" (it was cheap to send); a timeout or a slow reply says
        # the server is struggling, so cut deeper and do not rush back.
        self._refused_at = self.level if refused else None
        if self.level > s.floor:
            factor = s.backoff if refused else s.struggle_backoff
            cut = min(self.level - 1, int(self.level * factor))
            self.level = max(s.floor, cut)
            self.min_level = min(self.min_level, self.level)
        self.decreases[reason] += 1

    @property
    def baseline_s(self) -> float | None:
        return self._slow

    def describe(self) -> dict[str, Any]:
        """The manifest's account of this endpoint's level."""
        s = self.settings
        out: dict[str, Any] = {"adaptive": s.adaptive, "floor": s.floor, "ceiling": s.ceiling,
                               "final": self.level, "min": self.min_level,
                               "max": self.max_level}
        if s.adaptive:
            out["decreases"] = {r: self.decreases[r] for r in REASONS}
            out["increases"] = self.increases
            if self._slow is not None:
                out["latency_baseline_s"] = round(self._slow, 4)
        return out
