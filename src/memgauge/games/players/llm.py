"""The LLM player: any ChatModel chooses each action from our own short play prompt.

The prompt holds the observation text, the legal actions (numbered), a window of recent
steps and, when the model takes images, the frame. The reply must be one action, by name or
by its number. When the game lists its legal actions they go to the model as
``GenerateConfig.choices``: a model that can constrain its decoding (a ``local:`` llama.cpp
model, through a grammar) can then write nothing else, which is what lets a small instruct
model play at all (SmolLM2-135M continued the prompt on every step otherwise). Any other
model is asked for structured output instead: ``{"action": ...}`` under a JSON schema whose
only values are the legal actions (``GenerateConfig.json_schema``; vLLM, SGLang, OpenAI and
a llama.cpp server reached by URL hold decoding to it; design 0042). A reply that
cannot be parsed is kept in the step's trace (``raw``, ``parse_error``, ``attempts``) and
asked again, up to ``reasks`` more times; after that the step takes the declared
``fallback`` action with ``fallback=True`` (never a silent no-op). A model error that the
client's own retries could not cure propagates, so the play loop stops and keeps the log.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tempfile
from collections import deque
from pathlib import Path

from ...errors import ConfigError
from ...models import (
    ChatModel,
    ChoiceConstraining,
    GenerateConfig,
    ImagePart,
    Message,
    TextPart,
)
from ...schema import ImageRef
from .._trajectory import PlayerTrace
from ._base import Decision, Observation

SYSTEM_PROMPT = (
    "You are playing the game {game}. Each turn you are told what you see and which actions "
    "you may take. Choose the action that helps you survive and make progress. Reply with "
    "exactly one action from the list, its name or its number, and nothing else.")
REASK = ("{why} Reply with exactly one action from this list, its name or its number, and "
         "nothing else: {actions}")
FALLBACK = {"crafter": "noop", "textworld": "look", "jericho": "look"}
_WRAPPING = " \t\r\n`'\"*.,;:!()[]<>"
_JSON_ACTION_TOKENS = 8  # {"action": "..."} around the name


# "3", "3.", "3) move_right", "3 - move_right": an action by its number in the list.
_NUMBERED = re.compile(r"^(\d+)\s*(?:[.):-]\s*(.*))?$")


def parse_action(reply: str, legal: list[str] | None) -> tuple[str | None, str | None]:
    """The action a reply names, or None and why not. Strict: the first non-empty line,
    unwrapped of quotes, markup and an ``action:`` label, must equal a legal action
    (case, and spaces for underscores, aside) or be its number in the list (with, if it
    follows, that action's own name); without a list any one line is a command."""
    reply = _json_action(reply)
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    if not lines:
        return None, "the reply is empty"
    text = lines[0].strip(_WRAPPING)
    text = re.sub(r"^(action|command)\s*[:=-]\s*", "", text, flags=re.IGNORECASE)
    text = text.strip(_WRAPPING)
    if not text:
        return None, "the reply names no action"
    if legal is None:
        return text, None
    wanted = _key(text)
    for action in legal:
        if _key(action) == wanted:
            return action, None
    numbered = _NUMBERED.match(text)
    if numbered:
        return _by_number(int(numbered.group(1)), numbered.group(2), legal)
    return None, f"{text[:60]!r} is not one of the legal actions"


def _json_action(reply: str) -> str:
    """The action of a structured reply (``{"action": "noop"}``), else the reply as it is."""
    text = reply.strip()
    if not text.startswith("{"):
        return reply
    try:
        obj = json.loads(text)
    except ValueError:
        return reply
    action = obj.get("action") if isinstance(obj, dict) else None
    return action if isinstance(action, str) else reply


def action_schema(legal: list[str]) -> dict[str, object]:
    """The JSON schema of a reply that names one legal action."""
    return {"title": "action", "type": "object", "properties": {"action": {"enum": legal}},
            "required": ["action"], "additionalProperties": False}


def _by_number(number: int, name: str | None, legal: list[str]) -> tuple[str | None, str | None]:
    if not 1 <= number <= len(legal):
        return None, f"{number} is not the number of a legal action (1–{len(legal)})"
    action = legal[number - 1]
    named = (name or "").strip(_WRAPPING)
    if named and _key(named) != _key(action):  # "3. move_left" when 3 is move_right
        return None, f"{number} is {action}, not {named[:40]!r}"
    return action, None


def _key(text: str) -> str:
    return " ".join(text.lower().replace("_", " ").split())


class LLMPlayer:
    name = "llm"

    def __init__(self, model: ChatModel, *, game: str, images: bool = False,
                 history: int = 8, reasks: int = 2, fallback: str | None = None,
                 max_tokens: int = 16, seed: int | None = None) -> None:
        if reasks < 0:
            raise ConfigError(f"--reasks {reasks}: give 0 or more")
        if history < 0:
            raise ConfigError(f"--history {history}: give 0 or more steps")
        self.model = model
        self.game = game
        self.images = images
        self.reasks = reasks
        self.fallback = fallback or FALLBACK.get(game)
        self.config = GenerateConfig(max_tokens=max_tokens, temperature=0.0, seed=seed)
        # Whether the model's decoding is held to the legal actions by a grammar (recorded
        # in meta.json); any other model is asked for them as structured output.
        self.constrained = isinstance(model, ChoiceConstraining) and model.constrains_choices
        self.structured = not self.constrained
        self._history: deque[str] = deque(maxlen=history)
        self._frames: tempfile.TemporaryDirectory[str] | None = None

    async def act(self, observation: Observation) -> Decision:
        legal = observation.legal
        fallback = self.fallback if self.fallback else (legal[0] if legal else None)
        if legal is not None and fallback not in legal:
            raise ConfigError(f"the fallback action {fallback!r} is not a legal action of "
                              f"{self.game}")
        messages = [Message("system", [TextPart(SYSTEM_PROMPT.format(game=self.game))]),
                    Message("user", self._turn(observation))]
        config = self._config_for(legal)
        replies: list[str] = []
        action: str | None = None
        why: str | None = None
        for attempt in range(1 + self.reasks):
            qid = f"play:{self.game}:step{observation.step}:attempt{attempt + 1}"
            output = await self.model.generate(messages, config, question_id=qid)
            replies.append(output.text)
            action, why = parse_action(output.text, legal)
            if action is not None:
                break
            actions = ", ".join(legal) if legal else "(any one command)"
            assert why is not None  # parse_action says why whenever it finds no action
            messages = [*messages, Message("assistant", [TextPart(output.text)]),
                        Message("user", [TextPart(REASK.format(why=why.capitalize() + ".",
                                                               actions=actions))])]
        trace = PlayerTrace(raw=replies[-1], attempts=len(replies), parse_error=why)
        if action is None:
            if fallback is None:
                raise ConfigError(f"step {observation.step}: no reply named an action "
                                  f"({why}) and there is no fallback action")
            trace.fallback = True
            trace.replies = replies  # type: ignore[attr-defined]  (every unparsed reply)
            action = fallback
        self._history.append(f"step {observation.step}: {action}")
        return Decision(action=action, trace=trace)

    def _config_for(self, legal: list[str] | None) -> GenerateConfig:
        """The step's generation settings: the legal actions as the reply's only choices
        (a grammar), or as the only values of a JSON reply (structured output); room for
        the longest, as a name takes at most one token a character, and for the JSON."""
        if not legal:
            return self.config
        longest = max(len(action) for action in legal)
        if self.constrained:
            return dataclasses.replace(self.config, choices=tuple(legal),
                                       max_tokens=max(self.config.max_tokens, longest))
        return dataclasses.replace(self.config, json_schema=action_schema(list(legal)),
                                   max_tokens=max(self.config.max_tokens,
                                                  longest + _JSON_ACTION_TOKENS))

    def _turn(self, observation: Observation) -> list[TextPart | ImagePart]:
        lines = [f"Step {observation.step}."]
        if self._history:
            lines.append("Your recent actions: " + "; ".join(self._history) + ".")
        lines.append(f"You see: {observation.text}")
        if observation.legal is not None:
            lines.append("Legal actions: " + ", ".join(
                f"{i}. {action}" for i, action in enumerate(observation.legal, 1)))
        lines.append("Your action:")
        parts: list[TextPart | ImagePart] = []
        if self.images and observation.frame_png is not None:
            parts.append(ImagePart(self._image(observation.frame_png)))
        parts.append(TextPart("\n".join(lines)))
        return parts

    def _image(self, png: bytes) -> ImageRef:
        """The encoder reads images from files: keep each frame once in a folder of our own
        (removed with the player)."""
        if self._frames is None:
            self._frames = tempfile.TemporaryDirectory(prefix="memgauge-play-")
        digest = hashlib.sha256(png).hexdigest()
        path = Path(self._frames.name) / f"{digest}.png"
        if not path.exists():
            path.write_bytes(png)
        return ImageRef(source=f"frame {digest[:12]}", path=str(path), sha256=digest)
