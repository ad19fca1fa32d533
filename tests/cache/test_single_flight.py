"""Single flight in the response cache (issue 25 §4, design 0018 2026-12-03): concurrent
misses of one request send it once, in one process and across processes on one cache file;
a holder that fails or dies lets the next caller fetch."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers.stub_server import StubServer

from memgauge.cache import ResponseCache
from memgauge.models import create_model
from memgauge.models._base import GenerateConfig, Message, TextPart
from memgauge.models.openai_compat import ModelSettings

SESSION = [Message("system", [TextPart("Summarise one session.")]),
           Message("user", [TextPart("T1: I moved to Lisbon in May.")])]


def _ask_many(url: str, cache: ResponseCache, n: int) -> list[Any]:
    async def go() -> list[Any]:
        model = create_model("openai:m", ModelSettings(base_url=url, cache=cache))
        try:
            return await asyncio.gather(*(model.generate(SESSION, GenerateConfig(max_tokens=8))
                                          for _ in range(n)))
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_concurrent_misses_of_one_request_reach_the_server_once(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    with StubServer(answer=lambda body: "a summary", latency_s=0.2) as stub:
        outs = _ask_many(stub.base_url, cache, 8)
    assert len(stub.requests) == 1
    assert [o.text for o in outs] == ["a summary"] * 8
    assert sorted(o.cached for o in outs) == [False] + [True] * 7
    assert cache.counts() == (7, 1)  # one lookup each: the waiters' are hits


def test_a_failed_fetch_stores_nothing_and_the_next_waiter_fetches(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    fetched: list[str] = []

    async def caller(name: str, fail: bool) -> dict[str, Any] | None:
        async with cache.single_flight("k") as hit:
            if hit is not None:
                return hit
            fetched.append(name)
            await asyncio.sleep(0.05)
            if fail:
                raise RuntimeError("the server went away")
            cache.put("k", {"text": name})
            return None

    async def go() -> list[Any]:
        return await asyncio.gather(caller("first", True), caller("second", False),
                                    caller("third", False), return_exceptions=True)

    first, second, third = asyncio.run(go())
    assert isinstance(first, RuntimeError)
    assert fetched == ["first", "second"]  # one after the other, never two at once
    assert second is None and third == {"text": "second"}


_HOLDER = textwrap.dedent("""
    import asyncio, sys, time
    from memgauge.cache import ResponseCache

    async def main():
        cache = ResponseCache(sys.argv[1])
        async with cache.single_flight("shared-key") as hit:
            assert hit is None
            print("held", flush=True)
            time.sleep(60)  # a request that never ends: the test kills this process

    asyncio.run(main())
""")

_ASKER = textwrap.dedent("""
    import asyncio, sys
    from memgauge.cache import ResponseCache
    from memgauge.models import create_model
    from memgauge.models._base import GenerateConfig, Message, TextPart
    from memgauge.models.openai_compat import ModelSettings

    async def main():
        model = create_model("openai:m", ModelSettings(base_url=sys.argv[2],
                                                       cache=ResponseCache(sys.argv[1])))
        msgs = [Message("system", [TextPart("Summarise one session.")]),
                Message("user", [TextPart("T1: I moved to Lisbon in May.")])]
        outs = await asyncio.gather(*(model.generate(msgs, GenerateConfig(max_tokens=8))
                                      for _ in range(4)))
        await model.aclose()
        print(sum(o.cached for o in outs), flush=True)

    asyncio.run(main())
""")


def _env() -> dict[str, str]:
    import memgauge

    return dict(os.environ, PYTHONPATH=str(Path(memgauge.__file__).parents[1]))


def test_processes_on_one_cache_file_send_a_request_once(tmp_path):
    path = str(tmp_path / "c.sqlite")
    with StubServer(answer=lambda body: "a summary", latency_s=1.0) as stub:
        procs = [subprocess.Popen([sys.executable, "-c", _ASKER, path, stub.base_url],
                                  stdout=subprocess.PIPE, text=True, env=_env())
                 for _ in range(3)]
        cached = [int(p.communicate(timeout=120)[0].strip()) for p in procs]
    assert len(stub.requests) == 1
    assert sorted(cached) == [3, 4, 4]  # 12 calls in 3 processes: one fetched, 11 waited


def test_the_lease_of_a_killed_holder_is_released(tmp_path):
    path = tmp_path / "c.sqlite"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)],
                              stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        cache = ResponseCache(path)

        async def enter() -> dict[str, Any] | None:
            async with cache.single_flight("shared-key") as hit:
                return hit

        async def waits_while_held() -> None:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(enter(), 0.5)

        asyncio.run(waits_while_held())
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)

        async def gets_it() -> dict[str, Any] | None:
            return await asyncio.wait_for(enter(), 10)

        assert asyncio.run(gets_it()) is None  # the lease is this caller's: it fetches
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
