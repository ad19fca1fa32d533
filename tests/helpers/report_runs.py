"""Hand-made run folders for the cross-run report tests, with numbers worked out by hand.

Three runs of two systems (system s1 at tiers 8k and 32k, system s2 at 8k), scorer ``rule``:

- A (s1, 8k): q1 IE 1, q2 IE 1, q3 IE 0, q4 TR 1, q6 TR 0 (refused), q5 IE error.
  micro 3/5, macro (2/3 + 1/2) / 2 = 7/12, coverage 4/5, per-answer 3/4.
- B (s1, 32k): q1 IE 1, q2 IE 0, q3 IE 0, q4 TR 0, q8 IE unscored. micro 1/4, macro 1/6.
- C (s2, 8k): q1 IE 1, q2 IE 1, q3 IE 1, q4 TR 1, q7 refusal 1. micro 1, macro 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memgauge.analysis import RunData
from memgauge.schema import (
    BenchmarkInfo,
    ErrorInfo,
    EvidenceRef,
    Labels,
    Record,
    Response,
    RetrievedItem,
)

IE, TR, AR = "information_extraction", "temporal_reasoning", "answer_refusal"


def rec(qid: str, score: float | None, *, ability: str = IE, episode: str = "e1",
        status: str = "ok", depth: float | None = None, x: str | None = None,
        y: str | None = None, prediction: str = "Paris", gold: str = "Paris",
        answer_type: str = "free_text", refused: bool | None = False,
        question: str = "Where?", retrieved: tuple[str, ...] = (),
        evidence: tuple[str, ...] = (), tier: str | None = None) -> Record:
    error = ErrorInfo(kind="timeout", message="slow <server>") if status == "error" else None
    return Record(
        question_id=qid, episode_id=episode, benchmark=BenchmarkInfo(name="t", tier=tier),
        status=status, ability=ability, answer_type=answer_type, labels=Labels(x=x, y=y),
        question=question, gold=gold, prediction=None if error else prediction,
        response=Response(text=None if error else prediction, error=error,
                          retrieved=[RetrievedItem(pointer=EvidenceRef(session_id=s))
                                     for s in retrieved]),
        scores={} if score is None or error else {"rule": score},
        evidence=[EvidenceRef(session_id=s) for s in evidence],
        refused=None if error else refused,
        meta={} if depth is None else {"evidence_depth": depth},
    )


def identity(system: str, tier: str) -> dict[str, Any]:
    return {"config": {"identity": {"system": system, "model": "m", "context_mode": "image",
                                    "tier": tier, "bench": "t", "system_options": {}}}}


def records_a() -> list[Record]:
    return [
        rec("q1", 1.0, depth=0.05, x="X1", y="Y1", retrieved=("s1", "s2"), evidence=("s1",)),
        rec("q2", 1.0, depth=0.1, x="X1", y="Y1"),
        rec("q3", 0.0, episode="e2", depth=0.15, x="X1", y="Y1", prediction="Lyon"),
        rec("q4", 1.0, ability=TR, episode="e3", depth=0.95, x="X2", y="Y3"),
        rec("q6", 0.0, ability=TR, episode="e3", x="X3", prediction="I don't know",
            refused=True),
        rec("q5", None, episode="e4", status="error", depth=0.1),
    ]


def records_b() -> list[Record]:
    return [rec("q1", 1.0, depth=0.5), rec("q2", 0.0, prediction="Rome"),
            rec("q3", 0.0, episode="e2", prediction="Oslo"),
            rec("q4", 0.0, ability=TR, episode="e3", prediction="Monday"),
            rec("q8", None, episode="e5")]


def records_c() -> list[Record]:
    return [rec("q1", 1.0), rec("q2", 1.0), rec("q3", 1.0, episode="e2"),
            rec("q4", 1.0, ability=TR, episode="e3"),
            rec("q7", 1.0, ability=AR, answer_type="refusal", gold="(refuse)",
                prediction="I don't know", refused=True, episode="e6")]


def three_runs() -> list[RunData]:
    return [RunData("A", identity("s1", "8k"), records_a()),
            RunData("B", identity("s1", "32k"), records_b()),
            RunData("C", identity("s2", "8k"), records_c())]


def write_run(path: Path, manifest: dict[str, Any], records: list[Record]) -> str:
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps(manifest))
    (path / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return str(path)


def write_three(root: Path) -> list[str]:
    return [write_run(root / run.label, run.manifest, run.records) for run in three_runs()]
