"""``memgauge list`` and ``memgauge show RUN [QUESTION_ID]``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.registry import names

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_list_names_everything_the_flags_can_name_with_options() -> None:
    got = runner.invoke(app, ["list", "--format", "json"])
    assert got.exit_code == 0, got.output
    cat = json.loads(got.output)
    for kind in ("benchmark", "system", "model", "scorer"):
        assert set(names(kind)) <= {e["name"] for e in cat[kind + "s"]}
    rag = next(e for e in cat["systems"] if e["name"] == "rag-bm25")
    assert set(rag["options"]) == {"top_k", "reader"}
    local = next(e for e in cat["models"] if e["name"] == "local")
    assert "n_ctx" in local["options"] and "smollm2" in local["catalogue"]
    from memgauge.registry import _KINDS, registrations

    ours = {(k + "s", r.name) for k in _KINDS for r in registrations(k)
            if r.factory.__module__.startswith("memgauge.")}  # tests may register their own
    assert all(e["help"] for group, entries in cat.items() for e in entries
               if (group, e["name"]) in ours), "every built-in entry has help"
    text = runner.invoke(app, ["list"]).output
    assert "--system-option top_k=" in text and "``" not in text


def test_the_listed_options_are_the_ones_the_system_accepts(tmp_path: Path) -> None:
    from memgauge.errors import ConfigError
    from memgauge.models.none import NoModel
    from memgauge.registry import registrations
    from memgauge.systems import SystemContext

    for registered in registrations("system"):
        name, fn = registered.name, registered.factory
        if not fn.__module__.startswith("memgauge."):
            continue  # registered by another test
        with pytest.raises(ConfigError, match="its options: (.*)") as exc:
            fn(SystemContext(model=NoModel(), options={"no_such_key": "1"}))
        said = exc.value.args[0].split("its options: ")[1].rstrip(")")
        listed = sorted(registered.options) or ["none"]
        assert said == ", ".join(listed), name


def _bench(tmp_path: Path) -> Path:
    from memgauge.benchmarks.synth import SynthConfig, generate

    generate(SynthConfig(out=str(tmp_path / "b"), questions=3, tiers=["4k"], seed=2))
    return tmp_path / "b"


def _texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            out.append((m["role"], content))
        else:
            out.extend((m["role"], p["text"]) for p in content if p.get("type") == "text")
    return out


@pytest.mark.parametrize("system", [["--system", "full-context"],
                                    ["--system", "rag-bm25", "--system-option", "top_k=1"]])
def test_show_rebuilds_exactly_the_prompt_that_was_sent(tmp_path: Path, stub,
                                                        system: list[str]) -> None:
    bench = _bench(tmp_path)
    out = tmp_path / "r"
    got = runner.invoke(app, ["run", "--bench", "synth", "--data", str(bench), "--out", str(out),
                              "--model", "openai:m", "--base-url", stub.base_url,
                              "--context-mode", "caption", *system])
    assert got.exit_code == 0, got.output
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    for rec in records:
        shown = runner.invoke(app, ["show", str(out), rec["question_id"], "--format", "json"])
        assert shown.exit_code == 0, shown.output
        doc = json.loads(shown.output)
        assert doc["record"]["question_id"] == rec["question_id"]
        (call,) = doc["prompt"]["calls"]
        rebuilt = [(m["role"], p["text"]) for m in call for p in m["parts"] if "text" in p]
        sent = next(r for r in stub.requests
                    if rec["question"] in _texts(r["messages"])[-1][1])
        assert rebuilt == _texts(sent["messages"])
    text = runner.invoke(app, ["show", str(out), records[0]["question_id"]]).output
    assert "rebuilt, not sent" in text and "score rule:" in text and "gold:" in text


def test_show_tells_the_error_and_the_overview_counts(tmp_path: Path, stub) -> None:
    bench = _bench(tmp_path)
    out = tmp_path / "r"
    stub.plan = [400, 400, 400]  # not retryable: three errors
    got = runner.invoke(app, ["run", "--bench", "synth", "--data", str(bench), "--out", str(out),
                              "--model", "openai:m", "--base-url", stub.base_url,
                              "--concurrency", "1", "--limit", "1"])
    assert got.exit_code == 3, got.output
    overview = runner.invoke(app, ["show", str(out)]).output
    assert "1 questions recorded, 0 answered, 1 failed" in overview
    qid = json.loads((out / "records.jsonl").read_text().splitlines()[0])["question_id"]
    shown = runner.invoke(app, ["show", str(out), qid, "--no-prompt"]).output
    assert "error http_400: stub error 400" in shown and "not retryable" in shown


def test_show_mistakes_are_named(tmp_path: Path, stub) -> None:
    got = runner.invoke(app, ["show", str(tmp_path / "nowhere")])
    assert got.exit_code == 2 and "no such folder" in _flat(got.output)
    (tmp_path / "empty").mkdir()
    got = runner.invoke(app, ["show", str(tmp_path / "empty")])
    assert got.exit_code == 2 and "no manifest.json" in _flat(got.output)
    bench = _bench(tmp_path)
    out = tmp_path / "r"
    runner.invoke(app, ["run", "--bench", "synth", "--data", str(bench), "--out", str(out),
                        "--model", "none:", "--system", "oracle"])
    got = runner.invoke(app, ["show", str(out), "synth-0-000"])
    assert got.exit_code == 2
    assert "no record of question 'synth-0-000'; did you mean" in _flat(got.output)
    assert "Traceback" not in got.output
