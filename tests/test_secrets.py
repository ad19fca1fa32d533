"""Secrets never reach a run folder: a password in --base-url, a key a server echoes back
(issue 11, "Hardened inputs and outputs")."""

from __future__ import annotations

from datasets import write_memlens
from scripted_server import ScriptedServer, completion

from memgauge._secrets import redact_text, redact_url
from memgauge.runner import RunConfig, run


def test_redact_url_and_text():
    assert redact_url("http://user:s3cret@host:8000/v1") == "http://user:***@host:8000/v1"
    assert redact_url("https://host/v1") == "https://host/v1"
    assert redact_url("http://user@host/v1") == "http://user@host/v1"  # no password
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
