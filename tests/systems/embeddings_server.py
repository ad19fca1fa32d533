"""A loopback OpenAI-compatible embeddings server for the embedder and image-embedder tests.

``POST /v1/embeddings`` answers text ``input`` and images (vLLM's chat-style ``messages``
with an ``image_url`` part, or ``input`` items ``{"image": url}``) with vectors crafted so
rankings are known: a text's vector counts the colour words it holds; an image's vector is
its mean RGB colour. ``GET /v1/models`` lists ``model`` (what the run's pre-flight asks).
``override`` replaces the reply of the next requests (malformed replies)."""

from __future__ import annotations

import base64
import io
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import numpy as np
from PIL import Image

COLOURS = ("red", "green", "blue")


def text_vector(text: str) -> list[float]:
    words = text.lower()
    return [float(c in words) + 0.01 for c in COLOURS]


def image_vector(url: str) -> list[float]:
    return [c / 255 + 0.01 for c in mean_colour(url)]


def decode(url: str) -> Image.Image:
    head, _, data = url.partition(",")
    assert head.startswith("data:image/") and head.endswith(";base64"), head
    return Image.open(io.BytesIO(base64.b64decode(data)))


def mean_colour(url: str) -> tuple[float, float, float]:
    pixels = np.asarray(decode(url).convert("RGB"), dtype=float).reshape(-1, 3)
    r, g, b = pixels.mean(axis=0)
    return float(r), float(g), float(b)


def image_urls(body: dict[str, Any]) -> list[str]:
    """The image URLs a request carries, in either shape."""
    if "messages" in body:
        return [p["image_url"]["url"] for m in body["messages"] for p in m["content"]
                if p.get("type") == "image_url"]
    return [x["image"] for x in body.get("input", []) if isinstance(x, dict)]


class EmbeddingsServer:
    def __init__(self, model: str = "clip-test") -> None:
        self.model = model
        self.bodies: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self.auth: list[str | None] = []  # the Authorization header of each POST
        self.override: list[Callable[[dict[str, Any]], Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, obj: Any) -> None:
                raw = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                outer.gets.append(self.path)
                self._send(200, {"object": "list", "data": [{"id": outer.model}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append({"path": self.path, **body})
                outer.auth.append(self.headers.get("Authorization"))
                if outer.override:
                    self._send(200, outer.override.pop(0)(body))
                    return
                self._send(200, {"object": "list", "data": outer.vectors(body)})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"

    @staticmethod
    def vectors(body: dict[str, Any]) -> list[dict[str, Any]]:
        urls = image_urls(body)
        rows = ([image_vector(u) for u in urls] if urls
                else [text_vector(t) for t in body["input"]])
        return [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]

    def image_requests(self) -> list[dict[str, Any]]:
        return [b for b in self.bodies if image_urls(b)]

    def text_requests(self) -> list[dict[str, Any]]:
        return [b for b in self.bodies if not image_urls(b)]

    def __enter__(self) -> Self:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
