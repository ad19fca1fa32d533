#!/usr/bin/env python3
"""Generator throughput, peak memory and token-count accuracy at MemLens scale.

Runs ``memgauge generate synth`` as a measured subprocess (wall time and peak RSS from
``/usr/bin/time -v`` when present) and reads the manifest's per-tier token figures.
Needs nothing from ../shared. Target: 789 questions at 32K/64K/128K/256K in < 15 min and
< 4 GB peak RSS on 2 cores.

    .venv/bin/python bench/generate_synth.py                       # the full target run
    .venv/bin/python bench/generate_synth.py --questions 100 --tiers 32k,64k
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=C.DEFAULT_WORK)
    p.add_argument("--questions", type=int, default=789)
    p.add_argument("--tiers", default="32k,64k,128k,256k")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", action="store_true", help="keep the generated folder")
    a = p.parse_args()
    out = (a.work / "synth_bench").resolve()
    shutil.rmtree(out, ignore_errors=True)
    cmd = [*C.memgauge_cmd(), "generate", "synth", "--out", str(out), "--seed", str(a.seed),
           "--tiers", a.tiers, "--questions", str(a.questions)]
    m = C.measure(cmd)
    if m.rc != 0:
        sys.exit(f"generation failed (rc {m.rc}):\n{m.stderr_tail}")
    manifest = json.loads((out / "manifest.json").read_text())
    size_mb = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
    rows = [{"tier": t, "questions": v["questions"], "target": v["target_tokens"],
             "min": v["tokens_min"], "mean": v["tokens_mean"], "max": v["tokens_max"],
             "max_rel_error_pct": round(100 * v["max_rel_error"], 2),
             "within_3pct": v["within_tolerance"]} for t, v in manifest["tiers"].items()]
    result = {"command": C.shell_quote(cmd), "wall_s": round(m.wall_s, 1),
              "peak_rss_mb": m.max_rss_mb, "cpu_user_s": m.user_s, "images": manifest["images"],
              "output_mb": round(size_mb, 1), "tiers": rows, "machine": C.machine()}
    print(f"### generate synth ({a.questions} questions, tiers {a.tiers})\n")
    print(f"wall {m.wall_s:.1f} s, peak RSS {m.max_rss_mb:.0f} MB, {manifest['images']} images, "
          f"{size_mb:.0f} MB written\n")
    print(C.md_table(rows, [(k, k) for k in rows[0]]))
    C.write_result(a.work, "generate_synth", result)
    if not a.keep:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
