"""The timeline layout's repeated-lines and indistinguishability gates, per configuration.

    python3 bench/timeline_gates.py 0:30:64k 5:11:32k,40k,56k 0:20:64k,128k

Each argument is ``SEED:PLANS:TIERS``: a timeline benchmark generated with that seed,
``--questions PLANS`` and those tiers (into a temporary folder), then, per tier, the most
times one line occurs in the conversation (as ``memgauge validate``'s repeated-lines gate
counts it) with that line, and the indistinguishability gate as ``memgauge validate`` runs
it (the timeline split per plan): the AUC with its 95 % bootstrap interval, the AUC without
fillers, the verdict and the classifier's strongest n-grams each way (issue 28, design 0041).

``--null N`` adds, per row, the gate's AUCs on the same sessions with their texts shuffled N
times (labels and groups kept): mean, standard deviation and the share outside the gate's
band, i.e. how often a conversation whose wording carries no signal at all would fail at
that size.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from indistinguishability import null_aucs  # bench/ (the script's folder)

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.validation import indistinguishability
from memgauge.validation._gates import repeated_lines
from memgauge.validation.synth import gate_episodes, tier_episodes


def parse(arg: str) -> tuple[int, int, list[str]]:
    seed, plans, tiers = arg.split(":")
    return int(seed), int(plans), tiers.split(",")


def ngrams(features: list[dict], n: int = 4) -> str:
    return ", ".join(f"{f['ngram']} ({f['evidence_docs']}/{f['other_docs']})" for f in features[:n])


def null_text(episodes: list, shuffles: int) -> str:
    """The gate's AUCs with the session texts shuffled ``shuffles`` times, summarised."""
    if not shuffles:
        return ""
    aucs = null_aucs(episodes, shuffles)
    outside = sum(abs(a - 0.5) > 0.10 for a in aucs) / len(aucs)
    return (f" {statistics.mean(aucs):.3f} ± {statistics.stdev(aucs):.3f}, "
            f"{outside:.0%} outside 0.40–0.60 |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("worlds", nargs="*", default=["0:30:64k"], help="SEED:PLANS:TIERS")
    ap.add_argument("--null", type=int, default=0, help="text shuffles per row (0: none)")
    args = ap.parse_args()
    print("| seed | plans | tier | max repeats | commonest line | AUC (gated) | 95 % interval "
          "| AUC without fillers | verdict | top evidence n-grams (ev/other docs) "
          "| top other n-grams |" + (" shuffled texts |" if args.null else ""))
    print("|---:|---:|---|---:|---|---:|---|---:|---|---|---|" + ("---|" if args.null else ""))
    for arg in args.worlds:
        seed, plans, tiers = parse(arg)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench"
            generate(SynthConfig(out=str(out), seed=seed, tiers=tiers, questions=plans,
                                 layout="timeline"))
            for tier in tiers:
                episodes = tier_episodes(out, tier)
                reps = repeated_lines(episodes)
                line = reps.worst[0]["line"][:60] if reps.worst else ""
                split = gate_episodes(episodes)
                res = indistinguishability(split)
                lo, hi = res.auc_interval or (float("nan"), float("nan"))
                print(f"| {seed} | {plans} | {tier} | {reps.max_count} | {line} | "
                      f"{res.auc:.3f} | {lo:.3f}–{hi:.3f} | {res.auc_without_fillers:.3f} | "
                      f"{res.verdict} | {ngrams(res.top_features['evidence'])} | "
                      f"{ngrams(res.top_features['other'])} |{null_text(split, args.null)}",
                      flush=True)


if __name__ == "__main__":
    main()
