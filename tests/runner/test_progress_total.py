"""The progress bar's total: known before reading where the benchmark or an earlier full pass
says how many questions there are; otherwise exact as soon as the reader reaches the end."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.datasets import write_memlens

from memgauge.runner import RunConfig, Runner


def _ticks(config: RunConfig) -> list[tuple[int, int | None, int]]:
    seen: list[tuple[int, int | None, int]] = []
    Runner(config, on_progress=lambda r, rec: seen.append((r.done, r.total, r.queued))
           ).run_sync()
    return seen


def test_a_generated_benchmark_states_its_total_before_the_first_answer(tmp_path: Path) -> None:
    from memgauge.benchmarks.synth import SynthConfig, generate

    generate(SynthConfig(out=str(tmp_path / "b"), questions=5, tiers=["4k"], seed=3))
    ticks = _ticks(RunConfig(bench="synth", data=str(tmp_path / "b"), out=str(tmp_path / "r"),
                             model="none:", system="oracle"))
    assert ticks[0] == (ticks[0][0], 5, ticks[0][2])  # the first tick already knows 5
    assert ticks[-1][:2] == (5, 5)


def test_a_file_without_a_count_gets_its_total_when_read_and_a_rerun_knows_it(
        tmp_path: Path, stub) -> None:
    data = write_memlens(tmp_path / "d", 6)
    base = {"bench": "memlens", "data": str(data), "out": str(tmp_path / "r"), "model": "openai:m",
                "base_url": stub.base_url}
    ticks = _ticks(RunConfig(**base, limit=2))
    assert ticks[-1][:2] == (2, 2)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["questions_in_input"] is None  # a partial pass does not count the input
    ticks = _ticks(RunConfig(**base))
    assert ticks[-1][:2] == (4, 4)  # 6 questions, 2 done earlier
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["questions_in_input"] == 6
    # three answers lost: the rerun's bar is exact from its first tick
    records = tmp_path / "r" / "records.jsonl"
    records.write_text("".join(records.read_text().splitlines(keepends=True)[:3]))
    ticks = _ticks(RunConfig(**base))
    assert [total for _, total, _ in ticks] == [3] * len(ticks)
