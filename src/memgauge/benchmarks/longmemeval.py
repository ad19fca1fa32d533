"""LongMemEval (xiaowu0162/LongMemEval): text chat histories, one haystack per question.

Files: ``longmemeval_{s,m,oracle}.json``. Item fields: ``question_id`` (an ``_abs`` suffix marks
an abstention question), ``question_type``, ``question``, ``answer``, ``question_date``,
``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions`` (turns
``{role, content, has_answer?}``), ``answer_session_ids``. Images, if a variant has them, are
read like MemLens's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..registry import benchmark
from ..schema import Ability, AnswerType, Episode, EvidenceRef, Question
from ._base import BenchmarkOptions, require
from ._parse import opt_str, scalar_str, type_name
from ._streaming import ItemContext, StreamingBenchmark, parse_sessions

_VARIANT_RE = re.compile(r"longmemeval_(s|m|oracle)(?![a-z])")

QUESTION_TYPES = {
    "single-session-user": Ability.INFORMATION_EXTRACTION,
    "single-session-assistant": Ability.INFORMATION_EXTRACTION,
    "single-session-preference": Ability.INFORMATION_EXTRACTION,
    "multi-session": Ability.MULTI_SESSION_REASONING,
    "temporal-reasoning": Ability.TEMPORAL_REASONING,
    "knowledge-update": Ability.KNOWLEDGE_UPDATE,
}


def _session_ids(raw: dict[str, Any], ctx: ItemContext) -> list[str] | None:
    ids = raw.get("haystack_session_ids")
    if ids is None:
        return None
    if type(ids) is not list:
        raise ctx.error(f"expected list, got {type_name(ids)}", "haystack_session_ids")
    out = []
    for i, v in enumerate(ids):
        if type(v) not in (str, int):
            raise ctx.error(f"expected str, got {type_name(v)}", f"haystack_session_ids[{i}]")
        out.append(str(v))
    sessions = raw.get("haystack_sessions")
    if type(sessions) is list and len(sessions) != len(out):
        raise ctx.error(f"has {len(out)} ids for {len(sessions)} haystack_sessions",
                        "haystack_session_ids")
    if len(set(out)) != len(out):
        dup = sorted({v for v in out if out.count(v) > 1})
        raise ctx.error(f"duplicate session ids: {', '.join(dup[:5])}", "haystack_session_ids")
    return out


def parse_item(raw: Any, index: int, ctx: ItemContext, bench: StreamingBenchmark) -> Episode | None:
    ctx.item = f"#{index}"
    if type(raw) is not dict:
        raise ctx.error(f"expected an item object, got {type_name(raw)}")
    qid = raw.get("question_id")
    if type(qid) is int:
        qid = str(qid)
    if type(qid) is not str or not qid:
        if qid is None:
            raise ctx.error("missing required field", "question_id")
        raise ctx.error(f"expected a non-empty str, got {type_name(qid)}", "question_id")
    ctx.item = qid
    if bench.keep is not None and qid not in bench.keep:
        return None
    question = require(raw, "question", str, file=ctx.file, item=qid)
    qtype = require(raw, "question_type", str, file=ctx.file, item=qid)
    ability = QUESTION_TYPES.get(qtype)
    if ability is None:
        raise ctx.error(f"unknown question_type {qtype!r}; known: {', '.join(QUESTION_TYPES)}",
                        "question_type")
    answer = scalar_str(raw, "answer", ctx, required=True)
    assert answer is not None
    question_date = opt_str(raw, "question_date", ctx)
    sids = _session_ids(raw, ctx)
    marked: list[tuple[str, str]] = []
    sessions = parse_sessions(raw, ctx, session_ids=sids, answer_turns=marked)

    evidence: list[EvidenceRef] = []
    meta: dict[str, Any] = {"question_type": qtype}
    answer_sids = raw.get("answer_session_ids")
    if answer_sids is not None:
        if type(answer_sids) is not list:
            raise ctx.error(f"expected list, got {type_name(answer_sids)}", "answer_session_ids")
        known = {s.session_id for s in sessions}
        unknown = []
        for k, v in enumerate(answer_sids):
            if type(v) not in (str, int):
                raise ctx.error(f"expected str, got {type_name(v)}", f"answer_session_ids[{k}]")
            sid = str(v)
            if sid in known:
                evidence.append(EvidenceRef(session_id=sid))
            else:
                unknown.append(sid)
        if unknown:  # e.g. an oracle-only id; recorded, not scored as retrievable evidence
            meta["evidence_not_in_haystack"] = unknown
    evidence.extend(EvidenceRef(session_id=sid, turn_id=tid) for sid, tid in marked)

    abstention = qid.endswith("_abs")
    q = Question(
        question_id=qid,
        text=question,
        answer=answer,
        answer_type=AnswerType.REFUSAL if abstention else AnswerType.FREE_TEXT,
        ability=Ability.ANSWER_REFUSAL if abstention else ability,
        subtype=qtype,
        evidence=evidence,
        question_date=question_date,
        meta=meta,
    )
    return Episode(episode_id=qid, sessions=sessions, questions=[q], benchmark=bench.info,
                   meta={"index": index})


class LongMemEvalBenchmark(StreamingBenchmark):
    name = "longmemeval"

    @staticmethod
    def guess_tier(path: str) -> str | None:
        m = _VARIANT_RE.search(Path(path).name.lower())
        return m.group(1) if m else None

    def _parse(self, raw: Any, index: int, ctx: ItemContext) -> Episode | None:
        return parse_item(raw, index, ctx, self)


@benchmark("longmemeval")
def longmemeval(opts: BenchmarkOptions) -> LongMemEvalBenchmark:
    """LongMemEval file (``longmemeval_s.json`` etc.); the tier defaults to the file's variant
    (``s``, ``m`` or ``oracle``) when ``--tier`` is not given."""
    return LongMemEvalBenchmark(opts)
