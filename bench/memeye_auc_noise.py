"""How much of the MemEye export's indistinguishability AUC is chance: per export, the gated
AUC, its spread over the gate's fold assignments, and the AUC of the same sessions with their
texts shuffled (labels and groups kept), which no wording can beat.

    python3 bench/memeye_auc_noise.py --seeds 0,1,2,3,4,5,6,7 --shuffles 30
    python3 bench/memeye_auc_noise.py --data D1,D2      # exports already generated

Generates each export (``--format memeye``, 24 questions, ``--tier``) into a temporary
folder unless ``--data`` names them, and reads the sessions as ``memgauge validate`` does
(the timeline split per plan). No oracle runs.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from pathlib import Path

import numpy as np

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.benchmarks.synth._generate import parse_tier
from memgauge.validation._gates import gate_documents, oof_auc
from memgauge.validation.synth import gate_episodes, tier_episodes

FOLDS = 5  # the gate's


def gate_input(root: Path) -> tuple[list[str], np.ndarray, list[str]]:
    """The gate's documents, labels and groups for the largest tier of ``root``."""
    tiers = json.loads((root / "manifest.json").read_text(encoding="utf-8"))["tiers"]
    d = gate_documents(gate_episodes(tier_episodes(root, max(tiers, key=parse_tier))))
    return d.docs, d.labels, d.groups


def measure(root: Path, shuffles: int, fold_seeds: int) -> dict[str, float]:
    docs, y, groups = gate_input(root)
    by_folds = [oof_auc(docs, y, groups, folds=FOLDS, seed=s)[0] for s in range(fold_seeds)]
    rng = random.Random(0)
    null = []
    for _ in range(shuffles):
        shuffled = docs[:]
        rng.shuffle(shuffled)
        null.append(oof_auc(shuffled, y, groups, folds=FOLDS, seed=0)[0])
    return {"evidence": int(y.sum()), "other": int(len(y) - y.sum()), "auc": by_folds[0],
            "folds_mean": statistics.mean(by_folds), "folds_sd": statistics.stdev(by_folds),
            "null_mean": statistics.mean(null), "null_sd": statistics.stdev(null)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2,3,4,5,6,7")
    ap.add_argument("--data", default="", help="comma-separated export folders (no generating)")
    ap.add_argument("--tier", default="64k")
    ap.add_argument("--shuffles", type=int, default=30)
    ap.add_argument("--fold-seeds", type=int, default=10)
    args = ap.parse_args()
    print(f"| export | evidence / other | gated AUC | mean ± sd over {args.fold_seeds} fold "
          f"seeds | shuffled texts: mean ± sd ({args.shuffles}) |")
    print("|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.data:
            roots = [Path(d) for d in args.data.split(",")]
        else:
            roots = []
            for seed in (int(s) for s in args.seeds.split(",")):
                out = Path(tmp) / f"seed{seed}"
                generate(SynthConfig(out=str(out), seed=seed, tiers=[args.tier], questions=24,
                                     layout="timeline", format="memeye"))
                roots.append(out)
        for root in roots:
            m = measure(root, args.shuffles, args.fold_seeds)
            rows.append(m)
            print(f"| {root.name} | {m['evidence']} / {m['other']} | {m['auc']:.3f} | "
                  f"{m['folds_mean']:.3f} ± {m['folds_sd']:.3f} | "
                  f"{m['null_mean']:.3f} ± {m['null_sd']:.3f} |", flush=True)
    aucs = [m["auc"] for m in rows]
    if len(aucs) > 1:
        print(f"| all | | {statistics.mean(aucs):.3f} ± {statistics.stdev(aucs):.3f} | | "
              f"{statistics.mean(m['null_sd'] for m in rows):.3f} (mean sd) |")


if __name__ == "__main__":
    main()
