"""fact-memory: facts extracted per session with their source pointers, reconciled with
ADD / UPDATE / DELETE / NONE against the most similar stored facts; the reader sees the
latest facts, and retrieved points at their sources."""

from __future__ import annotations

import json

from test_agents_common import answer_prompts, question, run_agent, session, system_text, text_of

from memgauge.models import Message
from memgauge.systems.fact_memory import VERSION

EXTRACTED = {
    "s1": [{"fact": "The user's dog is named Rex", "turn": "T1"},
           {"fact": "The user lives in Lyon", "turn": "T2"}],
    "s2": [{"fact": "The user's dog is named Max", "turn": "T1"},
           {"fact": "The user moved away from Lyon", "turn": "T2"},
           {"fact": "The user lives in Lyon", "turn": "T2"}],
}


def _decisions(user_text: str) -> str:
    """Rename the dog (UPDATE), drop Lyon (DELETE), already known (NONE)."""
    stored = {line.split(":", 1)[1].split("] ", 1)[1]: line.split(":", 1)[0]
              for line in user_text.split("New facts:")[0].splitlines() if line.startswith("F")}
    return json.dumps({"decisions": [
        {"new": 1, "op": "UPDATE", "id": stored["The user's dog is named Rex"],
         "text": "The user's dog is named Max"},
        {"new": 2, "op": "DELETE", "id": stored["The user lives in Lyon"]},
        {"new": 3, "op": "NONE"}]})


def scripted(messages: list[Message], qid: str | None) -> str:
    system, body = system_text(messages), text_of(messages[1:])
    if qid is not None:
        return "Max"
    if "write down the facts" in system:
        sid = "s1" if "Rex" in body else "s2"
        return json.dumps({"facts": EXTRACTED[sid]})
    assert "decide one operation" in system
    return _decisions(body)


def _sessions():
    return [session("s1", "2024/01/01", "My dog Rex is great.", "I live in Lyon."),
            session("s2", "2024/03/01", "I renamed the dog Max.", "We moved out of Lyon.")]


def test_update_replaces_delete_removes_none_keeps_and_the_reader_sees_the_latest() -> None:
    [r], model, agent = run_agent("fact-memory", scripted, _sessions(),
                                  [question("What is the name of the user's dog?")])
    texts = [f.text for f in agent.facts.values()]
    assert texts == ["The user's dog is named Max"]  # Rex updated, Lyon deleted
    fact = next(iter(agent.facts.values()))
    assert fact.replaced == ["The user's dog is named Rex"]
    assert fact.source.session_id == "s2" and fact.source.turn_id == "s2:1"
    assert fact.date == "2024/03/01"
    assert r.meta["operations"] == {"ADD": 2, "UPDATE": 1, "DELETE": 1, "NONE": 1}
    [prompt] = answer_prompts(model)
    assert "[2024/03/01] The user's dog is named Max" in prompt and "Rex" not in prompt
    assert r.text == "Max" and r.error is None
    assert r.retrieved[0].pointer.session_id == "s2" and r.retrieved[0].pointer.turn_id == "s2:1"
    # the first session's facts were added without a decision call (nothing was stored)
    assert r.meta["ingest"]["calls"] == 3
    assert agent.describe()["prompt_version"] == VERSION


def test_the_decision_step_sees_only_similar_stored_facts() -> None:
    _, model, _ = run_agent("fact-memory", scripted, _sessions(), [question("dog?")],
                            options={"similar_k": 1})
    [decide] = [text_of(m) for m, _ in model.calls if "decide one operation" in system_text(m)]
    stored = decide.split("New facts:")[0]
    assert "Rex" in stored and "Lyon" in stored


def test_malformed_replies_are_retried_then_recorded_and_a_question_needing_them_fails(
        ) -> None:
    replies = {"extract": ["not json at all", '{"facts": [{"fact": "Rex is a dog"}]}']}

    def fn(messages: list[Message], qid: str | None) -> str:
        if qid is not None:
            return "ok"
        if "write down the facts" in system_text(messages):
            if "Second" in text_of(messages):
                return "still {broken"
            return replies["extract"].pop(0)
        raise AssertionError("no decision expected")

    sessions = [session("s1", "d1", "Rex is my dog."), session("s2", "d2", "Second chat.")]
    [r, needs_s2, needs_any], model, agent = run_agent(
        "fact-memory", fn, sessions, [question("dog?", "q1", ("s1",)),
                                      question("chat?", "q2", ("s2",)), question("any?", "q3")])
    # s1: a malformed first reply, read on the retry, which shows the model its bad reply
    retry = model.calls[1][0]
    assert retry[-2].role == "assistant" and text_of([retry[-2]]) == "not json at all"
    assert [f.text for f in agent.facts.values()] == ["Rex is a dog"]
    # s2: malformed twice: recorded; a question on s1 is still answered from memory
    [failure] = r.meta["ingest_failures"]
    assert failure["session_id"] == "s2" and failure["kind"] == "unparsable"
    assert r.error is None and r.text == "ok"
    assert r.meta["ingest"]["calls"] == 4
    assert r.meta["ingest_replies"] == {"json": 4, "unreadable": 3}
    # issue 29: one that needs s2 (its evidence, or with none any session) is an error,
    # not a score, and nothing is asked for it
    for failed in (needs_s2, needs_any):
        assert failed.error is not None and failed.error.kind == "ingest_failed"
        assert "s2 (extract) unparsable" in failed.error.message and not failed.error.retryable
    assert [q for _, q in model.calls if q is not None] == ["q1"]


def test_a_decision_naming_an_unknown_fact_adds_the_fact_and_says_so() -> None:
    def fn(messages: list[Message], qid: str | None) -> str:
        if qid is not None:
            return "ok"
        if "write down the facts" in system_text(messages):
            return json.dumps({"facts": [{"fact": "Rex is a dog", "turn": "T1"}]})
        return json.dumps({"decisions": [{"new": 1, "op": "UPDATE", "id": "F99", "text": "x"}]})

    sessions = [session("s1", "d1", "Rex is my dog."), session("s2", "d2", "Rex is my dog.")]
    [r], _, agent = run_agent("fact-memory", fn, sessions, [question("dog?")])
    assert len(agent.facts) == 2
    assert r.meta["ingest_failures"][0]["kind"] == "bad_decision"
    assert "F99" in r.meta["ingest_failures"][0]["message"]


def test_retrieved_holds_the_chosen_facts_then_the_whole_ranking() -> None:
    facts = [{"fact": f"fact number {i} about topic{i}", "turn": f"T{i + 1}"} for i in range(6)]

    def fn(messages: list[Message], qid: str | None) -> str:
        if qid is not None:
            return "ok"
        if "write down the facts" in system_text(messages):
            return json.dumps({"facts": facts})
        raise AssertionError("one session: no decision")

    s = session("s1", "d1", *(f"turn {i}" for i in range(6)))
    [r], model, _ = run_agent("fact-memory", fn, [s], [question("what about topic3?")],
                              options={"top_k": 2})
    assert r.retrieved[0].pointer.turn_id == "s1:4"  # topic3 came from T4
    assert len(r.retrieved) == 6  # all candidates, chosen first
    assert r.meta["facts_read"] == 2
    [prompt] = answer_prompts(model)
    assert "topic3" in prompt and sum(f"topic{i}" in prompt for i in range(6)) == 2
