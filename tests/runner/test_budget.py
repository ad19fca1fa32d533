"""The token and cost ledger and the budgets (issue 16 item 4, design 0034): the ledger is
the records' sums; ``--max-tokens-total`` and ``--budget-usd`` stop a run cleanly (nothing
more sent, what was in flight recorded, exit 4), cover every invocation of the run (a rerun
reads the spend back), and a rerun with a higher budget resumes; cached prompt tokens have
their own price; the report shows the spend per system."""

from __future__ import annotations

import json
from itertools import accumulate
from pathlib import Path
from typing import Any

import pytest
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import ConfigError, InputError
from memgauge.ledger import Ledger, Price, load_prices
from memgauge.runner import RunConfig, Runner, load_manifest, read_records

N = 10
PRICES = {"openai:stub": {"input": 1.0, "output": 10.0, "cached_input": 0.1}}


def _data(tmp_path: Path, n: int = N) -> Path:
    path = tmp_path / "longmemeval.json"
    path.write_text(json.dumps([{
        "question_id": f"q{i}", "question_type": "single-session-user",
        "question": f"Question {i}? " + "padding " * i, "answer": "x",
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/30 (Tue) 09:00"],
        "haystack_sessions": [[{"role": "user", "content": "hello"}]],
        "answer_session_ids": ["s1"]} for i in range(n)]), encoding="utf-8")
    return path


def _config(tmp_path: Path, base_url: str, out: str = "run", **kw: Any) -> RunConfig:
    return RunConfig(bench="longmemeval", data=str(_data(tmp_path)), out=str(tmp_path / out),
                     model="openai:stub", base_url=base_url, cache=False, progress=False,
                     concurrency=1, **kw)


def _run(config: RunConfig):  # type: ignore[no-untyped-def]
    return Runner(config).run_sync()


def _tokens_in_order(run_dir: Path) -> list[int]:
    recs = read_records(run_dir)
    return [recs[f"q{i}"].response.usage.input_tokens + recs[f"q{i}"].response.usage.output_tokens
            for i in range(N)]


def _reference(tmp_path: Path, base_url: str) -> list[int]:
    """What each question costs, from a run without a budget."""
    _run(_config(tmp_path, base_url, out="reference"))
    return _tokens_in_order(tmp_path / "reference")


def test_the_ledger_is_the_sum_of_the_records(tmp_path):
    with StubServer() as stub:
        _run(_config(tmp_path, stub.base_url))
    records = list(read_records(tmp_path / "run").values())
    ledger = load_manifest(tmp_path / "run")["ledger"]
    assert ledger["records"] == N and ledger["unknown"] == 0
    assert ledger["input_tokens"] == sum(r.response.usage.input_tokens for r in records)
    assert ledger["output_tokens"] == sum(r.response.usage.output_tokens for r in records) == 3 * N
    assert ledger["total_tokens"] == ledger["input_tokens"] + ledger["output_tokens"]
    assert "usd" not in ledger  # no --prices: no dollars


def test_max_tokens_total_stops_the_run_where_the_spend_crosses_it(tmp_path):
    with StubServer() as stub:
        costs = _reference(tmp_path, stub.base_url)
        limit = list(accumulate(costs))[2] + 1  # crossed by the fourth answer
        sent_before = len(stub.requests)
        result = _run(_config(tmp_path, stub.base_url, max_tokens_total=limit))
        assert len(stub.requests) - sent_before == 4  # nothing sent once it was reached
    assert result.budget_stop and "--max-tokens-total" in result.budget_stop
    assert sorted(read_records(tmp_path / "run")) == ["q0", "q1", "q2", "q3"]
    budget = load_manifest(tmp_path / "run")["budget"]
    assert budget["stopped"] == result.budget_stop
    assert budget["spent"]["total_tokens"] == sum(costs[:4])
    assert budget["spent_before"]["total_tokens"] == 0


def test_the_budget_covers_every_invocation_and_a_higher_one_resumes(tmp_path):
    with StubServer() as stub:
        costs = _reference(tmp_path, stub.base_url)
        limit = list(accumulate(costs))[2] + 1
        _run(_config(tmp_path, stub.base_url, max_tokens_total=limit))
        sent = len(stub.requests)
        again = _run(_config(tmp_path, stub.base_url, max_tokens_total=limit))
        assert len(stub.requests) == sent  # already spent: the same budget sends nothing
        assert again.budget_stop and again.done == 0
        more = _run(_config(tmp_path, stub.base_url, max_tokens_total=10 * sum(costs)))
        assert more.budget_stop is None and more.done == N - 4 and more.skipped == 4
    assert len(read_records(tmp_path / "run")) == N
    budget = load_manifest(tmp_path / "run")["budget"]
    assert budget["spent_before"]["total_tokens"] == sum(costs[:4])
    assert budget["spent"]["total_tokens"] == sum(costs)


def test_a_dollar_budget_prices_cached_tokens_at_their_own_rate(tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    price = load_prices(prices)["openai:stub"]
    assert price == Price(1.0, 10.0, 0.1)
    # 1M prompt tokens of which 600k cached, 100k out: 0.4 + 0.06 + 1.0
    assert price.dollars(1_000_000, 100_000, 600_000) == pytest.approx(1.46)
    assert Price(1.0, 10.0).dollars(1_000_000, 100_000, 600_000) == pytest.approx(2.0)
    with StubServer() as stub:
        costs = _reference(tmp_path, stub.base_url)
        recs = read_records(tmp_path / "reference")
        usd = [(recs[f"q{i}"].response.usage.input_tokens * 1.0 + 3 * 10.0) / 1e6
               for i in range(N)]
        assert costs  # the stub reports usage
        budget = list(accumulate(usd))[1] * 1.0001  # crossed by the third answer
        result = _run(_config(tmp_path, stub.base_url, prices=str(prices), budget_usd=budget))
    assert result.budget_stop and "--budget-usd" in result.budget_stop
    assert len(read_records(tmp_path / "run")) == 3
    manifest = load_manifest(tmp_path / "run")
    assert manifest["ledger"]["usd"] == pytest.approx(sum(usd[:3]), abs=1e-6)


def test_a_ledger_counts_cached_tokens_ingest_shares_and_not_replays():
    led = Ledger()
    led.add({"input_tokens": 100, "output_tokens": 5, "cached_tokens": 80},
            {"ingest_prompt_tokens": 7, "ingest_completion_tokens": 2})
    led.add({"input_tokens": 100, "output_tokens": 5}, None, replayed=True)  # not paid here
    led.add({"input_tokens": None, "output_tokens": None}, None)  # answered, no usage
    led.add({"input_tokens": None, "output_tokens": None}, None, answered=False)  # an error
    assert (led.input_tokens, led.cached_input_tokens, led.output_tokens) == (107, 80, 7)
    assert (led.records, led.unknown) == (1, 1)


def test_a_dollar_budget_needs_a_price_before_anything_is_sent(tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"other-model": {"input": 1, "output": 1}}))
    with StubServer() as stub:
        for kw, match in [({"budget_usd": 1.0}, "give prices FILE"),
                          ({"budget_usd": 1.0, "prices": str(prices)},
                           "no price for 'openai:stub'"),
                          ({"budget_usd": 0.0}, "more than 0"),
                          ({"max_tokens_total": 9, "workers": 2}, "workers 1"),
                          ({"max_tokens_total": 9, "executor": "ray"}, "executor local")]:
            with pytest.raises(ConfigError, match=match):
                _run(_config(tmp_path, stub.base_url, **kw))
        assert stub.requests == []


@pytest.mark.parametrize(("entry", "field"), [
    ({"input": 1, "output": 1, "cached_input": -1}, "cached_input"),
    ({"input": 1, "output": 1, "cached_input": "cheap"}, "cached_input"),
    ({"input": 1}, "output"),
])
def test_a_bad_price_names_the_file_the_model_and_the_field(tmp_path, entry, field):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:stub": entry}))
    with pytest.raises(InputError) as exc:
        load_prices(prices)
    assert (exc.value.file, exc.value.item, exc.value.field) == (str(prices), "openai:stub", field)
    cli = CliRunner().invoke(app, ["run", "--bench", "longmemeval", "--data", "x", "--out",
                                   str(tmp_path / "r"), "--model", "openai:stub", "--base-url",
                                   "http://127.0.0.1:9/v1", "--prices", str(prices)])
    assert cli.exit_code == 2 and "prices.json" in cli.output and field in cli.output


def test_cli_exits_4_saying_the_budget_stopped_it_and_the_report_shows_the_spend(tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    run_dir = tmp_path / "cli"
    with StubServer() as stub:
        args = ["run", "--bench", "longmemeval", "--data", str(_data(tmp_path)), "--out",
                str(run_dir), "--model", "openai:stub", "--base-url", stub.base_url,
                "--no-cache", "--concurrency", "1", "--max-tokens-total", "1"]
        out = CliRunner().invoke(app, args)
        assert len(stub.requests) == 1
    assert out.exit_code == 4, out.output
    assert "stopped by the budget" in out.output and "--max-tokens-total 1" in out.output
    spent = load_manifest(run_dir)["ledger"]["total_tokens"]
    md = CliRunner().invoke(app, ["report", str(run_dir), "--prices", str(prices)])
    assert md.exit_code == 0, md.output
    assert "Spent (tokens, $)" in md.stdout and f"{spent:,}, $" in md.stdout
    page = tmp_path / "report.html"
    html = CliRunner().invoke(app, ["report", str(run_dir), "--prices", str(prices),
                                    "--format", "html", "--out", str(page)])
    assert html.exit_code == 0, html.output
    assert "Spent (tokens, $)" in page.read_text(encoding="utf-8")
    assert f"{spent:,}, $" in page.read_text(encoding="utf-8")
    js = CliRunner().invoke(app, ["report", str(run_dir), "--format", "json"])
    [row] = [c for c in json.loads(js.stdout)["tables"]["cost"] if c["tier"] != "all tiers"]
    assert row["spent_tokens"] == spent and row["spent_usd"] is None


# -- the judge's tokens: in the ledger, apart, and under score's budget -------------------------


def test_a_ledger_keeps_each_judge_s_spend_apart_and_prices_it_under_the_judge_s_name():
    from memgauge.ledger import JudgeSpend

    led = Ledger()
    led.add_raw({"question_id": "q1", "status": "ok",
                 "response": {"usage": {"input_tokens": 10, "output_tokens": 2}},
                 "meta": {"judge_usage": {"openai:j": {"calls": 2, "input_tokens": 300,
                                                        "cached_input_tokens": 100,
                                                        "output_tokens": 20}}}})
    led.add_raw({"question_id": "q2", "status": "ok", "response": {"usage": None},
                 "meta": {"judge_usage": {"openai:j": {"calls": 1, "input_tokens": 50,
                                                        "output_tokens": 5},
                                          "bad": "not a spend"}}})
    assert led.total_tokens == 12  # the answers alone
    assert led.judge_tokens == 375 and set(led.judges) == {"openai:j"}
    assert led.judges["openai:j"] == JudgeSpend(calls=3, input_tokens=350,
                                                cached_input_tokens=100, output_tokens=25)
    prices = {"j": Price(1.0, 10.0, 0.1)}  # the name without the provider finds it too
    assert led.judge_dollars(prices) == pytest.approx((250 + 100 * 0.1 + 25 * 10) / 1e6)
    assert led.judge_dollars({}) is None  # a judge that spent tokens has no price
    d = led.to_dict(None, prices)
    assert d["judge_tokens"] == 375 and d["judges"]["openai:j"]["usd"] > 0
    assert d["total_tokens"] == 12


def _judge_reply(body: dict[str, Any]) -> str:
    from helpers.datasets import colour_answer
    from helpers.stub_server import last_text

    return '{"score": 1, "reason": "ok"}' if '"score"' in last_text(body) else colour_answer(body)


def _verdicts(stub: StubServer) -> int:
    from helpers.stub_server import last_text

    return sum('"score"' in last_text(b) for b in stub.requests if "messages" in b)


def _answered(tmp_path: Path, stub: StubServer, out: str, n: int) -> Path:
    from helpers.datasets import write_memlens

    data = write_memlens(tmp_path, n)
    run_dir = tmp_path / out
    res = CliRunner().invoke(app, [
        "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
        "--model", "openai:m", "--base-url", stub.base_url, "--context-mode", "text",
        "--no-cache", "--out", str(run_dir)])
    assert res.exit_code == 0, res.output
    return run_dir


def _score(run_dir: Path, stub: StubServer, *extra: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["score", str(run_dir), "--judge", "openai:j",
                                    "--judge-base-url", stub.base_url, "--concurrency", "1",
                                    *extra])


def test_score_stops_at_the_budget_with_the_judge_s_tokens_and_a_higher_one_finishes(
        tmp_path, monkeypatch):
    import shutil

    n = 6
    with StubServer(answer=_judge_reply) as stub:
        run_dir = _answered(tmp_path, stub, "run", n)
        answers = load_manifest(run_dir)["ledger"]["total_tokens"]
        # what judging each record costs, from a copy judged without a budget (own cache)
        shutil.copytree(run_dir, tmp_path / "reference")
        monkeypatch.setenv("MEMGAUGE_CACHE_DIR", str(tmp_path / "reference-cache"))
        assert _score(tmp_path / "reference", stub).exit_code == 0
        monkeypatch.setenv("MEMGAUGE_CACHE_DIR", str(tmp_path / "cache"))
        ref = read_records(tmp_path / "reference")
        order = list(read_records(run_dir))  # --concurrency 1 judges in the folder's order
        cost = [sum(v for k, v in ref[q].meta["judge_usage"]["openai:j"].items()
                    if k in ("input_tokens", "output_tokens")) for q in order]
        assert all(c > 0 for c in cost)
        limit = answers + list(accumulate(cost))[1] + 1  # crossed by the third verdict

        before = _verdicts(stub)
        first = _score(run_dir, stub, "--max-tokens-total", str(limit))
        assert first.exit_code == 4, first.output
        assert "stopped by the budget" in first.output and "by the judge" in first.output
        assert _verdicts(stub) - before == 3  # nothing sent once it was reached
        recs = read_records(run_dir)
        assert [q for q in order if "judge" in recs[q].scores] == order[:3]
        assert "left 3" in first.output
        manifest = load_manifest(run_dir)
        assert manifest["score_budget"]["stopped"]
        assert manifest["ledger"]["judge_tokens"] == sum(cost[:3])
        assert manifest["ledger"]["total_tokens"] == answers  # the answers, apart

        again = _score(run_dir, stub, "--max-tokens-total", str(limit))
        assert again.exit_code == 4 and _verdicts(stub) - before == 3  # spent: sends nothing

        more = _score(run_dir, stub, "--max-tokens-total", str(answers + 10 * sum(cost)))
        assert more.exit_code == 0, more.output
        assert _verdicts(stub) - before == n  # each record judged once: nothing twice
    recs = read_records(run_dir)
    assert all("judge" in r.scores for r in recs.values()) and len(recs) == n  # none lost
    assert [recs[q].meta["judge_usage"] for q in order] == [ref[q].meta["judge_usage"]
                                                             for q in order]
    assert load_manifest(run_dir)["ledger"]["judge_tokens"] == sum(cost)


def test_score_s_dollar_budget_needs_the_judge_s_price_before_anything_is_sent(tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:m": {"input": 1, "output": 1}}))
    with StubServer(answer=_judge_reply) as stub:
        run_dir = _answered(tmp_path, stub, "run", 3)
        sent = len(stub.requests)
        for extra, match in [(["--budget-usd", "1"], "give --prices"),
                             (["--budget-usd", "1", "--prices", str(prices)],
                              "no price for 'openai:j'"),
                             (["--budget-usd", "0", "--prices", str(prices)], "more than 0"),
                             (["--max-tokens-total", "0"], "at least 1")]:
            res = _score(run_dir, stub, *extra)
            assert res.exit_code == 2 and match in res.output, res.output
        assert len(stub.requests) == sent


def test_the_report_shows_answer_and_judge_spend_apart_each_at_its_price(tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:m": {"input": 1, "output": 1},
                                  "j": {"input": 100, "output": 100}}))
    with StubServer(answer=_judge_reply) as stub:
        run_dir = _answered(tmp_path, stub, "run", 3)
        res = _score(run_dir, stub, "--prices", str(prices), "--budget-usd", "100")
        assert res.exit_code == 0, res.output
    led = load_manifest(run_dir)["ledger"]
    answers, judge = led["total_tokens"], led["judge_tokens"]
    assert led["judges"]["openai:j"]["usd"] == pytest.approx(judge * 100 / 1e6, abs=1e-6)
    md = CliRunner().invoke(app, ["report", str(run_dir), "--prices", str(prices)])
    assert md.exit_code == 0, md.output
    assert (f"{answers:,}, ${answers / 1e6:,.4f}; judge: {judge:,}, ${judge * 100 / 1e6:,.4f}"
            in md.stdout)
    js = CliRunner().invoke(app, ["report", str(run_dir), "--format", "json"])
    [row] = [c for c in json.loads(js.stdout)["tables"]["cost"] if c["tier"] != "all tiers"]
    assert (row["spent_tokens"], row["judge_spent_tokens"]) == (answers, judge)


def test_a_run_s_own_judge_counts_toward_its_budget_and_needs_a_price(tmp_path):
    from helpers.datasets import write_memlens

    data = write_memlens(tmp_path, 4)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:m": {"input": 1, "output": 1}}))
    with StubServer(answer=_judge_reply) as stub:
        def run_(out: str, *extra: str):  # type: ignore[no-untyped-def]
            return CliRunner().invoke(app, [
                "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
                "--model", "openai:m", "--base-url", stub.base_url, "--context-mode", "text",
                "--judge", "openai:j", "--judge-base-url", stub.base_url, "--no-cache",
                "--concurrency", "1", "--out", str(tmp_path / out), *extra])

        sent = len(stub.requests)
        refused = run_("priced", "--prices", str(prices), "--budget-usd", "1")
        assert refused.exit_code == 2 and "no price for 'openai:j'" in refused.output
        assert len(stub.requests) == sent
        assert run_("reference").exit_code == 0
        ref = read_records(tmp_path / "reference")
        first = next(iter(ref.values()))
        answer = first.response.usage.input_tokens + first.response.usage.output_tokens
        assert first.meta["judge_usage"]["openai:j"]["calls"] == 1
        # the first answer alone stays under the limit; with its verdict it is over
        stopped = run_("limited", "--max-tokens-total", str(answer + 1))
        assert stopped.exit_code == 4, stopped.output
    assert list(read_records(tmp_path / "limited")) == [first.question_id]
    led = load_manifest(tmp_path / "reference")["ledger"]
    assert led["judge_tokens"] > 0 and led["judges"]["openai:j"]["calls"] == 4


def test_score_without_prices_keeps_the_answers_dollars_in_the_manifest_ledger(tmp_path):
    from helpers.datasets import write_memlens

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:m": {"input": 1, "output": 1}}))
    data = write_memlens(tmp_path, 2)
    run_dir = tmp_path / "run"
    with StubServer(answer=_judge_reply) as stub:
        res = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
            "--model", "openai:m", "--base-url", stub.base_url, "--context-mode", "text",
            "--no-cache", "--prices", str(prices), "--out", str(run_dir)])
        assert res.exit_code == 0, res.output
        usd = load_manifest(run_dir)["ledger"]["usd"]
        assert _score(run_dir, stub).exit_code == 0
    led = load_manifest(run_dir)["ledger"]
    assert led["usd"] == usd and led["judge_tokens"] > 0
    assert "usd" not in led["judges"]["openai:j"]  # no price given to score


def test_score_batch_stops_between_batches_and_a_rerun_sends_only_what_is_left(tmp_path):
    import asyncio

    from helpers.batch_server import BatchServer

    from memgauge.cache import ResponseCache
    from memgauge.models import ModelSettings, create_model
    from memgauge.runner._budget import make_budget
    from memgauge.schema import Ability, AnswerType, BenchmarkInfo, Record, Response
    from memgauge.scoring import JudgeOptions
    from memgauge.scoring._batch import BatchJudgeModel, batch_judge_run

    def rec(qid: str, prediction: str) -> Record:
        return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="memlens"),
                      status="ok", ability=Ability.INFORMATION_EXTRACTION, subtype="entity",
                      answer_type=AnswerType.FREE_TEXT, question=f"Question {qid}?",
                      gold="Paris", prediction=prediction, response=Response(text=prediction))

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if "kind of mistake" in prompt:
            return '{"label": "grounding_failure", "reason": "wrong"}'
        return '{"score": 1}' if "Question q_right" in prompt else '{"score": 0}'

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text('{"config": {"identity": {}}}')
    recs = [rec("q_right", "Paris"), rec("q_wrong1", "Rome"), rec("q_wrong2", "Oslo")]
    (run_dir / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in recs))

    def score(tokens: int) -> dict[str, int]:
        async def go() -> dict[str, int]:
            cache = ResponseCache(tmp_path / "judge.sqlite", kind="judge")
            model = BatchJudgeModel.like(create_model("openai:judge-m", ModelSettings(
                base_url=server.base_url, retry_base_s=0.01, max_attempts=2, timeout_s=5,
                cache=cache)))
            budget = make_budget(run_dir, "", None, tokens, None, answering=False)
            try:
                return await batch_judge_run(run_dir, model, options=JudgeOptions(),
                                             poll_s=0.01, budget=budget)
            finally:
                await model.aclose()
                cache.close()
        return asyncio.run(go())

    with BatchServer(reply) as server:
        # round 1: three verdicts (13 tokens each at this server); round 2 would label the
        # two wrong answers, but the first batch has spent the budget
        first = score(tokens=30)
        assert first["batches"] == 1 and first["left"] == 2
        assert [len(u["data"].splitlines()) for u in server.uploads] == [3]
        done = read_records(run_dir)
        assert "judge" in done["q_right"].scores
        assert all("judge" not in done[q].scores for q in ("q_wrong1", "q_wrong2"))
        # the verdicts of the open records came back and were kept in the cache: a rerun
        # with a higher budget sends only the labels
        second = score(tokens=10_000)
        assert "left" not in second and second["batches"] == 1
        assert [len(u["data"].splitlines()) for u in server.uploads] == [3, 2]
    done = read_records(run_dir)
    assert all("judge" in r.scores for r in done.values())  # none lost, none judged twice
    assert all(done[q].meta["judge_error_label"]["label"] for q in ("q_wrong1", "q_wrong2"))


def test_a_rerun_that_judges_earlier_answers_stops_at_the_budget_too(tmp_path):
    from helpers.datasets import write_memlens

    data = write_memlens(tmp_path, 4)
    run_dir = tmp_path / "run"
    with StubServer(answer=_judge_reply) as stub:
        def run_(*extra: str):  # type: ignore[no-untyped-def]
            return CliRunner().invoke(app, [
                "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
                "--model", "openai:m", "--base-url", stub.base_url, "--context-mode", "text",
                "--no-cache", "--concurrency", "1", "--out", str(run_dir), *extra])

        assert run_().exit_code == 0  # answered, not judged
        answers = load_manifest(run_dir)["ledger"]["total_tokens"]
        judge = ["--judge", "openai:j", "--judge-base-url", stub.base_url]
        stopped = run_(*judge, "--max-tokens-total", str(answers + 1))  # one verdict crosses it
        assert stopped.exit_code == 4, stopped.output
        assert _verdicts(stub) == 1
        assert sum("judge" in r.scores for r in read_records(run_dir).values()) == 1
        finished = run_(*judge, "--max-tokens-total", str(10 * answers))
        assert finished.exit_code == 0, finished.output
        assert _verdicts(stub) == 4  # the three left, none twice
    assert all("judge" in r.scores for r in read_records(run_dir).values())
