"""An OpenAI-compatible Batch API on 127.0.0.1 for tests (stdlib only).

Routes: ``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``,
``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``, ``GET /v1/models``, and
``POST /v1/chat/completions`` (the online judge, answered by the same ``answer``), so one
server serves a batch and an online score of the same run.

A batch stays ``in_progress`` for ``polls_to_finish`` polls, then ends. ``outcome(body)``
says what each request gets: ``"ok"`` (a completion of ``answer(body)``), ``"error"`` (an
error-file line with ``error.code``), ``"http500"`` (an error-file line whose response has
status 500), ``"expire"`` (no result: the batch ends ``expired`` with a ``batch_expired``
line), ``"junk"`` (an unreadable output line), ``"wrong_body"`` (a 200 whose body is no
chat completion). ``fail_batch`` makes every batch end ``failed`` (a validation error);
``poll_plan`` answers the next polls with those HTTP statuses instead; ``refuse_create``
refuses ``POST /batches``.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


def completion(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-batch", "object": "chat.completion", "created": 0,
            "model": "judge", "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}


class BatchServer:
    def __init__(self, answer: Callable[[dict[str, Any]], str],
                 outcome: Callable[[dict[str, Any]], str] | None = None,
                 polls_to_finish: int = 2) -> None:
        self.answer = answer
        self.outcome = outcome or (lambda body: "ok")
        self.polls_to_finish = polls_to_finish
        self.fail_batch = False
        self.files: dict[str, bytes] = {}
        self.uploads: list[dict[str, Any]] = []  # purpose, filename, data of each upload
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []  # the POST /batches bodies
        self.polls: list[str] = []  # the batch id of each poll
        self.online: list[bytes] = []  # raw bodies of online chat completions
        self.poll_plan: list[int] = []  # statuses answered to the next polls, one each
        self.refuse_create = False  # POST /batches answers 400
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _read(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length", "0")))

            def do_POST(self) -> None:
                raw = self._read()
                with server._lock:
                    if self.path == "/v1/files":
                        self._send(*server._upload(self.headers.get("Content-Type", ""), raw))
                    elif self.path == "/v1/batches":
                        self._send(*server._create(json.loads(raw)))
                    elif self.path == "/v1/chat/completions":
                        server.online.append(raw)
                        self._send(200, completion(server.answer(json.loads(raw))))
                    else:
                        self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_GET(self) -> None:
                with server._lock:
                    parts = self.path.strip("/").split("/")
                    if parts == ["v1", "models"]:
                        self._send(200, {"object": "list", "data": []})
                    elif parts[:2] == ["v1", "batches"] and len(parts) == 3:
                        self._send(*server._poll(parts[2]))
                    elif parts[:2] == ["v1", "files"] and parts[3:] == ["content"]:
                        data = server.files.get(parts[2])
                        if data is None:
                            self._send(404, {"error": {"message": "no such file"}})
                        else:
                            self._send(200, data)
                    else:
                        self._send(404, {"error": {"message": f"no route {self.path}"}})

            def _send(self, status: int, payload: dict[str, Any] | bytes) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _upload(self, content_type: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        fields = {part.get_param("name", header="content-disposition"): part
                  for part in msg.iter_parts()}
        if "file" not in fields or "purpose" not in fields:
            return 400, {"error": {"message": "multipart needs `file` and `purpose`"}}
        data = fields["file"].get_payload(decode=True)
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        self.uploads.append({"purpose": fields["purpose"].get_payload(decode=True).decode(),
                             "filename": fields["file"].get_filename(), "data": data})
        return 200, {"id": file_id, "object": "file", "purpose": "batch", "bytes": len(data)}

    def _create(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.created.append(body)
        if self.refuse_create:
            return 400, {"error": {"message": "batch quota reached", "type": "test"}}
        if body.get("input_file_id") not in self.files:
            return 400, {"error": {"message": "no such input file"}}
        batch_id = f"batch_{len(self.batches) + 1}"
        lines = self.files[body["input_file_id"]].splitlines()
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": body.get("endpoint"),
            "input_file_id": body["input_file_id"], "completion_window":
            body.get("completion_window"), "status": "validating", "output_file_id": None,
            "error_file_id": None, "request_counts": {"total": len(lines), "completed": 0,
                                                      "failed": 0}}
        return 200, self.batches[batch_id]

    def _poll(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return 404, {"error": {"message": "no such batch"}}
        self.polls.append(batch_id)
        if self.poll_plan:
            status = self.poll_plan.pop(0)
            return status, {"error": {"message": f"planned {status}", "type": "test"}}
        if batch["status"] in ("validating", "in_progress"):
            batch["status"] = "in_progress"
            if self.polls.count(batch_id) >= self.polls_to_finish:
                self._finish(batch)
        return 200, batch

    def _finish(self, batch: dict[str, Any]) -> None:
        if self.fail_batch:
            batch.update(status="failed", errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "line 1: model not found", "line": 1}]})
            return
        out: list[bytes] = []
        errors: list[bytes] = []
        expired = False
        for n, line in enumerate(self.files[batch["input_file_id"]].splitlines(), 1):
            req = json.loads(line)
            assert req["method"] == "POST" and req["url"] == "/v1/chat/completions"
            cid, what = req["custom_id"], self.outcome(req["body"])
            base = {"id": f"batch_req_{n}", "custom_id": cid}
            if what == "ok":
                out.append(json.dumps({**base, "response": {
                    "status_code": 200, "request_id": f"r{n}",
                    "body": completion(self.answer(req["body"]))}, "error": None}).encode())
            elif what == "error":
                errors.append(json.dumps({**base, "response": None, "error": {
                    "code": "server_error", "message": "the model crashed"}}).encode())
            elif what == "http500":
                errors.append(json.dumps({**base, "response": {
                    "status_code": 500, "request_id": f"r{n}",
                    "body": {"error": {"message": "overloaded"}}}, "error": None}).encode())
            elif what == "expire":
                expired = True
                errors.append(json.dumps({**base, "response": None, "error": {
                    "code": "batch_expired", "message": "not run within the window"}}).encode())
            elif what == "junk":
                out.append(b'{"custom_id": "' + cid.encode() + b'", "respo')
            elif what == "wrong_body":
                out.append(json.dumps({**base, "response": {
                    "status_code": 200, "body": {"object": "list"}}}).encode())
        done = sum(1 for _ in out)
        for name, lines in (("output_file_id", out), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = b"\n".join(lines) + b"\n"
                batch[name] = file_id
        batch["status"] = "expired" if expired else "completed"
        batch["request_counts"].update(completed=done, failed=len(errors))

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
