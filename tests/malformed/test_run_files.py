"""Malformed run-folder files for every command that reads them (report, compare, merge,
audit, score, a resumed run) and benchmark manifests for validate: exit status 2 with one
line naming the file and field, never a traceback."""

from __future__ import annotations

import json

import pytest
from _inputs import _RUN_CACHE, check, deep, valid_run, write_synth

MANIFESTS: dict[str, str] = {
    "list": "[]",
    "invalid": "{not json",
    "empty": "",
    "null": "null",
    "deep": '{"config": ' + deep() + "}",
    "no-config": '{"config_hash": "x"}',
    "config-string": '{"config": "x"}',
    "identity-list": '{"config": {"identity": []}}',
    "identity-model-int": '{"config": {"identity": {"model": 5}}}',
    "shard-string": '{"config": {"identity": {"shard": "0/2"}}}',
    "shard-out-of-range": '{"config": {"identity": {"shard": [3, 2]}}}',
    "benchmark-list": '{"config": {"identity": {}}, "benchmark": []}',
    "inputs-digest-int": '{"config": {"identity": {}}, "benchmark": {"inputs": {"d": 5}}}',
    "judges-string": '{"config": {"identity": {}}, "judges": {"judge": "x"}}',
    "status-int": '{"config": {"identity": {}}, "status": 3}',
    "invocations-object": '{"config": {"identity": {}}, "invocations": {}}',
}


def _command(name: str, run, tmp_path) -> list[str]:
    other = valid_run(tmp_path, "other")
    return {
        "report": ["report", str(run)],
        "report-json": ["report", str(run), "--format", "json"],
        "compare": ["compare", str(other), str(run)],
        "merge": ["merge", str(run), str(other), "--out", str(tmp_path / "merged")],
        "audit": ["audit", str(run)],
        "score": ["score", str(run), "--judge", "openai:j", "--judge-base-url",
                  "http://127.0.0.1:9/v1"],
    }[name]


COMMANDS = ["report", "report-json", "compare", "merge", "audit", "score"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_manifest(tmp_path, command, name):
    run = valid_run(tmp_path)
    (run / "manifest.json").write_text(MANIFESTS[name])
    check(_command(command, run, tmp_path), names="manifest.json",
          env={"OPENAI_API_KEY": "test"})


@pytest.mark.parametrize("name", ["list", "invalid", "deep", "identity-list"])
def test_manifest_of_a_run_being_resumed(tmp_path, name):
    run = valid_run(tmp_path)
    src = _RUN_CACHE["base"].parent  # where the run's data and predictions are
    args = ["run", "--bench", "memlens", "--data", str(src / "dataset.json"), "--out",
            str(run), "--model", f"replay:{src / 'preds.json'}"]
    (run / "manifest.json").write_text(MANIFESTS[name])
    check(args, names="manifest.json")


@pytest.mark.parametrize("command", COMMANDS[:5])
@pytest.mark.parametrize("where", ["missing", "folder"])
def test_manifest_not_a_file(tmp_path, command, where):
    run = valid_run(tmp_path)
    (run / "manifest.json").unlink()
    if where == "folder":
        (run / "manifest.json").mkdir()
    check(_command(command, run, tmp_path), names=None)


def _records(run, lines: list[str]) -> None:
    good = (run / "records.jsonl").read_text().splitlines()
    (run / "records.jsonl").write_text("".join(x + "\n" for x in [good[0], *lines, good[1]]))


RECORDS: dict[str, list[str]] = {
    "invalid-line": ["{oops"],
    "list-line": ["[]"],
    "foreign-object": ['{"foo": 1}'],
    "deep-line": [deep()],
    "score-out-of-range": ["SCORE"],
    "status-unknown": ["STATUS"],
}


@pytest.mark.parametrize("command", COMMANDS[:5])
@pytest.mark.parametrize("name", sorted(RECORDS))
def test_records_line(tmp_path, command, name):
    run = valid_run(tmp_path)
    first = json.loads((run / "records.jsonl").read_text().splitlines()[0])
    lines = RECORDS[name]
    if lines == ["SCORE"]:
        lines = [json.dumps({**first, "scores": {"rule": 7.0}})]
    elif lines == ["STATUS"]:
        lines = [json.dumps({**first, "status": "maybe"})]
    _records(run, lines)
    out = check(_command(command, run, tmp_path), names="records.jsonl")
    assert "line 2" in out, out


@pytest.mark.parametrize("command", COMMANDS[:5])
def test_records_file_is_a_folder(tmp_path, command):
    run = valid_run(tmp_path)
    (run / "records.jsonl").unlink()
    (run / "records.jsonl").mkdir()
    check(_command(command, run, tmp_path), names="records.jsonl")


VALIDATE: dict[str, str] = {
    "list": "[]",
    "invalid": "{",
    "deep": deep(),
    "no-tiers": '{"digest": "d", "generator_version": "1"}',
    "no-digest": '{"tiers": {"8k": {}}, "generator_version": "1"}',
    "digest-list": '{"tiers": {"8k": {}}, "digest": [], "generator_version": "1"}',
}


@pytest.mark.parametrize("name", sorted(VALIDATE))
def test_validate_manifest(tmp_path, name):
    root = write_synth(tmp_path / "bench", manifest=VALIDATE[name])
    check(["validate", str(root), "--no-ocr"], names="manifest.json")
