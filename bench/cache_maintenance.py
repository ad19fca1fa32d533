"""What the response cache's maintenance and hit counting cost (design 0018).

Measures, on a synthetic cache and a synthetic records.jsonl in a scratch folder:
- opening a ``ResponseCache`` (the shared use-lock and the schema check included);
- ``memgauge cache info`` (inspect_cache) and ``prune --max-size`` (deletes + VACUUM) on a
  cache of ``--entries`` replies of ``--reply-bytes`` each;
- the run's closing pass over records.jsonl with and without counting cache hits.

    python3 bench/cache_maintenance.py --entries 20000 --reply-bytes 10000 --records 20000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson


def _fill(path: Path, entries: int, reply_bytes: int) -> None:
    from memgauge.cache import ResponseCache

    cache = ResponseCache(path)
    text = "x" * reply_bytes
    with cache._lock:  # one transaction: filling is set-up, not what is measured
        cache._db.executemany("INSERT INTO responses VALUES (?, 'chat', ?, ?)",
                              ((f"k{i:08d}", orjson.dumps({"text": text}), float(i))
                               for i in range(entries)))
        cache._db.commit()
    cache.close()


def _records(path: Path, n: int) -> None:
    with open(path, "wb") as f:
        f.writelines(orjson.dumps({
            "question_id": f"q{i}", "status": "ok", "scores": {"rule": 1.0, "judge": 1.0},
            "response": {"text": "red", "cached": i % 2 == 0, "usage": {}},
            "meta": {"judge_cache": {"judge": {"hits": 1, "misses": 0}}}}) + b"\n"
            for i in range(n))


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--reply-bytes", type=int, default=10000)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    from memgauge._cache_hits import CacheHits
    from memgauge.cache import ResponseCache, inspect_cache, prune_cache
    from memgauge.runner._records import _scan_status

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "responses.sqlite"
        _fill(path, args.entries, args.reply_bytes)
        size = path.stat().st_size
        print(f"cache: {args.entries:,} entries of {args.reply_bytes:,} bytes, "
              f"{size / 1e6:.1f} MB on disk (python {sys.version.split()[0]})")
        opened = _best(lambda: ResponseCache(path).close(), args.repeats)
        print(f"open + close ResponseCache: {opened * 1e3:.2f} ms")
        info = _best(lambda: inspect_cache(path), args.repeats)
        print(f"cache info (inspect_cache): {info * 1e3:.1f} ms")
        t0 = time.perf_counter()
        removed = prune_cache(path, max_bytes=size // 2)
        pruned = time.perf_counter() - t0
        print(f"prune --max-size {size // 2 / 1e6:.1f} MB: {pruned:.2f} s, removed "
              f"{removed.n_entries:,}, {removed.bytes_before / 1e6:.1f} -> "
              f"{removed.bytes_after / 1e6:.1f} MB")

        run = root / "run"
        run.mkdir()
        _records(run / "records.jsonl", args.records)
        plain = [_best(lambda: _scan_status(run), 1) for _ in range(args.repeats)]
        counted = [_best(lambda: _scan_status(run, CacheHits()), 1) for _ in range(args.repeats)]
        print(f"closing pass over {args.records:,} records: {statistics.median(plain) * 1e3:.1f} "
              f"ms plain, {statistics.median(counted) * 1e3:.1f} ms counting cache hits "
              "(median)")


if __name__ == "__main__":
    main()
