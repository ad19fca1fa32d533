"""Load a generated benchmark folder (our own episode format) as a Benchmark."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..._json_limits import load_document
from ...errors import InputError
from ...io import HashingReader, check_ids_found, iter_json_items, read_id_list
from ...media import ImageResolver
from ...registry import benchmark
from ...schema import Episode
from .._base import BenchmarkOptions


class SynthBenchmark:
    name = "synth"

    def __init__(self, opts: BenchmarkOptions) -> None:
        data = Path(opts.data)
        if data.is_dir():
            manifest = data / "manifest.json"
            if not manifest.exists():
                raise InputError("not a generated benchmark folder (no manifest.json)",
                                 file=str(data))
            tiers = manifest_tiers(load_document(manifest, what="a benchmark manifest"),
                                   str(manifest))
            tier = opts.tier or (tiers[0] if len(tiers) == 1 else None)
            if tier is None:
                raise InputError(f"this benchmark has tiers {', '.join(tiers)}: pick one with "
                                 "--tier", file=str(data))
            if tier not in tiers:
                raise InputError(f"no tier {tier!r} (have {', '.join(tiers)})", file=str(data))
            self.root, self.path, self.tier = data, data / "tiers" / tier / "episodes.jsonl", tier
        elif not data.is_file():
            raise InputError("no such file or folder", file=str(data), field="--data")
        else:
            self.path = data
            self.root = data.parents[2] if data.parent.parent.name == "tiers" else data.parent
            self.tier = opts.tier or data.parent.name
        if not self.path.is_file():
            raise InputError("no episodes file for this tier", file=str(self.path))
        self.opts = opts
        self.resolver = ImageResolver(opts.image_dir or self.root,
                                      allow_missing=opts.allow_missing_images)
        self._digest: str | None = None
        self._counts = {"episodes": 0, "questions": 0, "images": 0}

    def episodes(self) -> Iterator[Episode]:
        reader = HashingReader(self.path)
        keep = None
        if self.opts.question_ids:
            keep = read_id_list(self.opts.question_ids)
        episode_at: dict[str, int] = {}  # id -> the line it is on, to name both of a pair
        question_at: dict[str, int] = {}
        try:
            for index, raw in iter_json_items(reader):
                try:
                    ep = Episode.model_validate(raw)
                except Exception as exc:  # noqa: BLE001 - any failure is bad input at this line
                    raise InputError(f"not a valid episode ({_why(exc)})", file=str(self.path),
                                     item=f"line {index + 1}") from None
                self._unique(episode_at, ep.episode_id, index, "episode_id", "episode")
                for k, q in enumerate(ep.questions):
                    self._unique(question_at, q.question_id, index,
                                 f"questions[{k}].question_id", "question")
                    if q.asked_after is not None and not 0 <= q.asked_after < len(ep.sessions):
                        raise InputError(f"asked_after {q.asked_after} names no session (the "
                                         f"episode has {len(ep.sessions)})",
                                         file=str(self.path), item=f"line {index + 1}",
                                         field=f"questions[{k}].asked_after")
                if keep is not None:
                    ep.questions = [q for q in ep.questions if q.question_id in keep]
                    if not ep.questions:
                        continue
                self._resolve(ep)
                self._counts["episodes"] += 1
                self._counts["questions"] += len(ep.questions)
                yield ep
            self._digest = reader.hexdigest()
        finally:
            reader.close()
        if keep is not None:
            check_ids_found(keep, set(question_at), str(self.opts.question_ids))

    def _unique(self, seen: dict[str, int], key: str, index: int, field: str,
                what: str) -> None:
        first = seen.setdefault(key, index)
        if first != index:
            raise InputError(f"duplicate {what} id {key!r}: lines {first + 1} and {index + 1} "
                             "both have it", file=str(self.path), item=f"line {index + 1}",
                             field=field)

    def _resolve(self, ep: Episode) -> None:
        for s in ep.sessions:
            for t in s.turns:
                for i, im in enumerate(t.images):
                    ref = self.resolver.resolve(im.source, file=str(self.path),
                                                item=ep.episode_id,
                                                field=f"{t.turn_id}.images[{i}]")
                    im.path, im.missing = ref.path, ref.missing
                    self._counts["images"] += 1

    def question_count(self) -> int | None:
        """The tier's question count from the generator's manifest (None without one, or
        under --question-ids): the progress bar's total before reading."""
        if self.opts.question_ids:
            return None
        import json

        try:
            tiers = json.loads((self.root / "manifest.json").read_text(encoding="utf-8"))["tiers"]
            count = tiers[self.tier]["questions"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return count if isinstance(count, int) else None

    def manifest(self) -> dict[str, Any]:
        digest = self._digest or HashingReader(self.path).hexdigest()
        return {"name": self.name, "loader_version": "1", "tier": self.tier,
                "inputs": {str(self.path): digest}, "counts": dict(self._counts)}


def manifest_tiers(manifest: Any, file: str) -> list[str]:
    """The tier names of a synth export's manifest, else an InputError naming the field."""
    if not isinstance(manifest, dict):
        raise InputError(f"expected an object, got {type(manifest).__name__}", file=file)
    tiers = manifest.get("tiers")
    if not isinstance(tiers, dict | list) or not tiers or \
            not all(isinstance(t, str) for t in tiers):
        raise InputError("expected a non-empty object (or list) of tier names, got "
                         f"{tiers if tiers else type(tiers).__name__!r}"[:200], file=file,
                         field="tiers")
    return list(tiers)


def _why(exc: Exception) -> str:
    """A validation failure: the first fields and what is wrong with them, on one line."""
    if not isinstance(exc, ValidationError):
        return " ".join(str(exc).split())[:300]
    parts = [f"{'.'.join(str(x) for x in e.get('loc', ())) or 'episode'}: {e.get('msg', '?')}"
             for e in exc.errors()[:3]]
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


@benchmark("synth")
def synth(opts: BenchmarkOptions) -> SynthBenchmark:
    """A folder written by ``memgauge generate synth`` (``--tier`` picks the length)."""
    return SynthBenchmark(opts)
