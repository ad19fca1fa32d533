#!/usr/bin/env python3
"""Reading a MemEye-release-sized folder with the memeye loader (design 0036).

The loader reads every task when the benchmark is made, so a mistake in the last task
stops a run before its first request. This measures what that costs on a folder shaped
like the release (the HF card's per-task sessions, rounds, QAs and images: 8 tasks, 371
QAs, 495 images; each MCQ QA with 4 rotations, each task with its _Open twin), built here
with tiny PNGs: wall time of making the benchmark, the process's peak RSS, and
the questions it yields.

    python3 bench/memeye_load.py            # work dir bench/out/memeye_release (git-ignored)
    python3 bench/memeye_load.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

from PIL import Image

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.memeye import MemEyeBenchmark

# (task, sessions, rounds, QAs, images) from the release's dataset card
TASKS = [("Brand_Memory_Test", 42, 72, 29, 30), ("Card_Playlog_Test", 4, 30, 48, 30),
         ("Cartoon_Entertainment_Companion", 86, 299, 76, 119),
         ("Home_Renovation_Interior_Design", 13, 120, 52, 90),
         ("Multi-Scene_Visual_Case_Archive_Assistant", 15, 117, 50, 57),
         ("Outdoor_Navigation_Route_Memory_Assistant", 10, 60, 28, 40),
         ("Personal_Health_Dashboard_Assistant", 12, 97, 51, 62),
         ("Social_Chat_Memory_Test", 39, 53, 37, 67)]
WORDS = ("the", "my", "a", "on", "in", "photo", "desk", "blue", "red", "green", "shelf", "left",
         "right", "near", "window")


def _text(seed: int, n: int = 40) -> str:
    return " ".join(WORDS[(seed * 7 + k * 3) % len(WORDS)] for k in range(n))


def build(root: Path) -> None:
    for task, n_sessions, n_rounds, n_qas, n_images in TASKS:
        img_dir = root / "image" / task
        img_dir.mkdir(parents=True, exist_ok=True)
        for i in range(n_images):
            Image.new("RGB", (32, 24), (i * 9 % 256, 80, 120)).save(img_dir / f"{i}.png")
        sessions, rounds = [], []
        per = max(1, n_rounds // n_sessions)
        for s in range(n_sessions):
            items = []
            for k in range(per if s < n_sessions - 1 else n_rounds - per * (n_sessions - 1)):
                rid = f"D{s + 1}:{k + 1}"
                r = {"round": rid, "user": _text(len(rounds)), "assistant": _text(len(rounds) + 1)}
                if len(rounds) < n_images:
                    r |= {"input_image": [f"image/{task}/{len(rounds)}.png"],
                          "image_id": [f"IMG{len(rounds)}"],
                          "image_caption": [_text(len(rounds), 25)]}
                items.append(r)
                rounds.append(rid)
            sessions.append({"session_id": f"D{s + 1}", "date": f"2026-01-{s % 28 + 1:02d}",
                             "dialogues": items})
        qas = []
        for q in range(n_qas):
            clue = [rounds[(q * 5) % len(rounds)], rounds[(q * 3) % len(rounds)]]
            texts = [f"option {q}-{j}" for j in range(4)]
            rots = []
            for g in range(4):
                order = texts[1:g + 1] + texts[:1] + texts[g + 1:]
                rots.append({**dict(zip("ABCD", order, strict=True)), "answer": "ABCD"[g]})
            qas.append({"question_id": f"q{q}", "point": [[f"X{q % 4 + 1}"], [f"Y{q % 3 + 1}"]],
                        "question": _text(q, 15) + "?", "answer": texts[0], "clue": clue,
                        "session_id": [c.split(":")[0] for c in clue], "options": rots})
        base = {"character_profile": {"name": "Alex"}, "multi_session_dialogues": sessions}
        dialog = root / "dialog"
        dialog.mkdir(parents=True, exist_ok=True)
        (dialog / f"{task}.json").write_text(json.dumps({**base, "human-annotated QAs": qas}))
        opened = [{k: v for k, v in qa.items() if k != "options"} for qa in qas]
        (dialog / f"{task}_Open.json").write_text(json.dumps({**base,
                                                              "human-annotated QAs": opened}))


def measure(root: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    bench = MemEyeBenchmark(BenchmarkOptions(data=str(root)))
    wall = time.perf_counter() - t0
    return wall, sum(len(ep.questions) for ep in bench.episodes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = args.work / "memeye_release"
    if not (root / "dialog").is_dir():
        build(root)
    size = sum(p.stat().st_size for p in (root / "dialog").glob("*.json"))
    runs = [measure(root) for _ in range(args.repeat)]
    walls = [r[0] for r in runs]
    print(f"dialog files: {len(list((root / 'dialog').glob('*.json')))}, {size / 1e6:.1f} MB")
    print(f"questions: {runs[0][1]} (rotations and open twins)")
    print(f"make the benchmark: median {statistics.median(walls):.3f} s "
          f"(min {min(walls):.3f}, max {max(walls):.3f}, n={len(walls)}); the first "
          "includes building the pydantic schemas")
    print(f"peak RSS of this process: "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"
          " MiB (interpreter and imports included)")


if __name__ == "__main__":
    main()
