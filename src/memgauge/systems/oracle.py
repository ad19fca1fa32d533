"""Oracle systems for generated benchmarks: they read the gold evidence's facts.

``oracle`` sees the facts of the evidence images and turns and must answer 100 % (this
checks every answer key). ``oracle-text`` sees the same evidence with image content
withheld; on questions that need an image (essential or mixed) it should be unable to answer
(visual necessity).
Both go through the normal runner and report.
"""

from __future__ import annotations

from typing import Any

from ..registry import NEEDS_PROGRAM, baseline, system
from ..schema import Episode, ErrorInfo, EvidenceRef, Question, Response, Session
from ._base import MemorySystem, SystemContext, SystemFactory


def evidence_facts(sessions: dict[str, Session], question: Question, *, images: bool,
                   allowed: set[str] | None = None,
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(image facts, text facts) visible at the question's evidence pointers, in order.
    ``allowed`` restricts to those session ids (e.g. what a retriever found)."""
    image_facts: list[dict[str, Any]] = []
    text_facts: list[dict[str, Any]] = []
    seen_turns: set[str] = set()
    for p in question.evidence:
        if allowed is not None and p.session_id not in allowed:
            continue
        session = sessions.get(p.session_id)
        if session is None:
            continue
        turn = next((t for t in session.turns if t.turn_id == p.turn_id), None)
        if turn is None:
            continue
        if turn.turn_id not in seen_turns:
            seen_turns.add(turn.turn_id)
            text_facts += [f for f in turn.meta.get("facts", []) if not f.get("needle")]
        if images and p.image_index is not None and p.image_index < len(turn.images):
            im = turn.images[p.image_index]
            if "facts" in im.meta:
                image_facts.append({**im.meta["facts"], "_kind": im.meta.get("kind")})
    return image_facts, text_facts


class Oracle:
    modality = "image"

    def __init__(self, with_images: bool) -> None:
        self.with_images = with_images
        self.name = "oracle" if with_images else "oracle-text"
        self.modality = "image" if with_images else "text"
        self.sessions: dict[str, Session] = {}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "image_facts": self.with_images}

    async def reset(self, episode: Episode) -> None:
        self.sessions = {}

    async def ingest(self, session: Session) -> None:
        self.sessions[session.session_id] = session

    async def answer(self, question: Question) -> Response:
        # lazy: the synth package loads only when its questions are solved
        from ..benchmarks.synth import solve

        family = question.meta.get("family")
        if family is None:
            return Response(error=ErrorInfo(
                kind="not_applicable",
                message="oracles need a generated benchmark (questions carry their program)"))
        later = question.meta.get("evidence_later")
        if isinstance(later, dict):  # asked before its evidence exists (a timeline's refusal)
            return Response(text=self._solve_if_seen(question, later))
        images, texts = evidence_facts(self.sessions, question, images=self.with_images)
        answer = solve(question.meta.get("program", {}), family, images, texts)
        return Response(text=answer)  # given the gold evidence: it retrieves nothing itself


    def _solve_if_seen(self, question: Question, later: dict[str, Any]) -> str:
        """The answer from the later evidence if it has been ingested (so a system shown the
        future answers, and is scored wrong), else the refusal the question expects."""
        # lazy: the synth package loads only when its questions are solved
        from ..benchmarks.synth import solve

        pointers = [EvidenceRef.model_validate(p) for p in later.get("evidence", [])]
        source = question.model_copy(update={"evidence": pointers})
        images, texts = evidence_facts(self.sessions, source, images=self.with_images)
        return solve(later.get("program", {}), str(later.get("family")), images, texts)


@system("oracle", needs=lambda o: {NEEDS_PROGRAM}, kind=baseline)
def oracle(ctx: SystemContext) -> SystemFactory:
    """Answers from the gold evidence's facts, image content included (expects 100 %)."""
    ctx.typed_options("oracle", {})

    def make() -> MemorySystem:
        return Oracle(with_images=True)

    return make


@system("oracle-text", needs=lambda o: {NEEDS_PROGRAM}, kind=baseline)
def oracle_text(ctx: SystemContext) -> SystemFactory:
    """The oracle with image content withheld (visual-necessity check)."""
    ctx.typed_options("oracle-text", {})

    def make() -> MemorySystem:
        return Oracle(with_images=False)

    return make
