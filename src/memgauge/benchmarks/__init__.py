"""Benchmark loaders. Each module registers its factory with ``@benchmark(name)``."""

from . import games, locomo, longmemeval, memeye, memlens  # noqa: F401  (registration; synth is lazy)
from ._base import Benchmark, BenchmarkOptions

__all__ = ["Benchmark", "BenchmarkOptions"]
