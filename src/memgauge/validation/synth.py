"""``memgauge validate DIR``: the gates that show a generated benchmark measures what it claims.

Oracles run through the normal runner (their run folders land in ``DIR/validation``), the
other gates read the episodes directly. Results go to ``DIR/validation/gates.json`` and
``gates.md``; the indistinguishability classifier's strongest n-grams to
``DIR/validation/indistinguishability_features.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._json_limits import load_document
from ..benchmarks import BenchmarkOptions
from ..benchmarks.synth._generate import parse_tier
from ..benchmarks.synth._loader import manifest_tiers
from ..benchmarks.synth._timeline import per_question_view
from ..errors import InputError
from ..registry import lookup
from ..report._gates_md import plain_data as _plain
from ..report._gates_md import render_gates_markdown
from ..retrieval._sessions import retrieval_recall
from ..runner import RunConfig, Runner, read_records
from ._gates import (
    accuracy_gate,
    caption_proof,
    indistinguishability,
    near_duplicates,
    overall_verdict,
    repeated_lines,
    visual_necessity_gate,
)


def tier_episodes(root: Path, tier: str) -> list[Any]:
    """The episodes of one tier of a synth export, as the loader yields them."""
    loader = lookup("benchmark", "synth")
    return list(loader(BenchmarkOptions(data=str(root), tier=tier)).episodes())


def gate_episodes(episodes: list[Any]) -> list[Any]:
    """Timeline episodes split per plan (see ``_timeline.per_question_view``); others as is."""
    out: list[Any] = []
    for ep in episodes:
        out += per_question_view(ep) if ep.meta.get("layout") == "timeline" else [ep]
    return out


FEATURES_FILE = "indistinguishability_features.json"


def indistinguishability_gate(episodes: list[Any], out: Path) -> dict[str, Any]:
    """The indistinguishability gate as a dict, its top features also written to
    ``out/FEATURES_FILE`` (named in the dict's ``features_file``), so a failing gate shows
    which words give evidence away."""
    result = _plain(indistinguishability(episodes))
    out.mkdir(parents=True, exist_ok=True)
    features = {
        "what": ("n-grams with the largest positive (evidence) and negative (other sessions) "
                 "coefficients of the TF-IDF + logistic-regression classifier of the "
                 "indistinguishability gate, refitted on all documents; *_docs count the "
                 "documents containing each"),
        **{k: result[k] for k in ("auc", "auc_interval", "auc_without_fillers", "verdict",
                                  "n_evidence", "n_other", "n_fillers")},
        **result["top_features"],
    }
    (out / FEATURES_FILE).write_text(json.dumps(features, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    result["features_file"] = FEATURES_FILE
    return result


def _oracle_run(root: Path, tier: str, system: str) -> dict[str, Any]:
    out = root / "validation" / tier / system
    Runner(RunConfig(bench="synth", data=str(root), tier=tier, system=system, model="none:",
                     out=str(out), cache=False, progress=False, concurrency=16)).run_sync()
    return read_records(out)


def validate(root: str | Path, *, ocr: bool | None = None,
             progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    root = Path(root)
    mpath = root / "manifest.json"
    if not mpath.exists():
        raise InputError("not a generated benchmark folder (no manifest.json)", file=str(root))

    manifest = load_document(mpath, what="a benchmark manifest")
    # an object with tier names, else an error naming the field
    manifest_tiers(manifest, str(mpath))
    for key in ("digest", "generator_version"):
        if not isinstance(manifest.get(key), str | int):
            raise InputError("missing required field" if manifest.get(key) is None else
                             f"expected a string, got {type(manifest[key]).__name__}",
                             file=str(mpath), field=key)

    tiers = sorted(manifest["tiers"], key=parse_tier)  # smallest first; JSON keys are sorted
    say = progress or (lambda msg: None)
    results: dict[str, Any] = {"benchmark": {"digest": manifest["digest"], "tiers": tiers,
                                             "generator_version": manifest["generator_version"]},
                               "tiers": {}}
    episodes_by_tier = {}
    for tier in tiers:
        say(f"tier {tier}: oracle runs")
        oracle = _oracle_run(root, tier, "oracle").values()
        text_only = _oracle_run(root, tier, "oracle-text").values()
        episodes = tier_episodes(root, tier)
        episodes_by_tier[tier] = episodes
        say(f"tier {tier}: retrieval difficulty")
        results["tiers"][tier] = {
            "oracle": _plain(accuracy_gate(list(oracle))),
            "visual_necessity": _plain(visual_necessity_gate(list(text_only))),
            "retrieval": {name: _plain(retrieval_recall(episodes, retriever=name))
                          for name in ("bm25", "embed")},
            # every episode as a model reads it (a timeline: the whole conversation)
            "repeats": _plain(repeated_lines(episodes)),
        }
    largest = tiers[-1]
    say("indistinguishability")
    results["indistinguishability"] = indistinguishability_gate(
        gate_episodes(episodes_by_tier[largest]), root / "validation")
    say("near-duplicate images")
    # Every (file, facts) pair: one file drawn from two different fact sets is the bug to catch.
    seen: dict[tuple[str, str], tuple[str, str, dict[str, Any]]] = {}
    for ep in episodes_by_tier[largest]:
        for s in ep.sessions:
            for t in s.turns:
                for im in t.images:
                    if im.path:
                        key = (im.path, json.dumps(im.meta.get("facts", {}), sort_keys=True))
                        seen.setdefault(key, (im.path, im.meta.get("kind", ""),
                                              im.meta.get("facts", {})))
    results["near_duplicates"] = _plain(near_duplicates(list(seen.values())))
    if ocr is None:
        try:
            import rapidocr_onnxruntime  # noqa: F401

            ocr = True
        except ImportError:
            ocr = False
    if ocr:
        say("caption-proof (OCR)")
        results["caption_proof"] = _plain(caption_proof(episodes_by_tier[tiers[0]]))
    else:
        results["caption_proof"] = {"skipped": "install memgauge[ocr] (rapidocr) to run it"}
    gates = {name: results[name] for name in ("indistinguishability", "near_duplicates")}
    for tier, t in results["tiers"].items():
        gates.update({f"{tier} {name}": t[name]
                      for name in ("oracle", "visual_necessity", "repeats")})
    results.update(overall_verdict(gates))
    out = root / "validation"
    out.mkdir(parents=True, exist_ok=True)
    (out / "gates.json").write_text(json.dumps(results, indent=2, sort_keys=True, default=str)
                                    + "\n", encoding="utf-8")
    (out / "gates.md").write_text(render_gates_markdown(results) + "\n", encoding="utf-8")
    return results
