"""The anchor workload as an Inspect (``inspect_ai``) task, for bench/inspect_side_by_side.py.

Each MemLens-format item becomes one sample: its sessions' turns as chat messages (a turn's
images before its text, as files Inspect reads and inlines itself) and the question last; the
model answers once (``generate()``) and ``includes()`` scores the reply. This is the plain way
to write the workload in Inspect: nothing is tuned for speed.

    MEMLENS_DATA=dataset_small.json MEMLENS_IMAGES=images \\
        inspect eval bench/inspect_memlens_task.py --model openai-api/stub/stub
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
)
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

SYSTEM = "You are a helpful assistant with a long memory of the conversations below."


def _turn(turn: dict[str, Any], image_dir: Path) -> ChatMessage:
    text = turn["content"]
    if turn["role"] == "assistant":
        return ChatMessageAssistant(content=text)
    images = [ContentImage(image=str(image_dir / im["file"]))
              for im in turn.get("images") or []]
    if not images:
        return ChatMessageUser(content=text)
    parts: list[Content] = [*images, ContentText(text=text)]
    return ChatMessageUser(content=parts)


def _sample(item: dict[str, Any], image_dir: Path) -> Sample:
    messages: list[ChatMessage] = [ChatMessageSystem(content=SYSTEM)]
    for date, session in zip(item["haystack_dates"], item["haystack_sessions"], strict=True):
        messages.append(ChatMessageUser(content=f"[Session on {date}]"))
        messages.extend(_turn(t, image_dir) for t in session)
    messages.append(ChatMessageUser(
        content=f"(Today is {item['question_date']}.) {item['question']}"))
    return Sample(id=item["question_id"], input=messages, target=str(item["answer"]))


@task
def memlens_anchor() -> Task:
    data = Path(os.environ["MEMLENS_DATA"])
    image_dir = Path(os.environ["MEMLENS_IMAGES"])
    items = json.loads(data.read_text())
    return Task(dataset=[_sample(it, image_dir) for it in items], solver=generate(),
                scorer=includes())
