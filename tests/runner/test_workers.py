"""``--workers N``: answering in several forked processes.

Covered: the same records, scores, status and benchmark counts as one process (MemLens with
parts; LoCoMo without, also after an earlier run in the same process); ``--concurrency`` as
the total across workers; the response cache shared by workers; resuming a one-process run
with workers; ``--limit`` falling back to one process (with a note, also on the CLI's
stderr); a malformed item in one worker's share (the error, the manifest, the records kept,
no report files left); SIGKILL of the parent (no worker outlives it, a rerun completes
without duplicates); and the loader's ``episodes(part=(k, n))``: disjoint parts covering
the file, per-part counts, and errors (duplicate ids, an id list naming unknown ids) raised
by every part. A run that hangs fails its test (SIGALRM) instead of hanging the suite.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import sigint_child
from helpers.datasets import colour_answer, memlens_items, write_memlens
from helpers.stub_server import StubServer, last_text, question_of

from memgauge.benchmarks import BenchmarkOptions
from memgauge.errors import InputError, MemgaugeError
from memgauge.registry import lookup
from memgauge.runner import RunConfig, Runner, load_manifest, read_records, run
from memgauge.runner._survey import Survey

# -- helpers ----------------------------------------------------------------------------------


def _config(tmp_path: Path, data: Path, base_url: str, out: str = "run", **kw) -> RunConfig:
    kw.setdefault("cache", False)
    return RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                     out=str(tmp_path / out), model="openai:stub-vlm", base_url=base_url,
                     progress=False, retry_base_s=0.01, **kw)


def _lines(run_dir: Path) -> list[dict]:
    path = run_dir / "records.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _ids(run_dir: Path) -> list[str]:
    return [x["question_id"] for x in _lines(run_dir)]


def _scores(run_dir: Path) -> dict[str, dict[str, float]]:
    return {k: v.scores for k, v in read_records(run_dir).items()}


def _predictions(run_dir: Path) -> dict[str, str | None]:
    return {k: v.prediction for k, v in read_records(run_dir).items()}


def _worker_reports(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob(".worker-*"))


def _questions_sent(stub: StubServer, start: int = 0) -> list[str]:
    return [question_of(body) for body in stub.requests[start:]]


def _write_items(path: Path, items: list[dict]) -> Path:
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


class InFlight:
    """A stub 'model' that holds each request for ``hold_s`` and tracks the most requests
    the server was answering at once."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self.now = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            time.sleep(self.hold_s)
            return colour_answer(body)
        finally:
            with self._lock:
                self.now -= 1


def _cli(data: Path, base_url: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "memgauge.cli", "run", "--bench", "memlens",
            "--data", str(data), "--image-dir", str(data.parent), "--model", "openai:stub-vlm",
            "--base-url", base_url, "--out", str(out), "--no-cache", *extra]


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process from /proc, or None when it no longer exists."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
            if stat is not None and stat[1] == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    stat = _proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Fail (TimeoutError) instead of hanging. SIGALRM interrupts the parent's wait for its
    workers, which then sends them SIGINT; the alarm repeats each second (a worker blocked
    outside its event loop needs a second SIGINT), and from the fourth on, this process's
    worker children still alive are killed. Nests inside an outer deadline."""
    alarms = 0

    def on_alarm(signum: int, frame: object) -> None:
        nonlocal alarms
        alarms += 1
        if alarms >= 4 and sys.platform.startswith("linux"):
            for pid in _children(os.getpid()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        raise TimeoutError(f"still running after {seconds} s: the run hangs")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    t0 = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            left = outer - (time.monotonic() - t0)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), 1.0)


@pytest.fixture(autouse=True)
def _no_test_hangs():
    if not hasattr(signal, "setitimer"):
        yield
        return
    with _deadline(30):
        yield


# -- the same results as one process ----------------------------------------------------------


def test_workers_give_the_same_records_manifest_and_requests_as_one_process(tmp_path):
    n = 24
    data = write_memlens(tmp_path, n)
    results = {}
    seen_progress: list[tuple[int, int, int]] = []
    with StubServer(answer=colour_answer) as stub:
        for out, workers in (("a", 1), ("b", 2), ("c", 3)):
            before = len(stub.requests)
            on_progress = ((lambda res, rec: seen_progress.append((res.done, res.ok,
                                                                   res.errors)))
                           if workers == 2 else None)
            runner = Runner(_config(tmp_path, data, stub.base_url, out=out, workers=workers,
                                    concurrency=4), on_progress=on_progress)
            results[out] = runner.run_sync()
            sent = _questions_sent(stub, before)
            # one request per item, in all the workers together
            assert len(sent) == n, out
            assert len(set(sent)) == n, out
    want_ids = sorted(f"q{i:03d}" for i in range(n))
    manifests = {out: load_manifest(tmp_path / out) for out in "abc"}
    for out, workers in (("a", 1), ("b", 2), ("c", 3)):
        run_dir = tmp_path / out
        assert sorted(_ids(run_dir)) == want_ids, out  # every id exactly once
        res = results[out]
        assert (res.done, res.ok, res.errors, res.skipped) == (n, n, 0, 0), out
        assert res.workers == workers and res.notes == [], out
        assert _worker_reports(run_dir) == [], out
        m = manifests[out]
        assert m["status"] == manifests["a"]["status"] == {"records": n, "ok": n, "errors": 0}
        assert m["benchmark"]["counts"] == manifests["a"]["benchmark"]["counts"], out
        assert m["benchmark"]["inputs"] == manifests["a"]["benchmark"]["inputs"], out
        assert _scores(run_dir) == _scores(tmp_path / "a"), out
        assert _predictions(run_dir) == _predictions(tmp_path / "a"), out
    assert manifests["a"]["benchmark"]["counts"] == {
        "episodes": n, "questions": n, "images": n, "missing_images": 0}
    assert manifests["a"].get("execution") in (None, {"workers": 1})
    assert manifests["b"]["execution"] == {"workers": 2}
    assert manifests["c"]["execution"] == {"workers": 3}
    assert manifests["b"]["packages"]["pydantic"]
    # the parent's progress callback saw the workers' counts add up to the whole run
    assert seen_progress and seen_progress[-1] == (n, n, 0)
    scores = _scores(tmp_path / "a")
    assert 0 < sum(s["rule"] for s in scores.values()) < n  # mixed, so the comparison bites


def test_missing_images_are_merged_across_workers(tmp_path):
    n = 9
    data = write_memlens(tmp_path, n)
    for i in (2, 5):
        (tmp_path / "img" / f"mug{i}.png").unlink()
    with StubServer(answer=colour_answer) as stub:
        for out, workers in (("one", 1), ("two", 2)):
            res = Runner(_config(tmp_path, data, stub.base_url, out=out, workers=workers,
                                 allow_missing_images=True)).run_sync()
            assert (res.done, res.ok) == (n, n)
    one, two = load_manifest(tmp_path / "one"), load_manifest(tmp_path / "two")
    assert one["benchmark"]["counts"]["missing_images"] == 2
    assert two["benchmark"]["counts"] == one["benchmark"]["counts"]

    def key(m: dict) -> tuple[str, str]:
        return m["item"], m["source"]

    assert (sorted(two["benchmark"]["missing_images"], key=key)
            == sorted(one["benchmark"]["missing_images"], key=key))
    assert _scores(tmp_path / "two") == _scores(tmp_path / "one")


def test_response_cache_is_shared_by_the_workers(tmp_path):
    n = 10
    data = write_memlens(tmp_path, n)
    with StubServer(answer=colour_answer) as stub:
        cold = Runner(_config(tmp_path, data, stub.base_url, out="cold", workers=2,
                              cache=True)).run_sync()
        assert len(stub.requests) == n and cold.ok == n
        warm = Runner(_config(tmp_path, data, stub.base_url, out="warm", workers=2,
                              cache=True)).run_sync()
        assert len(stub.requests) == n  # every answer came from the cache
    assert warm.ok == n
    assert load_manifest(tmp_path / "cold")["cache"] == {
        "enabled": True, "hits_this_invocation": 0, "misses_this_invocation": n}
    assert load_manifest(tmp_path / "warm")["cache"] == {
        "enabled": True, "hits_this_invocation": n, "misses_this_invocation": 0}
    assert all(r.response.cached for r in read_records(tmp_path / "warm").values())
    assert _scores(tmp_path / "warm") == _scores(tmp_path / "cold")


# -- concurrency ------------------------------------------------------------------------------


def _peak_in_flight(tmp_path: Path, workers: int, concurrency: int, n: int = 12):
    """(most requests in flight at once, RunResult) of a run with a slow stub."""
    data = write_memlens(tmp_path, n)
    model = InFlight(hold_s=0.2)
    with StubServer(answer=model) as stub:
        res = Runner(_config(tmp_path, data, stub.base_url, workers=workers,
                             concurrency=concurrency)).run_sync()
        assert len(stub.requests) == n
    assert res.ok == n
    assert sorted(_ids(tmp_path / "run")) == [f"q{i:03d}" for i in range(n)]
    return model.peak, res


@pytest.mark.parametrize(("workers", "concurrency"), [(2, 4), (2, 3)])
def test_concurrency_is_the_total_across_workers(tmp_path, workers, concurrency):
    peak, res = _peak_in_flight(tmp_path, workers, concurrency)
    assert res.workers == workers and res.notes == []
    assert peak <= concurrency
    # more than one worker's share was in flight at once: the workers overlapped
    assert peak > -(-concurrency // workers)


def test_concurrency_below_the_worker_count_is_still_the_total(tmp_path):
    # --concurrency is "requests in flight (in all)"; 3 workers must not send 3 at once
    peak, res = _peak_in_flight(tmp_path, workers=3, concurrency=2)
    assert peak <= 2, f"{peak} requests in flight with --workers 3 --concurrency 2"
    assert res.workers <= 2
    # fewer processes than asked: the result says why
    assert res.notes == ["workers 3 reduced to 2: concurrency 2 is the total"]  # the fields


# -- resume -----------------------------------------------------------------------------------


def test_resume_a_one_process_run_with_workers(tmp_path):
    n = 14
    data = write_memlens(tmp_path, n)
    with StubServer(answer=colour_answer) as stub:
        first = Runner(_config(tmp_path, data, stub.base_url, limit=5)).run_sync()
        assert (first.done, first.workers) == (5, 1)
        assert len(stub.requests) == 5
        before = {x["question_id"]: x for x in _lines(tmp_path / "run")}
        assert len(before) == 5
        second = Runner(_config(tmp_path, data, stub.base_url, workers=2)).run_sync()
        new_questions = _questions_sent(stub, 5)
    assert (second.skipped, second.done, second.ok, second.workers) == (5, n - 5, n - 5, 2)
    assert len(new_questions) == n - 5
    assert not any(f"number {i}?" in q for q in new_questions for i in range(5))
    lines = _lines(tmp_path / "run")
    ids = [x["question_id"] for x in lines]
    assert sorted(ids) == sorted(f"q{i:03d}" for i in range(n))  # no duplicates
    after = {x["question_id"]: x for x in lines}
    for qid, rec in before.items():
        assert after[qid] == rec  # earlier answers untouched
    m = load_manifest(tmp_path / "run")
    assert m["status"] == {"records": n, "ok": n, "errors": 0}
    assert len(m["invocations"]) == 2
    assert _worker_reports(tmp_path / "run") == []


# -- --limit ----------------------------------------------------------------------------------


def test_limit_runs_in_one_process_with_a_note(tmp_path):
    data = write_memlens(tmp_path, 10)
    with StubServer(answer=colour_answer) as stub:
        res = Runner(_config(tmp_path, data, stub.base_url, workers=2, limit=4)).run_sync()
        assert len(stub.requests) == 4
        assert sorted(_ids(tmp_path / "run")) == ["q000", "q001", "q002", "q003"]
        assert res.done == 4 and res.workers == 1
        assert len(res.notes) == 1 and res.notes[0].startswith("workers 2 ignored: limit ")
        assert "execution" not in load_manifest(tmp_path / "run")
        proc = subprocess.run(_cli(data, stub.base_url, tmp_path / "cli", "--workers", "2",
                                   "--limit", "4"), check=False, capture_output=True,
                              text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    stderr = " ".join(proc.stderr.split())
    assert "note: --workers 2 ignored: --limit counts" in stderr  # the CLI names its flags
    assert "--limit" not in proc.stdout
    assert sorted(_ids(tmp_path / "cli")) == ["q000", "q001", "q002", "q003"]


# -- a loader without parts -------------------------------------------------------------------


def _conversation(c: int) -> dict:
    """LoCoMo conversation ``c`` with three questions (no images)."""
    return {
        "sample_id": f"conv-{c}",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1 pm on 1 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": f"My cat {c} is called Tom{c}."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice."}],
            "session_2_date_time": "2 pm on 2 May, 2023",
            "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": f"I moved to city {c}."}],
        },
        "qa": [
            {"question": f"What is the name of cat {c}?", "answer": f"Tom{c}",
             "evidence": ["D1:1"], "category": 4},
            {"question": f"Where did Bo move in story {c}?", "answer": f"city {c}",
             "evidence": ["D2:1"], "category": 4},
            {"question": f"Which dog does Bo have in story {c}?", "adversarial_answer": "Rex",
             "evidence": [], "category": 5},
        ],
    }


def _locomo_answer(body: dict) -> str:
    """Right about cats in even stories, wrong otherwise, so scores are mixed."""
    text = last_text(body)
    m = re.search(r"cat (\d+)\?", text)
    if m:
        c = int(m.group(1))
        return f"Tom{c}" if c % 2 == 0 else "Felix"
    m = re.search(r"story (\d+)\?", text)
    return f"city {m.group(1)}" if m and "move" in text else "Not mentioned"


def _locomo_config(tmp_path: Path, data: Path, base_url: str, out: str, workers: int):
    return RunConfig(bench="locomo", data=str(data), out=str(tmp_path / out),
                     model="openai:stub-vlm", base_url=base_url, progress=False,
                     retry_base_s=0.01, cache=False, workers=workers)


def _assert_same_locomo_run(one: Path, two: Path, n_conv: int) -> None:
    ids = _ids(two)
    assert len(ids) == len(set(ids)) == 3 * n_conv
    assert sorted(ids) == sorted(_ids(one))
    assert _scores(two) == _scores(one)
    m1, m2 = load_manifest(one), load_manifest(two)
    assert m2["execution"] == {"workers": 2}
    assert m2["benchmark"]["counts"] == m1["benchmark"]["counts"]
    assert m1["benchmark"]["counts"]["episodes"] == n_conv
    assert m1["benchmark"]["counts"]["questions"] == 3 * n_conv
    assert m2["benchmark"]["inputs"] == m1["benchmark"]["inputs"]
    assert m2["status"] == m1["status"]
    assert _worker_reports(two) == []
    rule = [s.get("rule", 0) for s in _scores(one).values()]
    assert 0 < sum(rule) < len(rule)


def test_loader_without_parts_gives_the_same_records_cli(tmp_path):
    from memgauge.benchmarks.locomo import LoCoMoBenchmark

    n_conv = 5
    data = _write_items(tmp_path / "locomo10.json", [_conversation(c) for c in range(n_conv)])
    bench = lookup("benchmark", "locomo")(BenchmarkOptions(data=str(data)))
    assert isinstance(bench, LoCoMoBenchmark)
    assert not getattr(bench, "supports_parts", False)
    with StubServer(answer=_locomo_answer) as stub:
        proc = subprocess.run(
            [sys.executable, "-m", "memgauge.cli", "run", "--bench", "locomo", "--data",
             str(data), "--model", "openai:stub-vlm", "--base-url", stub.base_url, "--out",
             str(tmp_path / "two"), "--no-cache", "--workers", "2"],
            check=False, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert len(stub.requests) == 3 * n_conv
        Runner(_locomo_config(tmp_path, data, stub.base_url, "one", workers=1)).run_sync()
    _assert_same_locomo_run(tmp_path / "one", tmp_path / "two", n_conv)


def test_loader_without_parts_after_an_earlier_run_in_the_same_process(tmp_path):
    # The library use of the same comparison: the one-process run goes first, in this
    # process, and the run with workers follows (as in a script or notebook).
    n_conv = 5
    data = _write_items(tmp_path / "locomo10.json", [_conversation(c) for c in range(n_conv)])
    with StubServer(answer=_locomo_answer) as stub:
        one = Runner(_locomo_config(tmp_path, data, stub.base_url, "one", workers=1)).run_sync()
        assert one.done == 3 * n_conv
        with _deadline(6):
            two = Runner(_locomo_config(tmp_path, data, stub.base_url, "two",
                                        workers=2)).run_sync()
        assert len(stub.requests) == 2 * 3 * n_conv
    assert (two.done, two.ok, two.workers) == (3 * n_conv, 3 * n_conv, 2)
    _assert_same_locomo_run(tmp_path / "one", tmp_path / "two", n_conv)


# -- a malformed item -------------------------------------------------------------------------


def test_malformed_item_in_one_share_raises_and_keeps_the_rest(tmp_path, monkeypatch):
    n, bad = 12, 7
    items = memlens_items(tmp_path, n)
    del items[bad]["question"]
    data = _write_items(tmp_path / "dataset.json", items)
    with StubServer(answer=colour_answer) as stub:
        with pytest.raises(InputError) as one:
            Runner(_config(tmp_path, data, stub.base_url, out="one")).run_sync()
        # the read before the first request found it (design 0043): nothing was sent
        assert stub.requests == [] and not (tmp_path / "one").exists()
        # an item that turns bad only while the workers read (the survey passed) still
        # fails the run, and the other worker's share is kept
        monkeypatch.setattr(Runner, "survey", lambda self, s: Survey(planned=n))
        with pytest.raises(MemgaugeError) as two:
            Runner(_config(tmp_path, data, stub.base_url, out="two", workers=2)).run_sync()
        assert str(two.value) == str(one.value)
        assert f"q{bad:03d}" in str(two.value) and "'question'" in str(two.value)
        run_dir = tmp_path / "two"
        ids = _ids(run_dir)
        assert len(ids) == len(set(ids))  # no duplicates
        assert f"q{bad:03d}" not in ids
        # the worker that does not own the bad item answered all of its share
        assert {f"q{i:03d}" for i in range(0, n, 2)} <= set(ids)
        m = load_manifest(run_dir)
        assert m is not None and m["status"] == {"records": len(ids), "ok": len(ids),
                                                 "errors": 0}
        assert m["execution"] == {"workers": 2}
        assert _worker_reports(run_dir) == []
        # fix the item and rerun: what was kept is skipped, the rest is answered once
        items[bad]["question"] = f"What colour was mug number {bad}?"
        _write_items(data, items)
        res = Runner(_config(tmp_path, data, stub.base_url, out="two", workers=2)).run_sync()
    assert res.skipped == len(ids) and res.done == n - len(ids)
    assert sorted(_ids(run_dir)) == sorted(f"q{i:03d}" for i in range(n))
    assert _worker_reports(run_dir) == []


# -- SIGKILL of the parent --------------------------------------------------------------------


def _start_and_wait_for_records(cmd: list[str], env: dict[str, str], run_dir: Path,
                                at_least: int, stderr: int) -> subprocess.Popen[bytes]:
    """Start a CLI run and return once ``at_least`` records are on disk (or after 60 s)."""
    proc = sigint_child.popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    records = run_dir / "records.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if records.exists() and len(records.read_bytes().splitlines()) >= at_least:
            break
        time.sleep(0.02)
    return proc


def test_sigkill_of_the_parent_leaves_no_worker_and_a_rerun_completes(tmp_path):
    n = 24
    data = write_memlens(tmp_path, n)
    run_dir = tmp_path / "killed"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    linux = sys.platform.startswith("linux")
    with StubServer(answer=colour_answer, latency_s=0.15) as stub:
        cmd = _cli(data, stub.base_url, run_dir, "--workers", "2", "--concurrency", "2")
        proc = _start_and_wait_for_records(cmd, env, run_dir, 6, stderr=subprocess.DEVNULL)
        records = run_dir / "records.jsonl"
        workers = _children(proc.pid) if linux else []
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if linux:
            assert len(workers) == 2, workers
            deadline = time.time() + 2
            while time.time() < deadline and any(_alive(pid) for pid in workers):
                time.sleep(0.02)
            assert not [pid for pid in workers if _alive(pid)], "a worker outlived the parent"
            assert _children(proc.pid) == []
            size = records.stat().st_size
            time.sleep(0.3)
            assert records.stat().st_size == size  # nobody writes on
        done_before = len(read_records(run_dir))
        assert 6 <= done_before < n
        rerun = subprocess.run(cmd, env=env, check=False, capture_output=True, text=True,
                               timeout=60)
        assert rerun.returncode == 0, rerun.stderr
        clean = run(_config(tmp_path, data, stub.base_url, out="clean"))
    assert clean.done == n
    ids = _ids(run_dir)
    assert len(ids) == n and len(set(ids)) == n
    assert _scores(run_dir) == _scores(tmp_path / "clean")
    assert load_manifest(run_dir)["status"] == {"records": n, "ok": n, "errors": 0}
    assert _worker_reports(run_dir) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds workers in /proc")
def test_sigkill_of_one_worker_is_a_clean_message_exit_3_and_a_rerun_resumes(tmp_path):
    """Issue 25 §5: the OOM killer takes one worker. The parent says which worker, how it
    ended, and to rerun (no traceback), exits 3; the rerun answers the rest."""
    n = 24
    data = write_memlens(tmp_path, n)
    run_dir = tmp_path / "one-killed"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with StubServer(answer=colour_answer, latency_s=0.15) as stub:
        cmd = _cli(data, stub.base_url, run_dir, "--workers", "2", "--concurrency", "2")
        proc = _start_and_wait_for_records(cmd, env, run_dir, 4, stderr=subprocess.PIPE)
        workers = sorted(_children(proc.pid))
        assert len(workers) == 2, workers
        os.kill(workers[1], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=120)
        said = stderr.decode()
        assert proc.returncode == 3, said
        assert "Traceback" not in said
        assert re.search(r"worker \d \(pid \d+\) was killed by signal 9 \(SIGKILL\)", said)
        assert "rerun the same command" in said
        done_before = len(read_records(run_dir))
        assert 4 <= done_before < n
        rerun = subprocess.run(cmd, env=env, check=False, capture_output=True, text=True,
                               timeout=120)
        assert rerun.returncode == 0, rerun.stderr
    assert sorted(_ids(run_dir)) == sorted(f"q{i:03d}" for i in range(n))
    assert load_manifest(run_dir)["status"] == {"records": n, "ok": n, "errors": 0}
    assert _worker_reports(run_dir) == []


# -- the loader's parts -----------------------------------------------------------------------


def _memlens(data: Path, **kw):
    return lookup("benchmark", "memlens")(BenchmarkOptions(data=str(data),
                                                           image_dir=str(data.parent), **kw))


def _episode_ids(bench, part=None) -> list[str]:
    return [e.episode_id for e in bench.episodes(part=part)]


@pytest.mark.parametrize("n", [2, 3])
def test_parts_partition_the_file_and_their_counts_add_up(tmp_path, n):
    data = write_memlens(tmp_path, 11)
    (tmp_path / "img" / "mug4.png").unlink()
    bench = _memlens(data, allow_missing_images=True)
    assert bench.supports_parts is True
    whole = _episode_ids(bench)
    whole_stats = bench.stats()
    assert whole_stats["counts"] == {"episodes": 11, "questions": 11, "images": 11,
                                     "missing_images": 1}
    parts, counts, missing = [], {}, []
    for k in range(n):
        ids = _episode_ids(bench, (k, n))
        assert ids == [f"q{i:03d}" for i in range(k, 11, n)]  # items k, k+n, ... in order
        parts.append(set(ids))
        stats = bench.stats()
        assert stats["counts"]["episodes"] == len(ids)
        for key, value in stats["counts"].items():
            counts[key] = counts.get(key, 0) + value
        missing += stats["missing_images"]
    assert set().union(*parts) == set(whole)
    assert sum(len(p) for p in parts) == len(whole)  # disjoint
    assert counts == whole_stats["counts"]
    assert missing == whole_stats["missing_images"]


def test_duplicate_id_raises_from_every_part(tmp_path):
    items = memlens_items(tmp_path, 7)
    items[4]["question_id"] = items[1]["question_id"]  # both in part 1 of 3
    data = _write_items(tmp_path / "dataset.json", items)
    bench = _memlens(data)
    with pytest.raises(InputError, match="duplicate question_id 'q001'"):
        _episode_ids(bench)
    for n in (2, 3):
        for k in range(n):
            with pytest.raises(InputError, match="duplicate question_id 'q001'"):
                _episode_ids(bench, (k, n))


def test_id_list_with_an_unknown_id_raises_from_every_part(tmp_path):
    data = write_memlens(tmp_path, 8)
    id_file = tmp_path / "ids.txt"
    keep = {"q001", "q002", "q006"}
    id_file.write_text("\n".join([*sorted(keep), "q999"]) + "\n")
    bench = _memlens(data, question_ids=str(id_file))
    with pytest.raises(InputError, match="not in the data: q999"):
        _episode_ids(bench)
    for n in (2, 3):
        for k in range(n):
            got: list[str] = []
            with pytest.raises(InputError, match="not in the data: q999") as exc:
                for episode in bench.episodes(part=(k, n)):
                    got.append(episode.episode_id)
            assert "1 question id(s)" in str(exc.value)
            assert set(got) <= keep
            assert got == [f"q{i:03d}" for i in range(k, 8, n) if f"q{i:03d}" in keep]
    id_file.write_text("\n".join(sorted(keep)) + "\n")
    bench = _memlens(data, question_ids=str(id_file))
    assert sorted(i for k in range(3) for i in _episode_ids(bench, (k, 3))) == sorted(keep)


# -- SIGINT to the parent alone ---------------------------------------------------------------


def test_sigint_to_the_parent_stops_the_workers_and_keeps_a_consistent_folder(tmp_path):
    n = 24
    data = write_memlens(tmp_path, n)
    run_dir = tmp_path / "interrupted"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with StubServer(answer=colour_answer, latency_s=0.15) as stub:
        cmd = _cli(data, stub.base_url, run_dir, "--workers", "2", "--concurrency", "2")
        proc = _start_and_wait_for_records(cmd, env, run_dir, 4, stderr=subprocess.PIPE)
        workers = _children(proc.pid) if sys.platform.startswith("linux") else []
        proc.send_signal(signal.SIGINT)  # the parent only, not the process group
        _, err = proc.communicate(timeout=20)
        assert proc.returncode != 0, err
        assert not [pid for pid in workers if _alive(pid)], "a worker outlived the run"
        # the folder is consistent: a manifest with the status of what is on disk
        done = len(read_records(run_dir))
        assert 4 <= done < n
        assert load_manifest(run_dir)["status"]["records"] == done
        assert _worker_reports(run_dir) == []
        rerun = subprocess.run(cmd, env=env, check=False, capture_output=True, text=True,
                               timeout=60)
        assert rerun.returncode == 0, rerun.stderr
    ids = _ids(run_dir)
    assert len(ids) == n and len(set(ids)) == n


# -- judging while running, with workers ------------------------------------------------------


def test_workers_judge_their_answers_and_the_parent_judges_earlier_ones(tmp_path):
    data = write_memlens(tmp_path, 8)

    def judge_answer(body):
        p = last_text(body)
        if "kind of mistake" in p:
            return '{"label": "grounding_failure", "reason": "wrong colour"}'
        pred = p.split("Student answer: ")[1].split("\n")[0]
        gold = p.split("Standard answer: ")[1].split("\n")[0]
        return json.dumps({"score": int(pred == gold), "reason": "compared"})

    def config(**kw):
        return _config(tmp_path, data, model_stub.base_url, cache_path=str(tmp_path / "c.db"),
                       **kw)

    with StubServer(answer=colour_answer) as model_stub, \
            StubServer(answer=judge_answer) as judge_stub:
        Runner(config(limit=3)).run_sync()  # answered earlier, without a judge
        assert judge_stub.requests == []
        judged = Runner(config(judge="openai:judge-stub", judge_base_url=judge_stub.base_url,
                               workers=2)).run_sync()
        assert (judged.workers, judged.skipped, judged.done) == (2, 3, 5)
        records = read_records(tmp_path / "run")
        assert len(records) == 8 and all("judge" in r.scores for r in records.values())
        assert all(r.scores["judge"] == r.scores["rule"] for r in records.values())
        manifest = load_manifest(tmp_path / "run")
        assert manifest["judge"]["judged"] == 8
        calls = (len(model_stub.requests), len(judge_stub.requests))
        again = Runner(config(judge="openai:judge-stub", judge_base_url=judge_stub.base_url,
                              workers=2)).run_sync()
        assert again.skipped == 8
        assert (len(model_stub.requests), len(judge_stub.requests)) == calls  # all cached/done
