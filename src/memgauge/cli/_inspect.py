"""``memgauge list`` (what can be named on the command line) and ``memgauge show`` (one run,
or one question as the system saw it).

``show RUN QID`` rebuilds the question's prompt: it reads the run's manifest for its
configuration, loads the question's episode from the same input (its digest checked against
the manifest), and lets the run's system answer it once more with a stand-in model that
records each message instead of sending it and returns the recorded prediction (so a system
that calls its model several times goes on as it did). Nothing is sent anywhere.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import re
from pathlib import Path
from typing import Any

from ..analysis._tables import run_progress
from ..benchmarks import BenchmarkOptions
from ..errors import ConfigError, InputError
from ..io import file_sha256
from ..media import ImagePolicy
from ..models import GenerateConfig, Message, ModelOutput
from ..models._base import ImagePart, TextPart
from ..models._local_files import CATALOGUE
from ..models.local import OPTION_HELP
from ..registry import lookup, registrations
from ..report import show_controls
from ..runner import RunConfig, load_manifest, read_records
from ..systems import SystemContext
from ..tokens import TokenCounter

# -- memgauge list ----------------------------------------------------------------------


def _summary(fn: Any) -> str:
    """The first paragraph of a docstring, its reST markup taken off."""
    doc = inspect.getdoc(fn) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def catalogue() -> dict[str, list[dict[str, Any]]]:
    """Everything ``--bench``, ``--system``, ``--model``, ``--judge`` and the scorers can
    name, with a line of help and the options each takes."""
    out: dict[str, list[dict[str, Any]]] = {}
    for kind in ("benchmark", "system", "model", "scorer", "rubric"):
        entries = []
        for registered in registrations(kind):
            name, fn = registered.name, registered.factory
            entry: dict[str, Any] = {"name": name, "help": _summary(fn)}
            if kind in ("scorer", "rubric"):  # a class's docstring, or its factory's
                entry["help"] = entry["help"] or _summary(fn if isinstance(fn, type)
                                                          else type(fn()))
            options = registered.options
            if options:
                entry["options"] = {k: help_ for k, (_, help_) in options.items()}
            if kind == "model" and name == "local":
                entry["options"] = dict(OPTION_HELP)
                entry["catalogue"] = sorted(CATALOGUE)
            entries.append(entry)
        out[kind + "s"] = entries
    out["scorers"].append({"name": "judge", "help": "An LLM judge's verdict (--judge on run, or "
                           "memgauge score); also labels wrong answers' causes"})
    out["scorers"].append({"name": "extract-match", "help": "An LLM extracts the answer, then "
                           "the typed rule matches it (--extract)"})
    return out


def print_catalogue(cat: dict[str, list[dict[str, Any]]]) -> None:
    flags = {"benchmarks": "--bench", "systems": "--system",
             "models": "--model <provider>:<arg>", "scorers": "scores in every record",
             "rubrics": "--judge-rubric"}
    for group, entries in cat.items():
        print(f"{group} ({flags[group]}):")
        width = max(len(e["name"]) for e in entries)
        for e in entries:
            print(f"  {e['name']:<{width}}  {show_controls(e['help'])}")
            for key, help_ in (e.get("options") or {}).items():
                flag = "--model-option" if group == "models" else "--system-option"
                print(f"  {'':<{width}}    {flag} {key}=…  {help_}")
            if e.get("catalogue"):
                print(f"  {'':<{width}}    catalogue: {', '.join(e['catalogue'])} "
                      "(memgauge models pull NAME)")
        print()


# -- memgauge show ----------------------------------------------------------------------


def read_run(run_dir: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest and the records (by question id) of a run folder, checked."""
    path = Path(run_dir)
    if not path.is_dir():
        raise InputError("not a run folder (no such folder)", file=run_dir)
    try:
        manifest = load_manifest(path)
    except ValueError as exc:
        raise InputError(f"not valid JSON ({exc})", file=str(path / "manifest.json")) from None
    if manifest is None:
        raise InputError("not a run folder (no manifest.json)", file=run_dir)
    if not isinstance(manifest, dict):
        raise InputError("not a run manifest (a JSON object)", file=str(path / "manifest.json"))
    return manifest, read_records(path)


def run_overview(manifest: dict[str, Any], records: dict[str, Any], limit: int = 20) -> str:
    cfg = (manifest.get("config") or {}).get("all") or {}
    ok = [r for r in records.values() if r.status == "ok"]
    failed = [r for r in records.values() if r.status != "ok"]
    model = cfg.get("model")
    model = "no model" if model in ("none:", "none") else model

    progress = run_progress(manifest, len(records)).label  # "" when complete (design 0040)
    lines = [(f"{cfg.get('system')} on {cfg.get('bench')} {cfg.get('data')} with "
             f"{model}: {len(records)} questions recorded, {len(ok)} answered, "
             f"{len(failed)} failed" + (f" ({progress})" if progress else ""))]
    for r in list(records.values())[:limit]:
        score = r.scores.get("rule")
        what = (f"rule {score:.2f}" if score is not None and r.status == "ok"
                else f"error {r.response.error.kind}" if r.response.error else r.status)
        lines.append(f"  {r.question_id}  {what}  {r.question[:70]}")
    if len(records) > limit:
        lines.append(f"  … {len(records) - limit} more (memgauge show RUN QUESTION_ID)")
    return "\n".join(lines)


class _Recorder:
    """A stand-in model: keeps each request's messages and answers with the run's recorded
    prediction (or nothing), never sending anything."""

    name = "recorder"

    def __init__(self, reply: str | None) -> None:
        self.reply = reply or ""
        self.calls: list[list[Message]] = []

    def describe(self) -> dict[str, Any]:
        return {"provider": "recorder"}

    async def generate(self, messages: list[Message], config: GenerateConfig, *,
                       question_id: str | None = None) -> ModelOutput:
        self.calls.append(messages)
        return ModelOutput(text=self.reply)

    async def aclose(self) -> None:
        return None


def _config(manifest: dict[str, Any]) -> RunConfig:
    given = dict((manifest.get("config") or {}).get("all") or {})
    names = set(RunConfig.field_names())
    kept = {k: v for k, v in given.items() if k in names and k != "judge_options"}
    if isinstance(kept.get("shard"), list):
        kept["shard"] = tuple(kept["shard"])
    try:
        return RunConfig(**kept)
    except ConfigError as exc:
        raise InputError(f"the run's configuration cannot be read ({exc})",
                         file="manifest.json", field="config.all") from None


def rebuild_prompt(manifest: dict[str, Any], record: Any) -> dict[str, Any]:
    """The messages the run's system sends for ``record``'s question, rebuilt (see the
    module's docstring); with notes on anything that may differ from what was sent."""
    c = _config(manifest)
    notes: list[str] = []
    inputs = ((manifest.get("benchmark") or {}).get("inputs")) or {}
    if isinstance(inputs, dict):
        for path, digest in inputs.items():
            if Path(path).is_file() and file_sha256(path) != digest:
                notes.append(f"{path} changed since the run: the prompt is rebuilt from the "
                             "file as it is now")
            elif not Path(path).is_file():
                raise InputError("the run's input is gone: the prompt cannot be rebuilt",
                                 file=path)
    bench = lookup("benchmark", c.bench)(BenchmarkOptions(
        data=c.data, image_dir=c.image_dir, allow_missing_images=True,
        allow_inconsistent=True, tier=c.tier,
        extra=dict(c.bench_options)))
    episode = next((ep for ep in bench.episodes() if ep.episode_id == record.episode_id), None)
    if episode is None:
        raise InputError(f"episode {record.episode_id!r} is not in the input", file=c.data)
    question = next((q for q in episode.questions if q.question_id == record.question_id), None)
    if question is None:
        raise InputError(f"question {record.question_id!r} is not in episode "
                         f"{record.episode_id!r}", file=c.data)
    tokenizer = c.tokenizer if c.tokenizer not in (None, "model") else "o200k_base"
    if c.tokenizer == "model":
        notes.append("counted with o200k_base here, not the local model's own tokenizer: "
                     f"with a length limit, the sessions kept may differ (the run dropped "
                     f"{record.dropped_sessions})")
    model = _Recorder(record.prediction)
    policy = ImagePolicy(max_side=c.image_max_side, format=c.image_format)
    ctx = SystemContext(model=model, generate=GenerateConfig(max_tokens=c.max_tokens),
                        counter=TokenCounter(tokenizer=tokenizer, image_formula=c.image_formula),
                        image_policy=policy, context_mode=c.context_mode,
                        instruction=c.instruction, label_images=c.label_images,
                        max_context_tokens=c.max_context_tokens, overflow=c.overflow,
                        count_tokens=c.count_tokens, options=dict(c.system_options))
    system = lookup("system", c.system)(ctx)()

    async def replay() -> Any:
        await system.reset(episode)
        n = len(episode.sessions)
        # as the run answered: online up to the question's session, offline after them all
        online = c.protocol == "online"
        cut = n if question.asked_after is None or not online else min(n, question.asked_after + 1)
        for session in episode.sessions[:cut]:
            await system.ingest(session)
        return await system.answer(question)

    response = asyncio.run(replay())
    if not model.calls:
        notes.append(f"{c.system} asked no model for this question"
                     + (f" ({response.error.message})" if response.error else ""))
    return {"calls": [[_message_json(m) for m in call] for call in model.calls],
            "notes": notes}


def _message_json(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"text": part.text})
        elif isinstance(part, ImagePart):
            ref = part.image
            parts.append({"image": ref.path or ref.url, "missing": ref.missing})
    if parts and all("text" in p for p in parts):
        # as an OpenAI-compatible endpoint receives it: text alone goes as one string
        parts = [{"text": "\n".join(p["text"] for p in parts)}]
    return {"role": message.role, "parts": parts}


def _clip(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    half = limit // 2
    return (f"{text[:half]}\n… ({len(text) - 2 * half} characters left out; --full shows all) …"
            f"\n{text[-half:]}")


def question_view(record: Any, prompt: dict[str, Any] | None, *, full: bool) -> str:
    """One question as text: the prompt, the answer, each score, the error."""
    limit = 0 if full else 1500
    lines = [(f"question {record.question_id} (episode {record.episode_id}, "
             f"{record.ability}{'/' + record.subtype if record.subtype else ''}, "
             f"{record.answer_type}): {record.status}")]
    if prompt is not None:
        for i, call in enumerate(prompt["calls"], 1):
            lines.append(f"--- request {i} of {len(prompt['calls'])} (rebuilt, not sent) ---")
            for m in call:
                for part in m["parts"]:
                    if "text" in part:
                        lines.append(f"[{m['role']}] {_clip(part['text'], limit)}")
                    else:
                        lines.append(f"[{m['role']}] <image {part['image']}"
                                     f"{' (missing)' if part['missing'] else ''}>")
        for note in prompt["notes"]:
            lines.append(f"note: {note}")
    lines.append("--- answer ---")
    lines.append(f"question: {record.question}")
    lines.append(f"gold: {record.gold}")
    lines.append(f"prediction: {record.prediction!r}")
    raw = record.meta.get("raw") if isinstance(record.meta, dict) else None
    if raw is not None and raw != record.prediction:
        lines.append(f"raw reply: {_clip(str(raw), limit)}")
    for name, value in record.scores.items():
        detail = record.score_details.get(name)
        shown = {k: v for k, v in (detail.details if detail else {}).items()
                 if k in ("verdict", "label", "matched", "extracted", "refused", "reason")}
        why = f" {shown}" if shown else ""
        lines.append(f"score {name}: {value:g}{why}")
    err = record.response.error
    if err is not None:
        lines.append(f"error {err.kind}: {err.message} (attempts {err.attempts}, "
                     f"{'retryable' if err.retryable else 'not retryable'})")
    for name, judge_error in sorted(record.judge_errors().items()):  # every judge's
        lines.append(f"judge error{f' ({name})' if name else ''}: {judge_error['kind']}: "
                     f"{judge_error['message']}")
    if any(r.chosen for r in record.response.retrieved):
        got = ", ".join(r.pointer.session_id for r in record.response.retrieved if r.chosen)
        gold = ", ".join(p.session_id for p in record.evidence) or "none given"
        lines.append(f"retrieved sessions: {got} (evidence: {gold})")
    if record.input_tokens is not None:
        lines.append(f"prompt tokens (our count): {record.input_tokens}"
                     + (f", {record.dropped_sessions} sessions dropped"
                        if record.dropped_sessions else ""))
    usage = record.response.usage
    if usage.input_tokens is not None:
        lines.append(f"usage: {usage.input_tokens} in, {usage.output_tokens} out"
                     + (" (from the cache)" if record.response.cached else ""))
    return "\n".join(lines)


def find_record(records: dict[str, Any], qid: str, run_dir: str) -> Any:
    record = records.get(qid)
    if record is None:
        near = difflib.get_close_matches(qid, list(records), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise ConfigError(f"{run_dir} has no record of question {qid!r}{hint}")
    return record
