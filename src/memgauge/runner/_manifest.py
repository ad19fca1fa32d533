"""Run manifests: everything needed to know what a run measured and to re-create it.

Never holds a key: only the name of the environment variable a key was read from.
"""

from __future__ import annotations

import platform
import subprocess
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from .. import __version__
from .._secrets import redact_url
from ..cache import cache_key

_PACKAGES = ("pydantic", "httptools", "pillow", "ijson", "orjson", "numpy", "bpe-openai", "typer")
_SECRET_FLAGS = ("--api-key", "--key", "--token")


def config_hash(identity: dict[str, Any]) -> str:
    return cache_key(identity)[:16]


@lru_cache(maxsize=1)
def git_sha() -> str | None:
    """The commit of the memgauge source in use, when it runs from a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=here,
                           capture_output=True, text=True, timeout=5, check=False)
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def package_versions() -> dict[str, str | None]:
    from importlib import metadata  # ~25 ms to import: not before a run's first request

    out: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def scrub_argv(argv: list[str]) -> list[str]:
    """Drop the value of any secret-looking flag, in case a wrapper passes one."""
    out, skip = [], False
    for arg in argv:
        if skip:
            out.append("***")
            skip = False
        elif arg in _SECRET_FLAGS:
            out.append(arg)
            skip = True
        elif arg.startswith(tuple(f"{f}=" for f in _SECRET_FLAGS)):
            out.append(arg.split("=", 1)[0] + "=***")
        else:
            out.append(redact_url(arg) if "://" in arg else arg)
    return out


def build_manifest(config: Any, *, model: dict[str, Any], system: dict[str, Any],
                   counter: dict[str, Any], image_policy: dict[str, Any], scorers: list[Any],
                   prior: dict[str, Any] | None, packages: bool = True) -> dict[str, Any]:
    """The run manifest. ``packages=False`` leaves the package versions (``None``) to be
    filled in later with :func:`package_versions`: looking them up scans the installed
    distributions, which the runner does once the first request is on the wire."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cfg = config.flat_dict()
    cfg.pop("argv", None)
    for key in ("base_url", "judge_base_url", "embedder_base_url", "image_embedder_base_url"):
        if key in cfg:
            cfg[key] = redact_url(cfg[key])
    invocation = {"at": now, "argv": scrub_argv(list(config.argv)), "limit": config.limit,
                  "concurrency": config.concurrency}
    return {
        "memgauge_version": __version__,
        "git_sha": git_sha(),
        "python": platform.python_version(),
        "packages": package_versions() if packages else None,
        "created": (prior or {}).get("created", now),
        "updated": now,
        "invocations": [*(prior or {}).get("invocations", []), invocation],
        "config": {"identity": config.identity(), "all": cfg},
        "config_hash": config_hash(config.identity()),
        "model": model,
        "system": system,
        "token_counter": counter,
        "image_policy": image_policy,
        "scorers": [{"name": s.name, "version": s.version} for s in scorers],
        "seeds": {"generation": config.seed, "bootstrap": 0},
        "benchmark": (prior or {}).get("benchmark"),
        "status": (prior or {}).get("status"),
        # set by a pass that read the whole input; a rerun's progress bar total
        "questions_in_input": (prior or {}).get("questions_in_input"),
    }
