"""`memgauge generate synth` then `memgauge validate`, as a user runs them, on many seeds and
question counts (issue 28): one row per benchmark with validate's exit status, the overall
verdict, the indistinguishability AUC with its bootstrap interval, and every other gate.

    python3 bench/validate_seeds.py --seeds 0-19 --questions 40,60,200 --jobs 2

Tiers 8k,32k (the default): validate gates indistinguishability on the largest tier and the
oracle, visual-necessity and repeats gates on each. Caption-proof (OCR) is information, not
a gate, and is skipped (``--no-ocr``) to halve the time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from indistinguishability import seed_list  # bench/ (the script's folder)


def row(work: Path, seed: int, n: int) -> str:
    """Generate and validate one benchmark; its table row."""
    out = work / f"s{seed}-q{n}"
    subprocess.run(["memgauge", "generate", "synth", "--seed", str(seed), "--questions",
                    str(n), "--out", str(out)], check=True, capture_output=True)
    done = subprocess.run(["memgauge", "validate", "--no-ocr", str(out)],
                          capture_output=True, text=True)
    path = out / "validation" / "gates.json"
    if not path.exists():
        return f"| {seed} | {n} | {done.returncode} | no gates.json: {done.stderr[-200:]!r} | | |"
    g = json.loads(path.read_text(encoding="utf-8"))
    ind = g["indistinguishability"]
    lo, hi = ind["auc_interval"]
    fails = [f"{t} {name}" for t, gates in g["tiers"].items()
             for name in ("oracle", "visual_necessity", "repeats")
             if gates[name]["verdict"] != "PASS"]
    if g["near_duplicates"]["verdict"] != "PASS":
        fails.append("near-duplicates")
    return (f"| {seed} | {n} | {done.returncode} | {'PASS' if g['passed'] else 'FAIL'} | "
            f"{ind['auc']:.3f} ({lo:.3f}–{hi:.3f}) {ind['verdict']} | "
            f"{', '.join(fails) or 'all pass'} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--questions", default="40", help="comma-separated question counts")
    ap.add_argument("--jobs", type=int, default=2, help="benchmarks validated at once")
    args = ap.parse_args()
    runs = [(s, int(n)) for s in seed_list(args.seeds) for n in args.questions.split(",")]
    print("| seed | questions | exit | overall | indistinguishability, largest tier "
          "(95 % interval) | other gates (oracle, visual necessity, repeats per tier; "
          "near-duplicates) |")
    print("|---:|---:|---:|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(lambda r: row(Path(tmp), *r), runs):
            print(line, flush=True)


if __name__ == "__main__":
    main()
