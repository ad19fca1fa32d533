"""Run manifests: everything needed to know what a run measured and to re-create it.

Never holds a key: only the name of the environment variable a key was read from.
"""

from __future__ import annotations

import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any

from .. import __version__
from .._json_limits import load_document
from .._secrets import redact_url
from ..cache import cache_key
from ..errors import InputError
from ._store import benchmark_not_run, is_benchmark_manifest

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
    cfg = asdict(config)
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


# What report, compare, merge, audit, score and a resumed run read from a manifest: each
# must have its type, so a hand-edited or foreign manifest is refused here by name, not
# met as a TypeError deep inside one of them.
_OBJECTS = ("benchmark", "status", "judges", "judge", "model", "system", "token_counter",
            "image_policy", "seeds", "cache")
_STRINGS = ("config_hash", "memgauge_version", "git_sha", "created", "updated", "python")
_IDENTITY_STRINGS = ("bench", "model", "system", "tier", "context_mode")


def read_manifest(path: str | Path) -> dict[str, Any]:
    """A run's ``manifest.json``, parsed within bounds and checked to have the shape the
    commands read; an :class:`InputError` naming the file and the field if not."""
    file = str(path)
    obj = load_document(path, what="a run manifest")

    def bad(field: str | None, want: str, value: Any) -> InputError:
        got = "null" if value is None else type(value).__name__
        return InputError(f"expected {want}, got {got}", file=file, field=field)

    if not isinstance(obj, dict):
        raise bad(None, "a JSON object", obj)
    config = obj.get("config")
    if not isinstance(config, dict):
        raise bad("config", "an object", config)
    identity = config.get("identity")
    if not isinstance(identity, dict) and is_benchmark_manifest(obj):
        raise benchmark_not_run(Path(path).parent)
    if not isinstance(identity, dict):
        raise bad("config.identity", "an object", identity)
    _check_identity(identity, file, bad)
    _check_sections(obj, bad)
    return obj


def _check_identity(identity: dict[str, Any], file: str,
                    bad: Callable[[str | None, str, Any], InputError]) -> None:
    for key in _IDENTITY_STRINGS:
        if identity.get(key) is not None and not isinstance(identity[key], str):
            raise bad(f"config.identity.{key}", "a string", identity[key])
    shard = identity.get("shard")
    if shard is not None and not (isinstance(shard, list) and len(shard) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in shard)
            and 0 <= shard[0] < shard[1]):
        raise InputError(f"expected [i, N] with 0 <= i < N, got {str(shard)[:80]}", file=file,
                         field="config.identity.shard")
    if identity.get("system_options") is not None and \
            not isinstance(identity["system_options"], dict):
        raise bad("config.identity.system_options", "an object", identity["system_options"])


def _check_sections(obj: dict[str, Any],
                    bad: Callable[[str | None, str, Any], InputError]) -> None:
    for key in _OBJECTS:
        if obj.get(key) is not None and not isinstance(obj[key], dict):
            raise bad(key, "an object", obj[key])
    for key in _STRINGS:
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise bad(key, "a string", obj[key])
    for key in ("invocations", "merged_from"):
        if obj.get(key) is not None and not isinstance(obj[key], list):
            raise bad(key, "a list", obj[key])
    inputs = (obj.get("benchmark") or {}).get("inputs")
    if inputs is not None:
        if not isinstance(inputs, dict):
            raise bad("benchmark.inputs", "an object", inputs)
        for name, digest in inputs.items():
            if digest is not None and not isinstance(digest, str):
                raise bad(f"benchmark.inputs.{name}", "a sha256 string", digest)
    for name, judge in (obj.get("judges") or {}).items():
        if not isinstance(judge, dict):
            raise bad(f"judges.{name}", "an object", judge)
