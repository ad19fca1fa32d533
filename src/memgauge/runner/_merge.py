"""Merge shard run folders into one."""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import ConfigError
from ..schema import Record
from ._store import load_manifest, read_records, rewrite_records, write_json_atomic


def merge_runs(sources: list[str], out: str) -> dict[str, int]:
    """Combine the records of several run folders (e.g. shards) into ``out``.

    Runs must share a configuration apart from the shard. A question present in several
    inputs keeps an ok record over an error; two different ok records for one question
    are a conflict and an error.
    """
    if not sources:
        raise ConfigError("merge needs at least one run folder")
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
    manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    from ._manifest import config_hash

    manifest["config_hash"] = config_hash(manifest["config"]["identity"])
    write_json_atomic(out_dir / "manifest.json", manifest)
    return manifest["status"]
