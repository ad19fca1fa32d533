#!/usr/bin/env python3
"""How often SmolLM2's ingest replies cannot be read, per built-in memory agent, and how
often the ``llm:`` player falls back on Crafter (issue 29, design 0042).

Ingest: each agent runs the first ``--questions`` questions of a synth tier through the
runner with ``--model local:smollm2`` and the demo's reply cap (48 tokens), a fresh
response cache per agent (shared haystack sessions are read once). Every ``ingest_json``
ask is counted, with how many first replies held no usable JSON (each one is retried) and
how many asks stayed unreadable after the retry (an ``unparsable`` ingest failure). It
counts the same way on a tree without structured output, so a checkout of the base commit
gives the "before" row (``PYTHONPATH=<that tree>/src``).

Player: ``memgauge play crafter --player llm:openai:<model>`` against a llama.cpp server
holding SmolLM2 reached by URL (so no grammar: before, a free reply; after, a JSON schema
of the legal actions), ``--steps`` steps, no cache; the fallback steps are counted in the
trajectory.

    python3 bench/ingest_parse_rates.py --data /tmp/ingest-bench --tier 4k --questions 2

The benchmark is the demo's (``memgauge demo``'s settings: seed 0, 30 questions, tiers 4k,
8k, 32k); it is generated into ``--data`` when that folder holds none. Prints one JSON
object per row.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memgauge.runner import RunConfig, run
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
                  work: Path) -> dict[str, Any]:
    counter = AskCounter()
    counter.install()
    out = work / f"run-{system}"
    t0 = time.perf_counter()
    try:
        result = run(RunConfig(bench="synth", data=str(a.data), tier=a.tier, system=system,
                               system_options=options, model="local:smollm2",
                               context_mode="caption", max_tokens=a.max_tokens,
                               limit=a.questions, out=str(out), cache=True,
                               cache_path=str(work / f"cache-{system}.sqlite"),
                               concurrency=1, progress=False))
    finally:
        counter.uninstall()
    records = [json.loads(line) for line in (out / "records.jsonl").open()]
    kinds: dict[str, int] = {}
    for r in records:
        if r["status"] != "ok":
            kind = r["response"]["error"]["kind"]
            kinds[kind] = kinds.get(kind, 0) + 1
    n = counter.asks
    return {"row": "ingest", "system": system, "options": options, "tier": a.tier,
            "questions": len(records), "ok": sum(r["status"] == "ok" for r in records),
            "error_kinds": kinds, "json_asks": n,
            "first_replies_unreadable": counter.retried,
            "first_unreadable_pct": round(100 * counter.retried / n, 1) if n else None,
            "unreadable_after_retry": counter.unreadable,
            "after_retry_pct": round(100 * counter.unreadable / n, 1) if n else None,
            "wall_s": round(time.perf_counter() - t0, 1), "exit_errors": result.errors}


def measure_player(a: argparse.Namespace, work: Path) -> dict[str, Any]:
    from memgauge.models.local import LocalModel
    from memgauge.models.openai_compat import ModelSettings

    local = LocalModel("smollm2", ModelSettings(model_options={"n_ctx": "4096"}))
    out = work / "play"
    t0 = time.perf_counter()
    try:
        cmd = [sys.executable, "-c", "from memgauge.cli import main; main()", "play",
               "crafter", "--player", f"llm:openai:{local.server.model_id}",
               "--model-base-url", local.server.base_url, "--steps", str(a.steps),
               "--no-cache", "--out", str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    finally:
        local.release()
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
    p.add_argument("--questions", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=48, help="the demo's reply cap")
    p.add_argument("--steps", type=int, default=20, help="Crafter steps of the player row")
    p.add_argument("--agents", default=",".join(s for s, _ in AGENTS),
                   help="comma-separated subset; 'none' for the player row alone")
    p.add_argument("--no-player", action="store_true")
    a = p.parse_args()
    if not (a.data / "manifest.json").exists():
        from memgauge.benchmarks.synth import SynthConfig, generate

        generate(SynthConfig(out=str(a.data), seed=0, tiers=["4k", "8k", "32k"],
                             questions=30, overwrite=True))
    with tempfile.TemporaryDirectory(prefix="ingest-rates-") as tmp:
        work = Path(tmp)
        for system, options in AGENTS:
            if system in a.agents.split(","):
                print(json.dumps(measure_agent(system, options, a, work)), flush=True)
        if not a.no_player:
            print(json.dumps(measure_player(a, work)), flush=True)


if __name__ == "__main__":
    main()
