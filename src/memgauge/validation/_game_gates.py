"""``memgauge validate --bench games --data BENCH_DIR``: the gates of a games benchmark
(design 0039), computed from the questions and their gold answers alone — no run needed.

- **Constant answer.** For each template, the best single answer given to every question
  (its most frequent gold value, or "not answerable"); its accuracy must stay at or under
  chance + 10 points, chance being 1/k for the k answer values the template's questions
  have (a closed template: its declared values, "not answerable" too when asked; an open
  one: its distinct answers, at least 2). Gated per template, open or closed, with at
  least ``MIN_QUESTIONS`` questions (fewer: listed, not judged), and over the whole
  benchmark (the best single answer to every question against the question-weighted mean
  chance). The measure is ``games._constant``'s, which the generator caps.
- **Blind baseline.** An answerer that sees the question but no history: for each question
  the most frequent gold of the same template and question wording (step numbers blanked)
  in the *other* trajectories, else the template's most frequent there. Its accuracy must
  stay at or under the overall chance + 10 points, as the synth gates bound their blind
  runs.

Results go to ``OUT/gates.json`` and ``OUT/gates.md``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..benchmarks import BenchmarkOptions
from ..benchmarks.games import GamesBenchmark
from ..games import _constant
from ..games._constant import MARGIN, Answer, answer_of
from ..games.templates import all_templates
from ..report._gates_md import render_games_markdown
from ._gates import FAIL, NOT_APPLICABLE, PASS, overall_verdict

MIN_QUESTIONS = 10  # below this a template's best constant is noise, listed but not judged


def _answer(row: Any) -> Answer:
    return answer_of(row.answer, row.answerable, row.alternatives)


def golds(row: Any) -> frozenset[str]:
    """Every answer that is right for the question, canonical (case, spaces)."""
    return _answer(row).golds


def best_constant(rows: Sequence[Any]) -> tuple[str | None, float]:
    """The single answer right for the most questions, and the share it gets right."""
    answer, hits = _constant.best_constant([_answer(r) for r in rows])
    return answer, hits / len(rows) if rows else 0.0


def constant_answer_gate(rows: Sequence[Any], values: dict[str, tuple[str, ...]],
                         families: dict[str, str] | None = None) -> dict[str, Any]:
    """The gate per template family (``families`` maps an adversarial template to the
    answerable one it is worded as: an answerer cannot tell their questions apart) and over
    all questions."""
    family = families or {}
    by_template: dict[str, list[Any]] = {}
    for r in rows:
        template: str = r.template
        by_template.setdefault(family.get(template, template), []).append(r)
    templates: dict[str, Any] = {}
    for tid, trs in sorted(by_template.items()):
        answer, acc = best_constant(trs)
        chance = _constant.chance([_answer(r) for r in trs], values.get(tid, ()))
        closed = bool(values.get(tid))
        ok = acc <= chance + MARGIN + 1e-9
        verdict = NOT_APPLICABLE if len(trs) < MIN_QUESTIONS else PASS if ok else FAIL
        templates[tid] = {"n": len(trs), "constant": answer, "accuracy": round(acc, 4),
                          "chance": round(chance, 4), "closed": closed, "verdict": verdict,
                          "members": sorted({r.template for r in trs})}
    answer, acc = best_constant(rows)
    chance = sum(t["chance"] * t["n"] for t in templates.values()) / max(len(rows), 1)
    failed = sorted(t for t, g in templates.items() if g["verdict"] == FAIL)
    overall_ok = acc <= chance + MARGIN + 1e-9
    return {"margin": MARGIN, "min_questions": MIN_QUESTIONS, "n": len(rows),
            "overall": {"constant": answer, "accuracy": round(acc, 4),
                        "chance": round(chance, 4),
                        "verdict": PASS if overall_ok else FAIL},
            "templates": templates, "failed_templates": failed,
            "verdict": PASS if overall_ok and not failed else FAIL}


def _wording(row: Any) -> str:
    return re.sub(r"\d+", "#", row.text.lower())


def blind_baseline(rows: Sequence[Any], chance: float) -> dict[str, Any]:
    """The no-history answerer, out of fold by trajectory (its guess for a question never
    learns from that question's own trajectory)."""
    trajectories = sorted({r.trajectory for r in rows})
    if len(trajectories) < 2:
        return {"verdict": NOT_APPLICABLE, "n": len(rows),
                "note": "needs two or more trajectories: the blind answerer learns its "
                        "guesses from the other trajectories' gold answers"}
    right = 0
    for held_out in trajectories:
        train = [r for r in rows if r.trajectory != held_out]
        by_wording: dict[tuple[str, str], Counter[str]] = {}
        by_template: dict[str, Counter[str]] = {}
        for r in train:
            for g in golds(r):
                by_wording.setdefault((r.template, _wording(r)), Counter())[g] += 1
                by_template.setdefault(r.template, Counter())[g] += 1
        for r in (r for r in rows if r.trajectory == held_out):
            counts = by_wording.get((r.template, _wording(r))) or by_template.get(r.template)
            guess = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0] if counts else None
            right += guess in golds(r)
    acc = right / len(rows)
    ok = acc <= chance + MARGIN + 1e-9
    return {"n": len(rows), "accuracy": round(acc, 4), "chance": round(chance, 4),
            "margin": MARGIN, "trajectories": len(trajectories),
            "verdict": PASS if ok else FAIL}


def validate_games(data: str | Path, out: Path,
                   progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Load BENCH_DIR through the games loader (its checks name file, line and field), run
    both gates, write ``gates.json`` and ``gates.md`` under ``out``."""
    say = progress or (lambda msg: None)
    bench = GamesBenchmark(BenchmarkOptions(data=str(data)))
    registered = all_templates()
    asked = {r.template for r in bench.rows} & set(registered)
    values = {tid: registered[tid].values for tid in asked if registered[tid].values}
    families = {tid: registered[tid].family for tid in asked if registered[tid].twin}
    say("constant-answer gate")
    constant = constant_answer_gate(bench.rows, values, families)
    say("blind baseline")
    blind = blind_baseline(bench.rows, constant["overall"]["chance"])
    results: dict[str, Any] = {
        "benchmark": {"name": "games", "data": str(data),
                      "generator_version": bench.info.get("generator_version"),
                      "questions": len(bench.rows)},
        "constant_answer": constant, "blind_baseline": blind}
    results.update(overall_verdict({"constant_answer": constant, "blind_baseline": blind}))
    out.mkdir(parents=True, exist_ok=True)
    (out / "gates.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n",
                                    encoding="utf-8")
    (out / "gates.md").write_text(render_games_markdown(results), encoding="utf-8")
    return results


__all__ = ["best_constant", "blind_baseline", "constant_answer_gate", "golds",
           "validate_games"]
