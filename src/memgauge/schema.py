"""The one data model every part of memgauge speaks.

Loaders convert outside formats into these types at the boundary; nothing inside the
package reads a source format's raw dict. Hot, numerous objects (turns, images) are built by
loaders with ``model_construct`` after their own field checks, so that a 256K-token tier
streams quickly; everything else is validated normally.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._secrets import redact_urls_in_text


class Ability(StrEnum):
    """Named memory abilities across the supported benchmarks."""

    # MemLens / LongMemEval family
    INFORMATION_EXTRACTION = "information_extraction"
    MULTI_SESSION_REASONING = "multi_session_reasoning"
    TEMPORAL_REASONING = "temporal_reasoning"
    KNOWLEDGE_UPDATE = "knowledge_update"
    ANSWER_REFUSAL = "answer_refusal"
    # LoCoMo / EMemBench family
    SINGLE_HOP = "single_hop"
    MULTI_HOP = "multi_hop"
    OPEN_DOMAIN = "open_domain"
    ADVERSARIAL = "adversarial"
    INDUCTION = "induction"
    SPATIAL = "spatial"
    LOGICAL = "logical"
    # Game trajectories (issue 15)
    TEMPORAL = "temporal"


class AnswerType(StrEnum):
    """Closed set of answer formats; each has a rule scorer."""

    FREE_TEXT = "free_text"
    INTEGER = "integer"
    NUMBER = "number"
    CURRENCY = "currency"
    DATE = "date"
    CHOICE = "choice"  # a lettered option such as A/B
    YES_NO = "yes_no"
    ORDER = "order"  # an ordering such as (5)(8)(1)
    MCQ = "mcq"
    REFUSAL = "refusal"  # the correct answer is to refuse
    # Game answers (issue 15)
    STRING = "string"  # a name compared canonically, any alternative accepted
    ACTION = "action"  # a game action such as move_left
    DIRECTION = "direction"  # left/right/up/down, compass or text-game directions
    LIST = "list"  # an ordered sequence of items
    SET = "set"  # items (optionally counted) in any order
    PATH = "path"  # a sequence of moves such as "2 left, 3 up"


class Measure(StrEnum):
    """What alone scores a question, where its benchmark says so (``meta["measure"]``;
    scoring/_route.py): MemEye's MCQ rotations by their letter, its open questions by the
    judge."""

    LETTER = "letter"
    JUDGE = "judge"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ImageRef(_Model):
    """An image: where to read it, and (once read) its content hash."""

    source: str = Field(description="The entry as written in the source data")
    path: str | None = Field(default=None, description="Resolved absolute local path")
    url: str | None = None
    sha256: str | None = None
    width: int | None = None
    height: int | None = None
    captions: dict[str, str] = Field(default_factory=dict)  # generic/dense/ocr/gold
    missing: bool = False  # True when the image could not be resolved (allow-missing mode)
    meta: dict[str, Any] = Field(default_factory=dict)


class Turn(_Model):
    turn_id: str
    role: Literal["user", "assistant"]
    text: str = ""  # may hold "<image>" placeholders
    images: list[ImageRef] = Field(default_factory=list)
    speaker: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Session(_Model):
    session_id: str
    date: str | None = None  # original timestamp text, shown to models verbatim
    turns: list[Turn] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class EvidenceRef(_Model):
    """Points at evidence: a session, optionally a turn, optionally an image in that turn."""

    session_id: str
    turn_id: str | None = None
    image_index: int | None = None


class Labels(_Model):
    x: Literal["X1", "X2", "X3", "X4"] | None = None  # visual granularity (MemEye)
    y: Literal["Y1", "Y2", "Y3"] | None = None  # reasoning depth (MemEye)
    # What the answer needs: image facts only (essential), image and text facts (mixed; the
    # older name "supportive" means the same), or text only. Generated benchmarks compute it
    # from the facts the answer is computed from; other loaders infer it from whether the
    # evidence turns carry images (``image_dependency_inferred``).
    image_dependency: Literal["essential", "mixed", "supportive", "text"] | None = None
    image_dependency_inferred: bool = False


class Question(_Model):
    question_id: str
    text: str
    answer: str | list[str]
    answer_type: AnswerType
    ability: Ability
    subtype: str | None = None
    labels: Labels = Field(default_factory=Labels)
    evidence: list[EvidenceRef] = Field(default_factory=list)
    old_answers: list[str] = Field(default_factory=list)
    options: list[str] = Field(default_factory=list)
    question_date: str | None = None
    images: list[ImageRef] = Field(default_factory=list)
    asked_after: int | None = None  # session index after which it may be asked; None = last
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def answers(self) -> list[str]:
        return list(self.answer) if isinstance(self.answer, list) else [self.answer]


class BenchmarkInfo(_Model):
    name: str
    version: str | None = None
    tier: str | None = None
    split: str | None = None


class Episode(_Model):
    """One history shared by one or more questions."""

    episode_id: str
    sessions: list[Session]
    questions: list[Question]
    benchmark: BenchmarkInfo
    meta: dict[str, Any] = Field(default_factory=dict)


class Usage(_Model):
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cached_tokens: int | None = None  # prompt tokens served from the server's prefix cache


# The error kind of a question whose needed sessions failed to ingest (design 0042).
INGEST_FAILED = "ingest_failed"


class ErrorInfo(_Model):
    """A failure with its cause. Errors are reported apart, never scored as wrong."""

    kind: str  # e.g. "http_429", "timeout", "context_overflow", "bad_input", "missing_image"
    message: str
    retryable: bool = False
    attempts: int = 1

    @field_validator("message")
    @classmethod
    def _no_secret(cls, message: str) -> str:
        # every error reaches records.jsonl and the reports: no URL's password or token

        return redact_urls_in_text(message)


class RetrievedItem(_Model):
    """One retrieved candidate. ``chosen``: the system used it (what evidence recall counts);
    False for the rest of the ranking it chose from, recorded after the chosen ones."""

    pointer: EvidenceRef
    score: float | None = None
    chosen: bool = True


class Response(_Model):
    text: str | None = None
    retrieved: list[RetrievedItem] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float | None = None
    cached: bool = False
    error: ErrorInfo | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Score(_Model):
    value: float = Field(ge=0.0, le=1.0)
    scorer: str
    version: str
    method: Literal["rule", "judge"] = "rule"
    details: dict[str, Any] = Field(default_factory=dict)


class Cost(_Model):
    """What one question cost its system, as the runner measured it (design 0027).

    Ingest figures are this question's share of what was ingested for it: the sessions read
    since the previous answer point of the episode (the reset included in the first), split
    evenly among the ``ingest_shared_by`` questions asked at this point, so the shares of an
    episode sum to its total. Token and call shares are whole numbers (the remainder goes to
    the first questions of the batch). ``None``: the system reported nothing of that kind.
    """

    answer_s: float | None = None  # the system's answer call alone, without queueing
    ingest_s: float = 0.0
    ingest_sessions: int = 0  # sessions ingested for this answer point (shared, not split)
    ingest_shared_by: int = 1
    ingest_calls: int | None = None
    ingest_cached: int | None = None
    ingest_prompt_tokens: int | None = None
    ingest_completion_tokens: int | None = None
    memory_items: int | None = None  # the memory's size when this question was answered
    memory_bytes: int | None = None


# A run folder's manifest ``run_state`` (design 0040): written ``running`` before the first
# request, then ``finished`` when an invocation went through to its end, or ``stopped`` when
# it ended early (an interrupt, a failure, a budget). A manifest without one predates it.
RUN_RUNNING = "running"
RUN_FINISHED = "finished"
RUN_STOPPED = "stopped"


class Record(_Model):
    """One line of records.jsonl: one (run, episode, question)."""

    question_id: str
    episode_id: str
    benchmark: BenchmarkInfo
    status: Literal["ok", "error"]
    ability: Ability
    subtype: str | None = None
    answer_type: AnswerType
    labels: Labels = Field(default_factory=Labels)
    question: str
    gold: str | list[str]
    prediction: str | None = None
    response: Response
    scores: dict[str, float] = Field(default_factory=dict)  # scorer name -> value
    score_details: dict[str, Score] = Field(default_factory=dict)
    evidence: list[EvidenceRef] = Field(default_factory=list)  # the question's gold pointers
    refused: bool | None = None  # prediction is a refusal (for coverage)
    input_tokens: int | None = None  # our own cross-modal count of the prompt
    dropped_sessions: int = 0  # sessions removed by the over-length policy
    missing_images: list[str] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    cost: Cost | None = None  # absent in records written before issue 13: unknown
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("scores")
    @classmethod
    def _scores_in_range(cls, scores: dict[str, float]) -> dict[str, float]:
        # Every score is a value in [0, 1]: a report that averages 5.0 shows 500 %.
        for name, value in scores.items():
            if not (-1e-9 <= value <= 1 + 1e-9):  # NaN fails too
                raise ValueError(f"score {name!r} is {value}, outside [0, 1]")
        return scores

    def judge_errors(self) -> dict[str, dict[str, str]]:
        """Each judge's failure on this record, by score name: ``meta.judge_errors`` keeps
        every judge's (design 0040); records written before it carry one
        ``meta.judge_error``, the last judge's, which is read too: under its ``scorer``, or
        under ``""`` when it names none (any judge whose score the record lacks)."""
        out: dict[str, dict[str, str]] = {}
        legacy = self.meta.get("judge_error")
        if legacy is not None:
            info = legacy if isinstance(legacy, dict) else {"message": str(legacy)}
            out[str(info.get("scorer") or "")] = _judge_failure(info)
        kept = self.meta.get("judge_errors")
        if isinstance(kept, dict):
            out.update({str(name): _judge_failure(info if isinstance(info, dict)
                                                  else {"message": str(info)})
                        for name, info in kept.items()})
        return out

    def evidence_recall(self) -> float | None:
        """Share of the question's evidence sessions among what the system retrieved and
        chose (not the rest of its ranking); None when it chose nothing or the question has
        no evidence pointers."""
        gold = {p.session_id for p in self.evidence}
        if not gold or not self.response.retrieved:
            return None
        got = {r.pointer.session_id for r in self.response.retrieved if r.chosen}
        if not got:
            return None
        return len(gold & got) / len(gold)


def _judge_failure(info: dict[str, Any]) -> dict[str, str]:
    """A judge failure as ``{"kind", "message"}`` strings, whatever an older writer kept."""
    return {"kind": str(info.get("kind", "unknown")), "message": str(info.get("message", ""))}
