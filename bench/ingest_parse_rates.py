#!/usr/bin/env python3
"""How often SmolLM2's ingest replies cannot be read, per built-in memory agent, and how
often the ``llm:`` player falls back on Crafter (issue 29, design 0042).

Ingest: each agent (made as the runner makes it, with the demo's reply cap of 48 tokens and
caption context) resets on the first episode of a tier of the demo's benchmark and ingests
its first ``--sessions`` sessions through ``--model local:smollm2``; no question is asked.
Every ``ingest_json`` ask is counted, with how many first replies held no usable JSON (each
is retried once) and how many asks stayed unreadable after the retry (an ``unparsable``
ingest failure). It counts the same way on a tree without structured output, so a checkout
of the base commit gives the "before" rows (``PYTHONPATH=<that tree>/src:bench``). Sessions,
not questions: on two shared cores SmolLM2 took ~100 s a reply at load 8, and the rates are
per reply.

Player: ``memgauge play crafter --player llm:openai:<model>`` against the same llama.cpp
server reached by URL (so no grammar: before, a free reply; after, a JSON schema of the
legal actions), ``--steps`` steps, no cache; fallback steps counted in the trajectory.

    python3 bench/ingest_parse_rates.py --data ingest-bench --tier 4k --sessions 4

The benchmark is the demo's (seed 0, 30 questions, tiers 4k, 8k and 32k), generated into
``--data`` when that folder holds none. Prints one JSON object per row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memgauge.models.openai_compat import OpenAICompatModel
from memgauge.systems import _memory

AGENTS: list[tuple[str, dict[str, str]]] = [
    ("fact-memory", {}), ("summary-memory", {}), ("state-memory", {}),
    ("recurrent-memory", {"variant": "blind", "memory_tokens": "64"})]


class AskCounter:
    """Counts the agents' JSON asks at ingest by wrapping ``Caller`` (the same names on
    trees with and without structured output)."""

    def __init__(self) -> None:
        self.asks = self.retried = self.unreadable = 0

    def install(self) -> None:
        counter = self
        ask, call = _memory.Caller.ingest_json, _memory.Caller._ingest_call

        async def counted_ask(self: Any, *args: Any, **kwargs: Any) -> Any:
            skipped = self.ledger.fatal is not None
            value = await ask(self, *args, **kwargs)
            if not skipped and self.ledger.fatal is None:
                counter.asks += 1
                counter.unreadable += value is None
            return value

        async def counted_call(self: Any, messages: list[Any], *args: Any, **kw: Any) -> str:
            last = messages[-1].parts[-1]
            counter.retried += getattr(last, "text", None) == _memory.JSON_RETRY
            return await call(self, messages, *args, **kw)

        _memory.Caller.ingest_json = counted_ask  # type: ignore[method-assign]
        _memory.Caller._ingest_call = counted_call  # type: ignore[method-assign]
        self._restore = (ask, call)

    def uninstall(self) -> None:
        _memory.Caller.ingest_json, _memory.Caller._ingest_call = self._restore  # type: ignore[method-assign]


def measure_agent(system: str, options: dict[str, str], a: argparse.Namespace,
                  local: Any, sessions: list[Any], episode: Any) -> dict[str, Any]:
    """One agent ingests ``sessions`` (one episode's first ones) through the local model,
    as the runner would: reset, then each session in order; no question is answered."""
    from memgauge.models import GenerateConfig
    from memgauge.registry import lookup
    from memgauge.systems import SystemContext

    counter = AskCounter()
    counter.install()
    t0 = time.perf_counter()
    try:
        ctx = SystemContext(model=local, generate=GenerateConfig(max_tokens=a.max_tokens),
                            context_mode="caption", options=dict(options))
        agent = lookup("system", system)(ctx)()

        async def ingest() -> Any:
            try:
                await agent.reset(episode)
                for session in sessions:
                    await agent.ingest(session)
                return agent.caller.ledger
            finally:  # its connections belong to this event loop (the server stays up)
                await OpenAICompatModel.aclose(local)

        ledger = asyncio.run(ingest())
    finally:
        counter.uninstall()
    n = counter.asks
    return {"row": "ingest", "system": system, "options": options, "tier": a.tier,
            "sessions": len(sessions), "model_calls": ledger.calls, "json_asks": n,
            "first_replies_unreadable": counter.retried,
            "first_unreadable_pct": round(100 * counter.retried / n, 1) if n else None,
            "unreadable_after_retry": counter.unreadable,
            "after_retry_pct": round(100 * counter.unreadable / n, 1) if n else None,
            "model_errors": [f.kind for f in ledger.failures if f.kind != "unparsable"],
            "completion_tokens": ledger.completion_tokens,
            "wall_s": round(time.perf_counter() - t0, 1)}


def measure_player(a: argparse.Namespace, work: Path, local: Any) -> dict[str, Any]:
    out = work / "play"
    t0 = time.perf_counter()
    cmd = [sys.executable, "-c", "from memgauge.cli import main; main()", "play",
           "crafter", "--player", f"llm:openai:{local.server.model_id}",
           "--model-base-url", local.server.base_url, "--steps", str(a.steps),
           "--no-cache", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"play failed ({done.returncode}): {done.stdout[-800:]}"
                         f"{done.stderr[-800:]}")
    steps = [json.loads(x) for x in (out / "trajectory.jsonl").open()]
    steps = [s for s in steps if isinstance(s.get("player"), dict)]
    fell = sum(bool(s["player"].get("fallback")) for s in steps)
    asks = sum(int(s["player"].get("attempts") or 1) for s in steps)
    actions: dict[str, int] = {}
    for s in steps:
        actions[s["action"]] = actions.get(s["action"], 0) + 1
    return {"row": "player", "steps": len(steps), "fallback_steps": fell,
            "fallback_pct": round(100 * fell / len(steps), 1) if steps else None,
            "requests": asks, "actions": actions, "wall_s": round(time.perf_counter() - t0, 1),
            "summary": done.stdout.strip().splitlines()[-1:] if done.stdout else []}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=Path("ingest-bench"))
    p.add_argument("--tier", default="4k")
    p.add_argument("--sessions", type=int, default=4,
                   help="sessions of the tier's first episode each agent ingests")
    p.add_argument("--max-tokens", type=int, default=48, help="the demo's reply cap")
    p.add_argument("--steps", type=int, default=20, help="Crafter steps of the player row")
    p.add_argument("--agents", default=",".join(s for s, _ in AGENTS),
                   help="comma-separated subset ('none': the player row alone)")
    p.add_argument("--no-player", action="store_true")
    a = p.parse_args()
    if not (a.data / "manifest.json").exists():
        from memgauge.benchmarks.synth import SynthConfig, generate

        generate(SynthConfig(out=str(a.data), seed=0, tiers=["4k", "8k", "32k"],
                             questions=30, overwrite=True))
    from memgauge.models.local import LocalModel
    from memgauge.models.openai_compat import ModelSettings
    from memgauge.schema import Episode

    with (a.data / "tiers" / a.tier / "episodes.jsonl").open() as f:
        episode = Episode.model_validate(json.loads(f.readline()))
    local = LocalModel("smollm2", ModelSettings(model_options={"n_ctx": "8192"},
                                                concurrency=1))
    try:
        with tempfile.TemporaryDirectory(prefix="ingest-rates-") as tmp:
            for system, options in AGENTS:
                if system in a.agents.split(","):
                    row = measure_agent(system, options, a, local,
                                        episode.sessions[: a.sessions], episode)
                    print(json.dumps(row), flush=True)
            if not a.no_player:
                print(json.dumps(measure_player(a, Path(tmp), local)), flush=True)
    finally:
        local.release()


if __name__ == "__main__":
    main()
