"""The runner measures what ingesting cost and shares it out among the questions asked
(design 0027): a system that sleeps in ingest shows ingest time > 0, reported ingest tokens
are split between answer points so that an episode's shares sum to its total."""

from __future__ import annotations

import asyncio

from memgauge.registry import benchmark, system
from memgauge.runner import RunConfig, read_records, run
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    Question,
    Response,
    Session,
    Turn,
    Usage,
)

TOKENS_PER_SESSION = 7  # prompt tokens the test system reports per ingested session


class ThreeSessions:
    """One episode of three sessions: q-a after session 1, q-b and q-c after all three."""

    name = "cost-three-sessions"

    def episodes(self):
        sessions = [Session(session_id=str(i), turns=[Turn(turn_id=f"{i}:1", role="user",
                                                            text=f"session {i}")])
                    for i in (1, 2, 3)]
        qs = [Question(question_id=qid, text="colour?", answer="red",
                       answer_type=AnswerType.FREE_TEXT, ability=Ability.SINGLE_HOP,
                       asked_after=after)
              for qid, after in (("q-a", 0), ("q-b", None), ("q-c", None))]
        yield Episode(episode_id="e1", sessions=sessions, questions=qs,
                      benchmark=BenchmarkInfo(name=self.name))

    def manifest(self):
        return {"name": self.name}


class SlowIngest:
    """Sleeps in ingest and reports its ingest totals since reset, as memory agents do."""

    name, modality = "cost-slow-ingest", "text"

    def describe(self):
        return {"name": self.name}

    async def reset(self, episode):
        self.sessions = 0

    async def ingest(self, session):
        await asyncio.sleep(0.02)
        self.sessions += 1

    async def answer(self, question):
        return Response(text="red", usage=Usage(input_tokens=10, output_tokens=2),
                        meta={"ingest": {"calls": self.sessions, "cached": 0,
                                         "prompt_tokens": TOKENS_PER_SESSION * self.sessions,
                                         # 1, then 6 after three sessions: 5 to split
                                         "completion_tokens": self.sessions
                                         * (self.sessions + 1) // 2},
                              "memory": {"items": self.sessions, "bytes": 100 * self.sessions}})


class NoReports:
    """Reports nothing about ingest (like full-context: no ingest-time calls)."""

    name, modality = "cost-no-reports", "text"

    def describe(self):
        return {"name": self.name}

    async def reset(self, episode):
        pass

    async def ingest(self, session):
        pass

    async def answer(self, question):
        return Response(text="red")


@benchmark("cost-three-sessions")
def three_sessions(opts):
    return ThreeSessions()


@system("cost-slow-ingest")
def slow_ingest(ctx):
    return SlowIngest


@system("cost-no-reports")
def no_reports(ctx):
    return NoReports


def _run(tmp_path, system_name):
    config = RunConfig(bench="cost-three-sessions", data="-", out=str(tmp_path / "r"),
                       system=system_name, model="none:", cache=False, progress=False)
    result = run(config)
    assert (result.ok, result.errors) == (3, 0)
    return read_records(tmp_path / "r")


def test_a_system_that_sleeps_in_ingest_records_ingest_time(tmp_path):
    records = _run(tmp_path, "cost-slow-ingest")
    costs = {qid: r.cost for qid, r in records.items()}
    assert all(c is not None for c in costs.values())
    assert costs["q-a"].ingest_s > 0
    assert costs["q-b"].ingest_s > 0 and costs["q-c"].ingest_s > 0
    assert all(c.answer_s is not None and c.answer_s >= 0 for c in costs.values())
    # q-a paid for session 1 alone; q-b and q-c share sessions 2 and 3
    assert (costs["q-a"].ingest_sessions, costs["q-a"].ingest_shared_by) == (1, 1)
    assert (costs["q-b"].ingest_sessions, costs["q-b"].ingest_shared_by) == (2, 2)


def test_reported_ingest_tokens_are_shared_and_sum_to_the_episode_total(tmp_path):
    records = _run(tmp_path, "cost-slow-ingest")
    a, b, c = records["q-a"].cost, records["q-b"].cost, records["q-c"].cost
    assert a.ingest_prompt_tokens == TOKENS_PER_SESSION  # session 1 only
    # sessions 2 and 3 (14 tokens) split between the two questions asked after them
    assert (b.ingest_prompt_tokens, c.ingest_prompt_tokens) == (7, 7)
    assert sum(x.ingest_prompt_tokens for x in (a, b, c)) == 3 * TOKENS_PER_SESSION
    assert sum(x.ingest_calls for x in (a, b, c)) == 3
    # 5 completion tokens over 2 questions: whole shares, the remainder to the first
    assert (a.ingest_completion_tokens, b.ingest_completion_tokens,
            c.ingest_completion_tokens) == (1, 3, 2)
    assert (a.memory_items, a.memory_bytes) == (1, 100)
    assert (b.memory_items, b.memory_bytes) == (3, 300)


def test_a_system_reporting_nothing_has_unknown_ingest_tokens_but_measured_time(tmp_path):
    records = _run(tmp_path, "cost-no-reports")
    for r in records.values():
        assert r.cost is not None
        assert r.cost.ingest_prompt_tokens is None and r.cost.memory_bytes is None
        assert r.cost.ingest_s >= 0
