"""A loopback stand-in for the Letta REST routes ``--system letta`` calls (stdlib only).

Only the routes the adapter uses: ``GET /v1/health/``, ``POST /v1/agents/``, ``DELETE
/v1/agents/{id}``, ``POST /v1/agents/{id}/archival-memory`` and ``GET
/v1/agents/{id}/archival-memory/search``. Every reply is first validated against
letta-client's own response model (``AgentState``, ``Passage``, ``PassageSearchResponse``), so
the stand-in cannot drift from what the real client parses. Search ranks passages by the
number of query words they share (ties by insertion order), as a stand-in for embeddings.

``plan`` maps a route name (``health``, ``create_agent``, ``delete_agent``, ``insert``,
``search``) to steps consumed one per request: an HTTP status (answered with Letta's
``{"detail": …}`` body and ``retry-after-ms: 1`` so the client's retries are quick) or
``"garbage"`` (a 200 whose body is not JSON), ``"bad_shape"`` (200 JSON missing a field) or
``"hang"`` (no reply for ``hang_s`` seconds, then a normal one).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from letta_client.types import AgentState
from letta_client.types.agents.passage_search_response import PassageSearchResponse
from letta_client.types.passage import Passage
from pydantic import TypeAdapter

WORD = re.compile(r"[a-z0-9]+")
AGENT = re.compile(r"^/v1/agents/([^/]+)/?$")
INSERT = re.compile(r"^/v1/agents/([^/]+)/archival-memory/?$")
SEARCH = re.compile(r"^/v1/agents/([^/]+)/archival-memory/search/?$")


def agent_state(agent_id: str, body: dict[str, Any]) -> dict[str, Any]:
    state = {"id": agent_id, "name": body.get("name", agent_id), "agent_type": "letta_v1_agent",
             "blocks": [], "memory": {"blocks": []}, "sources": [], "tools": [],
             "system": "", "tags": body.get("tags") or [],
             "llm_config": {"model": body.get("model") or "stand-in", "context_window": 8192,
                            "model_endpoint_type": "openai"}}
    AgentState.model_validate(state)
    return state


class LettaStandIn:
    # complexity above 15 kept: the stand-in's routes, one branch per Letta endpoint it serves
    def __init__(self, token: str | None = None, version: str = "0.16.8",  # noqa: C901
                 result_ids: bool = True) -> None:
        # result_ids=False: search results without their passage ids, as Letta 0.11 sends
        self.token, self.version, self.result_ids = token, version, result_ids
        self.agents: dict[str, dict[str, Any]] = {}  # id -> the create request's body
        self.passages: dict[str, list[dict[str, Any]]] = {}  # agent id -> inserted passages
        self.deleted: list[str] = []
        self.deleted_by: list[str] = []  # the User-Agent of each delete (which client sent it)
        self.searches: list[dict[str, list[str]]] = []
        self.plan: dict[str, list[int | str]] = {}
        self.hang_s = 2.0
        self.calls: list[str] = []  # route names, in order
        self._lock = threading.Lock()
        self._next = 0
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

            def do_DELETE(self) -> None:
                self._route("DELETE")

            def _route(self, method: str) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n) if n else b""
                url = urlsplit(self.path)
                name, match = standin._which(method, url.path)
                if name is None:
                    return self._send(404, {"detail": f"Not Found: {method} {url.path}"})
                with standin._lock:
                    standin.calls.append(name)
                    step = standin.plan.get(name, []).pop(0) if standin.plan.get(name) else None
                if name != "health" and standin.token is not None and \
                        self.headers.get("Authorization") != f"Bearer {standin.token}":
                    return self._send(401, {"detail": "Unauthorized: invalid API key"})
                if isinstance(step, int):
                    return self._send(step, {"detail": f"stand-in failure {step}"},
                                      {"retry-after-ms": "1"})
                if step == "hang":
                    time.sleep(standin.hang_s)
                if step == "garbage":
                    return self._send_raw(200, b"<html>proxy error</html>")
                body = json.loads(raw) if raw else {}
                if name == "delete_agent":
                    with standin._lock:
                        standin.deleted_by.append(self.headers.get("User-Agent", ""))
                reply = standin._answer(name, match, body, parse_qs(url.query))
                if reply is None:
                    return self._send(404, {"detail": "agent not found"})
                if step == "bad_shape":
                    reply = _broken(reply)
                self._send(200, reply)

            def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                self._send_raw(status, json.dumps(obj).encode(), headers)

            def _send_raw(self, status: int, data: bytes,
                          headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _which(self, method: str, path: str) -> tuple[str | None, Any]:
        if method == "GET" and path.rstrip("/") == "/v1/health":
            return "health", None
        if method == "POST" and path.rstrip("/") == "/v1/agents":
            return "create_agent", None
        for name, want, pattern in (("delete_agent", "DELETE", AGENT), ("insert", "POST", INSERT),
                                    ("search", "GET", SEARCH)):
            if method == want and (m := pattern.match(path)):
                return name, m
        return None, None

    def _answer(self, name: str, match: Any, body: dict[str, Any],
                query: dict[str, list[str]]) -> Any:
        with self._lock:
            if name == "health":
                return {"status": "ok", "version": self.version}
            if name == "create_agent":
                self._next += 1
                agent_id = f"agent-{self._next}"
                self.agents[agent_id] = body
                self.passages[agent_id] = []
                return agent_state(agent_id, body)
            agent_id = match.group(1)
            if agent_id not in self.agents or agent_id in self.deleted:
                return None
            if name == "delete_agent":
                self.deleted.append(agent_id)
                return {}
            stored = self.passages[agent_id]
            if name == "insert":
                passage = {"id": f"passage-{len(stored)}", "text": body["text"],
                           "tags": body.get("tags"), "archive_id": f"archive-{agent_id}"}
                stored.append(passage)
                TypeAdapter(list[Passage]).validate_python([passage])
                return [passage]
            self.searches.append(query)
            words = set(WORD.findall(query["query"][0].lower()))
            top_k = int(query.get("top_k", ["10"])[0])
            ranked = sorted(stored, key=lambda p: -len(words & set(WORD.findall(
                p["text"].lower()))))[:top_k]
            results = [{"id": p["id"], "content": p["text"], "tags": p["tags"],
                        "timestamp": "2026-01-01T00:00:00+00:00"} for p in ranked]
            reply = {"count": len(results), "results": results}
            PassageSearchResponse.model_validate(reply)
            if not self.result_ids:
                for r in results:
                    del r["id"]
            return reply

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _broken(reply: Any) -> Any:
    """The reply without the field the adapter reads (a server of another shape)."""
    if isinstance(reply, dict) and "results" in reply:
        return {"count": reply["count"], "results": [{"id": r["id"]} for r in reply["results"]]
                or [{"id": "x"}]}
    if isinstance(reply, list):
        return [{"id": p["id"]} for p in reply]
    if isinstance(reply, dict):
        return {k: v for k, v in reply.items() if k != "id"}
    return reply
