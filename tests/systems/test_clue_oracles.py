"""The clue-view systems: all / latest / stale clue rounds, shortcut views, the baseline."""

from __future__ import annotations

import asyncio

import pytest

from memgauge.errors import ConfigError
from memgauge.models import ScriptedModel, TextPart
from memgauge.models.none import NoModel
from memgauge.registry import lookup
from memgauge.schema import (
    Ability,
    AnswerType,
    BenchmarkInfo,
    Episode,
    EvidenceRef,
    ImageRef,
    Question,
    Session,
    Turn,
)
from memgauge.systems import SystemContext


def _episode() -> Episode:
    def session(sid: str, date: str, text: str, caption: str | None = None) -> Session:
        images = ([ImageRef(source=f"{sid}.png", captions={"dense": caption})]
                  if caption else [])
        return Session(session_id=sid, date=date, turns=[
            Turn(turn_id=f"{sid}:1", role="user", text=text, images=images),
            Turn(turn_id=f"{sid}:1a", role="assistant", text=f"noted ({sid})",
                 meta={"round": f"{sid}:1"}),
            Turn(turn_id=f"{sid}:2", role="user", text=f"small talk in {sid}")])

    q = Question(question_id="q1", text="What colour is the sofa now?", answer="B",
                 answer_type=AnswerType.MCQ, ability=Ability.KNOWLEDGE_UPDATE,
                 options=["grey", "green", "blue", "red"],
                 # out of order on purpose: chronology comes from the history
                 evidence=[EvidenceRef(session_id="D3", turn_id="D3:1"),
                           EvidenceRef(session_id="D1", turn_id="D1:1")])
    one = q.model_copy(update={"question_id": "q2",
                               "evidence": [EvidenceRef(session_id="D2", turn_id="D2:1")]})
    return Episode(episode_id="e", benchmark=BenchmarkInfo(name="t"), questions=[q, one],
                   sessions=[session("D1", "2024-01-01", "My sofa is grey.",
                                     "A grey fabric sofa. Three cushions on it."),
                             session("D2", "2024-02-01", "I bought a lamp."),
                             session("D3", "2024-03-01", "I reupholstered the sofa green.")])


def _shown(system_name: str, qid: str = "q1", mode: str = "text", **options: str):
    model = ScriptedModel(fn=lambda messages, _: "B")
    ctx = SystemContext(model=model, context_mode=mode, options=options)
    sys_ = lookup("system", system_name)(ctx)()
    ep = _episode()

    async def go():
        await sys_.reset(ep)
        for s in ep.sessions:
            await sys_.ingest(s)
        return await sys_.answer(next(q for q in ep.questions if q.question_id == qid))

    response = asyncio.run(go())
    text = "\n".join(p.text for m in (model.calls[-1][0] if model.calls else [])
                     for p in m.parts if isinstance(p, TextPart))
    return response, text


def test_all_clue_shows_every_clue_round_and_nothing_else() -> None:
    response, text = _shown("clue-all")
    assert response.text == "B"
    assert "My sofa is grey." in text and "reupholstered the sofa green" in text
    assert "noted (D1)" in text  # the round's assistant turn belongs to it
    assert "lamp" not in text and "small talk" not in text
    assert text.index("grey.") < text.index("green.")  # history order, not evidence order


def test_latest_only_shows_the_chronologically_latest_clue() -> None:
    _, text = _shown("clue-latest")
    assert "green" in text and "My sofa is grey." not in text


def test_stale_only_shows_the_earlier_clues() -> None:
    _, text = _shown("clue-stale")
    assert "My sofa is grey." in text and "reupholstered" not in text


def test_stale_only_with_one_clue_is_an_error_not_an_answer() -> None:
    response, _ = _shown("clue-stale", qid="q2")
    assert response.error is not None and response.error.kind == "not_applicable"
    assert response.text is None


def test_question_only_has_no_history_and_options_only_hides_the_question() -> None:
    _, text = _shown("shortcut-question")
    assert "sofa now?" in text and "B. green" in text and "grey." not in text
    _, text = _shown("shortcut-options")
    assert "sofa now?" not in text and "B. green" in text


def test_question_only_shows_the_question_images_by_the_context_mode() -> None:
    """The question-only audit runs in text mode: the question's own image (MemEye's
    question_image) is not sent as pixels (a text-only model would refuse it), in caption
    mode as its caption, in image mode as the image."""
    from memgauge.models import ImagePart

    ep = _episode()
    photo = ImageRef(source="q.png", captions={"dense": "A teal armchair by a window."})
    question = ep.questions[0].model_copy(update={"images": [photo]})

    def sent(mode: str) -> tuple[int, str]:
        model = ScriptedModel(fn=lambda messages, _: "B")
        sys_ = lookup("system", "shortcut-question")(
            SystemContext(model=model, context_mode=mode))()
        asyncio.run(sys_.answer(question))
        parts = [p for m in model.calls[-1][0] for p in m.parts]
        text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
        return sum(isinstance(p, ImagePart) for p in parts), text

    images, text = sent("text")
    assert images == 0 and "teal armchair" not in text
    images, text = sent("caption")
    assert images == 0 and "teal armchair" in text
    assert sent("image")[0] == 1


def test_caption_mode_and_minimal_caption() -> None:
    _, text = _shown("clue-all", mode="caption")
    assert "Three cushions" in text
    _, text = _shown("clue-all", mode="caption", caption="minimal")
    assert "A grey fabric sofa." in text and "Three cushions" not in text


def test_bad_caption_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="caption"):
        lookup("system", "clue-all")(SystemContext(model=NoModel(),
                                                   options={"caption": "short"}))


def test_offline_baseline_picks_the_option_the_shown_text_supports() -> None:
    ctx = SystemContext(model=NoModel(), context_mode="text")
    ep = _episode()

    async def go(name: str):
        sys_ = lookup("system", name)(ctx)()
        await sys_.reset(ep)
        for s in ep.sessions:
            await sys_.ingest(s)
        return (await sys_.answer(ep.questions[0])).text

    assert asyncio.run(go("clue-latest")) == "B"  # "green" is in the latest clue
    assert asyncio.run(go("clue-stale")) == "A"  # the stale state: grey


def test_memeye_questions_keep_their_own_option_lines_once() -> None:
    from pathlib import Path

    from memgauge.benchmarks import BenchmarkOptions

    root = Path(__file__).resolve().parents[1] / "fixtures" / "memeye"
    bench = lookup("benchmark", "memeye")(BenchmarkOptions(data=str(root),
                                                           extra={"format": "mcq"}))
    ep = next(e for e in bench.episodes() if any(q.options for q in e.questions))
    question = next(q for q in ep.questions if q.options)
    model = ScriptedModel(fn=lambda messages, _: "A")
    sys_ = lookup("system", "clue-all")(SystemContext(model=model, context_mode="text"))()

    async def go() -> None:
        await sys_.reset(ep)
        for s in ep.sessions:
            await sys_.ingest(s)
        await sys_.answer(question)

    asyncio.run(go())
    text = "\n".join(p.text for m in model.calls[-1][0] for p in m.parts
                     if isinstance(p, TextPart))
    assert text.count(f"A. {question.options[0]}") == 1
    clue_turns = {p.turn_id for p in question.evidence}
    shown = {t.turn_id for s in ep.sessions for t in s.turns if t.text and t.text in text}
    assert clue_turns <= shown


# --- the clue diagnostics per X × Y cell (report and recency probe) -------------------------


def _ranked(qid: str, cells: list[str], pool: list[str], clues: list[str]):
    from memgauge.schema import Record, Response, RetrievedItem

    retrieved = [RetrievedItem(pointer=EvidenceRef(session_id=s), score=1.0 - i / 10,
                               chosen=i == 0) for i, s in enumerate(pool)]
    return Record(question_id=qid, episode_id="e", benchmark=BenchmarkInfo(name="t"),
                  status="ok", ability="knowledge_update", answer_type="free_text",
                  question="?", gold="x", prediction="x", scores={"rule": 1.0},
                  response=Response(text="x", retrieved=retrieved),
                  evidence=[EvidenceRef(session_id=s) for s in clues],
                  meta={"xy_cells": cells,
                        "session_positions": {f"s{i}": i for i in range(6)}})


def _cell_run(tmp_path):
    from helpers.report_runs import identity, write_run

    records = [  # q1: stale s1 outranks the latest clue s3; q2 (two cells): latest first
        _ranked("q1", ["X3_Y3"], ["s1", "s3", "s2"], ["s1", "s3"]),
        _ranked("q2", ["X3_Y3", "X4_Y3"], ["s4", "s2"], ["s2", "s4"]),
    ]
    return write_run(tmp_path / "run", identity("rag", "8k"), records)


def test_report_has_the_clue_diagnostics_per_cell(tmp_path) -> None:
    from memgauge.analysis import build_tables, load_runs

    tables = build_tables(load_runs([_cell_run(tmp_path)]))
    [groups] = tables.clues.values()
    x3, x4 = groups["X3 × Y3"]["8k"], groups["X4 × Y3"]["8k"]
    assert x3["stale_dominance"]["value"] == 0.5  # q1 yes, q2 no
    assert x3["stale_dominance"]["n"] == 2 and x4["stale_dominance"]["n"] == 1
    assert x4["stale_dominance"]["value"] == 0.0
    assert "knowledge_update" in groups  # the ability rows stay


def test_recency_probe_groups_by_cell_when_records_carry_cells(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from memgauge.cli import app

    run = _cell_run(tmp_path)
    res = CliRunner().invoke(app, ["probe", "recency", run, "--format", "json",
                                   "--alpha", "1"])
    assert res.exit_code == 0, res.output
    [probe] = json.loads(res.stdout)["runs"]
    assert probe["by"] == "cell"
    as_run, newest = probe["rows"]
    assert as_run["groups"]["X3 × Y3"]["stale_dominance"]["value"] == 0.5
    # α = 1 ranks by recency alone: the latest clue first, nothing stale dominates
    assert newest["groups"]["X3 × Y3"]["stale_dominance"]["value"] == 0.0
    assert newest["groups"]["X4 × Y3"]["latest_clue_recall"]["n"] == 1
    md = CliRunner().invoke(app, ["probe", "recency", run, "--alpha", "1"])
    assert "By X × Y cell" in md.output and "X4 × Y3" in md.output
    by_ability = CliRunner().invoke(app, ["probe", "recency", run, "--format", "json",
                                          "--by", "ability"])
    assert set(json.loads(by_ability.stdout)["runs"][0]["rows"][0]["groups"]) == {
        "knowledge_update", "all"}
    bad = CliRunner().invoke(app, ["probe", "recency", run, "--by", "row"])
    assert bad.exit_code != 0 and "--by" in bad.output and "Traceback" not in bad.output
