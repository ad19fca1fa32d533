"""A question's own images (MemEye's question_image) follow the context mode: pixels only in
image mode, the caption in caption mode, nothing in text mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from memgauge.models import ImagePart, TextPart
from memgauge.prompt import build_prompt
from memgauge.schema import Ability, AnswerType, ImageRef, Question

PNG = Path(__file__).resolve().parents[1] / "fixtures" / "memeye" / "image" / "Demo_Task"


def question() -> Question:
    image = ImageRef(source="q.png", path=str(PNG / "q_plant.png"), width=64, height=48,
                     captions={"generic": "A green plant in a brown pot."})
    return Question(question_id="t:q:open", text="Is this the plant I showed you?",
                    answer="Yes", answer_type=AnswerType.FREE_TEXT,
                    ability=Ability.MULTI_SESSION_REASONING, images=[image])


@pytest.mark.parametrize(("mode", "images", "caption"), [
    ("image", 1, False), ("no-context", 1, False), ("caption", 0, True), ("text", 0, False)])
def test_question_images_follow_the_mode(mode, images, caption):
    final = build_prompt([], question(), mode=mode).messages[-1]
    assert sum(isinstance(p, ImagePart) for p in final.parts) == images
    texts = " ".join(p.text for p in final.parts if isinstance(p, TextPart))
    assert ("A green plant in a brown pot." in texts) is caption
    assert "Is this the plant I showed you?" in texts
