"""How often the Crafter navigation template meets more tied shortest paths than its cap
(design 0032, "Crafter templates"): for every k-th step and each target material, whether
the material was known by then, reachable over known walkable cells, already reached, and
how many shortest paths tie.

    memgauge play crafter --player random --seed 1 --steps 300 --out crafter-r1
    python3 bench/crafter_paths.py crafter-r1 [--every 3]
"""

from __future__ import annotations

import argparse
import collections

from memgauge.games._trajectory import read_trajectory
from memgauge.games.templates import _crafter_timeline as timeline

MATERIALS = ("water", "tree", "stone", "sand", "table", "furnace", "coal", "lava")


def survey(folder: str, every: int) -> str:
    meta, steps = read_trajectory(folder)
    tl = timeline.CrafterTimeline(meta, steps)
    outcome: collections.Counter[str] = collections.Counter()
    ties = []
    cap = timeline.MAX_PATHS
    for t in range(1, tl.last + 1, every):
        for material in MATERIALS:
            if not tl.cells_of(material, t):
                outcome["unseen"] += 1
                continue
            length = tl.route_length(material, t)
            if length is None:
                outcome["no known route"] += 1
                continue
            if length == 0:
                outcome["already there"] += 1
                continue
            timeline.MAX_PATHS = 10 ** 9  # count every tie, then restore the cap
            try:
                n = len(tl.shortest_paths(material, t) or [])
            finally:
                timeline.MAX_PATHS = cap
            ties.append(n)
            outcome["over the cap" if n > cap else "kept"] += 1
    ties.sort()
    median = ties[len(ties) // 2] if ties else 0
    return (f"{folder}: {meta.player}, {tl.last} steps | " +
            ", ".join(f"{k} {v}" for k, v in sorted(outcome.items())) +
            f" | tied paths median {median}, most {ties[-1] if ties else 0}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trajectories", nargs="+")
    parser.add_argument("--every", type=int, default=3)
    args = parser.parse_args()
    for folder in args.trajectories:
        print(survey(folder, args.every))


if __name__ == "__main__":
    main()
