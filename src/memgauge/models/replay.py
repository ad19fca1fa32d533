"""``replay:<file>``: answer from saved predictions, to rescore another harness's outputs.

Reads the MemLens reference prediction JSON (``{"data": [...]}`` or a list, with
``prediction``/``raw_prediction``), our own ``records.jsonl``, or LongMemEval-style
``{question_id, hypothesis}`` JSON Lines. A question with no saved prediction is an error
for that item (recorded, not scored as wrong).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..io import HashingReader, iter_json_items
from ..registry import model
from ._base import GenerateConfig, Message, ModelError, ModelOutput
from .openai_compat import ModelSettings

_TEXT_FIELDS = ("prediction", "raw_prediction", "hypothesis", "output", "response")


class ReplayModel:
    def __init__(self, path: str) -> None:
        if not path or not Path(path).is_file():
            raise ConfigError(f"replay predictions file not found: {path!r}")
        self.path = path
        self.name = f"replay:{Path(path).name}"
        self.predictions: dict[str, str] = {}
        self._entry: dict[str, int] = {}  # question id -> the entry it came from
        reader = HashingReader(path)
        try:
            for index, item in iter_json_items(reader):
                self._add(item, index)
            self.sha256 = reader.hexdigest()
        finally:
            reader.close()
        if not self._entry:
            raise InputError("no predictions in the file: it would answer nothing",
                             file=self.path)

    def _add(self, item: Any, index: int) -> None:
        where = f"#{index + 1}"
        if not isinstance(item, dict):
            raise InputError("prediction entry must be an object", file=self.path, item=where)
        qid = item.get("question_id")
        if isinstance(qid, bool) or not isinstance(qid, str | int):
            raise InputError("missing required field" if qid is None else
                             f"expected str, got {type(qid).__name__}", file=self.path,
                             item=where, field="question_id")
        ours = "status" in item and "episode_id" in item  # one of our records.jsonl lines
        first = self._entry.setdefault(str(qid), index)
        if first != index and not ours:
            raise InputError(f"duplicate question_id {qid!r}: entries #{first + 1} and "
                             f"#{index + 1} both have it", file=self.path, item=where,
                             field="question_id")
        if item.get("status") == "error":  # one of our records that failed: no prediction
            self.predictions.pop(str(qid), None)
            return
        text = next((item[k] for k in _TEXT_FIELDS if isinstance(item.get(k), str)), None)
        if text is None:
            raise InputError(f"no prediction text (looked for {', '.join(_TEXT_FIELDS)})",
                             file=self.path, item=str(qid), field="prediction")
        # A run's records.jsonl may hold a question twice (a failure, then its retry): the
        # later line wins, as it does for `memgauge report`.
        self.predictions[str(qid)] = text

    def describe(self) -> dict[str, Any]:
        return {"provider": "replay", "file": Path(self.path).name, "sha256": self.sha256,
                "predictions": len(self.predictions)}

    async def generate(self, messages: list[Message], config: GenerateConfig, *,
                       question_id: str | None = None) -> ModelOutput:
        if question_id is None or question_id not in self.predictions:
            raise ModelError("replay_missing",
                             f"no saved prediction for question {question_id!r} in {self.path}")
        return ModelOutput(text=self.predictions[question_id])


@model("replay")
def replay(path: str, settings: ModelSettings) -> ReplayModel:
    """``--model replay:<predictions file>``."""
    return ReplayModel(path)
