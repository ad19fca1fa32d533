"""Tests for session retrieval: rank_sessions, retrieval_recall and the retrievers."""

from __future__ import annotations

import importlib.util
import json
import sys
import zlib

import numpy as np
import pytest

from memgauge.analysis import (
    EmbedRetriever,
    Retriever,
    get_retriever,
    rank_sessions,
    retrieval_recall,
    session_text,
)
from memgauge.errors import ConfigError
from memgauge.schema import (
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    ImageRef,
    Question,
    Session,
    Turn,
)

TOPICS = [
    "we repainted the kitchen cabinets a pale green colour last weekend",
    "the marathon training plan calls for long runs on sunday mornings",
    "my sister adopted a grey kitten from the animal shelter downtown",
    "the quarterly budget spreadsheet needs another column for travel",
    "our garden tomatoes finally ripened after the heatwave ended",
    "the jazz concert downtown sold out within an hour of opening",
]


def session(sid, text, *, image=False):
    turns = [Turn(turn_id=f"{sid}:1", role="user",
                  text=("<image> " if image else "") + text,
                  images=[ImageRef(source="images/x.png", captions={"gold": "SECRETCAPTION"})]
                  if image else []),
             Turn(turn_id=f"{sid}:2", role="assistant", text="Sounds good, noted.")]
    return Session(session_id=sid, turns=turns)


def episode(qid, sessions, question, evidence_ids):
    q = Question(question_id=qid, text=question, answer="x", answer_type="free_text",
                 ability="information_extraction",
                 evidence=[EvidenceRef(session_id=s, turn_id=f"{s}:1") for s in evidence_ids])
    return Episode(episode_id=qid, sessions=sessions, questions=[q],
                   benchmark=BenchmarkInfo(name="t"))


def sessions():
    return [session(f"s{i}", t, image=i == 3) for i, t in enumerate(TOPICS)]


def test_session_text_strips_placeholders_and_ignores_captions():
    s = session("a", "look at this   <image> receipt", image=True)
    text = session_text(s)
    assert "<image>" not in text and "SECRETCAPTION" not in text
    assert text == "look at this receipt\nSounds good, noted."


def test_bm25_finds_evidence_when_query_words_are_only_there():
    pytest.importorskip("bm25s")
    ep = episode("q1", sessions(), "What colour did we repaint the kitchen cabinets?", ["s0"])
    ep2 = episode("q2", sessions(), "Which animal did my sister adopt from the shelter?",
                  ["s2", "s4"])
    res = retrieval_recall([ep, ep2], ks=(1, 2, 10))
    assert res.retriever == "bm25"
    assert res.n_questions == 2 and res.n_without_evidence == 0
    # q1: s0 at rank 1. q2: s2 at rank 1, s4 has no query word -> ranked later.
    assert res.recall_at["1"] == pytest.approx((1.0 + 0.5) / 2)
    assert res.all_found_at["1"] == pytest.approx(0.5)
    assert res.recall_at["10"] == 1.0 and res.all_found_at["10"] == 1.0
    assert res.mrr == 1.0
    assert res.mean_sessions == 6 and res.mean_evidence_sessions == 1.5
    json.dumps(res.to_dict())


def test_bm25_misses_when_query_words_are_absent():
    pytest.importorskip("bm25s")
    # No query word occurs anywhere: every score is 0, ties keep session order, so the
    # evidence session s3 lands at rank 4.
    ep = episode("q1", sessions(), "Quantum chromodynamics lattice?", ["s3"])
    res = retrieval_recall([ep], ks=(1, 3, 5))
    assert res.recall_at == {"1": 0.0, "3": 0.0, "5": 1.0}
    assert res.mrr == pytest.approx(0.25)
    ranked = rank_sessions(ep.sessions, "Quantum chromodynamics lattice?", "bm25")
    assert [sid for sid, _ in ranked] == [f"s{i}" for i in range(6)]
    assert all(score == 0.0 for _, score in ranked)


def test_image_placeholder_does_not_match_and_captions_are_not_indexed():
    pytest.importorskip("bm25s")
    ep = episode("q1", sessions(), "SECRETCAPTION image", ["s3"])
    res = retrieval_recall([ep], ks=(1,))
    assert res.recall_at["1"] == 0.0


def test_questions_without_evidence_and_missing_sessions():
    pytest.importorskip("bm25s")
    no_ev = episode("q0", sessions(), "anything", [])
    gone = episode("q1", sessions(), "kitchen cabinets", ["s0", "not-here"])
    res = retrieval_recall([no_ev, gone], ks=(1, 10))
    assert res.n_without_evidence == 1 and res.n_questions == 1
    assert res.recall_at == {"1": 0.5, "10": 0.5}
    assert res.all_found_at["10"] == 0.0
    empty = retrieval_recall([no_ev])
    assert empty.n_questions == 0 and empty.mrr is None and empty.recall_at["1"] is None
    with pytest.raises(ConfigError):
        retrieval_recall([gone], ks=(0,))


class ReverseRetriever:
    """Ranks texts in reverse order: a custom Retriever needs no optional package."""

    name = "reverse"

    def rank(self, texts, query):
        return [(i, float(i)) for i in reversed(range(len(texts)))]


def test_custom_retriever_protocol():
    r = ReverseRetriever()
    assert isinstance(r, Retriever)
    ep = episode("q1", sessions(), "kitchen", ["s5"])
    res = retrieval_recall([ep], ks=(1,), retriever=r)
    assert res.retriever == "reverse" and res.recall_at["1"] == 1.0
    assert rank_sessions(ep.sessions, "x", r)[0] == ("s5", 5.0)


def _hash_encoder(texts):
    """Bag of hashed words: a stand-in embedding model."""
    out = np.zeros((len(texts), 256), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().replace("?", " ").split():
            out[row, zlib.crc32(word.encode()) % 256] += 1.0
    return out


def test_embed_retriever_with_injected_encoder():
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return _hash_encoder(texts)

    r = EmbedRetriever(encode)
    ep = episode("q1", sessions(), "jazz concert downtown sold out", ["s5"])
    res = retrieval_recall([ep, ep], ks=(1,), retriever=r)
    assert res.recall_at["1"] == 1.0 and res.mrr == 1.0
    # The second episode (same texts, same query) is served from the embedding cache.
    assert len(calls) == 1
    ranked = r.rank(["", "jazz"], "jazz")  # an all-zero vector scores 0, not NaN
    assert ranked == [(1, pytest.approx(1.0)), (0, 0.0)]


def test_get_retriever_unknown_and_missing_package(monkeypatch):
    with pytest.raises(ConfigError, match="unknown retriever"):
        get_retriever("nope")
    from memgauge.retrieval._sessions import BM25Retriever

    monkeypatch.setitem(sys.modules, "bm25s", None)  # import now fails
    with pytest.raises(ConfigError, match=r"memgauge\[validate\]"):
        BM25Retriever()


@pytest.mark.skipif(importlib.util.find_spec("static_model") is None,
                    reason="tokenlearn-static-model not installed")
def test_embed_retriever_with_bundled_static_model():
    pytest.importorskip("model2vec")
    r = get_retriever("embed")
    assert get_retriever("embed") is r  # cached: the model loads once
    ep = episode("q1", sessions(), "When does the marathon training plan have long runs?",
                 ["s1"])
    res = retrieval_recall([ep], ks=(1, 3), retriever="embed")
    assert res.retriever == "embed" and res.recall_at["1"] == 1.0
    vecs = r.embed(["hello world", "hello world"])
    assert vecs.shape[0] == 2 and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
