from __future__ import annotations

import pytest

from memgauge.models._local_files import models_dir

# Where pulled local models really are, read before any test points MEMGAUGE_CACHE_DIR at a
# tmp folder (tests of ``pull`` set MEMGAUGE_MODELS_DIR to their own tmp folder).
REAL_MODELS_DIR = models_dir()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own response cache and no real API key."""
    monkeypatch.setenv("MEMGAUGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MEMGAUGE_MODELS_DIR", str(REAL_MODELS_DIR))


@pytest.fixture
def stub():
    from helpers.stub_server import StubServer

    with StubServer() as server:
        yield server
