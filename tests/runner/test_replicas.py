"""Several endpoints (issue 16 item 2, design 0034; the routing itself is 0031 and
tests/runner/test_prefix_scheduling.py): a replica that keeps failing is given up on only
after a request used all its retries there; its episodes then move to another replica and
stay there, and the manifest names the replica, why, and how many episodes moved. A
failure that no retry cures (a 400) moves nothing."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from helpers.stub_server import StubServer, last_text

from memgauge.runner import RunConfig, load_manifest, read_records, run

QUESTIONS = 3
ATTEMPTS = 3


def _conversation(c: int) -> dict[str, Any]:
    return {
        "sample_id": f"conv-{c}",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1 pm on 1 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": f"I moved to city {c}."}],
        },
        "qa": [{"question": f"Question {k} about story {c}?", "answer": f"city {c}",
                "evidence": ["D1:1"], "category": 4} for k in range(QUESTIONS)],
    }


def _config(tmp_path: Path, urls: list[str], episodes: int) -> RunConfig:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_conversation(c) for c in range(episodes)]), encoding="utf-8")
    # one question in flight: the order of routing choices is the input order
    return RunConfig(bench="locomo", data=str(data), out=str(tmp_path / "run"),
                     model="openai:stub", base_url=",".join(urls), cache=False, progress=False,
                     concurrency=1, max_attempts=ATTEMPTS, retry_base_s=0.001)


def _asked(body: dict[str, Any]) -> tuple[int, int]:
    found = re.search(r"Question (\d+) about story (\d+)\?", last_text(body))
    assert found, last_text(body)
    return int(found.group(2)), int(found.group(1))


def test_a_failing_replica_s_episodes_move_only_after_its_retries_and_the_manifest_says_so(
        tmp_path):
    with StubServer(answer=lambda b: "city") as a, StubServer() as b:
        b.plan = [503] * 100
        run(_config(tmp_path, [a.base_url, b.base_url], episodes=4))
        on_b = Counter(_asked(r) for r in b.requests)
        on_a = [_asked(r) for r in a.requests]
    # episode 0 went to a, episode 1 to b: its first question was tried there ATTEMPTS times
    assert on_b == {(1, 0): ATTEMPTS}
    assert sorted(on_a) == sorted((c, k) for c in range(4) for k in range(QUESTIONS))
    records = read_records(tmp_path / "run")
    assert len(records) == 4 * QUESTIONS and all(r.status == "ok" for r in records.values())
    first, second = load_manifest(tmp_path / "run")["endpoints"]
    assert "down" not in first
    assert second["down"]["kind"] == "http_503" and second["down"]["attempts"] == ATTEMPTS
    assert second["episodes_moved"] == 1
    assert second["base_url"] == b.base_url


def test_a_failure_no_retry_cures_is_recorded_and_moves_nothing(tmp_path):
    with StubServer(answer=lambda b: "city") as a, StubServer(answer=lambda b: "city") as b:
        b.plan = [400]  # the first question sent to b is refused once
        run(_config(tmp_path, [a.base_url, b.base_url], episodes=2))
        on_b = sorted(_asked(r) for r in b.requests)
    assert on_b == [(1, k) for k in range(QUESTIONS)]  # episode 1 stayed on b
    records = read_records(tmp_path / "run")
    errors = [r for r in records.values() if r.status == "error"]
    assert len(errors) == 1 and errors[0].response.error.kind == "http_400"
    assert all("down" not in e for e in load_manifest(tmp_path / "run")["endpoints"])


def test_when_every_replica_fails_the_questions_are_recorded_as_errors(tmp_path):
    with StubServer() as a, StubServer() as b:
        a.plan = b.plan = [502] * 100
        run(_config(tmp_path, [a.base_url, b.base_url], episodes=1))
        sent = len(a.requests) + len(b.requests)
    records = read_records(tmp_path / "run")
    assert len(records) == QUESTIONS
    assert {r.response.error.kind for r in records.values()} == {"http_502"}
    # the first question tried both replicas, each later one its replica's retries only
    assert sent == 2 * ATTEMPTS + (QUESTIONS - 1) * ATTEMPTS
    endpoints = load_manifest(tmp_path / "run")["endpoints"]
    assert all(e["down"]["kind"] == "http_502" for e in endpoints)
