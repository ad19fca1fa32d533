"""How much the README's main command downloads before the model: the wheels of memgauge's
own dependencies and of the ``demo`` extra (its ``memgauge[...]`` references followed),
as ``pip download --only-binary=:all:`` fetches them for this Python and platform.

    python3 bench/demo_download_size.py [--extra demo] [--into DIR]

Prints the total and the largest wheels. Needs the package index (PyPI), nothing else.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def requirements(extra: str) -> list[str]:
    """The base dependencies plus ``extra``'s, with ``memgauge[a,b]`` expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    out, todo, seen = list(project["dependencies"]), [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in extras[name]:
            own = re.fullmatch(r"memgauge\[(.+)\]", req)
            if own:
                todo += [x.strip() for x in own.group(1).split(",")]
            else:
                out.append(req)
    return sorted(set(out))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--extra", default="demo")
    parser.add_argument("--into", help="keep the wheels here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        into = Path(args.into or tmp)
        reqs = requirements(args.extra)
        subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary=:all:",
                        "--quiet", "-d", str(into), *reqs], check=True)
        wheels = sorted(into.glob("*.whl"), key=lambda p: p.stat().st_size, reverse=True)
        total = sum(p.stat().st_size for p in wheels)
        print(f"{len(reqs)} requirements -> {len(wheels)} wheels, {total / 1e6:.1f} MB "
              f"(Python {sys.version_info.major}.{sys.version_info.minor}, {sys.platform})")
        for p in wheels[:8]:
            print(f"  {p.stat().st_size / 1e6:6.1f} MB  {p.name}")


if __name__ == "__main__":
    main()
