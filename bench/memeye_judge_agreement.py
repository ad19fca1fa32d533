"""How a judge's verdicts agree with the rule scorer's letter match on MemEye's MCQ rotations.

    python3 bench/memeye_judge_agreement.py RUN [RUN ...] [--judge NAME]

Per run folder: the MCQ rotations carrying both a ``rule`` score and the judge's (a judge
failure is left out and counted), how often the two agree, the 2 × 2 counts, and the judge's
mean on the open twins (no rule reading to compare with; the rubric is MemEye's five levels).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def agreement(run: Path, judge: str) -> dict[str, object]:
    rows = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()
            if line.strip()]
    mcq = [r for r in rows if r.get("answer_type") == "mcq" and r["status"] == "ok"]
    both = [r for r in mcq if "rule" in r["scores"] and judge in r["scores"]]
    cells = {(a, b): 0 for a in (0, 1) for b in (0, 1)}
    for r in both:
        cells[(int(r["scores"]["rule"] >= 0.5), int(r["scores"][judge] >= 0.5))] += 1
    agree = cells[(0, 0)] + cells[(1, 1)]
    open_ = [r["scores"][judge] for r in rows
             if r.get("answer_type") == "free_text" and judge in r["scores"]]
    return {"run": run.name, "mcq_rotations": len(mcq), "compared": len(both),
            "judge_failed": len(mcq) - len(both),
            "agreement": agree / len(both) if both else None,
            "rule1_judge1": cells[(1, 1)], "rule1_judge0": cells[(1, 0)],
            "rule0_judge1": cells[(0, 1)], "rule0_judge0": cells[(0, 0)],
            "open_judged": len(open_),
            "open_mean": sum(open_) / len(open_) if open_ else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--judge", default="judge", help="the judge's score name")
    args = parser.parse_args()
    print("| run | MCQ rotations | compared | judge failed | agreement | rule 1 / judge 1 | "
          "rule 1 / judge 0 | rule 0 / judge 1 | rule 0 / judge 0 | open judged | open mean |")
    print("|---|" + "---:|" * 10)
    for run in args.runs:
        a = agreement(run, args.judge)
        pct = "–" if a["agreement"] is None else f"{100 * a['agreement']:.1f}%"
        mean = "–" if a["open_mean"] is None else f"{100 * a['open_mean']:.1f}%"
        print(f"| {a['run']} | {a['mcq_rotations']} | {a['compared']} | {a['judge_failed']} | "
              f"{pct} | {a['rule1_judge1']} | {a['rule1_judge0']} | {a['rule0_judge1']} | "
              f"{a['rule0_judge0']} | {a['open_judged']} | {mean} |")


if __name__ == "__main__":
    main()
