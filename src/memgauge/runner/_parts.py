"""What a run split into parts shares, in forked workers (``_workers.py``) or Ray tasks
(``_ray.py``): a part's benchmark counts, merging those and the cache's counts into the
final manifest, hashing the inputs on the driver meanwhile, and judging afterwards what
earlier invocations answered without this judge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..benchmarks._base import PartReading
from ..cache import ResponseCache
from ..models import aclose_if_closable
from ._manifest import package_versions

if TYPE_CHECKING:
    from ._execute import Runner
    from ._setup import Setup


def part_stats(setup: Setup) -> dict[str, Any] | None:
    """What a part reports of its benchmark: its counts (a loader that reads parts), else the
    whole manifest."""
    bench = setup.bench
    if isinstance(bench, PartReading) and bench.supports_parts:
        return {"part": True, **bench.stats()}
    # every worker read the whole file: any one worker's manifest describes the run
    return {"part": False, "manifest": setup.bench.manifest()}


def hash_inputs(s: Setup, out: dict[str, Any]) -> None:
    """Into ``out``: package versions and the benchmark's manifest (hashing the inputs), on
    the driver's thread while the parts answer."""
    out["packages"] = package_versions()
    bench = s.bench
    if isinstance(bench, PartReading) and bench.supports_parts:
        try:
            out["manifest"] = s.bench.manifest()  # hashes the inputs (counts come from workers)
        except Exception:  # noqa: BLE001 - the manifest keeps what it had
            out["manifest"] = None


def merge_bench_manifest(parent: dict[str, Any] | None,
                         reports: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's benchmark manifest from the driver's hashes and the parts' counts."""
    stats = [r.get("stats") or {} for r in reports]
    if not stats or not all(st.get("part") for st in stats):
        return (stats[0].get("manifest") if stats else None) or parent
    if parent is None:
        return None
    merged = dict(parent)
    counts: dict[str, int] = {}
    for st in stats:
        for key, value in (st.get("counts") or {}).items():
            counts[key] = counts.get(key, 0) + value
    merged["counts"] = counts
    if "missing_images" in merged:
        merged["missing_images"] = [m for st in stats for m in st.get("missing_images") or []]
    return merged


def merge_cache_stats(reports: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The response cache's hits and misses summed over the parts."""
    caches = [r["cache"] for r in reports if r.get("cache")]
    if not caches:
        return None
    return {"enabled": True,
            "hits_this_invocation": sum(c["hits_this_invocation"] for c in caches),
            "misses_this_invocation": sum(c["misses_this_invocation"] for c in caches)}


async def judge_earlier(runner: Runner, s: Setup, manifest: dict[str, Any],
                        earlier: frozenset[str]) -> None:
    """Judge what earlier invocations answered without this judge (the workers judged
    their own answers as they went)."""
    c = runner.config
    cache = ResponseCache(c.cache_path) if c.cache else None
    judging = runner.judge_pipeline(cache)
    assert judging is not None
    try:
        await runner.judge_earlier(judging, manifest, earlier)
    finally:
        await aclose_if_closable(judging.model)
        if cache is not None:
            cache.close()
