"""Prefix-cache reuse of full-context runs on a local llama.cpp server (design 0031).

Runs of the same questions with ``--system full-context`` against SmolLM2 on llama.cpp's
server (xllamacpp, the engine of ``local:``; started here so its host-memory prompt cache,
``cache_ram_mib``, can be turned off: default 8192 MiB, or 0), each arm on a fresh server:

- ``grouped``: LoCoMo conversations, each with its questions (the runner sends an episode's
  first question alone, then the rest, which reuse the history the server cached);
- ``shuffled``: the same questions, each made its own conversation (the same history, one
  question), in a seeded shuffle across conversations: what a runner without episode
  affinity sends.

For each, the server's own counts (``prompt_tokens`` and ``cached_tokens``, summed in the
manifest's ``prefix_cache``) and the wall time of answering (the run minus the server start,
which both runs pay alike). The conversations are cut to their first sessions so the history
fits SmolLM2's 8192-token context and a 2-core machine answers in minutes.

    python bench/prefix_cache.py --conversations 2 --questions 10 --max-chars 5000 --repeats 2

``--timeline TIER`` measures a synth timeline tier small enough for SmolLM2 instead (one per
seed, ``--timelines`` of them with ``--plans`` plans each, generated here): ``grouped`` is
each timeline run online (each question once its ``asked_after`` session is in, so later
prompts extend earlier ones); ``shuffled`` makes each question its own episode holding the
sessions up to its ``asked_after`` (the same prompt), shuffled across the timelines.

    python bench/prefix_cache.py --timeline 6k --timelines 2 --plans 3

Needs the `local` extra, `memgauge models pull smollm2` and the LoCoMo files in
``../shared/data/locomo10`` (or ``--locomo DIR``). It prints one JSON object, and Markdown
rows for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memgauge.models._local_files import resolve
from memgauge.runner import RunConfig, Runner, load_manifest, read_records

BENCH_DIR = Path(__file__).resolve().parent
LOCOMO = BENCH_DIR.parents[1] / "shared" / "data" / "locomo10"


def cut_conversation(raw: dict[str, Any], max_chars: int, questions: int) -> dict[str, Any]:
    """The conversation's first sessions up to ``max_chars`` of text, and up to ``questions``
    of its questions whose evidence lies in them (adversarial ones left out)."""
    conv: dict[str, Any] = {k: raw[k] for k in ("speaker_a", "speaker_b")}
    kept, used, n = set(), 0, 1
    while f"session_{n}" in raw:
        size = sum(len(t.get("text", "")) for t in raw[f"session_{n}"])
        if kept and used + size > max_chars:
            break
        conv[f"session_{n}"] = raw[f"session_{n}"]
        conv[f"session_{n}_date_time"] = raw[f"session_{n}_date_time"]
        kept.add(n)
        used += size
        n += 1
    def inside(q: dict[str, Any]) -> bool:
        found = [re.match(r"D(\d+):", e) for e in q.get("evidence") or []]
        return bool(found) and all(m and int(m.group(1)) in kept for m in found)
    qa = [q for q in raw["qa"] if q.get("category") != 5 and "answer" in q and inside(q)]
    return {"conversation": conv, "qa": qa[:questions]}


def write_files(locomo: Path, out: Path, conversations: int, questions: int,
                max_chars: int, seed: int) -> tuple[Path, Path, int]:
    files = sorted(locomo.glob("*.json"), key=lambda p: int(p.stem))[:conversations]
    if not files:
        raise SystemExit(f"no LoCoMo files in {locomo} (give --locomo DIR)")
    grouped = []
    for path in files:
        conv = cut_conversation(json.loads(path.read_text(encoding="utf-8")), max_chars,
                                questions)
        conv["sample_id"] = path.stem
        grouped.append(conv)
    singles = [{"sample_id": f"{c['sample_id']}-{i}", "conversation": c["conversation"],
                "qa": [q]} for c in grouped for i, q in enumerate(c["qa"])]
    random.Random(seed).shuffle(singles)
    out.mkdir(parents=True, exist_ok=True)
    (out / "grouped.json").write_text(json.dumps(grouped), encoding="utf-8")
    (out / "shuffled.json").write_text(json.dumps(singles), encoding="utf-8")
    return out / "grouped.json", out / "shuffled.json", len(singles)


def write_timelines(out: Path, tier: str, timelines: int, plans: int,
                    seed: int) -> tuple[Path, Path, int]:
    """Synth timeline benchmarks (seeds 0..timelines-1) merged into one ``grouped`` folder,
    and a ``shuffled`` folder of one episode per question (its history up to
    ``asked_after``), both with the images and a manifest the synth loader reads."""
    import shutil

    from memgauge.benchmarks import BenchmarkOptions
    from memgauge.benchmarks.synth import SynthConfig, generate
    from memgauge.registry import lookup

    episodes = []
    for k in range(timelines):
        root = out / f"seed{k}"
        generate(SynthConfig(out=str(root), seed=k, tiers=[tier], questions=plans,
                             layout="timeline", overwrite=True))
        [episode] = lookup("benchmark", "synth")(BenchmarkOptions(
            data=str(root), tier=tier)).episodes()
        episodes.append((root, episode))
    singles = [episode.model_copy(update={
        "episode_id": f"{episode.episode_id}:{q.question_id}",
        "sessions": episode.sessions[:q.asked_after + 1],
        "questions": [q.model_copy(update={"asked_after": None})]})
        for _, episode in episodes for q in episode.questions]
    random.Random(seed).shuffle(singles)
    paths = []
    for name, eps in (("grouped", [e for _, e in episodes]), ("shuffled", singles)):
        folder = out / name
        (folder / "tiers" / tier).mkdir(parents=True, exist_ok=True)
        for root, _ in episodes:
            shutil.copytree(root / "images", folder / "images", dirs_exist_ok=True)
        manifest = json.loads((episodes[0][0] / "manifest.json").read_text(encoding="utf-8"))
        manifest["tiers"][tier]["questions"] = sum(len(e.questions) for e in eps)
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        lines = [e.model_dump_json(exclude={"sessions": {"__all__": {"turns": {"__all__": {
            "images": {"__all__": {"path"}}}}}}}) for e in eps]
        (folder / "tiers" / tier / "episodes.jsonl").write_text("\n".join(lines) + "\n",
                                                               encoding="utf-8")
        paths.append(folder)
    return paths[0], paths[1], len(singles)


def serve(spec: dict[str, Any]) -> int:
    """The child: llama.cpp's server as ``local:`` starts it, with ``cache_ram_mib`` set."""
    import xllamacpp as xl

    p = xl.CommonParams()
    p.model.path = spec["model"]
    p.n_parallel = spec["slots"]
    p.n_ctx = spec["n_ctx"] * spec["slots"]
    p.hostnames = ["127.0.0.1"]
    p.port = 0
    p.offline = True
    p.cache_ram_mib = spec["cache_ram_mib"]
    server = xl.Server(p)
    print(json.dumps({"address": server.listening_address}), flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.buffer.read()  # until the parent closes the pipe
    del server
    return 0


@contextlib.contextmanager
def server(cache_ram_mib: int, slots: int) -> Iterator[str]:
    spec = {"model": str(resolve("smollm2").resolve()), "slots": slots, "n_ctx": 8192,
            "cache_ram_mib": cache_ram_mib}
    proc = subprocess.Popen([sys.executable, __file__, "--serve", json.dumps(spec)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline() if proc.stdout else b""
        address = str(json.loads(line)["address"]).rstrip("/")
        if not address.startswith("http"):
            address = f"http://{address}"
        yield f"{address}/v1"
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure(data: Path, out: Path, base_url: str, args: argparse.Namespace) -> dict[str, Any]:
    config = RunConfig(bench="synth" if args.timeline else "locomo", data=str(data),
                       tier=args.timeline, out=str(out), system="full-context",
                       model="openai:smollm2", base_url=base_url, context_mode="text",
                       max_tokens=args.max_tokens, concurrency=args.concurrency, cache=False,
                       protocol=args.protocol,
                       progress=False, timeout_s=600.0)
    result = Runner(config).run_sync()
    records = list(read_records(out).values())
    figure = (load_manifest(out) or {}).get("prefix_cache") or {}
    prompt, cached = figure.get("prompt_tokens") or 0, figure.get("cached_tokens") or 0
    return {"questions": len(records), "ok": result.ok, "errors": result.errors,
            "wall_s": round(result.wall_s, 1), "prompt_tokens": prompt,
            "cached_tokens": cached, "computed_tokens": prompt - cached,
            "reuse": figure.get("reuse")}


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        return serve(json.loads(sys.argv[2]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--work", type=Path, default=BENCH_DIR / "out" / "prefix_cache")
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--questions", type=int, default=10, help="per conversation")
    ap.add_argument("--max-chars", type=int, default=5000, help="history text per conversation")
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--slots", type=int, default=1, help="llama.cpp n_parallel")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--cache-ram", default="8192,0", help="cache_ram_mib values to try")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeline", default=None,
                    help="a synth timeline tier (e.g. 6k) instead of LoCoMo")
    ap.add_argument("--timelines", type=int, default=2, help="with --timeline: how many")
    ap.add_argument("--plans", type=int, default=3, help="with --timeline: plans in each")
    ap.add_argument("--protocol", default="online", choices=("online", "offline"),
                    help="offline: every question sees the whole history (one shared prefix)")
    args = ap.parse_args()
    work = args.work / time.strftime("%Y%m%d-%H%M%S")
    if args.timeline:
        grouped, shuffled, n = write_timelines(work, args.timeline, args.timelines,
                                               args.plans, args.seed)
    elif not args.locomo.is_dir():
        print(f"LoCoMo data not found at {args.locomo}: skipped", file=sys.stderr)
        return 0
    else:
        grouped, shuffled, n = write_files(args.locomo, work, args.conversations,
                                           args.questions, args.max_chars, args.seed)
    out: dict[str, Any] = {
        "questions": n, "timeline": args.timeline, "timelines": args.timelines,
        "plans": args.plans, "conversations": args.conversations, "max_chars": args.max_chars,
        "slots": args.slots, "concurrency": args.concurrency, "max_tokens": args.max_tokens,
        "arms": []}
    arms = [(int(ram), name, data) for ram in args.cache_ram.split(",")
            for name, data in (("grouped", grouped), ("shuffled", shuffled))]
    for r in range(args.repeats):
        for ram, name, data in arms if r % 2 == 0 else arms[::-1]:  # alternate the order
            with server(ram, args.slots) as base_url:
                m = measure(data, work / f"run-{name}-{ram}-{r}", base_url, args)
            out["arms"].append({"arm": name, "cache_ram_mib": ram, "repeat": r, **m})
            print(json.dumps(out["arms"][-1]), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2))
    print("| arm | cache_ram_mib | questions | prompt tokens sent | served from the prefix "
          "cache | computed | wall (s) |")
    for m in out["arms"]:
        share = f"{100 * m['reuse']:.1f} %" if m["reuse"] is not None else "—"
        print(f"| {m['arm']} | {m['cache_ram_mib']} | {m['questions']} | {m['prompt_tokens']} | "
              f"{m['cached_tokens']} ({share}) | {m['computed_tokens']} | {m['wall_s']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
