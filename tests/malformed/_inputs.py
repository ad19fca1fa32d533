"""Valid inputs for every loader and run-folder file, and the check every malformed case
must pass: through the real CLI, exit status 2 with a one-line error naming the file (or a
legitimate acceptance that ran something), and never a traceback."""

from __future__ import annotations

import copy
import json
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

from helpers.datasets import make_png, memlens_items
from typer.testing import CliRunner

from memgauge.cli import EXIT_CONFIG, app
from memgauge.schema import BenchmarkInfo, Episode, Question, Session, Turn

CASES = {"hand-written": 0, "hypothesis": 0}  # counted by check(); printed by conftest
_runner = CliRunner()
DEEP = 100_000  # levels: deeper than any parser's limit


def deep(levels: int = DEEP, open_: str = "[", close: str = "]") -> str:
    return open_ * levels + close * levels


def forged_png(path: Path, width: int, height: int) -> Path:
    """A real 1x1 PNG whose IHDR says ``width`` x ``height`` (CRC fixed): a few bytes on disk
    that PIL reads as that size, as a decompression bomb's header does."""
    make_png(path, "red", (1, 1))
    raw = bytearray(path.read_bytes())
    raw[16:24] = struct.pack(">II", width, height)
    raw[29:33] = struct.pack(">I", zlib.crc32(bytes(raw[12:29])))
    path.write_bytes(bytes(raw))
    return path


def data_url(path: Path) -> str:
    import base64

    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


# --- valid inputs ----------------------------------------------------------------------------

def memlens_valid(root: Path) -> list[dict[str, Any]]:
    return memlens_items(root, 2)  # images img/mug0.png, img/mug1.png under root


def longmemeval_valid() -> list[dict[str, Any]]:
    return [{
        "question_id": "lq1", "question_type": "single-session-user",
        "question": "Where did I go?", "answer": "Paris", "question_date": "2023/05/30",
        "haystack_session_ids": ["s1", "s2"], "haystack_dates": ["2023/05/01", "2023/05/02"],
        "haystack_sessions": [
            [{"role": "user", "content": "I went to Paris.", "has_answer": True},
             {"role": "assistant", "content": "Lovely."}],
            [{"role": "user", "content": "Haiku please."},
             {"role": "assistant", "content": "Rain on the roof."}]],
        "answer_session_ids": ["s1"]}]


def locomo_valid() -> dict[str, Any]:
    return {"sample_id": "c1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1 May 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I like green tea."},
                      {"speaker": "Bob", "dia_id": "D1:2", "text": "Noted."}]},
        "qa": [{"question": "What does Ann like?", "answer": "green tea",
                "evidence": ["D1:1"], "category": 4}]}


def synth_episode(eid: str = "e1", qid: str = "sq1") -> dict[str, Any]:
    ep = Episode(episode_id=eid, benchmark=BenchmarkInfo(name="synth", tier="8k"),
                 sessions=[Session(session_id="s1", turns=[
                     Turn(turn_id="t1", role="user", text="My locker is 42.")])],
                 questions=[Question(question_id=qid, text="Which locker?", answer="42",
                                     answer_type="integer", ability="information_extraction")])
    return json.loads(ep.model_dump_json())


def write_synth(root: Path, episodes: list[Any] | None = None, manifest: Any = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if manifest is None:
        manifest = {"tiers": {"8k": {"questions": 1}}, "digest": "d", "generator_version": "1"}
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (root / "manifest.json").write_text(text)
    tier = root / "tiers" / "8k"
    tier.mkdir(parents=True, exist_ok=True)
    lines = [e if isinstance(e, str) else json.dumps(e) for e in
             (episodes if episodes is not None else [synth_episode()])]
    (tier / "episodes.jsonl").write_text("".join(line + "\n" for line in lines))
    return root


PREDICTIONS = ["q000", "q001", "lq1", "c1:q0", "sq1", "sq2"]


def predictions(root: Path) -> Path:
    path = root / "preds.json"
    path.write_text(json.dumps([{"question_id": q, "prediction": "red"} for q in PREDICTIONS]))
    return path


def run_args(bench: str, data: Path | str, root: Path, *extra: str,
             model: str | None = None) -> list[str]:
    return ["run", "--bench", bench, "--data", str(data), "--out", str(root / "out"),
            "--model", model or f"replay:{predictions(root)}", *extra]


_RUN_CACHE: dict[str, Path] = {}


def valid_run(root: Path, name: str = "run") -> Path:
    """A finished run folder (two memlens questions, replayed), copied to ``root / name``."""
    base = _RUN_CACHE.get("base")
    if base is None or not base.exists():
        import tempfile

        src = Path(tempfile.mkdtemp(prefix="memgauge-malformed-"))
        data = src / "dataset.json"
        data.write_text(json.dumps(memlens_valid(src)))
        result = _runner.invoke(app, run_args("memlens", data, src))
        assert result.exit_code == 0, result.output
        base = _RUN_CACHE["base"] = src / "out"
    dest = root / name
    shutil.copytree(base, dest)
    (dest / ".lock").unlink(missing_ok=True)
    return dest


# --- the check -------------------------------------------------------------------------------

def check(args: list[str], *, names: str | None, kind: str = "hand-written",
          may_accept: bool = False, env: dict[str, str] | None = None) -> str:
    """Run the CLI. Refused: exit 2, one line naming ``names`` (a file's name), no traceback.
    With ``may_accept`` an acceptance is fine too, if it ran something (a ``run`` that wrote
    records, another command that printed output). Returns the output."""
    CASES[kind] += 1
    result = _runner.invoke(app, args, env=env)
    out = result.output
    raised = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not raised, f"{args}: raised {result.exception!r}\n{out}"
    assert "Traceback" not in out, out
    if result.exit_code == EXIT_CONFIG:
        errors = [line for line in out.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, f"{args}: expected one error line\n{out}"
        if names is not None:
            assert names in errors[0], f"{args}: the error does not name {names!r}\n{out}"
        return out
    assert may_accept, f"{args}: exit {result.exit_code}, expected a refusal (2)\n{out}"
    assert result.exit_code in (0, 3), f"{args}: exit {result.exit_code}\n{out}"
    if args[0] == "run":
        out_dir = Path(args[args.index("--out") + 1])
        records = out_dir / "records.jsonl"
        assert records.exists() and records.read_text().strip(), \
            f"{args}: accepted but ran nothing (a silent acceptance)\n{out}"
    else:
        assert out.strip(), f"{args}: accepted with no output\n{out}"
    return out


def mutated(obj: Any, path: tuple[Any, ...], value: Any = ..., drop: bool = False) -> Any:
    """A deep copy of ``obj`` with the value at ``path`` replaced (or dropped)."""
    out = copy.deepcopy(obj)
    target = out
    for key in path[:-1]:
        target = target[key]
    if drop:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out
