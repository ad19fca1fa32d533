"""Validation: the gates that show a benchmark measures what it claims, and the validators
that run them (``memgauge validate``). Above the runner (the oracles run through it) and the
analysis; the gates' Markdown is rendered by :mod:`memgauge.report._gates_md`.

- :mod:`.synth`: a generated benchmark (oracles, visual necessity, indistinguishability,
  near duplicates, Caption-Proof, retrieval);
- :mod:`.labelled`: a labelled multiple-choice benchmark (shortcut audits, oracle screening,
  Caption-Proof gain);
- :mod:`._game_gates`: the games (constant answer, blind baseline).
"""

from ._gates import (
    AccuracyGateResult,
    CaptionProofResult,
    IndistinguishabilityResult,
    NearDuplicateResult,
    VisualNecessityResult,
    accuracy_gate,
    caption_proof,
    indistinguishability,
    near_duplicates,
    normalize_for_match,
    overall_verdict,
    visual_necessity_gate,
)

__all__ = ["AccuracyGateResult", "CaptionProofResult", "IndistinguishabilityResult",
           "NearDuplicateResult", "VisualNecessityResult", "accuracy_gate", "caption_proof",
           "indistinguishability", "near_duplicates", "normalize_for_match", "overall_verdict",
           "visual_necessity_gate"]
