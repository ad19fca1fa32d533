"""SmolLM2 through memgauge against the same llama.cpp server driven directly.

Both sides send the same kind of prompt (distinct from the first token, so llama.cpp's prefix
cache serves nothing) to one server, one request at a time. The server reports the time
it spent computing each reply (``timings.prompt_ms + predicted_ms``). Each side's harness
share is 1 − compute / wall. memgauge's side is its model client (`local:` provider:
message rendering, body splicing, the HTTP transport, reply parsing, the scaled timeout)
with the response cache off.

    python bench/local_model.py --requests 12 --prompt-tokens 1000 --max-tokens 32

Needs the `local` extra and `memgauge models pull smollm2`. It prints one JSON object, and
a Markdown row for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import urllib.request

from memgauge.models import GenerateConfig, Message, ModelSettings, TextPart
from memgauge.models._local_files import resolve
from memgauge.models.local import LocalModel

FILLER = ("On day {i} Alice bought {k} apples at the market near the old station, and Bob "
          "wrote the number {i} in his notebook before the train left. ")


def prompt(tag: str, tokens: int) -> str:
    # ~22 SmolLM2 tokens per sentence; the tag first so no two prompts share a prefix
    n = max(1, tokens // 22)
    body = "".join(FILLER.format(i=i, k=(i * 7) % 11) for i in range(n))
    return f"[{tag}] {body}\nHow many apples did Alice buy on day 3? Answer briefly."


def direct(base_url: str, texts: list[str], max_tokens: int) -> dict[str, float]:
    compute = prompt_tokens = out_tokens = prefill_ms = decode_ms = 0.0
    t0 = time.perf_counter()
    for text in texts:
        body = json.dumps({"model": "m", "max_tokens": max_tokens, "temperature": 0,
                           "messages": [{"role": "system", "content": "Answer briefly."},
                                        {"role": "user", "content": text}]}).encode()
        req = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as resp:
            t = json.loads(resp.read())["timings"]
        prefill_ms += t["prompt_ms"]
        decode_ms += t["predicted_ms"]
        prompt_tokens += t["prompt_n"]
        out_tokens += t["predicted_n"]
    wall = time.perf_counter() - t0
    compute = (prefill_ms + decode_ms) / 1000
    return {"wall_s": wall, "compute_s": compute, "prompt_tokens": prompt_tokens,
            "output_tokens": out_tokens, "prefill_tps": prompt_tokens / (prefill_ms / 1000),
            "decode_tps": out_tokens / (decode_ms / 1000), "harness_share": 1 - compute / wall}


async def through_memgauge(model: LocalModel, texts: list[str],
                           max_tokens: int) -> dict[str, float]:
    seen: list[dict[str, float]] = []
    observe = model.observe

    def keep(reply: dict) -> None:  # the server's timings of each reply, as the client sees it
        seen.append(reply["timings"])
        observe(reply)

    model.observe = keep  # type: ignore[method-assign]
    config = GenerateConfig(max_tokens=max_tokens, temperature=0.0)
    t0 = time.perf_counter()
    for text in texts:
        await model.generate([Message("system", [TextPart("Answer briefly.")]),
                              Message("user", [TextPart(text)])], config)
    wall = time.perf_counter() - t0
    prefill_ms = sum(t["prompt_ms"] for t in seen)
    decode_ms = sum(t["predicted_ms"] for t in seen)
    prompt_tokens = sum(t["prompt_n"] for t in seen)
    out_tokens = sum(t["predicted_n"] for t in seen)
    compute = (prefill_ms + decode_ms) / 1000
    return {"wall_s": wall, "compute_s": compute, "prompt_tokens": prompt_tokens,
            "output_tokens": out_tokens, "prefill_tps": prompt_tokens / (prefill_ms / 1000),
            "decode_tps": out_tokens / (decode_ms / 1000), "harness_share": 1 - compute / wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--requests", type=int, default=12)
    ap.add_argument("--prompt-tokens", type=int, default=1000)
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args()
    resolve(args.model)  # a clear error if it is not pulled
    model = LocalModel(args.model, ModelSettings(concurrency=1, cache=None))

    async def both() -> list[tuple[dict[str, float], dict[str, float]]]:
        # interleave the two sides so drifts in machine speed hit both alike (the direct
        # side blocks the loop, which has nothing else to do meanwhile)
        url = model.server.base_url
        out = []
        for r in range(2):
            d = direct(url, [prompt(f"d{r}-{i}", args.prompt_tokens)
                             for i in range(args.requests // 2)], args.max_tokens)
            m = await through_memgauge(model, [prompt(f"m{r}-{i}", args.prompt_tokens)
                                               for i in range(args.requests // 2)],
                                       args.max_tokens)
            out.append((d, m))
        await model.aclose()
        return out

    try:
        rounds = asyncio.run(both())
    finally:
        model.release()

    def pooled(side: int) -> dict[str, float]:
        parts = [r[side] for r in rounds]
        wall = sum(p["wall_s"] for p in parts)
        compute = sum(p["compute_s"] for p in parts)
        return {"wall_s": round(wall, 2), "compute_s": round(compute, 2),
                "harness_share": round(1 - compute / wall, 4),
                "prefill_tps": round(statistics.mean(p["prefill_tps"] for p in parts), 1),
                "decode_tps": round(statistics.mean(p["decode_tps"] for p in parts), 1),
                "prompt_tokens": int(sum(p["prompt_tokens"] for p in parts)),
                "output_tokens": int(sum(p["output_tokens"] for p in parts))}

    d, m = pooled(0), pooled(1)
    out = {"model": args.model, "requests_per_side": 2 * (args.requests // 2),
           "prompt_tokens_target": args.prompt_tokens, "max_tokens": args.max_tokens,
           "direct": d, "memgauge": m,
           "memgauge_extra_share": round(m["harness_share"] - d["harness_share"], 4)}
    print(json.dumps(out, indent=1))
    print(f"| {out['requests_per_side']} × ~{args.prompt_tokens} tok | direct: prefill "
          f"{d['prefill_tps']} tok/s, decode {d['decode_tps']} tok/s, harness "
          f"{100 * d['harness_share']:.2f} % | memgauge: prefill {m['prefill_tps']} tok/s, "
          f"decode {m['decode_tps']} tok/s, harness {100 * m['harness_share']:.2f} % |",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
