"""records.jsonl writing: a batch never lands after a dead writer's partial line."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from memgauge.runfolder import RECORDS, RecordWriter

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


# -- one process per run folder (issue 11, item 2) --------------------------------------------

def test_a_second_process_on_a_folder_in_use_is_refused_naming_the_holder(tmp_path):
    import socket
    import subprocess
    import sys
    import textwrap

    from memgauge.errors import ConfigError
    from memgauge.runner._lock import RunLock

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from memgauge.runner._lock import RunLock
        lock = RunLock.acquire({str(run_dir)!r})
        print("held", flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError) as info:
            RunLock.acquire(run_dir)
        assert f"pid {holder.pid} on {socket.gethostname()}" in str(info.value)
        assert "in use" in str(info.value)
    finally:
        holder.kill()
        holder.wait()
    # the holder died (kill -9): its lock file is left behind, and is taken over
    assert (run_dir / ".lock").read_text()
    lock = RunLock.acquire(run_dir)
    lock.release()


def test_the_runner_refuses_a_folder_in_use_before_touching_it(tmp_path):
    from helpers.datasets import write_memlens

    from memgauge.errors import ConfigError
    from memgauge.runner import RunConfig, run
    from memgauge.runner._lock import RunLock

    data = write_memlens(tmp_path, 1)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "records.jsonl").write_text("")
    lock = RunLock.acquire(tmp_path / "run")
    try:
        with pytest.raises(ConfigError, match="in use by another memgauge process"):
            run(RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                          out=str(tmp_path / "run"), model="replay:none.json",
                          progress=False))
        assert not (tmp_path / "run" / "manifest.json").exists()
    finally:
        lock.release()
    # released: the same process (or any other) can run there now
    RunLock.acquire(tmp_path / "run").release()
