"""Load a generated benchmark folder (our own episode format) as a Benchmark."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...media import ImageResolver
from ...registry import benchmark
from ...schema import Episode
from .._base import BenchmarkOptions, HashingReader, iter_json_items


class SynthBenchmark:
    name = "synth"

    def __init__(self, opts: BenchmarkOptions) -> None:
        data = Path(opts.data)
        if data.is_dir():
            manifest = data / "manifest.json"
            if not manifest.exists():
                raise InputError("not a generated benchmark folder (no manifest.json)",
                                 file=str(data))
            tiers = list(json.loads(manifest.read_text(encoding="utf-8"))["tiers"])
            tier = opts.tier or (tiers[0] if len(tiers) == 1 else None)
            if tier is None:
                raise InputError(f"this benchmark has tiers {', '.join(tiers)}: pick one with "
                                 "--tier", file=str(data))
            if tier not in tiers:
                raise InputError(f"no tier {tier!r} (have {', '.join(tiers)})", file=str(data))
            self.root, self.path, self.tier = data, data / "tiers" / tier / "episodes.jsonl", tier
        else:
            self.path = data
            self.root = data.parents[2] if data.parent.parent.name == "tiers" else data.parent
            self.tier = opts.tier or data.parent.name
        self.opts = opts
        self.resolver = ImageResolver(opts.image_dir or self.root,
                                      allow_missing=opts.allow_missing_images)
        self._digest: str | None = None
        self._counts = {"episodes": 0, "questions": 0, "images": 0}

    def episodes(self) -> Iterator[Episode]:
        reader = HashingReader(self.path)
        keep = None
        if self.opts.question_ids:
            from .._base import read_id_list

            keep = read_id_list(self.opts.question_ids)
        try:
            for index, raw in iter_json_items(reader):
                try:
                    ep = Episode.model_validate(raw)
                except Exception as exc:  # noqa: BLE001 - any failure is bad input at this line
                    raise InputError(f"not a valid episode ({exc})", file=str(self.path),
                                     item=f"line {index + 1}") from None
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


@benchmark("synth")
def synth(opts: BenchmarkOptions) -> SynthBenchmark:
    """A folder written by ``memgauge generate synth`` (``--tier`` picks the length)."""
    return SynthBenchmark(opts)
