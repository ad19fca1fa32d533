#!/usr/bin/env python3
"""rag's visual retriever with an image-embeddings endpoint: requests and time to index an
episode's images, with a cold and a warm response cache, against the offline stand-in.

Makes ``--images`` distinct photos (``--side`` px, random colour blocks), one per session,
and a loopback ``/v1/embeddings`` server answering vLLM's chat-style image requests with
``--dims``-d vectors (a fixed projection of the image's mean colour and a hash, so the work
on the server side is tiny and the figures are what memgauge costs: reading, resizing and
base64-encoding the image, the request, the reply's parsing, the cache). Then, per mode,
a fresh ``rag`` (``retriever=visual``, ``unit=session``) ingests every session and answers
``--questions`` text questions:

- ``endpoint, cold cache``: an empty response cache;
- ``endpoint, warm cache``: the same cache again (a rerun): no image request is expected;
- ``stand-in``: no image embedder (perceptual hash + colour histogram, offline; its text
  questions are matched against captions with the static text model, loaded beforehand).

    python3 bench/image_embed.py --images 200 --side 800

Prints one JSON object per mode and Markdown rows for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import io
import json
import random
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from memgauge.cache import ResponseCache
from memgauge.media import ImagePolicy
from memgauge.models.scripted import ScriptedModel
from memgauge.registry import lookup
from memgauge.schema import ImageRef, Question, Session, Turn
from memgauge.systems import SystemContext


def make_images(folder: Path, n: int, side: int, seed: int) -> list[ImageRef]:
    rng = random.Random(seed)
    refs = []
    for i in range(n):
        im = Image.new("RGB", (side, side * 3 // 4), tuple(rng.randrange(256) for _ in range(3)))
        for _ in range(6):
            x, y = rng.randrange(side), rng.randrange(side * 3 // 4)
            im.paste(tuple(rng.randrange(256) for _ in range(3)),
                     (x, y, x + side // 5, y + side // 6))
        path = folder / f"p{i:04d}.png"
        im.save(path)
        refs.append(ImageRef(source=path.name, path=str(path), width=side, height=side * 3 // 4))
    return refs


class Server:
    def __init__(self, dims: int) -> None:
        self.image_requests = 0
        self.text_requests = 0
        proj = np.random.default_rng(0).standard_normal((4, dims))
        outer = self

        def vector(url: str) -> list[float]:
            raw = base64.b64decode(url.partition(",")[2])
            mean = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB").resize((8, 8)),
                              dtype=float).reshape(-1, 3).mean(axis=0) / 255
            salt = int(hashlib.sha256(raw).hexdigest()[:8], 16) / 2**32
            return (np.append(mean, salt) @ proj).tolist()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # head and body in one send: written apart, the client's delayed ACK holds the
            # body ~40 ms, and that, not memgauge, would be the figure
            wbufsize = 1 << 16

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if "messages" in body:
                    outer.image_requests += 1
                    rows = [vector(body["messages"][0]["content"][0]["image_url"]["url"])]
                else:
                    outer.text_requests += 1
                    rows = [proj.sum(axis=0).tolist() for _ in body["input"]]
                raw = json.dumps({"data": [{"index": i, "embedding": r}
                                           for i, r in enumerate(rows)]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def one_pass(refs: list[ImageRef], questions: int, options: dict[str, str],
             cache: ResponseCache | None, max_side: int) -> tuple[float, float]:
    """Seconds to ingest every session, and to answer the questions (the reader scripted)."""
    ctx = SystemContext(model=ScriptedModel(fn=lambda m, q: "a"),
                        image_policy=ImagePolicy(max_side=max_side), cache=cache,
                        options={"retriever": "visual", "reader": "model", **options})
    made = lookup("system", "rag")(ctx)()
    sessions = [Session(session_id=f"s{i}", date="d", turns=[
        Turn(turn_id=f"t{i}", role="user", text="Look <image>", images=[ref])])
        for i, ref in enumerate(refs)]

    async def go() -> tuple[float, float]:
        t0 = time.perf_counter()
        for s in sessions:
            await made.ingest(s)
        t1 = time.perf_counter()
        for q in range(questions):
            await made.answer(Question(question_id=f"q{q}", text=f"the photo number {q}",
                                       answer="x", answer_type="free_text",
                                       ability="information_extraction"))
        return t1 - t0, time.perf_counter() - t1

    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=200)
    ap.add_argument("--side", type=int, default=800)
    ap.add_argument("--max-side", type=int, default=800, help="the run's --image-max-side")
    ap.add_argument("--dims", type=int, default=768)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    server = Server(args.dims)
    from memgauge.analysis import get_retriever

    get_retriever("embed").embed(["warm-up"])  # the stand-in's caption embedder, loaded once
    endpoint = {"image_embedder": "openai:clip-bench", "image_embedder_base_url": server.url}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        refs = make_images(Path(tmp), args.images, args.side, args.seed)
        cache = ResponseCache(Path(tmp) / "cache.sqlite")
        for mode, options, use_cache in [("endpoint, cold cache", endpoint, cache),
                                         ("endpoint, warm cache", endpoint, cache),
                                         ("stand-in", {}, None)]:
            before = (server.image_requests, server.text_requests)
            ingest_s, answer_s = one_pass(refs, args.questions, options, use_cache,
                                          args.max_side)
            row = {"mode": mode, "images": args.images, "side": args.side,
                   "max_side": args.max_side, "dims": args.dims,
                   "image_requests": server.image_requests - before[0],
                   "text_requests": server.text_requests - before[1],
                   "ingest_s": round(ingest_s, 3),
                   "ms_per_image": round(1000 * ingest_s / args.images, 2),
                   "answer_ms_per_question": round(1000 * answer_s / args.questions, 2)}
            print(json.dumps(row), flush=True)
            rows.append(row)
        cache.close()
    server.httpd.shutdown()
    print("\n| mode | image requests | text requests | ingest | per image | per question |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['mode']} | {r['image_requests']} | {r['text_requests']} | "
              f"{r['ingest_s']:.2f} s | {r['ms_per_image']:.1f} ms | "
              f"{r['answer_ms_per_question']:.1f} ms |")


if __name__ == "__main__":
    main()
