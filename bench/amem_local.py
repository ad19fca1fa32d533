#!/usr/bin/env python3
"""``--system a-mem`` against the real local model (SmolLM2-135M on llama.cpp), offline.

A-MEM makes two LLM calls per turn (an analysis, then an evolution decision), so even the
smallest synth tier (1k: four ten-turn sessions, 79 calls) is long for SmolLM2 on 2 shared
cores. This takes the first ``--sessions`` sessions of a generated 1k episode and its first
question, runs the system in-process (reset, ingest, answer) with ``--model local:smollm2``
(no response cache: every call reaches llama.cpp), and reports: the time to import A-MEM and
load its embedder, building the server, ingest wall time and per note, A-MEM's calls, tokens
and unreadable replies, answer latency, and what was retrieved.

    python bench/amem_local.py --sessions 1 --ingest-max-tokens 48

Needs the amem and local extras and ``memgauge models pull smollm2``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def episode_of(root: Path, sessions: int) -> Any:
    from memgauge.schema import Episode

    subprocess.run([sys.executable, "-m", "memgauge.cli", "generate", "synth", "--out",
                    str(root), "--questions", "1", "--tiers", "1k", "--seed", "1"],
                   check=True, stdout=subprocess.DEVNULL)
    [line] = (root / "tiers" / "1k" / "episodes.jsonl").read_text().splitlines()
    episode = Episode.model_validate(json.loads(line))
    return episode.model_copy(update={"sessions": episode.sessions[:sessions]})


async def measure(args: argparse.Namespace, episode: Any) -> dict[str, Any]:
    from memgauge.models import GenerateConfig
    from memgauge.models.local import LocalModel
    from memgauge.models.openai_compat import ModelSettings
    from memgauge.registry import lookup
    from memgauge.systems import SystemContext

    t0 = time.perf_counter()
    from memgauge.systems import amem_system

    amem_system._check_embedder()
    import_s = time.perf_counter() - t0
    model = LocalModel("smollm2", ModelSettings(concurrency=1,
                                                model_options={"n_ctx": "4096"}))
    ctx = SystemContext(model=model, generate=GenerateConfig(max_tokens=16, temperature=0.0),
                        options={"ingest_max_tokens": str(args.ingest_max_tokens),
                                 "top_k": "5"})
    system = lookup("system", "a-mem")(ctx)()
    question = episode.questions[0]
    try:
        t0 = time.perf_counter()
        await system.reset(episode)
        for session in episode.sessions:
            await system.ingest(session)
        ingest_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        response = await system.answer(question)
        answer_s = time.perf_counter() - t0
    finally:
        await model.aclose()
    tally = system.tally
    return {
        "sessions": len(episode.sessions), "notes": tally.notes,
        "ingest_max_tokens": args.ingest_max_tokens,
        "import_and_embedder_s": round(import_s, 1), "ingest_s": round(ingest_s, 1),
        "ingest_s_per_note": round(ingest_s / max(tally.notes, 1), 1),
        "calls": tally.calls, "unparsed_replies": tally.unparsed,
        "prompt_tokens": tally.prompt_tokens, "completion_tokens": tally.completion_tokens,
        "evolved": system.memory.evo_cnt, "answer_s": round(answer_s, 1),
        "answer": response.text, "error": response.error and response.error.kind,
        "gold": question.answer, "memory": response.meta["memory"],
        "top_retrieved": [(r.pointer.turn_id, r.score and round(r.score, 3))
                          for r in response.retrieved[:3]],
        "evidence": [e.turn_id or e.session_id for e in question.evidence],
        "load_avg_1m": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1)
    ap.add_argument("--ingest-max-tokens", type=int, default=48)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="memgauge-amem-bench-") as tmp:
        episode = episode_of(Path(tmp) / "synth", args.sessions)
        print(json.dumps(asyncio.run(measure(args, episode)), indent=1, default=str))


if __name__ == "__main__":
    main()
