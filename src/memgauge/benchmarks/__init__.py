"""Benchmark loaders. Each module registers its factory with ``@benchmark(name)``."""

from . import (  # noqa: F401  (registration; synth is lazy)
    combined,
    games,
    locomo,
    longmemeval,
    memeye,
    memlens,
)
from ._base import Benchmark, BenchmarkOptions, PartReading, QuestionCounting, TakesOptions

__all__ = ["Benchmark", "BenchmarkOptions", "PartReading", "QuestionCounting", "TakesOptions"]
