"""Only a reply that carries an answer becomes one: broken 200 replies are errors that name
the field, are never scored and never cached; a malformed usage leaves the answer alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.datasets import write_memlens
from helpers.scripted_server import ScriptedServer, completion

from memgauge.cache import ResponseCache
from memgauge.models import (
    GenerateConfig,
    Message,
    ModelError,
    ModelSettings,
    TextPart,
    create_model,
)
from memgauge.runner import RunConfig, read_records, run

HELLO = [Message("user", [TextPart("hello")])]


def _reply(content: Any = "red", **extra: Any) -> dict[str, Any]:
    body = completion("x")
    body["choices"][0]["message"]["content"] = content
    body.update(extra)
    return body


def _ask(url: str, cache: ResponseCache | None = None) -> Any:
    model = create_model("openai:m", ModelSettings(base_url=url, max_attempts=1, cache=cache))

    async def go() -> Any:
        try:
            return await model.generate(HELLO, GenerateConfig(max_tokens=8))
        finally:
            await model.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize(("body", "kind", "says"), [
    (_reply(None), "empty_answer", "content` null"),
    (_reply(""), "empty_answer", "content` empty"),
    (_reply("   \n"), "empty_answer", "no text"),
    (_reply(7), "bad_response", "`choices[0].message.content` is int"),
    (_reply([{"type": "image_url", "image_url": {"url": "x"}}]), "bad_response", "is list"),
    ({"choices": [None]}, "bad_response", "`choices[0].message` is NoneType"),
    ({"choices": [{"message": "red"}]}, "bad_response", "`choices[0].message` is str"),
    ({"choices": []}, "bad_response", "no `choices`"),
    ({"object": "list"}, "bad_response", "no `choices`"),
])
def test_a_reply_without_an_answer_is_an_error_naming_the_field(body, kind, says):
    with ScriptedServer([(200, body)]) as srv, pytest.raises(ModelError) as info:
        _ask(srv.base_url)
    assert info.value.kind == kind and says in info.value.message


def test_content_as_a_list_of_text_parts_is_read():
    parts = [{"type": "text", "text": "re"}, {"type": "text", "text": "d"}]
    with ScriptedServer([(200, _reply(parts))]) as srv:
        assert _ask(srv.base_url).text == "red"


@pytest.mark.parametrize("usage", [
    "lots", [1, 2], {"prompt_tokens": "ten", "completion_tokens": -1, "total_tokens": 1.5},
    {"prompt_tokens": True, "prompt_tokens_details": "none"},
])
def test_a_malformed_usage_keeps_the_answer(usage):
    with ScriptedServer([(200, _reply("red", usage=usage))]) as srv:
        out = _ask(srv.base_url)
    assert out.text == "red"
    assert (out.usage.input_tokens, out.usage.output_tokens, out.usage.cached_tokens) == \
        (None, None, None)


def test_only_replies_that_parsed_into_an_answer_are_cached(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    with ScriptedServer([(200, _reply(None)), (200, _reply(7))],
                        after=(200, _reply("red"))) as srv:
        for _ in range(2):
            with pytest.raises(ModelError):
                _ask(srv.base_url, cache)
        assert _ask(srv.base_url, cache).text == "red"  # asked again: nothing was cached
        assert _ask(srv.base_url, cache).cached  # the answer is
        assert len(srv.requests) == 3


def test_a_null_completion_is_recorded_as_an_error_never_scored(tmp_path):
    data = write_memlens(tmp_path, 3)
    with ScriptedServer([(200, _reply(None))], after=(200, _reply("red"))) as srv:
        config = RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                           out=str(tmp_path / "run"), model="openai:m", base_url=srv.base_url,
                           progress=False, concurrency=1, context_mode="text", cache=False,
                           max_attempts=1)
        first = run(config)
        assert (first.ok, first.errors) == (2, 1)
        recs = read_records(tmp_path / "run")
        [bad] = [r for r in recs.values() if r.status == "error"]
        assert bad.response.error.kind == "empty_answer"
        assert bad.scores == {} and bad.prediction is None
        again = run(config)  # the rerun retries exactly the error
    assert (again.skipped, again.done, again.ok) == (2, 1, 1)


@pytest.mark.parametrize(("body", "judged"), [
    ({"choices": [None]}, False), ({"choices": [{"message": "yes"}]}, False),
    (_reply(None), False), (_reply(3), False),
    (_reply('{"score": 1}', usage={"prompt_tokens": "many"}), True),  # bad usage only
])
def test_malformed_judge_replies_are_judge_errors_and_the_answers_stay(tmp_path, body, judged):
    from typer.testing import CliRunner

    from memgauge.cli import app

    data = write_memlens(tmp_path, 2)
    run_dir = tmp_path / "run"
    with ScriptedServer([], after=(200, _reply("red"))) as model_srv:
        run(RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                      out=str(run_dir), model="openai:m", base_url=model_srv.base_url,
                      progress=False, context_mode="text", cache=False))
    before = read_records(run_dir)
    with ScriptedServer([], after=(200, body)) as judge_srv:
        res = CliRunner().invoke(app, ["score", str(run_dir), "--judge", "openai:j",
                                       "--judge-base-url", judge_srv.base_url,
                                       "--no-label-errors"])
    assert res.exit_code == (0 if judged else 3), res.output  # failed verdicts: exit 3
    after = read_records(run_dir)
    for qid, rec in after.items():
        assert rec.status == "ok" and rec.prediction == before[qid].prediction == "red"
        assert rec.scores["rule"] == before[qid].scores["rule"]
        if judged:  # the judgement stands
            assert rec.scores["judge"] == 1.0
        else:
            assert "judge" not in rec.scores and rec.meta["judge_error"]["scorer"] == "judge"
