"""Session dates as the MemLens reference renders them: a bare turn list takes its
haystack_dates entry; a {"date", "session"} object only its own date, "unknown" without one."""

from __future__ import annotations

import json
from pathlib import Path

from memgauge.benchmarks import BenchmarkOptions
from memgauge.prompt import build_prompt
from memgauge.registry import lookup


def test_an_object_session_without_a_date_is_unknown_not_haystack_dates(tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    item = {"question_id": "q1", "question": "What did I say?", "answer": "hello",
            "question_type": "information_extraction", "question_subtype": "entity",
            "question_date": "2024/03/01",
            "haystack_dates": ["2024/01/01", "2024/01/02", "2024/01/03"],
            "haystack_sessions": [turns, {"session": turns}, {"date": "2024/02/02",
                                                              "session": turns}]}
    path = tmp_path / "dataset_32k.json"
    path.write_text(json.dumps([item]))
    (ep,) = list(lookup("benchmark", "memlens")(BenchmarkOptions(data=str(path))).episodes())
    assert [s.date for s in ep.sessions] == ["2024/01/01", None, "2024/02/02"]
    prompt = build_prompt(ep.sessions, ep.questions[0])
    headers = [p.text.split("\n")[0] for m in prompt.messages for p in m.parts
               if p.text.startswith("=== Session")]
    assert headers == ["=== Session 1 (Date: 2024/01/01) ===",
                       "=== Session 2 (Date: unknown) ===",
                       "=== Session 3 (Date: 2024/02/02) ==="]
