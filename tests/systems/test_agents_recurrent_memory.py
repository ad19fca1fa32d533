"""recurrent-memory: the history read chunk by chunk into a memory bounded to memory_tokens
(counted with the run's token counter); question-aware reads at answer time with the
question, question-blind at ingest without it."""

from __future__ import annotations

import json

from test_agents_common import question, run_agent, session, system_text, text_of

from memgauge.models import Message
from memgauge.tokens import TokenCounter


def _memory_from(messages: list[Message]) -> str:
    """Append every turn label of the new chunk (what was read) to the old memory."""
    body = text_of(messages[1:])
    old = body.split("Old memory:\n", 1)[1].split("\n\nNew chunk:", 1)[0]
    chunk = body.split("New chunk:\n", 1)[1]
    labels = [w.strip("[]") for w in chunk.split() if w.startswith("[S")]
    kept = "" if old == "(empty)" else old + " "
    return kept + " ".join(f"saw [{label}]" for label in labels)


def scripted(messages: list[Message], qid: str | None) -> str:
    if "keep a memory of it" in system_text(messages):
        return json.dumps({"memory": _memory_from(messages)})
    return "final answer"


def _sessions():
    return [session("s1", "2024/01/01", "alpha " * 30, "beta " * 30),
            session("s2", "2024/02/01", "gamma " * 30)]


def test_aware_reads_every_chunk_with_the_question_at_answer_time() -> None:
    [r], model, agent = run_agent("recurrent-memory", scripted, _sessions(),
                                  [question("Which greek letter came last?")],
                                  options={"chunk_tokens": 40, "variant": "aware"})
    rewrites = [(m, qid) for m, qid in model.calls if "keep a memory" in system_text(m)]
    assert len(rewrites) == len(agent.chunks) == 3  # one turn per chunk at 40 tokens
    assert all(qid == "q1" and "Question: Which greek letter" in text_of(m)
               and "for answering the question below" in system_text(m) for m, qid in rewrites)
    assert r.meta["ingest"]["calls"] == 0  # nothing is read before the question
    assert r.meta["reading"] == {"calls": 3, "chunks": 3, "unparsable": 0}
    # what the final memory cites, in order, as evidence pointers
    assert [(it.pointer.session_id, it.pointer.turn_id) for it in r.retrieved] == [
        ("s1", "s1:1"), ("s1", "s1:2"), ("s2", "s2:1")]
    assert r.text == "final answer"


def test_blind_reads_at_ingest_without_the_question() -> None:
    qs = [question("first?", "q1"), question("second?", "q2")]
    [r1, r2], model, _ = run_agent("recurrent-memory", scripted, _sessions(), qs,
                                   options={"chunk_tokens": 40, "variant": "blind"})
    rewrites = [(m, qid) for m, qid in model.calls if "keep a memory" in system_text(m)]
    assert len(rewrites) == 3 and all(qid is None for _, qid in rewrites)
    assert not any("Question:" in text_of(m) for m, _ in rewrites)
    assert r1.meta["ingest"]["calls"] == r2.meta["ingest"]["calls"] == 3
    assert "reading" not in r1.meta


def test_the_memory_stays_within_memory_tokens_as_the_run_counts() -> None:
    def fn(messages: list[Message], qid: str | None) -> str:
        if "keep a memory of it" in system_text(messages):
            return json.dumps({"memory": "remember this detail please " * 200})
        return "ok"

    counter = TokenCounter()
    for variant in ("aware", "blind"):
        [r], model, _ = run_agent("recurrent-memory", fn, _sessions(), [question("q?")],
                                      counter=counter,
                                      options={"memory_tokens": 50, "variant": variant})
        used = r.meta["memory_tokens_used"]
        assert 40 <= used <= 50
        assert r.meta["truncations"] >= 1
        rewrite = next(m for m, _ in model.calls if "keep a memory" in system_text(m))
        assert "under 50 tokens" in system_text(rewrite)
        answer = text_of(next(m for m, qid in model.calls
                              if "keep a memory" not in system_text(m)))
        assert counter.text(answer.split("Memory notes:\n", 1)[1].split("\n")[0]) <= 50


def test_an_unparsable_rewrite_keeps_the_memory_and_is_counted() -> None:
    def fn(messages: list[Message], qid: str | None) -> str:
        if "keep a memory of it" in system_text(messages):
            return "I refuse to write JSON"
        return "ok"

    [r], _, _ = run_agent("recurrent-memory", fn, _sessions(), [question("q?")])
    assert r.meta["reading"]["unparsable"] == 2 and r.meta["reading"]["calls"] == 4
    [r], _, _ = run_agent("recurrent-memory", fn, _sessions(), [question("q?")],
                          options={"variant": "blind"})
    assert [f["kind"] for f in r.meta["ingest_failures"]] == ["unparsable", "unparsable"]
    # blind: the rewrites were the ingest, so the question is an error, not a score
    assert r.error is not None and r.error.kind == "ingest_failed"
