"""What the built-in memory agents share (systems/_memory.py): JSON read from untidy replies,
labelled session rendering, the ingest ledger, failures, and the retrieved list. The
helpers at the top serve the other test_agents_* files."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from memgauge.errors import ConfigError
from memgauge.models import ImagePart, Message, ModelError, ModelOutput, TextPart
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    ImageRef,
    Question,
    Response,
    Session,
    Turn,
    Usage,
)
from memgauge.systems import SystemContext
from memgauge.systems._memory import (
    RANKING_DEPTH,
    json_replies,
    render_session,
    retrieved_list,
)

# --- helpers for the agent tests ---


def text_of(messages: list[Message]) -> str:
    return "\n".join(p.text for m in messages for p in m.parts if isinstance(p, TextPart))


def system_text(messages: list[Message]) -> str:
    return text_of([m for m in messages if m.role == "system"])


def session(sid: str, date: str, *texts: str, images: list[ImageRef] | None = None) -> Session:
    turns = [Turn(turn_id=f"{sid}:{i}", role="user" if i % 2 else "assistant", text=t)
             for i, t in enumerate(texts, 1)]
    if images:
        turns[0] = turns[0].model_copy(update={"images": images})
    return Session(session_id=sid, date=date, turns=turns)


def question(text: str, qid: str = "q1", evidence: tuple[str, ...] = ()) -> Question:
    """A question; ``evidence`` names the sessions it needs (none: any before it)."""
    return Question(question_id=qid, text=text, answer="x", answer_type=AnswerType.FREE_TEXT,
                    ability=Ability.INFORMATION_EXTRACTION, question_date="2024/12/01",
                    evidence=[EvidenceRef(session_id=s) for s in evidence])


def run_agent(name: str, fn: Callable[[list[Message], str | None], str],
              sessions: list[Session], questions: list[Question], *,
              model: Any = None, **ctx_args: Any) -> tuple[list[Response], Any, Any]:
    """Reset, ingest every session, answer every question; returns the responses, the
    scripted model (its calls) and the system."""
    model = model or ScriptedModel(fn=fn)
    options = {k: str(v) for k, v in ctx_args.pop("options", {}).items()}
    ctx = SystemContext(model=model, options=options, **ctx_args)
    agent = lookup("system", name)(ctx)()
    episode = Episode(episode_id="e1", sessions=sessions, questions=questions,
                      benchmark=BenchmarkInfo(name="t"))

    async def go() -> list[Response]:
        await agent.reset(episode)
        for s in sessions:
            await agent.ingest(s)
        return [await agent.answer(q) for q in questions]

    return asyncio.run(go()), model, agent


def answer_prompts(model: ScriptedModel) -> list[str]:
    """The texts of the answer calls (those naming a question)."""
    return [text_of(m) for m, qid in model.calls if qid is not None]


class UsageModel(ScriptedModel):
    """A scripted model that reports usage, and serves repeated messages as cached (as the
    response cache would)."""

    def __init__(self, fn: Callable[[list[Message], str | None], str]) -> None:
        super().__init__(fn=fn)
        self.seen: set[str] = set()

    async def generate(self, messages, config, *, question_id=None):  # type: ignore[override]
        out = await super().generate(messages, config, question_id=question_id)
        key = repr([(m.role, [getattr(p, "text", "img") for p in m.parts]) for m in messages])
        cached = key in self.seen
        self.seen.add(key)
        return ModelOutput(text=out.text, usage=Usage(input_tokens=10, output_tokens=3),
                           cached=cached)


# --- the shared pieces themselves ---


def test_json_is_read_from_fences_prose_and_nested_objects() -> None:
    assert json_replies('```json\n{"facts": [{"fact": "a"}]}\n```')[0] == {"facts": [{"fact": "a"}]}
    prose = 'Sure! Here you go: {"facts": [{"fact": "b", "turn": "T1"}]} Hope it helps.'
    assert {"facts": [{"fact": "b", "turn": "T1"}]} in json_replies(prose)
    assert json_replies("<think>{\"x\": 1}</think>{\"summary\": \"s\"}")[0] == {"summary": "s"}
    assert json_replies("no json here") == []


def test_render_labels_turns_and_images_and_maps_them_to_pointers() -> None:
    img = ImageRef(source="r.png", path="/nowhere/r.png", captions={"gold": "a receipt, $12"})
    s = session("s1", "2024/01/01", "look <image> here", "nice", images=[img])
    shown = render_session(s, images="caption")
    assert "[T1] user: look [I1: a receipt, $12] here" in shown.text
    assert "[T2] assistant: nice" in shown.text
    assert shown.labels["T2"] == EvidenceRef(session_id="s1", turn_id="s1:2")
    assert shown.labels["I1"] == EvidenceRef(session_id="s1", turn_id="s1:1", image_index=0)
    as_image = render_session(s, images="image", prefix="S1.")
    assert any(isinstance(p, ImagePart) and p.image is img for p in as_image.parts)
    assert "[S1.I1]" in as_image.text and "receipt" not in as_image.text


def test_retrieved_list_puts_chosen_first_then_the_ranking_to_depth_each_pointer_once() -> None:
    refs = [EvidenceRef(session_id=f"s{i}") for i in range(80)]
    ranking = [(r, float(80 - i)) for i, r in enumerate(refs)]
    out = retrieved_list(ranking[:3], ranking)
    assert [it.pointer.session_id for it in out[:4]] == ["s0", "s1", "s2", "s3"]
    assert len(out) == RANKING_DEPTH
    assert [it.chosen for it in out[:4]] == [True, True, True, False]  # recall counts chosen
    assert len({it.pointer.session_id for it in out}) == len(out)
    few = retrieved_list(ranking[:1], ranking[:5])
    assert len(few) == 5  # all, when fewer than the depth


def test_unknown_option_and_bad_values_are_config_errors() -> None:
    ctx = SystemContext(model=ScriptedModel(), options={"topk": "3"})
    with pytest.raises(ConfigError, match="topk"):
        lookup("system", "fact-memory")(ctx)
    for name, bad in (("summary-memory", {"profile": "maybe"}),
                      ("recurrent-memory", {"variant": "sideways"}),
                      ("state-memory", {"top_k": "0"})):
        with pytest.raises(ConfigError):
            lookup("system", name)(SystemContext(model=ScriptedModel(), options=bad))


@pytest.mark.parametrize("name", ["fact-memory", "state-memory", "summary-memory",
                                  "recurrent-memory"])
def test_a_model_error_at_ingest_makes_the_question_an_error_naming_session_and_cause(
        name: str) -> None:
    def fn(messages: list[Message], qid: str | None) -> str:
        raise ModelError("http_500", "server fell over", retryable=True, attempts=3)

    options = {"variant": "blind"} if name == "recurrent-memory" else {}
    [r], model, _ = run_agent(name, fn, [session("s1", "d1", "hello"), session("s2", "d2", "x")],
                              [question("what?")], options=options)
    assert r.error is not None and r.error.kind == "system_error"
    assert "s1" in r.error.message and "http_500" in r.error.message
    assert r.error.retryable and r.error.attempts == 3
    assert r.meta["ingest_failures"][0]["kind"] == "http_500"
    assert all(qid is None for _, qid in model.calls)  # no answer from a partial memory
    assert len(model.calls) == 1  # later sessions are not sent to a failing model


@pytest.mark.parametrize("name", ["fact-memory", "state-memory", "summary-memory"])
def test_ingest_calls_are_counted_with_cache_hits_and_asked_without_question_id(
        name: str) -> None:
    def fn(messages: list[Message], qid: str | None) -> str:
        return '{"facts": [], "states": [], "summary": "s", "profile": "p"}' if qid is None \
            else "answer"

    model = UsageModel(fn)
    options = {"profile": "no"} if name == "summary-memory" else {}
    # a generated benchmark dates a shared haystack session differently in each episode
    [r1], _, _ = run_agent(name, fn, [session("hay", "d0", "the same haystack session")],
                           [question("q?")], model=model, options=options)
    [r2], _, _ = run_agent(name, fn, [session("hay", "d9", "the same haystack session")],
                           [question("q?")], model=model, options=options)
    ingest1, ingest2 = r1.meta["ingest"], r2.meta["ingest"]
    assert set(ingest1) == {"calls", "cached", "prompt_tokens", "completion_tokens"}
    assert ingest1["calls"] >= 1 and ingest1["cached"] == 0
    assert ingest1["prompt_tokens"] == 10 * ingest1["calls"]
    assert ingest1["completion_tokens"] == 3 * ingest1["calls"]
    # the second episode's reading of the same session is served from the cache
    assert ingest2["calls"] == ingest1["calls"] and ingest2["cached"] == ingest2["calls"]
    assert set(r1.meta["memory"]) == {"items", "bytes"}


class _ConfigKeeping(ScriptedModel):
    """A scripted model that also keeps each call's GenerateConfig."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.configs: list[Any] = []

    async def generate(self, messages: Any, config: Any, *, question_id: Any = None) -> Any:
        self.configs.append((config, question_id))
        return await super().generate(messages, config, question_id=question_id)


@pytest.mark.parametrize("name, key", [("fact-memory", "facts"), ("state-memory", "states"),
                                       ("summary-memory", "summary"),
                                       ("recurrent-memory", "memory")])
def test_ingest_asks_for_its_json_under_a_schema_that_fits_the_reply(name: str, key: str) -> None:
    """Issue 29: SmolLM2 wrote no usable JSON for any session; held to a schema (structured
    output) it cannot write anything else, and the schema's bounds keep the JSON inside the
    reply's tokens (at least INGEST_MIN_TOKENS, whatever the answers' cap)."""
    from memgauge.models import GenerateConfig
    from memgauge.systems._memory import CHARS_PER_TOKEN, INGEST_MIN_TOKENS, JSON_FRAME_TOKENS

    every = '{"facts": [], "states": [], "summary": "s", "profile": "p", "memory": "m"}'
    model = _ConfigKeeping(fn=lambda m, q: every)
    options = {"variant": "blind", "memory_tokens": 64} if name == "recurrent-memory" else {}
    run_agent(name, model.fn, [session("s1", "d1", "Rex is my dog.")], [question("dog?")],
              model=model, options=options, generate=GenerateConfig(max_tokens=48))
    ingest = [c for c, qid in model.configs if qid is None]
    assert ingest and all(c.json_schema is not None for c in ingest)
    schema = ingest[0].json_schema
    assert schema["required"] == [key] and schema["additionalProperties"] is False
    budget = ingest[0].max_tokens
    assert budget >= (96 if name == "recurrent-memory" else INGEST_MIN_TOKENS)
    field = schema["properties"][key]
    if field["type"] == "string":
        assert field["maxLength"] <= (budget - JSON_FRAME_TOKENS) * CHARS_PER_TOKEN
    else:
        assert field["maxItems"] >= 1 and field["items"]["additionalProperties"] is False
    answers = [c for c, qid in model.configs if qid is not None]
    assert answers and all(c.json_schema is None and c.max_tokens == 48 for c in answers)
