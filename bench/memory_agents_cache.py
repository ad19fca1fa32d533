#!/usr/bin/env python3
"""How often the built-in memory agents send a shared haystack session to the LLM.

Generates a small synth tier (its episodes share haystack sessions), then runs each memory
agent through ``memgauge run`` against a loopback OpenAI-compatible server with the response
cache on. The server counts the requests of each ingest stage and the distinct sessions
they carried. A stage whose prompt holds only the session (fact extraction, state
extraction, session summary) should reach the server once per distinct session (target 1.0);
stages that also hold the episode's memory (fact decisions, the profile, recurrent rewrites)
cannot be shared and are shown for comparison.

    python bench/memory_agents_cache.py --questions 8 --tier 4k --concurrency 1 8 32 \
        --delay-ms 50 --workers 1 2

The server answers each request after ``--delay-ms`` (a real model takes seconds, and the
race between two episodes reading one new session is only there while a request is out).
Every (concurrency, workers) pair runs each agent over a fresh cache. Prints one JSON
object per agent and run, and Markdown rows for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memgauge.runner import RunConfig, run

REPLY = json.dumps({"facts": [{"fact": "a fact", "turn": "T1"}], "states": [],
                    "summary": "a summary", "profile": "a profile", "memory": "a memory",
                    "decisions": [{"new": 1, "op": "ADD"}]})
STAGES = {"write down the facts": "fact extract", "decide one operation": "fact decide",
          "record the state": "state extract", "Summarise one session": "summary",
          "short profile of the user": "profile", "keep a memory of it": "recurrent rewrite"}
SESSION_ONLY = {"fact extract", "state extract", "summary"}


class Counting:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.sessions: dict[str, set[str]] = defaultdict(set)
        self.lock = threading.Lock()

    def observe(self, body: dict[str, Any]) -> None:
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        system = system if isinstance(system, str) else json.dumps(system)
        stage = next((v for k, v in STAGES.items() if k in system), "answer")
        user = json.dumps([m for m in body["messages"] if m["role"] != "system"])
        with self.lock:
            self.calls[stage] += 1
            self.sessions[stage].add(hashlib.sha256(user.encode()).hexdigest())


def serve(counting: Counting, delay_s: float = 0.0) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            counting.observe(body)
            time.sleep(delay_s)
            reply = REPLY if any(m["role"] == "system" and isinstance(m["content"], str)
                                 and any(k in m["content"] for k in STAGES)
                                 for m in body["messages"]) else "an answer"
            out = json.dumps({"id": "x", "object": "chat.completion", "model": body["model"],
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": reply}}],
                              "usage": {"prompt_tokens": 100, "completion_tokens": 10,
                                        "total_tokens": 110}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_GET(self) -> None:
            out = json.dumps({"object": "list", "data": [{"id": "stub", "object": "model"}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def measure(system: str, options: dict[str, str], data: Path, tier: str,
            work: Path, concurrency: int, workers: int = 1,
            delay_s: float = 0.0) -> dict[str, Any]:
    counting = Counting()
    server = serve(counting, delay_s)
    try:
        name = f"{system}-{'-'.join(options.values()) or 'default'}-c{concurrency}-w{workers}"
        out = work / f"run-{name}"
        run(RunConfig(bench="synth", data=str(data), tier=tier, system=system,
                      system_options=options, model="openai:stub", context_mode="caption",
                      base_url=f"http://127.0.0.1:{server.server_port}/v1", out=str(out),
                      cache=True, cache_path=str(work / f"cache-{name}.sqlite"),
                      concurrency=concurrency, workers=workers, progress=False))
    finally:
        server.shutdown()
    records = [json.loads(line) for line in (out / "records.jsonl").open()]
    per_episode: dict[str, dict[str, int]] = {}
    for r in records:  # meta["ingest"] is the episode's total since reset: keep the largest
        ingest = r["response"]["meta"].get("ingest", {})
        best = per_episode.get(r["episode_id"], {})
        if ingest.get("calls", 0) >= best.get("calls", 0):
            per_episode[r["episode_id"]] = ingest
    calls = sum(i.get("calls", 0) for i in per_episode.values())
    cached = sum(i.get("cached", 0) for i in per_episode.values())
    stages = {s: {"server_calls": counting.calls[s], "distinct_inputs": len(counting.sessions[s]),
                  "calls_per_distinct": round(counting.calls[s] / len(counting.sessions[s]), 3)}
              for s in counting.calls if s != "answer"}
    return {"system": system, "options": options, "concurrency": concurrency,
            "workers": workers, "questions": len(records),
            "errors": sum(r["status"] != "ok" for r in records), "ingest_calls": calls,
            "ingest_cached": cached, "stages": stages}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=8)
    p.add_argument("--tier", default="4k")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32],
                   help="episodes in flight; each value is a run of every agent")
    p.add_argument("--workers", type=int, nargs="+", default=[1],
                   help="answering processes (--workers); each value is a run of every agent")
    p.add_argument("--delay-ms", type=float, default=50.0,
                   help="the server's time per request")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "synth"
        subprocess.run([sys.executable, "-m", "memgauge.cli", "generate", "synth", "--out",
                        str(data),
                        "--questions", str(a.questions), "--tiers", a.tier, "--seed",
                        str(a.seed)], check=True, capture_output=True)
        rows = []
        for workers in a.workers:
            for concurrency in a.concurrency:
                for system, options in (("fact-memory", {}), ("state-memory", {}),
                                        ("summary-memory", {}),
                                        ("recurrent-memory", {"variant": "blind"})):
                    result = measure(system, options, data, a.tier, work, concurrency,
                                     workers, a.delay_ms / 1000)
                    print(json.dumps(result), flush=True)
                    for stage, st in sorted(result["stages"].items()):
                        share = "yes" if stage in SESSION_ONLY else "no"
                        rows.append(
                            f"| {concurrency} | {workers} | {system} | {stage} | {share} | "
                            f"{st['server_calls']} | {st['distinct_inputs']} | "
                            f"{st['calls_per_distinct']:.3f} | {result['ingest_calls']} / "
                            f"{result['ingest_cached']} | {result['errors']} |")
        print("\n| concurrency | workers | system | stage | session-only prompt | server calls | "
              "distinct inputs | calls per distinct | ingest calls / cached (records) | "
              "errors |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
