"""The optional naturaliser rewrites prose but never loses a needle fact."""

from __future__ import annotations

import json

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.benchmarks.synth._naturalize import accepted
from memgauge.models import ScriptedModel
from memgauge.registry import lookup
from memgauge.runner import RunConfig, Runner, read_records


def test_accepted_requires_kept_phrases_and_placeholders():
    assert accepted("Starting a hike now <image>", "Off on a hike! <image>", ["a hike"])
    assert not accepted("Starting a hike now <image>", "Off hiking!", ["a hike"])
    assert not accepted("Starting a hike now <image>", "Off on a walk <image>", ["a hike"])
    assert not accepted("x", "   ", [])


def _rewriter(messages, qid):
    original = messages[-1].parts[-1].text
    # Rewrites every message; mangles the fact-bearing ones by dropping the last word.
    if "based in" in original or "<image>" in original:
        return " ".join(original.split()[:-1])
    return f"Honestly, {original[0].lower()}{original[1:]}"


def test_rewrites_are_checked_and_facts_survive(tmp_path):
    model = ScriptedModel(fn=_rewriter)
    root = tmp_path / "b"
    manifest = generate(SynthConfig(out=str(root), seed=3, tiers=["8k"], questions=10,
                                    naturalizer=model))
    stats = manifest["naturalizer"]
    assert stats["rewritten"] > 0 and stats["rejected"] > 0 and stats["errors"] == 0
    assert manifest["config"]["naturalizer"]["provider"] == "scripted"
    eps = list(lookup("benchmark", "synth")(BenchmarkOptions(data=str(root))).episodes())
    texts = [t.text for ep in eps for s in ep.sessions for t in s.turns]
    assert any(t.startswith("Honestly, ") for t in texts)  # chit-chat rewritten
    assert all(t.count("<image>") == len(tt.images) or not tt.images
               for ep in eps for s in ep.sessions for tt in s.turns for t in [tt.text])
    out = tmp_path / "oracle"
    Runner(RunConfig(bench="synth", data=str(root), system="oracle", model="none:",
                     out=str(out), cache=False, progress=False)).run_sync()
    assert all(r.scores["rule"] == 1.0 for r in read_records(out).values())
    written = json.loads((root / "manifest.json").read_text())
    assert written["naturalizer"]["turns"] == stats["turns"]


def test_naturaliser_over_http_with_cached_replies(tmp_path):
    from helpers.stub_server import StubServer, last_text

    from memgauge.cache import ResponseCache
    from memgauge.models import ModelSettings, create_model

    def reply(body):  # echo the message back, lightly reworded
        return "So, " + last_text(body)

    with StubServer(answer=reply) as stub:
        def make():
            return create_model("openai:rewriter", ModelSettings(
                base_url=stub.base_url, cache=ResponseCache(tmp_path / "c.sqlite")))

        first = generate(SynthConfig(out=str(tmp_path / "a"), seed=2, tiers=["8k"],
                                     questions=3, naturalizer=make()))
        calls = len(stub.requests)
        again = generate(SynthConfig(out=str(tmp_path / "b"), seed=2, tiers=["8k"],
                                     questions=3, naturalizer=make()))
    assert first["naturalizer"]["rewritten"] == first["naturalizer"]["turns"] > 0
    assert calls > 0 and len(stub.requests) == calls  # the rerun was served from the cache
    assert first["digest"] == again["digest"]
