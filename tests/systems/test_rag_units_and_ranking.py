"""rag's units (turn, round, session), the recorded ranking, recency, and one index build
per episode, against the scripted model with BM25."""

from __future__ import annotations

import pytest
from rag_helpers import chosen, episode, make, prompt_text, question, run, turn

from memgauge.errors import ConfigError
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.runner._execute import make_record
from memgauge.schema import Session
from memgauge.systems import SystemContext


def _sessions() -> list[Session]:
    return [
        Session(session_id="s1", date="2024/01/01", turns=[
            turn("t1", "user", "I adopted a cat named Miso."),
            turn("t2", "assistant", "Miso is a lovely name."),
            turn("t3", "user", "My sister lives in Lisbon."),
            turn("t4", "assistant", "Lisbon is sunny.")]),
        Session(session_id="s2", date="2024/02/01", turns=[
            turn("t5", "user", "We repainted the kitchen green."),
            turn("t6", "assistant", "Green kitchens are calm.")]),
    ]


def test_turn_unit_retrieves_and_shows_only_the_matching_turn() -> None:
    made, model = make(unit="turn", top_k=1)
    [r] = run(made, episode(_sessions(), [question("Where does my sister live, Lisbon?")]))
    assert chosen(r) == [("s1", "t3")]
    shown = prompt_text(model.calls[0][0])
    assert shown == "=== Session 1 (Date: 2024/01/01) ===\nMy sister lives in Lisbon."


def test_round_unit_is_a_user_turn_with_the_reply_that_follows() -> None:
    made, model = make(unit="round", top_k=1)
    [r] = run(made, episode(_sessions(), [question("Lisbon sister")]))
    assert chosen(r) == [("s1", "t3")]
    assert prompt_text(model.calls[0][0]) == ("=== Session 1 (Date: 2024/01/01) ===\n"
                                              "My sister lives in Lisbon.\nLisbon is sunny.")


def test_session_unit_shows_whole_sessions_in_chronological_order() -> None:
    made, model = make(unit="session", top_k=2)
    [r] = run(made, episode(_sessions(), [question("green kitchen")]))
    assert chosen(r) == [("s2", None), ("s1", None)]  # ranked order in the record
    shown = prompt_text(model.calls[0][0])
    assert shown.index("Session 1 (Date: 2024/01/01)") < shown.index("Session 2 (Date: 2024/02/01)")
    assert "Miso" in shown and "kitchen" in shown


def test_chosen_turns_of_one_session_share_its_header_in_order() -> None:
    made, model = make(unit="turn", top_k=2)
    run(made, episode(_sessions(), [question("sister Lisbon adopted cat")]))
    shown = prompt_text(model.calls[0][0])
    assert shown.count("=== Session") == 1
    assert shown.index("Miso.") < shown.index("Lisbon.")


def _many(n: int) -> list[Session]:
    return [Session(session_id=f"s{i}", date=f"d{i}",
                    turns=[turn(f"t{i}", "user", f"note {i} about topic{i % 7}")])
            for i in range(n)]


@pytest.mark.parametrize(("n", "expected"), [(3, 3), (80, 50)])
def test_records_the_ranking_it_chose_from(n: int, expected: int) -> None:
    made, _ = make(unit="turn", top_k=2)
    [r] = run(made, episode(_many(n), [question("topic3 note")]))
    assert len(r.retrieved) == expected
    assert [it.chosen for it in r.retrieved] == [True, True] + [False] * (expected - 2)
    scores = [it.score for it in r.retrieved]
    assert scores == sorted(scores, reverse=True)


def test_ranking_zero_records_every_candidate() -> None:
    made, _ = make(unit="turn", top_k=1, ranking=0)
    [r] = run(made, episode(_many(80), [question("topic3")]))
    assert len(r.retrieved) == 80


def test_evidence_recall_counts_only_the_chosen() -> None:
    from memgauge.schema import EvidenceRef

    made, _ = make(unit="session", top_k=1)
    q = question("green kitchen")
    q = q.model_copy(update={"evidence": [EvidenceRef(session_id="s1", turn_id="t1")]})
    [r] = run(made, episode(_sessions(), [q]))
    assert {it.pointer.session_id for it in r.retrieved} == {"s1", "s2"}  # s1 ranked, unchosen
    ep = episode(_sessions(), [q])
    record = make_record(ep, q, r, [], {})
    assert record.evidence_recall() == 0.0


def _duplicates() -> list[Session]:
    return [Session(session_id="old", date="d1",
                    turns=[turn("a", "user", "The parking spot number is 12, parking spot 12.")]),
            Session(session_id="filler", date="d2", turns=[turn("b", "user", "Lunch was soup.")]),
            Session(session_id="new", date="d3",
                    turns=[turn("c", "user", "The parking spot number is 40.")])]


def test_recency_one_picks_the_later_duplicate_zero_the_better_match() -> None:
    q = question("parking spot number")
    at_zero, _ = make(unit="turn", top_k=1, recency=0)
    at_one, _ = make(unit="turn", top_k=1, recency=1)
    [r0] = run(at_zero, episode(_duplicates(), [q]))
    [r1] = run(at_one, episode(_duplicates(), [q]))
    assert chosen(r0) == [("old", "a")]
    assert chosen(r1) == [("new", "c")]
    assert r1.retrieved[0].score == 1.0  # α=1: the normalised position alone


def test_index_is_built_once_per_episode() -> None:
    made, _ = make(unit="turn", top_k=1)
    ep = episode(_sessions(), [question("sister", "q1"), question("adopted", "q2"),
                               question("kitchen", "q3")])
    rs = run(made, ep)
    assert [chosen(r)[0][1] for r in rs] == ["t3", "t1", "t5"]
    assert made.index.builds == 1
    run(made, ep)  # reset: a new episode builds its own index, once
    assert made.index.builds == 1


def test_a_question_asked_part_way_rebuilds_only_after_new_sessions() -> None:
    import asyncio

    made, _ = make(unit="turn", top_k=1)
    ep = episode(_sessions(), [question("Lisbon")])

    async def go() -> list[int]:
        await made.reset(ep)
        await made.ingest(ep.sessions[0])
        await made.answer(ep.questions[0])
        await made.answer(ep.questions[0])
        first = made.index.builds
        await made.ingest(ep.sessions[1])
        await made.answer(ep.questions[0])
        return [first, made.index.builds]

    assert asyncio.run(go()) == [1, 2]


@pytest.mark.parametrize(("options", "message"), [
    ({"unit": "page"}, "unit=page"),
    ({"recency": "1.5"}, "recency=1.5"),
    ({"retriever": "clip"}, "unknown retriever 'clip'"),
    ({"images": "blur"}, "images=blur"),
    ({"ranking": "-1"}, "ranking=-1"),
    ({"retriever": "hybrid", "fusion": "max"}, "unknown fusion 'max'"),
    ({"retriever": "embed", "embedder": "openai:m"}, "embedder_base_url"),
    ({"retriever": "embed", "embedder": "word2vec"}, "unknown embedder"),
])
def test_bad_options_fail_before_any_request(options: dict[str, str], message: str) -> None:
    ctx = SystemContext(model=ScriptedModel(), options=options)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        lookup("system", "rag")(ctx)
