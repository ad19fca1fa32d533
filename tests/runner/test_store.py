"""records.jsonl writing: a batch never lands after a dead writer's partial line."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from memgauge.runner._store import RECORDS, RecordWriter

GOOD = [orjson.dumps({"question_id": f"q{i}", "status": "ok"}) + b"\n" for i in range(3)]


@pytest.mark.parametrize("before", [
    b"",  # a fresh file
    GOOD[0],  # whole lines only: kept as they are
    GOOD[0] + b'{"question_id": "q9", "sta',  # a worker killed mid-batch
    GOOD[0] + b'{"question_id": "q9"' + b"x" * 200_000,  # a long torn line (several reads)
    b'{"question_id": "q9", "sta',  # nothing whole before the fragment
])
def test_a_batch_goes_after_the_last_whole_line(tmp_path, before):
    (tmp_path / RECORDS).write_bytes(before)

    async def go() -> None:
        writer = RecordWriter(tmp_path)
        await asyncio.to_thread(writer._write_batch, GOOD[1:])
        await writer.close()

    asyncio.run(go())
    kept = before[:before.rfind(b"\n") + 1]
    data = (tmp_path / RECORDS).read_bytes()
    assert data == kept + b"".join(GOOD[1:])
    assert all(orjson.loads(line) for line in data.splitlines())
