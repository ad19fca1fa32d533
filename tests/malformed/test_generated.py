"""Hypothesis-generated malformed inputs: valid fixtures with one field dropped, retyped or
nested deep, through the CLI. Each is refused (exit 2, one line naming the file) or
legitimately accepted (it ran questions); never a traceback, never a silent acceptance.
Derandomized, so CI sees the same cases every time."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from _inputs import (
    check,
    locomo_valid,
    longmemeval_valid,
    memlens_valid,
    run_args,
    synth_episode,
    valid_run,
    write_synth,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                               max_size=3),
    max_leaves=6)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``obj`` (not the root)."""
    out = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) \
        if isinstance(obj, list) else ()
    for key, value in items:
        out.append((*prefix, key))
        out.extend(_paths(value, (*prefix, key)))
    return out


@st.composite
def mutation(draw: st.DrawFn, valid: Any) -> Any:
    """``valid`` with one value dropped, replaced by any JSON value, or replaced by one
    nested 1100 levels deep."""
    paths = _paths(valid)
    path = draw(st.sampled_from(paths))
    op = draw(st.sampled_from(["drop", "retype", "nest"]))
    out = json.loads(json.dumps(valid))
    target = out
    for key in path[:-1]:
        target = target[key]
    if op == "drop":
        if isinstance(target, list):
            target.pop(path[-1])
        else:
            del target[path[-1]]
    elif op == "retype":
        target[path[-1]] = draw(JSON_VALUES)
    else:
        target[path[-1]] = _NEST
    return out


_NEST = "\x00nest\x00"  # where _dump writes a value nested past every parser's limit


def _dump(obj: Any) -> str:
    return json.dumps(obj).replace(json.dumps(_NEST), "[" * 1100 + "1" + "]" * 1100)


def _in_tmp(fn) -> None:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as tmp:
        fn(Path(tmp))


_ML_ROOT = Path(tempfile.mkdtemp(prefix="memgauge-generated-"))
_ML_ITEMS = memlens_valid(_ML_ROOT)


@SETTINGS
@given(mutation(_ML_ITEMS))
def test_memlens_mutations(items):
    def go(tmp: Path) -> None:
        data = _ML_ROOT / f"{tmp.name}.json"
        data.write_text(_dump(items))
        check(run_args("memlens", data, tmp, "--image-dir", str(_ML_ROOT)), names=data.name,
              kind="hypothesis", may_accept=True)
    _in_tmp(go)


@SETTINGS
@given(mutation(longmemeval_valid()))
def test_longmemeval_mutations(items):
    def go(tmp: Path) -> None:
        data = tmp / "longmemeval_s.json"
        data.write_text(_dump(items))
        check(run_args("longmemeval", data, tmp), names=data.name, kind="hypothesis",
              may_accept=True)
    _in_tmp(go)


@SETTINGS
@given(mutation(locomo_valid()))
def test_locomo_mutations(conv):
    def go(tmp: Path) -> None:
        data = tmp / "conv.json"
        data.write_text(_dump(conv))
        check(run_args("locomo", data, tmp), names=data.name, kind="hypothesis",
              may_accept=True)
    _in_tmp(go)


@SETTINGS
@given(mutation([synth_episode()]))
def test_synth_mutations(episodes):
    def go(tmp: Path) -> None:
        root = write_synth(tmp / "bench", episodes=[_dump(e) for e in episodes])
        check(run_args("synth", root, tmp), names="bench", kind="hypothesis", may_accept=True)
    _in_tmp(go)


@SETTINGS
@given(mutation([{"question_id": "q000", "prediction": "red"},
                 {"question_id": "q001", "prediction": "blue"}]))
def test_replay_mutations(preds):
    def go(tmp: Path) -> None:
        data = tmp / "dataset.json"
        data.write_text(json.dumps(_ML_ITEMS))
        path = tmp / "mine.json"
        path.write_text(_dump(preds))
        check(run_args("memlens", data, tmp, "--image-dir", str(_ML_ROOT),
                       model=f"replay:{path}"), names="mine.json", kind="hypothesis",
              may_accept=True)
    _in_tmp(go)


_MANIFEST_ROOT = Path(tempfile.mkdtemp(prefix="memgauge-generated-run-"))
_MANIFEST = json.loads((valid_run(_MANIFEST_ROOT) / "manifest.json").read_text())


@SETTINGS
@given(mutation(_MANIFEST), st.sampled_from(["report", "audit", "merge", "compare"]))
def test_manifest_mutations(manifest, command):
    def go(tmp: Path) -> None:
        run = valid_run(tmp)
        (run / "manifest.json").write_text(_dump(manifest))
        args = {"report": ["report", str(run)], "audit": ["audit", str(run)],
                "merge": ["merge", str(run), "--out", str(tmp / "m")],
                "compare": ["compare", str(valid_run(tmp, "b")), str(run)]}[command]
        # audit of a run without judge scores is refused for that reason, not the manifest's
        check(args, names=None if command == "audit" else "manifest.json",
              kind="hypothesis", may_accept=True)
    _in_tmp(go)
