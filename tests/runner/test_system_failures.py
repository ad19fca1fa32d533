"""A system that fails part-way through an episode loses nothing and duplicates nothing."""

from __future__ import annotations

import pytest

from memgauge.errors import EpisodeFailure
from memgauge.registry import benchmark, system
from memgauge.runner import RunConfig, read_records, run
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    Question,
    Response,
    Session,
    Turn,
)


class TwoQuestions:
    """One episode: q-early may be asked after session 1, q-late after both sessions."""

    name = "two-questions"

    def episodes(self):
        sessions = [Session(session_id=str(i), turns=[Turn(turn_id=f"{i}:1", role="user",
                                                            text=f"session {i}")])
                    for i in (1, 2)]
        qs = [Question(question_id=qid, text="colour?", answer="red",
                       answer_type=AnswerType.FREE_TEXT, ability=Ability.SINGLE_HOP,
                       asked_after=after) for qid, after in (("q-early", 0), ("q-late", None))]
        yield Episode(episode_id="e1", sessions=sessions, questions=qs,
                      benchmark=BenchmarkInfo(name=self.name))

    def manifest(self):
        return {"name": self.name}


class BreaksOnSecondSession:
    name, modality = "breaks-late", "text"

    def describe(self):
        return {"name": self.name}

    async def reset(self, episode):
        self.seen = 0

    async def ingest(self, session):
        self.seen += 1
        if self.seen == 2:
            raise RuntimeError("disk full while indexing")

    async def answer(self, question):
        return Response(text="red")


@benchmark("two-questions")
def two_questions(opts):
    return TwoQuestions()


@system("breaks-late")
def breaks_late(ctx):
    return BreaksOnSecondSession


def test_answers_given_before_a_failure_are_kept_and_the_rest_recorded(tmp_path):
    config = RunConfig(bench="two-questions", data="-", out=str(tmp_path / "r"),
                       system="breaks-late", model="none:", cache=False, progress=False)
    result = run(config)
    assert (result.ok, result.errors) == (1, 1)
    records = read_records(tmp_path / "r")
    assert records["q-early"].status == "ok" and records["q-early"].scores["rule"] == 1.0
    assert records["q-late"].status == "error"
    assert "disk full" in records["q-late"].response.error.message
    assert len((tmp_path / "r" / "records.jsonl").read_text().splitlines()) == 2


class IndexGone(EpisodeFailure):
    error_kind = "index_error"


class UndeclaredKind(RuntimeError):
    error_kind = "made_up"  # not an EpisodeFailure: the runner does not read it


class FailsOnFirstSession(BreaksOnSecondSession):
    name = "fails-first"
    failure: type[Exception] = IndexGone

    async def ingest(self, session):
        raise self.failure("index gone")


@system("fails-first-declared")
def fails_first_declared(ctx):
    return FailsOnFirstSession


class FailsUndeclared(FailsOnFirstSession):
    failure = UndeclaredKind


@system("fails-first-undeclared")
def fails_first_undeclared(ctx):
    return FailsUndeclared


@pytest.mark.parametrize(("name", "kind"), [("fails-first-declared", "index_error"),
                                            ("fails-first-undeclared", "system_error")])
def test_an_episode_failure_is_recorded_with_the_kind_its_class_declares(tmp_path, name, kind):
    config = RunConfig(bench="two-questions", data="-", out=str(tmp_path / "r"),
                       system=name, model="none:", cache=False, progress=False)
    result = run(config)
    assert (result.ok, result.errors) == (0, 2)
    records = read_records(tmp_path / "r")
    assert {r.response.error.kind for r in records.values()} == {kind}
    assert all("index gone" in r.response.error.message for r in records.values())
