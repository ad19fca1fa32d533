#!/usr/bin/env python3
"""Adaptive concurrency against a server that refuses above its capacity (design 0034).

A loopback server answers each request after ``--latency-ms``, and with a 429
(``Retry-After: 0``) any request that arrives while ``--capacity`` others are in flight. The
model client sends ``--requests`` chat calls with ``--concurrency`` as the ceiling, once with
AIMD and once without. For each it prints the wall time, how many 429s the server sent, the
client's retries, and the level the client settled on (AIMD only).

    python3 bench/adaptive_concurrency.py                 # 400 requests, c=32, capacity 4
    python3 bench/adaptive_concurrency.py --capacity 8 --concurrency 64
    python3 bench/adaptive_concurrency.py --arms on,halving,off --repeats 3

Arms: ``on`` (AIMD as shipped), ``halving`` (the first rule of design 0034: halve on a
429, climb back by windows only), ``off`` (``--no-adaptive-concurrency``). With
``--repeats N`` the arms are interleaved, one of each per round.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memgauge.models import ModelSettings, OpenAICompatModel
from memgauge.models._aimd import AdaptiveLimit
from memgauge.models._base import GenerateConfig, Message, ModelError, TextPart


class Capacity:
    """The server's state: requests in flight, 429s sent."""

    def __init__(self, capacity: int, latency_s: float) -> None:
        self.capacity, self.latency_s = capacity, latency_s
        self.in_flight = self.refused = self.answered = 0
        self.lock = threading.Lock()


def serve(state: Capacity) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle on, the body waits for the
        # client's delayed ACK (~40 ms), which no real server adds (they set TCP_NODELAY).
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with state.lock:
                state.in_flight += 1
                over = state.in_flight > state.capacity
            try:
                if over:
                    with state.lock:
                        state.refused += 1
                    self._send(429, {"error": {"message": "busy"}})
                    return
                time.sleep(state.latency_s)
                with state.lock:
                    state.answered += 1
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": "ok"},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 1}})
            finally:
                with state.lock:
                    state.in_flight -= 1

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def drive(base_url: str, n: int, concurrency: int, arm: str) -> dict[str, Any]:
    model = OpenAICompatModel("bench", ModelSettings(
        base_url=base_url, concurrency=concurrency, adaptive_concurrency=arm != "off",
        max_attempts=50, retry_base_s=0.01, retry_cap_s=0.2))
    if arm == "halving":
        first_rule = dataclasses.replace(model._limits[0].settings, backoff=0.5,
                                         slow_start=False)
        model._limits = [AdaptiveLimit(first_rule)]
    levels: list[int] = []
    failed = 0
    sem = asyncio.Semaphore(concurrency)  # the runner's gate

    async def one(i: int) -> None:
        nonlocal failed
        async with sem:
            try:
                await model.generate([Message("user", [TextPart(f"q{i}")])], GenerateConfig())
            except ModelError:
                failed += 1  # out of attempts: an error record in a run
        levels.append(model.concurrency_levels()[0])

    t0 = time.perf_counter()
    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await model.aclose()
    wall = time.perf_counter() - t0
    report = model.endpoint_report()[0]["concurrency"]
    return {"wall_s": round(wall, 3), "retries": model.retries, "failed": failed,
            "settled_level": statistics.median(levels[len(levels) // 2:]), **report}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--capacity", type=int, default=4)
    p.add_argument("--latency-ms", type=float, default=50.0)
    p.add_argument("--arms", default="on,off", help="comma-separated: on, halving, off")
    p.add_argument("--repeats", type=int, default=1)
    a = p.parse_args()
    arms = [x.strip() for x in a.arms.split(",") if x.strip()]
    unknown = sorted(set(arms) - {"on", "halving", "off"})
    if unknown:
        p.error(f"unknown arm(s) {', '.join(unknown)}; use on, halving, off")
    rows = []
    for _ in range(a.repeats):
        for arm in arms:
            state = Capacity(a.capacity, a.latency_ms / 1000)
            server = serve(state)
            try:
                url = f"http://127.0.0.1:{server.server_address[1]}/v1"
                out = asyncio.run(drive(url, a.requests, a.concurrency, arm))
            finally:
                server.shutdown()
                server.server_close()
            ideal = a.requests * a.latency_ms / 1000 / a.capacity
            rows.append({"arm": arm, "429s": state.refused, "ideal_s": round(ideal, 2),
                         **out})
    keys = ["arm", "wall_s", "ideal_s", "429s", "retries", "failed", "settled_level", "min",
            "final", "decreases", "increases"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |")


if __name__ == "__main__":
    main()
