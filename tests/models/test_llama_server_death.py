"""A llama.cpp server that died is said to have died, with its last lines (issue 25 §5),
not "llama.cpp /tokenize failed: connection refused". No model is loaded: the server's
process is a stand-in that writes to its log and exits."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from memgauge.errors import ConfigError
from memgauge.models._llama_server import LlamaServer, LlamaServerOptions, Tokenizer


def _free_port() -> int:
    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dead_server(tmp_path: Path, code: int) -> LlamaServer:
    log = tempfile.NamedTemporaryFile(dir=tmp_path, suffix=".log", delete=False)  # noqa: SIM115
    script = ("import sys; print('loading model'); "
              "print('GGML_ASSERT(n_tokens <= n_batch) failed', file=sys.stderr); "
              f"sys.exit({code})")
    proc = subprocess.Popen([sys.executable, "-c", script],
                            stdin=subprocess.PIPE, stdout=log, stderr=log)
    proc.wait()
    address = f"http://127.0.0.1:{_free_port()}"
    return LlamaServer(options=LlamaServerOptions(model=tmp_path / "m.gguf"), address=address,
                       props={}, models={}, engine_version="test", _proc=proc, _log=log)


def test_a_dead_server_is_named_with_its_last_lines(tmp_path):
    server = _dead_server(tmp_path, 134)
    try:
        with pytest.raises(ConfigError) as caught:
            Tokenizer(server.address, server.death).count("hello")
        message = str(caught.value)
        assert "llama.cpp's server for m.gguf died" in message
        assert "exited with status 134" in message and "rerun to resume" in message
        assert "GGML_ASSERT(n_tokens <= n_batch) failed" in message
        assert "/tokenize failed" not in message
    finally:
        server.stop()


def test_a_stopped_server_is_not_said_to_have_died(tmp_path):
    server = _dead_server(tmp_path, 0)
    server._proc = None  # stopped on purpose: no death to report
    with pytest.raises(ConfigError, match="/tokenize failed"):
        Tokenizer(server.address, server.death).count("hello")


def test_a_question_sent_to_a_dead_server_is_a_server_died_error(tmp_path, monkeypatch):
    from memgauge.models import GenerateConfig, Message, ModelError, TextPart
    from memgauge.models.local import LocalModel
    from memgauge.models.openai_compat import OpenAICompatModel

    async def refused(self, messages, config, *, question_id=None):
        raise ModelError("connection", "Connection refused", retryable=True, attempts=6)

    monkeypatch.setattr(OpenAICompatModel, "generate", refused)
    model = object.__new__(LocalModel)  # its server, without loading a model
    model.server = _dead_server(tmp_path, -9 % 256)
    model.server._proc.returncode = -9  # as the OOM killer leaves it
    try:
        with pytest.raises(ModelError) as caught:
            asyncio.run(model.generate([Message("user", [TextPart("hi")])], GenerateConfig()))
        assert caught.value.kind == "server_died" and caught.value.attempts == 6
        assert "was killed by signal 9" in caught.value.message
        assert "GGML_ASSERT" in caught.value.message
    finally:
        model.server.stop()
