"""The free-text containment bound (design 0038) against real data: LoCoMo's gold answers,
the sessions a dump would return, and the replies of recorded runs.

    python bench/containment_bound.py --locomo ../shared/data/locomo10 [--runs RUN_DIR ...]

For each LoCoMo free-text question: the gold's tokens g and the bound 3g + 8; the tokens of
the question's latest evidence session (what a dump of it would send). For each recorded
reply of a free-text question that contains its gold: its tokens, and whether the bound
admits it. Tokens are memgauge's normalised tokens (``normalize_text``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from memgauge.benchmarks import BenchmarkOptions
from memgauge.registry import lookup
from memgauge.scoring import normalize_text, subem
from memgauge.scoring._hedge import containment_allowed


def _tokens(text: str) -> int:
    return len(normalize_text(text).split())


def _pct(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def locomo(folder: Path) -> dict[str, object]:
    golds: list[int] = []
    dumps: list[int] = []
    for path in sorted(folder.glob("*.json")):
        bench = lookup("benchmark", "locomo")(BenchmarkOptions(data=str(path)))
        for ep in bench.episodes():
            text = {s.session_id: "\n".join(t.text for t in s.turns) for s in ep.sessions}
            for q in ep.questions:
                if q.answer_type.value != "free_text":
                    continue
                g = _tokens(q.answers[0])
                golds.append(g)
                sessions = [p.session_id for p in q.evidence if p.session_id in text]
                if sessions:
                    dumps.append(_tokens(text[sessions[-1]]))
    bounds = [3 * g + 8 for g in golds]
    return {"free_text_questions": len(golds),
            "gold_tokens": {"median": statistics.median(golds), "p90": _pct(golds, 0.9),
                            "max": max(golds)},
            "bound": {"median": statistics.median(bounds), "max": max(bounds)},
            "dump_tokens": {"min": min(dumps), "median": statistics.median(dumps)},
            "dumps_within_their_bound": sum(
                1 for g, d in zip(golds, dumps, strict=False) if containment_allowed(d, g))}


def replies(run_dirs: list[str]) -> dict[str, object]:
    containing: list[tuple[int, bool]] = []
    for run in run_dirs:
        for line in (Path(run) / "records.jsonl").read_text().splitlines():
            r = json.loads(line)
            pred, gold = r.get("prediction"), r.get("gold")
            if r.get("answer_type") != "free_text" or not pred or not isinstance(gold, str):
                continue
            if subem(gold, pred):
                n, g = _tokens(pred), _tokens(gold)
                containing.append((n, containment_allowed(n, g)))
    return {"replies_containing_gold": len(containing),
            "admitted": sum(1 for _, ok in containing if ok),
            "reply_tokens": sorted(n for n, _ in containing)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", required=True)
    parser.add_argument("--runs", nargs="*", default=[])
    args = parser.parse_args()
    out = {"locomo": locomo(Path(args.locomo))}
    if args.runs:
        out["replies"] = replies(args.runs)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
