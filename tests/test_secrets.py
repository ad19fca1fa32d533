"""Secrets never reach a run folder: a password in --base-url, a key a server echoes back
(issue 11, "Hardened inputs and outputs")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.datasets import write_memlens
from helpers.scripted_server import ScriptedServer, completion

from memgauge._secrets import redact_text, redact_url, redact_urls, redact_urls_in_text
from memgauge.runner import RunConfig, run


def test_redact_url_and_text():
    assert redact_url("http://user:s3cret@host:8000/v1") == "http://user:***@host:8000/v1"
    assert redact_url("https://host/v1") == "https://host/v1"
    assert redact_url("http://user@host/v1") == "http://***@host/v1"  # a user alone: a token?
    assert redact_url(None) is None
    assert redact_text("bad key sk-abcdefgh!", ["sk-abcdefgh", None, "ab"]) == "bad key ***!"


def test_no_password_or_echoed_key_is_written_to_the_run_folder(tmp_path, monkeypatch):
    key = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    data = write_memlens(tmp_path, 2)
    echo = {"error": {"message": f"Incorrect API key provided: {key}. Check it."}}
    with ScriptedServer([(401, echo)], after=(200, completion("red"))) as srv:
        url = srv.base_url.replace("http://", "http://alice:hunter2hunter2@")
        run(RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                      out=str(tmp_path / "r"), model="openai:m", base_url=url,
                      progress=False, concurrency=1, context_mode="text", cache=False,
                      argv=["run", "--base-url", url]))
    written = "".join(p.read_text() for p in (tmp_path / "r").iterdir() if p.is_file())
    assert "hunter2hunter2" not in written and key not in written
    assert "alice:***@" in written  # the URL is still recorded, without its password
    assert "Incorrect API key provided: ***" in written  # the cause is kept, not the key


SECRET = "PASSWORD1234"
TOKEN = "TOKEN5678abcd"


def _with_secrets(url: str, query: bool = True) -> str:
    url = url.replace("http://", f"http://bob:{SECRET}@")
    return url + f"?api_key={TOKEN}" if query else url


def test_redact_url_masks_user_info_and_token_parameters():
    assert redact_url("http://TOKEN99@host/v1") == "http://***@host/v1"  # a token as user
    assert (redact_url("https://h/v1?api_key=k&x=1&X-Amz-Signature=zz")
            == "https://h/v1?api_key=***&x=1&X-Amz-Signature=***")
    assert redact_url("https://h/v1?model=a&page=2") == "https://h/v1?model=a&page=2"
    assert redact_urls("http://a:b@h1/v1,http://h2/v1?token=t") == (
        "http://a:***@h1/v1,http://h2/v1?token=***")
    assert redact_urls_in_text("at http://u:pw@h/x?token=1, see (https://t@h).") == (
        "at http://u:***@h/x?token=***, see (https://***@h).")


def test_no_secret_of_any_url_option_in_any_artefact_of_a_run(tmp_path):
    """--system http://user:PASS@host and URL options with a token: the manifest, the
    records, every report format and the terminal carry neither (issue 25 §3)."""
    from helpers.memory_service import served
    from helpers.stub_server import StubServer

    from memgauge.benchmarks.synth import SynthConfig, generate

    data = tmp_path / "b"
    generate(SynthConfig(out=str(data), questions=2, tiers=["4k"], seed=5))
    out = tmp_path / "run"
    import memgauge

    env = dict(os.environ, PYTHONPATH=str(Path(memgauge.__file__).parents[1]))
    terminal = ""
    with StubServer(answer=lambda body: "x") as stub, served(
            "full-context", model="openai:stub", base_url=stub.base_url,
            context_mode="text") as url:
        cmd = [sys.executable, "-m", "memgauge.cli", "run", "--bench", "synth", "--data",
               str(data), "--tier", "4k", "--system", _with_secrets(url, query=False), "--model",
               "none:",
               "--out", str(out), "--no-cache",
               "--judge-base-url", _with_secrets(stub.base_url)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300,
                              check=False)
        terminal += done.stdout + done.stderr
        assert done.returncode == 0, terminal
        # a mistake naming a URL option: the error line on the terminal shows it redacted
        refused = subprocess.run([*cmd, "--embedder-base-url", _with_secrets(stub.base_url)],
                                 capture_output=True, text=True, env=env, timeout=300, check=False)
        assert refused.returncode == 2 and "the system http://bob:***@" in refused.stderr
        terminal += refused.stdout + refused.stderr
    for fmt in ("md", "html", "json"):
        shown = subprocess.run([sys.executable, "-m", "memgauge.cli", "report", str(out),
                                "--format", fmt, "--out", str(out / f"report.{fmt}")],
                               capture_output=True, text=True, env=env, timeout=300, check=False)
        assert shown.returncode == 0, shown.stderr
        terminal += shown.stdout + shown.stderr
    artefacts = {p.name: p.read_text(errors="replace") for p in out.iterdir() if p.is_file()}
    assert {"manifest.json", "records.jsonl", "report.md", "report.html",
            "report.json"} <= set(artefacts)
    artefacts["terminal"] = terminal
    for name, text in artefacts.items():
        assert SECRET not in text and TOKEN not in text, name
    assert "bob:***@" in artefacts["manifest.json"]  # the URL is kept, not its password
    assert "api_key=***" in artefacts["manifest.json"]


def test_a_folder_written_with_a_password_shows_none_in_its_report(tmp_path):
    from helpers.stub_server import StubServer

    from memgauge.runfolder import load_manifest

    data = write_memlens(tmp_path, 1)
    with StubServer(answer=lambda body: "x") as stub:  # (none: is refused for full-context)
        run(RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                      out=str(tmp_path / "r"), model="openai:stub", base_url=stub.base_url,
                      progress=False, cache=False, context_mode="text"))
    path = tmp_path / "r" / "manifest.json"
    old = json.loads(path.read_text())  # as a memgauge before the redaction wrote it
    old["system"]["url"] = f"http://u:{SECRET}@host/mem"
    path.write_text(json.dumps(old))
    assert SECRET not in json.dumps(load_manifest(tmp_path / "r"))
