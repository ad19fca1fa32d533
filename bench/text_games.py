#!/usr/bin/env python3
"""Text games: TextWorld game generation, and steps per second through the TextWorld and
Jericho envs on the generated ``.z8``. Needs the games extra (textworld, jericho).

Generation is make + compile (Inform 7) for ``--seeds`` seeds, the median reported. Steps/s
plays ``--steps`` steps through each env (the walkthrough, then a cycle of the admissible
commands of the reset state) after a reset; Jericho on a TextWorld game asks ``inventory``
on a saved state after every step (the game has no bindings), so it does two moves a step.

    python3 bench/text_games.py                    # seeds 1..3, 200 steps
    python3 bench/text_games.py --seeds 5 --steps 500 --rooms 8 --quest-length 8
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rooms", type=int, default=5)
    ap.add_argument("--objects", type=int, default=10)
    ap.add_argument("--quest-length", type=int, default=5)
    args = ap.parse_args()

    from memgauge.games.envs import open_env

    options = {"rooms": args.rooms, "objects": args.objects, "quest_length": args.quest_length}
    with tempfile.TemporaryDirectory() as tmp:
        generation, envs = [], []
        for seed in range(1, args.seeds + 1):
            t0 = time.perf_counter()
            env = open_env("textworld", seed=seed,
                           options={**options, "game_dir": str(Path(tmp) / str(seed))})
            generation.append(time.perf_counter() - t0)
            envs.append(env)
        print(f"settings {options}")
        print(f"generate + compile + start: median {statistics.median(generation):.2f} s "
              f"over {len(generation)} seeds ({', '.join(f'{g:.2f}' for g in generation)})")
        tw = envs[0]
        state = tw.reset()
        commands = list(state["walkthrough"]) + sorted(state["admissible"])
        print(f"walkthrough lengths: {[len(e.reset()['walkthrough']) for e in envs]}")
        for name, env in (("textworld", tw),
                          ("jericho", open_env("jericho", seed=0,
                                               options={"rom": str(tw.game_path)}))):
            env.reset()
            done_at = []
            t0 = time.perf_counter()
            for i in range(args.steps):
                if env.step(commands[i % len(commands)])["done"]:
                    done_at.append(i + 1)
                    env.reset()
            elapsed = time.perf_counter() - t0
            print(f"{name}: {args.steps} steps in {elapsed:.2f} s = "
                  f"{args.steps / elapsed:.0f} steps/s (games ended at steps {done_at[:5]}...)")
            env.close()
        for env in envs[1:]:
            env.close()


if __name__ == "__main__":
    main()
