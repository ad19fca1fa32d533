#!/usr/bin/env python3
"""Per-template answer balance of a games benchmark folder (design 0039): for every closed
template (yes/no, before/after) the share of each answer value, the best constant's share,
and how many questions ask about what the sessions never show (the player's reason, the
admissible commands).

    python3 bench/games_answer_balance.py BENCH_DIR
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

CLOSED = {"crafter.event_order"}  # closed templates whose answer type is not yes_no
UNSHOWN = {"text.reason_at_step", "text.valid_action"}  # templates of generator version 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench_dir", type=Path)
    args = ap.parse_args()
    rows = [json.loads(line) for line in (args.bench_dir / "questions.jsonl").open()]
    by_template: dict[str, Counter[str]] = {}
    for r in rows:
        if r["answer_type"] == "yes_no" or r["template"] in CLOSED:
            by_template.setdefault(r["template"], Counter())[str(r["answer"])] += 1
    print("| template | n | answers | best constant |")
    print("|---|---:|---|---:|")
    for tid, counts in sorted(by_template.items()):
        n = sum(counts.values())
        shares = ", ".join(f"{v} {c} ({100 * c / n:.0f} %)" for v, c in counts.most_common())
        print(f"| {tid} | {n} | {shares} | {100 * counts.most_common(1)[0][1] / n:.0f} % |")
    unshown = Counter(r["template"] for r in rows if r["template"] in UNSHOWN
                      or r["params"].get("source") == "reason")
    print(f"\n{len(rows)} questions; about the reason or the admissible commands: "
          f"{sum(unshown.values())} {dict(sorted(unshown.items()))}")


if __name__ == "__main__":
    main()
