"""The cost of memory in the report (design 0027): hand-made runs with known tokens and
latencies give exact tokens per question and per correct answer, median and p95 latency,
and dollars with a prices file; records without the new fields are unknown, not 0."""

from __future__ import annotations

import json
import math

import pytest
from helpers.report_runs import IE, TR, rec, write_run
from typer.testing import CliRunner

from memgauge.analysis import Price, RunData, build_tables, load_prices
from memgauge.cli import app
from memgauge.errors import InputError
from memgauge.report import render_tables_markdown
from memgauge.schema import Cost, Record, Usage

runner = CliRunner()
PRICES = {"gpt-x": {"input": 2.0, "output": 10.0}}  # matched by name: openai:gpt-x


def costed(r: Record, inp: int, out: int, *, answer_s: float | None = None,
           ingest_s: float = 0.0, ingest: tuple[int, int] | None = None,
           memory: tuple[int, int] | None = None, cached: bool = False,
           old: bool = False) -> Record:
    """``r`` with server usage and (unless ``old``, a record from before issue 13) a cost."""
    response = r.response.model_copy(update={"usage": Usage(input_tokens=inp,
                                                            output_tokens=out),
                                              "cached": cached})
    cost = None if old else Cost(
        answer_s=answer_s, ingest_s=ingest_s,
        ingest_prompt_tokens=ingest[0] if ingest else None,
        ingest_completion_tokens=ingest[1] if ingest else None,
        memory_items=memory[0] if memory else None, memory_bytes=memory[1] if memory else None)
    return r.model_copy(update={"response": response, "cost": cost})


def manifest(system: str, tier: str, model: str) -> dict:
    return {"config": {"identity": {"system": system, "model": model, "context_mode": "text",
                                    "tier": tier, "bench": "t", "system_options": {}}}}


def runs() -> list[RunData]:
    full_8k = [
        costed(rec("q1", 1.0), 1000, 10, answer_s=1.0),
        costed(rec("q2", 0.0, prediction="Lyon"), 2000, 20, answer_s=2.0),
        costed(rec("q3", 1.0, ability=TR), 3000, 30, answer_s=3.0),
        costed(rec("q4", 1.0), 5000, 50, old=True),  # unknown: left out, not 0
        rec("q5", None, status="error"),
    ]
    full_32k = [costed(rec("q1", 1.0), 8000, 10, answer_s=4.0),
                costed(rec("q2", 0.0, prediction="Rome"), 8000, 10, answer_s=6.0)]
    memory_8k = [
        costed(rec("q1", 1.0), 100, 5, answer_s=0.5, ingest_s=4.0, ingest=(400, 40),
               memory=(10, 1000)),
        costed(rec("q2", 1.0), 100, 5, answer_s=0.5, ingest_s=2.0, ingest=(200, 20),
               memory=(20, 2000)),
        costed(rec("q3", 0.0, ability=TR, prediction="Monday"), 100, 5, answer_s=0.001,
               ingest_s=0.0, ingest=(0, 0), memory=(20, 2000), cached=True),
    ]
    rag_8k = [costed(rec("q1", 1.0), 50, 5, answer_s=0.2, ingest=(0, 0))]
    return [RunData("F8", manifest("full-context", "8k", "openai:gpt-x"), full_8k),
            RunData("F32", manifest("full-context", "32k", "openai:gpt-x"), full_32k),
            RunData("M8", manifest("fact-memory", "8k", "openai:gpt-x"), memory_8k),
            RunData("R8", manifest("rag", "8k", "local:smollm2"), rag_8k)]


@pytest.fixture(scope="module")
def tables():
    prices = {k: Price(v["input"], v["output"]) for k, v in PRICES.items()}
    return build_tables(runs(), n_resamples=50, prices=prices, prices_file="prices.json")


def row(tables, system_prefix: str, tier: str):
    return next(r for r in tables.cost if r.system.startswith(system_prefix) and r.tier == tier)


def test_long_context_tokens_latency_and_dollars(tables):
    r = row(tables, "full-context", "8k")
    assert r.kind == "long-context"
    assert (r.n_ok, r.n_known, r.n_correct) == (4, 3, 2)  # q4 unknown, q5 an error
    assert r.tokens_per_question == 6060 / 3
    assert r.tokens_per_correct == 6060 / 2
    assert r.ingest_tokens_per_question == 0 and r.n_ingest_reported == 0
    assert (r.answer_latency_s.median, r.answer_latency_s.p95, r.answer_latency_s.n) \
        == (2.0, pytest.approx(2.9), 3)
    # 6000 input at $2/1M + 60 output at $10/1M = $0.0126 over 3 questions, 2 correct
    assert r.dollars_per_question == pytest.approx(0.0126 / 3)
    assert r.dollars_per_correct == pytest.approx(0.0126 / 2)
    assert r.price_note == ""


def test_all_tiers_row_pools_the_tiers_of_a_system(tables):
    r = row(tables, "full-context", "all tiers")
    assert (r.n_known, r.n_correct) == (5, 3)
    assert r.tokens_per_question == 22080 / 5 and r.tokens_per_correct == 22080 / 3
    assert [x.tier for x in tables.cost if x.system.startswith("full-context")] \
        == ["8k", "32k", "all tiers"]


def test_memory_agent_ingest_tokens_latency_and_memory(tables):
    r = row(tables, "fact-memory", "8k")
    assert r.kind == "memory agent"
    assert r.tokens_per_question == 975 / 3  # 300 + 600 in, 15 + 60 out
    assert r.ingest_tokens_per_question == 220.0 and r.n_ingest_reported == 3
    assert r.tokens_per_correct == 975 / 2
    # the cached answer is left out of the answer latency
    assert (r.answer_latency_s.median, r.answer_latency_s.n) == (0.5, 2)
    assert (r.ingest_s_per_question.median, r.ingest_s_per_question.p95) \
        == (2.0, pytest.approx(3.8))
    assert (r.memory_items.median, r.memory_bytes.median) == (20, 2000)
    assert r.dollars_per_question == pytest.approx((900 * 2 + 75 * 10) / 1e6 / 3)


def test_an_unpriced_model_gets_a_note_and_no_dollars(tables):
    r = row(tables, "rag", "8k")
    assert r.dollars_per_question is None and r.dollars_per_correct is None
    assert "local:smollm2" in r.price_note and "prices.json" in r.price_note


def test_old_records_are_unknown_not_zero():
    old = [costed(rec("q1", 1.0), 100, 5, old=True), costed(rec("q2", 0.0), 100, 5, old=True)]
    t = build_tables([RunData("O", manifest("full-context", "8k", "openai:gpt-x"), old)],
                     n_resamples=20)
    r = t.cost[0]
    assert (r.n_ok, r.n_known) == (2, 0)
    assert math.isnan(r.tokens_per_question) and r.answer_latency_s.n == 0
    assert t.to_dict()["cost"][0]["tokens_per_question"] is None
    md = render_tables_markdown(t)
    assert "| 0/2 | — |" in md
    assert "2 of 2 answered question(s) carry no token counts" in md
    assert "No --prices file: no dollars." in md


def test_markdown_shows_the_cost_table_and_the_figure_data(tables):
    md = render_tables_markdown(tables)
    section = md[md.index("### Long-context vs memory agents"):]
    line = next(x for x in section.splitlines() if x.startswith("| full-context") and "| 8k |"
                in x)
    assert "| 3/4 | 2,020.0 | 0.0 (none reported) | 3,030.0 |" in line
    assert "2.000 s / 2.900 s (n=3)" in line
    assert "$0.004200 | $0.006300 |" in line
    assert "1 of 4 answered question(s) carry no token counts" in section
    assert "no price for model 'local:smollm2'" in section
    # the figure's data: accuracy per ability and tier, each system with its kind
    # (q4's record lacks cost but is scored: accuracy is unaffected by what is unknown)
    assert f"| {IE} | full-context · openai:gpt-x · text | long-context | 66.7% (n=3) | " \
           "50.0% (n=2) |" in section
    assert f"| {TR} | fact-memory · openai:gpt-x · text | memory agent | 0.0% (n=1) | — |" \
        in section


def test_prices_file_json_and_toml(tmp_path):
    js = tmp_path / "p.json"
    js.write_text(json.dumps(PRICES))
    toml = tmp_path / "p.toml"
    toml.write_text('["openai:gpt-x"]\ninput = 2\noutput = 10.5\n')
    assert load_prices(js)["gpt-x"].output == 10.0
    assert load_prices(toml)["openai:gpt-x"].output == 10.5


@pytest.mark.parametrize(("text", "where"), [
    ("{not json", "not valid JSON"),
    ('{"gpt-x": {"input": 1}}', "item gpt-x, field 'output'"),
    ('{"gpt-x": {"input": -1, "output": 1}}', "field 'input'"),
    ('{"gpt-x": {"input": 1, "output": 1, "cached": 0.5}}', "unknown field(s) 'cached'"),
    ('{"gpt-x": 3}', "item gpt-x"),
    ("[]", "must map model names"),
])
def test_a_malformed_prices_file_names_the_file_item_and_field(tmp_path, text, where):
    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_prices(path)
    assert str(path) in str(info.value) and where in str(info.value)


def _write(tmp_path) -> list[str]:
    return [write_run(tmp_path / run.label, run.manifest, run.records) for run in runs()]


def test_cli_prices_give_dollars_in_markdown_and_json(tmp_path):
    dirs = _write(tmp_path)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    md = runner.invoke(app, ["report", *dirs, "--prices", str(prices)])
    assert md.exit_code == 0, md.output
    assert "$0.004200 | $0.006300 |" in md.stdout
    js = runner.invoke(app, ["report", *dirs, "--prices", str(prices), "--format", "json"])
    assert js.exit_code == 0, js.output
    cost = json.loads(js.stdout)["tables"]["cost"]
    full = next(c for c in cost if c["system"].startswith("full-context") and c["tier"] == "8k")
    assert full["dollars_per_question"] == pytest.approx(0.0042)
    assert full["answer_latency_s"] == {"median": 2.0, "p95": pytest.approx(2.9), "n": 3}
    assert json.loads(js.stdout)["tables"]["system_kinds"][full["system"]] == "long-context"
    plain = runner.invoke(app, ["report", *dirs])
    assert "No --prices file: no dollars." in plain.stdout


def test_cli_a_malformed_prices_file_exits_2_before_reading_runs(tmp_path):
    bad = tmp_path / "prices.json"
    bad.write_text('{"gpt-x": {"input": "cheap", "output": 1}}')
    out = runner.invoke(app, ["report", str(tmp_path / "no-such-run"), "--prices", str(bad)])
    assert out.exit_code == 2
    assert "prices.json" in out.output and "gpt-x" in out.output and "input" in out.output
    assert "Traceback" not in out.output
    missing = runner.invoke(app, ["report", str(tmp_path), "--prices", str(tmp_path / "x.json")])
    assert missing.exit_code == 2 and "x.json" in missing.output
