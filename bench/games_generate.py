#!/usr/bin/env python3
"""Question generation from one game trajectory: how many questions, and how fast.

Plays a scripted Crafter episode (or takes ``--trajectory DIR``), then times
``generate_games`` in-process (templates, balance, checks, writing the folder with the
trajectory copied), the median of ``--repeats`` runs. Target (issue 15): a 200-step
trajectory yields >= 80 questions in < 0.5 s. Needs the games extra (crafter) to play.

    python3 bench/games_generate.py                          # 200 steps, seed 1, full only
    python3 bench/games_generate.py --horizon 100 --repeats 7
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


def play_crafter(out: Path, steps: int, seed: int) -> float:
    from memgauge.games._play import new_meta, play
    from memgauge.games.envs import open_env
    from memgauge.games.players import make_player

    env = open_env("crafter", seed=seed)
    player = make_player("scripted", env_name="crafter", seed=seed)
    t0 = time.perf_counter()
    asyncio.run(play(env, player, out, new_meta(env, seed=seed, player="scripted",
                                                 max_steps=steps), steps))
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=C.DEFAULT_WORK)
    p.add_argument("--trajectory", type=Path, help="an existing trajectory folder")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--seed", type=int, default=1, help="the world's seed (and the generator's)")
    p.add_argument("--horizon", type=int, action="append", default=[])
    p.add_argument("--max-per-template", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    from memgauge.games._generate import GamesConfig, generate_games

    tmp = Path(tempfile.mkdtemp(prefix="games_generate_"))
    try:
        traj = a.trajectory
        play_s = None
        if traj is None:
            traj = tmp / f"crafter-seed{a.seed}"
            play_s = play_crafter(traj, a.steps, a.seed)
        times, summary = [], None
        for i in range(a.repeats):
            out = tmp / f"bench-{i}"
            t0 = time.perf_counter()
            summary = generate_games(GamesConfig(
                trajectories=[traj], out=out, seed=a.seed, horizons=a.horizon,
                max_per_template=a.max_per_template))
            times.append(time.perf_counter() - t0)
        assert summary is not None
        counts = summary["counts"]
        steps = summary["trajectories"][0]["steps"]
        result = {"steps": steps, "horizons": summary["trajectories"][0]["horizons"],
                  "questions": counts["questions"], "templates": len(counts["per_template"]),
                  "answerable_share": counts["answerable_share"],
                  "per_ability": counts["per_ability"],
                  "generate_s_median": round(statistics.median(times), 3),
                  "generate_s_min": round(min(times), 3), "repeats": a.repeats,
                  "play_s": round(play_s, 2) if play_s is not None else None,
                  "machine": C.machine()}
        print(f"### generate games ({steps} steps, horizons {result['horizons']})\n")
        print(f"{counts['questions']} questions from {result['templates']} templates "
              f"({counts['answerable_share']:.0%} answerable) in "
              f"{result['generate_s_median']:.3f} s median of {a.repeats} "
              f"(min {result['generate_s_min']:.3f} s)"
              + (f"; played in {play_s:.2f} s" if play_s is not None else ""))
        print(C.md_table([counts["per_ability"]], [(k, k) for k in counts["per_ability"]]))
        C.write_result(a.work, "games_generate", result)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
