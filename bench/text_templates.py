#!/usr/bin/env python3
"""Text-game templates on played TextWorld trajectories: how many candidate questions each
ability gets, the share not answerable, the tied shortest paths, and the time to build the
timeline and run every text template (the median of ``--repeats``). Needs the games extra.

    python3 bench/text_templates.py                       # random player, seeds 1..3, 200 steps
    python3 bench/text_templates.py --player scripted --seeds 2 --steps 100
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path


def play(out: Path, player_spec: str, seed: int, steps: int) -> None:
    from memgauge.games._play import new_meta, play
    from memgauge.games.envs import open_env
    from memgauge.games.players import make_player

    env = open_env("textworld", seed=seed)
    player = make_player(player_spec, env_name="textworld", seed=seed)
    asyncio.run(play(env, player, out, new_meta(env, seed=seed, player=player_spec,
                                                 max_steps=steps), steps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--player", default="random")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    from memgauge.games import read_trajectory
    from memgauge.games.templates import templates_for
    from memgauge.games.templates._text_timeline import TextTimeline

    templates = templates_for("text")
    print(f"{len(templates)} text templates; player {args.player}, {args.steps} steps cap")
    print("seed steps rooms edges questions not_answerable per_ability ms(median) "
          "paths(instances, tied, most)")
    for seed in range(1, args.seeds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "traj"
            play(folder, args.player, seed, args.steps)
            meta, steps = read_trajectory(folder)
        times, questions = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            tl = TextTimeline(meta, steps)
            questions = [q for t in templates for q in t.fn(tl, random.Random(0))]
            times.append(time.perf_counter() - t0)
        paths = [q for q in questions if q.template == "text.shortest_path"]
        tied = [len(q.alternatives) + 1 for q in paths if q.alternatives]
        abilities = Counter(q.ability for q in questions)
        print(seed, len(steps), len(tl.rooms_visited()), len(tl.edges), len(questions),
              sum(not q.answerable for q in questions),
              " ".join(f"{a}={n}" for a, n in sorted(abilities.items())),
              round(1000 * statistics.median(times), 1),
              (len(paths), len(tied), max(tied, default=1)))


if __name__ == "__main__":
    main()
