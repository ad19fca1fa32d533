#!/usr/bin/env python3
"""What the stored rankings cost in records.jsonl, and the clue diagnostics on a real run.

Generates a small synth tier, runs ``rag`` with ``reader=oracle`` (``--model none:``: no model
is called, the answers come from the retrieved sessions) at two units, then measures the
bytes of each record and of its ``response.retrieved`` list as written, and as it would be
without the null fields (``exclude_none``), and prints the report's diagnostics and the
recency probe for each run.

    python bench/clue_diagnostics.py --questions 24 --tier 8k

Prints one JSON object per run and Markdown rows for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from memgauge.analysis import build_tables, load_runs
from memgauge.runner import RunConfig, read_records, run


def sizes(run_dir: Path) -> dict[str, Any]:
    lines = (run_dir / "records.jsonl").read_bytes().splitlines()
    records = list(read_records(run_dir).values())
    ranked = [len(json.dumps([it.model_dump() for it in r.response.retrieved],
                             separators=(",", ":"))) for r in records]
    lean = [len(json.dumps([it.model_dump(exclude_none=True) for it in r.response.retrieved],
                           separators=(",", ":"))) for r in records]
    return {"records": len(lines), "bytes_per_record": round(statistics.mean(map(len, lines))),
            "ranking_bytes_per_record": round(statistics.mean(ranked)),
            "ranking_bytes_without_nulls": round(statistics.mean(lean)),
            "items_per_ranking": round(statistics.mean(
                len(r.response.retrieved) for r in records), 1),
            "file_bytes": sum(map(len, lines)) + len(lines)}


def probe(run_dir: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "memgauge.cli", "probe", "recency", str(run_dir),
                          "--format", "json"], check=True, capture_output=True, text=True)
    [result] = json.loads(out.stdout)["runs"]
    rows = {}
    for row in result["rows"]:
        g = row["groups"].get("all", {})
        rows[str(row["alpha"])] = {m: g[m]["value"] for m in (
            "full_clue_recall", "latest_clue_recall", "stale_dominance", "latest_miss")}
    return {"clues_outside_pool": result["clues_outside_pool"], "rows": rows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=24)
    p.add_argument("--tier", default="8k")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "synth"
        subprocess.run([sys.executable, "-m", "memgauge.cli", "generate", "synth", "--out",
                        str(data), "--questions", str(a.questions), "--tiers", a.tier,
                        "--seed", str(a.seed)], check=True, capture_output=True)
        for unit in ("session", "turn"):
            out = work / f"rag-{unit}"
            run(RunConfig(bench="synth", data=str(data), tier=a.tier, system="rag",
                          system_options={"unit": unit, "retriever": "bm25", "top_k": "5",
                                          "reader": "oracle"},
                          model="none:", out=str(out), cache=False, progress=False))
            [runs] = [load_runs([out])]
            tables = build_tables(runs, n_resamples=10)
            [system] = tables.clues.values() or [{}]
            overall = {a: {t: {m: (g[m]["value"], g[m]["n"]) for m in (
                "any_clue_recall", "full_clue_recall", "latest_clue_recall", "stale_dominance")}
                | {"failures": g["failures"]} for t, g in tiers.items()}
                for a, tiers in system.items()}
            print(json.dumps({"unit": unit, **sizes(out), "diagnostics": overall,
                              "probe": probe(out)}))


if __name__ == "__main__":
    main()
