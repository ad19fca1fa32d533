"""The two-session history and question the memory-library adapter tests share (Mem0, A-MEM,
LangMem): a fact in text, a move with an image whose gold caption is the only description."""

from __future__ import annotations

from memgauge.schema import Ability, AnswerType, ImageRef, Question, Session, Turn


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
