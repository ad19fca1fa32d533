"""A judge rubric whose prompt text comes from a file the user supplies (``--judge-prompt-file``).

This is how a published judge is reproduced word for word without memgauge shipping its
text: the user copies the text from the reference repository they have checked out into a
file, and memgauge fills in each case. The cases are mapped to the MemLens task keys
(:func:`task_key`), and the verdict is read on the file's ``levels`` (0 and 1 by default).

The file is TOML::

    template = '''
    ... the base prompt ...
    [Task-Specific Criteria]
    {{criteria}}
    <Question>
    {{question}}
    <Standard Answer>
    {{standard_answer}}
    {{old_answer_block}}<Student Answer>
    {{student_answer}}
    [Scoring Rationale]:'''
    old_answer_block = "<Old (Outdated) Answer>\\n{{old_answer}}\\n"   # KU with an old answer
    levels = [0, 1]                                                   # optional

    [criteria]            # one text per task key; required when the template uses {{criteria}}
    IE_Entity = '''...'''
    ...

A file that is not TOML (``.txt``, ``.md``) is the template alone. Placeholders are written
``{{name}}``, so the JSON braces of a prompt's examples need no escaping. The names are
``question``, ``standard_answer``, ``student_answer``, ``old_answer_block`` (empty unless the
question has an old answer), ``criteria`` (the task key's text) and ``task_key``. An unknown
name, a missing task key or a stray table is an error naming the file. The rubric's version
is the file's sha256, so verdicts from another text are never mixed with these.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import Any

from ..errors import InputError
from ._judge import JudgeCase, read_verdict
from ._rubric_memlens import TASK_KEYS, standard_answer, task_key

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
CASE_FIELDS = ("question", "standard_answer", "student_answer", "old_answer_block", "criteria",
               "task_key")
_KEYS = {"template", "old_answer_block", "levels", "criteria"}


class PromptFileRubric:
    """The MemLens task keys and verdict scale, with the prompt text read from a file."""

    name = "prompt-file"

    def __init__(self, path: str) -> None:
        self.path = path
        p = Path(path)
        if not p.is_file():
            raise InputError("no such file" if not p.exists() else "not a file", file=path,
                             field="--judge-prompt-file")
        raw = p.read_bytes()
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.version = "file." + self.sha256[:16]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not a UTF-8 text file", file=path) from None
        doc = self._document(text, p.suffix.lower() == ".toml")
        self.template = doc["template"]
        self.old_block = doc.get("old_answer_block", "")
        self.criteria: dict[str, str] = doc.get("criteria", {})
        self.levels = tuple(float(v) for v in doc.get("levels", (0, 1)))
        self._check()

    def _document(self, text: str, is_toml: bool) -> dict[str, Any]:
        if not is_toml:
            return {"template": text}
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not valid TOML ({exc})", file=self.path) from None
        unknown = sorted(set(doc) - _KEYS)
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)}; a prompt file holds "
                             f"{', '.join(sorted(_KEYS))}", file=self.path)
        for key, kind in (("template", str), ("old_answer_block", str), ("criteria", dict),
                          ("levels", list)):
            if key in doc and not isinstance(doc[key], kind):
                raise InputError(f"expected {kind.__name__}, got {type(doc[key]).__name__}",
                                 file=self.path, field=key)
        if "template" not in doc:
            raise InputError("no template", file=self.path, field="template")
        return doc

    def _check(self) -> None:
        used = set(PLACEHOLDER.findall(self.template))
        for name in sorted(used | set(PLACEHOLDER.findall(self.old_block))):
            if name not in CASE_FIELDS and name != "old_answer":
                raise InputError(f"unknown placeholder {{{{{name}}}}}; known: "
                                 f"{', '.join(CASE_FIELDS)}", file=self.path, field="template")
        for name in ("question", "student_answer"):
            if name not in used:
                raise InputError(f"the template never shows the {{{{{name}}}}}", file=self.path,
                                 field="template")
        if "criteria" in used:
            missing = [k for k in TASK_KEYS if not isinstance(self.criteria.get(k), str)]
            if missing:
                raise InputError(f"no criterion text for task key(s) {', '.join(missing)}",
                                 file=self.path, field="criteria")
        extra = sorted(set(self.criteria) - set(TASK_KEYS))
        if extra:
            raise InputError(f"unknown task key(s) {', '.join(extra)}; known: "
                             f"{', '.join(TASK_KEYS)}", file=self.path, field="criteria")
        if not self.levels or any(not 0 <= v <= 1 for v in self.levels):
            raise InputError("levels must be scores in [0, 1]", file=self.path, field="levels")

    def key(self, case: JudgeCase) -> str:
        return task_key(case.ability, case.subtype, case.gold)

    def build(self, case: JudgeCase, prediction: str) -> str:
        key = self.key(case)
        old = ""
        if key == "KU_KnowledgeUpdate" and (old_answer := case.old_answer):
            old = PLACEHOLDER.sub(lambda m: old_answer if m.group(1) == "old_answer"
                                  else m.group(0), self.old_block)
        values = {"question": case.question, "standard_answer": standard_answer(case.gold, key),
                  "student_answer": prediction, "old_answer_block": old,
                  "criteria": self.criteria.get(key, ""), "task_key": key}
        # one pass: a value that itself holds "{{...}}" (a prediction) is never expanded
        return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), self.template)

    def parse(self, reply: str) -> float | None:
        return read_verdict(reply, self.levels)
