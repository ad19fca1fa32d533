#!/usr/bin/env python3
"""Transport choice (docs/design/0016): the client CPU per chat request of memgauge's own
transport (``models/_http.py``) against httpx and aiohttp, on the shared loopback stub.

Each client POSTs the same ~``--body-kb`` KB chat body ``--requests`` times, ``--concurrency``
at a time, to the stub (answering after ``--latency-ms``), in a process of its own: the
figures are that process's CPU time per request (user + sys, the harness's budget on two
cores), its wall time, and its import time. Clients run in turn, ``--repeats`` rounds,
interleaved, so the machine's speed of the minute falls on all alike.

    .venv/bin/python bench/transport_choice.py                    # 2,000 requests, c=64
    .venv/bin/python bench/transport_choice.py --clients ours,httpx
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

CLIENTS = {
    "ours": """
        from memgauge.models._http import HttpClient
        t_import = time.perf_counter() - t0
        async def main():
            client = HttpClient(URL, HEADERS, 60.0)
            sem = asyncio.Semaphore(CONC)
            async def one():
                async with sem:
                    r = await client.post([BODY])
                    assert r.status == 200, r.status
                    orjson.loads(r.body)
            await asyncio.gather(*(one() for _ in range(N)))
            await client.aclose()
    """,
    "httpx": """
        import httpx
        t_import = time.perf_counter() - t0
        async def main():
            limits = httpx.Limits(max_connections=CONC, max_keepalive_connections=CONC)
            async with httpx.AsyncClient(limits=limits, timeout=60.0, trust_env=True) as client:
                sem = asyncio.Semaphore(CONC)
                async def one():
                    async with sem:
                        r = await client.post(URL, content=BODY, headers=HEADERS)
                        assert r.status_code == 200, r.status_code
                        orjson.loads(r.content)
                await asyncio.gather(*(one() for _ in range(N)))
    """,
    "aiohttp": """
        import aiohttp
        t_import = time.perf_counter() - t0
        async def main():
            conn = aiohttp.TCPConnector(limit=CONC)
            async with aiohttp.ClientSession(connector=conn, trust_env=True) as session:
                sem = asyncio.Semaphore(CONC)
                async def one():
                    async with sem:
                        async with session.post(URL, data=BODY, headers=HEADERS) as r:
                            assert r.status == 200, r.status
                            orjson.loads(await r.read())
                await asyncio.gather(*(one() for _ in range(N)))
    """,
}

PRELUDE = """
import asyncio, os, resource, sys, time, json
t0 = time.perf_counter()
import orjson
URL, N, CONC, KB = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
text = ("The blue box holds seven keys and a note. " * (KB * 1024 // 43 + 1))[:KB * 1024]
BODY = orjson.dumps({"model": "m", "max_tokens": 16, "temperature": 0,
                     "messages": [{"role": "user", "content": text}]})
"""
EPILOGUE = """
c0 = time.process_time()
w0 = time.perf_counter()
asyncio.run(main())
wall = time.perf_counter() - w0
cpu = time.process_time() - c0
print(json.dumps({"import_s": round(t_import, 4), "wall_s": round(wall, 3),
                  "cpu_s": round(cpu, 3), "cpu_ms_per_request": round(1000 * cpu / N, 3),
                  "requests_per_s": round(N / wall, 1)}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_args(p, "transport_choice", repeats=3)
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--body-kb", type=int, default=20)
    p.add_argument("--clients", default="ours,httpx,aiohttp")
    a = p.parse_args()
    C.require_tools()
    work = a.work.resolve()
    names = [n for n in a.clients.split(",") if n]
    rows = []
    with C.stub(work, a.latency_ms, f"{a.name}") as s:
        url = f"{s.base_url}/chat/completions"
        for rep in range(a.repeats):
            for name in names:
                code = PRELUDE + textwrap.dedent(CLIENTS[name]) + EPILOGUE
                if a.wait_quiet > 0:
                    C.wait_quiet(a.wait_quiet)
                out = subprocess.run([C.PY, "-c", code, url, str(a.requests),
                                      str(a.concurrency), str(a.body_kb)],
                                     capture_output=True, text=True, check=False)
                if out.returncode != 0:
                    sys.exit(f"{name}: {out.stderr[-2000:]}")
                row = {"client": name, "round": rep + 1, **json.loads(out.stdout)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    result = {"command": C.shell_quote([C.PY, *sys.argv]), "machine": C.machine(),
              "src_digest": C.src_digest(), "requests": a.requests,
              "concurrency": a.concurrency, "body_kb": a.body_kb,
              "latency_ms": a.latency_ms, "rows": rows}
    path = C.write_result(work, a.name, result)
    print(f"wrote {C.rel(path)}")


if __name__ == "__main__":
    main()
