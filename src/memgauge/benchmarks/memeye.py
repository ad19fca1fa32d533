"""MemEye (MemEyeBench/MemEye): multi-session dialogues with images, questions on an X × Y grid.

``--data`` is a release folder (holding ``dialog/``), its ``dialog/`` folder, or one dialog
file. A folder loads every ``<Task>.json`` with its ``<Task>_Open.json`` twin (the
``concat_*`` groupings are skipped: their tasks are loaded from their own files); a single
file loads that task, with its twin when it lies beside it. One episode per task: every
question of the task shares its history.

Each MCQ rotation is its own question (``<task>:<qid>:r<k>``, so the response cache keys the
rotation), its options shown as lettered lines; the open twin's question is
``<task>:<qid>:open``. ``meta`` carries ``base_question_id`` (shared by a question's rotations
and its twin), ``rotation`` (MCQ only) and ``xy_cells`` (every ``X_Y`` cell of the
``point`` multi-labels, the Cartesian product); ``labels.x``/``labels.y`` hold the first X and
Y. ``clue`` rounds become turn pointers sorted by session order, whatever the file order.

Images resolve with the reference's candidates (design 0036), confined to the data root:
the folder above ``dialog/`` (or the dialog file's folder when it is not called ``dialog``),
or ``--image-dir``. ``--bench-option asked_after=evidence`` asks each question right after
its latest clue session; ``format=mcq|open`` keeps one of the two forms.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from .._json_limits import MAX_ITEM_BYTES, load_document
from ..errors import ConfigError, InputError
from ..io import file_sha256, read_id_list
from ..media import ImageResolver
from ..registry import benchmark
from ..schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    ImageRef,
    Labels,
    Measure,
    Question,
    Session,
    Turn,
)
from ._base import BenchmarkOptions, Inconsistencies, inferred_labels
from ._parse import type_name

LOADER_VERSION = "1"
QA_KEYS = ("human-annotated QAs", "human_annotated_qas", "qas")
OPEN_SUFFIX = "_Open"
X_LEVELS = ("X1", "X2", "X3", "X4")
Y_LEVELS = ("Y1", "Y2", "Y3")
# The reasoning depth names the ability it exercises: a single fact, an association across
# sessions, or a state that changes over time.
Y_ABILITY = {"Y1": Ability.INFORMATION_EXTRACTION, "Y2": Ability.MULTI_SESSION_REASONING,
             "Y3": Ability.KNOWLEDGE_UPDATE}
MCQ_INSTRUCTION = "Answer with only the option letter ({letters})."
# --bench-option keys and their values (the first is the default)
OPTIONS: dict[str, tuple[str, ...]] = {"asked_after": ("end", "evidence"),
                                       "format": ("both", "mcq", "open")}
_IMAGE_PREFIX = re.compile(r"^(?:\.\./image/|\./image/|image/|data/image/)")
_LETTER = re.compile(r"^[A-Z]$")
_WORD = re.compile(r"\w+")


def _bench_options(extra: dict[str, Any]) -> dict[str, str]:
    unknown = sorted(set(extra) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"--bench-option {unknown[0]}: memeye takes "
                          + ", ".join(f"{k} ({' | '.join(v)})" for k, v in OPTIONS.items()))
    out = {}
    for key, values in OPTIONS.items():
        value = str(extra.get(key, values[0]))
        if value not in values:
            raise ConfigError(f"--bench-option {key}={value!r}: use one of {', '.join(values)}")
        out[key] = value
    return out


def _is_open(path: Path) -> bool:
    return path.stem.endswith(OPEN_SUFFIX)


def task_stem(path: Path) -> str:
    """A task's name from its dialog file: the stem, less the open twin's suffix."""
    return path.stem[: -len(OPEN_SUFFIX)] if _is_open(path) else path.stem


def find_tasks(data: Path) -> tuple[Path, list[tuple[Path | None, Path | None]]]:
    """The dialog folder and its tasks as (MCQ file, open file) pairs, in name order."""
    if data.is_file():
        folder = data.parent
        stem = task_stem(data)
        mcq, opened = folder / f"{stem}.json", folder / f"{stem}{OPEN_SUFFIX}.json"
        return folder, [(mcq if mcq.is_file() else None, opened if opened.is_file() else None)]
    if not data.is_dir():
        raise InputError("data file or folder not found", file=str(data))
    folder = data / "dialog" if (data / "dialog").is_dir() else data
    files = sorted(p for p in folder.glob("*.json")
                   if p.is_file() and not p.name.startswith("concat_"))
    if not files:
        raise InputError("folder holds no MemEye dialog files (*.json)", file=str(folder))
    tasks: dict[str, list[Path | None]] = {}
    for p in files:
        tasks.setdefault(task_stem(p), [None, None])[1 if _is_open(p) else 0] = p
    return folder, [(pair[0], pair[1]) for _, pair in sorted(tasks.items())]


def data_root(dialog_dir: Path, image_dir: str | None) -> Path:
    if image_dir is not None:
        root = Path(image_dir).resolve()
        if not root.is_dir():
            raise InputError("image dir not found", file=str(root))
        return root
    dialog_dir = dialog_dir.resolve()
    return dialog_dir.parent if dialog_dir.name == "dialog" else dialog_dir


class _Where:
    """File and item of what is being read, for errors."""

    def __init__(self, file: str) -> None:
        self.file, self.item = file, "#0"

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, file=self.file, item=self.item, field=field)


def _str(obj: dict[str, Any], key: str, where: _Where, field: str, *,
         required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise where.error("missing required field" if key not in obj else
                              "must not be null", field)
        return None
    if type(value) in (int, float):
        return str(value)
    if type(value) is not str:
        raise where.error(f"expected str, got {type_name(value)}", field)
    return value


def _str_list(obj: dict[str, Any], key: str, where: _Where, field: str) -> list[str]:
    """A list of strings; a lone string is a list of one; absent or null is empty."""
    value = obj.get(key)
    if value is None:
        return []
    if type(value) is str:
        return [value]
    if type(value) is not list or not all(type(v) is str for v in value):
        raise where.error(f"expected a list of str, got {type_name(value)}", field)
    return list(value)


def _words(text: Any) -> list[str]:
    return _WORD.findall(str(text).casefold())


def same_gold(a: Any, b: Any) -> bool:
    """Two golds agree when one's words are the other's, or run inside them ("Yes" and
    "Yes, it is the same plant"): an open reference may say more than its option, never
    something else ("Red" and "Blue")."""
    x, y = _words(a), _words(b)
    if not x or not y:
        return x == y
    short, long = sorted((x, y), key=len)
    return any(long[i:i + len(short)] == short for i in range(len(long) - len(short) + 1))


def _twin_key(qa: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What pairs an open QA with its MCQ twin when their ids differ: the evidence sessions
    and the question's words."""
    sessions = qa.get("session_id")
    listed = [sessions] if type(sessions) is str else sessions if type(sessions) is list else []
    return tuple(sorted(map(str, listed))), tuple(_words(qa.get("question", "")))


class ImageCandidates:
    """Image paths resolved the way the reference tries them, never outside the data root.

    ``image_root`` is the reference's image root: ``<root>/image`` in the release layout, or
    the ``--image-dir`` itself (then also the root)."""

    def __init__(self, root: Path, image_root: Path, dialog_dir: Path,
                 resolver: ImageResolver) -> None:
        self.root, self.image_root = root, image_root
        self.dialog_dir, self.resolver = dialog_dir.resolve(), resolver

    def _inside(self, path: str) -> bool:
        root = str(self.root)
        return path == root or path.startswith(root + os.sep)

    def resolve(self, written: str, caption: str | None, where: _Where, field: str) -> ImageRef:
        p = written.removeprefix("file://")
        if not p:
            raise where.error("empty image path", field)
        # The release writes paths from the dialog folder, at most one level up
        # (``../image/...``); a path that climbs further, or an absolute one, points out.
        ups = Path(os.path.normpath(p)).parts[:2].count("..")
        bare = _IMAGE_PREFIX.sub("", p)
        candidates = [os.path.normpath(self.dialog_dir / p),
                      os.path.normpath(self.dialog_dir.parent / p),
                      os.path.normpath(self.image_root / bare),
                      os.path.normpath(self.image_root / os.path.basename(p)),
                      os.path.normpath(self.dialog_dir.parent / "image" / bare)]
        inside = list(dict.fromkeys(c for c in candidates if self._inside(c)))
        if os.path.isabs(p) or ups > 1 or not inside:
            raise where.error(f"image path {written!r} escapes the data root {self.root}",
                              field)
        found = next((c for c in inside if os.path.isfile(c)), None)
        if found is None:
            tried = ", ".join(os.path.relpath(c, self.root) for c in inside)
            if not self.resolver.allow_missing:
                raise where.error(f"image {written!r} was not found under {self.root} (tried "
                                  f"{tried}); pass --allow-missing-images to record it and "
                                  "go on", field)
            return ImageRef(source=written, path=inside[0], missing=True,
                            captions={"generic": caption} if caption else {},
                            meta={"problem": f"was not found (tried {tried})"})
        ref = self.resolver.resolve(os.path.relpath(found, self.root), file=where.file,
                                    item=where.item, field=field)
        # The resolver shares one ImageRef per file; the caption and spelling are this use's.
        return ref.model_copy(update={"source": written,
                                      "captions": {"generic": caption} if caption else {},
                                      "meta": {**ref.meta}})


class MemEyeBenchmark:
    name = "memeye"
    version = LOADER_VERSION
    options: ClassVar[dict[str, tuple[str, ...]]] = OPTIONS  # --bench-option

    def __init__(self, opts: BenchmarkOptions) -> None:
        self.opts = opts
        self.settings = _bench_options(opts.extra)
        data = Path(opts.data)
        self.dialog_dir, tasks = find_tasks(data)
        want = self.settings["format"]
        self.tasks = [(m if want != "open" else None, o if want != "mcq" else None)
                      for m, o in tasks]
        self.tasks = [t for t in self.tasks if t != (None, None)]
        if not self.tasks:
            raise InputError(f"no {want} dialog file for this task", file=str(data))
        self.root = data_root(self.dialog_dir, opts.image_dir)
        image_root = self.root if opts.image_dir is not None else self.root / "image"
        self.images = ImageCandidates(self.root, image_root, self.dialog_dir,
                                      ImageResolver(self.root,
                                                    allow_missing=opts.allow_missing_images))
        self.keep: set[str] | None = read_id_list(opts.question_ids) if opts.question_ids else None
        self.info = BenchmarkInfo(name=self.name, tier=opts.tier)
        self._counts = {"episodes": 0, "questions": 0, "images": 0, "missing_images": 0}
        self.inconsistencies = Inconsistencies(opts.allow_inconsistent)
        # how each task's open questions met their MCQ twins (the manifest's ``pairing``)
        self.pairing = {"by_id": 0, "by_text": 0, "open_alone": 0, "mcq_alone": 0}
        # Every task is read here, not as the run goes: a release is a few MB, and a mistake
        # in its last task then stops the run before its first request.
        self._parsed = [self._task(mcq, opened) for mcq, opened in self.tasks]

    def files(self) -> list[Path]:
        return [p for pair in self.tasks for p in pair if p is not None]

    def episodes(self) -> Iterator[Episode]:
        counts = {"episodes": 0, "questions": 0, "images": 0, "missing_images": 0}
        self._counts = counts
        seen: set[str] = set()
        for ep in self._parsed:
            seen.update(q.question_id for q in ep.questions)
            if self.keep is not None:
                kept = [q for q in ep.questions if q.question_id in self.keep
                        or q.meta["base_question_id"] in self.keep]
                if not kept:
                    continue
                ep = ep.model_copy(update={"questions": kept})
            counts["episodes"] += 1
            counts["questions"] += len(ep.questions)
            refs = [im for s in ep.sessions for t in s.turns for im in t.images]
            refs += [im for q in ep.questions for im in q.images]
            counts["images"] += len(refs)
            counts["missing_images"] += sum(im.missing for im in refs)
            yield ep
        if self.keep is not None:
            bases = set(seen) | {q.rsplit(":", 1)[0] for q in seen}
            absent = sorted(self.keep - bases)
            if absent:
                raise InputError(f"{len(absent)} question id(s) in the id list are not in the "
                                 f"data: {', '.join(absent[:20])}", file=self.opts.question_ids)

    # -- one task ---------------------------------------------------------------------------

    def _task(self, mcq: Path | None, opened: Path | None) -> Episode:
        main = mcq or opened
        assert main is not None
        doc = self._document(main)
        where = _Where(str(main))
        task = _str(doc, "task_name", where, "task_name", required=False) or task_stem(main)
        where.item = task
        sessions, rounds = self._sessions(doc, where)
        questions: list[Question] = []
        mcq_qas = self._qas(doc, where) if mcq is not None else []
        golds: list[str | None] = []  # each MCQ QA's gold text, for its open twin
        for k, qa in enumerate(mcq_qas):
            asked, gold = self._mcq(qa, k, task, rounds, sessions, _Where(str(mcq)))
            questions += asked
            golds.append(gold)
        if opened is not None:
            odoc = doc if opened == main else self._document(opened)
            owhere = _Where(str(opened))
            owhere.item = task
            if opened != main:
                self._same_dialogue(odoc, rounds, owhere)
            open_qas = self._qas(odoc, owhere)
            twins = self._pair(mcq_qas, open_qas) if mcq is not None else {}
            mcq_bases = [self._base_id(qa, k, task, _Where(str(mcq))) for k, qa in
                         enumerate(mcq_qas)]
            for k, qa in enumerate(open_qas):
                twin = twins.get(k)
                base = mcq_bases[twin] if twin is not None else self._own_base(
                    qa, k, task, set(mcq_bases), owhere)
                q = self._open(qa, k, task, rounds, sessions, owhere, base)
                if twin is not None:
                    self._check_twin(q, mcq_qas[twin], golds[twin], owhere)
                questions.append(q)
        ids: set[str] = set()
        for q in questions:
            if q.question_id in ids:
                raise InputError(f"duplicate question_id {q.meta['base_question_id']!r}",
                                 file=str(main), item=q.question_id, field="question_id")
            ids.add(q.question_id)
        if self.settings["asked_after"] == "evidence":
            index = {s.session_id: i for i, s in enumerate(sessions)}
            for q in questions:
                q.asked_after = max((index[e.session_id] for e in q.evidence), default=None)
        profile = doc.get("character_profile")
        if profile is not None and type(profile) is not dict:
            raise where.error(f"expected an object, got {type_name(profile)}",
                              "character_profile")
        meta: dict[str, Any] = {"task": task, "files": [p.name for p in (mcq, opened) if p]}
        if profile:
            meta["character_profile"] = profile
        return Episode(episode_id=task, sessions=sessions, questions=questions,
                       benchmark=self.info, meta=meta)

    @staticmethod
    def _document(path: Path) -> dict[str, Any]:
        doc = load_document(path, what="a MemEye dialog file", max_bytes=MAX_ITEM_BYTES)
        if type(doc) is not dict:
            raise InputError(f"expected a dialog object, got {type_name(doc)}", file=str(path))
        return doc

    def _sessions(self, doc: dict[str, Any],
                  where: _Where) -> tuple[list[Session], dict[str, tuple[int, int]]]:
        """The sessions in file order, and each round's (session index, position)."""
        raw = doc.get("multi_session_dialogues")
        if type(raw) is not list:
            raise where.error("missing required field" if raw is None else
                              f"expected a list of sessions, got {type_name(raw)}",
                              "multi_session_dialogues")
        sessions: list[Session] = []
        rounds: dict[str, tuple[int, int]] = {}
        session_ids: set[str] = set()
        for i, s in enumerate(raw):
            field = f"multi_session_dialogues[{i}]"
            if type(s) is not dict:
                raise where.error(f"expected a session object, got {type_name(s)}", field)
            sid = _str(s, "session_id", where, f"{field}.session_id")
            assert sid is not None
            if sid in session_ids:
                raise where.error(f"duplicate session_id {sid!r}", f"{field}.session_id")
            session_ids.add(sid)
            date = _str(s, "date", where, f"{field}.date", required=False)
            dialogues = s.get("dialogues")
            if type(dialogues) is not list:
                raise where.error("missing required field" if dialogues is None else
                                  f"expected a list of rounds, got {type_name(dialogues)}",
                                  f"{field}.dialogues")
            turns: list[Turn] = []
            for j, r in enumerate(dialogues):
                rfield = f"{field}.dialogues[{j}]"
                if type(r) is not dict:
                    raise where.error(f"expected a round object, got {type_name(r)}", rfield)
                rid = _str(r, "round", where, f"{rfield}.round")
                assert rid is not None
                if rid in rounds:
                    raise where.error(f"duplicate round {rid!r}", f"{rfield}.round")
                rounds[rid] = (i, j)
                turns += self._round(r, rid, where, rfield)
            sessions.append(Session(session_id=sid, date=date, turns=turns))
        return sessions, rounds

    def _round(self, r: dict[str, Any], rid: str, where: _Where, field: str) -> list[Turn]:
        paths = _str_list(r, "input_image", where, f"{field}.input_image")
        ids = _str_list(r, "image_id", where, f"{field}.image_id")
        captions = _str_list(r, "image_caption", where, f"{field}.image_caption")
        for key, values in (("image_id", ids), ("image_caption", captions)):
            if values and len(values) != len(paths):
                raise where.error(f"{len(values)} entries for {len(paths)} input_image(s)",
                                  f"{field}.{key}")
        images = []
        for k, p in enumerate(paths):
            ref = self.images.resolve(p, captions[k] if captions else None, where,
                                      f"{field}.input_image[{k}]")
            if ids:
                ref.meta["image_id"] = ids[k]
            images.append(ref)
        user = _str(r, "user", where, f"{field}.user", required=False) or ""
        assistant = _str(r, "assistant", where, f"{field}.assistant", required=False) or ""
        out = [Turn(turn_id=rid, role="user", text=user, images=images,
                    meta={"round": rid})]
        if assistant:
            out.append(Turn(turn_id=f"{rid}:assistant", role="assistant", text=assistant,
                            meta={"round": rid}))
        return out

    @staticmethod
    def _same_dialogue(doc: dict[str, Any], rounds: dict[str, tuple[int, int]],
                       where: _Where) -> None:
        """The twin must hold the same history: the same rounds in the same places."""
        raw = doc.get("multi_session_dialogues")
        theirs: dict[str, tuple[int, int]] = {}
        if type(raw) is list:
            for i, s in enumerate(raw):
                if type(s) is dict and type(s.get("dialogues")) is list:
                    for j, r in enumerate(s["dialogues"]):
                        if type(r) is dict and type(r.get("round")) is str:
                            theirs[r["round"]] = (i, j)
        if theirs != rounds:
            differ = sorted(set(theirs) ^ set(rounds)) or sorted(
                k for k in rounds if rounds[k] != theirs.get(k))
            raise where.error("the twin's dialogue differs from its MCQ file's (rounds "
                              f"{', '.join(differ[:5])})", "multi_session_dialogues")

    @staticmethod
    def _qas(doc: dict[str, Any], where: _Where) -> list[Any]:
        key = next((k for k in QA_KEYS if k in doc), None)
        if key is None:
            raise where.error(f"no questions: expected one of {', '.join(map(repr, QA_KEYS))}")
        qas = doc[key]
        if type(qas) is not list:
            raise where.error(f"expected a list of QAs, got {type_name(qas)}", key)
        for k, qa in enumerate(qas):
            if type(qa) is not dict:
                raise where.error(f"expected a QA object, got {type_name(qa)}", f"{key}[{k}]")
        return qas

    @staticmethod
    def _base_id(qa: dict[str, Any], k: int, task: str, where: _Where) -> str:
        where.item = f"{task} QA #{k}"
        qid = _str(qa, "question_id", where, "question_id", required=False)
        base = f"{task}:{qid}" if qid else f"{task}:q{k}"
        where.item = base
        return base

    def _pair(self, mcq: list[Any], opened: list[Any]) -> dict[int, int]:
        """Open QA index -> its MCQ twin's index. By ``question_id`` where both files give
        the same one; otherwise by (evidence sessions, question text), the first MCQ QA so
        far unpaired. MemEye's own code never pairs the two files (the release's open ids
        may differ, e.g. an ``_open`` suffix), so an open QA left without a twin is a
        question of its own, as is an MCQ QA without one."""
        by_id: dict[str, int] = {}
        by_text: dict[tuple[tuple[str, ...], tuple[str, ...]], list[int]] = {}
        for k, qa in enumerate(mcq):
            if qa.get("question_id") is not None:
                by_id.setdefault(str(qa["question_id"]), k)
            by_text.setdefault(_twin_key(qa), []).append(k)
        twins: dict[int, int] = {}
        for k, qa in enumerate(opened):  # ids first: a text match never takes an id's twin
            m = by_id.get(str(qa["question_id"])) if qa.get("question_id") is not None \
                else None
            if m is not None and m not in twins.values():
                twins[k] = m
        n_by_id = len(twins)
        for k, qa in enumerate(opened):
            if k not in twins:
                m = next((m for m in by_text.get(_twin_key(qa), [])
                          if m not in twins.values()), None)
                if m is not None:
                    twins[k] = m
        self.pairing["by_id"] += n_by_id
        self.pairing["by_text"] += len(twins) - n_by_id
        self.pairing["open_alone"] += len(opened) - len(twins)
        self.pairing["mcq_alone"] += len(mcq) - len(twins)
        return twins

    def _own_base(self, qa: dict[str, Any], k: int, task: str, taken: set[str],
                  where: _Where) -> str:
        """An unpaired open question's base id: its own, kept apart from the MCQ ones (an
        open QA without an id would otherwise share a place id, ``q3``, with an MCQ QA
        that is not its twin)."""
        base = self._base_id(qa, k, task, where)
        return base if base not in taken else f"{task}:open-q{k}"

    def _check_twin(self, q: Question, twin: dict[str, Any], gold: str | None,
                    where: _Where) -> None:
        """The open question asks what its MCQ twin asks, with the same gold."""
        where.item = q.meta["base_question_id"]
        theirs = str(twin.get("question"))
        if q.text != theirs:
            self._inconsistent(where, "the open question differs from its MCQ twin's "
                               f"({q.text!r} vs {theirs!r})", "question")
        if gold is not None and not same_gold(q.answer, gold):
            self._inconsistent(where, f"the open gold {q.answer!r} is not its MCQ twin's "
                               f"gold option {gold!r}", "answer")

    def _inconsistent(self, where: _Where, problem: str, field: str) -> None:
        self.inconsistencies.report(problem, file=where.file, item=where.item, field=field)

    # -- questions --------------------------------------------------------------------------

    def _common(self, qa: dict[str, Any], k: int, task: str, rounds: dict[str, tuple[int, int]],
                sessions: list[Session], where: _Where) -> dict[str, Any]:
        base = self._base_id(qa, k, task, where)
        text = _str(qa, "question", where, "question")
        xs, ys = self._point(qa, where)
        cells = [f"{x}_{y}" for x in xs for y in ys]
        evidence = self._clues(qa, rounds, sessions, where)
        images = self._question_images(qa, where)
        given_sessions = _str_list(qa, "session_id", where, "session_id")
        known = {s.session_id for s in sessions}
        for n, sid in enumerate(given_sessions):
            if sid not in known:
                raise where.error(f"{sid!r} names no session of this task", f"session_id[{n}]")
        meta = {"base_question_id": base, "xy_cells": cells, "task": task,
                "evidence_sessions": given_sessions}
        return {"base": base, "text": text,
                "labels": Labels.model_validate({"x": xs[0], "y": ys[0]}),
                "ability": Y_ABILITY[ys[0]], "subtype": cells[0], "evidence": evidence,
                "images": images, "meta": meta}

    def _finish(self, q: Question, sessions: list[Session]) -> Question:
        labels = inferred_labels(q, sessions)
        q.labels = labels.model_copy(update={"x": q.labels.x, "y": q.labels.y})
        return q

    def _mcq(self, qa: dict[str, Any], k: int, task: str, rounds: dict[str, tuple[int, int]],
             sessions: list[Session], where: _Where) -> tuple[list[Question], str]:
        """The question's rotations, and its gold text (what its open twin must answer)."""
        c = self._common(qa, k, task, rounds, sessions, where)
        rotations = self._rotations(qa, where)
        gold_text = self._gold_text(qa, rotations, where)
        out = []
        for n, (letters, texts, gold) in enumerate(rotations, start=1):
            lines = "\n".join(f"{letter}. {t}" for letter, t in zip(letters, texts, strict=True))
            text = (f"{c['text']}\n\n{lines}\n\n"
                    + MCQ_INSTRUCTION.format(letters=", ".join(letters)))
            q = Question(question_id=f"{c['base']}:r{n}", text=text, answer=gold,
                         answer_type=AnswerType.MCQ, ability=c["ability"], subtype=c["subtype"],
                         labels=c["labels"], evidence=c["evidence"], options=texts,
                         images=c["images"],
                         meta={**c["meta"], "rotation": n, "rotations": len(rotations),
                               "measure": Measure.LETTER.value,
                               "gold_option": texts[letters.index(gold)]})
            out.append(self._finish(q, sessions))
        return out, gold_text

    def _open(self, qa: dict[str, Any], k: int, task: str, rounds: dict[str, tuple[int, int]],
              sessions: list[Session], where: _Where, base: str) -> Question:
        c = self._common(qa, k, task, rounds, sessions, where)
        own = c["base"]
        c["base"] = where.item = base  # its MCQ twin's, when it has one
        c["meta"]["base_question_id"] = base
        if own != base:
            c["meta"]["source_question_id"] = own
        if qa.get("options"):
            raise where.error("an open question has options (is this the MCQ file?)",
                              "options")
        answer = _str(qa, "answer", where, "answer")
        assert answer is not None
        q = Question(question_id=f"{c['base']}:open", text=c["text"], answer=answer,
                     answer_type=AnswerType.FREE_TEXT, ability=c["ability"],
                     subtype=c["subtype"], labels=c["labels"], evidence=c["evidence"],
                     images=c["images"], meta={**c["meta"], "measure": Measure.JUDGE.value})
        return self._finish(q, sessions)

    @staticmethod
    def _point(qa: dict[str, Any], where: _Where) -> tuple[list[str], list[str]]:
        point = qa.get("point")
        shape = "expected [[X…], [Y…]]"
        if point is None:
            raise where.error("missing required field", "point")
        if type(point) is not list or len(point) != 2:
            raise where.error(f"{shape}, got {type_name(point)}", "point")
        axes = []
        for n, (axis, levels) in enumerate(zip(point, (X_LEVELS, Y_LEVELS), strict=True)):
            values = [axis] if type(axis) is str else axis
            if type(values) is not list or not values:
                raise where.error(f"{shape}, got {type_name(axis)} at point[{n}]", f"point[{n}]")
            for v in values:
                if v not in levels:
                    raise where.error(f"{v!r} is not one of {', '.join(levels)}", f"point[{n}]")
            axes.append(list(dict.fromkeys(values)))
        return axes[0], axes[1]

    @staticmethod
    def _clues(qa: dict[str, Any], rounds: dict[str, tuple[int, int]], sessions: list[Session],
               where: _Where) -> list[EvidenceRef]:
        clues = _str_list(qa, "clue", where, "clue")
        for n, rid in enumerate(clues):
            if rid not in rounds:
                raise where.error(f"{rid!r} names no round of this task", f"clue[{n}]")
        ordered = sorted(dict.fromkeys(clues), key=rounds.__getitem__)
        return [EvidenceRef(session_id=sessions[rounds[rid][0]].session_id, turn_id=rid)
                for rid in ordered]

    def _question_images(self, qa: dict[str, Any], where: _Where) -> list[ImageRef]:
        paths = (_str_list(qa, "question_image", where, "question_image")
                 + _str_list(qa, "question_images", where, "question_images"))
        key = "question_image_caption" if qa.get("question_image_caption") is not None \
            else "image_caption"
        captions = _str_list(qa, key, where, key)
        if captions and len(captions) != len(paths):
            raise where.error(f"{len(captions)} caption(s) for {len(paths)} question image(s)",
                              key)
        return [self.images.resolve(p, captions[n] if captions else None, where,
                                    f"question_image[{n}]") for n, p in enumerate(paths)]

    def _rotations(self, qa: dict[str, Any],
                   where: _Where) -> list[tuple[list[str], list[str], str]]:
        """(letters, option texts, gold letter) per rotation, from either option shape."""
        options = qa.get("options")
        if options is None or options == [] or options == {}:
            raise where.error("an MCQ question needs options", "options")
        if type(options) is dict:  # the legacy shape: the gold letter is the QA's answer
            shapes = [(options, _str(qa, "answer", where, "answer"), "options", "answer")]
        elif type(options) is list:
            shapes = []
            for n, rot in enumerate(options):
                if type(rot) is not dict:
                    raise where.error(f"expected a rotation object, got {type_name(rot)}",
                                      f"options[{n}]")
                letters = {k: v for k, v in rot.items() if k != "answer"}
                shapes.append((letters, _str(rot, "answer", where, f"options[{n}].answer"),
                               f"options[{n}]", f"options[{n}].answer"))
        else:
            raise where.error(f"expected a dict or a list of rotations, got "
                              f"{type_name(options)}", "options")
        out = []
        for letters_map, gold, field, gold_field in shapes:
            letters = sorted(letters_map)
            if len(letters) < 2 or any(not _LETTER.match(k) for k in letters):
                raise where.error("options need two or more single-letter keys (A, B, …), got "
                                  f"{', '.join(map(repr, letters))}", field)
            texts = []
            for letter in letters:
                t = letters_map[letter]
                if type(t) not in (str, int, float) or type(t) is bool:
                    raise where.error(f"expected str, got {type_name(t)}", f"{field}.{letter}")
                texts.append(str(t))
            gold = (gold or "").strip().upper()
            if gold not in letters:
                raise where.error(f"gold letter {gold!r} is not one of the options "
                                  f"({', '.join(letters)})", gold_field)
            self._check_options(letters, texts, len(out[0][0]) if out else None, where, field)
            out.append((letters, texts, gold))
        return out

    def _check_options(self, letters: list[str], texts: list[str], first: int | None,
                       where: _Where, field: str) -> None:
        """One rotation's options: no text twice (two letters would both be right, or
        both wrong), and as many as the first rotation's (a 2-option rotation among
        4-option ones has another chance level)."""
        seen: dict[tuple[str, ...], str] = {}
        for letter, text in zip(letters, texts, strict=True):
            key = tuple(_words(text)) or (text,)
            if key in seen:
                self._inconsistent(where, f"options {seen[key]} and {letter} have the same "
                                   f"text {text!r}", field)
            seen.setdefault(key, letter)
        if first is not None and len(letters) != first:
            self._inconsistent(where, f"{len(letters)} options where the first rotation has "
                               f"{first}", field)

    def _gold_text(self, qa: dict[str, Any], rotations: list[tuple[list[str], list[str], str]],
                   where: _Where) -> str:
        """The text every rotation's gold letter must point at: the QA's own ``answer``
        when it is a text (the release's rotation lists carry one), else the first
        rotation's gold option."""
        golds = [texts[letters.index(gold)] for letters, texts, gold in rotations]
        stated = qa.get("answer") if type(qa.get("options")) is list else None
        textual = type(stated) in (str, int, float) and type(stated) is not bool \
            and not _LETTER.match(str(stated).strip().upper())
        want = str(stated) if textual else golds[0]
        for n, (gold, (_, _, letter)) in enumerate(zip(golds, rotations, strict=True)):
            if textual and not same_gold(gold, want):
                self._inconsistent(where, f"gold letter {letter} points at {gold!r}, not "
                                   f"the gold {want!r}", f"options[{n}].answer")
            elif not textual and _words(gold) != _words(want):
                self._inconsistent(where, f"rotation {n + 1}'s gold {gold!r} differs from "
                                   f"rotation 1's {want!r}", f"options[{n}].answer")
        return want

    # -- manifest ---------------------------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        inputs = {str(p): file_sha256(p) for p in self.files()}
        if self.opts.question_ids:
            inputs[str(self.opts.question_ids)] = file_sha256(self.opts.question_ids)
        out: dict[str, Any] = {"name": self.name, "version": self.version,
                               "tier": self.opts.tier, "inputs": inputs,
                               "image_dir": str(self.root), "counts": dict(self._counts),
                               "pairing": dict(self.pairing), **self.settings,
                               **self.inconsistencies.manifest()}
        if self.keep is not None:
            out["subset"] = {"file": str(self.opts.question_ids), "ids": len(self.keep)}
        return out


@benchmark("memeye", judge_rubric="memeye")
def memeye(opts: BenchmarkOptions) -> MemEyeBenchmark:
    """MemEye: a release folder, its dialog folder, or one task's dialog file."""
    return MemEyeBenchmark(opts)
