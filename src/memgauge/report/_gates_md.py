"""The validation gates' Markdown (``gates.md``) of a generated benchmark, a labelled one and
the games: rendering of the results dicts only; the gates compute in
:mod:`memgauge.validation`, which writes these files (moved here: issue 26 §2)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

# The gates' verdict strings (validation/_gates.py's Verdict), as the results dicts hold them.
FAIL = "FAIL"
PASS = "PASS"
REPEAT_LIMIT = 2  # validation._gates.REPEAT_LIMIT: the gate writes its limit; this is the fallback
NOT_APPLICABLE = "N/A"


def plain_data(obj: Any) -> Any:
    """Result dataclasses as plain dicts and lists (the gates hand over either)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): plain_data(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain_data(v) for v in obj]
    return obj


def _fmt(x: Any, nd: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _verdict(gate: Mapping[str, Any]) -> str:
    return str(gate.get("verdict", "INFO"))


def _pct(x: Any) -> str:
    return "–" if x is None else f"{100 * float(x):.1f}%"


def _ids(ids: Sequence[str], total: int) -> str:
    shown = ", ".join(f"`{i}`" for i in ids)
    more = total - len(ids)
    return shown + (f" (+{more} more)" if more > 0 else "")


def _feature_list(features: Sequence[Mapping[str, Any]], n: int) -> str:
    return ", ".join(f"`{f['ngram']}` ({f['evidence_docs']} evidence / {f['other_docs']} other)"
                     for f in features[:n]) or "–"


def _interval_text(interval: Any) -> str:
    if not interval:
        return ""
    return (f"; 95 % bootstrap interval {_fmt(interval[0])}–{_fmt(interval[1])} (questions "
            "resampled: an interval that crosses a bound is a marginal result)")


def _md_indist(g: Mapping[str, Any]) -> list[str]:
    dev = float(g.get("max_deviation", 0.10))
    out = [f"## Evidence/haystack indistinguishability — {_verdict(g)}", "",
           ("Out-of-fold ROC AUC of a TF-IDF + logistic-regression classifier separating "
            "evidence from all other sessions (haystack, decoys and text-only fillers) by "
            f"their text: **{_fmt(g.get('auc'))}** (pass if |AUC − 0.5| ≤ {dev:.2f}, i.e. "
            f"{0.5 - dev:.2f}–{0.5 + dev:.2f}; 0.5 = indistinguishable, far below 0.5 = "
            f"separable the other way){_interval_text(g.get('auc_interval'))}. Without the "
            "fillers: "
            f"{_fmt(g.get('auc_without_fillers'))} (reported, not gated)."), "",
           (f"- documents: {g.get('n_evidence')} evidence, {g.get('n_other')} other "
            f"({g.get('n_fillers')} of them fillers; +{g.get('n_repeats', 0)} repeated copies "
            "dropped)"),
           (f"- questions: {g.get('n_questions')}; cross-validation groups: "
            f"{g.get('n_groups')} (one per question; a shared session, or one outside every "
            "question as in a timeline, joins a question of its family, else is a group of "
            f"its own); folds: {g.get('folds')}")]
    if g.get("features_file"):
        out.append(f"- the classifier's top n-grams each way: `{g['features_file']}`")
    top = g.get("top_features") or {}
    if g.get("verdict") == FAIL and top:
        out += [f"- what gives evidence away: {_feature_list(top.get('evidence', []), 5)}",
                f"- what marks the others: {_feature_list(top.get('other', []), 5)}"]
    if g.get("note"):
        out.append(f"- note: {g['note']}")
    return out


def _md_near(g: Mapping[str, Any]) -> list[str]:
    out = [f"## Near-duplicate images — {_verdict(g)}", "",
           (f"{g.get('n_files')} image files (from {g.get('n_images')} uses); pairs within "
            f"{g.get('max_distance')} bits of perceptual hash:"), "",
           f"- same facts (re-renders, fine): {g.get('same_facts')}",
           f"- different facts (look-alikes, information): {g.get('different_facts')}",
           (f"- **pixel-identical with different facts (bug; must be 0): "
            f"{g.get('exact_different_facts')}**")]
    by_kind = g.get("different_facts_by_kind") or {}
    if by_kind:
        out += ["", "| kind | look-alike pairs with different facts |", "|---|---:|"]
        out += [f"| {k} | {v} |" for k, v in by_kind.items()]
    exact = g.get("examples_exact_different_facts") or []
    if exact:
        out += ["", "Pixel-identical images with different facts:", ""]
        out += [f"- `{e['a']}` ({e['kind_a']}) = `{e['b']}` ({e['kind_b']})" for e in exact]
    if g.get("missing_files"):
        out += ["", f"Unreadable files: {_ids(g['missing_files'], len(g['missing_files']))}"]
    return out


def _md_caption(g: Mapping[str, Any]) -> list[str]:
    if "skipped" in g:
        return ["## Caption-proof (OCR) — SKIPPED", "", str(g["skipped"])]
    out = ["## Caption-proof (OCR) — INFO", "",
           ("Share of questions whose needed strings all appear in the OCR text of their "
            f"evidence images: **{_pct(g.get('survival_rate'))}** "
            f"({g.get('n_surviving')}/{g.get('n_questions')}; {g.get('n_images')} images "
            f"read, {g.get('ocr_errors', 0)} unreadable, {g.get('n_without_images', 0)} "
            "questions with no evidence image). Lower means captions/OCR recover less."), ""]
    for title, table in (("X", g.get("by_x") or {}), ("family", g.get("by_family") or {})):
        if not table:
            continue
        out += [f"| {title} | questions | surviving | rate |", "|---|---:|---:|---:|"]
        out += [f"| {k} | {v['n']} | {v['surviving']} | {_pct(v['rate'])} |"
                for k, v in table.items()]
        out.append("")
    return out[:-1] if out[-1] == "" else out


def _md_oracles(tiers: Mapping[str, Any]) -> list[str]:
    rows = []
    for tier, t in tiers.items():
        o, v = t.get("oracle"), t.get("visual_necessity")
        if o:
            fail = ("" if not o.get("failing") else
                    " failing: " + _ids(o["failing"], o["n"] - o["n_correct"]))
            rows.append(f"| {tier} | oracle accuracy | {_pct(o.get('accuracy'))} "
                        f"({o.get('n_correct')}/{o.get('n')}, {o.get('n_error')} errors) | "
                        f"≥ {_pct(o.get('expect'))} | {_verdict(o)}{fail} |")
        if v:
            ans = ("" if not v.get("answered") else
                   " answered: " + _ids(v["answered"], v["n_correct"]))
            rows.append(f"| {tier} | text-only oracle on questions that need an image | "
                        f"{_pct(v.get('fraction'))} ({v.get('n_correct')}/{v.get('n')}, "
                        f"{v.get('n_error')} errors) | ≤ {_pct(v.get('threshold'))} | "
                        f"{_verdict(v)}{ans} |")
    if not rows:
        return []
    return ["## Oracles", "",
            "| tier | gate | value | threshold | result |", "|---|---|---|---|---|", *rows]


def _md_repeats(tiers: Mapping[str, Any]) -> list[str]:
    gates = {tier: t["repeats"] for tier, t in tiers.items() if t.get("repeats")}
    if not gates:
        return []
    failed = any(g.get("verdict") == FAIL for g in gates.values())
    limit = next(iter(gates.values())).get("limit", REPEAT_LIMIT)
    out = [f"## Repeated lines — {FAIL if failed else PASS}", "",
           (f"The most times one conversation line (case, spacing and image placeholders "
            f"aside) occurs in one episode; pass if at most {limit}."), "",
           "| tier | episodes | most repeats of a line | episodes over the limit | result |",
           "|---|---:|---:|---:|---|"]
    out += [f"| {tier} | {g.get('n_episodes')} | {g.get('max_count')} | {g.get('n_over')} | "
            f"{_verdict(g)} |" for tier, g in gates.items()]
    examples = [(tier, w) for tier, g in gates.items() for w in (g.get("worst") or [])[:3]]
    if examples:
        out += ["", "Most repeated:", ""]
        out += [f"- {tier} `{w['episode_id']}`: {w['count']}× “{w['line']}”"
                for tier, w in examples]
    return out


def _md_retrieval(tiers: Mapping[str, Any]) -> list[str]:
    rows = []
    ks: list[str] = []
    for t in tiers.values():
        for r in (t.get("retrieval") or {}).values():
            ks += [str(k) for k in r.get("ks", r.get("recall_at", {}).keys())
                   if str(k) not in ks]
    ks.sort(key=int)
    for tier, t in tiers.items():
        for name, r in (t.get("retrieval") or {}).items():
            rec, allf = r.get("recall_at", {}), r.get("all_found_at", {})
            cells = [_fmt(rec.get(k)) for k in ks] + [_fmt(allf.get(k)) for k in ks]
            rows.append(f"| {tier} | {name} | {r.get('n_questions')} | "
                        f"{_fmt(r.get('mean_sessions'), 1)} | " + " | ".join(cells)
                        + f" | {_fmt(r.get('mrr'))} |")
    if not rows:
        return []
    head = (["tier", "retriever", "questions", "sessions/episode"] + [f"R@{k}" for k in ks]
            + [f"all@{k}" for k in ks] + ["MRR"])
    return ["## Retrieval difficulty — INFO", "",
            ("Evidence sessions found by ranking each episode's sessions (text only, no "
             "captions) against the question."), "",
            "| " + " | ".join(head) + " |",
            "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|", *rows]


def render_gates_markdown(results: Mapping[str, Any]) -> str:
    """Markdown for the validation gates. Values may be the result dataclasses or their
    dicts. Every key is optional; the expected shape::

        {
          "benchmark": {"digest": str, "tiers": [str], "generator_version": str},
          "passed": bool,                       # overall verdict, if computed
          "not_applicable": [str],              # gates that were N/A (see overall_verdict)
          "tiers": {
            "<tier>": {
              "oracle": AccuracyGateResult,
              "visual_necessity": VisualNecessityResult,
              "retrieval": {"bm25": RetrievalResult, "embed": RetrievalResult},
              "repeats": RepeatedLinesResult,
            },
          },
          "indistinguishability": IndistinguishabilityResult,
          "near_duplicates": NearDuplicateResult,
          "caption_proof": CaptionProofResult | {"skipped": "<why>"},
        }

    Gates show PASS/FAIL against their thresholds (N/A with nothing to check); reports
    show INFO.
    """
    r = plain_data(results)
    lines = ["# Validation gates", ""]
    bench = r.get("benchmark") or {}
    if bench:
        bits = [f"{k}: `{v}`" if k == "digest" else f"{k}: {v}" for k, v in bench.items()
                if not isinstance(v, list)]
        bits += [f"{k}: {', '.join(map(str, v))}" for k, v in bench.items()
                 if isinstance(v, list)]
        lines += ["; ".join(bits), ""]
    if "passed" in r:
        na = r.get("not_applicable") or []
        lines += [f"**Overall: {'PASS' if r['passed'] else 'FAIL'}**"
                  + (f" (N/A, nothing to check: {', '.join(na)})" if na else ""), ""]
    tiers = r.get("tiers") or {}
    sections = [_md_oracles(tiers), _md_repeats(tiers)]
    if r.get("indistinguishability"):
        sections.append(_md_indist(r["indistinguishability"]))
    if r.get("near_duplicates"):
        sections.append(_md_near(r["near_duplicates"]))
    sections.append(_md_retrieval(tiers))
    if r.get("caption_proof"):
        sections.append(_md_caption(r["caption_proof"]))
    for s in sections:
        if s:
            lines += [*s, ""]
    return "\n".join(lines).rstrip() + "\n"


def render_labelled_markdown(r: dict[str, Any]) -> str:
    b = r["benchmark"]
    lines = ["# Validation gates (labelled benchmark)", "",
             f"benchmark: {b['name']}; data: `{b['data']}`; answering model: `{b['model']}`",
             "", f"**Overall: {r['verdict']}**", "", "## Shortcut audits", "",
             ("Each must stay near chance: PASS when accuracy (debiased EM, the mean over a "
              "question's rotations) ≤ the binomial upper 95 % limit of chance at n "
              "questions."), "",
             ("| audit | accuracy (95 % CI) | all rotations | n | chance | limit | errors | "
              "result |"), "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, g in r["audits"].items():
        ci = g.get("ci")
        shown = _pct(g["accuracy"]) + (f" ({_pct(ci[0])}–{_pct(ci[1])})" if ci else "")
        errors = str(g["n_error"]) + (f" ({g['n_incomplete']} questions left out)"
                                      if g["n_incomplete"] else "")
        lines.append(f"| {name} | {shown} | {_pct(g['all_rotations'])} | {g['n']} | "
                     f"{_pct(g['chance'])} | {_pct(g['upper_limit'])} | {errors} | "
                     f"{g['verdict']}{' — ' + g['note'] if g.get('note') else ''} |")
    # Listed under a pass too: a handful right on every rotation is where a leak starts.
    leaks = {n: g["leaking"] for n, g in r["audits"].items() if g["leaking"]}
    for name, ids in leaks.items():
        shown_ids = ", ".join(f"`{i}`" for i in ids[:20])
        lines += ["", f"{name} ({r['audits'][name]['verdict']}): right on every rotation: "
                  f"{shown_ids}"
                  + (f" (+{len(ids) - 20} more)" if len(ids) > 20 else "")]
    o = r["oracle_screening"]
    lines += ["", "## Oracle screening (gold clue rounds + images) — INFO", ""]
    if "skipped" in o:
        lines.append(f"skipped: {o['skipped']}")
    else:
        lines.append(f"accuracy {_pct(o['accuracy'])}, all rotations "
                     f"{_pct(o['all_rotations'])} (n = {o['n']}, {o['n_error']} errors); "
                     f"flagged (a rotation wrong): {', '.join(o['flagged']) or 'none'}")
    c = r["caption_proof"]
    lines += ["", "## Caption-Proof (gold clues: captions vs native images) — INFO", ""]
    if "skipped" in c:
        lines.append(f"skipped: {c['skipped']}")
    else:
        arms = c["arms"]
        gains = [a for a in arms if a != c["native"]] if c["native"] else []
        head = ["X", "n", *arms, *(f"image − {a}" for a in gains)]
        lines += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        for level, row in c["by_x"].items():
            cells = [level, str(row["n"]), *(_pct(row[a]) for a in arms),
                     *(f"{100 * row[f'gain_over_{a}']:+.1f} pts" for a in gains)]
            lines.append("| " + " | ".join(cells) + " |")
        if c.get("image_arm"):
            lines += ["", f"image arm {c['image_arm']}; no gain without it"]
        if c.get("note"):
            lines += ["", c["note"]]
    return "\n".join(lines) + "\n"


def render_games_markdown(r: dict[str, Any]) -> str:
    c, b = r["constant_answer"], r["blind_baseline"]
    o = c["overall"]
    lines = ["# Validation gates (games benchmark)", "",
             (f"{r['benchmark']['questions']} questions, generator version "
             f"{r['benchmark']['generator_version']}. Verdict: **{r['verdict']}**."), "",
             "## Constant answer", "",
             (f"Best single answer to every question: `{o['constant']}`, "
             f"{_pct(o['accuracy'])} (chance {_pct(o['chance'])}, limit chance + "
             f"{100 * c['margin']:.0f} points): {o['verdict']}."), "",
             (f"Per template (judged from {c['min_questions']} questions, open and closed "
             "alike; an adversarial template is counted with the one it is worded as):"), "",
             "| template | n | best constant | accuracy | chance | verdict |",
             "|---|---:|---|---:|---:|---|"]
    for tid, t in c["templates"].items():
        name = " + ".join(t.get("members") or [tid])
        lines.append(f"| {name} | {t['n']} | `{t['constant']}` | {_pct(t['accuracy'])} | "
                     f"{_pct(t['chance'])} | {t['verdict']} |")
    lines += ["", "## Blind baseline (no history)", ""]
    if b["verdict"] == NOT_APPLICABLE:
        lines.append(f"N/A: {b['note']}.")
    else:
        lines.append(f"The question alone, guessed from the other {b['trajectories'] - 1} "
                     f"trajectories' answers: {_pct(b['accuracy'])} (chance "
                     f"{_pct(b['chance'])}): {b['verdict']}.")
    return "\n".join(lines) + "\n"
