#!/usr/bin/env python3
"""The built-in memory agents against the real local model (SmolLM2-135M on llama.cpp).

Generates a synth tier, then runs each agent through the runner with ``--model
local:smollm2``, a fresh response cache per agent, and reports per agent:

- ingest throughput: sessions ingested / seconds of ingest (the runner-timed ``reset`` and
  ``ingest`` calls, summed over episodes from the records' ``cost.ingest_s``; episodes in
  flight together share the server's one slot, so this is a floor) and sessions / run wall;
- answer latency: median of ``cost.answer_s`` (the system's ``answer`` alone);
- LLM calls per unique haystack session: requests that reached the server at ingest over
  the tier's distinct session ids, and per stage as bench/memory_agents_cache.py classifies
  them (its ``Counting``; here it observes the requests the model client sends, so cache
  hits are not counted), and without the retries of unreadable JSON replies (target 1.0).

    python bench/agents_local.py --tier 32k --questions 3

Prints one JSON object per agent and Markdown rows for bench/RESULTS.md. Needs the local
extra and ``memgauge models pull smollm2``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memory_agents_cache import Counting

from memgauge.models.openai_compat import OpenAICompatModel
from memgauge.runner import RunConfig, run
from memgauge.systems._memory import JSON_RETRY

AGENTS: list[tuple[str, dict[str, str]]] = [
    ("fact-memory", {}), ("state-memory", {}), ("summary-memory", {}),
    ("recurrent-memory", {"variant": "blind", "memory_tokens": "64"}), ("rag", {"unit": "turn"})]


def is_retry(body: dict[str, Any]) -> bool:
    """A second ask after an unreadable reply (design 0026): it ends with the retry note."""
    last = body["messages"][-1]
    return last["role"] == "user" and last["content"] in (JSON_RETRY, [
        {"type": "text", "text": JSON_RETRY}])


def observe_requests(counting: Counting, retries: list[int]) -> None:
    """Count every request body the model client sends (a cache hit sends none)."""
    real_send = OpenAICompatModel._send

    async def counting_send(self: Any, pieces: list[bytes | memoryview], *args: Any,
                            **kwargs: Any) -> Any:
        body = json.loads(b"".join(bytes(p) for p in pieces))
        counting.observe(body)
        retries[0] += is_retry(body)
        return await real_send(self, pieces, *args, **kwargs)

    OpenAICompatModel._send = counting_send  # type: ignore[method-assign]


def measure(system: str, options: dict[str, str], data: Path, tier: str, work: Path,
            a: argparse.Namespace, sessions: dict[str, Any]) -> dict[str, Any]:
    counting = Counting()
    retries = [0]
    real_send = OpenAICompatModel._send
    observe_requests(counting, retries)
    out = work / f"run-{system}"
    t0 = time.perf_counter()
    try:
        run(RunConfig(bench="synth", data=str(data), tier=tier, system=system,
                      system_options=options, model="local:smollm2",
                      model_options={"n_ctx": str(a.n_ctx)}, context_mode="caption",
                      max_tokens=a.max_tokens, out=str(out), cache=True,
                      cache_path=str(work / f"cache-{system}.sqlite"),
                      concurrency=1, progress=False))
    finally:
        OpenAICompatModel._send = real_send  # type: ignore[method-assign]
    wall = time.perf_counter() - t0
    records = [json.loads(line) for line in (out / "records.jsonl").open()]
    ingest_s = sum((r.get("cost") or {}).get("ingest_s") or 0.0 for r in records)
    answer_s = [c["answer_s"] for r in records if (c := r.get("cost")) and c.get("answer_s")]
    ingest_calls = sum(n for s, n in counting.calls.items() if s != "answer")
    stages = {s: {"server_calls": n, "distinct_inputs": len(counting.sessions[s])}
              for s, n in counting.calls.items() if s != "answer"}
    failures: dict[str, int] = {}  # every answer repeats its episode's list: keep the longest
    for r in records:
        n = len(r["response"]["meta"].get("ingest_failures", []))
        failures[r["episode_id"]] = max(n, failures.get(r["episode_id"], 0))
    return {"system": system, "options": options, "questions": len(records),
            "errors": sum(r["status"] != "ok" for r in records),
            "sessions_ingested": sessions["ingested"], "unique_sessions": sessions["unique"],
            "ingest_s": round(ingest_s, 1), "run_wall_s": round(wall, 1),
            "sessions_per_ingest_s": round(sessions["ingested"] / ingest_s,
                                           3) if ingest_s else None,
            "sessions_per_wall_s": round(sessions["ingested"] / wall, 3),
            "answer_s_median": round(statistics.median(answer_s), 2) if answer_s else None,
            "ingest_server_calls": ingest_calls,
            "calls_per_unique_session": round(ingest_calls / sessions["unique"], 3),
            "json_retries": retries[0],
            "first_asks_per_unique_session": round((ingest_calls - retries[0])
                                                   / sessions["unique"], 3),
            "ingest_failures": sum(failures.values()), "stages": stages}


def tier_sessions(data: Path, tier: str) -> dict[str, Any]:
    episodes = [json.loads(x) for x in (data / "tiers" / tier / "episodes.jsonl").open()]
    ids = [s["session_id"] for e in episodes for s in e["sessions"]]
    return {"ingested": len(ids), "unique": len(set(ids)), "episodes": len(episodes)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=3)
    p.add_argument("--tier", default="32k")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=64,
                   help="every reply's cap, ingest replies included (recurrent-memory's "
                        "rewrites take memory_tokens + 32)")
    p.add_argument("--n-ctx", type=int, default=8192,
                   help="the server's context; recurrent-memory's default 4096-token chunks "
                        "plus its 1024-token memory need 8192")
    p.add_argument("--agents", default=",".join(s for s, _ in AGENTS),
                   help="comma-separated subset of the agents")
    a = p.parse_args()
    chosen = [x for x in AGENTS if x[0] in a.agents.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "synth"
        subprocess.run([sys.executable, "-m", "memgauge.cli", "generate", "synth", "--out",
                        str(data), "--questions", str(a.questions), "--tiers", a.tier,
                        "--seed", str(a.seed)], check=True, capture_output=True)
        sessions = tier_sessions(data, a.tier)
        print(json.dumps({"tier": a.tier, **sessions}), flush=True)
        rows = []
        for system, options in chosen:
            r = measure(system, options, data, a.tier, work, a, sessions)
            print(json.dumps(r), flush=True)
            rows.append(f"| {system} | {r['questions']} / {r['errors']} | "
                        f"{r['sessions_per_ingest_s']} | {r['sessions_per_wall_s']} | "
                        f"{r['answer_s_median']} | {r['ingest_server_calls']} | "
                        f"{r['calls_per_unique_session']} | {r['json_retries']} | "
                        f"{r['first_asks_per_unique_session']} | {r['ingest_failures']} |")
        print("\n| system | questions / errors | sessions per ingest s | sessions per wall s "
              "| answer s (median) | ingest server calls | per unique session | JSON retries "
              "| first asks per unique session | ingest failures (records) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
