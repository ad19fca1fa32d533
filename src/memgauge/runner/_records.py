"""Records: one question's answer made into a :class:`Record` (scores, where its
evidence lies), and the status counts of a run folder's records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._cache_hits import CacheHits
from ..schema import INGEST_FAILED, Cost, Episode, Question, Record, Response
from ..scoring import is_refusal, rule_scorers_for
from ._prefix import PrefixReuse


def missing_images(episode: Episode) -> list[str]:
    return [im.source for s in episode.sessions for t in s.turns for im in t.images
            if im.missing]


def evidence_depth(episode: Episode, question: Question) -> float | None:
    """How far back the question's evidence lies: the share of the history shown to the
    system that comes after the earliest evidence session (0 = the last session, towards 1 =
    the first of many). None when the question points at no known session."""
    n = len(episode.sessions)
    if question.asked_after is not None:
        n = min(n, question.asked_after + 1)
    wanted = {p.session_id for p in question.evidence}
    if not wanted or n == 0:
        return None
    positions = [i for i, s in enumerate(episode.sessions[:n]) if s.session_id in wanted]
    if not positions:
        return None
    return round((n - 1 - min(positions)) / n, 4)


def timeline_position(episode: Episode, question: Question) -> dict[str, int]:
    """For a question asked mid-history (``asked_after``): how many sessions existed when it
    was asked, and how many sessions came after its latest evidence session by then (0: the
    session just before the question). Not the protocol's: the question's own time."""
    if question.asked_after is None:
        return {}
    elapsed = max(0, min(len(episode.sessions), question.asked_after + 1))
    out = {"elapsed_sessions": elapsed}
    wanted = {p.session_id for p in question.evidence}
    seen = [i for i, s in enumerate(episode.sessions[:elapsed]) if s.session_id in wanted]
    if seen:
        out["evidence_distance"] = elapsed - 1 - max(seen)
    return out


def make_record(episode: Episode, question: Question, response: Response,
                scorers: list[Any], timings: dict[str, float],
                missing: list[str] | None = None, cost: Cost | None = None) -> Record:
    scores: dict[str, float] = {}
    details = {}
    refused = None
    status = "error" if response.error is not None else "ok"
    if status == "ok":
        prediction = response.text or ""
        refused = is_refusal(prediction)
        for scorer in rule_scorers_for(question, scorers):  # MemEye: letter or judge only
            s = scorer.score(question, prediction)
            if s is not None:
                scores[s.scorer] = s.value
                details[s.scorer] = s
    if missing is None:
        missing = missing_images(episode)
    return Record(
        question_id=question.question_id, episode_id=episode.episode_id,
        benchmark=episode.benchmark, status=status, ability=question.ability,
        subtype=question.subtype, answer_type=question.answer_type, labels=question.labels,
        question=question.text, gold=question.answer,
        prediction=response.text if status == "ok" else None,
        response=response, scores=scores, score_details=details, refused=refused,
        evidence=question.evidence,
        input_tokens=response.meta.get("input_tokens"),
        dropped_sessions=response.meta.get("dropped_sessions", 0),
        missing_images=missing, timings=timings, cost=cost,
        meta=_record_meta(episode, question, response))


def _session_positions(episode: Episode, question: Question,
                       response: Response) -> dict[str, int]:
    """Where the sessions of the evidence and the ranking lie in the episode (0 = first):
    what the clue diagnostics order clues by and the recency probe re-ranks by (design 0030)."""
    if not response.retrieved:  # nothing ranked: nothing to diagnose
        return {}
    named = {p.session_id for p in question.evidence}
    named |= {it.pointer.session_id for it in response.retrieved}
    return {s.session_id: i for i, s in enumerate(episode.sessions) if s.session_id in named}


def _record_meta(episode: Episode, question: Question,
                 response: Response | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if response is not None and (positions := _session_positions(episode, question, response)):
        meta["session_positions"] = positions
    if question.old_answers:
        meta["old_answers"] = question.old_answers
    if question.options:
        meta["options"] = question.options  # extract-then-match rescoring needs them
    if isinstance(question.meta.get("game"), dict):
        meta["game"] = question.meta["game"]  # game scoring and the game report (design 0032)
    for key in ("base_question_id", "rotation", "rotations", "xy_cells", "measure"):  # 0036
        if key in question.meta:
            meta[key] = question.meta[key]
    depth = evidence_depth(episode, question)
    if depth is not None:
        meta["evidence_depth"] = depth
    meta.update(timeline_position(episode, question))
    return meta


def _history_cut(protocol: str, episode: Episode, q: Question) -> int:
    """How many of the episode's sessions are ingested before ``q`` is asked."""
    n = len(episode.sessions)
    return n if q.asked_after is None or protocol == "offline" else min(n, q.asked_after + 1)


def _scan_status(run_dir: Path, hits: CacheHits | None = None,
                 reuse: PrefixReuse | None = None) -> dict[str, int] | None:
    """The status counts from one cheap pass over records.jsonl (records this run wrote
    need no re-validation); None when the file needs compacting (a torn or repeated line),
    which the full :func:`read_records` path handles as before."""
    from ..runfolder import RECORDS, iter_record_lines

    path = Path(run_dir) / RECORDS
    if not path.exists():
        return _status({})
    seen: set[Any] = set()
    ok = ingest_failed = 0
    for _, obj in iter_record_lines(path):
        if type(obj) is not dict:
            return None
        qid = obj.get("question_id")
        if qid in seen:
            return None
        seen.add(qid)
        ok += obj.get("status") == "ok"
        error = obj.get("response", {}).get("error") if obj.get("status") != "ok" else None
        ingest_failed += isinstance(error, dict) and error.get("kind") == INGEST_FAILED
        if hits is not None:
            hits.add_raw(obj)
        if reuse is not None:
            reuse.add_raw(obj)
    return _counts(len(seen), ok, ingest_failed)


def _status(records: dict[str, Record]) -> dict[str, int]:
    ok = sum(1 for r in records.values() if r.status == "ok")
    ingest_failed = sum(1 for r in records.values() if r.status != "ok" and r.response.error
                        is not None and r.response.error.kind == INGEST_FAILED)
    return _counts(len(records), ok, ingest_failed)


def _counts(records: int, ok: int, ingest_failed: int) -> dict[str, int]:
    """The manifest's ``status``; ``ingest_failed`` (errors: sessions a question needs
    failed to ingest, design 0042) only when there are some."""
    out = {"records": records, "ok": ok, "errors": records - ok}
    if ingest_failed:
        out["ingest_failed"] = ingest_failed
    return out

