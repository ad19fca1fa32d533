"""System labels say what a run really was: ``none:`` is shown as "no model", and the
modality is what reached the model (recorded image counts, the benchmark's image count),
not the --context-mode flag."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.report_runs import rec, write_run
from typer.testing import CliRunner

from memgauge.analysis import RunData, build_tables
from memgauge.analysis._tables import NOTHING_SENT, model_label, sent_modality
from memgauge.cli import app
from memgauge.report import render_tables_markdown

runner = CliRunner()


def manifest(system: str, model: str, mode: str = "image",
             bench_images: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"config": {"identity": {
        "system": system, "model": model, "context_mode": mode, "tier": "8k", "bench": "t",
        "system_options": {}}}}
    if bench_images is not None:
        out["benchmark"] = {"name": "t", "counts": {"questions": 2, "images": bench_images}}
    return out


def records(n_images: int | None = None) -> list:
    out = [rec("q1", 1.0), rec("q2", 0.0)]
    if n_images is not None:
        for r in out:
            r.response.meta["n_images"] = n_images
    return out


def label(run: RunData) -> str:
    return build_tables([run]).runs[0].system


def test_model_label_hides_the_none_placeholder():
    assert [model_label(m) for m in ("none:", "none", "", None, "openai:gpt-4o")] == [
        "no model", "no model", "no model", "no model", "openai:gpt-4o"]


def test_a_system_without_a_model_is_labelled_no_model_not_image():
    run = RunData("R", manifest("oracle-text", "none:"), records())
    row = build_tables([run]).runs[0]
    assert (row.system, row.model, row.modality) == ("oracle-text · no model", "no model",
                                                     NOTHING_SENT)
    md = render_tables_markdown(build_tables([run]))
    assert "none:" not in md and "image" not in md


@pytest.mark.parametrize(("mode", "n_images", "bench_images", "sent"), [
    ("image", 3, None, "image"),  # full-context recorded images in the prompt
    ("image", 0, 5, "text"),  # asked for images, recorded none sent
    ("caption", 0, 5, "caption"),
    ("text", 0, 5, "text"),
    ("image", None, 0, "text"),  # nothing recorded, and the benchmark has no image
    ("caption", None, 0, "text"),
    ("image", None, 5, "image"),  # nothing recorded: the flag is all there is
    ("no-context", None, 5, "no-context"),
])
def test_modality_is_what_was_sent(mode, n_images, bench_images, sent):
    run = RunData("R", manifest("full-context", "openai:m", mode, bench_images),
                  records(n_images))
    assert sent_modality(run) == sent
    assert label(run) == f"full-context · openai:m · {sent}"


def test_a_system_that_sent_images_at_any_tier_is_an_image_system():
    text_tier = RunData("A", manifest("full-context", "openai:m"), records(0))
    image_tier = RunData("B", {"config": {"identity": {
        **manifest("full-context", "openai:m")["config"]["identity"], "tier": "32k"}}},
        records(2))
    tables = build_tables([text_tier, image_tier])
    assert [s.label for s in tables.systems] == ["full-context · openai:m · image"]
    assert [r.modality for r in tables.runs] == ["text", "image"]


def test_run_report_header_shows_the_model_and_what_was_sent(tmp_path):
    path = write_run(tmp_path / "oracle", manifest("oracle-text", "none:"), records())
    out = runner.invoke(app, ["report", path])
    assert out.exit_code == 0, out.output
    assert "- **Model:** no model" in out.stdout
    assert f"- **input:** {NOTHING_SENT}" in out.stdout
    assert "none:" not in out.stdout and "context_mode" not in out.stdout
