"""Protocol v1.1: two runs at once on one memory service keep apart (each run's namespace),
and a v1 service, which cannot keep them apart, is refused to a second run at once and noted
in the manifest."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from bad_server import INFO, BadServer, ok
from helpers.memory_service import prompt_digest, served
from helpers.stub_server import StubServer

from memgauge.errors import ConfigError
from memgauge.runfolder import read_records
from memgauge.runner import RunConfig, Runner

V11 = {**INFO, "protocol_version": "1.1"}


def _bench(root: Path, seed: int) -> Path:
    """A generated benchmark whose episode ids are seed 5's whatever its ``seed``."""
    from memgauge.benchmarks.synth import SynthConfig, generate

    generate(SynthConfig(out=str(root), questions=4, tiers=["4k"], seed=seed))
    for path in root.rglob("*.json*"):
        path.write_text(path.read_text().replace(f"synth-{seed}-", "synth-5-"))
    return root


def _config(data: Path, out: Path, url: str) -> RunConfig:
    return RunConfig(bench="synth", data=str(data), tier="4k", system=url, model="none:",
                     out=str(out), cache=False, progress=False,
                     system_options={"retry_base": "0.01"})


def test_two_runs_at_once_on_one_service_do_not_touch_each_other(tmp_path) -> None:
    # Two benchmarks with the same episode ids and different contents: the stub model answers
    # with a digest of the whole prompt, so any session of the other run (or one wiped by its
    # /reset) changes the answer from the one the run gets alone.
    a, b = _bench(tmp_path / "a", 5), _bench(tmp_path / "b", 6)
    def ids(out):
        return sorted(read_records(out))

    with StubServer(answer=prompt_digest, latency_s=0.02) as model, \
            served("full-context", model="openai:stub", base_url=model.base_url,
                   context_mode="text") as url:
        alone = {}
        for name, data in (("a", a), ("b", b)):
            Runner(_config(data, tmp_path / f"alone-{name}", url)).run_sync()
            alone[name] = read_records(tmp_path / f"alone-{name}")
        assert ids(tmp_path / "alone-a") == ids(tmp_path / "alone-b")  # the same episode ids
        errors: list[BaseException] = []

        def run(name: str, data: Path) -> None:
            try:
                Runner(_config(data, tmp_path / f"together-{name}", url)).run_sync()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(n, d)) for n, d in (("a", a), ("b", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert not errors
    for name in ("a", "b"):
        together = read_records(tmp_path / f"together-{name}")
        assert together.keys() == alone[name].keys()
        for qid, record in together.items():
            assert record.status == "ok"
            assert record.prediction == alone[name][qid].prediction, (name, qid)
        manifest = json.loads((tmp_path / f"together-{name}" / "manifest.json").read_text())
        assert manifest["system"]["protocol"] == "1.1"
        assert manifest["system"]["namespace"].startswith("memgauge-")
        assert "warnings" not in manifest["system"]
    assert alone["a"] != alone["b"]


def test_a_reset_in_one_namespace_leaves_the_others_memory(tmp_path) -> None:
    # the exact interleaving that wiped a run's memory under v1
    from memgauge.models import create_model
    from memgauge.registry import lookup
    from memgauge.schema import BenchmarkInfo, Episode, Question, Session, Turn
    from memgauge.systems import SystemContext

    def episode() -> Episode:
        return Episode(episode_id="e1", sessions=[], questions=[],
                       benchmark=BenchmarkInfo(name="t"))

    def session(text: str) -> Session:
        return Session(session_id="s1", turns=[Turn(turn_id="s1:1", role="user", text=text)])

    question = Question(question_id="q", text="What did I say?", answer="",
                        answer_type="free_text", ability="information_extraction")

    async def main(url: str) -> list[str]:
        ctx = SystemContext(model=create_model("none:"))
        first, second = lookup("system", url)(ctx)(), lookup("system", url)(ctx)()
        await first.reset(episode())
        await first.ingest(session("the first run's kiwi"))
        await second.reset(episode())
        await second.ingest(session("the second run's mango"))
        out = [(await first.answer(question)).text, (await second.answer(question)).text]
        await first.aclose()
        return out

    def echo(body):
        return json.dumps(body["messages"])  # the prompt it read

    with StubServer(answer=echo) as model, \
            served("full-context", model="openai:stub", base_url=model.base_url,
                   context_mode="text") as url:
        first, second = asyncio.run(main(url))
    assert "kiwi" in first and "mango" not in first
    assert "mango" in second and "kiwi" not in second


def test_a_v11_service_gets_the_namespace_and_a_v1_service_does_not(synth, tmp_path) -> None:
    with BadServer({"/info": [ok(V11)]}) as new, BadServer({}) as old:
        Runner(_config(synth, tmp_path / "new", new.url)).run_sync()
        Runner(_config(synth, tmp_path / "old", old.url)).run_sync()
    bodies = [b for route in ("/reset", "/ingest", "/answer") for b in new.routes_seen(route)]
    assert bodies and len({b["namespace"] for b in bodies}) == 1
    assert not any("namespace" in b for route in ("/reset", "/ingest", "/answer")
                   for b in old.routes_seen(route))
    manifest = json.loads((tmp_path / "old" / "manifest.json").read_text())
    assert manifest["system"]["protocol"] == "1"
    assert any("protocol v1" in w for w in manifest["system"]["warnings"])


def test_a_second_run_at_once_on_a_v1_service_is_refused(synth, tmp_path) -> None:
    from memgauge.models import create_model
    from memgauge.registry import lookup
    from memgauge.systems import SystemContext

    with BadServer({}) as old:
        ctx = SystemContext(model=create_model("none:"))
        first = lookup("system", old.url)(ctx)  # a run under way on this service
        with pytest.raises(ConfigError, match="another memgauge run .* protocol v1"):
            Runner(_config(synth, tmp_path / "second", old.url)).run_sync()
        assert old.routes_seen("/reset") == []  # refused before its first episode
        asyncio.run(first().aclose())  # that run ends: the service is free again
        Runner(_config(synth, tmp_path / "later", old.url)).run_sync()
    assert read_records(tmp_path / "later")


@pytest.mark.parametrize(("version", "said"), [
    ("2.0", "speaks memory protocol version 2.0"),
    ("one", "protocol_version: expected"),
    (1.1, "protocol_version: expected str, got float"),
])
def test_a_protocol_version_this_client_does_not_speak_is_a_config_error(
        synth, tmp_path, version, said) -> None:
    with BadServer({"/info": [ok({**INFO, "protocol_version": version})]}) as srv, \
            pytest.raises(ConfigError, match=said):
        Runner(_config(synth, tmp_path / "r", srv.url)).run_sync()
    assert srv.routes_seen("/reset") == []


def test_a_runs_own_worker_processes_share_its_v1_lock(synth, tmp_path) -> None:

    with BadServer({}) as old:
        config = _config(synth, tmp_path / "r", old.url).replace(workers=2,
                                     concurrency=2)
        Runner(config).run_sync()
    records = read_records(tmp_path / "r")
    assert records and all(r.status == "ok" for r in records.values())
