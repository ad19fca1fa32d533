"""How a run meets a memory service that misbehaves: nothing listening or not the protocol
(exit 2 before the first episode), malformed replies (an error naming route and field),
5xx then success (retried), 5xx for ever and hangs (system_error with the server's words),
unknown extra fields (accepted), and calls for one episode sent one at a time."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from bad_server import INFO, BadServer, answer, ok

from memgauge.errors import ConfigError
from memgauge.runfolder import read_records
from memgauge.runner import RunConfig, Runner

FAST = {"retry_base": "0.01"}


def _run(synth, tmp_path, url: str, **options: str) -> dict:
    Runner(RunConfig(bench="synth", data=str(synth), tier="4k", system=url, model="none:",
                     out=str(tmp_path / "r"), cache=False, progress=False,
                     system_options={**FAST, **options})).run_sync()
    return read_records(tmp_path / "r")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_is_a_config_error_before_any_episode(synth, tmp_path) -> None:
    with pytest.raises(ConfigError, match="nothing answers at the memory service"):
        _run(synth, tmp_path, f"http://127.0.0.1:{_free_port()}")
    assert not (tmp_path / "r" / "records.jsonl").exists() or not read_records(tmp_path / "r")


@pytest.mark.parametrize(("info", "said"), [
    ({**INFO, "modality": "video"}, "/info: modality: expected one of image, caption, text"),
    ({"name": "x", "version": 2, "modality": "text"}, "/info: version: expected str, got int"),
    ([1], "/info: the reply: expected object, got list"),
])
def test_an_info_reply_off_the_protocol_is_a_config_error(synth, tmp_path, info, said) -> None:
    with BadServer({"/info": [ok(info)]}) as srv, pytest.raises(ConfigError, match=said):
        _run(synth, tmp_path, srv.url)
    assert srv.routes_seen("/reset") == []


def test_the_cli_exits_2_when_the_service_is_not_there(synth, tmp_path) -> None:
    from typer.testing import CliRunner

    from memgauge.cli import app

    res = CliRunner().invoke(app, ["run", "--bench", "synth", "--data", str(synth), "--tier",
                                   "4k", "--model", "none:", "--out", str(tmp_path / "r"),
                                   "--system", f"http://127.0.0.1:{_free_port()}/x"])
    assert res.exit_code == 2 and "nothing answers" in res.output


@pytest.mark.parametrize(("reply", "said"), [
    ((200, b"{not json"), "/answer: the reply is not JSON: {not json"),
    ((200, b""), "/answer: the reply is not JSON: an empty body"),
    (ok({"retrieved": []}), "/answer: answer: expected str, got null"),
    (ok({"answer": "a", "retrieved": [{"session_id": "s1"}, {"session_id": "s2"},
                                      {"session_id": 3}]}),
     "/answer: retrieved[2].session_id: expected str, got int"),
    (ok({"answer": "a", "retrieved": [{"session_id": "s", "image_index": "0"}]}),
     "/answer: retrieved[0].image_index: expected int or null, got str"),
    (ok({"answer": "a", "retrieved": [], "usage": {"prompt_tokens": 1}}),
     "/answer: usage.completion_tokens: expected int, got null"),
    (ok({"answer": "a", "retrieved": [{"session_id": "s", "score": True}]}),
     "/answer: retrieved[0].score: expected float or null, got bool"),
])
def test_a_malformed_answer_is_an_error_naming_route_and_field(synth, tmp_path, reply,
                                                               said) -> None:
    from memgauge.runner import RunStopped

    # the same malformed reply 3 times, nothing answered: the run stops (design 0016)
    with BadServer({"/answer": [reply]}) as srv, pytest.raises(RunStopped, match="bad_resp"):
        _run(synth, tmp_path, srv.url)
    records = read_records(tmp_path / "r")
    assert records and all(r.status == "error" for r in records.values())
    for r in records.values():
        assert r.response.error.kind == "bad_response"
        assert said in r.response.error.message
        assert r.scores == {}  # never scored as wrong
    # not retried (it would not change): each question asked once; a question still in
    # flight when the run stopped has no record and is asked again by the rerun
    asked = [call["question"]["question_id"] for call in srv.routes_seen("/answer")]
    assert len(asked) == len(set(asked)) and set(records) <= set(asked)


def test_5xx_replies_are_retried_then_answered(synth, tmp_path) -> None:
    fail = (500, b'{"error": {"message": "busy"}}')
    with BadServer({"/answer": [fail, (503, b"overloaded"), answer("Blue")]}) as srv:
        records = _run(synth, tmp_path, srv.url)
    assert all(r.status == "ok" for r in records.values())
    assert {r.prediction for r in records.values()} == {"Blue"}
    assert len(srv.routes_seen("/answer")) == len(records) + 2


def test_5xx_for_ever_is_a_system_error_with_the_servers_message(synth, tmp_path) -> None:
    fail = (500, b'{"error": {"message": "the index is corrupt"}}')
    with BadServer({"/answer": [fail]}) as srv:
        records = _run(synth, tmp_path, srv.url, max_attempts="3")
    for r in records.values():
        assert r.status == "error" and r.response.error.kind == "system_error"
        assert r.response.error.message == ("POST /answer: HTTP 500: the index is corrupt "
                                            "(after 3 attempts)")
        assert r.response.error.attempts == 3
    assert len(srv.routes_seen("/answer")) == 3 * len(records)


def test_a_4xx_is_not_retried(synth, tmp_path) -> None:
    with BadServer({"/answer": [(422, b'{"error": {"message": "no such question"}}')]}) as srv:
        records = _run(synth, tmp_path, srv.url)
    assert all("HTTP 422: no such question (after 1 attempt)" in r.response.error.message
               for r in records.values())
    assert len(srv.routes_seen("/answer")) == len(records)


def test_a_hang_past_the_timeout_is_retried_then_a_system_error(synth, tmp_path) -> None:
    with BadServer({"/answer": ["hang"]}) as srv:
        srv.hang_s = 2.0
        records = _run(synth, tmp_path, srv.url, timeout="0.3", max_attempts="2")
    for r in records.values():
        assert r.response.error.kind == "system_error"
        assert r.response.error.message == "POST /answer: no reply within 0.3 s (after 2 attempts)"
    assert len(srv.routes_seen("/answer")) == 2 * len(records)


def test_an_ingest_that_fails_records_the_episodes_questions_as_errors(synth, tmp_path) -> None:
    with BadServer({"/ingest": [(500, b'{"error": {"message": "disk full"}}')]}) as srv:
        records = _run(synth, tmp_path, srv.url, max_attempts="2")
    for r in records.values():
        assert r.status == "error" and r.response.error.kind == "system_error"
        assert "POST /ingest: HTTP 500: disk full (after 2 attempts)" in r.response.error.message
    assert srv.routes_seen("/answer") == []


def test_unknown_extra_fields_are_accepted(synth, tmp_path) -> None:
    info = ok({**INFO, "modality": "image", "vendor": {"x": 1}})
    reply = ok({"answer": "Red", "confidence": 0.9, "usage": {
        "prompt_tokens": 7, "completion_tokens": 2, "cached": 5},
        "retrieved": [{"session_id": "s1", "turn_id": "t3", "image_index": 0, "score": 1,
                       "why": "colour match"}]})
    with BadServer({"/info": [info], "/reset": [ok({"note": "fresh"})],
                    "/ingest": [ok({"stored": 3})], "/answer": [reply]}) as srv:
        records = _run(synth, tmp_path, srv.url)
    for r in records.values():
        assert r.status == "ok" and r.prediction == "Red"
        item = r.response.retrieved[0]
        assert (item.pointer.session_id, item.pointer.turn_id, item.pointer.image_index,
                item.score) == ("s1", "t3", 0, 1.0)
        assert (r.response.usage.input_tokens, r.response.usage.output_tokens) == (7, 2)
    images = [im for body in srv.routes_seen("/ingest") for t in body["session"]["turns"]
              for im in t["images"]]
    assert images and all(im["data_url"].startswith("data:image/") for im in images)  # auto


def test_a_text_service_gets_captions_and_no_image_bytes(synth, tmp_path) -> None:
    with BadServer({}) as srv:
        _run(synth, tmp_path, srv.url)
    images = [im for body in srv.routes_seen("/ingest") for t in body["session"]["turns"]
              for im in t["images"]]
    assert images
    assert all(im["data_url"] is None and len(im["sha256"]) == 64 for im in images)
    assert all(isinstance(im["image_index"], int) and im["mime"].startswith("image/")
               for im in images)


def test_calls_for_one_episode_are_sent_one_at_a_time(tmp_path) -> None:
    from memgauge.models import create_model
    from memgauge.registry import lookup
    from memgauge.schema import BenchmarkInfo, Episode, Question, Session
    from memgauge.systems import SystemContext

    def question(i: int) -> Question:
        return Question(question_id=f"q{i}", text="?", answer="", answer_type="free_text",
                        ability="information_extraction")

    async def main(url: str) -> list:
        make = lookup("system", url)(SystemContext(model=create_model("none:"),
                                                    options=dict(FAST)))
        a, b = make(), make()
        ep = Episode(episode_id="e1", sessions=[], questions=[], benchmark=BenchmarkInfo(
            name="t"))
        await asyncio.gather(a.reset(ep), b.reset(ep.model_copy(update={"episode_id": "e2"})))
        await a.ingest(Session(session_id="s1"))
        out = await asyncio.gather(*(a.answer(question(i)) for i in range(4)),
                                   *(b.answer(question(i)) for i in range(4)))
        await a.aclose()
        return out

    with BadServer({}) as srv:
        out = asyncio.run(main(srv.url))
    assert all(r.error is None for r in out)
    assert srv.most_in_flight == 1  # never two calls of one episode at once
    episodes = [body["episode_id"] for body in srv.routes_seen("/answer")]
    assert sorted(episodes) == ["e1"] * 4 + ["e2"] * 4
    assert json.dumps(srv.routes_seen("/ingest")[0]) == json.dumps(
        {"episode_id": "e1", "session": {"session_id": "s1", "date": None, "turns": []}})


@pytest.mark.parametrize("text", ["", "  \n "])
def test_an_empty_answer_is_an_error_never_a_score(synth, tmp_path, text) -> None:
    # as an empty model reply is: a service that has nothing to say is not "wrong"
    with BadServer({"/answer": [answer(text)]}) as srv:
        records = _run(synth, tmp_path, srv.url)
    assert records
    for r in records.values():
        assert r.status == "error" and r.response.error.kind == "empty_answer"
        assert "/answer: answer" in r.response.error.message
        assert r.scores == {} and r.prediction is None
