"""A link inside --image-dir that leads outside it is refused, never read (issue 11,
"symlink escape"): outside files must not reach an endpoint."""

from __future__ import annotations

import os

import pytest
from helpers.datasets import make_png, write_memlens
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import InputError
from memgauge.media import ImageResolver


def test_a_link_out_of_the_image_dir_is_refused_even_with_allow_missing(tmp_path):
    root, outside = tmp_path / "images", tmp_path / "secret"
    root.mkdir()
    outside.mkdir()
    make_png(outside / "private.png", "red")
    os.symlink(outside / "private.png", root / "leak.png")  # a file link
    os.symlink(outside, root / "sub")  # a folder link
    make_png(root / "ok.png", "blue")
    os.symlink(root / "ok.png", root / "alias.png")  # a link that stays inside: fine
    for allow in (False, True):
        r = ImageResolver(root, allow_missing=allow)
        for name in ("leak.png", "sub/private.png"):
            with pytest.raises(InputError, match="link to a file outside the image dir"):
                r.resolve(name, file="d.json", item="q1", field="images")
        assert r.resolve("alias.png", file="d.json", item="q1", field="images").width == 40


def test_a_run_with_a_leaking_link_stops_before_any_request(tmp_path, stub):
    data = write_memlens(tmp_path, 1)
    img = next(p for p in (tmp_path / "img").iterdir() if p.suffix == ".png")
    make_png(tmp_path.parent / f"{tmp_path.name}-outside.png", "green")
    img.unlink()
    os.symlink(tmp_path.parent / f"{tmp_path.name}-outside.png", img)
    res = CliRunner().invoke(app, ["run", "--bench", "memlens", "--data", str(data),
                                   "--image-dir", str(tmp_path), "--model", "openai:m",
                                   "--base-url", stub.base_url, "--out", str(tmp_path / "r"),
                                   "--allow-missing-images"])
    assert res.exit_code == 2, res.output
    assert "outside the image dir" in " ".join(res.output.split())
    assert stub.requests == []
