"""The indistinguishability gate's AUCs on freshly generated synth benchmarks, per seed.

    python3 bench/indistinguishability.py --seeds 0,1,2,3,4 --questions 40 --tier 8k

Generates each benchmark into a temporary folder and runs only the indistinguishability
gate (no oracle runs), printing the gated AUC (evidence vs all other sessions, fillers
included), the AUC without fillers, and the classifier's strongest evidence n-grams.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from memgauge.analysis import indistinguishability
from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.benchmarks.synth._validate import tier_episodes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--tier", default="8k")
    args = ap.parse_args()
    gated, without = [], []
    print("| seed | AUC (with fillers, gated) | AUC without fillers | verdict | top evidence n-grams |")
    print("|---:|---:|---:|---|---|")
    for seed in (int(s) for s in args.seeds.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench"
            generate(SynthConfig(out=str(out), seed=seed, tiers=[args.tier],
                                 questions=args.questions))
            res = indistinguishability(tier_episodes(out, args.tier))
        gated.append(res.auc)
        without.append(res.auc_without_fillers)
        top = ", ".join(f["ngram"] for f in res.top_features["evidence"][:4])
        print(f"| {seed} | {res.auc:.3f} | {res.auc_without_fillers:.3f} | {res.verdict} | {top} |")
    print(f"| mean | {statistics.mean(gated):.3f} | {statistics.mean(without):.3f} | | |")


if __name__ == "__main__":
    main()
