"""Judging a run folder through the OpenAI Batch API shape (``memgauge score --batch``).

The online judge is replayed, not reimplemented: :class:`BatchJudgeModel` is the judge's
own client with one seam changed. Where the client would put a request on the wire
(``_send``, after it built the body and found no cached reply) it looks the body up in the
results of the batches so far; a body with no result yet is set aside (:class:`Deferred`)
and goes into the next batch, byte for byte as the online judge would send it. A result is
read by the client's own strict reply reader and the rubric's verdict reader, and the client
stores it in the response cache under the online key, so a later online ``score`` reuses it.

A record can need several calls in turn (a verdict, then a rephrased retry of an unreadable
reply, then an error label for a wrong answer): each round judges a copy of every record
still open, keeps the copies that finished, and sends what was set aside as the next batch.

The batch in flight is written to ``batch-judge/<judge name>.json`` in the run folder before
the first poll, so an interrupted ``score --batch`` polls the same batch again instead of
paying for a second one. Per-line errors, expired, failed or cancelled requests and
unreadable output lines become judge failures (each naming the batch, file and line), never
scores, and are not cached: a rerun sends only them again. See docs/design/0035.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
import re
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson

from .._secrets import redact_text
from ..cache import ResponseCache
from ..errors import ConfigError, MemgaugeError
from ..ledger import JudgeSpend
from ..models import ModelError
from ..models._http import HttpClient, HttpError
from ..models.openai_compat import OpenAICompatModel, _to_output, classify_error, redact_urls
from ..runfolder import (
    load_manifest,
    read_records,
    rewrite_records,
    write_json_atomic,
    write_manifest,
)
from ..schema import Record
from ._judge_run import (
    JudgeOptions,
    JudgePipeline,
    note_scorers,
    note_spend,
    record_judging,
    score_missing,
    scorers_after_run,
)

CHAT_ROUTE = "/v1/chat/completions"
STATE_DIR = "batch-judge"
TERMINAL = ("completed", "failed", "expired", "cancelled")
RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
POLL_CAP_S = 300.0  # the slowest poll (unless --batch-poll-s asks for slower)
POLL_GROWTH = 1.5
# OpenAI's limits of one batch: 50,000 requests, a 200 MB input file (kept under it)
MAX_BATCH_REQUESTS = 50_000
MAX_BATCH_BYTES = 190 * 2**20
API_ATTEMPTS = 4  # tries of one Files/Batches call on a connection error, 429 or 5xx
_WINDOW = re.compile(r"[1-9][0-9]*h")
_FILE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


class BatchApiError(MemgaugeError):
    """The Files or Batches API refused a call, or answered what it should not."""


class Deferred(Exception):
    """A judge request with no batch result yet: it goes into the next batch."""


def check_batch_options(judge: str, poll_s: float, window: str, name: str = "judge") -> None:
    """The ``--batch`` options, named before the judge is made or asked."""
    if not _FILE_NAME.fullmatch(name):
        raise ConfigError(f"--name {name!r}: with --batch the judge's name names its state "
                          f"file in {STATE_DIR}/, so letters, digits, '.', '_' and '-' only")
    if not judge.startswith("openai:"):
        raise ConfigError(f"--batch needs an OpenAI-compatible judge (--judge openai:<name>), "
                          f"got {judge!r}: a local: judge has no Batch API")
    if not poll_s > 0:
        raise ConfigError(f"--batch-poll-s {poll_s:g}: must be more than 0 seconds")
    if not _WINDOW.fullmatch(window):
        raise ConfigError(f"--batch-window {window!r}: a whole number of hours like 24h "
                          "(OpenAI accepts only 24h)")


def custom_id(body: bytes) -> str:
    """A request's id in the batch: its body's digest, so equal requests are sent once."""
    return "mg-" + hashlib.sha256(body).hexdigest()[:40]


class StagedCache:
    """The response cache as the rounds see it: lookups go to the cache, replies from the
    batches are held back until :meth:`flush`. Were they stored at once, the next round's
    replay of the same call would count as a cache hit, and a record's ``judge_cache``
    would differ from online judging's."""

    def __init__(self, cache: ResponseCache) -> None:
        self.cache = cache
        self.staged: dict[str, dict[str, Any]] = {}
        self.looked_up: dict[str, bool] = {}  # key -> found: each call once, not per round

    @property
    def hits(self) -> int:
        return sum(self.looked_up.values())

    @property
    def misses(self) -> int:
        return len(self.looked_up) - self.hits

    def get(self, key: str) -> dict[str, Any] | None:
        got = self.cache.get(key)
        self.looked_up.setdefault(key, got is not None)
        return got

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.staged[key] = value

    @contextlib.asynccontextmanager
    async def single_flight(self, key: str) -> AsyncIterator[dict[str, Any] | None]:
        """A plain lookup: a round's calls are distinct (one per judged record), and its
        replies come from the batch, not from a request another caller could share."""
        yield self.get(key)

    def flush(self) -> None:
        for key, value in self.staged.items():
            self.cache.put(key, value)
        self.staged.clear()


class BatchJudgeModel(OpenAICompatModel):
    """The judge's client, answering from batch results instead of the wire (module doc)."""

    def __init__(self, name: str, settings: Any) -> None:
        staged = StagedCache(settings.cache) if settings.cache is not None else None
        super().__init__(name, dataclasses.replace(settings, cache=staged))
        if len(self.bases) > 1:
            raise ConfigError("--batch sends one batch to one endpoint: give one "
                              "--judge-base-url, not a list of replicas")
        self.staged = staged
        self.results: dict[str, bytes | ModelError] = {}
        self.pending: dict[str, bytes] = {}

    def store_results(self) -> None:
        """Put the replies the batches brought into the response cache."""
        if self.staged is not None:
            self.staged.flush()

    @classmethod
    def like(cls, model: Any) -> BatchJudgeModel:
        """The batch client for the judge ``model`` the command line made."""
        if type(model) is not OpenAICompatModel:
            raise ConfigError("--batch needs an OpenAI-compatible judge (--judge "
                              "openai:<name>): a local: judge has no Batch API")
        return cls(model.name, model.settings)

    async def _send(self, pieces: list[bytes | memoryview], max_tokens: int = 512) -> Any:
        body = b"".join(pieces)
        cid = custom_id(body)
        got = self.results.get(cid)
        if got is None:
            self.pending[cid] = body
            raise Deferred(cid)
        if isinstance(got, ModelError):
            raise ModelError(got.kind, got.message, details=got.details)
        return _to_output(got, 1, self.observe)

    def auth_headers(self) -> dict[str, str]:
        key = os.environ.get(self.settings.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def secrets(self) -> list[str | None]:
        return [os.environ.get(self.settings.api_key_env)]


class BatchApi:
    """``/files`` and ``/batches`` of one OpenAI-compatible base URL, over ``_http``."""

    def __init__(self, model: BatchJudgeModel) -> None:
        self.base = model.base
        self.shown = redact_urls(model.base) or model.base
        self.auth = model.auth_headers()
        self.secrets = model.secrets()
        self.timeout_s = model.settings.timeout_s
        self.retry_base_s = model.settings.retry_base_s
        self._json = HttpClient(f"{self.base}/batches", {
            "Content-Type": "application/json", "Accept": "application/json", **self.auth},
            self.timeout_s)

    async def _call(self, what: str, send: Callable[[], Any]) -> bytes:
        problem = ""  # set by every attempt; API_ATTEMPTS is at least 1
        for attempt in range(1, API_ATTEMPTS + 1):
            try:
                resp = await send()
            except (HttpError, TimeoutError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status < 300:
                    return resp.body
                _kind, msg, retryable, _ = classify_error(resp.status, resp.body)
                problem = f"HTTP {resp.status}: {redact_text(msg, self.secrets)}"
                if not retryable:
                    break
            if attempt < API_ATTEMPTS:
                await asyncio.sleep(self.retry_base_s * 2 ** (attempt - 1))
        raise BatchApiError(f"{what} at {self.shown} failed: {problem}")

    async def _json_call(self, what: str, send: Callable[[], Any]) -> dict[str, Any]:
        raw = await self._call(what, send)
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            raise BatchApiError(f"{what} at {self.shown}: the reply is not an object with an "
                                f"`id`: {bytes(raw[:200]).decode('utf-8', 'replace')!r}")
        return obj

    async def upload(self, data: bytes, filename: str) -> str:
        boundary = uuid.uuid4().hex
        while boundary.encode() in data:
            boundary = uuid.uuid4().hex
        body = b"".join([
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n'
            f"batch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f'filename="{filename}"\r\nContent-Type: application/jsonl\r\n\r\n'.encode(),
            data, f"\r\n--{boundary}--\r\n".encode()])
        client = HttpClient(f"{self.base}/files", {
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Accept": "application/json", **self.auth}, self.timeout_s)
        try:
            got = await self._json_call("uploading the batch input (POST /files)",
                                        lambda: client.post([body]))
        finally:
            await client.aclose()
        return str(got["id"])

    async def create(self, input_file_id: str, window: str) -> dict[str, Any]:
        body = orjson.dumps({"input_file_id": input_file_id, "endpoint": CHAT_ROUTE,
                             "completion_window": window})
        return await self._json_call(f"creating a batch of file {input_file_id} "
                                     "(POST /batches)", lambda: self._json.post([body]))

    async def batch(self, batch_id: str) -> dict[str, Any]:
        return await self._json_call(f"polling batch {batch_id} (GET /batches/{batch_id})",
                                     lambda: self._json.get(f"{self.base}/batches/{batch_id}"))

    async def content(self, file_id: str, batch_id: str) -> bytes:
        raw = await self._call(f"downloading file {file_id} of batch {batch_id} "
                               f"(GET /files/{file_id}/content)",
                               lambda: self._json.get(f"{self.base}/files/{file_id}/content"))
        return raw

    async def aclose(self) -> None:
        await self._json.aclose()


def read_results(data: bytes, batch_id: str, file_id: str, sent: set[str],
                 ) -> tuple[dict[str, bytes | ModelError], list[str]]:
    """The result per custom id in one output or error file, and the lines that name no
    request of the batch. A good line keeps its response body; anything else is a
    :class:`ModelError` naming the batch, the file and the line."""
    results: dict[str, bytes | ModelError] = {}
    stray: list[str] = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        where = f"batch {batch_id}, file {file_id}, line {n}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        cid = obj.get("custom_id") if isinstance(obj, dict) else None
        if not isinstance(cid, str) or cid not in sent:
            why = ("not a JSON object with a `custom_id`" if not isinstance(cid, str)
                   else f"custom_id {cid!r} is not a request of this batch")
            stray.append(f"{where}: {why}")
            continue
        assert isinstance(obj, dict)
        results[cid] = _line_result(obj, where)
    return results, stray


def _line_result(obj: dict[str, Any], where: str) -> bytes | ModelError:
    err, resp = obj.get("error"), obj.get("response")
    if err:
        code = err.get("code") if isinstance(err, dict) else None
        msg = err.get("message") if isinstance(err, dict) else err
        return ModelError(str(code or "batch_error"), f"{where}: {msg}")
    if not isinstance(resp, dict) or not isinstance(resp.get("status_code"), int) \
            or not isinstance(resp.get("body"), dict | str):
        return ModelError("bad_batch_output", f"{where}: no `response` with a `status_code` "
                          "and a `body`")
    body = resp["body"]
    raw = body.encode() if isinstance(body, str) else orjson.dumps(body)
    if resp["status_code"] >= 300:
        kind, msg, _retryable, details = classify_error(resp["status_code"], raw)
        return ModelError(kind, f"{where}: {msg}", details=details)
    try:
        _to_output(raw, 1)  # read now, so a bad body is named by its line
    except ModelError as exc:
        return ModelError(exc.kind, f"{where}: {exc.message}")
    return raw


class BatchState:
    """The batch of one judge in a run folder (``batch-judge/<name>.json``)."""

    def __init__(self, run_dir: Path, name: str) -> None:
        self.path = run_dir / STATE_DIR / f"{name}.json"
        self.data: dict[str, Any] = {}
        if self.path.exists():
            try:
                data = orjson.loads(self.path.read_bytes())
            except orjson.JSONDecodeError as exc:
                raise ConfigError(f"{self.path}: not JSON ({exc}); delete it to submit "
                                  "a new batch") from None
            if not isinstance(data, dict) or not isinstance(data.get("custom_ids", []), list):
                raise ConfigError(f"{self.path}: not a batch state (an object with "
                                  "`custom_ids`); delete it to submit a new batch")
            self.data = data

    def in_flight(self) -> bool:
        return bool(self.data.get("batch_id")) and not self.data.get("collected")

    def check_judge(self, model: BatchJudgeModel) -> None:
        if not self.in_flight():
            return
        want = {"model": model.name, "base_url": redact_urls(model.base)}
        have = {k: self.data.get(k) for k in want}
        if have != want:
            raise ConfigError(f"{self.path}: batch {self.data['batch_id']} was sent to judge "
                              f"{have['model']!r} at {have['base_url']}; rerun with that judge "
                              "to collect it, or delete the file to give it up")

    def save(self, **fields: Any) -> None:
        self.data.update(fields)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, self.data)


async def wait_for(api: BatchApi, batch_id: str, poll_s: float,
                   say: Callable[[str], None]) -> dict[str, Any]:
    """Poll until the batch ends; the wait grows by half each poll, up to the cap."""
    delay, cap = poll_s, max(poll_s, POLL_CAP_S)
    while True:
        batch = await api.batch(batch_id)
        status = batch.get("status")
        if status in TERMINAL:
            return batch
        if status not in RUNNING:
            raise BatchApiError(f"batch {batch_id}: unknown status {status!r} (expected one "
                                f"of {', '.join(RUNNING + TERMINAL)})")
        counts = batch.get("request_counts") or {}
        say(f"batch {batch_id}: {status}, {counts.get('completed', 0)} of "
            f"{counts.get('total', '?')} done; next poll in {delay:g} s")
        await asyncio.sleep(delay)
        delay = min(delay * POLL_GROWTH, cap)


async def collect(api: BatchApi, batch: dict[str, Any], sent: list[str],
                  say: Callable[[str], None]) -> dict[str, bytes | ModelError]:
    """The result of every request ``sent`` in a finished batch: its output or error line,
    else a failure saying why there is none."""
    batch_id, status = str(batch["id"]), str(batch.get("status"))
    want = set(sent)
    results: dict[str, bytes | ModelError] = {}
    stray: list[str] = []
    for field in ("output_file_id", "error_file_id"):
        file_id = batch.get(field)
        if isinstance(file_id, str) and file_id:
            got, bad = read_results(await api.content(file_id, batch_id), batch_id, file_id,
                                    want)
            results.update(got)
            stray += bad
    for line in stray:
        say(f"unreadable batch output: {line}")
    reason = f"batch {batch_id} ended {status} without a result for this request"
    if status == "failed":
        errors = (batch.get("errors") or {}).get("data") if isinstance(
            batch.get("errors"), dict) else None
        texts = [str(e.get("message", e)) for e in errors or [] if isinstance(e, dict)]
        reason = f"batch {batch_id} failed: {'; '.join(texts)[:300] or 'no reason given'}"
    elif stray:
        reason += f" ({len(stray)} output lines unreadable, first: {stray[0]})"
    for cid in sent:
        if cid not in results:
            results[cid] = ModelError(f"batch_{status}" if status != "completed"
                                      else "batch_missing", reason)
    return results


def spend_of(results: Any) -> JudgeSpend:
    """What a batch's results cost, from their usage (an error line or an unreadable
    body: nothing known)."""
    spend = JudgeSpend()
    for got in results:
        if isinstance(got, ModelError):
            continue
        try:
            spend.add_reply(_to_output(got, 1).usage)
        except ModelError:
            continue
    return spend


async def replay(records: list[Record], pipeline: JudgePipeline, open_: set[int],
                 ) -> Counter[str]:
    """Judge a copy of each open record; keep the copies that finished (no call set aside)
    and close them."""
    done: Counter[str] = Counter()
    for i in sorted(open_):
        trial = records[i].model_copy(deep=True)
        try:
            got = await pipeline.apply(trial)
        except Deferred:
            continue
        records[i] = trial
        open_.discard(i)
        done.update(got)
    return done


async def submit(api: BatchApi, state: BatchState, model: BatchJudgeModel,
                 window: str) -> None:
    """Send what was set aside as one batch; the state is saved at each step."""
    pending, model.pending = model.pending, {}
    ids: list[str] = []
    chunks: list[bytes] = []
    size = 0
    for cid in sorted(pending):
        line = b'{"custom_id":"%s","method":"POST","url":"%s","body":%s}\n' % (
            cid.encode(), CHAT_ROUTE.encode(), pending[cid])
        if ids and (len(ids) == MAX_BATCH_REQUESTS or size + len(line) > MAX_BATCH_BYTES):
            model.pending[cid] = pending[cid]  # over one batch's limits: the next batch
            continue
        ids.append(cid)
        chunks.append(line)
        size += len(line)
    lines = b"".join(chunks)
    input_path = state.path.with_suffix(".input.jsonl")
    input_path.parent.mkdir(parents=True, exist_ok=True)
    input_path.write_bytes(lines)
    reuse = (state.data.get("input_file_id") and not state.data.get("batch_id")
             and state.data.get("custom_ids") == ids)  # uploaded, then interrupted
    file_id = state.data["input_file_id"] if reuse else await api.upload(
        lines, input_path.name)
    state.data = {}
    state.save(model=model.name, base_url=redact_urls(model.base), input_file_id=file_id,
               custom_ids=ids, window=window)
    batch = await api.create(file_id, window)
    state.save(batch_id=batch["id"], status=batch.get("status"), collected=False)


async def batch_judge_run(run_dir: str | os.PathLike[str], model: BatchJudgeModel, *,
                          options: JudgeOptions | None = None, poll_s: float = 30.0,
                          window: str = "24h", say: Callable[[str], None] | None = None,
                          budget: Any = None) -> dict[str, int]:
    """``judge_run`` through batches: the same records, verdicts and counts (plus
    ``batches`` and ``batch_requests``). A ``budget`` is checked between batches: once
    reached, no further batch is submitted and the records still open stay to judge
    (``left``); the overshoot is at most one batch."""
    options = options or JudgeOptions()
    check_batch_options(f"openai:{model.name}", poll_s, window, options.name)
    say = say or (lambda line: None)
    run = Path(run_dir)
    # The budget counts what each collected batch cost (its results' usage): a record
    # that needs another round has paid for its first calls already.
    pipeline = JudgePipeline(model, options, f"openai:{model.name}")
    manifest = load_manifest(run)
    if manifest is None:
        raise ConfigError(f"{run} is not a run folder (no manifest.json)")
    state = BatchState(run, pipeline.options.name)
    state.check_judge(model)
    records = list(read_records(run).values())
    scorers = scorers_after_run(manifest)
    rule_scored = score_missing(records, scorers)
    if rule_scored:
        rewrite_records(run, records)
        note_scorers(manifest, scorers)
    open_ = {i for i, rec in enumerate(records) if pipeline.needs(rec)}
    todo = len(open_)
    totals: Counter[str] = Counter()
    batch_ids: list[str] = []
    api = BatchApi(model)
    try:
        while True:
            if state.in_flight():
                batch_id = str(state.data["batch_id"])
                sent = [str(c) for c in state.data.get("custom_ids", [])]
                try:
                    batch = await wait_for(api, batch_id, poll_s, say)
                    got = await collect(api, batch, sent, say)
                    model.results.update(got)
                    if budget is not None:
                        budget.add_judge(pipeline.spec, spend_of(got.values()))
                except BatchApiError as exc:
                    raise BatchApiError(f"{exc}; batch {batch_id} stays recorded in "
                                        f"{state.path}: rerun to collect it") from None
                batch_ids.append(batch_id)
                totals["batch_requests"] += len(sent)
                state.data["status"] = batch.get("status")
            totals.update(await replay(records, pipeline, open_))
            if todo:
                rewrite_records(run, records)
            if state.in_flight():
                state.save(collected=True)
            if not model.pending:
                break
            if budget is not None and budget.reason:
                totals["left"] = len(open_)
                model.pending = {}
                break
            await submit(api, state, model, window)
            n = len(state.data["custom_ids"])
            say(f"batch {state.data['batch_id']}: {n} judge request{'s' * (n != 1)} "
                f"submitted (state in {state.path})")
    finally:
        model.store_results()  # an interrupted score keeps what came back
        await api.aclose()
    before = manifest.get("judges", {}).get(pipeline.options.name, {}).get("batches", [])
    record_judging(manifest, pipeline, records)
    manifest["judges"][pipeline.options.name]["batches"] = list(
        dict.fromkeys([*before, *batch_ids]))
    note_spend(manifest, records, budget)
    write_manifest(run, manifest)
    counts = {"judged": totals["judged"], "skipped": len(records) - todo,
              "failures": totals["failures"], "auto_zero": totals["auto_zero"],
              "batches": len(batch_ids), "batch_requests": totals["batch_requests"]}
    totals["rule_scored"] = rule_scored
    for extra in ("extracted", "extract_failures", "labelled", "label_failures", "left",
                  "rule_scored"):
        if totals[extra]:
            counts[extra] = totals[extra]
    return counts
