"""LoCoMo's time: with ``--bench-option asked_after=evidence`` a question is asked right after
its latest evidence session, so ``--protocol online`` never shows a later one; the default
(``end``) asks every question after the last session, as before (design 0029)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memgauge.benchmarks import BenchmarkOptions
from memgauge.benchmarks.locomo import locomo
from memgauge.cli import app
from memgauge.errors import ConfigError, InputError
from memgauge.registry import system
from memgauge.runner import RunConfig, read_records, run
from memgauge.schema import Response

REPO = Path(__file__).resolve().parents[2]
LOCOMO = (REPO / ".." / "shared" / "data" / "locomo10").resolve()


def _conv() -> dict:
    return {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1 pm on 1 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi!"},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Hello."}],
        "session_2_date_time": "2 pm on 2 May, 2023",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Later."}],
        "session_10_date_time": "3 pm on 3 June, 2023",
        "session_10": [{"speaker": "Ann", "dia_id": "D10:1", "text": "Much later."}],
        "qa": [{"question": "Who said hi?", "answer": "Ann", "evidence": ["D1:1"], "category": 4},
               {"question": "What year?", "answer": 2023, "evidence": ["D10:1"], "category": 2},
               {"question": "Who spoke first, then later?", "answer": "Bo",
                "evidence": ["D2:1", "D1:2"], "category": 1},  # the latest is not listed last
               {"question": "What is Bo's dog called?", "adversarial_answer": "Rex",
                "evidence": ["D1:2"], "category": 5},
               {"question": "What did they talk about?", "answer": "greetings",
                "evidence": [], "category": 3},
               # a pointer to no turn, in a session before its latest evidence: harmless
               {"question": "Where?", "answer": "home", "evidence": ["D2:9", "D10:1"],
                "category": 4}],
    }


@pytest.fixture
def conv_file(tmp_path: Path) -> Path:
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(_conv()))
    return path


def _asked(path: Path, **extra: str) -> list[int | None]:
    bench = locomo(BenchmarkOptions(data=str(path), extra=extra))
    return [q.asked_after for ep in bench.episodes() for q in ep.questions]


def test_asked_after_the_latest_evidence_session(conv_file):
    # sessions in order: session_1 (0), session_2 (1), session_10 (2); adversarial and no
    # evidence: at the end
    assert _asked(conv_file, asked_after="evidence") == [0, 2, 1, None, None, 2]


@pytest.mark.parametrize(("evidence", "asked_without"), [
    (["D1:40"], "at the end"),  # session 1 has two turns: it moved to the end
    (["D1:1", "D2:40"], "after session_1"),  # it may be in session 2
    (["D1:1", "D"], "after session_1"),  # no session at all
])
def test_an_evidence_pointer_to_no_turn_that_could_move_the_question_is_named(
        tmp_path, evidence, asked_without):
    conv = _conv()
    conv["qa"][0]["evidence"] = evidence
    path = tmp_path / "c.json"
    path.write_text(json.dumps(conv))
    with pytest.raises(InputError) as got:
        _asked(path, asked_after="evidence")
    err = got.value
    assert (err.file, err.item, err.field) == (str(path), "c:q0", "qa[0].evidence")
    assert f"asked {asked_without}" in str(err) and "--allow-inconsistent" in str(err)
    assert _asked(path)[0] is None  # asked at the end anyway: the pointer decides nothing
    bench = locomo(BenchmarkOptions(data=str(path), allow_inconsistent=True,
                                    extra={"asked_after": "evidence"}))
    asked = [q.asked_after for ep in bench.episodes() for q in ep.questions]
    assert asked[0] == (None if asked_without == "at the end" else 0)
    [warning] = bench.manifest()["inconsistencies"]
    assert (warning["item"], warning["field"]) == ("c:q0", "qa[0].evidence")


def test_the_default_asks_every_question_at_the_end(conv_file):
    assert _asked(conv_file) == [None] * 6
    assert _asked(conv_file, asked_after="end") == [None] * 6


def test_the_manifest_says_which_is_used(conv_file):
    for extra, want in (({}, "end"), ({"asked_after": "evidence"}, "evidence")):
        bench = locomo(BenchmarkOptions(data=str(conv_file), extra=extra))
        list(bench.episodes())
        assert bench.manifest()["asked_after"] == want


def test_a_bad_option_is_a_config_error_naming_it(conv_file):
    with pytest.raises(ConfigError, match=r"asked_after='later'.*end, evidence"):
        locomo(BenchmarkOptions(data=str(conv_file), extra={"asked_after": "later"}))
    with pytest.raises(ConfigError, match=r"--bench-option asked_at: locomo takes only"):
        locomo(BenchmarkOptions(data=str(conv_file), extra={"asked_at": "evidence"}))


SEEN: list[dict] = []


class Spy:
    """Notes, at every answer, which sessions it has been shown."""

    name, modality = "locomo-time-spy", "text"

    def describe(self):
        return {"name": self.name}

    async def reset(self, episode):
        self.order = {s.session_id: i for i, s in enumerate(episode.sessions)}
        self.evidence = {q.question_id: [self.order[e.session_id] for e in q.evidence]
                         for q in episode.questions}
        self.total = len(episode.sessions)
        self.ingested: list[int] = []

    async def ingest(self, session):
        self.ingested.append(self.order[session.session_id])

    async def answer(self, question):
        SEEN.append({"qid": question.question_id, "evidence": self.evidence[question.question_id],
                     "ingested": list(self.ingested), "total": self.total,
                     "refusal": question.answer_type.value == "refusal"})
        return Response(text="Not mentioned in the conversation")


@system("locomo-time-spy")
def locomo_time_spy(ctx):
    return Spy


def _run(data: Path, out: Path, **kw) -> list[dict]:
    SEEN.clear()
    run(RunConfig(bench="locomo", data=str(data), out=str(out), system="locomo-time-spy",
                  model="none:", cache=False, progress=False, concurrency=4, **kw))
    return list(SEEN)


def _check_online(seen: list[dict]) -> None:
    for s in seen:
        if s["evidence"] and not s["refusal"]:
            assert s["ingested"] == list(range(max(s["evidence"]) + 1)), s["qid"]
        else:
            assert s["ingested"] == list(range(s["total"])), s["qid"]


def test_online_never_shows_a_session_after_the_evidence(conv_file, tmp_path):
    seen = _run(conv_file, tmp_path / "on", bench_options={"asked_after": "evidence"})
    assert len(seen) == len(read_records(tmp_path / "on")) == 6
    _check_online(seen)
    assert min(len(s["ingested"]) for s in seen) == 1  # (not everything first)
    manifest = json.loads((tmp_path / "on" / "manifest.json").read_text())
    assert manifest["benchmark"]["asked_after"] == "evidence"
    assert manifest["config"]["identity"]["bench_options"] == {"asked_after": "evidence"}


def test_without_the_option_every_question_sees_every_session(conv_file, tmp_path):
    seen = _run(conv_file, tmp_path / "end")
    assert len(seen) == 6 and all(s["ingested"] == [0, 1, 2] for s in seen)
    manifest = json.loads((tmp_path / "end" / "manifest.json").read_text())
    assert "bench_options" not in manifest["config"]["identity"]  # earlier folders' hash


def test_a_benchmark_without_options_refuses_them(tmp_path):
    from memgauge.benchmarks.synth import SynthConfig, generate

    root = tmp_path / "s"
    generate(SynthConfig(out=str(root), seed=1, tiers=["2k"], questions=1))
    with pytest.raises(ConfigError, match="synth takes no benchmark options"):
        run(RunConfig(bench="synth", data=str(root), out=str(tmp_path / "o"), model="none:",
                      system="locomo-time-spy", cache=False, progress=False,
                      bench_options={"asked_after": "evidence"}))


def test_the_cli_option_reaches_the_loader_and_errors_are_clean(conv_file, tmp_path):
    cli = CliRunner()
    base = ["run", "--bench", "locomo", "--data", str(conv_file), "--model", "none:",
            "--system", "locomo-time-spy", "--no-cache"]
    bad = cli.invoke(app, [*base, "--out", str(tmp_path / "bad"),
                           "--bench-option", "asked_after=soon"])
    assert bad.exit_code != 0 and "asked_after='soon'" in bad.output
    assert "Traceback" not in bad.output
    SEEN.clear()
    ok = cli.invoke(app, [*base, "--out", str(tmp_path / "ok"),
                          "--bench-option", "asked_after=evidence"])
    assert ok.exit_code == 0, ok.output
    _check_online(SEEN)
    assert len(SEEN) == 6


@pytest.mark.skipif(not LOCOMO.is_dir() or not list(LOCOMO.glob("*.json")),
                    reason="shared LoCoMo data (../shared/data/locomo10) is absent")
def test_real_data_online_sees_only_up_to_the_evidence(tmp_path):
    first = min(LOCOMO.glob("*.json"))
    seen = _run(first, tmp_path / "real", bench_options={"asked_after": "evidence"})
    _check_online(seen)
    timed = [s for s in seen if s["evidence"] and not s["refusal"]]
    assert len(timed) > len(seen) / 2
    assert len({len(s["ingested"]) for s in timed}) > 5  # asked all along the conversation


def _dated_conversation(c: int) -> dict:
    """Conversation ``c``: three sessions, two questions answerable after each."""
    conv: dict = {"speaker_a": "Ann", "speaker_b": "Bo"}
    qa = []
    for n in (1, 2, 3):
        conv[f"session_{n}_date_time"] = f"1 pm on {n} May, 2023"
        conv[f"session_{n}"] = [{"speaker": "Ann", "dia_id": f"D{n}:1",
                                 "text": f"Story {c}, part {n}. " + "Nice. " * 30}]
        qa += [{"question": f"Question {n}{k} about story {c}?", "answer": "x",
                "evidence": [f"D{n}:1"], "category": 4} for k in range(2)]
    return {"sample_id": f"conv-{c}", "conversation": conv, "qa": qa}


def test_with_one_slot_each_episode_is_sent_whole_before_the_next(tmp_path):
    """Asked after its evidence, a LoCoMo conversation is answered at several points; for a
    shared-prefix system the next episode must not take the slot between them (each switch
    would evict the history a prefix cache holds: 1.3 % reuse measured, bench/RESULTS.md)."""
    import re

    from helpers.stub_server import StubServer, last_text

    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_dated_conversation(c) for c in range(3)]))
    with StubServer(answer=lambda body: "x") as stub:
        run(RunConfig(bench="locomo", data=str(data), out=str(tmp_path / "run"),
                      model="openai:stub", base_url=stub.base_url, cache=False,
                      progress=False, concurrency=1, bench_options={"asked_after": "evidence"}))
    asked = [re.search(r"Question (\d)\d about story (\d)\?", last_text(b)).groups()
             for b in stub.requests]
    assert len(asked) == 18
    stories = [story for _, story in asked]
    assert stories == sorted(stories), stories  # one conversation after the other
    for story in "012":  # and each at its three points, in order
        assert [cut for cut, s in asked if s == story] == list("112233")
