"""An outside package adds a system through the ``memgauge.systems`` entry point: a throwaway
distribution (a dist-info with entry_points.txt, on a temporary sys.path entry, as pip
--target would lay it out) whose module registers ``theirs``; lookup then finds it, and
serve-memory serves it like a built-in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memgauge import registry

MODULE = '''
from memgauge.registry import system
from memgauge.schema import Response


class Theirs:
    name, modality = "theirs", "text"

    def describe(self):
        return {"name": self.name}

    async def reset(self, episode):
        self.sessions = []

    async def ingest(self, session):
        self.sessions.append(session.session_id)

    async def answer(self, question):
        return Response(text=f"{len(self.sessions)} sessions")


@system("theirs")
def theirs(ctx):
    return Theirs
'''


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    (site / "theirs_memory").mkdir(parents=True)
    (site / "theirs_memory" / "__init__.py").write_text(MODULE)
    info = site / "theirs_memory-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: theirs-memory\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[memgauge.systems]\ntheirs = theirs_memory\n")
    (info / "RECORD").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_loaded_plugins", set())  # scan the entry points afresh
    # Register every built-in in the real table first: a lazy system first imported while
    # the copy below is in place would register only in the copy, and its module, already
    # imported, would never register again once the table is put back.
    registry._load_builtins()
    registry._load_lazy("system")
    monkeypatch.setitem(registry._REGISTRY, "system", dict(registry._REGISTRY["system"]))
    yield site
    sys.modules.pop("theirs_memory", None)


def test_an_outside_package_registers_a_system_by_entry_point(installed) -> None:
    from memgauge.models import create_model
    from memgauge.systems import SystemContext

    assert "theirs_memory" not in sys.modules
    factory = registry.lookup("system", "theirs")
    assert "theirs_memory" in sys.modules  # imported because of its entry point
    assert factory(SystemContext(model=create_model("none:")))().name == "theirs"
    assert "theirs" in registry.names("system")


def test_without_the_package_the_name_is_unknown(monkeypatch) -> None:
    from memgauge.errors import ConfigError

    monkeypatch.setattr(registry, "_loaded_plugins", set())
    with pytest.raises(ConfigError, match="unknown system 'theirs'"):
        registry.lookup("system", "theirs")


def test_an_outside_system_is_served_over_the_protocol(installed, synth, tmp_path) -> None:
    from helpers.memory_service import served

    from memgauge.runfolder import read_records
    from memgauge.runner import RunConfig, Runner

    with served("theirs", model="none:") as url:
        Runner(RunConfig(bench="synth", data=str(synth), tier="4k", system=url,
                         model="none:", out=str(tmp_path / "r"), cache=False,
                         progress=False)).run_sync()
    records = read_records(tmp_path / "r")
    assert records and all(r.status == "ok" and r.prediction.endswith(" sessions")
                           and r.prediction != "0 sessions" for r in records.values())
