"""The labelled-benchmark gates (shortcut audits) on a MemEye-format set, timed per gate.

    python3 bench/labelled_gates.py --data DIR [--model none:] [--base-url URL]
    python3 bench/labelled_gates.py --synth-questions 40 --tier 128k --seed 0

With ``--synth-questions`` a synth benchmark is generated into a temporary folder with
``--format memeye`` and its MemEye export is validated. Prints each audit's accuracy
(debiased EM), its 95 % CI, the chance limit and the wall time of each gate's run; and the
binomial upper 95 % limit of chance (4 options) at n questions, for planning.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memgauge.validation import labelled as V
from memgauge.validation._labelled_gates import chance_gate, chance_upper_limit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data")
    ap.add_argument("--synth-questions", type=int)
    ap.add_argument("--tier", default="128k")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="none:")
    ap.add_argument("--base-url")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data
        if args.synth_questions:
            out = Path(tmp) / "synth"
            subprocess.run([sys.executable, "-c", "from memgauge.cli import app; app()", "generate",
                            "synth", "--out",
                            str(out), "--questions", str(args.synth_questions), "--tiers",
                            args.tier, "--seed", str(args.seed), "--format", "memeye"],
                           check=True, capture_output=True)
            data = str(out / "memeye")
        if not data:
            ap.error("give --data or --synth-questions")
        v = V.LabelledValidation(bench="memeye", data=data, out=Path(tmp) / "validation",
                                 model=args.model, base_url=args.base_url)
        options = V._check(v)
        shown = f"synth --questions {args.synth_questions}" if args.synth_questions else data
        print(f"model {args.model}; data {shown}")
        print("| audit | accuracy (95 % CI) | all rotations | n | chance limit | verdict "
              "| wall s |")
        print("|---|---:|---:|---:|---:|---|---:|")
        for name, variant in V.AUDITS.items():
            t0 = time.perf_counter()
            g = chance_gate(name, V._run(v, name, variant, options))
            wall = time.perf_counter() - t0
            ci = f"{100 * g.ci[0]:.1f}–{100 * g.ci[1]:.1f}" if g.ci else "–"
            acc = f"{100 * g.accuracy:.1f} % ({ci})" if g.accuracy is not None else "–"
            allr = f"{100 * g.all_rotations:.1f} %" if g.all_rotations is not None else "–"
            lim = f"{100 * g.upper_limit:.1f} %" if g.upper_limit is not None else "–"
            print(f"| {name} | {acc} | {allr} | {g.n} | {lim} | {g.verdict} | {wall:.2f} |")
    print()
    print("| n questions | 10 | 15 | 29 | 40 | 88 | 371 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("| chance limit (4 options) | " + " | ".join(
        f"{100 * chance_upper_limit(0.25, n):.1f} %" for n in (10, 15, 29, 40, 88, 371)) + " |")


if __name__ == "__main__":
    main()
