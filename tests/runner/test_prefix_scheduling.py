"""Prefix-cache-aware scheduling (design 0031), over loopback servers.

Covered: a full-context episode's first question is answered before the rest are sent, and
the rest then go out together; with one slot, an episode's followers go before a later
episode's first question; a system without ``shares_prefix`` still sends an episode's
questions at once; the prompts of one episode differ only in the final question message (on
the wire bytes); several base URLs route each episode to one replica and spread episodes over
replicas (``--base-url`` repeated or a comma list, an empty item refused, passwords redacted
from the identity); the manifest's ``prefix_cache`` (cached / prompt tokens over the answers
sent, replays from the response cache counted apart), the run summary's and the report's
line on it; the :class:`PriorityGate` itself (order, cancellation).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.stub_server import StubServer, last_text
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import ConfigError
from memgauge.models import ModelSettings, OpenAICompatModel
from memgauge.runner import RunConfig, load_manifest, read_records, run
from memgauge.runner._prefix import PrefixReuse, PriorityGate, describe_reuse

QUESTIONS = 4


def _conversation(c: int) -> dict[str, Any]:
    """LoCoMo conversation ``c``: two sessions, ``QUESTIONS`` questions about them."""
    return {
        "sample_id": f"conv-{c}",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1 pm on 1 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": f"My cat {c} is called Tom{c}."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice. " * 40}],
            "session_2_date_time": "2 pm on 2 May, 2023",
            "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": f"I moved to city {c}."}],
        },
        "qa": [{"question": f"Question {k} about story {c}?", "answer": f"city {c}",
                "evidence": ["D2:1"], "category": 4} for k in range(QUESTIONS)],
    }


def _data(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_conversation(c) for c in range(n)]), encoding="utf-8")
    return path


def _config(tmp_path: Path, data: Path, base_url: str, **kw: Any) -> RunConfig:
    kw.setdefault("out", str(tmp_path / "run"))
    kw.setdefault("cache", False)
    return RunConfig(bench="locomo", data=str(data), model="openai:stub", base_url=base_url,
                     progress=False, retry_base_s=0.01, **kw)


def _asked(body: dict[str, Any]) -> re.Match[str]:
    found = re.search(r"Question (\d+) about story (\d+)\?", last_text(body))
    assert found, last_text(body)
    return found


def _story(body: dict[str, Any]) -> str:
    return _asked(body).group(2)


def _question(body: dict[str, Any]) -> int:
    return int(_asked(body).group(1))


class Timeline:
    """A stub 'model' that notes when each request starts and ends (in one order)."""

    def __init__(self, hold_s: float = 0.05) -> None:
        self.hold_s = hold_s
        self.events: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        key = (_story(body), _question(body))
        with self._lock:
            self.events.append(("start", *key))
        time.sleep(self.hold_s)  # long enough for anything sent meanwhile to arrive
        with self._lock:
            self.events.append(("end", *key))
        return "city"

    def index(self, what: str, story: str, q: int) -> int:
        return self.events.index((what, story, q))


def test_an_episode_s_first_question_is_answered_before_the_rest_are_sent(tmp_path):
    timeline = Timeline()
    with StubServer(answer=timeline) as stub:
        run(_config(tmp_path, _data(tmp_path, 2), stub.base_url, concurrency=8))
    assert len(stub.requests) == 2 * QUESTIONS
    for story in ("0", "1"):
        first_end = timeline.index("end", story, 0)
        starts = [timeline.index("start", story, q) for q in range(1, QUESTIONS)]
        assert all(s > first_end for s in starts), timeline.events
        # ... and the rest are not serialised: they overlap on the server
        ends = [timeline.index("end", story, q) for q in range(1, QUESTIONS)]
        assert max(starts) < min(ends), timeline.events


def test_with_one_slot_an_episode_s_followers_go_before_the_next_episode(tmp_path):
    with StubServer(answer=lambda body: "city") as stub:
        run(_config(tmp_path, _data(tmp_path, 3), stub.base_url, concurrency=1))
    order = [(_story(b), _question(b)) for b in stub.requests]
    assert order == [(str(c), q) for c in range(3) for q in range(QUESTIONS)]


def test_a_system_without_a_shared_prefix_sends_an_episode_s_questions_at_once(tmp_path):
    timeline = Timeline()
    with StubServer(answer=timeline) as stub:
        run(_config(tmp_path, _data(tmp_path, 1), stub.base_url, concurrency=8,
                    system="rag"))
    assert len(stub.requests) == QUESTIONS
    starts = [timeline.index("start", "0", q) for q in range(QUESTIONS)]
    assert max(starts) < timeline.index("end", "0", 0), timeline.events


def test_one_episode_s_prompts_differ_only_in_the_final_question_message(tmp_path):
    with StubServer(answer=lambda body: "city") as stub:
        run(_config(tmp_path, _data(tmp_path, 1), stub.base_url, concurrency=4))
    bodies = stub.raw_bodies
    assert len(bodies) == QUESTIONS
    parsed = [json.loads(b) for b in bodies]
    head = [{k: v for k, v in p.items() if k != "messages"} for p in parsed]
    assert all(h == head[0] for h in head)
    assert all(p["messages"][:-1] == parsed[0]["messages"][:-1] for p in parsed)
    assert len({p["messages"][-1]["content"] for p in parsed}) == QUESTIONS
    # on the wire: every body is one and the same bytes up to its final message
    cut = [b.rindex(b'{"role":"user"') for b in bodies]
    assert len({b[:c] for b, c in zip(bodies, cut, strict=True)}) == 1
    assert cut[0] > 0.75 * min(len(b) for b in bodies)  # the shared part is most of it


# -- replicas -----------------------------------------------------------------------------------


def test_each_episode_goes_to_one_replica_and_episodes_spread_over_them(tmp_path):
    with StubServer(answer=Timeline(0.02)) as a, StubServer(answer=Timeline(0.02)) as b:
        run(_config(tmp_path, _data(tmp_path, 4), f"{a.base_url},{b.base_url}",
                    concurrency=4))
        stories = [{_story(r) for r in s.requests} for s in (a, b)]
        assert stories[0] and stories[1], stories  # both replicas served episodes
        assert not stories[0] & stories[1]  # no episode was split
        assert len(a.requests) + len(b.requests) == 4 * QUESTIONS
    manifest = load_manifest(tmp_path / "run")
    assert manifest["model"]["replicas"] == 2


def test_base_url_repeated_on_the_command_line_is_a_replica_list(tmp_path):
    with StubServer(answer=lambda body: "city") as a, StubServer(answer=lambda body: "city") as b:
        result = CliRunner().invoke(app, [
            "run", "--bench", "locomo", "--data", str(_data(tmp_path, 2)),
            "--out", str(tmp_path / "cli"), "--model", "openai:stub", "--no-cache",
            "--base-url", a.base_url, "--base-url", b.base_url])
        assert result.exit_code == 0, result.output
        assert a.requests and b.requests
    ident = load_manifest(tmp_path / "cli")["config"]["identity"]
    assert ident["base_url"] == f"{a.base_url},{b.base_url}"


def test_an_empty_replica_url_is_refused_and_passwords_are_redacted():
    with pytest.raises(ConfigError, match="an empty URL in the list"):
        OpenAICompatModel("m", ModelSettings(base_url="http://127.0.0.1:9/v1,,"))
    with pytest.raises(ConfigError, match="must be an http"):
        OpenAICompatModel("m", ModelSettings(base_url="http://127.0.0.1:9/v1,ftp://x/v1"))
    config = RunConfig(bench="locomo", data="x", out="y",
                       base_url="http://u:secret@a.test/v1,http://v:hidden@b.test/v1")
    ident = json.dumps(config.identity())
    assert "secret" not in ident and "hidden" not in ident
    assert "a.test" in ident and "b.test" in ident


# -- the reuse figure ---------------------------------------------------------------------------


class PrefixCachingStub(StubServer):
    """A stub that reports, like llama.cpp and vLLM do, how much of each prompt it had seen
    before: the longest prefix (in bytes / 4, its 'tokens') shared with an earlier prompt."""

    def __init__(self) -> None:
        super().__init__(answer=self._answer)
        self.seen: list[bytes] = []
        self._mine = threading.local()  # the prompt this handler thread is answering
        self._seen_lock = threading.Lock()
        stub = self

        class Caching(self._server.RequestHandlerClass):  # type: ignore[misc, name-defined]
            def _send(self, status, payload, headers=None):  # type: ignore[no-untyped-def]
                usage = payload.get("usage")
                if usage is not None:
                    usage["prompt_tokens"], cached = stub._mine.counts
                    usage["prompt_tokens_details"] = {"cached_tokens": cached}
                super()._send(status, payload, headers)

        self._server.RequestHandlerClass = Caching

    def _answer(self, body: dict[str, Any]) -> str:
        prompt = json.dumps(body["messages"]).encode()
        with self._seen_lock:
            shared = max((_common(prompt, s) for s in self.seen), default=0)
            self.seen.append(prompt)
        self._mine.counts = (len(prompt) // 4, shared // 4)
        return "city"


def _common(a: bytes, b: bytes) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_the_manifest_reports_the_server_s_prefix_cache_reuse(tmp_path):
    with PrefixCachingStub() as stub:
        run(_config(tmp_path, _data(tmp_path, 2), stub.base_url))
        sent = list(stub.raw_bodies)
    records = read_records(tmp_path / "run").values()
    prompt = sum(r.response.usage.input_tokens for r in records)
    cached = sum(r.response.usage.cached_tokens for r in records)
    figure = load_manifest(tmp_path / "run")["prefix_cache"]
    assert figure["answers"] == figure["reported"] == len(sent) == 2 * QUESTIONS
    assert (figure["prompt_tokens"], figure["cached_tokens"]) == (prompt, cached)
    assert figure["reuse"] == round(cached / prompt, 4)
    assert figure["reuse"] > 0.6  # followers reuse their episode's history
    assert figure["replayed"] == 0


def test_answers_replayed_from_the_response_cache_are_not_counted(tmp_path):
    data = _data(tmp_path, 1)
    cache = str(tmp_path / "cache.sqlite")
    with PrefixCachingStub() as stub:
        for out in ("one", "two"):
            run(_config(tmp_path, data, stub.base_url, out=str(tmp_path / out), cache=True,
                        cache_path=cache))
        assert len(stub.requests) == QUESTIONS  # the second run sent nothing
    figure = load_manifest(tmp_path / "two")["prefix_cache"]
    assert figure["replayed"] == QUESTIONS
    assert figure["answers"] == 0 and figure["reuse"] is None
    assert describe_reuse(figure) is None


def test_the_run_summary_and_the_report_state_the_reuse(tmp_path):
    with PrefixCachingStub() as stub:
        result = CliRunner().invoke(app, [
            "run", "--bench", "locomo", "--data", str(_data(tmp_path, 1)),
            "--out", str(tmp_path / "cli"), "--model", "openai:stub", "--no-cache",
            "--base-url", stub.base_url, "--concurrency", "1"])
    assert result.exit_code == 0, result.output
    figure = load_manifest(tmp_path / "cli")["prefix_cache"]
    line = f"{100 * figure['reuse']:.1f} % of {figure['prompt_tokens']:,} prompt tokens"
    assert f"prefix cache: {line}" in result.output
    report = CliRunner().invoke(app, ["report", str(tmp_path / "cli")])
    assert report.exit_code == 0, report.output
    assert line in report.output


def test_a_server_that_does_not_report_cached_tokens_has_no_reuse_figure():
    reuse = PrefixReuse()
    reuse.add("ok", False, {"input_tokens": 100, "cached_tokens": None})
    reuse.add("ok", False, {"input_tokens": 50, "cached_tokens": 40})
    reuse.add("error", False, {"input_tokens": 70, "cached_tokens": 70})
    assert (reuse.answers, reuse.reported, reuse.prompt_tokens) == (2, 1, 50)
    assert reuse.reuse == 0.8
    assert "1 answers did not say" in (describe_reuse(reuse.to_dict()) or "")
    assert PrefixReuse().reuse is None


# -- the gate -----------------------------------------------------------------------------------


def test_the_gate_hands_a_freed_slot_to_the_lowest_key_and_survives_cancellation():
    async def main() -> list[Any]:
        gate = PriorityGate(1)
        order: list[Any] = []
        await gate.acquire((0, 0))

        async def one(key: Any) -> None:
            async with gate.hold(key):
                order.append(key)

        tasks = [asyncio.create_task(one(k)) for k in [(2, 0), (1, 1), (1, 0), (3, 0)]]
        await asyncio.sleep(0)
        tasks[3].cancel()  # a waiter cancelled before its turn gives up its place
        gate.release()
        await asyncio.gather(*tasks, return_exceptions=True)
        async with gate.hold((9, 9)):  # and the slot came back
            order.append("again")
        return order

    assert asyncio.run(main()) == [(1, 0), (1, 1), (2, 0), "again"]
