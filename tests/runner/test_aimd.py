"""Adaptive concurrency per endpoint (issue 16 item 3, design 0034): AIMD between a floor and
``--concurrency``; cut to 0.8 on a 429 and slow-started back to the level refused, halved on
timeouts and latency well above its baseline, one added after a window of successes; shown in the
manifest and the progress line; off with
``--no-adaptive-concurrency``. The rules are tested on the limit itself with injected
latencies (no sleeping); the client against loopback servers."""

from __future__ import annotations

import asyncio
import json
import statistics
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers.stub_server import StubServer

from memgauge.models import ModelSettings, OpenAICompatModel
from memgauge.models._aimd import PRIORITY, AdaptiveLimit, AimdSettings
from memgauge.models._base import GenerateConfig, Message, TextPart
from memgauge.runner import RunConfig, load_manifest, run


def _limit(ceiling: int = 8, **kw: Any) -> AdaptiveLimit:
    return AdaptiveLimit(AimdSettings(ceiling=ceiling, **kw))


# -- the rules, on the limit itself ------------------------------------------------------------


def test_a_429_cuts_the_level_to_four_fifths_at_least_by_one_down_to_the_floor():
    lim = _limit(8, floor=2)
    seen = []
    for _ in range(5):
        lim.overload("429", lim._epoch)
        seen.append(lim.level)
    assert seen == [6, 4, 3, 2, 2]  # int(8 * 0.8), int(6 * 0.8), 4 - 1 (at least one), ...
    d = lim.describe()
    assert d["decreases"] == {"429": 5, "timeout": 0, "latency": 0}
    assert (d["final"], d["min"], d["max"], d["floor"], d["ceiling"]) == (2, 2, 8, 2, 8)


def test_a_timeout_halves_the_level():
    lim = _limit(8, floor=2)
    for reason in ("timeout", "timeout", "timeout"):
        lim.overload(reason, lim._epoch)
    assert lim.level == 2  # 8 -> 4 -> 2 -> floor
    assert lim.describe()["decreases"] == {"429": 0, "timeout": 3, "latency": 0}


def test_overloads_of_requests_sent_before_a_decrease_count_once():
    lim = _limit(8)
    sent_together = lim._epoch  # eight requests in flight at once, all get a 429
    for _ in range(8):
        lim.overload("429", sent_together)
    assert lim.level == 6
    assert lim.decreases["429"] == 1


def test_after_a_429_each_success_adds_one_back_to_the_level_refused_then_windows_do():
    lim = _limit(16)
    lim.overload("429", lim._epoch)  # 16 -> 12
    lim.overload("429", lim._epoch)  # refused at 12 -> 9
    assert lim.level == 9
    levels = []
    for _ in range(3):
        lim.success(0.1, lim._epoch)
        levels.append(lim.level)
    assert levels == [10, 11, 12]  # slow start: one per success up to where it was refused
    for _ in range(11):
        lim.success(0.1, lim._epoch)
    assert lim.level == 12  # at the refused level: a window of 12 successes for one more
    lim.success(0.1, lim._epoch)
    assert lim.level == 13
    for _ in range(12):
        lim.success(0.1, lim._epoch)
    assert lim.level == 13  # the next window is 13 long
    assert lim.describe()["increases"] == 4


def test_after_a_timeout_a_window_of_successes_adds_one_back_up_to_the_ceiling():
    lim = _limit(8)
    lim.overload("429", 0)  # refused at 8 ...
    lim.overload("timeout", 1)  # ... then a timeout: no slow start after it
    assert lim.level == 3
    for _ in range(2):
        lim.success(0.1, lim._epoch)
    assert lim.level == 3
    lim.success(0.1, lim._epoch)  # a window: as many successes as the level
    assert lim.level == 4
    for _ in range(4 + 5 + 6 + 7 + 8 + 50):
        lim.success(0.1, lim._epoch)
    assert lim.level == 8  # never above --concurrency
    assert lim.describe()["increases"] == 5


def test_without_slow_start_a_429_is_climbed_back_by_windows_only():
    lim = _limit(8, backoff=0.5, slow_start=False)  # the first rule (the bench's "halving")
    lim.overload("429", lim._epoch)
    assert lim.level == 4
    for _ in range(3):
        lim.success(0.1, lim._epoch)
    assert lim.level == 4  # a window of 4, not one per success
    lim.success(0.1, lim._epoch)
    assert lim.level == 5


@pytest.mark.parametrize("kw", [{"backoff": 1.0}, {"backoff": 0.0}, {"struggle_backoff": 1.5}])
def test_a_backoff_outside_zero_to_one_is_refused(kw):
    with pytest.raises(ValueError, match="backoff"):
        _limit(8, **kw)


def test_latency_well_above_its_baseline_halves_the_level():
    lim = _limit(8, min_samples=20)
    for _ in range(30):
        lim.success(0.1, lim._epoch)
    assert lim.level == 8 and lim.decreases["latency"] == 0
    for _ in range(5):  # the fast average passes twice the slow baseline
        lim.success(1.0, lim._epoch)
    assert lim.decreases["latency"] == 1
    assert lim.level == 4
    assert lim.describe()["latency_baseline_s"] > 0.1


def test_steady_latency_never_lowers_the_level():
    lim = _limit(8)
    for i in range(500):
        lim.success(0.1 + 0.05 * (i % 3), lim._epoch)  # noisy but not rising
    assert lim.level == 8 and sum(lim.decreases.values()) == 0


def test_off_the_level_stays_at_the_ceiling():
    lim = _limit(8, adaptive=False)
    lim.overload("429", 0)
    lim.success(99.0, 0)
    assert lim.level == 8
    assert lim.describe() == {"adaptive": False, "floor": 1, "ceiling": 8, "final": 8,
                              "min": 8, "max": 8}


def test_a_freed_place_goes_to_the_lowest_priority_key_and_a_lower_level_is_obeyed():
    async def go() -> list[str]:
        lim = _limit(2)
        order: list[str] = []
        await lim.acquire()
        await lim.acquire()
        lim.overload("429", lim._epoch)  # level 1 with 2 in flight: nothing more may pass

        async def wait(name: str, key: Any) -> None:
            PRIORITY.set(key)
            async with lim.hold():
                order.append(name)
                await asyncio.sleep(0)

        tasks = [asyncio.create_task(wait("B1", (1, 0))), asyncio.create_task(wait("A2", (0, 1)))]
        await asyncio.sleep(0)
        lim.release()  # 1 in flight = the level: still nobody passes
        await asyncio.sleep(0)
        assert order == []
        lim.release()
        await asyncio.gather(*tasks)
        assert lim.in_flight == 0
        return order

    assert asyncio.run(go()) == ["A2", "B1"]  # an episode's follower before a later episode


def test_a_cancelled_waiter_does_not_take_a_place():
    async def go() -> int:
        lim = _limit(1)
        await lim.acquire()
        waiter = asyncio.create_task(lim.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        lim.release()
        return lim.in_flight

    assert asyncio.run(go()) == 0


# -- the client against loopback servers -------------------------------------------------------


class LimitedStub(StubServer):
    """Answers 429 to a request that arrives while ``capacity`` others are in flight."""

    def __init__(self, capacity: int, latency_s: float = 0.03) -> None:
        super().__init__(latency_s=latency_s)
        self.capacity = capacity
        self.in_flight = 0
        self.refused = 0
        self._count = threading.Lock()
        stub = self

        class Limited(self._server.RequestHandlerClass):  # type: ignore[misc, name-defined]
            # Otherwise a reply's body waits for the client's delayed ACK (~40 ms) after the
            # server counted the request done: the client would see more in flight than the
            # server does, and its level would settle above the capacity.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                with stub._count:
                    stub.in_flight += 1
                    over = stub.in_flight > stub.capacity
                try:
                    if over:
                        self.rfile.read(int(self.headers.get("Content-Length", "0")))
                        with stub._count:
                            stub.refused += 1
                        self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                    else:
                        super().do_POST()
                finally:
                    with stub._count:
                        stub.in_flight -= 1

        self._server.RequestHandlerClass = Limited


def _model(base_url: str, **kw: Any) -> OpenAICompatModel:
    kw.setdefault("max_attempts", 30)
    return OpenAICompatModel("stub", ModelSettings(base_url=base_url, retry_base_s=0.002,
                                                   retry_cap_s=0.01, **kw))


async def _ask(model: OpenAICompatModel, n: int, levels: list[int]) -> None:
    async def one(i: int) -> None:
        await model.generate([Message("user", [TextPart(f"question {i}")])], GenerateConfig())
        levels.append(model.concurrency_levels()[0])

    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await model.aclose()


def test_a_server_that_refuses_above_n_in_flight_brings_the_level_near_n():
    levels: list[int] = []
    with LimitedStub(capacity=3) as stub:
        model = _model(stub.base_url, concurrency=12)
        asyncio.run(_ask(model, 120, levels))
    d = model.endpoint_report()[0]["concurrency"]
    assert stub.refused and d["decreases"]["429"] >= 1
    assert d["min"] <= 3
    settled = statistics.median(levels[len(levels) // 2:])  # after the first overload
    assert 2 <= settled <= 4, levels


def test_timeouts_lower_the_level():
    with StubServer() as stub:
        stub.hang_s = 0.5
        stub.plan = ["hang"] * 4
        model = _model(stub.base_url, concurrency=8, timeout_s=0.2, max_attempts=4)
        asyncio.run(_ask(model, 4, []))
    d = model.endpoint_report()[0]["concurrency"]
    assert d["decreases"]["timeout"] >= 1 and d["min"] < 8


def test_recovery_raises_the_level_again():
    levels: list[int] = []
    with StubServer() as stub:
        stub.plan = [429] * 8  # the first burst is refused, then all is well
        model = _model(stub.base_url, concurrency=8)
        asyncio.run(_ask(model, 80, levels))
    d = model.endpoint_report()[0]["concurrency"]
    assert d["decreases"]["429"] >= 1 and d["min"] < 8
    assert d["increases"] >= 1 and d["final"] > d["min"]


# -- in a run: the manifest, the switch ----------------------------------------------------------


def _data(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "longmemeval.json"
    path.write_text(json.dumps([{
        "question_id": f"q{i}", "question_type": "single-session-user",
        "question": f"Question {i}?", "answer": "x", "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/30 (Tue) 09:00"],
        "haystack_sessions": [[{"role": "user", "content": "hello"}]],
        "answer_session_ids": ["s1"]} for i in range(n)]), encoding="utf-8")
    return path


@pytest.mark.parametrize("adaptive", [True, False])
def test_the_manifest_gives_each_endpoint_s_level_and_the_switch_turns_it_off(tmp_path, adaptive):
    with StubServer() as stub:
        stub.plan = [429, 429]
        result = run(RunConfig(bench="longmemeval", data=str(_data(tmp_path, 6)),
                      out=str(tmp_path / "run"), model="openai:stub", base_url=stub.base_url,
                      cache=False, progress=False, retry_base_s=0.001, concurrency=4,
                      adaptive_concurrency=adaptive, min_concurrency=2))
    [endpoint] = load_manifest(tmp_path / "run")["endpoints"]
    c = endpoint["concurrency"]
    assert result.levels == [c["final"]]  # what the progress line shows
    assert (c["adaptive"], c["floor"], c["ceiling"]) == (adaptive, 2, 4)
    if adaptive:
        assert c["decreases"]["429"] >= 1 and 2 <= c["min"] < 4
    else:
        assert c["min"] == c["final"] == 4 and "decreases" not in c


def test_min_concurrency_above_the_ceiling_is_refused_before_anything_is_sent(tmp_path):
    from memgauge.errors import ConfigError

    with pytest.raises(ConfigError, match="min_concurrency 3: must not exceed concurrency 2"):
        RunConfig(bench="longmemeval", data="x", out=str(tmp_path / "r"),
                  concurrency=2, min_concurrency=3)


def test_the_limit_never_deadlocks_under_a_burst_of_cancellations():
    async def go() -> int:
        lim = _limit(3)

        async def user(i: int) -> None:
            async with lim.hold() as epoch:
                await asyncio.sleep(0.001 * (i % 3))
                if i % 4 == 0:
                    lim.overload("429", epoch)
                else:
                    lim.success(0.01, epoch)

        tasks = [asyncio.create_task(user(i)) for i in range(60)]
        await asyncio.sleep(0.002)
        for t in tasks[::7]:
            t.cancel()
        async with asyncio.timeout(10):
            await asyncio.gather(*tasks, return_exceptions=True)
        return lim.in_flight

    assert asyncio.run(go()) == 0
