"""Merge shard run folders into one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..runfolder import load_manifest, read_records, rewrite_records, write_manifest
from ..schema import RUN_FINISHED, RUN_STOPPED, Record
from ._manifest import config_hash


def merge_runs(sources: list[str], out: str, *, partial: bool = False) -> dict[str, int]:
    """Combine the records of several run folders (e.g. shards) into ``out``.

    Runs must share a configuration apart from the shard. Shards must be complete (every
    i of N) unless ``partial``; ``out`` may not be one of the inputs. A question present in
    several inputs keeps an ok record over an error; two different ok records for one
    question are a conflict and an error.
    """
    if not sources:
        raise ConfigError("merge needs at least one run folder")
    target = Path(out).resolve()
    for src in sources:
        if Path(src).resolve() == target:
            raise ConfigError(f"--out {out} is one of the runs being merged; merge into a "
                              "new folder")
    manifests = []
    for src in sources:
        m = load_manifest(src)
        if m is None:
            raise ConfigError(f"{src} is not a run folder (no manifest.json)")
        manifests.append(m)
    base = {k: v for k, v in manifests[0]["config"]["identity"].items() if k != "shard"}
    for src, m in zip(sources, manifests, strict=True):
        ident = {k: v for k, v in m["config"]["identity"].items() if k != "shard"}
        if ident != base:
            diff = sorted(k for k in set(base) | set(ident) if base.get(k) != ident.get(k))
            raise ConfigError(f"{src} was run with a different configuration "
                              f"({', '.join(diff)} differ) and cannot be merged")
    missing = _missing_shards(sources, manifests)
    if missing and not partial:
        raise ConfigError(f"the shards are incomplete: {', '.join(missing)} missing; merge "
                          "them all, or pass --partial to merge what is there")
    merged: dict[str, Record] = {}
    for src in sources:
        for qid, rec in read_records(src).items():
            have = merged.get(qid)
            if have is None or (have.status == "error" and rec.status == "ok"):
                merged[qid] = rec
            elif have.status == "ok" and rec.status == "ok" and have.prediction != rec.prediction:
                raise ConfigError(f"question {qid} has different ok records in two inputs")
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rewrite_records(out_dir, merged.values())
    ok = sum(1 for r in merged.values() if r.status == "ok")
    manifest = dict(manifests[0])
    manifest["config"] = dict(manifest["config"])
    manifest["config"]["identity"] = {**base, "shard": None}
    manifest["merged_from"] = [
        {"run": Path(s).name, "shard": m["config"]["identity"].get("shard"),
         "config_hash": m.get("config_hash"), "status": m.get("status")}
        for s, m in zip(sources, manifests, strict=True)]
    manifest["status"] = {"records": len(merged), "ok": ok, "errors": len(merged) - ok}
    manifest.update(_merged_progress(manifests, missing))
    if missing:
        manifest["missing_shards"] = missing
    manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    manifest["config_hash"] = config_hash(manifest["config"]["identity"])
    write_manifest(out_dir, manifest)
    return manifest["status"]


def _merged_progress(manifests: list[dict], missing: list[str]) -> dict[str, Any]:
    """The merged run's planned questions and state (design 0040): the parts' sum, when
    every part knows its own and no shard is missing; finished only when every part is."""
    planned = [m.get("questions_planned") for m in manifests]
    counts = [p for p in planned if isinstance(p, int) and not isinstance(p, bool)]
    known = not missing and len(counts) == len(planned)
    states = {m.get("run_state") for m in manifests}
    state = (RUN_FINISHED if states == {RUN_FINISHED} and not missing
             else None if states == {None} and not missing else RUN_STOPPED)
    return {"questions_planned": sum(counts) if known else None, "run_state": state}


def _missing_shards(sources: list[str], manifests: list[dict]) -> list[str]:
    """The shards ``i/N`` not among the inputs (none when no input is a shard)."""
    shards = [m["config"]["identity"].get("shard") for m in manifests]
    if all(sh is None for sh in shards):
        return []
    counts = {int(sh[1]) for sh in shards if sh is not None}
    if any(sh is None for sh in shards) or len(counts) != 1:
        named = ", ".join(f"{Path(s).name}: {'/'.join(map(str, sh)) if sh else 'whole'}"
                          for s, sh in zip(sources, shards, strict=True))
        raise ConfigError(f"the runs are shards of different splits ({named})")
    n = counts.pop()
    have = {int(sh[0]) for sh in shards if sh is not None}
    return [f"{i}/{n}" for i in range(n) if i not in have]
