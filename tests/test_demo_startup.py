"""A local model's start-up waits on llama.cpp's own /health (issue 27 §1): a server still
loading is waited for, one that never becomes ready is refused within the limit with its
last /health answer and the fix, and the limit scales with the load and the model's size
(a fixed 120 s stopped the demo on a busy machine)."""

from __future__ import annotations

import sys
import time

import pytest

from memgauge.errors import ConfigError
from memgauge.models import _llama_server as ls

# A stand-in for the server's child process: it prints its address as the real one does,
# then answers /health 503 "Loading model" for the first LOADING_FOR requests (-1: forever)
# and 200 after, and /props and /v1/models as llama.cpp does; it stops when stdin closes.
FAKE_CHILD = r'''
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
loading_for = int(sys.argv[1])
asked = [0]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def send(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.path == "/health":
            asked[0] += 1
            if loading_for < 0 or asked[0] <= loading_for:
                return self.send(503, {"error": {"code": 503, "message": "Loading model",
                                                 "type": "unavailable_error"}})
            return self.send(200, {"status": "ok"})
        if loading_for < 0 or asked[0] <= loading_for:
            return self.send(503, {"error": {"code": 503, "message": "Loading model"}})
        if self.path == "/props":
            return self.send(200, {"total_slots": 1,
                                   "default_generation_settings": {"n_ctx": 8192}})
        return self.send(200, {"data": [{"id": "fake.gguf"}]})
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
print(json.dumps({"address": "http://127.0.0.1:%d" % srv.server_address[1]}), flush=True)
sys.stdin.buffer.read()
'''


@pytest.fixture
def fake_child(tmp_path, monkeypatch):
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE_CHILD, encoding="utf-8")
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF" + bytes(1000))
    monkeypatch.setattr(ls, "require_engine", lambda: "test")

    def use(loading_for: int) -> ls.LlamaServerOptions:
        monkeypatch.setattr(ls, "_child_command",
                            lambda options: [sys.executable, str(script), str(loading_for)])
        return ls.LlamaServerOptions(model=model)

    return use


def test_a_server_that_never_becomes_ready_is_refused_in_time_with_its_state_and_the_fix(
        fake_child, monkeypatch):
    options = fake_child(-1)
    monkeypatch.setattr(ls, "START_BASE_S", 1.5)  # the scaled limit, small for the test
    monkeypatch.setattr(ls.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    t0 = time.monotonic()
    with pytest.raises(ConfigError) as caught:
        ls.LlamaServer.start(options)
    assert time.monotonic() - t0 < 10
    message = str(caught.value)
    assert "did not become ready" in message
    assert "Loading model" in message  # what /health said last
    assert "--timeout" in message  # the fix


def test_a_server_still_loading_is_waited_for(fake_child):
    server = ls.LlamaServer.start(fake_child(5))  # 503 "Loading model" five times, then ready
    try:
        assert server.slots == 1 and server.n_ctx == 8192 and server.model_id == "fake.gguf"
        assert server.start_limit_s >= ls.START_BASE_S
    finally:
        server.stop()


def test_the_start_limit_scales_with_the_load_the_model_and_the_timeout(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(bytes(2_000_000))
    idle = ls.start_limit(model, load=0.0, cpus=2)
    busy = ls.start_limit(model, load=13.0, cpus=2)
    assert busy.seconds == pytest.approx(idle.seconds * 7)  # (13 + 1) / 2 cores
    bigger = tmp_path / "big.gguf"
    bigger.write_bytes(bytes(40_000_000))
    assert ls.start_limit(bigger, load=0.0, cpus=2).seconds > idle.seconds
    assert ls.start_limit(model, floor_s=900, load=0.0, cpus=2).seconds == 900
    assert "load average of 13.0 on 2 cores" in busy.describe()
