"""Retrieval diagnostics from stored rankings against hand-computed values (design 0030)."""

from __future__ import annotations

import json
import math

import pytest

from memgauge.analysis import (
    RunData,
    build_tables,
    clue_groups,
    question_clues,
    recency_rerank,
)
from memgauge.analysis._clues import clues_of, pessimistic_ranks
from memgauge.errors import ConfigError
from memgauge.report import render_tables_json, render_tables_markdown
from memgauge.schema import (
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    Question,
    Record,
    Response,
    RetrievedItem,
    Session,
)

IE, KU = "information_extraction", "knowledge_update"


def ref(pointer: str) -> EvidenceRef:
    session, _, turn = pointer.partition("/")
    return EvidenceRef(session_id=session, turn_id=turn or None)


def ranked(*items: tuple[str, float | None], chosen: int) -> list[RetrievedItem]:
    return [RetrievedItem(pointer=ref(p), score=s, chosen=i < chosen)
            for i, (p, s) in enumerate(items)]


def record(retrieved: list[RetrievedItem], evidence: list[str], *, qid: str = "q1",
           positions: dict[str, int] | None = None, score: float = 1.0,
           ability: str = IE, status: str = "ok") -> Record:
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="t"),
                  status=status, ability=ability, answer_type="free_text", question="?",
                  gold="x", prediction="x", response=Response(text="x", retrieved=retrieved),
                  scores={"rule": score}, evidence=[ref(p) for p in evidence],
                  meta={} if positions is None else {"session_positions": positions})


POS = {f"s{i}": i for i in range(10)}
# s5 0.9 and s1 0.8 chosen, then s3 0.5, s2 0.4; clues s3 (latest, by position) and s1.
STALE = ranked(("s5", 0.9), ("s1", 0.8), ("s3", 0.5), ("s2", 0.4), chosen=2)


def test_stale_clue_chosen_latest_not_at_own_k() -> None:
    q = question_clues(record(STALE, ["s3", "s1"], positions=POS))
    assert q is not None and q.k == 2
    assert q.ranks == (2.0, math.inf)  # chronological: s1 then s3 (= c*)
    assert (q.any_clue_recall, q.full_clue_recall, q.latest_clue_recall) == (1.0, 0.0, 0.0)
    assert q.mrr == 0.5
    assert q.stale_dominance == 1.0 and q.rank_inversion == 1.0 and q.latest_miss == 1.0


def test_a_larger_k_takes_the_latest_in() -> None:
    q = question_clues(record(STALE, ["s3", "s1"], positions=POS), k=3)
    assert q is not None and q.ranks == (2.0, 3.0)
    assert (q.any_clue_recall, q.full_clue_recall, q.latest_clue_recall) == (1.0, 1.0, 1.0)
    assert q.mrr == 0.5
    assert q.stale_dominance == 1.0  # 2 < 3: the stale one still ranks above
    assert q.rank_inversion == 1.0 and q.latest_miss == 0.0


def test_without_positions_the_evidence_order_is_chronological() -> None:
    # evidence [s3, s1]: s1 is the latest now, ranked 2, s3 beyond k
    q = question_clues(record(STALE, ["s3", "s1"]))
    assert q is not None and q.ranks == (math.inf, 2.0)
    assert q.latest_clue_recall == 1.0 and q.stale_dominance == 0.0
    assert q.rank_inversion == 0.0 and q.latest_miss == 0.0


def test_ties_take_the_pessimistic_rank() -> None:
    assert pessimistic_ranks([0.9, 0.5, 0.5, 0.1]) == [1, 3, 3, 4]
    assert pessimistic_ranks([None, None, 0.2, 0.2]) == [1, 2, 4, 4]
    items = ranked(("a", 0.9), ("b", 0.5), ("c", 0.5), ("d", 0.1), chosen=2)
    q = question_clues(record(items, ["b"]))
    # b was chosen, but only by a tie-break with c: rank 3 > k = 2
    assert q is not None and q.ranks == (math.inf,)
    assert q.any_clue_recall == 0.0 and q.mrr == 0.0
    q3 = question_clues(record(items, ["b"]), k=3)
    assert q3 is not None and q3.any_clue_recall == 1.0 and q3.mrr == pytest.approx(1 / 3)


def test_one_clue_has_no_stale_dominance_or_inversion() -> None:
    q = question_clues(record(STALE, ["s1"], positions=POS))
    assert q is not None
    assert (q.any_clue_recall, q.full_clue_recall, q.latest_clue_recall, q.mrr) == (1, 1, 1, 0.5)
    assert q.stale_dominance is None and q.rank_inversion is None and q.latest_miss == 0.0


def test_latest_clue_never_ranked_and_k_beyond_the_list() -> None:
    q = question_clues(record(STALE, ["s1", "s9"], positions=POS), k=10)
    assert q is not None and q.k == 10 and q.ranks == (2.0, math.inf)
    assert q.unranked_clues == 1
    assert (q.any_clue_recall, q.full_clue_recall, q.latest_clue_recall) == (1.0, 0.0, 0.0)
    assert q.stale_dominance == 1.0 and q.latest_miss == 1.0


def test_three_clues_rank_inversion_share() -> None:
    items = ranked(("s2", 0.9), ("s0", 0.8), ("s4", 0.7), ("s1", 0.6), chosen=4)
    q = question_clues(record(items, ["s0", "s2", "s4"], positions=POS))
    # chronological s0 (r2), s2 (r1), s4 (r3): pairs (s0,s2) 2<1 no, (s0,s4) yes, (s2,s4) yes
    assert q is not None and q.ranks == (2.0, 1.0, 3.0)
    assert q.rank_inversion == pytest.approx(2 / 3)
    assert q.stale_dominance == 1.0 and q.mrr == 1.0


def test_granularity_turns_and_sessions() -> None:
    turns = ranked(("s1/t1", 0.9), ("s2/t4", 0.8), ("s2/t5", 0.7), chosen=1)
    q = question_clues(record(turns, ["s2"]))  # a session clue: any turn of it
    assert q is not None and q.ranks == (math.inf,)  # best turn of s2 is rank 2 > k = 1
    assert question_clues(record(turns, ["s2"]), k=2).ranks == (2.0,)  # type: ignore[union-attr]
    assert question_clues(record(turns, ["s2/t5"]), k=3).ranks == (3.0,)  # type: ignore[union-attr]
    sessions = ranked(("s1", 0.9), ("s2", 0.8), chosen=2)
    q = question_clues(record(sessions, ["s2/t5", "s2/t7"]))  # a session holds its turns
    assert q is not None and q.ranks == (2.0, 2.0) and q.full_clue_recall == 1.0
    assert clues_of(record(sessions, ["s2/t5", "s2/t5"])) == [("s2", "t5")]


def test_records_without_a_ranking_clues_or_ok_status_are_not_diagnosed() -> None:
    assert question_clues(record([], ["s1"])) is None
    assert question_clues(record(STALE, [])) is None
    assert question_clues(record(STALE, ["s1"], status="error")) is None
    with pytest.raises(ConfigError, match="--k"):
        question_clues(record(STALE, ["s1"]), k=0)


def test_groups_average_and_split_wrong_answers() -> None:
    recs = [record(STALE, ["s3", "s1"], qid="a", positions=POS, score=0.0),  # full 0: retrieval
            record(STALE, ["s1"], qid="b", positions=POS, score=0.0),  # full 1: comprehension
            record(STALE, ["s5"], qid="c", positions=POS, score=1.0),
            record([], ["s1"], qid="d", score=0.0)]  # no ranking: not counted
    groups = clue_groups([("ie", "8k", r) for r in recs], "rule")
    g = groups["ie"]["8k"].to_dict()
    assert g["any_clue_recall"] == {"value": 1.0, "k": 2, "n": 3}
    assert g["full_clue_recall"]["value"] == pytest.approx(2 / 3)
    assert g["mrr"]["value"] == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    assert g["stale_dominance"] == {"value": 1.0, "k": 2, "n": 1}
    assert g["failures"] == {"retrieval": 1, "comprehension": 1, "n_wrong": 2, "k": 2}


def test_groups_show_the_range_of_own_ks() -> None:
    one = ranked(("s1", 0.9), ("s2", 0.1), chosen=1)
    g = clue_groups([("ie", "-", record(STALE, ["s1"], qid="a")),
                     ("ie", "-", record(one, ["s1"], qid="b"))], None)["ie"]["-"].to_dict()
    assert g["any_clue_recall"]["k"] == [1, 2]
    assert g["failures"]["n_wrong"] == 0  # no primary scorer: nothing is wrong


def _run(label: str, system: str, records: list[Record]) -> RunData:
    ident = {"system": system, "model": "m", "context_mode": "text", "tier": "8k",
             "bench": "t", "system_options": {}}
    return RunData(label, {"config": {"identity": ident}}, records)


def test_report_tables_markdown_and_json_carry_the_diagnostics() -> None:
    runs = [_run("R", "rag", [record(STALE, ["s3", "s1"], qid="a", positions=POS, score=0.0),
                              record(STALE, ["s1"], qid="b", ability=KU, positions=POS)]),
            _run("F", "full_context", [record([], ["s1"], qid="a")])]
    tables = build_tables(runs, n_resamples=50)
    system = next(iter(tables.clues))
    assert list(tables.clues) == [system] and system.startswith("rag")
    ie = tables.clues[system][IE]["8k"]
    assert ie["latest_miss"] == {"value": 1.0, "k": 2, "n": 1}
    assert ie["failures"]["retrieval"] == 1
    payload = json.loads(render_tables_json([], tables))
    group = payload["tables"]["clues"][system][KU]["8k"]
    for key in ("any_clue_recall", "full_clue_recall", "latest_clue_recall", "mrr",
                "stale_dominance", "rank_inversion", "latest_miss"):
        assert set(group[key]) == {"value", "k", "n"}
    assert group["stale_dominance"] == {"value": None, "k": None, "n": 0}
    md = render_tables_markdown(tables)
    assert "### Retrieval diagnostics" in md
    assert "| information_extraction | 8k | 2 | 100.0% (n=1) | 0.0% (n=1) |" in md
    wider = build_tables(runs, n_resamples=50, k=3)
    assert wider.clues[system][IE]["8k"]["latest_miss"]["value"] == 0.0
    assert wider.clues_k == 3


def test_report_without_rankings_says_so() -> None:
    tables = build_tables([_run("F", "full_context", [record([], ["s1"])])], n_resamples=50)
    assert tables.clues == {}
    assert "No record carries both a ranking and gold evidence." in render_tables_markdown(tables)


def test_html_has_the_section() -> None:
    pytest.importorskip("matplotlib")
    from memgauge.report import render_html

    tables = build_tables([_run("R", "rag", [record(STALE, ["s3", "s1"], positions=POS)])],
                          n_resamples=50)
    page = render_html(tables, title="t")
    assert 'id="clues"' in page and "Latest-clue R@k" in page


# --- the recency re-rank ---------------------------------------------------------------------

POOL = ranked(("s1", 1.0), ("s2", 0.5), ("s3", 0.0), chosen=1)
POOL_POS = {"s1": 0, "s2": 5, "s3": 10}


def _order(rec: Record | None) -> list[tuple[str, bool]]:
    assert rec is not None
    return [(it.pointer.session_id, it.chosen) for it in rec.response.retrieved]


def test_rerank_by_alpha() -> None:
    rec = record(POOL, ["s3"], positions=POOL_POS)
    assert _order(recency_rerank(rec, 0.0)) == [("s1", True), ("s2", False), ("s3", False)]
    assert _order(recency_rerank(rec, 1.0)) == [("s3", True), ("s2", False), ("s1", False)]
    # α = 0.5: s′ = 0.5 for all three; a tie keeps the stored order, and ranks pessimistic
    half = recency_rerank(rec, 0.5)
    assert _order(half) == [("s1", True), ("s2", False), ("s3", False)]
    assert [it.score for it in half.response.retrieved] == [0.5, 0.5, 0.5]  # type: ignore[union-attr]
    assert question_clues(half, k=2).any_clue_recall == 0.0  # type: ignore[arg-type,union-attr]
    assert question_clues(recency_rerank(rec, 1.0)).latest_clue_recall == 1.0  # type: ignore[arg-type,union-attr]


def test_rerank_needs_scores_and_positions() -> None:
    assert recency_rerank(record(POOL, ["s3"]), 0.5) is None  # no positions
    assert recency_rerank(record(POOL, ["s3"], positions={"s1": 0}), 0.5) is None
    no_score = ranked(("s1", None), ("s2", 0.5), chosen=1)
    assert recency_rerank(record(no_score, ["s2"], positions=POOL_POS), 0.5) is None
    with pytest.raises(ConfigError, match="alpha"):
        recency_rerank(record(POOL, ["s3"], positions=POOL_POS), 1.5)


def test_runner_records_session_positions_of_evidence_and_ranking() -> None:
    from memgauge.runner._execute import make_record

    q = Question(question_id="q", text="?", answer="x", answer_type="free_text",
                 ability=IE, evidence=[ref("b/t1")])
    ep = Episode(episode_id="e", sessions=[Session(session_id=s) for s in "abcd"],
                 questions=[q], benchmark=BenchmarkInfo(name="t"))
    resp = Response(text="x", retrieved=ranked(("d", 0.9), ("a", 0.1), chosen=1))
    rec = make_record(ep, q, resp, [], {})
    assert rec.meta["session_positions"] == {"a": 0, "b": 1, "d": 3}
    bare = make_record(ep, q, Response(text="x"), [], {})
    assert "session_positions" not in bare.meta  # nothing ranked, nothing written
