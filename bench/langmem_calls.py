#!/usr/bin/env python3
"""LLM calls per session of ``--system langmem``, and what the response cache saves.

Generates a synth tier, then runs ``memgauge run --system langmem`` twice into new folders
over one response cache: against a loopback OpenAI-compatible server that answers the
manager with one ``Memory`` tool call per request (``--model stub``, cheap: every session of
the tier), or against the local SmolLM2 (``--model local``, slow on 2 cores: keep the tier
small). The server side counts the manager requests and the distinct sessions they carried
(the ``<session>`` block of LangMem's prompt); the records give the calls, cached calls and
tokens each episode reported, and the ingest time.

    python bench/langmem_calls.py --model stub --tier 4k --questions 4
    python bench/langmem_calls.py --model local --tier 1k --questions 1

Prints one JSON object per run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memgauge.runner import RunConfig, run

SESSION = re.compile(r"<session>(.*?)</session>", re.DOTALL)


class Counting:
    def __init__(self) -> None:
        self.manager: Counter[str] = Counter()
        self.answers = 0
        self.lock = threading.Lock()

    def observe(self, body: dict[str, Any]) -> None:
        with self.lock:
            if "tools" not in body:
                self.answers += 1
                return
            text = "\n".join(m["content"] for m in body["messages"]
                             if isinstance(m.get("content"), str))
            found = SESSION.search(text)
            self.manager[hashlib.sha256((found.group(1) if found else text).encode())
                         .hexdigest()] += 1


def reply_for(body: dict[str, Any]) -> dict[str, Any]:
    if "tools" not in body:
        message: dict[str, Any] = {"role": "assistant", "content": "an answer"}
    else:
        last = body["messages"][-1]["content"].rstrip().splitlines()[-2][:200]
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {
                "name": "Memory", "arguments": json.dumps({"content": last})}}]}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}


def serve(counting: Counting) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, obj: dict[str, Any]) -> None:
            out = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            counting.observe(body)
            self._send(reply_for(body))

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def one_run(args: argparse.Namespace, data: Path, out: Path, cache: Path,
            base_url: str | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    model_args: dict[str, Any] = ({"model": "openai:stub", "base_url": base_url}
                                  if base_url else
                                  {"model": "local:smollm2",
                                   "model_options": {"n_ctx": str(args.n_ctx)}})
    run(RunConfig(bench="synth", data=str(data), tier=args.tier, system="langmem",
                  system_options={"ingest_max_tokens": str(args.ingest_max_tokens)},
                  context_mode="caption", out=str(out), cache=True, cache_path=str(cache),
                  concurrency=args.concurrency, max_tokens=args.max_tokens, progress=False,
                  **model_args))
    wall = time.perf_counter() - t0
    records = [json.loads(line) for line in (out / "records.jsonl").open()]
    episodes: dict[str, dict[str, Any]] = {}
    for r in records:  # meta["ingest"] is the episode's total since reset: keep the largest
        meta = r["response"].get("meta") or {}
        if meta.get("ingest", {}).get("calls", -1) >= episodes.get(r["episode_id"], {}).get(
                "ingest", {}).get("calls", -1):
            episodes[r["episode_id"]] = meta
    sessions = sum(m.get("langmem", {}).get("sessions", 0) for m in episodes.values())
    calls = sum(m.get("ingest", {}).get("calls", 0) for m in episodes.values())
    cached = sum(m.get("ingest", {}).get("cached", 0) for m in episodes.values())
    ingest_s = sum(r.get("cost", {}).get("ingest_s") or 0 for r in records)
    return {"wall_s": round(wall, 1), "questions": len(records),
            "errors": sum(r["status"] != "ok" for r in records), "episodes": len(episodes),
            "sessions": sessions, "ingest_calls": calls, "ingest_cached": cached,
            "calls_per_session": round(calls / sessions, 3) if sessions else None,
            "ingest_prompt_tokens": sum(m.get("ingest", {}).get("prompt_tokens", 0)
                                        for m in episodes.values()),
            "no_tool_calls": sum(m.get("langmem", {}).get("no_tool_calls", 0)
                                 for m in episodes.values()),
            "memories": sum(m.get("memory", {}).get("items", 0) for m in episodes.values()),
            "ingest_s_reported": round(ingest_s, 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("stub", "local"), default="stub")
    p.add_argument("--tier", default="4k")
    p.add_argument("--questions", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--ingest-max-tokens", type=int, default=128)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--n-ctx", type=int, default=4096)
    args = p.parse_args()
    from typer.testing import CliRunner

    from memgauge.cli import app

    with tempfile.TemporaryDirectory(prefix="langmem-bench-") as tmp:
        work = Path(tmp)
        made = CliRunner().invoke(app, ["generate", "synth", "--out", str(work / "data"),
                                        "--tiers", args.tier, "--questions",
                                        str(args.questions), "--seed", str(args.seed)])
        if made.exit_code != 0:
            print(made.output, file=sys.stderr)
            return 1
        counting = Counting()
        server = serve(counting) if args.model == "stub" else None
        base_url = f"http://127.0.0.1:{server.server_port}/v1" if server else None
        try:
            for name in ("first", "rerun"):
                before = sum(counting.manager.values())
                result = one_run(args, work / "data", work / name, work / "cache.sqlite",
                                 base_url)
                if server is not None:
                    result["server_manager_calls"] = sum(counting.manager.values()) - before
                    result["distinct_sessions_sent"] = len(counting.manager)
                print(json.dumps({"run": name, "model": args.model, "tier": args.tier,
                                  **result}), flush=True)
        finally:
            if server is not None:
                server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
