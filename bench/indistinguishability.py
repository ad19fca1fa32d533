"""The indistinguishability gate's AUCs on freshly generated synth benchmarks, per seed.

    python3 bench/indistinguishability.py --seeds 0-19 --questions 40,60,200 --tiers 8k,32k

Generates one benchmark per seed (the largest question count, all ``--tiers``) into a
temporary folder and runs only the indistinguishability gate (no oracle runs) on each tier
and on the first N questions for each ``--questions`` N: a question's plan and episode
depend only on the seed and its index, so those are exactly the episodes a benchmark
generated with ``--questions N`` holds. Prints, per seed, size and tier, the gated AUC
(evidence vs all other sessions, fillers included) with its 95 % bootstrap interval, the
AUC without fillers, the most times one line occurs in an episode (``max repeats``, the
worst episode, counted as ``memgauge validate``'s repeated-lines gate counts) and the
classifier's strongest evidence n-grams; then a summary per size and tier (mean, mean
|AUC - 0.5|, worst, passes, worst repeats).

``--null N`` adds, per row, the gate's AUC on the same sessions with their texts shuffled N
times (labels and groups kept; as bench/memeye_auc_noise.py does): what the gate gives a
benchmark whose wording carries no signal at all, fold effects included.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.schema import Episode
from memgauge.validation import indistinguishability
from memgauge.validation._gates import gate_documents, oof_auc, repeated_lines
from memgauge.validation.synth import gate_episodes, tier_episodes


def seed_list(text: str) -> list[int]:
    """``"0-19"`` or ``"0,5,7"`` (or a mix) as a list of seeds."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def max_repeats(episodes: list[Episode]) -> int:
    """The most times one line occurs in one episode (case, spacing and placeholders aside)."""
    return repeated_lines(episodes).max_count


def null_aucs(episodes: list[Episode], shuffles: int) -> list[float]:
    """The gate's AUC with the session texts shuffled among the sessions ``shuffles`` times."""
    d = gate_documents(episodes)
    rng = random.Random(0)
    out = []
    for _ in range(shuffles):
        docs = d.docs[:]
        rng.shuffle(docs)
        out.append(oof_auc(docs, d.labels, d.groups, folds=5, seed=0)[0])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--questions", default="40", help="comma-separated question counts")
    ap.add_argument("--tiers", default="8k,32k")
    ap.add_argument("--null", type=int, default=0, help="text shuffles per row (0: none)")
    args = ap.parse_args()
    sizes = sorted(int(q) for q in args.questions.split(","))
    tiers = args.tiers.split(",")
    rows: dict[tuple[int, str], list[tuple[float, float, str, int]]] = defaultdict(list)
    print("| seed | questions | tier | AUC (gated) | 95 % interval | AUC without fillers "
          "| verdict | max repeats | top evidence n-grams |")
    print("|---:|---:|---|---:|---|---:|---|---:|---|")
    for seed in seed_list(args.seeds):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench"
            generate(SynthConfig(out=str(out), seed=seed, tiers=tiers, questions=sizes[-1]))
            for tier in tiers:
                episodes = gate_episodes(tier_episodes(out, tier))
                for n in sizes:
                    res = indistinguishability(episodes[:n])
                    lo, hi = res.auc_interval or (float("nan"), float("nan"))
                    reps = max_repeats(episodes[:n])
                    rows[(n, tier)].append((res.auc, res.auc_without_fillers, res.verdict, reps))
                    top = ", ".join(f["ngram"] for f in res.top_features["evidence"][:4])
                    if args.null:
                        null = null_aucs(episodes[:n], args.null)
                        top += (f" (shuffled texts: {statistics.mean(null):.3f} ± "
                                f"{statistics.stdev(null):.3f})")
                    print(f"| {seed} | {n} | {tier} | {res.auc:.3f} | {lo:.3f}–{hi:.3f} | "
                          f"{res.auc_without_fillers:.3f} | {res.verdict} | {reps} | {top} |",
                          flush=True)
    print()
    print("| questions | tier | seeds | mean AUC | mean AUC w/o fillers | mean |AUC − 0.5| "
          "| worst AUC | passes | max repeats |")
    print("|---:|---|---:|---:|---:|---:|---:|---|---:|")
    for (n, tier), vals in sorted(rows.items()):
        gated = [v[0] for v in vals]
        worst = max(gated, key=lambda a: abs(a - 0.5))
        print(f"| {n} | {tier} | {len(vals)} | {statistics.mean(gated):.3f} | "
              f"{statistics.mean(v[1] for v in vals):.3f} | "
              f"{statistics.mean(abs(a - 0.5) for a in gated):.3f} | {worst:.3f} | "
              f"{sum(v[2] == 'PASS' for v in vals)}/{len(vals)} | {max(v[3] for v in vals)} |")


if __name__ == "__main__":
    main()
