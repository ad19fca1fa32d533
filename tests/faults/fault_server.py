"""A loopback chat-completions server that injects faults, deterministically by a seed.

Every request is tied to its question (``qid_of(body)``); a ``FaultPlan`` gives some
questions one fault kind, applied to that question's first ``times`` requests and never
again, so a rerun can finish. Everything else is answered with ``answer(body)``, a function
of the question, so a test can check each score. The server counts requests per question
(``requests``) and every fault it injected (``injected``), and notes a retry that came
before the ``Retry-After`` it was given (``early_retries``).

Faults are written on the raw socket where HTTP itself is broken: a Content-Length that
lies, a chunked body cut short, a connection reset mid-body, a gzip body nobody asked for.
"""

from __future__ import annotations

import email.utils
import gzip
import json
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# A retryable fault, failing the first ``times`` attempts: with ``times`` below the
# client's attempts the question is answered, else it is an error of this kind.
RETRYABLE = {
    "429": "http_429", "429_retry_after_seconds": "http_429",
    "429_retry_after_date": "http_429", "500": "http_500", "503": "http_503",
    "hang": "timeout", "long_content_length": "connection", "cut_chunked": "connection",
    "reset": "connection",
}
# A reply that is not an answer: an error of this kind at once (the client does not retry a
# 200 it could not read), answered by the rerun.
UNREADABLE = {
    "non_json": "bad_response", "no_choices": "bad_response", "empty_choices": "bad_response",
    "content_null": "empty_answer", "short_content_length": "bad_response",
    # the client sends no Accept-Encoding: a gzip body is the server's fault. It must become
    # an answer (if the client decodes it) or a bad_response, never a wrong score.
    "gzip": "bad_response",
}
# Not a failure: the question must be answered, and scored right, the first time.
ANSWERED = ("content_list", "redirect_307", "redirect_308")
KINDS = (*RETRYABLE, *UNREADABLE, *ANSWERED)

RETRY_AFTER_S = 1  # what a 429 with Retry-After asks for (seconds, or a date this far on)
REDIRECTED = "/v1/redirected/chat/completions"
TOLERANCE_S = 0.05  # a timer may fire a little early (asyncio: one clock resolution)


@dataclass(frozen=True)
class Fault:
    kind: str
    times: int  # how many requests of its question it applies to


@dataclass
class FaultPlan:
    """Which questions get which fault: a seeded ``rate`` share of them, the kinds dealt in
    turn (so each kind is met), each applied to as many requests as ``retry_times`` (for a
    retryable kind) or ``unreadable_times`` (for the others) say, in turn."""

    faults: dict[str, Fault] = field(default_factory=dict)

    @classmethod
    def make(cls, qids: list[str], *, rate: float = 0.3, seed: int = 0,
             kinds: tuple[str, ...] = KINDS, retry_times: tuple[int, ...] = (1, 2, 3),
             unreadable_times: tuple[int, ...] = (1,)) -> FaultPlan:
        order = sorted(qids)
        random.Random(seed).shuffle(order)
        chosen = order[:round(rate * len(order))]
        faults = {}
        for n, qid in enumerate(chosen):
            kind = kinds[n % len(kinds)]
            times = retry_times if kind in RETRYABLE else unreadable_times
            faults[qid] = Fault(kind, times[(n // len(kinds)) % len(times)])
        return cls(faults)


class FaultServer:
    def __init__(self, answer: Callable[[dict[str, Any]], str],
                 qid_of: Callable[[dict[str, Any]], str], plan: FaultPlan,
                 hang_s: float, attempts: int) -> None:
        """``attempts``: the client's attempts per call, so that a 429 on the last one (which
        ends the call as an error) is not waited on by the next call."""
        self.answer, self.qid_of, self.plan, self.hang_s = answer, qid_of, plan, hang_s
        self.attempts = attempts
        self.requests: Counter[str] = Counter()  # per question, since reset_counts()
        self.injected: Counter[str] = Counter()  # per fault kind, over the server's life
        self.applied: Counter[str] = Counter()  # per question: faults used up so far
        self.early_retries: list[str] = []  # questions retried before their Retry-After
        self._not_before: dict[str, float] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # the run's pre-flight asks what is served
                _send(self, 200, json.dumps({"object": "list", "data": [
                    {"id": name, "object": "model"} for name in ("stub", "judge")]}).encode())

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw)
                qid = server.qid_of(body)
                with server._lock:
                    server.requests[qid] += 1
                    due = server._not_before.pop(qid, None)
                    if due is not None and time.time() < due - TOLERANCE_S:
                        server.early_retries.append(qid)
                    fault = server.plan.faults.get(qid)
                    kind = None
                    if (fault is not None and server.applied[qid] < fault.times
                            and self.path != REDIRECTED):
                        server.applied[qid] += 1
                        server.injected[fault.kind] += 1
                        kind = fault.kind
                        if server.applied[qid] % server.attempts == 0:
                            pass  # the call's last attempt: nothing is retried after it
                        elif kind == "429_retry_after_seconds":
                            server._not_before[qid] = time.time() + RETRY_AFTER_S
                        elif kind == "429_retry_after_date":
                            # an HTTP-date has whole seconds: the retry is due at that second
                            server._not_before[qid] = int(time.time()) + RETRY_AFTER_S + 1
                server._reply(self, kind, body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def reset_counts(self) -> None:
        """Between invocations: the request counts start again, and a question's last 429
        (the attempt that ended it as an error) is not waited on by the next invocation."""
        with self._lock:
            self.requests.clear()
            self._not_before.clear()

    # -- replies -------------------------------------------------------------------------
    def _completion(self, body: dict[str, Any], content: Any) -> dict[str, Any]:
        return {"id": "chatcmpl-fault", "object": "chat.completion", "created": 0,
                "model": body.get("model", "m"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}

    def _reply(self, h: BaseHTTPRequestHandler, kind: str | None,
               body: dict[str, Any]) -> None:
        text = self.answer(body)
        good = json.dumps(self._completion(body, text)).encode()
        try:
            self._send_fault(h, kind, body, text, good)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            h.close_connection = True

    # complexity above 15 kept: one branch per injected fault kind: the table of faults the tests
    # name
    def _send_fault(self, h: BaseHTTPRequestHandler, kind: str | None, body: dict[str, Any],  # noqa: C901
                    text: str, good: bytes) -> None:
        if kind is None or kind == "content_list":
            content = [{"type": "text", "text": text[:1]}, {"type": "text", "text": text[1:]}]
            data = good if kind is None else json.dumps(self._completion(body, content)).encode()
            _send(h, 200, data)
        elif kind.startswith(("429", "500", "503")):
            status = int(kind[:3])
            headers = {}
            if kind == "429_retry_after_seconds":
                headers["Retry-After"] = str(RETRY_AFTER_S)
            elif kind == "429_retry_after_date":
                headers["Retry-After"] = email.utils.formatdate(
                    int(time.time()) + RETRY_AFTER_S + 1, usegmt=True)
            _send(h, status, json.dumps({"error": {"message": f"injected {kind}",
                                                   "type": "fault"}}).encode(), headers)
        elif kind == "hang":
            time.sleep(self.hang_s)
            h.close_connection = True
        elif kind == "non_json":
            _send(h, 200, b"<html><body>502 Bad Gateway</body></html>",
                  {"Content-Type": "text/html"})
        elif kind == "no_choices":
            _send(h, 200, json.dumps({"id": "x", "object": "chat.completion"}).encode())
        elif kind == "empty_choices":
            _send(h, 200, json.dumps({"id": "x", "choices": []}).encode())
        elif kind == "content_null":
            _send(h, 200, json.dumps(self._completion(body, None)).encode())
        elif kind == "long_content_length":  # promises more than it sends, then closes
            _raw(h, _head(200, {"Content-Length": str(len(good) + 64)}) + good)
        elif kind == "short_content_length":  # promises less than the JSON, then closes
            _raw(h, _head(200, {"Content-Length": str(len(good) // 2)}) + good)
        elif kind == "cut_chunked":
            half = good[:len(good) // 2]
            _raw(h, _head(200, {"Transfer-Encoding": "chunked"})
                 + b"%x\r\n%s\r\n" % (len(half), half))
        elif kind == "reset":  # half the body, then a TCP reset (RST, not FIN)
            _raw(h, _head(200, {"Content-Length": str(len(good))}) + good[:len(good) // 2])
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
        elif kind == "gzip":
            _send(h, 200, gzip.compress(good), {"Content-Encoding": "gzip"})
        elif kind in ("redirect_307", "redirect_308"):
            _send(h, int(kind[-3:]), b"", {"Location": REDIRECTED})
        else:
            raise AssertionError(f"unknown fault {kind}")

    def __enter__(self) -> Self:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} X", "Content-Type: application/json", "Connection: close",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _raw(h: BaseHTTPRequestHandler, data: bytes) -> None:
    h.wfile.write(data)
    h.wfile.flush()
    h.close_connection = True


def _send(h: BaseHTTPRequestHandler, status: int, data: bytes,
          headers: dict[str, str] | None = None) -> None:
    h.send_response(status)
    headers = {"Content-Type": "application/json", **(headers or {})}
    for k, v in headers.items():
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)
