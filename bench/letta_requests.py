#!/usr/bin/env python3
"""Requests ``--system letta`` sends per session and per question, and memgauge's own time.

Generates a synth tier, then runs ``memgauge run --system letta`` against the loopback
stand-in of the Letta routes (``tests/systems/letta_standin.py``, the one the tests use) with
a loopback OpenAI-compatible reader (``tests/helpers/stub_server.py``). The stand-in counts requests
per route. No real Letta server runs here (design 0028 says why), so the wall time is
memgauge's and letta-client's side plus a stdlib server, not Letta's embedding cost.

    python bench/letta_requests.py --tier 4k --questions 2

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE.parent / "tests" / "systems")]

from helpers.stub_server import StubServer
from letta_standin import LettaStandIn
from typer.testing import CliRunner

from memgauge.cli import app


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", default="4k")
    ap.add_argument("--questions", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LettaStandIn() as letta, StubServer() as stub:
        bench, out = Path(tmp) / "bench", Path(tmp) / "run"
        made = CliRunner().invoke(app, ["generate", "synth", "--out", str(bench),
                                        "--questions", str(args.questions),
                                        "--tiers", args.tier])
        assert made.exit_code == 0, made.output
        t0 = time.perf_counter()
        done = CliRunner().invoke(app, [
            "run", "--bench", "synth", "--data", str(bench), "--tier", args.tier,
            "--system", "letta", "--system-option", f"base_url={letta.base_url}",
            "--model", "openai:stub", "--base-url", stub.base_url, "--out", str(out)])
        wall = time.perf_counter() - t0
        assert done.exit_code == 0, done.output
        records = [json.loads(line) for line in (out / "records.jsonl").read_text()
                   .splitlines()]
        calls = Counter(letta.calls)
        sessions = sum(r["cost"]["ingest_sessions"] or 0 for r in records)
        passages = sum(len(p) for p in letta.passages.values())
        answer_s = [r["cost"]["answer_s"] for r in records
                    if r["cost"].get("answer_s") is not None]
        ingest_s = sum(r["cost"]["ingest_s"] for r in records)
        print(json.dumps({
            "tier": args.tier, "questions": len(records),
            "ok": sum(r["status"] == "ok" for r in records),
            "episodes": len(letta.agents) - 1, "sessions": sessions, "passages": passages,
            "requests": dict(calls), "inserts_per_session": round(calls["insert"] / sessions, 2)
            if sessions else None,
            "wall_s": round(wall, 2), "ingest_s": round(ingest_s, 2),
            "ingest_sessions_per_s": round(sessions / ingest_s, 1) if ingest_s else None,
            "answer_s_median": round(statistics.median(answer_s), 4) if answer_s else None,
            "agents_left": len(set(letta.agents) - set(letta.deleted))}))


if __name__ == "__main__":
    main()
