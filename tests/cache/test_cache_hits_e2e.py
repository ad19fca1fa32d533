"""Every run summary and report says how many answers came from the response cache, counted
from the folder's records (design 0018)."""

from __future__ import annotations

import json

import orjson
from helpers.datasets import colour_answer, write_memlens
from helpers.stub_server import StubServer, last_text
from typer.testing import CliRunner

from memgauge.cli import app

cli = CliRunner()


def _answer(body):  # the judge's prompts ask for a JSON score; the model's for a colour
    return '{"score": 1, "reason": "ok"}' if '"score"' in last_text(body) else colour_answer(body)


def _run_args(tmp_path, data, stub, out, *extra):
    return ["run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
            "--model", "openai:m", "--base-url", stub.base_url, "--context-mode", "text",
            "--judge", "openai:j", "--judge-base-url", stub.base_url,
            "--cache-path", str(tmp_path / "shared.sqlite"), "--out", str(tmp_path / out),
            *extra]


def _asked(stub):
    """The questions and verdicts sent (not any other request a run makes at start)."""
    return sum(1 for body in stub.requests if "messages" in body
               and ("What colour was mug" in last_text(body) or '"score"' in last_text(body)))


def _manifest(run_dir):
    return json.loads((run_dir / "manifest.json").read_text())


def test_a_second_run_into_another_folder_says_every_answer_came_from_the_cache(tmp_path):
    data = write_memlens(tmp_path, 4)
    with StubServer(answer=_answer) as stub:
        first = cli.invoke(app, _run_args(tmp_path, data, stub, "a"))
        assert first.exit_code == 0, first.output
        sent = _asked(stub)
        assert sent == 8  # 4 answers + 4 verdicts
        second = cli.invoke(app, _run_args(tmp_path, data, stub, "b"))
        assert second.exit_code == 0, second.output
        assert _asked(stub) == sent  # nothing new was asked
    assert "cache: 0 of 4 answers came from the response cache" in first.output
    assert "cache: judge: 0 of 4 verdicts came from the cache (0 of 4 judge calls)" \
        in first.output
    assert "cache: 4 of 4 answers came from the response cache" in second.output
    assert "cache: judge: 4 of 4 verdicts came from the cache (4 of 4 judge calls)" \
        in second.output
    hits = _manifest(tmp_path / "b")["cache_hits"]
    assert (hits["answers"], hits["from_cache"], hits["unknown"]) == (4, 4, 0)
    assert hits["judges"]["judge"] == {"judged": 4, "from_cache": 4, "unknown": 0,
                                       "hits": 4, "lookups": 4}
    assert _manifest(tmp_path / "a")["cache_hits"]["from_cache"] == 0

    md = cli.invoke(app, ["report", str(tmp_path / "b")])
    assert md.exit_code == 0, md.output
    assert ("- **response_cache:** 4 of 4 answers came from the response cache; judge: 4 of "
            "4 verdicts came from the cache (4 of 4 judge calls)") in md.output
    js = cli.invoke(app, ["report", str(tmp_path / "a"), "--format", "json"])
    found = json.loads(js.output)["runs"][0]["meta"]["response_cache"]
    assert (found["answers"], found["from_cache"], found["unknown"]) == (4, 0, 0)
    assert found["judges"]["judge"]["judged"] == 4
    assert found["text"][0] == "0 of 4 answers came from the response cache"
    page = tmp_path / "report.html"
    html = cli.invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b"), "--format",
                            "html", "--out", str(page)])
    assert html.exit_code == 0, html.output
    text = page.read_text()
    assert "0 of 4 answers came from the response cache" in text
    assert "4 of 4 answers came from the response cache" in text


def test_the_count_covers_every_invocation_into_the_folder_not_only_the_last(tmp_path):
    data = write_memlens(tmp_path, 4)
    with StubServer(answer=_answer) as stub:
        assert cli.invoke(app, _run_args(tmp_path, data, stub, "a")).exit_code == 0
        part = cli.invoke(app, _run_args(tmp_path, data, stub, "b", "--limit", "2"))
        rest = cli.invoke(app, _run_args(tmp_path, data, stub, "b"))  # resumes: 2 more
    assert "2 of 2 answers came from the response cache" in part.output
    assert "2 answered now" in rest.output and "2 already done" in rest.output
    assert "4 of 4 answers came from the response cache" in rest.output
    assert _manifest(tmp_path / "b")["cache_hits"]["judges"]["judge"]["from_cache"] == 4


def test_a_run_without_the_cache_says_none_came_from_it(tmp_path):
    data = write_memlens(tmp_path, 3)
    with StubServer(answer=_answer) as stub:
        assert cli.invoke(app, _run_args(tmp_path, data, stub, "a")).exit_code == 0
        off = cli.invoke(app, [*_run_args(tmp_path, data, stub, "b"), "--no-cache"])
    assert off.exit_code == 0, off.output
    assert "0 of 3 answers came from the response cache" in off.output
    assert "judge: 0 of 3 verdicts came from the cache" in off.output


def test_an_older_folder_whose_records_do_not_say_is_reported_as_unknown(tmp_path):
    data = write_memlens(tmp_path, 3)
    with StubServer(answer=_answer) as stub:
        assert cli.invoke(app, _run_args(tmp_path, data, stub, "a")).exit_code == 0
    records = tmp_path / "a" / "records.jsonl"
    lines = []
    for i, line in enumerate(records.read_bytes().splitlines()):
        rec = orjson.loads(line)
        if i < 2:  # as written before the fields existed
            del rec["response"]["cached"]
            del rec["meta"]["judge_cache"]
        lines.append(orjson.dumps(rec))
    records.write_bytes(b"\n".join(lines) + b"\n")
    md = cli.invoke(app, ["report", str(tmp_path / "a")])
    assert md.exit_code == 0, md.output
    assert ("0 of 3 answers came from the response cache (2 records do not say: written "
            "before memgauge recorded it)") in md.output
    assert "judge: 0 of 3 verdicts came from the cache (0 of 1 judge calls); 2 judged " \
        "before memgauge recorded it: unknown" in md.output


def test_score_prints_the_judge_cache_hits(tmp_path):
    data = write_memlens(tmp_path, 3)
    with StubServer(answer=_answer) as stub:
        for out in ("a", "b"):
            args = _run_args(tmp_path, data, stub, out)
            i = args.index("--judge")
            del args[i:i + 4]  # no judge while running
            assert cli.invoke(app, args).exit_code == 0
        score = ["score", "--judge", "openai:j", "--judge-base-url", stub.base_url]
        first = cli.invoke(app, [score[0], str(tmp_path / "a"), *score[1:]])
        sent = _asked(stub)
        second = cli.invoke(app, [score[0], str(tmp_path / "b"), *score[1:]])
        assert _asked(stub) == sent
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert "judge cache: 0 of 3 judge calls came from the cache this time" in first.output
    assert "judge cache: 3 of 3 judge calls came from the cache this time" in second.output
    assert "judge cache: judge: 3 of 3 verdicts came from the cache" in second.output
    md = cli.invoke(app, ["report", str(tmp_path / "b")])
    assert "judge: 3 of 3 verdicts came from the cache" in md.output
