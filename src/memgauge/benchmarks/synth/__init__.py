"""Procedural, verifiable multimodal memory benchmark generator.

Every image is rendered from facts, every answer computed from them, so fresh,
contamination-free instances can be minted at any length with no model and no network.
"""

from . import _loader  # noqa: F401  (registers the "synth" benchmark)
from ._families import AR_FAMILY, FAMILIES, REFUSAL, solve
from ._generate import GENERATOR_VERSION, SynthConfig, generate, parse_tier
from ._loader import SynthBenchmark

__all__ = ["AR_FAMILY", "FAMILIES", "GENERATOR_VERSION", "REFUSAL", "SynthBenchmark",
           "SynthConfig", "generate", "parse_tier", "solve"]
