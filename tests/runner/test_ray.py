"""``--executor ray``: episodes answered as Ray tasks (runner/_ray.py, design 0033).

Covered, with one local in-process Ray for the module: the same records (field by field,
timings aside), status and benchmark counts as the local runner, and what the manifest says
about the execution (also through the CLI's flags); a task whose worker process is killed midway
(retried by Ray: every
question once, nothing lost); a task that dies for good (the run raises, what it wrote is
kept, a rerun asks only the rest); a task that raises (its own error, the other part kept);
``--limit`` in one task; the response cache from the tasks (a rerun is all hits);
and, without Ray, the errors before anything runs: the missing extra (one line naming
``pip install "memgauge[ray]"``, exit 2), a malformed ``--ray-address``, a local: model.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.datasets import colour_answer, memlens_items, write_memlens
from helpers.stub_server import StubServer, question_of
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.errors import ConfigError, InputError, MemgaugeError
from memgauge.runner import RunConfig, Runner, load_manifest, read_records
from memgauge.runner._survey import Survey

# -- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    # address="local": always a fresh in-process Ray, never a cluster some other process
    # left registered on the machine (or one RAY_ADDRESS names)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _config(tmp_path: Path, data: Path, base_url: str, out: str, **kw: Any) -> RunConfig:
    kw.setdefault("cache", False)
    return RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                     out=str(tmp_path / out), model="openai:stub-vlm", base_url=base_url,
                     progress=False, retry_base_s=0.01, **kw)


def _lines(run_dir: Path) -> list[dict]:
    path = run_dir / "records.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


_TIMED = ("latency_s", "answer_s", "judge_s", "seconds", "ingest_s")


def _untimed(obj: Any) -> Any:
    """A record's JSON with every timing left out (they differ from run to run)."""
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if k not in _TIMED and k != "timings"}
    if isinstance(obj, list):
        return [_untimed(v) for v in obj]
    return obj


def _records(run_dir: Path) -> dict[str, dict]:
    return {qid: _untimed(rec.model_dump(mode="json"))
            for qid, rec in read_records(run_dir).items()}


def _kill_a_task_when(run_dir: Path, records: int, killed: list[int]) -> threading.Thread:
    """Once ``records`` lines are on disk, SIGKILL the worker process of Ray task 0."""
    def watch() -> None:
        deadline = time.monotonic() + 30
        task_file = run_dir / ".ray-task-0.json"
        while time.monotonic() < deadline:
            # Count whole lines only: a record being written is half a line, and reading it
            # as JSON stopped the watcher once (so nothing was killed).
            done = (run_dir / "records.jsonl").read_text().count("\n") if (
                run_dir / "records.jsonl").exists() else 0
            if done >= records and task_file.exists():
                pid = json.loads(task_file.read_text())["pid"]
                killed.append(done)
                os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


# -- the same results as the local runner -----------------------------------------------------


def test_ray_tasks_give_the_same_records_as_the_local_runner(tmp_path, ray_local):
    n = 24
    data = write_memlens(tmp_path, n)
    with StubServer(answer=colour_answer) as stub:
        local = Runner(_config(tmp_path, data, stub.base_url, "local", concurrency=4)).run_sync()
        before = len(stub.requests)
        res = Runner(_config(tmp_path, data, stub.base_url, "ray", concurrency=4,
                             executor="ray", workers=2)).run_sync()
        sent = [question_of(b) for b in stub.requests[before:]]
    assert len(sent) == n and len(set(sent)) == n  # one request per question, in all tasks
    assert (res.done, res.ok, res.errors, res.skipped) == (n, n, 0, 0)
    assert local.ok == n and res.workers == 2
    want = _records(tmp_path / "local")
    got = _records(tmp_path / "ray")
    assert sorted(got) == sorted(want) == sorted(f"q{i:03d}" for i in range(n))
    for qid in want:
        assert got[qid] == want[qid], qid
    scores = [r["scores"]["rule"] for r in want.values()]
    assert 0 < sum(scores) < n  # mixed, so the comparison bites
    m_local, m_ray = load_manifest(tmp_path / "local"), load_manifest(tmp_path / "ray")
    assert m_ray["status"] == m_local["status"] == {"records": n, "ok": n, "errors": 0}
    assert m_ray["benchmark"]["counts"] == m_local["benchmark"]["counts"]
    assert m_ray["benchmark"]["inputs"] == m_local["benchmark"]["inputs"]
    assert m_ray["config_hash"] == m_local["config_hash"]  # the executor is not the identity
    assert m_ray["execution"] == {"executor": "ray", "tasks": 2, "ray_address": None,
                                  "nodes": 1}
    assert not list((tmp_path / "ray").glob(".ray-task-*"))


def test_concurrency_below_the_task_count_reduces_the_tasks(tmp_path, ray_local):
    data = write_memlens(tmp_path, 4)
    with StubServer(answer=colour_answer) as stub:
        res = Runner(_config(tmp_path, data, stub.base_url, "run", concurrency=1,
                             executor="ray", workers=3)).run_sync()
    assert res.ok == 4 and res.workers == 1
    assert res.notes == ["3 Ray tasks reduced to 1: concurrency 1 is the total"]  # fields


def test_the_cli_flags_reach_the_run_and_its_manifest(tmp_path, ray_local):
    n = 6
    data = write_memlens(tmp_path, n)
    out = tmp_path / "cli"
    with StubServer(answer=colour_answer) as stub:
        result = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
            "--out", str(out), "--model", "openai:stub-vlm", "--base-url", stub.base_url,
            "--no-cache", "--executor", "ray", "--ray-address", "auto", "--workers", "2"])
        assert len(stub.requests) == n
    assert result.exit_code == 0, result.output
    assert f"{n} answered now ({n} ok, 0 errors)" in result.output
    # the Ray this test module started is used (nothing new is started); the address is noted
    assert load_manifest(out)["execution"] == {"executor": "ray", "tasks": 2,
                                               "ray_address": "auto", "nodes": 1}


# -- a task killed midway ---------------------------------------------------------------------


def _answered_once_with_part_0_killed(tmp_path: Path, **kw: Any) -> None:
    """24 questions over two parts; the process of part 0 is SIGKILLed after 3 records."""
    n = 24
    data = write_memlens(tmp_path, n)
    killed: list[int] = []
    with StubServer(answer=colour_answer, latency_s=0.1) as stub:
        watcher = _kill_a_task_when(tmp_path / "run", 3, killed)
        res = Runner(_config(tmp_path, data, stub.base_url, "run", concurrency=2,
                             executor="ray", workers=2, **kw)).run_sync()
        watcher.join()
        sent = len(stub.requests)
    assert killed, "part 0's process was not killed"
    ids = [x["question_id"] for x in _lines(tmp_path / "run")]
    assert sorted(ids) == sorted(f"q{i:03d}" for i in range(n))  # each once: none lost
    # the retry skipped what its first attempt wrote: one line per question was appended,
    # and only the request in flight when it died (the part's one slot) was sent again
    assert (res.done, res.ok, res.errors) == (n, n, 0)
    assert n <= sent <= n + 1
    assert load_manifest(tmp_path / "run")["status"] == {"records": n, "ok": n, "errors": 0}


def test_a_killed_task_is_retried_and_every_question_is_answered_once(tmp_path, ray_local):
    _answered_once_with_part_0_killed(tmp_path)


def test_a_task_that_dies_for_good_keeps_what_it_wrote_and_a_rerun_completes(
        tmp_path, ray_local, monkeypatch):
    from memgauge.runner import _ray

    monkeypatch.setattr(_ray, "TASK_RETRIES", 0)
    n = 24
    data = write_memlens(tmp_path, n)
    killed: list[int] = []
    run_dir = tmp_path / "run"
    with StubServer(answer=colour_answer, latency_s=0.1) as stub:
        config = _config(tmp_path, data, stub.base_url, "run", concurrency=2, executor="ray",
                         workers=2)
        watcher = _kill_a_task_when(run_dir, 3, killed)
        with pytest.raises(RuntimeError, match="rerun the same command to resume"):
            Runner(config).run_sync()
        watcher.join()
        assert killed
        kept = {x["question_id"] for x in _lines(run_dir)}
        assert killed[0] <= len(kept) < n  # what was on disk when it died is still there
        assert load_manifest(run_dir)["status"]["records"] == len(kept)
        before = len(stub.requests)
        res = Runner(config).run_sync()
        asked = {question_of(b) for b in stub.requests[before:]}
    assert res.skipped == len(kept) and res.done == n - len(kept)
    assert len(asked) == n - len(kept)  # only the questions left to do were sent
    ids = [x["question_id"] for x in _lines(run_dir)]
    assert sorted(ids) == sorted(f"q{i:03d}" for i in range(n))


def test_a_task_that_raises_reports_its_error_and_the_others_keep_their_records(
        tmp_path, ray_local, monkeypatch):
    n, bad = 12, 7
    items = memlens_items(tmp_path, n)
    del items[bad]["question"]
    data = tmp_path / "dataset.json"
    data.write_text(json.dumps(items), encoding="utf-8")
    with StubServer(answer=colour_answer) as stub:
        with pytest.raises(InputError) as local:
            Runner(_config(tmp_path, data, stub.base_url, "local")).run_sync()
        assert stub.requests == []  # found by the read before the first request (0043)
        # an item that turns bad only in a task (the parent's read passed) fails the run
        monkeypatch.setattr(Runner, "survey", lambda self, s: Survey(planned=n))
        with pytest.raises(MemgaugeError) as ray_run:
            Runner(_config(tmp_path, data, stub.base_url, "ray", executor="ray",
                           workers=2)).run_sync()
    assert str(ray_run.value) == str(local.value)  # the task's own error, not Ray's wrapper
    ids = [x["question_id"] for x in _lines(tmp_path / "ray")]
    assert len(ids) == len(set(ids)) and f"q{bad:03d}" not in ids
    assert {f"q{i:03d}" for i in range(0, n, 2)} <= set(ids)  # the other part: all of it
    assert load_manifest(tmp_path / "ray")["status"]["records"] == len(ids)
    assert not list((tmp_path / "ray").glob(".ray-task-*"))


def test_a_limited_run_answers_in_one_task_with_a_note(tmp_path, ray_local):
    data = write_memlens(tmp_path, 6)
    with StubServer(answer=colour_answer) as stub:
        res = Runner(_config(tmp_path, data, stub.base_url, "run", executor="ray", workers=2,
                             limit=4)).run_sync()
        assert len(stub.requests) == 4
    assert res.ok == 4 and res.workers == 1
    assert res.notes == [("workers 2 ignored: limit counts questions in file order, so a "
                         "limited run answers in one Ray task")]
    assert sorted(read_records(tmp_path / "run")) == [f"q{i:03d}" for i in range(4)]


# -- the response cache -----------------------------------------------------------------------


def test_the_response_cache_works_from_the_tasks(tmp_path, ray_local):
    n = 10
    data = write_memlens(tmp_path, n)
    cache = str(tmp_path / "cache.sqlite")
    with StubServer(answer=colour_answer) as stub:
        sent = []
        for out in ("cold", "warm"):
            res = Runner(_config(tmp_path, data, stub.base_url, out, cache=True,
                                 cache_path=cache, executor="ray", workers=2)).run_sync()
            assert res.ok == n
            sent.append(len(stub.requests))
    # the warm run asked nothing. (The cold run's count is not the claim: a worker Ray
    # restarts under memory pressure resends what was in flight, and the test once failed
    # on a loaded machine counting n + 1 there.)
    assert sent[0] >= n and sent[1] == sent[0]
    assert load_manifest(tmp_path / "warm")["cache"] == {
        "enabled": True, "hits_this_invocation": n, "misses_this_invocation": 0}
    assert all(r.response.cached for r in read_records(tmp_path / "warm").values())


# -- the start-up: phase stamps, warm-up tasks, failures before the tasks ---------------------


def test_the_phase_stamps_show_every_step_with_the_parts_started_after_the_warm_up(
        tmp_path, ray_local, monkeypatch):
    stamps_file = tmp_path / "phases.json"
    monkeypatch.setenv("MEMGAUGE_RAY_PHASES", str(stamps_file))
    data = write_memlens(tmp_path, 6)
    with StubServer(answer=colour_answer) as stub:
        res = Runner(_config(tmp_path, data, stub.base_url, "run", concurrency=2,
                             executor="ray", workers=2)).run_sync()
    assert res.ok == 6
    stamps = json.loads(stamps_file.read_text())
    assert stamps["warm_ups"] == 2
    driver = dict(stamps["driver"])
    order = ["run_with_ray", "prepared", "ray.init", "setup", "warm", "submitted",
             "tasks returned", "finished", "ray.shutdown"]
    assert [name for name, _ in stamps["driver"] if name != "ray imported"] == order
    assert driver["run_with_ray"] <= driver["ray imported"] <= driver["ray.init"]
    assert [driver[k] for k in order] == sorted(driver[k] for k in order)
    assert sorted(stamps["tasks"]) == ["0", "1"]
    for marks in stamps["tasks"].values():
        task = dict(marks)
        # each part began once its warm-up was done, and answered after its own setup
        assert driver["warm"] <= task["task start"] <= task["task setup"]
        assert task["task setup"] <= task["task first send"] <= task["task answered"]
        assert task["task answered"] <= driver["tasks returned"]


def test_no_more_warm_ups_than_the_cluster_has_cpus(tmp_path, ray_local, monkeypatch):
    stamps_file = tmp_path / "phases.json"
    monkeypatch.setenv("MEMGAUGE_RAY_PHASES", str(stamps_file))
    data = write_memlens(tmp_path, 6)
    with StubServer(answer=colour_answer) as stub:
        res = Runner(_config(tmp_path, data, stub.base_url, "run", concurrency=3,
                             executor="ray", workers=3)).run_sync()
    assert res.ok == 6 and res.workers == 3
    stamps = json.loads(stamps_file.read_text())
    assert stamps["warm_ups"] == 2  # the module's Ray has 2 CPUs; 3 parts all answered
    assert sorted(stamps["tasks"]) == ["0", "1", "2"]


def test_without_the_variable_no_stamps_are_written(tmp_path, ray_local, monkeypatch):
    monkeypatch.delenv("MEMGAUGE_RAY_PHASES", raising=False)
    monkeypatch.chdir(tmp_path)
    data = write_memlens(tmp_path, 2)
    with StubServer(answer=colour_answer) as stub:
        Runner(_config(tmp_path, data, stub.base_url, "run", executor="ray")).run_sync()
    assert not list(tmp_path.rglob("*phases*"))


def test_an_endpoint_failure_before_the_tasks_is_the_local_error_and_leaves_nothing_running(
        tmp_path, ray_local):
    data = write_memlens(tmp_path, 2)
    closed = "http://127.0.0.1:9/v1"  # nothing listens: the pre-flight fails
    with pytest.raises(MemgaugeError) as local:
        Runner(_config(tmp_path, data, closed, "local")).run_sync()
    with pytest.raises(MemgaugeError) as ray_run:
        Runner(_config(tmp_path, data, closed, "ray", executor="ray", workers=2)).run_sync()
    assert type(ray_run.value) is type(local.value)
    assert str(ray_run.value) == str(local.value).replace(str(tmp_path / "local"),
                                                          str(tmp_path / "ray"))
    assert not [t for t in threading.enumerate() if t.name == "ray-import" and t.is_alive()]
    assert not (tmp_path / "ray" / "records.jsonl").exists()
    with StubServer(answer=colour_answer) as stub:  # the folder was left unlocked
        res = Runner(_config(tmp_path, data, stub.base_url, "ray", executor="ray")).run_sync()
    assert res.ok == 2


def test_a_folder_error_is_raised_before_ray_is_connected(tmp_path, ray_local, monkeypatch):
    from memgauge.runner import _ray

    data = write_memlens(tmp_path, 2)
    with StubServer(answer=colour_answer) as stub:
        Runner(_config(tmp_path, data, stub.base_url, "run")).run_sync()
        connects: list[int] = []
        monkeypatch.setattr(_ray.RayStart, "connect",
                            lambda self: connects.append(1) or pytest.fail("connected"))
        with pytest.raises(ConfigError, match="holds a run with a different configuration"):
            Runner(_config(tmp_path, data, stub.base_url, "run", executor="ray",
                           max_tokens=7)).run_sync()
    assert connects == []


def test_a_run_that_starts_its_own_ray_shuts_it_down_and_exits_cleanly(tmp_path):
    """The path of a real `memgauge run`: Ray started by the run, disconnected on a thread
    while the final manifest is written (an ObjectRef freed after that would end the
    process with an error)."""
    pytest.importorskip("ray")
    import subprocess

    n = 6
    data = write_memlens(tmp_path, n)
    out = tmp_path / "run"
    env = dict(os.environ, RAY_ADDRESS="local")  # a Ray of its own, never a registered one
    with StubServer(answer=colour_answer) as stub:
        proc = subprocess.run(
            [sys.executable, "-m", "memgauge.cli", "run", "--bench", "memlens", "--data",
             str(data), "--image-dir", str(tmp_path), "--out", str(out), "--model",
             "openai:stub-vlm", "--base-url", stub.base_url, "--no-cache", "--executor", "ray",
             "--workers", "2"], check=False, capture_output=True, text=True, env=env,
            timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "already been shutdown" not in proc.stderr
    assert f"{n} answered now ({n} ok, 0 errors)" in proc.stdout + proc.stderr
    assert load_manifest(out)["status"] == {"records": n, "ok": n, "errors": 0}


NO_CLUSTER = ("Could not find any running Ray instance. Please specify the one to connect to "
              "by setting `--address` flag or `RAY_ADDRESS` environment variable.")


def _ray_runs_on_this_machine() -> bool:
    """`auto` also finds a cluster by its GCS process (this module's own Ray is one)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True  # cannot tell: assume one
    names = []
    for comm in proc.glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            names.append(comm.read_text())
    return any("gcs_server" in name for name in names)


@pytest.mark.parametrize("real", [False, True])
def test_auto_without_a_cluster_is_one_line_naming_the_fix_before_any_request(tmp_path, real):
    """Issue 29: `--ray-address auto` with no Ray running was a 120-line traceback, exit 1.
    Not real: ``ray.init`` raises what Ray raises then (whatever runs on the machine)."""
    pytest.importorskip("ray")
    if real and _ray_runs_on_this_machine():
        pytest.skip("a Ray cluster runs on this machine: `auto` would find it")
    import subprocess

    data = write_memlens(tmp_path, 2)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_TMPDIR"] = str(tmp_path / "no-ray")  # where `auto` looks first: nothing there
    patch = "" if real else (
        "import ray\n"
        "def init(*a, **k):\n"
        f"    raise ConnectionError({NO_CLUSTER!r})\n"
        "ray.init = init\n")
    code = patch + "import sys\nfrom memgauge.cli import main\nsys.argv[0] = 'memgauge'\nmain()\n"
    with StubServer(answer=colour_answer) as stub:
        proc = subprocess.run(
            [sys.executable, "-c", code, "run", "--bench", "memlens", "--data",
             str(data), "--image-dir", str(tmp_path), "--out", str(tmp_path / "run"),
             "--model", "openai:stub-vlm", "--base-url", stub.base_url, "--no-cache",
             "--executor", "ray", "--ray-address", "auto"], check=False, capture_output=True,
            text=True, env=env, timeout=240)
        assert stub.requests == []
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [x for x in (proc.stdout + proc.stderr).splitlines() if x.strip()]
    assert "Traceback" not in proc.stderr
    assert lines[-1].startswith("error: --ray-address auto: no Ray cluster is running"), lines
    assert "`ray start --head`" in lines[-1] and "drop --ray-address" in lines[-1]
    assert not (tmp_path / "run" / "records.jsonl").exists()


@pytest.mark.parametrize("users_value", [None, "500"])
def test_the_driver_s_task_events_are_off_only_while_ray_init_reads_its_config(
        tmp_path, monkeypatch, users_value):
    """Left on, the driver's ray.shutdown() waits about 0.25 s more for Ray's task-event
    reporter (design 0033): off for the driver's ray.init, unless the user set it, and not
    left in the environment for what the driver starts later."""
    ray = pytest.importorskip("ray")
    from memgauge.runner._ray import TASK_EVENTS_ENV, Phases, RayStart

    if users_value is None:
        monkeypatch.delenv(TASK_EVENTS_ENV, raising=False)
    else:
        monkeypatch.setenv(TASK_EVENTS_ENV, users_value)
    seen: list[str | None] = []

    class Stop(Exception):
        pass

    def init(**kw: Any) -> None:
        seen.append(os.environ.get(TASK_EVENTS_ENV))
        raise Stop

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    data = write_memlens(tmp_path, 1)
    start = RayStart(_config(tmp_path, data, "http://127.0.0.1:9/v1", "run", executor="ray"),
                     1, Phases())
    with pytest.raises(Stop):
        start.connect()
    assert seen == ["0" if users_value is None else users_value]
    assert os.environ.get(TASK_EVENTS_ENV) == users_value


def test_a_configuration_error_does_not_import_ray(tmp_path):
    pytest.importorskip("ray")
    data = write_memlens(tmp_path, 1)
    # in a fresh interpreter: this test process may have imported Ray already
    code = ("import sys\n"
            "from memgauge.errors import ConfigError\n"
            "from memgauge.runner import RunConfig\n"
            "try:\n"
            f"    RunConfig(bench='memlens', data={str(data)!r}, out={str(tmp_path / 'r')!r},\n"
            "              model='openai:m', base_url='http://127.0.0.1:9/v1', executor='ray',\n"
            "              ray_address='10.0.0.1:6379').check()\n"
            "except ConfigError as exc:\n"
            "    print('refused:', exc)\n"
            "print('ray imported:', 'ray' in sys.modules)\n")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "refused: ray_address '10.0.0.1:6379'" in out  # the field: no flag was given
    assert "ray imported: False" in out  # `import ray` (~0.5 s) waits for a run that starts


# -- errors before anything runs (no Ray needed) ----------------------------------------------


def test_missing_ray_extra_is_one_clear_error_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    data = write_memlens(tmp_path, 2)
    with pytest.raises(ConfigError, match=r'pip install "memgauge\[ray\]"'):
        Runner(_config(tmp_path, data, "http://127.0.0.1:9/v1", "run", executor="ray"))
    out = tmp_path / "cli"
    result = CliRunner().invoke(app, [
        "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
        "--out", str(out), "--model", "openai:stub-vlm", "--base-url", "http://127.0.0.1:9/v1",
        "--executor", "ray"])
    assert result.exit_code == 2
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and 'pip install "memgauge[ray]"' in lines[0]
    assert not out.exists()  # nothing ran


@pytest.mark.parametrize(("kw", "message"), [
    ({"executor": "dask"}, "^executor 'dask': use one of local, ray"),
    ({"ray_address": "auto"}, "^ray_address applies to executor ray only"),
    ({"executor": "ray", "ray_address": "10.0.0.1:6379"}, "use auto .* or ray://HOST:PORT"),
    ({"executor": "ray", "model": "local:smollm2"}, "a local: model runs in this process"),
    ({"ray_keep_warm_s": 60}, "^ray_keep_warm_s applies to executor ray only"),
    ({"executor": "ray", "ray_keep_warm_s": 0}, "^ray_keep_warm_s 0: must be seconds"),
    ({"executor": "ray", "ray_keep_warm_s": float("inf")}, "^ray_keep_warm_s inf: must be"),
    ({"executor": "ray", "ray_keep_warm_s": 8 * 86400}, "at most 604800"),
])
def test_configuration_mistakes_are_refused(tmp_path, kw, message):
    if kw.get("executor") == "ray":
        pytest.importorskip("ray")
    data = write_memlens(tmp_path, 1)
    base = {"model": "openai:stub-vlm"} | kw
    with pytest.raises(ConfigError, match=message):
        RunConfig(bench="memlens", data=str(data), out=str(tmp_path / "run"),
                  base_url="http://127.0.0.1:9/v1", **base).check()


# -- --ray-keep-warm: named detached actors kept between runs ---------------------------------


@pytest.fixture
def warm_ray(ray_local):
    """The module's Ray; every memgauge actor a test left is killed after it (they hold a CPU
    each, and the module's Ray has two)."""
    yield ray_local
    for entry in ray_local.util.list_named_actors(all_namespaces=True):
        if entry["namespace"] == "memgauge":
            with contextlib.suppress(ValueError):
                ray_local.kill(ray_local.get_actor(entry["name"], namespace="memgauge"))


def _warm_actors(ray: Any, slots: int) -> list[tuple[str, int]]:
    """(actor id, process id) of each slot actor the installed code would use."""
    from memgauge.runner._ray_warm import NAMESPACE, actor_name

    found = []
    for k in range(slots):
        actor = ray.get_actor(actor_name(k), namespace=NAMESPACE)
        found.append((actor._actor_id.hex(), ray.get(actor.pid.remote())))
    return found


def test_warm_actors_give_the_local_records_and_a_second_run_reuses_them(tmp_path, warm_ray):
    n = 24
    data = write_memlens(tmp_path, n)
    with StubServer(answer=colour_answer) as stub:
        Runner(_config(tmp_path, data, stub.base_url, "local", concurrency=4)).run_sync()
        runs = {}
        for out in ("first", "second"):
            before = len(stub.requests)
            res = Runner(_config(tmp_path, data, stub.base_url, out, concurrency=4,
                                 executor="ray", workers=2, ray_keep_warm_s=60)).run_sync()
            assert (res.done, res.ok, res.errors) == (n, n, 0)
            sent = [question_of(b) for b in stub.requests[before:]]
            assert len(sent) == len(set(sent)) == n  # one request per question
            runs[out] = _warm_actors(warm_ray, 2)
    assert runs["first"] == runs["second"]  # the same actors, in the same processes
    assert len({pid for _, pid in runs["first"]}) == 2
    want = _records(tmp_path / "local")
    for out in ("first", "second"):
        assert _records(tmp_path / out) == want, out
    execution = [load_manifest(tmp_path / out)["execution"] for out in ("first", "second")]
    assert [e["warm_actors"] for e in execution] == [{"slots": 2, "reused": 0},
                                                      {"slots": 2, "reused": 2}]
    assert execution[1]["keep_warm_s"] == 60
    assert load_manifest(tmp_path / "second")["config_hash"] == \
        load_manifest(tmp_path / "local")["config_hash"]


def test_a_changed_fingerprint_makes_new_actors(tmp_path, warm_ray, monkeypatch):
    from memgauge.runner import _ray_warm

    data = write_memlens(tmp_path, 4)
    with StubServer(answer=colour_answer) as stub:
        config = _config(tmp_path, data, stub.base_url, "a", concurrency=1, executor="ray",
                         ray_keep_warm_s=60)
        Runner(config).run_sync()
        old = _warm_actors(warm_ray, 1)
        monkeypatch.setattr(_ray_warm, "code_fingerprint", lambda: "0123456789abcdef")
        res = Runner(_config(tmp_path, data, stub.base_url, "b", concurrency=1,
                             executor="ray", ray_keep_warm_s=60)).run_sync()
        new = _warm_actors(warm_ray, 1)
    assert res.ok == 4
    assert _ray_warm.actor_name(0).endswith("-0123456789abcdef-slot0")
    assert new[0][0] != old[0][0] and new[0][1] != old[0][1]
    assert load_manifest(tmp_path / "b")["execution"]["warm_actors"] == {"slots": 1,
                                                                         "reused": 0}


def test_the_fingerprint_follows_a_source_file_s_size_and_mtime(tmp_path):
    from memgauge.runner._ray_warm import source_fingerprint

    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "m.py"
    module.write_text("x = 1\n")
    os.utime(module, ns=(10**18, 10**18))
    first = source_fingerprint(tmp_path)
    assert source_fingerprint(tmp_path) == first
    os.utime(module, ns=(10**18 + 1, 10**18 + 1))
    touched = source_fingerprint(tmp_path)
    module.write_text("x = 12\n")
    os.utime(module, ns=(10**18 + 1, 10**18 + 1))
    assert len({first, touched, source_fingerprint(tmp_path)}) == 3


def test_idle_warm_actors_end_themselves(tmp_path, warm_ray):
    from memgauge.runner._ray_warm import NAMESPACE, actor_name

    data = write_memlens(tmp_path, 2)
    with StubServer(answer=colour_answer) as stub:
        res = Runner(_config(tmp_path, data, stub.base_url, "run", concurrency=1,
                             executor="ray", ray_keep_warm_s=0.5)).run_sync()
    assert res.ok == 2
    deadline = time.monotonic() + 60  # a bound for a loaded machine, not a timing claim
    while time.monotonic() < deadline:
        try:
            warm_ray.get_actor(actor_name(0), namespace=NAMESPACE)
        except ValueError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the idle actor is still alive")


def test_a_killed_warm_actor_s_part_is_finished(tmp_path, warm_ray):
    _answered_once_with_part_0_killed(tmp_path, ray_keep_warm_s=60)


def test_a_bad_keep_warm_value_is_one_cli_error_before_anything_runs(tmp_path):
    pytest.importorskip("ray")
    data = write_memlens(tmp_path, 2)
    out = tmp_path / "cli"
    result = CliRunner().invoke(app, [
        "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
        "--out", str(out), "--model", "openai:stub-vlm", "--base-url", "http://127.0.0.1:9/v1",
        "--executor", "ray", "--ray-keep-warm", "-5"])
    assert result.exit_code == 2
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "--ray-keep-warm -5: must be seconds" in lines[0]
    assert not out.exists()  # nothing ran
