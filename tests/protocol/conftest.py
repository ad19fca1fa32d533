from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="package")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated benchmark (4 questions, 4k tier)."""
    from memgauge.benchmarks.synth import SynthConfig, generate

    root = tmp_path_factory.mktemp("synth") / "b"
    generate(SynthConfig(out=str(root), questions=4, tiers=["4k"], seed=5))
    return root
