"""End to end with a real llama.cpp server (xllamacpp) and SmolLM2-135M on the CPU.

Skipped when xllamacpp is not installed or the model was never pulled (``memgauge models
pull smollm2``). SmolLM2 prefills a few hundred tokens a second on two cores, so prompts
are short (the LongMemEval mini fixture, ~250 tokens), answers are capped at 32 tokens, and
one run is shared by the checks that only read it. Over-length prompts cost nothing to
refuse: llama.cpp counts them before computing anything.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("xllamacpp", reason="the local extra (xllamacpp) is not installed")

from memgauge.models._local_files import CATALOGUE, is_pulled, models_dir

if not is_pulled("smollm2"):
    pytest.skip("SmolLM2 is not on this machine: run `memgauge models pull smollm2`",
                allow_module_level=True)

from helpers.datasets import write_memlens

from memgauge.errors import ConfigError
from memgauge.models import ModelSettings, create_model
from memgauge.models._llama_server import LlamaServer
from memgauge.runner import RunConfig, RunStopped, run
from memgauge.scoring import JudgeOptions

TESTS = Path(__file__).resolve().parents[1]
LONGMEMEVAL = TESTS / "fixtures" / "longmemeval" / "mini.json"
SHA = CATALOGUE["smollm2"].sha256
N_CTX = "2048"
MODELS_DIR = models_dir()  # read before any test points MEMGAUGE_CACHE_DIR elsewhere


class Started:
    """Every llama.cpp server started through ``LlamaServer.start`` while it is installed."""

    def __init__(self) -> None:
        self.servers: list[tuple[LlamaServer, subprocess.Popen, str]] = []
        self._real = LlamaServer.start

    def __call__(self, options: Any, floor_s: float = 0.0) -> LlamaServer:
        server = self._real(options, floor_s)
        self.servers.append((server, server._proc, server.address))
        return server


def _refuses(address: str) -> bool:
    host, port = address.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return True
    return False


def _llama_children() -> list[int]:
    """Child processes of this test process that are llama.cpp servers."""
    out = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "memgauge.models._llama_server"],
                         capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


def _assert_all_stopped(started: Started) -> None:
    assert started.servers, "no server was started"
    for server, proc, address in started.servers:
        assert server._proc is None
        assert proc.poll() is not None, "the server's child process still runs"
        assert _refuses(address), f"{address} still accepts connections"
    assert _llama_children() == []


@pytest.fixture
def started(monkeypatch) -> Started:
    rec = Started()
    monkeypatch.setattr(LlamaServer, "start", staticmethod(rec))
    return rec


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines() if x]


def _manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


# -- one answered run, judged by the same model on the same server --------------------------

def _answer_config(root: Path, out: str) -> RunConfig:
    return RunConfig(
        bench="longmemeval", data=str(LONGMEMEVAL), out=str(root / out), progress=False,
        model="local:smollm2", model_options={"n_ctx": N_CTX}, max_tokens=32, limit=3,
        concurrency=4, cache_path=str(root / "responses.sqlite"),
        judge="local:smollm2", judge_model_options={"n_ctx": N_CTX},
        judge_options=JudgeOptions(label_errors=False, max_attempts=2))


@pytest.fixture(scope="module")
def answered(tmp_path_factory) -> dict[str, Any]:
    """Run the LongMemEval mini fixture once (3 questions, answered and judged)."""
    root = tmp_path_factory.mktemp("local")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMGAUGE_CACHE_DIR", str(root / "cache"))  # never the real cache
        mp.setenv("MEMGAUGE_MODELS_DIR", str(MODELS_DIR))
        rec = Started()
        mp.setattr(LlamaServer, "start", staticmethod(rec))
        result = run(_answer_config(root, "a"))
    return {"root": root, "run_dir": root / "a", "result": result, "started": rec}


def test_text_run_end_to_end(answered):
    result, run_dir = answered["result"], answered["run_dir"]
    assert (result.done, result.ok, result.errors) == (3, 3, 0)
    recs = _records(run_dir)
    assert len(recs) == 3
    for rec in recs:
        assert rec["status"] == "ok" and rec["prediction"].strip()
        usage = rec["response"]["usage"]
        assert usage["input_tokens"] > 0 and 0 < usage["output_tokens"] <= 32
        # counted before sending with the model's own tokenizer and chat template: close to
        # what the server itself counted
        assert abs(rec["input_tokens"] - usage["input_tokens"]) <= 8, rec["input_tokens"]
        assert "rule" in rec["scores"]
    model = _manifest(run_dir)["model"]
    assert model["provider"] == "local" and model["model"] == "smollm2"
    assert model["sha256"] == SHA and model["file"] == CATALOGUE["smollm2"].file
    assert (model["n_ctx"], model["slots"], model["vision"]) == (2048, 1, False)
    assert model["engine_version"] and model["prefill_tokens_per_s_at_start"] > 0
    counter = _manifest(run_dir)["token_counter"]
    assert "/tokenize" in counter["text_tokenizer"] and SHA[:16] in counter["text_tokenizer"]
    ident = _manifest(run_dir)["config"]["identity"]
    assert ident["tokenizer"] == "model" and ident["max_context_tokens"] == 2048 - 32
    assert ident["model_options"] == {"n_ctx": N_CTX}


def test_concurrency_is_capped_at_the_slots_and_requests_queue(answered):
    # --concurrency 4 against one slot: every question answered, none timed out
    assert answered["result"].ok == 3
    assert _manifest(answered["run_dir"])["model"]["concurrency"] == 1


def test_judge_shares_the_server_and_never_scores_a_failure_as_zero(answered):
    assert len(answered["started"].servers) == 1  # model and judge: one server
    recs = _records(answered["run_dir"])
    for rec in recs:
        if "judge" in rec["scores"]:
            assert 0.0 <= rec["scores"]["judge"] <= 1.0
            assert rec["score_details"]["judge"]["details"]["reply"]
            assert "judge_error" not in rec["meta"]
        else:
            err = rec["meta"]["judge_error"]
            assert err["kind"] and err["message"] and err["scorer"] == "judge"
    judge = _manifest(answered["run_dir"])["judge"]
    assert judge["model"]["provider"] == "local" and judge["model"]["sha256"] == SHA
    assert judge["judged"] + judge["failures"] == 3
    assert judge["judged"] == sum("judge" in r["scores"] for r in recs)


def test_no_server_is_left_after_a_run(answered):
    _assert_all_stopped(answered["started"])


def test_rerun_into_a_new_folder_is_served_from_the_cache(answered, started, monkeypatch):
    from memgauge.models.openai_compat import OpenAICompatModel

    sent: list[int] = []
    real_send = OpenAICompatModel._send

    async def counting_send(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(1)
        return await real_send(self, *args, **kwargs)

    monkeypatch.setattr(OpenAICompatModel, "_send", counting_send)
    result = run(_answer_config(answered["root"], "b"))
    assert (result.ok, result.errors) == (3, 0)
    recs = _records(answered["root"] / "b")
    assert all(r["response"]["cached"] for r in recs)  # no answer reached the server
    # Only the judge's unreadable verdicts are asked again (issue 29: an unreadable judge
    # reply is never cached): at most its two attempts per question, each a cache miss.
    assert len(sent) <= 2 * len(recs)
    before = {r["question_id"]: r["prediction"] for r in _records(answered["run_dir"])}
    assert {r["question_id"]: r["prediction"] for r in recs} == before
    cache = _manifest(answered["root"] / "b")["cache"]
    assert cache["misses_this_invocation"] == len(sent) and cache["hits_this_invocation"] >= 3
    _assert_all_stopped(started)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_score_command_with_a_local_judge(answered, tmp_path):
    import shutil

    run_dir = tmp_path / "scored"
    shutil.copytree(answered["run_dir"], run_dir)
    tag = uuid.uuid4().hex
    # the run's response cache: the judge's first two attempts are answered from it
    env_cache = {"MEMGAUGE_CACHE_DIR": str(answered["root"])}
    proc = _cli(["score", str(run_dir), "--judge", "local:smollm2", "--judge-model-option",
                 f"n_ctx={N_CTX}", "--name", "judge-local", "--concurrency", "2"], tag,
                env_cache)
    entry = _manifest(run_dir)["judges"]["judge-local"]
    # a verdict SmolLM2 could not give is recorded apart and exits 3, as run does (issue 24)
    assert proc.returncode == (3 if entry["failures"] else 0), proc.stderr
    assert "judged" in proc.stdout and "failures" in proc.stdout
    recs = _records(run_dir)
    for rec in recs:
        if "judge-local" in rec["scores"]:
            assert 0.0 <= rec["scores"]["judge-local"] <= 1.0
        else:
            assert rec["meta"]["judge_error"]["scorer"] == "judge-local"
    assert entry["model"]["provider"] == "local" and entry["judged"] + entry["failures"] == 3
    assert _tagged_processes(tag) == []


# -- runs that cannot work ------------------------------------------------------------------

def _long_items(root: Path, n: int = 4) -> Path:
    """LongMemEval-format items of ~1,500 tokens each: over a 1,024-token context."""
    filler = " ".join(f"On day {d} I walked {d % 7} miles along the river and then went home "
                      "to read." for d in range(90))
    items = [{
        "question_id": f"long{i}", "question_type": "single-session-user",
        "question": f"How far did I walk on day {i}?", "answer": f"{i % 7} miles",
        "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": [f"s{i}"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00"],
        "haystack_sessions": [[{"role": "user", "content": filler, "has_answer": True},
                               {"role": "assistant", "content": "Noted."}]],
        "answer_session_ids": [f"s{i}"]} for i in range(n)]
    path = root / "long.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def test_prompts_over_the_servers_context_stop_the_run(tmp_path, started):
    cfg = RunConfig(bench="longmemeval", data=str(_long_items(tmp_path)), out=str(tmp_path / "r"),
                    progress=False, model="local:smollm2", model_options={"n_ctx": "1024"},
                    max_tokens=32, concurrency=1, cache=False,
                    max_context_tokens=100_000)  # our limit off: the server refuses them
    with pytest.raises(RunStopped) as info:
        run(cfg)
    msg = str(info.value)
    assert "all over the limit" in msg and "by the server's count; its context is 1024" in msg
    recs = _records(tmp_path / "r")
    assert len(recs) >= 3
    for rec in recs:
        err = rec["response"]["error"]
        assert err["kind"] == "context_overflow" and err["attempts"] == 1
        assert rec["input_tokens"] > 1024  # the server's own count
        assert f"prompt has {rec['input_tokens']} tokens" in err["message"]
        assert rec["scores"] == {}
    _assert_all_stopped(started)


def _cli(args: list[str], tag: str, extra_env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMGAUGE_TEST_TAG": tag, **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "memgauge.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


def _tagged_processes(tag: str) -> list[int]:
    """Processes still alive that inherited ``tag`` (the CLI's llama.cpp server would)."""
    alive = []
    needle = f"MEMGAUGE_TEST_TAG={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                alive.append(int(entry.name))
        except OSError:
            continue
    return alive


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_prompts_over_our_own_limit_exit_2_and_leave_no_server(tmp_path):
    tag = uuid.uuid4().hex
    out = tmp_path / "r"
    proc = _cli(["run", "--bench", "longmemeval", "--data", str(_long_items(tmp_path)),
                 "--out", str(out), "--model", "local:smollm2", "--model-option", "n_ctx=1024",
                 "--max-tokens", "32", "--concurrency", "1", "--no-cache"], tag)
    assert proc.returncode == 2, proc.stderr
    # counted before the first request (design 0043): 1024 - 32, refused unsent, no folder
    said = " ".join(proc.stderr.split())
    assert "error: the prompts do not fit the model" in said
    assert "are over 992 (n_ctx 1024 minus --max-tokens 32)" in said
    assert not out.exists()
    assert _tagged_processes(tag) == []


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_images_to_a_text_only_model_exit_2_at_once(tmp_path):
    tag = uuid.uuid4().hex
    data = write_memlens(tmp_path, 3)
    out = tmp_path / "r"
    proc = _cli(["run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
                 "--out", str(out), "--model", "local:smollm2", "--model-option", f"n_ctx={N_CTX}",
                 "--context-mode", "image", "--max-tokens", "32", "--concurrency", "1"], tag)
    assert proc.returncode == 2, proc.stderr
    assert "error:" in proc.stderr and "--context-mode" in proc.stderr
    recs = _records(out)
    assert recs and recs[0]["question_id"] == "q000"
    for rec in recs:
        err = rec["response"]["error"]
        assert err["kind"] == "no_vision" and "no mmproj" in err["message"]  # refused unsent
        assert rec["scores"] == {} and rec["prediction"] is None  # nothing scored
    assert _tagged_processes(tag) == []


def test_caption_mode_without_captions_is_refused_and_the_server_stopped(tmp_path, started):
    # MemLens carries no captions: every image would be "[Image]" (design 0043)
    data = write_memlens(tmp_path, 1)
    with pytest.raises(ConfigError, match="add captioner \\(e.g. captioner vlm:"):
        run(RunConfig(
            bench="memlens", data=str(data), image_dir=str(tmp_path), out=str(tmp_path / "r"),
            progress=False, model="local:smollm2", model_options={"n_ctx": N_CTX},
            context_mode="caption", max_tokens=16, cache=False))
    assert not (tmp_path / "r").exists()
    _assert_all_stopped(started)


def test_the_smallest_allowed_context_starts(started):
    model = create_model("local:smollm2", ModelSettings(model_options={"n_ctx": "512"}))
    import asyncio

    asyncio.run(model.aclose())
    assert model.context_tokens == 512


def test_a_tier_over_the_models_context_is_refused_before_the_first_request(tmp_path, started):
    # the 8k tier on SmolLM2 (n_ctx 8192) used to run 142 s before its overflows stopped it:
    # counted with the model's tokenizer first, it is refused (design 0043)
    from memgauge.benchmarks.synth import SynthConfig, generate

    generate(SynthConfig(out=str(tmp_path / "b"), questions=2, tiers=["8k"], seed=0))
    with pytest.raises(ConfigError, match=r"tier 8k prompts do not fit the model: 2 of the 2 "
                                          r"counted are over 7680 \(n_ctx 8192 minus") as info:
        run(RunConfig(bench="synth", data=str(tmp_path / "b"), tier="8k",
                      out=str(tmp_path / "r"), progress=False, model="local:smollm2",
                      context_mode="caption", cache=False))
    assert "llama.cpp /tokenize" in str(info.value)
    assert not (tmp_path / "r").exists()
    _assert_all_stopped(started)
