"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests (stdlib only).

It records every request body, answers with ``answer(body) -> str``, and can be scripted to
fail (``plan`` is a list of status codes or "hang" consumed one per request before normal
answers resume). ``models`` (a list of ``/models`` entries) makes it answer ``GET .../models``
with that list; left None, a GET is refused with 501 as before. GETs never consume ``plan``.
``refuse_response_format`` (an error text) makes it answer any request carrying
``response_format`` with a 400 of that text, as a server without structured output does.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class StubServer:
    def __init__(self, answer: Callable[[dict[str, Any]], str] | None = None,
                 latency_s: float = 0.0) -> None:
        self.answer = answer or (lambda body: "Insufficient information")
        self.latency_s = latency_s
        self.requests: list[dict[str, Any]] = []
        self.raw_bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.plan: list[int | str] = []
        self.models: list[dict[str, Any]] | None = None
        self.gets: list[str] = []  # the paths of GET requests, in order
        self.hang_s = 30.0
        self.refuse_response_format: str | None = None
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                with stub._lock:
                    stub.gets.append(self.path)
                    models = stub.models
                if models is None:
                    self.send_error(501, f"Unsupported method ({self.command!r})")
                elif self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": models})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                with stub._lock:
                    stub.raw_bodies.append(raw)
                    stub.headers.append(dict(self.headers))
                    body = json.loads(raw)
                    stub.requests.append(body)
                    step = stub.plan.pop(0) if stub.plan else None
                if step == "hang":
                    time.sleep(stub.hang_s)
                if stub.latency_s:
                    time.sleep(stub.latency_s)
                if stub.refuse_response_format and "response_format" in body:
                    self._send(400, {"error": {"message": stub.refuse_response_format,
                                               "type": "invalid_request_error"}})
                    return
                if isinstance(step, int):
                    payload = {"error": {"message": f"stub error {step}", "type": "stub"}}
                    self._send(step, payload, {"Retry-After": "0"} if step == 429 else {})
                    return
                text = stub.answer(body)
                self._send(200, {
                    "id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "stub"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": len(raw) // 4, "completion_tokens": 3,
                              "total_tokens": len(raw) // 4 + 3}})

            def _send(self, status: int, payload: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def question_of(body: dict[str, Any]) -> str:
    """The question text in a MemLens-layout request (the last message's last text block)."""
    return last_text(body).split("Question: ", 1)[1].strip()


def last_text(body: dict[str, Any]) -> str:
    """The last message's last text: its content when that is a string (text-only messages
    are sent so), else its last text part."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[-1]["text"]
