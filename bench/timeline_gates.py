"""The timeline layout's repeated-lines and indistinguishability gates, per configuration.

    python3 bench/timeline_gates.py 0:30:64k 5:11:32k,40k,56k 0:20:64k,128k

Each argument is ``SEED:PLANS:TIERS``: a timeline benchmark generated with that seed,
``--questions PLANS`` and those tiers (into a temporary folder), then, per tier, the most
times one line occurs in the conversation (as ``memgauge validate``'s repeated-lines gate
counts it) with that line, and the indistinguishability gate as ``memgauge validate`` runs
it (the timeline split per plan): the AUC with its 95 % bootstrap interval, the AUC without
fillers, the verdict and the classifier's strongest n-grams each way (issue 28, design 0041).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.validation import indistinguishability
from memgauge.validation._gates import repeated_lines
from memgauge.validation.synth import gate_episodes, tier_episodes


def parse(arg: str) -> tuple[int, int, list[str]]:
    seed, plans, tiers = arg.split(":")
    return int(seed), int(plans), tiers.split(",")


def ngrams(features: list[dict], n: int = 4) -> str:
    return ", ".join(f"{f['ngram']} ({f['evidence_docs']}/{f['other_docs']})" for f in features[:n])


def main() -> None:
    print("| seed | plans | tier | max repeats | commonest line | AUC (gated) | 95 % interval "
          "| AUC without fillers | verdict | top evidence n-grams (ev/other docs) "
          "| top other n-grams |")
    print("|---:|---:|---|---:|---|---:|---|---:|---|---|---|")
    for arg in sys.argv[1:] or ["0:30:64k"]:
        seed, plans, tiers = parse(arg)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench"
            generate(SynthConfig(out=str(out), seed=seed, tiers=tiers, questions=plans,
                                 layout="timeline"))
            for tier in tiers:
                episodes = tier_episodes(out, tier)
                reps = repeated_lines(episodes)
                line = reps.worst[0]["line"][:60] if reps.worst else ""
                res = indistinguishability(gate_episodes(episodes))
                lo, hi = res.auc_interval or (float("nan"), float("nan"))
                print(f"| {seed} | {plans} | {tier} | {reps.max_count} | {line} | "
                      f"{res.auc:.3f} | {lo:.3f}–{hi:.3f} | {res.auc_without_fillers:.3f} | "
                      f"{res.verdict} | {ngrams(res.top_features['evidence'])} | "
                      f"{ngrams(res.top_features['other'])} |", flush=True)


if __name__ == "__main__":
    main()
