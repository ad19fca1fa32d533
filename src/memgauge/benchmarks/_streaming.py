"""Streaming one-item-per-episode benchmark files, and the session parsing the MemLens-family
loaders share (MemLens, LongMemEval; LoCoMo builds its objects with the fast builders).
Moved out of benchmarks/memlens.py (issue 26 §1), since other loaders use it."""

from __future__ import annotations

import abc
import gc
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import HashingReader, RawItem, file_sha256, iter_json_items, read_id_list
from ..media import ImageResolver
from ..schema import BenchmarkInfo, Episode, ImageRef, Session, Turn
from ._base import BenchmarkOptions, require
from ._parse import type_name

# The default loader version of a streaming benchmark (MemLens's; a loader may set its own).
LOADER_VERSION = "1"

_TIER_RE = re.compile(r"(?<![0-9a-z])(\d+k)(?![a-z])")


# ---------------------------------------------------------------------------------------------
# Fast construction of the numerous objects. Equivalent to ``Model.model_construct`` with every
# field given (the schema models have no aliases, private attributes or post-init hooks), at a
# third of the cost: the 256K tier builds ~380,000 turns.
#
# The objects of one class share one ``__pydantic_fields_set__`` (a copy per turn cost ~0.2 s
# on the 256K tier, in allocation and freeing): every field is set, so the one change pydantic
# makes in place, adding an assigned field's name, changes nothing, and any other change is
# refused, so that no object can change another's (see _AllFieldsSet).


class _AllFieldsSet(set):
    """The fields set shared by the loader-built objects of one class (all fields set).

    Adding a name already in it is what pydantic does on assignment: allowed, a no-op. Any
    change that would make it differ raises. Copies (``model_copy`` copies before updating)
    and pickles are plain sets."""

    __slots__ = ()

    def add(self, name: Any) -> None:
        if name not in self:
            self._refuse()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this fields set is shared by every loaded object of its class; "
                        "copy it before changing it")

    discard = remove = pop = clear = update = _refuse
    intersection_update = difference_update = symmetric_difference_update = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse

    def __copy__(self) -> set[Any]:
        return set(self)

    def __deepcopy__(self, memo: Any) -> set[Any]:
        return set(self)

    def __reduce__(self) -> Any:
        return (set, (list(self),))


def _plain(cls: type, fields: tuple[str, ...]) -> bool:
    """Whether ``cls`` has exactly ``fields`` and none of the pydantic features the fast
    builder skips (post-init, private attributes, a root model, extra fields, aliases)."""
    return (set(cls.model_fields) == set(fields)  # type: ignore[attr-defined]
            and not cls.__pydantic_post_init__  # type: ignore[attr-defined]
            and not cls.__private_attributes__  # type: ignore[attr-defined]
            and not cls.__pydantic_root_model__  # type: ignore[attr-defined]
            and cls.model_config.get("extra") != "allow"  # type: ignore[attr-defined]
            and not any(f.alias or f.validation_alias
                        for f in cls.model_fields.values()))  # type: ignore[attr-defined]


def _fast_builder(cls: type, fields: tuple[str, ...]) -> Callable[[dict[str, Any]], Any]:
    """A constructor taking a dict with exactly ``fields``. Falls back to ``model_construct``
    (which fills defaults) if the model's fields or features ever differ from what this
    shortcut assumes (:func:`_plain`)."""
    if not _plain(cls, fields):  # pragma: no cover - guards a future schema change
        return lambda values: cls.model_construct(**values)  # type: ignore[attr-defined]
    new, set_dict, set_fields, set_extra, set_private = _parts(cls)
    fieldset = _AllFieldsSet(fields)  # shared by every object built here

    def build(values: dict[str, Any]) -> Any:
        obj = new(cls)
        set_dict(obj, values)
        set_fields(obj, fieldset)
        set_extra(obj, None)
        set_private(obj, None)
        return obj

    return build


def _parts(cls: type) -> tuple[Any, ...]:
    """``cls.__new__`` and the setters of the four slots ``model_construct`` fills, taken
    straight from BaseModel's slot descriptors (cheaper than ``object.__setattr__``)."""
    def setter(name: str) -> Any:
        for klass in cls.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name].__set__
        raise AttributeError(name)  # pragma: no cover

    return (cls.__new__, setter("__dict__"), setter("__pydantic_fields_set__"),
            setter("__pydantic_extra__"), setter("__pydantic_private__"))


TURN_FIELDS = ("turn_id", "role", "text", "images", "speaker", "meta")
build_turn = _fast_builder(Turn, TURN_FIELDS)
build_session = _fast_builder(Session, ("session_id", "date", "turns", "meta"))
build_image = _fast_builder(ImageRef, ("source", "path", "url", "sha256", "width", "height",
                                       "captions", "missing", "meta"))
# parse_turns inlines build_turn when the shortcut applies.
_TURN_PARTS = _parts(Turn) if _plain(Turn, TURN_FIELDS) else None
_NO_TURN_PARTS: tuple[Any, ...] = (None,) * 5  # never called: parse_turns checks ``fast``
_TURN_FIELD_SET = _AllFieldsSet(TURN_FIELDS)  # shared by every turn




# ---------------------------------------------------------------------------------------------
# Shared by the MemLens-family loaders (MemLens, LongMemEval).

class ItemContext:
    """What a loader needs while parsing one item: where it is, and how to resolve images."""

    __slots__ = ("file", "images", "item", "missing", "missing_list", "resolver")

    def __init__(self, file: str, resolver: ImageResolver | None) -> None:
        self.file = file
        self.item = ""
        self.resolver = resolver
        self.images = 0
        self.missing = 0
        self.missing_list: list[dict[str, Any]] = []

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, file=self.file, item=self.item, field=field)


_TURN_IDS: dict[int, list[str]] = {}
_TURN_IDS_MAX = 4096  # cache ids ("S3:7") for sessions/turns up to this number


def _turn_ids(sess_no: int, n: int) -> list[str]:
    """At least ``n`` turn ids ``S{sess_no}:1``, ``S{sess_no}:2``, …, shared between items
    (every item of a tier has the same shape, so each id string is built once per run)."""
    if sess_no > _TURN_IDS_MAX or n > _TURN_IDS_MAX:
        return [f"S{sess_no}:{j}" for j in range(1, n + 1)]
    ids = _TURN_IDS.get(sess_no)
    if ids is None:
        ids = _TURN_IDS[sess_no] = []
    if len(ids) < n:
        ids.extend(f"S{sess_no}:{j}" for j in range(len(ids) + 1, n + 1))
    return ids


def parse_turns(turns: Any, sess_no: int, field: str, ctx: ItemContext,
                answer_turns: list[str] | None = None) -> list[Turn]:
    """Check and convert one session's list of turns. ``field`` names the list in errors.

    With ``answer_turns`` given, the ids of turns marked ``has_answer: true`` are appended.
    """
    if type(turns) is not list:
        raise ctx.error(f"expected a list of turns, got {type_name(turns)}", field)
    out: list[Turn] = []
    append = out.append
    resolver = ctx.resolver
    # Inlined build_turn (see _fast_builder): this loop runs ~380,000 times on the 256K tier.
    # A turn's position (for error fields) is len(out).
    fast = _TURN_PARTS is not None
    new, set_dict, set_fields, set_extra, set_private = _TURN_PARTS or _NO_TURN_PARTS
    fieldset = _TURN_FIELD_SET
    # the shared turn-id list is at least as long as the turns
    for turn_id, turn in zip(_turn_ids(sess_no, len(turns)), turns, strict=False):
        if type(turn) is not dict:
            raise ctx.error(f"expected a turn object, got {type_name(turn)}",
                            f"{field}[{len(out)}]")
        role = turn.get("role")
        if role != "user" and role != "assistant":
            if "role" not in turn:
                raise ctx.error("missing required field", f"{field}[{len(out)}].role")
            raise ctx.error(f"role must be 'user' or 'assistant', got {role!r}",
                            f"{field}[{len(out)}].role")
        text = turn.get("content")
        if type(text) is not str:
            if text is None:
                text = ""
            else:
                raise ctx.error(f"expected str, got {type_name(text)}",
                                f"{field}[{len(out)}].content")
        entries = turn.get("images")
        if entries:
            images = _resolve_images(entries, f"{field}[{len(out)}].images", ctx, resolver)
        elif entries is None or type(entries) is list:
            images = []
        else:
            raise ctx.error(f"expected a list of images, got {type_name(entries)}",
                            f"{field}[{len(out)}].images")
        if answer_turns is not None and turn.get("has_answer") is True:
            answer_turns.append(turn_id)
            meta: dict[str, Any] = {"has_answer": True}
        else:
            meta = {}
        values = {"turn_id": turn_id, "role": role, "text": text, "images": images,
                  "speaker": None, "meta": meta}
        if fast:
            obj = new(Turn)
            set_dict(obj, values)
            set_fields(obj, fieldset)
            set_extra(obj, None)
            set_private(obj, None)
        else:  # pragma: no cover - the schema changed; model_construct fills new defaults
            obj = build_turn(values)
        append(obj)
    return out


def _resolve_images(entries: Any, field: str, ctx: ItemContext,
                    resolver: ImageResolver | None) -> list[ImageRef]:
    if type(entries) is not list:
        raise ctx.error(f"expected a list of images, got {type_name(entries)}", field)
    if resolver is None:  # pragma: no cover - every family loader passes one
        raise ctx.error("images are not supported here", field)
    images = resolver.resolve_list(entries, file=ctx.file, item=ctx.item, field=field)
    for ref in images:
        if ref.missing:
            ctx.missing += 1
            ctx.missing_list.append({"item": ctx.item, "source": ref.source,
                                     "problem": ref.meta.get("problem")})
    ctx.images += len(images)
    return images


def parse_sessions(item: dict[str, Any], ctx: ItemContext, session_ids: list[str] | None = None,
                   answer_turns: list[tuple[str, str]] | None = None) -> list[Session]:
    """``haystack_sessions`` (+ ``haystack_dates``) → sessions ``"1"``, ``"2"``, … (or the
    given ``session_ids``). Each entry is a list of turns or ``{"date", "session"}``."""
    sessions = require(item, "haystack_sessions", list, file=ctx.file, item=ctx.item)
    dates = item.get("haystack_dates")
    if dates is None:
        dates = []
    elif type(dates) is not list:
        raise ctx.error(f"expected list, got {type_name(dates)}", "haystack_dates")
    out = []
    for i, entry in enumerate(sessions):
        field = f"haystack_sessions[{i}]"
        date = dates[i] if i < len(dates) else None
        if date is not None and type(date) is not str:
            raise ctx.error(f"expected str, got {type_name(date)}", f"haystack_dates[{i}]")
        if type(entry) is dict:
            if "session" not in entry:
                raise ctx.error("missing required field", f"{field}.session")
            # As the reference: an object's own date, never haystack_dates (which serves
            # bare turn lists only); without one it is shown as "unknown".
            date = entry.get("date")
            if date is not None and type(date) is not str:
                raise ctx.error(f"expected str, got {type_name(date)}", f"{field}.date")
            turns_raw = entry["session"]
            field = f"{field}.session"
        elif type(entry) is list:
            turns_raw = entry
        else:
            raise ctx.error(f"expected a list of turns or an object with 'session', got "
                            f"{type_name(entry)}", field)
        sid = session_ids[i] if session_ids is not None else str(i + 1)
        marked: list[str] | None = [] if answer_turns is not None else None
        turns = parse_turns(turns_raw, i + 1, field, ctx, marked)
        if marked:
            answer_turns.extend((sid, t) for t in marked)  # type: ignore[union-attr]
        out.append(build_session({"session_id": sid, "date": date, "turns": turns, "meta": {}}))
    return out


def guess_tier(path: str | os.PathLike[str]) -> str | None:
    """``dataset_32k.json`` → ``"32k"``; None when the name holds no tier."""
    m = _TIER_RE.search(Path(path).name.lower())
    return m.group(1) if m else None


# ---------------------------------------------------------------------------------------------

class StreamingBenchmark(abc.ABC):
    """Common streaming, subsetting and manifest logic for one-file, one-item-per-episode
    benchmarks. Subclasses set ``name`` and implement ``_parse``."""

    name = "?"
    version = LOADER_VERSION

    def __init__(self, opts: BenchmarkOptions) -> None:
        self.opts = opts
        self.path = str(opts.data)
        if not os.path.isfile(self.path):
            raise InputError("data file not found" if not os.path.exists(self.path)
                             else "expected a data file, got a directory", file=self.path)
        self.image_root = str(Path(opts.image_dir or Path(self.path).parent).resolve())
        if opts.image_dir is not None and not os.path.isdir(self.image_root):
            raise InputError("image dir not found", file=self.image_root)
        # One resolver per benchmark: each distinct image file is checked once.
        self.resolver = ImageResolver(self.image_root, allow_missing=opts.allow_missing_images)
        self.keep: set[str] | None = read_id_list(opts.question_ids) if opts.question_ids else None
        self.tier = opts.tier or self.guess_tier(self.path)
        self.info = BenchmarkInfo(name=self.name, tier=self.tier)
        self._sha: str | None = None
        self._reader: HashingReader | None = None  # the last pass's: its digest, if stopped
        self._counts = {"episodes": 0, "questions": 0, "images": 0, "missing_images": 0}
        self._missing: list[dict[str, Any]] = []

    @staticmethod
    def guess_tier(path: str) -> str | None:
        return guess_tier(path)

    @abc.abstractmethod
    def _parse(self, raw: Any, index: int, ctx: ItemContext) -> Episode | None:
        """One raw item to an Episode (None to skip it, e.g. outside the id subset)."""

    # episodes(part=(k, n)) parses only items k, k+n, k+2n, ... (the runner's workers)
    supports_parts = True

    def episodes(self, part: tuple[int, int] | None = None) -> Iterator[Episode]:
        """The episodes in file order. With ``part=(k, n)`` only items whose index is k
        modulo n are converted; the others are still read (their ids are checked for
        duplicates and against the id list, so every part raises what a whole pass would),
        and ``stats()`` then counts this part's items only."""
        ctx = ItemContext(self.path, self.resolver)
        counts = {"episodes": 0, "questions": 0, "images": 0, "missing_images": 0}
        self._counts, self._missing, self._sha = counts, ctx.missing_list, None
        seen: dict[str, int] = {}  # question id -> index of its item
        keep = self.keep
        reader = HashingReader(self.path)
        self._reader = reader  # its background digest serves manifest() if we stop early
        try:
            skip = None if part is None else (lambda i: i % part[1] != part[0])
            items = iter_json_items(reader, skip)

            def note_id(qid: str, index: int) -> None:
                first = seen.setdefault(qid, index)
                if first != index:
                    raise InputError(f"duplicate question_id {qid!r}: items #{first} and "
                                     f"#{index} both have it", file=self.path,
                                     item=f"#{index}", field="question_id")

            while True:
                # Reading and converting one item makes ~3,000 acyclic containers per 500
                # turns; the cyclic collector would walk them over and over (~20 % of the
                # time on the 256K tier). It is paused only while this generator runs, never
                # while the consumer does.
                paused = gc.isenabled()
                if paused:
                    gc.disable()
                try:
                    got = next(items, None)
                    if got is None:
                        break
                    index, raw = got
                    if skip is not None and skip(index):  # another part's item: its id only
                        qid = raw.get("question_id") if type(raw) in (dict, RawItem) else None
                        # a malformed item is reported by the part that owns it
                        if type(qid) is str and (keep is None or qid in keep):
                            note_id(qid, index)
                        continue
                    ep = self._parse(raw, index, ctx)
                    del raw
                finally:
                    if paused:
                        gc.enable()
                if ep is None:
                    continue
                note_id(ep.episode_id, index)
                counts["episodes"] += 1
                counts["questions"] += len(ep.questions)
                counts["images"] = ctx.images
                counts["missing_images"] = ctx.missing
                yield ep
            self._sha = reader.hexdigest() if part is None else None
        finally:
            reader.close()
        if keep is not None:
            absent = sorted(keep - seen.keys())
            if absent:
                shown = ", ".join(absent[:20]) + (f" … ({len(absent)} in all)"
                                                  if len(absent) > 20 else "")
                raise InputError(f"{len(absent)} question id(s) in the id list are not in the "
                                 f"data: {shown}", file=self.opts.question_ids)

    def stats(self) -> dict[str, Any]:
        """What the last pass counted: ``counts``, and ``missing_images`` (the list)."""
        return {"counts": dict(self._counts), "missing_images": list(self._missing)}

    def manifest(self) -> dict[str, Any]:
        if self._sha is None:  # iteration did not finish: use (or wait for) the background hash
            reader = self._reader
            self._sha = reader.hexdigest() if reader is not None else file_sha256(self.path)
        inputs = {self.path: self._sha}
        if self.opts.question_ids:
            inputs[str(self.opts.question_ids)] = file_sha256(self.opts.question_ids)
        out: dict[str, Any] = {
            "name": self.name,
            "version": self.version,
            "tier": self.tier,
            "inputs": inputs,
            "image_dir": self.image_root,
            "counts": dict(self._counts),
        }
        if self.keep is not None:
            out["subset"] = {"file": str(self.opts.question_ids), "ids": len(self.keep)}
        if self.opts.allow_missing_images:
            out["missing_images"] = list(self._missing)
        return out
