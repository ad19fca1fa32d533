"""RAG counts an image's tokens at the size it is sent (after --image-max-side), as the
full-context system does (docs/design/0003): its length limits hold for large images."""

from __future__ import annotations

import asyncio

from memgauge.media import ImagePolicy
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    ImageRef,
    Question,
    Session,
    Turn,
)
from memgauge.systems import SystemContext
from memgauge.tokens import TokenCounter


def _episode() -> Episode:
    big = ImageRef(source="big.png", path="/nowhere/big.png", width=4000, height=3000)
    sessions = [Session(session_id="s1", date="2024/01/01", turns=[
        Turn(turn_id="t1", role="user", text="Here is the poster of the concert.", images=[big]),
        Turn(turn_id="t2", role="assistant", text="Looks great.")])]
    q = Question(question_id="q1", text="Which band was on the concert poster?", answer="x",
                 answer_type=AnswerType.FREE_TEXT, ability=Ability.INFORMATION_EXTRACTION)
    return Episode(episode_id="e1", sessions=sessions, questions=[q],
                   benchmark=BenchmarkInfo(name="t"))


def _tokens(system: str, max_side: int | None, **options: str) -> int:
    ctx = SystemContext(model=ScriptedModel(fn=lambda m, q: "x"), count_tokens=True,
                        counter=TokenCounter(image_formula="qwen-patches"),
                        image_policy=ImagePolicy(max_side=max_side),
                        options=dict(options))
    made = lookup("system", system)(ctx)()
    ep = _episode()

    async def go() -> int:
        await made.reset(ep)
        await made.ingest(ep.sessions[0])
        response = await made.answer(ep.questions[0])
        return response.meta["input_tokens"]

    return asyncio.run(go())


def test_rag_and_full_context_count_the_same_prompt_alike() -> None:
    full = _tokens("full-context", 800)
    rag = _tokens("rag-bm25", 800, top_k="1")
    assert rag == full
    counter = TokenCounter(image_formula="qwen-patches")  # grows with the pixels
    at_sent, at_original = counter.image(800, 600), counter.image(4000, 3000)
    assert at_sent != at_original
    # the resize policy changes the count by exactly the image's difference
    assert _tokens("rag-bm25", None, top_k="1") - rag == at_original - at_sent
