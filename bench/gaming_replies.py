"""Could a system game the rule scorer? (issue 24, design 0038)

Scores three reply policies on every question of a benchmark with the rule scorer, SubEM and
F1, and prints their accuracies:

* ``dump``: the text of the latest session the system saw before the question (the last
  session at or before ``asked_after``, else the episode's last session), what a memory
  service that returns raw retrieved text answers;
* ``hedge``: every candidate, listed: the distinct gold answers of all questions of the same
  game template (else answer type) in the benchmark, the question's own gold among them,
  plus the type's usual values (0-10, yes/no, the moves), as "It could be A, B, C or D.";
  on a refusal question, the answerable values of its template;
* ``oracle``: the gold answer itself, as the reply (a list answer as its items joined by
  commas): each answer key read by its own scorer.

    python bench/gaming_replies.py --bench synth --data memgauge-demo/benchmark --tier 4k
    python bench/gaming_replies.py --bench games --data games-bench

The rule scorer's figures for dump and hedge must stay at or under 2 %; oracle at 100 %.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from memgauge.benchmarks import BenchmarkOptions
from memgauge.registry import lookup
from memgauge.schema import Episode, Question
from memgauge.scoring import SubEMScorer, TokenF1Scorer, TypedRuleScorer

SCORERS = (TypedRuleScorer(), SubEMScorer(), TokenF1Scorer())


def _episodes(bench: str, data: str, tier: str | None) -> Iterator[Episode]:
    loader = lookup("benchmark", bench)(BenchmarkOptions(data=data, tier=tier))
    yield from loader.episodes()


def _session_text(episode: Episode, question: Question) -> str:
    sessions = episode.sessions
    if question.asked_after is not None:
        ids = [s.session_id for s in sessions]
        if question.asked_after in ids:
            sessions = sessions[: ids.index(question.asked_after) + 1]
    last = sessions[-1]
    return "\n".join(f"{t.speaker or t.role}: {t.text}" for t in last.turns)


def _domain_key(question: Question) -> str:
    """Questions whose answers range over the same values: a game template, else a type."""
    game = question.meta.get("game")
    if isinstance(game, dict) and game.get("template"):
        return str(game["template"])
    return question.answer_type.value


def _gold(question: Question) -> str:
    """The gold answer as a reply: a list answer (list, set, path) as its items."""
    if isinstance(question.answer, list):
        return ", ".join(str(a) for a in question.answer)
    return question.answers[0]


# Values a hedge adds for each answer type, beyond the golds of its domain.
GENERIC = {
    "integer": [str(n) for n in range(11)], "number": [str(n) for n in range(11)],
    "yes_no": ["yes", "no"], "direction": ["left", "right", "up", "down"],
    "action": ["move_left", "move_right", "move_up", "move_down", "do", "noop"],
}


def _domains(episodes: list[Episode]) -> dict[str, list[str]]:
    domains: dict[str, list[str]] = defaultdict(list)
    for ep in episodes:
        for q in ep.questions:
            values = list("ABCDEFGHIJ"[: len(q.options)]) if q.options else []
            if q.answer_type.value != "refusal":
                values += [_gold(q), *GENERIC.get(q.answer_type.value, [])]
            key = _domain_key(q)
            domains[key] += [v for v in values if v not in domains[key]]
    return domains


def _hedge(domain: list[str], question: Question) -> str:
    values = list(domain)
    if question.answer_type.value != "refusal" and _gold(question) not in values:
        values.append(_gold(question))
    if len(values) < 2:
        values.append("something else")
    return f"It could be {', '.join(values[:-1])} or {values[-1]}."


def measure(bench: str, data: str, tier: str | None) -> dict[str, Any]:
    episodes = list(_episodes(bench, data, tier))
    domains = _domains(episodes)
    totals: dict[str, dict[str, list[float]]] = {
        policy: {s.name: [] for s in SCORERS} for policy in ("dump", "hedge", "oracle")}
    hedged: dict[str, int] = defaultdict(int)
    for ep in episodes:
        for q in ep.questions:
            replies = {"dump": _session_text(ep, q), "hedge": _hedge(domains[_domain_key(q)], q),
                       "oracle": _gold(q)}
            for policy, reply in replies.items():
                for scorer in SCORERS:
                    score = scorer.score(q, reply)
                    if score is None:
                        continue
                    totals[policy][scorer.name].append(score.value)
                    if scorer.name == "rule" and score.details.get("label") == "hedged":
                        hedged[policy] += 1
    out: dict[str, Any] = {"bench": bench, "tier": tier,
                           "questions": sum(len(e.questions) for e in episodes),
                           "rule_version": SCORERS[0].version}
    for policy, by_scorer in totals.items():
        out[policy] = {name: round(100 * sum(v) / len(v), 1) if v else None
                       for name, v in by_scorer.items()}
        out[policy]["hedged"] = hedged[policy]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--tier")
    args = parser.parse_args()
    print(json.dumps(measure(args.bench, args.data, args.tier), indent=1))


if __name__ == "__main__":
    main()
