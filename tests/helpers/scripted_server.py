"""A loopback chat-completions server whose replies are scripted one by one (status and
JSON body), for tests of how the client and the runner meet server errors."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Reply = tuple[int, dict[str, Any]]

# llama.cpp's own error replies, as its server sends them
LLAMA_OVERFLOW = {"error": {
    "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 14550, "n_ctx": 8192,
    "message": "request (14550 tokens) exceeds the available context size (8192 tokens), "
               "try increasing it"}}
LLAMA_NO_VISION = {"error": {
    "code": 500, "type": "server_error",
    "message": "image input is not supported - hint: if this is unexpected, you may need to "
               "provide the mmproj"}}


class ScriptedServer:
    """Answers request i with ``replies[i]``, then with ``after`` (a reply, or a function of
    the request body giving one) for every further request; keeps every request body."""

    def __init__(self, replies: list[Reply],
                 after: Reply | Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.replies = list(replies)
        if after is None:
            after = (200, completion("fine"))
        self.after = after if callable(after) else (lambda body, reply=after: reply)
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                server.requests.append(body)
                status, obj = (server.replies.pop(0) if server.replies
                               else server.after(body))
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def completion(text: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": usage or {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}
