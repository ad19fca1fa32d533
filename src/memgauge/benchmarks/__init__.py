"""Benchmark loaders. Each module registers its factory with ``@benchmark(name)``."""

from . import locomo, longmemeval, memlens, synth  # noqa: F401  (registration)
from ._base import Benchmark, BenchmarkOptions

__all__ = ["Benchmark", "BenchmarkOptions"]
