"""The Benchmark protocol, its options, and the field checks loaders share (file reading is in
``memgauge.io``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import InputError
from ..schema import Episode, Labels, Question, Session


@dataclass(frozen=True)
class BenchmarkOptions:
    """What the command line gives a benchmark factory."""

    data: str
    image_dir: str | None = None
    allow_missing_images: bool = False
    # --allow-inconsistent: gold that contradicts itself is a warning in the manifest, not
    # an error (see Inconsistencies)
    allow_inconsistent: bool = False
    question_ids: str | None = None  # a file listing question ids to keep (a subset)
    tier: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # --bench-option key=value
    protocol: str = "online"  # --protocol: a loader may refuse one its data cannot honour


class Inconsistencies:
    """Gold that contradicts itself (a rotation's letter off its gold text, an open twin
    with another gold, an evidence pointer to no turn, ...): each a named error, or with
    ``--allow-inconsistent`` a warning per question, kept for the run manifest."""

    HINT = "; pass --allow-inconsistent to load it anyway, with a warning in the manifest"

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.found: list[dict[str, str | None]] = []

    def report(self, problem: str, *, file: str, item: str | None,
               field: str | None) -> None:
        if not self.allow:
            raise InputError(problem + self.HINT, file=file, item=item, field=field)
        self.found.append({"file": file, "item": item, "field": field, "problem": problem})

    def manifest(self) -> dict[str, object]:
        """What the run manifest keeps: nothing unless --allow-inconsistent was given."""
        return {"inconsistencies": list(self.found)} if self.allow else {}


@runtime_checkable
class Benchmark(Protocol):
    """A source of episodes, streamed.

    Example::

        @benchmark("mine")
        def mine(opts: BenchmarkOptions) -> Benchmark:
            return MyBench(opts.data)

        class MyBench:
            name = "mine"
            def episodes(self): yield from parse(self.path)
            def manifest(self): return {"name": "mine", "inputs": {...}}
    """

    name: str

    def episodes(self) -> Iterator[Episode]: ...

    def manifest(self) -> dict[str, Any]: ...


# What a benchmark may offer beyond :class:`Benchmark`; the runner asks with isinstance
# (without it: the behaviour each one names). Design 0045.

@runtime_checkable
class TakesOptions(Protocol):
    """Takes ``--bench-option`` keys: each key and its allowed values (() for any). Without
    it, any option given is refused before the first request."""

    options: dict[str, tuple[str, ...]]


@runtime_checkable
class QuestionCounting(Protocol):
    """Knows its question count before reading everything (the progress total); None
    when it cannot. Without it: counted as the input is read."""

    def question_count(self) -> int | None: ...


@runtime_checkable
class PartReading(Protocol):
    """Reads one part of its input, ``part=(k, n)`` (the k-th of n by position), for the
    worker processes, and counts what that part held (``stats``). ``supports_parts`` says
    whether this instance can. Without it, every worker reads everything and keeps its
    share."""

    supports_parts: bool

    def episodes(self, part: tuple[int, int] | None = None) -> Iterator[Episode]: ...

    def stats(self) -> dict[str, Any]: ...


def inferred_labels(question: Question, sessions: list[Session]) -> Labels:
    """``question``'s labels with the image dependency inferred from its evidence: every
    evidence turn carries an image → ``essential``; some do → ``mixed``; none → ``text``.
    A session-level pointer stands for the whole session (an image anywhere in it counts).
    Without evidence pointers it stays unknown (None). Marked as inferred: the data says
    where the answer is, not which of the turn's text or image holds it."""
    if question.labels.image_dependency is not None:  # the data's own label wins
        return question.labels
    by_id = {s.session_id: s for s in sessions}
    bearing: list[bool] = []
    for ref in question.evidence:
        session = by_id.get(ref.session_id)
        if session is None:
            continue
        turns = [t for t in session.turns if ref.turn_id is None or t.turn_id == ref.turn_id]
        if turns:
            bearing.append(any(t.images for t in turns))
    if not bearing:
        return question.labels
    dep = "essential" if all(bearing) else "mixed" if any(bearing) else "text"
    return question.labels.model_copy(update={"image_dependency": dep,
                                              "image_dependency_inferred": True})


# Shared field checks: loaders call these so every error names file, item and field.

def require(obj: dict[str, Any], key: str, typ: type | tuple[type, ...], *, file: str,
            item: str) -> Any:
    if key not in obj:
        raise InputError("missing required field", file=file, item=item, field=key)
    value = obj[key]
    if not isinstance(value, typ):
        want = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise InputError(f"expected {want}, got {type(value).__name__}", file=file, item=item,
                         field=key)
    return value


def optional(obj: dict[str, Any], key: str, typ: type | tuple[type, ...], *, file: str,
             item: str, default: Any = None) -> Any:
    if obj.get(key) is None:
        return default
    return require(obj, key, typ, file=file, item=item)
