"""``memgauge cache info|clear|prune``: see and trim the response cache (design 0018).

The file is the one ``memgauge run`` uses: ``--cache-path`` when given, else
``responses.sqlite`` in ``$MEMGAUGE_CACHE_DIR`` (default ``~/.cache/memgauge``, or
``$XDG_CACHE_HOME/memgauge``).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ByteSize, TypeAdapter, ValidationError

from .._cache_hits import CacheHits, answers_cacheable, count_records, describe_hits, describe_judge
from ..cache import KINDS, Removed, clear_cache, inspect_cache, prune_cache, resolve_cache_path
from ..errors import ConfigError, MemgaugeError
from ..runner import load_manifest, read_records
from ._common import fail

cache_app = typer.Typer(no_args_is_help=True,
                        help="The response cache runs share (info, clear, prune).")

_CachePath = Annotated[str | None, typer.Option(
    help="Response cache SQLite file (as `run --cache-path`; default: responses.sqlite in "
         "$MEMGAUGE_CACHE_DIR, else ~/.cache/memgauge)")]
_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.IGNORECASE)


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` as seconds."""
    m = _AGE.fullmatch(text)
    if m is None:
        raise ConfigError(f"--older-than {text!r}: use a number and a unit, e.g. 30d, 12h, "
                          "90m, 45s or 2w")
    return float(m.group(1)) * _UNITS_S[m.group(2).lower()]


def parse_size(text: str) -> int:
    """``1GB``, ``500MB``, ``1.5GiB``, ``800000`` (bytes) as bytes, read by pydantic's
    ``ByteSize`` (KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024)."""
    try:
        size = int(TypeAdapter(ByteSize).validate_python(text.strip()))
    except ValidationError:
        size = -1
    if size <= 0:
        raise ConfigError(f"--max-size {text!r}: use a size above 0 such as 1GB, 500MB, "
                          "1.5GiB or a number of bytes")
    return size


def _chosen(cache_path: str | None) -> tuple[Path, str]:
    if cache_path:
        return resolve_cache_path(cache_path), "--cache-path"
    if os.environ.get("MEMGAUGE_CACHE_DIR"):
        return resolve_cache_path(None), "MEMGAUGE_CACHE_DIR"
    return resolve_cache_path(None), "the default; set MEMGAUGE_CACHE_DIR to keep it elsewhere"


def _size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _when(t: float | None, now: float) -> str:
    if t is None:
        return "—"
    days = (now - t) / 86400
    ago = f"{days:.1f} days ago" if days >= 1 else f"{(now - t) / 3600:.1f} hours ago"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(t))} ({ago})"


def _by_kind(entries: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {KINDS.get(kind, 'entries')} ({kind})"
                     for kind, n in sorted(entries.items())) or "none"


@cache_app.command("info")
def cache_info(
    cache_path: _CachePath = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the facts as JSON")] = False,
) -> None:
    """Where the cache is, its size on disk, its entries by kind, the oldest and newest."""
    path, why = _chosen(cache_path)
    try:
        info = inspect_cache(path)
    except MemgaugeError as exc:
        fail(exc)
    if as_json:
        print(json.dumps({**info.to_dict(), "chosen_by": why.split(";")[0]}, indent=2))
        return
    print(f"cache: {path}  ({why})")
    if not info.exists:
        print("no cache file yet: nothing has been cached there")
        return
    now = time.time()
    wal = f" (+{_size(info.wal_bytes)} write-ahead log)" if info.wal_bytes else ""
    print(f"size on disk: {_size(info.bytes_on_disk)}{wal}; replies stored: "
          f"{_size(info.value_bytes)}")
    print(f"entries: {info.n_entries:,}: {_by_kind(info.entries)}")
    print(f"oldest: {_when(info.oldest, now)}")
    print(f"newest: {_when(info.newest, now)}")
    if info.in_use is not None:
        print("in use: " + ("yes, by a running memgauge process (clear and prune refuse until it "
                            "ends)"
                            if info.in_use else "no"))
    print("A cleared cache costs only time: the next run asks the model again. "
          "`memgauge cache prune --older-than 30d` or `--max-size 1GB` keeps the newest.")


def _removed_text(path: Path, removed: Removed) -> str:
    r = removed
    text = (f"removed {r.n_entries:,} entries from {path}: {_by_kind(r.entries)}; "
            f"{r.kept:,} kept; {_size(r.bytes_before)} -> {_size(r.bytes_after)} on disk")
    return text + (f"\nnote: {r.note}" if r.note else "")


@cache_app.command("clear")
def cache_clear(
    cache_path: _CachePath = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation")] = False,
) -> None:
    """Remove every entry (asks first unless --yes; refused while a run has the cache open)."""
    path, _ = _chosen(cache_path)
    try:
        info = inspect_cache(path)
        if not info.exists:
            print(f"no cache at {path}: nothing to clear")
            return
        if info.in_use:
            raise ConfigError(f"the response cache {path} is in use by a running memgauge "
                              "process (run, score, generate); wait for it to finish, then "
                              "clear it")
        if not yes:
            typer.confirm(f"Remove all {info.n_entries:,} entries "
                          f"({_size(info.bytes_on_disk)}) from {path}?", abort=True)
        removed = clear_cache(path)
    except MemgaugeError as exc:
        fail(exc)
    print(_removed_text(path, removed))


@cache_app.command("prune")
def cache_prune(
    older_than: Annotated[str | None, typer.Option(
        help="Remove entries written longer ago than this: 30d, 12h, 90m, 2w")] = None,
    max_size: Annotated[str | None, typer.Option(
        help="Then remove the oldest until the file takes at most this: 1GB, 500MB")] = None,
    cache_path: _CachePath = None,
) -> None:
    """Remove the oldest entries (by age and/or to a size), then VACUUM the file."""
    path, _ = _chosen(cache_path)
    try:
        if older_than is None and max_size is None:
            raise ConfigError("prune needs --older-than (e.g. 30d) and/or --max-size "
                              "(e.g. 1GB); `memgauge cache clear` removes everything")
        age = parse_age(older_than) if older_than is not None else None
        limit = parse_size(max_size) if max_size is not None else None
        if not path.exists():
            print(f"no cache at {path}: nothing to prune")
            return
        removed = prune_cache(path, older_than_s=age, max_bytes=limit)
    except MemgaugeError as exc:
        fail(exc)
    print(_removed_text(path, removed))


def run_cache_lines(run_dir: str | os.PathLike[str]) -> list[str]:
    """The run summary's lines on the cache, from the manifest's ``cache_hits`` (counted
    from the folder's records when the run finished)."""
    try:
        manifest = load_manifest(run_dir) or {}
        hits = CacheHits.from_dict(manifest.get("cache_hits"))
    except MemgaugeError:
        return []
    identity = (manifest.get("config") or {}).get("identity") or {}
    return [] if hits is None else [
        f"cache: {line}" for line in describe_hits(hits, answers=answers_cacheable(identity))]


def score_cache_lines(run_dir: str | os.PathLike[str], judge: str, hits: int,
                      misses: int) -> list[str]:
    """What ``memgauge score`` says about the cache: this invocation's judge calls, then
    the folder's verdicts (from the records, every invocation)."""
    lines = [(f"judge cache: {hits} of {hits + misses} judge calls came from the cache "
              "this time")]
    try:
        folder = count_records(read_records(run_dir).values()).judges.get(judge)
    except MemgaugeError:
        return lines
    return lines + ([] if folder is None else [f"judge cache: {describe_judge(judge, folder)}"])
