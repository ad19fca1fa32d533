from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own response cache and no real API key."""
    monkeypatch.setenv("MEMGAUGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def stub():
    from stub_server import StubServer

    with StubServer() as server:
        yield server
