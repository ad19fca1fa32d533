"""MemEye's fixed groupings (``dialog/concat_*.json``), their member tasks read from the data.

The release ships concatenated groupings without saying which tasks each joins (0036), so
the members are derived from content: a concat QA belongs to the task whose own file asks
the same question text over sessions of the same ids and dates. A concat file with a QA that
no task file asks that way does not match the per-task files: an ``InputError`` naming the
file and that QA, never a guessed grouping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from .memeye import QA_KEYS, MemEyeBenchmark, task_stem

PREFIX = "concat_"
RELEASE = "release"


def parse_release(group: str) -> list[str] | None:
    """The concat stems ``group=release:<stem>[+<stem>…]`` picks ([] = every one); ``None``
    when ``group`` is not a release grouping."""
    if group == RELEASE:
        return []
    if not group.startswith(f"{RELEASE}:"):
        return None
    stems = group.split(":", 1)[1].split("+")
    if any(not s for s in stems):
        raise ConfigError(f"--bench-option group={group!r}: name concat files as "
                          "release:<stem>[+<stem>…] (e.g. release:concat_demo_card)")
    return stems


def _sessions(doc: dict[str, Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for s in doc.get("multi_session_dialogues") or []:
        if isinstance(s, dict) and isinstance(s.get("session_id"), str):
            out[s["session_id"]] = s.get("date")
    return out


def _qas(doc: dict[str, Any]) -> list[dict[str, Any]]:
    key = next((k for k in QA_KEYS if k in doc), None)
    qas = doc.get(key) if key else None
    return [qa for qa in qas if isinstance(qa, dict)] if isinstance(qas, list) else []


def _named_sessions(qa: dict[str, Any]) -> list[str]:
    named = qa.get("session_id")
    if isinstance(named, str):
        return [named]
    return [s for s in named if isinstance(s, str)] if isinstance(named, list) else []


def members(concat: Path, tasks: dict[str, dict[str, Any]]) -> list[str]:
    """The task ids ``concat`` joins, in order of first use; ``tasks`` maps a task id to its
    dialog document."""
    doc = MemEyeBenchmark._document(concat)
    dates = _sessions(doc)
    found: list[str] = []
    for k, qa in enumerate(_qas(doc)):
        text = qa.get("question")
        named = _named_sessions(qa)
        hits = [task for task, tdoc in tasks.items()
                if any(t.get("question") == text and _named_sessions(t) == named
                       for t in _qas(tdoc))
                and all(s in dates and _sessions(tdoc).get(s, "-") == dates[s] for s in named)]
        if not hits:
            qid = qa.get("question_id") or f"QA #{k}"
            raise InputError(f"concat QA {text!r} matches no task file's question over the "
                             "same sessions (ids and dates): this grouping does not match "
                             "the per-task files", file=str(concat), item=str(qid),
                             field="question")
        for task in hits:
            if task not in found:
                found.append(task)
    if not found:
        raise InputError("concat file holds no QAs to match its tasks by", file=str(concat))
    for task in found:  # every member's history is in the grouping, as written there
        missing = [s for s, d in _sessions(tasks[task]).items() if dates.get(s, "-") != d]
        if missing:
            raise InputError(f"concat file lacks session {missing[0]!r} of its member task "
                             f"{task!r} (or its date differs)", file=str(concat),
                             item=task, field="multi_session_dialogues")
    return found


def release_groups(inner: MemEyeBenchmark, stems: list[str]) -> list[list[str]]:
    """The fixed groups (task ids) of the release's concat files, all of them or ``stems``;
    overlapping groupings are refused (a question would be asked twice under one id)."""
    folder = inner.dialog_dir
    files = {p.stem: p for p in sorted(folder.glob(f"{PREFIX}*.json")) if p.is_file()}
    if not files:
        raise ConfigError(f"--bench-option group=release: no {PREFIX}*.json in {folder} "
                          "(give --data the release folder)")
    picked: list[Path] = []
    for stem in stems or list(files):
        path = files.get(stem) or files.get(f"{PREFIX}{stem}")
        if path is None:
            raise ConfigError(f"--bench-option group=release:{stem}: no such concat file in "
                              f"{folder} (there: {', '.join(files)})")
        picked.append(path)
    tasks: dict[str, dict[str, Any]] = {}
    for mcq, opened in inner.tasks:
        main = mcq or opened
        assert main is not None
        doc = MemEyeBenchmark._document(main)
        name = doc.get("task_name")
        tasks[name if isinstance(name, str) and name else task_stem(main)] = doc
    groups: list[list[str]] = []
    owner: dict[str, str] = {}
    for path in picked:
        group = members(path, tasks)
        for task in group:
            if task in owner:
                raise ConfigError(
                    f"--bench-option group=release: {owner[task]} and {path.stem} both hold "
                    f"task {task!r}, so one run would ask its questions twice under one id; "
                    f"run one grouping per run (group=release:{owner[task]}, then "
                    f"group=release:{path.stem})")
            owner[task] = path.stem
        groups.append(group)
    return groups
