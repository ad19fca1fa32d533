"""Serving a built-in system over the memory protocol in a thread, for the protocol tests."""

from __future__ import annotations

import asyncio
import hashlib
import json
import queue
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memgauge.runner import RunConfig
from memgauge.systems._serve import MemoryService, build_factory, serve


def prompt_digest(body: dict[str, Any]) -> str:
    """A stub model's answer that is the same exactly when the prompt is (images included)."""
    return "answer-" + hashlib.sha256(json.dumps(body["messages"], sort_keys=True)
                                      .encode()).hexdigest()[:16]


@contextmanager
def served(system: str, prefix: str = "", service_options: dict[str, Any] | None = None,
           serve_options: dict[str, Any] | None = None, **config: Any) -> Iterator[str]:
    """``system`` served on a free loopback port; yields its URL. ``service_options`` go to
    ``MemoryService`` (e.g. ``allow_image_urls``), ``serve_options`` to ``serve`` (``token``,
    ``limits``)."""
    factory, closers = build_factory(RunConfig(bench="-", data="-", out="-", system=system,
                                               cache=False, **config))
    urls: queue.Queue[str] = queue.Queue()
    holder: dict[str, Any] = {}

    async def main() -> None:
        holder["loop"] = asyncio.get_running_loop()
        holder["stop"] = stop = asyncio.Event()
        with tempfile.TemporaryDirectory() as tmp:
            service = MemoryService(factory, Path(tmp), version="test",
                                    **(service_options or {}))
            holder["service"] = service
            try:
                await serve(service, "127.0.0.1", 0, prefix, urls.put, stop,
                            **(serve_options or {}))
            finally:
                for close in closers:
                    await close()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    try:
        yield urls.get(timeout=30)
    finally:
        holder["loop"].call_soon_threadsafe(holder["stop"].set)
        thread.join(timeout=30)
