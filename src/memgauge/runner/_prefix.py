"""Prefix-cache-aware scheduling and the reuse it buys (docs/design/0031).

A full-context prompt for each question of an episode is the same long history plus a short
question: a server with prefix caching (vLLM APC, SGLang RadixAttention, llama.cpp) computes
that history once if the requests are ordered for it. A system says its prompts share a
prefix with a ``shares_prefix = True`` attribute; for those, the runner sends an episode's
first question alone and releases the rest once it is answered, ahead of the first
questions of episodes started later (:class:`PriorityGate`). Other systems are scheduled as
before.

:class:`PrefixReuse` sums what the server reported it computed and reused
(``usage.prompt_tokens`` and ``prompt_tokens_details.cached_tokens``; llama.cpp sends both)
over the answers that were sent this run, for the manifest and the run summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeGuard, TypeVar

from ..models._capabilities import Configured
from ..systems._base import PrefixSharing

T = TypeVar("T")
Then = Callable[[], Awaitable[None]]


def shares_prefix(system: Any) -> bool:
    """Whether the system's prompts for one episode's questions share a long prefix."""
    return isinstance(system, PrefixSharing) and system.shares_prefix is True


class PriorityGate:
    """A semaphore of ``slots`` whose waiters get a freed slot lowest ``key`` first (in
    arrival order among equal keys). The runner keys a question by (episode started, place
    in the episode): an episode's followers go before later episodes' first questions."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a gate needs at least one slot")
        self._free = slots
        self._waiting: list[tuple[Any, int, asyncio.Future[None]]] = []
        self._arrival = itertools.count()

    async def acquire(self, key: Any) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (key, next(self._arrival), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted, then cancelled: pass it on
                self.release()
            else:
                self._waiting = [w for w in self._waiting if w[2] is not fut]
                heapq.heapify(self._waiting)
            raise

    def release(self) -> None:
        while self._waiting:
            _, _, fut = heapq.heappop(self._waiting)
            if not fut.done():
                fut.set_result(None)  # the slot passes straight to the waiter
                return
        self._free += 1

    @contextlib.asynccontextmanager
    async def hold(self, key: Any) -> AsyncIterator[None]:
        await self.acquire(key)
        try:
            yield
        finally:
            self.release()


@dataclass
class PrefixReuse:
    """Prompt tokens the server reported for the answers it computed, and how many of them
    it served from its prefix cache. Answers replayed from memgauge's own response cache
    were not sent: they are counted apart (``replayed``)."""

    answers: int = 0  # sent answers whose usage carries prompt_tokens
    reported: int = 0  # of them, those that also carry cached_tokens (the figures below)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    replayed: int = 0  # answered from the response cache (not sent)

    def add(self, status: Any, replayed: Any, usage: Any) -> None:
        if status != "ok" or not isinstance(usage, Mapping):
            return
        if replayed is True:
            self.replayed += 1
            return
        prompt, cached = usage.get("input_tokens"), usage.get("cached_tokens")
        if not _count(prompt) or prompt == 0:
            return
        self.answers += 1
        if _count(cached):  # a server that does not say is not counted as 0 % reuse
            self.reported += 1
            self.prompt_tokens += prompt
            self.cached_tokens += min(cached, prompt)

    def add_raw(self, obj: Mapping[str, Any]) -> None:
        """One record as read from records.jsonl."""
        response = obj.get("response")
        if isinstance(response, Mapping):
            self.add(obj.get("status"), response.get("cached"), response.get("usage"))

    @property
    def reuse(self) -> float | None:
        """cached / prompt tokens over the answers that report both; None without any."""
        return round(self.cached_tokens / self.prompt_tokens, 4) if self.prompt_tokens else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reuse": self.reuse}


def count_reuse(records: Iterable[Any]) -> PrefixReuse:
    """The reuse over :class:`~memgauge.schema.Record` objects."""
    out = PrefixReuse()
    for rec in records:
        r = rec.response
        if r is not None:
            out.add(rec.status, r.cached, r.usage.model_dump() if r.usage else None)
    return out


def describe_reuse(d: Any) -> str | None:
    """The run summary's line on the server's prefix cache (from the manifest's
    ``prefix_cache``); None when no sent answer reported its cached tokens."""
    if not isinstance(d, Mapping) or not isinstance(d.get("reuse"), (int, float)):
        return None
    line = (f"{100 * d['reuse']:.1f} % of {d.get('prompt_tokens', 0):,} prompt tokens came from "
            f"the server's prefix cache ({d.get('reported', 0)} answers sent)")
    if d.get("answers", 0) > d.get("reported", 0):
        line += f"; {d['answers'] - d['reported']} answers did not say"
    if d.get("replayed"):
        line += f"; {d['replayed']} replayed from the response cache, not counted"
    return line


def _count(v: Any) -> TypeGuard[int]:
    """A whole number of tokens (0 included)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def gate_slots(concurrency: int, model: Any, prefix: bool) -> int:
    """How many questions the runner lets answer at once: ``--concurrency``; for a system
    whose prompts share a prefix, no more than the model client itself sends at once (a
    local server's slots), so the runner's order is the order on the wire."""
    slots = max(1, concurrency)
    sends = model.settings.concurrency if isinstance(model, Configured) else None
    if prefix and isinstance(sends, int) and sends >= 1:
        slots = min(slots, sends)
    return slots


async def warm_first(calls: list[Callable[[Then | None], Coroutine[Any, Any, T]]]) -> list[T]:
    """Run ``calls[0]`` alone; it calls the ``then`` it is given once its answer is back
    (still holding its gate slot), which starts the others and lets them queue at the gate
    before that slot is freed. The results, in order."""
    followers: list[asyncio.Task[T]] = []

    async def release() -> None:
        if not followers:
            followers.extend(asyncio.create_task(call(None)) for call in calls[1:])
            await asyncio.sleep(0)  # each follower runs up to the gate and queues there

    try:
        first = await calls[0](release)
        if not followers:  # the first never reached the server (a stopping run)
            followers.extend(asyncio.create_task(call(None)) for call in calls[1:])
        rest = await asyncio.gather(*followers)
    except BaseException:
        for task in followers:
            task.cancel()
        await asyncio.gather(*followers, return_exceptions=True)
        raise
    return [first, *rest]
