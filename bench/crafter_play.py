#!/usr/bin/env python3
"""Scripted Crafter play with frames: how long 1,000 steps take (issue 15 target: < 5 s).

Plays the scripted player through ``games._play.play`` (the loop ``memgauge play`` runs:
env step, state read, HUD text, PNG frame, trajectory line), 1,000 steps in all; an
episode that ends early (death) is followed by one with the next seed, so the steps are
always the asked number. Reports the median and min wall and CPU time over ``--repeats`` runs, the
episodes,
and where the time goes (one extra profiled run: env step, state read, frame PNG, player,
writing; Crafter's world generation at each reset is pure-Python simplex noise, ~1 s a
world). Needs the games extra (crafter).

    python3 bench/crafter_play.py                      # 1,000 steps, seeds from 0, 64 px
    python3 bench/crafter_play.py --frame-size 128 --repeats 5
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any


def play_steps(work: Path, steps: int, seed: int, frame_size: int,
               timings: dict[str, float] | None = None) -> list[tuple[int, int, str]]:
    """Play ``steps`` steps over as many episodes as it takes; (seed, steps, end) each."""
    from memgauge.games._play import new_meta, play
    from memgauge.games.envs import open_env
    from memgauge.games.players import make_player

    episodes: list[tuple[int, int, str]] = []
    left = steps
    while left > 0:
        env = open_env("crafter", seed=seed, options={"frame_size": frame_size})
        player = make_player("scripted", env_name="crafter", seed=seed)
        if timings is not None:
            env, player = _timed(env, player, timings)
        meta = new_meta(env, seed=seed, player="scripted", max_steps=left)
        done = asyncio.run(play(env, player, work / f"seed{seed}", meta, left))
        episodes.append((seed, done.steps, str(done.end)))
        left -= done.steps
        seed += 1
    return episodes


def _timed(env: Any, player: Any, timings: dict[str, float]) -> tuple[Any, Any]:
    """Wrap the env's and the player's calls to add their seconds to ``timings``."""
    def wrap(obj: Any, name: str, label: str) -> None:
        inner = getattr(obj, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                timings[label] += time.perf_counter() - t0

        setattr(obj, name, timed)

    wrap(env.env, "reset", "crafter reset (world generation, once per episode)")
    wrap(env.env, "step", "crafter step (incl. its render)")
    wrap(env, "_state", "state read + HUD text")
    wrap(env, "frame_png", "frame PNG")
    wrap(player, "_choose", "player")
    return env, player


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--frame-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    try:
        import crafter  # noqa: F401
    except ImportError:
        sys.exit('bench/crafter_play.py needs the games extra: pip install "memgauge[games]"')
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="crafter-play-") as tmp:
        for n in range(args.repeats):
            work = Path(tmp) / f"r{n}"
            t0, c0 = time.perf_counter(), time.process_time()
            episodes = play_steps(work, args.steps, args.seed, args.frame_size)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            frames = sum(1 for _ in work.glob("*/frames/*.png"))
            size = sum(p.stat().st_size for p in work.rglob("*") if p.is_file())
        timings: dict[str, float] = defaultdict(float)
        t0 = time.perf_counter()
        play_steps(Path(tmp) / "profiled", args.steps, args.seed, args.frame_size, timings)
        profiled = time.perf_counter() - t0
    median = statistics.median(walls)
    print(f"scripted Crafter, {args.steps} steps with {args.frame_size} px frames, "
          f"seeds from {args.seed}: median {median:.2f} s, min {min(walls):.2f} s over "
          f"{args.repeats} runs ({1000 * median / args.steps:.2f} ms/step; target < 5 s); "
          f"CPU time median {statistics.median(cpus):.2f} s, min {min(cpus):.2f} s "
          f"(less moved by other load on a shared machine)")
    print("episodes (seed, steps, end): "
          + ", ".join(f"({s}, {n}, {e})" for s, n, e in episodes))
    print(f"distinct frames {frames}, folder {size / 1e6:.1f} MB")
    print(f"where the time goes (one profiled run, {profiled:.2f} s):")
    for label, seconds in sorted(timings.items(), key=lambda kv: -kv[1]):
        print(f"  {label}: {seconds:.2f} s ({100 * seconds / profiled:.0f} %)")
    rest = profiled - sum(timings.values())
    print(f"  loop, Step model, writing lines and frames: {rest:.2f} s "
          f"({100 * rest / profiled:.0f} %)")


if __name__ == "__main__":
    main()
