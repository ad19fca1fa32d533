"""``--judge-prompt-file``: a judge prompt text the user supplies, filled in per case under the
MemLens task keys, its sha256 in the judge version and the manifest."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import InputError
from memgauge.models.scripted import ScriptedModel
from memgauge.schema import Ability, Score
from memgauge.scoring import JudgeScorer
from memgauge.scoring._judge import JudgeCase
from memgauge.scoring._rubric_file import PromptFileRubric
from memgauge.scoring._rubric_memlens import TASK_KEYS

runner = CliRunner()

TEMPLATE = '''Grade it. Reply as [JSON]: {"answer_score": <int>}
[Task-Specific Criteria]
{{criteria}}
<Question>
{{question}}
<Standard Answer>
{{standard_answer}}
{{old_answer_block}}<Student Answer>
{{student_answer}}
[Scoring Rationale]:'''


def _file(tmp_path: Path, template: str = TEMPLATE, criteria: dict | None = None,
          extra: str = "") -> Path:
    criteria = {k: f"criterion for {k}" for k in TASK_KEYS} if criteria is None else criteria
    body = [f"template = '''{template}'''",
            "old_answer_block = '''<Old (Outdated) Answer>\n{{old_answer}}\n'''", extra,
            "[criteria]", *(f'{k} = "{v}"' for k, v in criteria.items())]
    path = tmp_path / "judge.toml"
    path.write_text("\n".join(body), encoding="utf-8")
    return path


def _ask(rubric: PromptFileRubric, case: JudgeCase, reply: str) -> tuple[Score, str]:
    model = ScriptedModel(fn=lambda messages, qid: reply)
    got = asyncio.run(JudgeScorer(model, rubric=rubric).judge(case))
    assert isinstance(got, Score)
    (messages, _), = model.calls
    return got, messages[0].parts[0].text


def test_each_case_is_filled_in_under_its_task_key(tmp_path: Path) -> None:
    rubric = PromptFileRubric(str(_file(tmp_path)))
    ku = JudgeCase(question="Where do I live now?", gold="Lyon", prediction="Lyon {{question}}",
                   ability=Ability.KNOWLEDGE_UPDATE, old_answer="Porto")
    score, prompt = _ask(rubric, ku, '[Score]: 1 points [JSON]: {"answer_score": 1}')
    assert score.value == 1.0 and score.details["task_key"] == "KU_KnowledgeUpdate"
    assert prompt == TEMPLATE.replace("{{criteria}}", "criterion for KU_KnowledgeUpdate") \
        .replace("{{question}}", "Where do I live now?").replace("{{standard_answer}}", "Lyon") \
        .replace("{{old_answer_block}}", "<Old (Outdated) Answer>\nPorto\n") \
        .replace("{{student_answer}}", "Lyon {{question}}")  # a prediction is never expanded
    refusal = JudgeCase(question="What is my cat called?", gold="unknown", prediction="No idea",
                        ability=Ability.ANSWER_REFUSAL)
    _, prompt = _ask(rubric, refusal, '{"answer_score": 0}')
    assert "<Standard Answer>\nInsufficient information\n<Student Answer>" in prompt
    assert "criterion for AR_AnswerRefusal" in prompt


def test_the_version_is_the_files_sha256(tmp_path: Path) -> None:
    path = _file(tmp_path)
    rubric = PromptFileRubric(str(path))
    assert rubric.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert rubric.version == "file." + rubric.sha256[:16]
    path.write_text(path.read_text() + "\n# one more line\n")
    assert PromptFileRubric(str(path)).version != rubric.version


def test_a_plain_text_file_is_the_template_alone(tmp_path: Path) -> None:
    path = tmp_path / "judge.txt"
    path.write_text('Q: {{question}}\nA: {{student_answer}}\nGold: {{standard_answer}}\n'
                    'JSON: {"score": 0 or 1}')
    case = JudgeCase(question="Colour?", gold="red", prediction="red",
                     ability=Ability.INFORMATION_EXTRACTION)
    _score, prompt = _ask(PromptFileRubric(str(path)), case, '{"score": 1}')
    assert prompt == 'Q: Colour?\nA: red\nGold: red\nJSON: {"score": 0 or 1}'


@pytest.mark.parametrize(("make", "says"), [
    (lambda t: _file(t, template="{{question}} {{student_answer}} {{gold}}"),
     "unknown placeholder {{gold}}"),
    (lambda t: _file(t, criteria={"IE_Entity": "x"}), ("no criterion text for task key(s) "
                                                        "IE_PreviousInfo")),
    (lambda t: _file(t, extra="temperature = 0"), "unknown key(s) temperature"),
    (lambda t: _file(t, template="{{criteria}} {{student_answer}}"),
     "the template never shows the {{question}}"),
    (lambda t: _file(t, extra="levels = [0, 5]"), "levels must be scores in [0, 1]"),
])
def test_mistakes_in_the_file_are_named(tmp_path: Path, make, says: str) -> None:
    path = make(tmp_path)
    with pytest.raises(InputError) as exc:
        PromptFileRubric(str(path))
    assert says in str(exc.value) and str(path) in str(exc.value)


def test_score_and_run_use_the_file_and_record_it(tmp_path: Path) -> None:
    from helpers.stub_server import StubServer

    from memgauge.benchmarks.synth import SynthConfig, generate

    generate(SynthConfig(out=str(tmp_path / "b"), questions=3, tiers=["4k"], seed=4))
    path = _file(tmp_path)
    with StubServer(answer=lambda body: '[JSON]: {"answer_score": 1}') as stub:
        got = runner.invoke(app, ["run", "--bench", "synth", "--data", str(tmp_path / "b"),
                                  "--out", str(tmp_path / "r"), "--model", "openai:m",
                                  "--base-url", stub.base_url])
        assert got.exit_code == 0, got.output
        got = runner.invoke(app, ["score", str(tmp_path / "r"), "--judge", "openai:j",
                                  "--judge-base-url", stub.base_url, "--prompt-file", str(path)])
        assert got.exit_code == 0, got.output
        judged = [r for r in stub.requests if r["model"] == "j"]
    assert len(judged) == 3
    assert all(r["messages"][0]["content"].startswith("Grade it.") for r in judged)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    entry = manifest["judges"]["judge"]
    assert entry["prompt_file_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert entry["prompt_version"].startswith("file.")
    records = [json.loads(x) for x in (tmp_path / "r" / "records.jsonl").read_text().splitlines()]
    assert all(r["scores"]["judge"] == 1.0 for r in records)
    assert all(r["score_details"]["judge"]["details"]["rubric"] == "prompt-file" for r in records)
    bad = tmp_path / "bad.toml"
    bad.write_text("template = 'nothing here'")
    got = runner.invoke(app, ["run", "--bench", "synth", "--data", str(tmp_path / "b"),
                              "--out", str(tmp_path / "r2"), "--model", "none:", "--system",
                              "oracle", "--judge", "openai:j", "--judge-prompt-file", str(bad)])
    assert got.exit_code == 2 and "never shows the {{question}}" in got.output
    assert not (tmp_path / "r2" / "records.jsonl").exists()
