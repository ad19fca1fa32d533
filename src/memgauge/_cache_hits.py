"""How many of a run folder's answers came from the response cache, read off its records.

The model's side: ``response.cached`` of each ok record (the latest record per question, so
the count covers every invocation that answered into the folder). The judge's side:
``meta.judge_cache[<judge name>]``, the cache lookups the judge made for that record
(``{"hits": h, "misses": m}``); a verdict came from the cache when it looked up at least
once and missed never. A record written before a field existed says nothing: it is counted
as unknown, never as a miss.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class JudgeHits:
    judged: int = 0  # records carrying this judge's score
    from_cache: int = 0  # of them, every judge call served from the cache
    unknown: int = 0  # judged records that do not say (judged by an earlier memgauge)
    hits: int = 0  # lookups over the folder (verdicts, extraction, labels)
    lookups: int = 0


@dataclass
class CacheHits:
    answers: int = 0  # ok records
    from_cache: int = 0
    unknown: int = 0  # ok records that do not say
    judges: dict[str, JudgeHits] = field(default_factory=dict)

    def add(self, status: Any, cached: bool | None, scores: Iterable[str],
            judge_cache: Any) -> None:
        """One record: its status, ``response.cached`` (None when the record lacks it), its
        score names and ``meta.judge_cache``."""
        if status != "ok":
            return
        self.answers += 1
        if cached is None:
            self.unknown += 1
        elif cached:
            self.from_cache += 1
        for name in scores:
            if "judge" in name:
                self._add_judge(name, judge_cache)

    def _add_judge(self, name: str, judge_cache: Any) -> None:
        j = self.judges.get(name)
        if j is None:
            j = self.judges[name] = JudgeHits()
        j.judged += 1
        use = judge_cache.get(name) if isinstance(judge_cache, Mapping) else None
        if not isinstance(use, Mapping):
            j.unknown += 1
            return
        hits, misses = _count(use.get("hits")), _count(use.get("misses"))
        j.hits += hits
        j.lookups += hits + misses
        j.from_cache += hits > 0 and misses == 0

    def add_raw(self, obj: dict[str, Any]) -> None:
        """A record as parsed JSON (the runner's cheap pass over records.jsonl: this runs
        once per record at the end of every run, so it reads only what it needs)."""
        if obj.get("status") != "ok":
            return
        response = obj.get("response")
        cached = response.get("cached") if type(response) is dict else None
        scores = obj.get("scores")
        if not scores or type(scores) is not dict:
            self.answers += 1
            if cached is None:
                self.unknown += 1
            elif cached:
                self.from_cache += 1
            return
        meta = obj.get("meta")
        self.add("ok", None if cached is None else bool(cached), scores,
                 meta.get("judge_cache") if type(meta) is dict else None)

    def add_record(self, rec: Any) -> None:
        """A :class:`~memgauge.schema.Record` read from a folder."""
        response = rec.response
        cached = response.cached if "cached" in response.model_fields_set else None
        self.add(rec.status, cached, rec.scores, rec.meta.get("judge_cache"))

    def to_dict(self) -> dict[str, Any]:
        return {"answers": self.answers, "from_cache": self.from_cache,
                "unknown": self.unknown,
                "judges": {name: asdict(j) for name, j in sorted(self.judges.items())}}

    @classmethod
    def from_dict(cls, data: Any) -> CacheHits | None:
        """The manifest's ``cache_hits`` (None when absent or not readable)."""
        if not isinstance(data, Mapping):
            return None
        try:
            judges = {str(k): JudgeHits(**v) for k, v in (data.get("judges") or {}).items()}
            return cls(answers=int(data["answers"]), from_cache=int(data["from_cache"]),
                       unknown=int(data.get("unknown", 0)), judges=judges)
        except (KeyError, TypeError, ValueError):
            return None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def count_records(records: Iterable[Any]) -> CacheHits:
    hits = CacheHits()
    for rec in records:
        hits.add_record(rec)
    return hits


def describe_hits(hits: CacheHits, *, answers: bool = True) -> list[str]:
    """Sentences for a summary or report: the model's answers first (unless ``answers`` is
    False: a run whose answers no cache could serve), then each judge."""
    lines = [f"{hits.from_cache} of {hits.answers} answers came from the response cache"
             + (f" ({hits.unknown} records do not say: written before memgauge recorded it)"
                if hits.unknown else "")] if answers else []
    return lines + [describe_judge(name, j) for name, j in sorted(hits.judges.items())]


def answers_cacheable(identity: Mapping[str, Any]) -> bool:
    """Whether a run's answers could come from the response cache: its system asks the run's
    model (as it declares, design 0043), and there is one. A memory service (http://) or an
    oracle sends memgauge's cache nothing, so "0 of N from the cache" would say nothing."""
    from .errors import ConfigError
    from .registry import NEEDS_MODEL, registration

    model = str(identity.get("model") or "")
    options = identity.get("system_options")
    try:
        declared = registration("system", str(identity.get("system") or "")).needs
    except ConfigError:  # a plugin not installed here: say what the records say
        return True
    needs = declared(options if isinstance(options, dict) else {})
    return NEEDS_MODEL in needs and not model.startswith("none:")


def describe_judge(name: str, j: JudgeHits) -> str:
    line = f"{name}: {j.from_cache} of {j.judged} verdicts came from the cache"
    if j.lookups:
        line += f" ({j.hits} of {j.lookups} judge calls)"
    if j.unknown:
        line += f"; {j.unknown} judged before memgauge recorded it: unknown"
    return line


def use_entry(hits: int, misses: int) -> dict[str, int]:
    """What ``meta.judge_cache[<name>]`` holds."""
    return {"hits": hits, "misses": misses}
