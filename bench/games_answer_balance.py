#!/usr/bin/env python3
"""Per-template answer balance of a games benchmark folder (design 0039): for every closed
template (yes/no, before/after) the share of each answer value, the best constant's share,
and how many questions ask about what the sessions never show (the player's reason, the
admissible commands). With ``--families``, also every template family's best constant
against its chance, measured as ``memgauge validate --bench games`` measures it.

    python3 bench/games_answer_balance.py BENCH_DIR [--families]
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
    ap.add_argument("--families", action="store_true",
                    help="also list every template family's best constant (design 0039)")
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
    if args.families:
        print_families(rows)


def print_families(rows: list[dict]) -> None:
    """Each template family (a template with the adversarial ones worded as it), largest
    excess over chance + 10 points first: n, the best constant, its share, chance."""
    from memgauge.games._constant import MARGIN, answer_of, best_constant, chance
    from memgauge.games.templates import all_templates

    registered = all_templates()
    families: dict[str, list[dict]] = {}
    for r in rows:
        t = registered.get(r["template"])
        families.setdefault(t.family if t else r["template"], []).append(r)
    table = []
    for fid, frs in families.items():
        answers = [answer_of(r["answer"], r["answerable"], r["alternatives"]) for r in frs]
        t = registered.get(fid)
        ch = chance(answers, t.values if t else ())
        constant, hits = best_constant(answers)
        table.append((hits / len(frs) - ch - MARGIN, fid, len(frs), constant, hits / len(frs), ch))
    print("\n| family | n | best constant | share | chance | over the limit |")
    print("|---|---:|---|---:|---:|---|")
    for excess, fid, n, constant, share, ch in sorted(table, key=lambda x: (-x[0], x[1])):
        over = "yes" if excess > 1e-9 else "no"
        judged = "" if n >= 10 else " (n < 10)"
        print(f"| {fid} | {n} | `{constant}` | {100 * share:.0f} % | {100 * ch:.0f} % | "
              f"{over}{judged} |")


if __name__ == "__main__":
    main()
