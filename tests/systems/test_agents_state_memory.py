"""state-memory: entity/attribute/value records with validity intervals and source images;
the reader sees the latest valid state, the history, and (image mode) the source images."""

from __future__ import annotations

import json

from test_agents_common import answer_prompts, question, run_agent, session, system_text, text_of

from memgauge.models import ImagePart, Message
from memgauge.schema import ImageRef

BIKE_RED = ImageRef(source="red.png", path="/nowhere/red.png", captions={"gold": "a red bike"})
BIKE_BLUE = ImageRef(source="blue.png", path="/nowhere/blue.png", captions={"gold": "a blue bike"})


def scripted(messages: list[Message], qid: str | None) -> str:
    if qid is not None:
        return "blue"
    assert "record the state" in system_text(messages)
    body = text_of(messages[1:])
    if "My bike" in body:
        states = [{"entity": "bike", "attribute": "colour", "value": "red", "turn": "T1",
                   "images": ["I1"]},
                  {"entity": "Anna", "attribute": "city", "value": "Oslo", "turn": "T2"}]
    elif "still in Oslo" in body:  # the same city again: confirmation, not a change
        states = [{"entity": "anna", "attribute": "City", "value": "oslo", "turn": "T1"}]
    else:
        states = [{"entity": "Bike", "attribute": "colour", "value": "blue", "turn": "T1",
                   "images": ["I1"]}]
    return json.dumps({"states": states})


def _sessions():
    return [session("s1", "2024/01/01", "My bike <image>", "Anna lives in Oslo.",
                    images=[BIKE_RED]),
            session("s2", "2024/02/01", "Anna still in Oslo."),
            session("s3", "2024/03/01", "Painted it <image>", images=[BIKE_BLUE])]


def test_a_changed_value_closes_the_old_interval_and_the_reader_sees_state_and_history() -> None:
    [r], model, agent = run_agent("state-memory", scripted, _sessions(),
                                  [question("What colour is the bike now?")],
                                  context_mode="caption")
    bike = agent.slots[("bike", "colour")]
    assert [(v.value, v.since, v.until) for v in bike.history] == [("red", 0, 2), ("blue", 2, None)]
    assert bike.history[0].until_date == "2024/03/01"
    anna = agent.slots[("anna", "city")]
    assert len(anna.history) == 1 and len(anna.current.sources) == 2  # confirmed in s2
    [prompt] = answer_prompts(model)
    assert "bike / colour: blue (valid 2024/03/01 to now)" in prompt
    assert "history: red (2024/01/01 to 2024/03/01); blue (2024/03/01 to now)" in prompt
    assert r.retrieved[0].pointer.session_id == "s3"  # the latest value's source first
    assert {(it.pointer.session_id, it.pointer.image_index) for it in r.retrieved} >= {
        ("s3", 0), ("s1", 0)}
    assert agent.modality == "caption" and r.meta["n_images"] == 0


def test_image_mode_sends_session_images_at_ingest_and_source_images_to_the_reader() -> None:
    [r], model, agent = run_agent("state-memory", scripted, _sessions(),
                                  [question("What colour is the bike now?")],
                                  context_mode="image")
    assert agent.modality == "image"
    first_ingest = model.calls[0][0]
    assert [p.image for m in first_ingest for p in m.parts if isinstance(p, ImagePart)] == [
        BIKE_RED]
    answer_call = next(m for m, qid in model.calls if qid is not None)
    sent = [p.image for m in answer_call for p in m.parts if isinstance(p, ImagePart)]
    assert sent == [BIKE_BLUE, BIKE_RED]  # latest value's image first
    assert "blue (valid 2024/03/01 to now) [source image 1]" in text_of(answer_call)
    assert r.meta["n_images"] == 2


def test_max_images_caps_what_the_reader_is_sent() -> None:
    [r], _, _ = run_agent("state-memory", scripted, _sessions(), [question("bike colour?")],
                          context_mode="image", options={"max_images": 1})
    assert r.meta["n_images"] == 1


def test_states_without_entity_attribute_or_value_are_skipped() -> None:
    def fn(messages: list[Message], qid: str | None) -> str:
        if qid is not None:
            return "?"
        return json.dumps({"states": [{"entity": "x", "value": "1"}, "junk",
                                      {"entity": "car", "attribute": "seats", "value": 4}]})

    _, _, agent = run_agent("state-memory", fn, [session("s1", "d", "hi")], [question("q")],
                            context_mode="text")
    assert list(agent.slots) == [("car", "seats")]
    assert agent.slots[("car", "seats")].current.value == "4"
