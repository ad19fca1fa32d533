"""Shared builders for the rag tests: a tiny episode, a system made through the registry,
and a run of one episode against the scripted model."""

from __future__ import annotations

import asyncio
from typing import Any

from memgauge.models import ImagePart, TextPart
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    ImageRef,
    Question,
    Response,
    Session,
    Turn,
)
from memgauge.systems import SystemContext


def turn(tid: str, role: str, text: str, images: list[ImageRef] | None = None) -> Turn:
    return Turn(turn_id=tid, role=role, text=text, images=images or [])  # type: ignore[arg-type]


def question(text: str, qid: str = "q1", images: list[ImageRef] | None = None) -> Question:
    return Question(question_id=qid, text=text, answer="x", answer_type=AnswerType.FREE_TEXT,
                    ability=Ability.INFORMATION_EXTRACTION, images=images or [])


def episode(sessions: list[Session], questions: list[Question]) -> Episode:
    return Episode(episode_id="e1", sessions=sessions, questions=questions,
                   benchmark=BenchmarkInfo(name="t"))


def make(system: str = "rag", context_mode: str = "image",
         **options: Any) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel(fn=lambda m, q: "answer")
    ctx = SystemContext(model=model, context_mode=context_mode,
                        options={k: str(v) for k, v in options.items()})
    return lookup("system", system)(ctx)(), model


def run(made: Any, ep: Episode) -> list[Response]:
    async def go() -> list[Response]:
        await made.reset(ep)
        for s in ep.sessions:
            await made.ingest(s)
        return [await made.answer(q) for q in ep.questions]

    return asyncio.run(go())


def prompt_text(messages: list[Any]) -> str:
    return "\n".join(p.text for m in messages[1:-1] for p in m.parts if isinstance(p, TextPart))


def prompt_images(messages: list[Any]) -> list[ImageRef]:
    return [p.image for m in messages[1:-1] for p in m.parts if isinstance(p, ImagePart)]


def chosen(r: Response) -> list[tuple[str, str | None]]:
    return [(it.pointer.session_id, it.pointer.turn_id) for it in r.retrieved if it.chosen]
