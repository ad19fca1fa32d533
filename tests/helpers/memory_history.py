"""The two-session history and question the memory-library adapter tests share (Mem0, A-MEM,
LangMem, Letta): a fact in text, a move with an image whose gold caption is the only
description; and one episode played through a system (reset, ingest, answer)."""

from __future__ import annotations

from typing import Any

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


def sessions() -> list[Session]:
    bike = ImageRef(source="bike.png", captions={"gold": "a red bicycle"})
    return [
        Session(session_id="s1", date="2023/05/01", turns=[
            Turn(turn_id="s1:1", role="user", text="My dog is called Rex."),
            Turn(turn_id="s1:2", role="assistant", text="What a fine name.")]),
        Session(session_id="s2", date="2023/06/01", turns=[
            Turn(turn_id="s2:1", role="user", text="I moved to Lisbon in June. <image>",
                 images=[bike])]),
    ]


def question(text: str = "What is my dog called?") -> Question:
    return Question(question_id="q1", text=text, answer="Rex",
                    answer_type=AnswerType.FREE_TEXT, ability=Ability.INFORMATION_EXTRACTION,
                    question_date="2023/07/01")


async def play(system: Any, history: list[Session] | None = None,
               asked: Question | None = None, *, end_episode: bool = False) -> Response:
    """One episode "e1" through ``system``: reset, every session of ``history`` ingested (the
    shared one by default), ``asked`` answered (``question()`` by default), then, if asked
    for, the runner's optional ``end_episode()``."""
    history = sessions() if history is None else history
    asked = asked or question()
    await system.reset(Episode(episode_id="e1", sessions=history, questions=[asked],
                               benchmark=BenchmarkInfo(name="t")))
    for s in history:
        await system.ingest(s)
    answered = await system.answer(asked)
    if end_episode:
        await system.end_episode()
    return answered
