"""``Retry-After`` as seconds and as an HTTP date (RFC 9110), capped at 60 s, and the client
waiting that long before it retries (the wait is observed, not timed)."""

from __future__ import annotations

import asyncio
import email.utils

import pytest
from netservers import RouteServer, completion, json_reply

from memgauge.models import GenerateConfig, Message, ModelSettings, TextPart, openai_compat
from memgauge.models.openai_compat import RETRY_AFTER_CAP_S, OpenAICompatModel, _retry_after

NOW = 1_800_000_000.0


@pytest.mark.parametrize(("value", "wait"), [
    ("7", 7.0), ("0", 0.0), ("1.5", 1.5), ("3600", RETRY_AFTER_CAP_S), ("-4", 0.0),
    (email.utils.formatdate(NOW + 12, usegmt=True), 12.0),
    (email.utils.formatdate(NOW + 7200, usegmt=True), RETRY_AFTER_CAP_S),
    (email.utils.formatdate(NOW - 30, usegmt=True), 0.0),  # already past: retry now
    ("soon", None), ("", None), (None, None), ("nan", None),
])
def test_seconds_and_dates_are_read_and_capped(value, wait):
    got = _retry_after(value, now=NOW)
    assert got == (pytest.approx(wait) if wait is not None else None)


def test_the_client_waits_the_date_it_was_given_before_retrying(monkeypatch):
    when = email.utils.formatdate(openai_compat.time.time() + 20, usegmt=True)
    replies = [json_reply(429, {"error": {"message": "slow down"}}, {"Retry-After": when})]
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(openai_compat.asyncio, "sleep", no_sleep)

    def handle(seen):
        return replies.pop(0) if replies else json_reply(200, completion("red"))

    async def go(base: str) -> str:
        model = OpenAICompatModel("m", ModelSettings(base_url=base, retry_base_s=0.0))
        try:
            return (await model.generate([Message("user", [TextPart("hi")])],
                                         GenerateConfig(max_tokens=8))).text
        finally:
            await model.aclose()

    with RouteServer(handle) as srv:
        assert asyncio.run(go(f"{srv.url}/v1")) == "red"
    assert len(srv.seen) == 2
    waits = [w for w in waits if w]  # (closing the client yields with sleep(0))
    assert len(waits) == 1 and 15.0 <= waits[0] <= 20.0  # the date, less the time it took
