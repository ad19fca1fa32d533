#!/usr/bin/env python3
"""Batch judging's own cost: ``score --batch`` against online ``score`` on one run.

A synthetic run folder of ``--items`` records (a third answered wrongly, so their error
labels make a second round) is judged twice against the loopback Batch API server of the
tests (``tests/helpers/batch_server.py``), which answers at once: once online (``judge_run``,
``--concurrency`` calls in flight) and once through batches (``batch_judge_run``, a batch
finished on its first poll, ``poll_s`` 0.01). With no model time on either side, the
difference is the harness: rendering each request once per round, deep-copying the open
records, the JSONL and its upload. Each arm gets a fresh response cache.

    python3 bench/batch_judge.py                  # 2,000 records
    python3 bench/batch_judge.py --items 10000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from helpers.batch_server import BatchServer

from memgauge.cache import ResponseCache
from memgauge.models import ModelSettings, create_model
from memgauge.schema import Ability, AnswerType, BenchmarkInfo, Record, Response
from memgauge.scoring import JudgeOptions, judge_run
from memgauge.scoring._batch import BatchJudgeModel, batch_judge_run


def answer(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    if "kind of mistake" in prompt:
        return '{"label": "unsupported_answer", "reason": "invented"}'
    return '{"score": 0}' if "wrong answer" in prompt else '{"score": 1}'


def write_run(run_dir: Path, items: int) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text('{"config": {"identity": {}}}')
    with (run_dir / "records.jsonl").open("w") as f:
        for i in range(items):
            pred = "a wrong answer" if i % 3 == 0 else f"answer {i}"
            rec = Record(question_id=f"q{i}", episode_id=f"e{i // 10}",
                         benchmark=BenchmarkInfo(name="memlens"), status="ok",
                         ability=Ability.INFORMATION_EXTRACTION, subtype="entity",
                         answer_type=AnswerType.FREE_TEXT, question=f"Question {i}?",
                         gold=f"answer {i}", prediction=pred, response=Response(text=pred),
                         scores={"rule": 0.0})
            f.write(rec.model_dump_json() + "\n")


async def arm(server: BatchServer, run_dir: Path, cache_path: Path, batch: bool,
              concurrency: int) -> dict:
    settings = ModelSettings(base_url=server.base_url, concurrency=concurrency,
                             cache=ResponseCache(cache_path, kind="judge"))
    model = create_model("openai:judge-bench", settings)
    if batch:
        model = BatchJudgeModel.like(model)
    start = time.perf_counter()
    try:
        if batch:
            counts = await batch_judge_run(run_dir, model, options=JudgeOptions(), poll_s=0.01)
        else:
            counts = await judge_run(run_dir, model, concurrency=concurrency,
                                     options=JudgeOptions())
    finally:
        await model.aclose()
        settings.cache.close()
    return {"wall_s": round(time.perf_counter() - start, 2), **counts}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=16)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["MEMGAUGE_CACHE_DIR"] = str(work / "cache")
        rows = []
        for name, batch in (("online", False), ("batch", True)):
            run_dir = work / name
            write_run(run_dir, a.items)
            with BatchServer(answer, polls_to_finish=1) as server:
                row = asyncio.run(arm(server, run_dir, work / f"{name}.sqlite", batch,
                                      a.concurrency))
                row["uploaded_bytes"] = sum(len(u["data"]) for u in server.uploads)
                row["online_calls"] = len(server.online)
            rows.append({"arm": name, "items": a.items, **row})
            print(json.dumps(rows[-1]), flush=True)
        same = (work / "online" / "records.jsonl").read_text().count('"judge":') == \
            (work / "batch" / "records.jsonl").read_text().count('"judge":')
        print(json.dumps({"same_number_of_verdicts": same}))


if __name__ == "__main__":
    main()
