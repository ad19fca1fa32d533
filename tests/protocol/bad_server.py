"""A hand-written memory service for tests: each route answers what the test scripts."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# a route's reply: (status, body bytes), or "hang" (no reply for a while)
Reply = tuple[int, bytes] | str
INFO = {"name": "bad", "version": "0", "modality": "text"}


def ok(obj: Any) -> tuple[int, bytes]:
    return 200, json.dumps(obj).encode()


def answer(text: str = "42", **extra: Any) -> tuple[int, bytes]:
    return ok({"answer": text, "retrieved": [], "usage": None, **extra})


class BadServer:
    """``routes[path]`` is a list of replies used one per request (the last one repeats), or
    a function of the request body; every request body is kept in ``seen``."""

    def __init__(self, routes: dict[str, list[Reply] | Callable[[dict], Reply]]) -> None:
        self.routes = {"/info": [ok(INFO)], "/reset": [ok({})], "/ingest": [ok({})],
                       "/answer": [answer()], **routes}
        self.seen: list[tuple[str, Any]] = []
        self.in_flight: dict[str, int] = {}
        self.most_in_flight = 0
        self.hang_s = 3.0
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._reply(None)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self._reply(json.loads(raw))

            def _reply(self, body: Any) -> None:
                eid = (body or {}).get("episode_id", "")
                with lock:
                    server.seen.append((self.path, body))
                    server.in_flight[eid] = server.in_flight.get(eid, 0) + 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight[eid])
                    script = server.routes.get(self.path, [(404, b'{"error": "no"}')])
                    reply = (script(body) if callable(script)
                             else script.pop(0) if len(script) > 1 else script[0])
                counted = True

                def done() -> None:  # before the reply is sent: the client's next call can
                    nonlocal counted  # only follow it, and must not count as overlapping
                    if counted:
                        with lock:
                            server.in_flight[eid] -= 1
                        counted = False

                try:
                    time.sleep(0.05)  # long enough for a second call to overlap, if sent
                    if reply == "hang":
                        time.sleep(server.hang_s)
                        return
                    status, data = reply
                    done()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    done()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def routes_seen(self, path: str) -> list[Any]:
        return [body for p, body in self.seen if p == path]

    def __enter__(self) -> Self:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
