"""Prompt assembly follows the MemLens reference layout exactly."""

from __future__ import annotations

import pytest

from memgauge.errors import ContextOverflowError
from memgauge.models import ImagePart, TextPart
from memgauge.schema import Ability, AnswerType, ImageRef, Question, Session, Turn
from memgauge.systems import SYSTEM_PROMPT, build_prompt, clean_prediction
from memgauge.tokens import TokenCounter


def img(name: str, caption: str | None = None) -> ImageRef:
    return ImageRef(source=name, path=f"/x/{name}", width=100, height=50,
                    captions={"generic": caption} if caption else {})


def turn(role: str, text: str, *images: ImageRef, tid: str = "t") -> Turn:
    return Turn(turn_id=tid, role=role, text=text, images=list(images))


Q = Question(question_id="q", text="Which mug?", answer="red", answer_type=AnswerType.FREE_TEXT,
             ability=Ability.INFORMATION_EXTRACTION, question_date="2024/05/01")


def layout(messages):
    """A compact, comparable rendering: (role, [text or 'IMG:<source>', ...])."""
    return [(m.role, [p.text if isinstance(p, TextPart) else f"IMG:{p.image.source}"
                      for p in m.parts]) for m in messages]


def test_reference_layout_rules():
    s1 = Session(session_id="1", date="2024/01/01", turns=[
        turn("user", "a <image> b <image> c <image>", img("i1"), img("i2")),  # surplus placeholder
        turn("assistant", "ok <image>", img("i3"), img("i4")),  # surplus image after the text
        turn("user", "  no placeholder  ", img("i5")),  # images first, text stripped
        turn("user", "stray <image> token"),  # no images: placeholder removed
        turn("assistant", "   "),  # empty: skipped
    ])
    s2 = Session(session_id="2", date=None, turns=[turn("user", "<image>", img("i6"))])
    p = build_prompt([s1, s2], Q)
    assert layout(p.messages) == [
        ("system", [SYSTEM_PROMPT]),
        ("user", ["=== Session 1 (Date: 2024/01/01) ===\na ", "IMG:i1", " b ", "IMG:i2", " c "]),
        ("assistant", ["ok ", "IMG:i3", "IMG:i4"]),
        ("user", ["IMG:i5", "no placeholder"]),
        ("user", ["stray  token"]),
        ("user", ["=== Session 2 (Date: unknown) ===", "IMG:i6"]),
        ("user", [("Directly output the answer with no extra output.\nQuestion Date: 2024/05/01\n"
                   "Question: Which mug?\n")]),
    ]
    assert [i.source for i in p.images] == ["i1", "i2", "i3", "i4", "i5", "i6"]


def test_text_caption_nocontext_and_labels():
    s = [Session(session_id="1", date="d", turns=[
        turn("user", "see <image> here", img("i1", "a red mug"), img("i2"))])]
    assert layout(build_prompt(s, Q, mode="text").messages)[1] == (
        "user", ["=== Session 1 (Date: d) ===\nsee  here"])
    assert layout(build_prompt(s, Q, mode="caption").messages)[1] == (
        "user", ["=== Session 1 (Date: d) ===\nsee ", "[Image: a red mug]", " here", "[Image]"])
    assert layout(build_prompt(s, Q, label_images=True).messages)[1] == (
        "user", ["=== Session 1 (Date: d) ===\nsee ", "[Image 1]", "IMG:i1", " here",
                 "[Image 2]", "IMG:i2"])
    nc = build_prompt(s, Q, mode="no-context").messages
    assert [m.role for m in nc] == ["system", "user"]
    cot = build_prompt(s, Q, instruction="cot").messages[-1].parts[0].text
    assert cot.startswith("Think step by step before providing your answer.\n")


def test_missing_images_are_left_out_of_the_prompt():
    gone = img("gone")
    gone.missing = True
    s = [Session(session_id="1", date="d", turns=[turn("user", "x <image> y", gone, img("ok"))])]
    assert layout(build_prompt(s, Q).messages)[1][1] == [
        "=== Session 1 (Date: d) ===\nx ", "IMG:ok", " y"]


def test_counting_and_over_length_policies():
    counter = TokenCounter()
    sessions = [Session(session_id=str(i), date="d", turns=[
        turn("user", "word " * 100), turn("assistant", "fine", img("i"))]) for i in range(1, 4)]
    full = build_prompt(sessions, Q, counter=counter)
    one_session = build_prompt(sessions[:1], Q, counter=counter)
    none = build_prompt([], Q, counter=counter)
    per_session = one_session.tokens - none.tokens
    assert full.tokens == none.tokens + 3 * per_session
    with pytest.raises(ContextOverflowError):
        build_prompt(sessions, Q, counter=counter, max_tokens=full.tokens - 1)
    dropped = build_prompt(sessions, Q, counter=counter, max_tokens=full.tokens - 1,
                           overflow="drop-oldest")
    assert dropped.dropped_sessions == 1 and dropped.tokens == full.tokens - per_session
    assert dropped.messages[1].parts[0].text.startswith("=== Session 2 (Date: d) ===")
    assert sum(isinstance(p, ImagePart) for m in dropped.messages for p in m.parts) == 2


def test_clean_prediction():
    assert clean_prediction("<think>hmm</think> Red.") == "Red."
    assert clean_prediction("<|im_start|>Blue<|im_end|>") == "Blue"
    assert clean_prediction("[REASONING] x [ANSWER] 42", "reasoning") == "42"
    assert clean_prediction("plain") == "plain"
