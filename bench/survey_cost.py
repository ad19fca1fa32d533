#!/usr/bin/env python3
"""What the read before the first request costs (design 0043): the run reads its input once
more, and, for a full-context run with a context limit, counts one prompt per history cut.

Workload: a generated synth benchmark (``--tier``, ``--questions``, seed 0). Timed: the
benchmark's own pass (``episodes()``), the survey without counting (what every run pays),
and the survey counting each cut's prompt with o200k_base (full-context with
``--max-context-tokens``). Best of ``--repeat``.

    PYTHONPATH=src python3 bench/survey_cost.py --tier 32k --questions 30
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.models import create_model
from memgauge.registry import lookup
from memgauge.runner._records import _history_cut
from memgauge.runner._survey import sizer, survey
from memgauge.systems import SystemContext
from memgauge.tokens import TokenCounter


def _bench(root: Path, tier: str) -> Any:
    return lookup("benchmark", "synth")(BenchmarkOptions(data=str(root), tier=tier))


def _best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tier", default="32k")
    ap.add_argument("--questions", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "b"
        generate(SynthConfig(out=str(root), seed=0, tiers=[a.tier], questions=a.questions))
        ctx = SystemContext(model=create_model("none:"), counter=TokenCounter(),
                            context_mode="caption", max_context_tokens=10**9)
        probe = lookup("system", "full-context")(ctx)()
        def cut(ep, q):
            return _history_cut("later", ep, q)

        count = sizer(probe, "error", 10**9)

        def read() -> None:
            for _ in _bench(root, a.tier).episodes():
                pass

        plain = _best(lambda: survey(_bench(root, a.tier).episodes(), None, None, cut),
                      a.repeat)
        counted = _best(lambda: survey(_bench(root, a.tier).episodes(), None, count, cut),
                        a.repeat)
        found = survey(_bench(root, a.tier).episodes(), None, count, cut)
        print(f"tier {a.tier}, {found.planned} questions, {found.images} images, "
              f"{found.prompts_counted} prompts counted")
        print(f"benchmark pass        {_best(read, a.repeat):7.3f} s")
        print(f"survey, no counting   {plain:7.3f} s")
        print(f"survey, o200k counts  {counted:7.3f} s")


if __name__ == "__main__":
    main()
