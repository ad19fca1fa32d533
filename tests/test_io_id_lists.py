"""``--question-ids``: a JSON list, ``{"question_ids": [...]}`` or one id per line; nothing
else, and never another list of ids that happens to sit in the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgauge.errors import InputError
from memgauge.io import read_id_list


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "ids.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text", [
    '["a", "b", 3]',
    '{"question_ids": ["a", "b", 3]}',
    '{"excluded_ids": ["x", "y"], "question_ids": ["a", "b", 3]}',  # not the first list
    '[{"question_id": "a"}, {"question_id": "b"}, {"question_id": 3}]',
    "# the subset\na\nb\n\n3\n",
])
def test_accepted_forms(tmp_path: Path, text: str) -> None:
    assert read_id_list(_write(tmp_path, text)) == {"a", "b", "3"}


@pytest.mark.parametrize(("doc", "says"), [
    ({"excluded_ids": ["x"], "ids": ["a"]}, ("'question_ids' is that list (its keys: "
                                            "'excluded_ids', 'ids')")),
    ({"question_ids": "a,b"}, "its keys: 'question_ids'"),
    ({}, "its keys: none"),
    ([["a"]], "entry 0 is not a question id (got list)"),
])
def test_anything_else_is_refused_by_name(tmp_path: Path, doc, says: str) -> None:
    path = _write(tmp_path, json.dumps(doc))
    with pytest.raises(InputError) as exc:
        read_id_list(path)
    assert says in str(exc.value) and path in str(exc.value)
