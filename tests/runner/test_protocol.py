"""--protocol: online never shows a system a session after the question's asked_after;
offline shows every session first; the protocol is part of the run's identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.errors import ConfigError
from memgauge.registry import system
from memgauge.runner import RunConfig, read_records, run
from memgauge.runner._manifest import config_hash
from memgauge.schema import Response

SEEN: list[dict] = []  # one entry per answer: what the spy had ingested by then


class Spy:
    """Notes, at every answer, which sessions it has been shown (in order)."""

    name, modality = "spy", "text"

    def describe(self):
        return {"name": self.name}

    async def reset(self, episode):
        self.order = {s.session_id: i for i, s in enumerate(episode.sessions)}
        self.total = len(episode.sessions)
        self.ingested: list[int] = []

    async def ingest(self, session):
        self.ingested.append(self.order[session.session_id])

    async def answer(self, question):
        SEEN.append({"qid": question.question_id, "asked_after": question.asked_after,
                     "ingested": list(self.ingested), "total": self.total})
        return Response(text="Insufficient information")


@system("protocol-spy")
def protocol_spy(ctx):
    return Spy


@pytest.fixture(scope="module")
def timeline(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tl") / "b"
    generate(SynthConfig(out=str(root), seed=5, tiers=["40k"], questions=10, layout="timeline"))
    return root


def _run(bench: Path, out: Path, protocol: str, system: str = "protocol-spy"):
    SEEN.clear()
    run(RunConfig(bench="synth", data=str(bench), out=str(out), system=system, model="none:",
                  cache=False, progress=False, protocol=protocol, concurrency=4))
    return list(SEEN)


def test_online_never_shows_a_session_after_asked_after(timeline, tmp_path):
    seen = _run(timeline, tmp_path / "on", "online")
    assert len(seen) == len(read_records(tmp_path / "on")) > 10
    afters = {s["asked_after"] for s in seen}
    assert len(afters) > 5  # asked at many points of the history, not all at the end
    for s in seen:
        assert s["ingested"] == list(range(s["asked_after"] + 1)), s["qid"]  # once, in order


def test_offline_shows_every_session_before_the_first_answer(timeline, tmp_path):
    seen = _run(timeline, tmp_path / "off", "offline")
    assert seen and all(s["ingested"] == list(range(s["total"])) for s in seen)
    assert any(s["asked_after"] < s["total"] - 1 for s in seen)  # (online would differ)


def test_the_protocol_is_in_the_manifest_and_the_identity(timeline, tmp_path):
    _run(timeline, tmp_path / "off", "offline")
    manifest = json.loads((tmp_path / "off" / "manifest.json").read_text())
    assert manifest["config"]["all"]["protocol"] == "offline"
    assert manifest["config"]["identity"]["protocol"] == "offline"
    with pytest.raises(ConfigError, match=r"\(protocol differ"):  # same folder, other protocol
        _run(timeline, tmp_path / "off", "online")
    online = RunConfig(bench="synth", data="x", out="y", protocol="online")
    assert "protocol" not in online.identity()  # earlier (online) folders keep their hash
    assert config_hash(online.identity()) != config_hash(
        RunConfig(bench="synth", data="x", out="y", protocol="offline").identity())


def test_a_bad_protocol_is_a_config_error_before_anything_runs(tmp_path):
    with pytest.raises(ConfigError, match="protocol 'later'"):
        run(RunConfig(bench="synth", data=str(tmp_path / "nothing"), out=str(tmp_path / "r"),
                      system="protocol-spy", model="none:", protocol="later", progress=False))
    assert not (tmp_path / "r").exists()


def test_run_protocol_on_the_command_line(timeline, tmp_path):
    from typer.testing import CliRunner

    from memgauge.cli import app

    args = ["run", "--bench", "synth", "--data", str(timeline), "--system", "oracle",
            "--model", "none:", "--no-cache"]
    ok = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "r"), "--protocol", "offline"])
    assert ok.exit_code == 0, ok.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["config"]["identity"]["protocol"] == "offline"
    bad = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "s"), "--protocol", "later"])
    assert bad.exit_code == 2 and "--protocol 'later'" in bad.output
    assert not (tmp_path / "s").exists()



def test_show_rebuilds_a_question_with_the_runs_protocol(timeline, tmp_path):
    """`memgauge show` replays a question as the run answered it: up to its asked_after
    session online, after every session offline (the spy notes what it was shown)."""
    from typer.testing import CliRunner

    from memgauge.cli import app

    for protocol in ("online", "offline"):
        out = tmp_path / protocol
        seen = _run(timeline, out, protocol)
        target = next(r for r in seen if r["asked_after"] is not None
                      and r["asked_after"] + 1 < r["total"])
        SEEN.clear()
        got = CliRunner().invoke(app, ["show", str(out), target["qid"]])
        assert got.exit_code == 0, got.output
        (replayed,) = SEEN
        assert replayed["ingested"] == target["ingested"], protocol
        want = target["asked_after"] + 1 if protocol == "online" else target["total"]
        assert len(replayed["ingested"]) == want
