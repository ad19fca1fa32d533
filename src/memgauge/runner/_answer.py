"""Answering: episodes streamed from the reader, ingested and asked, each record
scored, judged and written as it finishes."""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import EpisodeFailure, InputError
from ..models import EndpointReporting, SendClock
from ..models._aimd import PRIORITY
from ..models.openai_compat import ROUTING_KEY
from ..runfolder import RecordWriter, StorageError, write_manifest
from ..schema import Episode, ErrorInfo, Question, Record, Response
from ..systems import EpisodeEnding
from ._breaker import Breaker, RunStopped
from ._budget import Budget, make_budget
from ._gc import quiet_gc, restore_gc
from ._ingest_cost import IngestMeter, Share
from ._manifest import package_versions
from ._prefix import PriorityGate, Then, gate_slots, shares_prefix, warm_first
from ._records import _history_cut, make_record, missing_images
from ._setup import Preparing, Setup

if TYPE_CHECKING:
    from ._execute import RunResult


class Answering(Preparing):
    """The part of :class:`Runner` that answers the questions."""

    budget: Budget | None
    on_progress: Callable[[RunResult, Record | None], None] | None

    async def answer(self, s: Setup, done_ok: frozenset[str], result: RunResult, *,
                     manifest: dict[str, Any] | None = None,
                     part: tuple[int, int] | None = None) -> None:
        """Answer every question not yet done (of this ``part`` of the items, in a worker),
        writing each record as it finishes. ``manifest`` gets the package versions once the
        first request is out (the parent does that when there are workers)."""
        c = self.config
        budget = self.budget = make_budget(self.run_dir, c.model, c.budget_usd,
                                           c.max_tokens_total, c.prices,
                                           judges=[c.judge] if c.judge else [])
        run = _AnswerLoop(self, s, done_ok, result, budget, manifest)
        gc_previous = quiet_gc()  # see runner/_gc.py
        try:
            await run.read_and_answer(self._episodes(s.bench, part), is_part=part is not None)
        finally:
            restore_gc(gc_previous)
            await run.writer.close()


class _Selection:
    """Which questions of the input this run holds (``--limit`` counts questions, done ones
    included, in file order), and how many the input and the selection hold."""

    def __init__(self, limit: int | None) -> None:
        self.remaining = limit
        self.in_input = 0  # questions in the input (after --question-ids), done ones included
        self.selected = 0  # of those, the ones this run is meant to hold, done included

    @property
    def full(self) -> bool:
        return self.remaining is not None and self.remaining <= 0

    def take(self, episode: Episode) -> list[Question]:
        keep = episode.questions
        if self.remaining is not None:
            keep = episode.questions[:self.remaining]
            self.remaining -= len(keep)
        self.selected += len(keep)
        return keep


class _AnswerLoop:
    """One invocation's answering: the episodes read, ingested and asked behind the gate,
    each record scored, judged, counted and written; the budget and the breaker stop it."""

    def __init__(self, runner: Answering, s: Setup, done_ok: frozenset[str], result: RunResult,
                 budget: Budget, manifest: dict[str, Any] | None) -> None:
        c = self.config = runner.config
        self.runner, self.s, self.done_ok, self.result = runner, s, done_ok, result
        self.budget, self.manifest = budget, manifest
        self.writer = RecordWriter(runner.run_dir)
        self.prefix = shares_prefix(s.probe)  # its first question warms the server (0031)
        slots = gate_slots(c.concurrency, s.model, self.prefix)
        self.gate = PriorityGate(slots)
        self.episode_order = itertools.count()  # a question's gate key: (episode's, place)
        # A shared-prefix episode asked at several points (asked_after) frees the gate between
        # them; an episode started meanwhile would take the slot and evict its history from
        # the server's cache. So no more such episodes than slots (their ingest costs nothing).
        self.episodes_in_flight = asyncio.Semaphore(slots if self.prefix
                                                    else max(2, c.concurrency * 2))
        if s.judging is not None:  # the judge's tokens count toward the budget too (0034)
            s.judging.on_spend = budget.add_judge
        self.levels = (s.model.concurrency_levels if isinstance(s.model, EndpointReporting)
                       else None)
        self.breaker = Breaker(c)
        self.missing: dict[str, list[str]] = {}  # per episode, computed once
        self.written: set[str] = set()  # question ids with a record from this invocation
        self.tasks: set[asyncio.Task[None]] = set()
        # Episode tasks only raise when the run must stop (RunStopped, or an interrupt);
        # their exception is kept here as they finish, so the loop stops starting episodes.
        self.stopped: list[BaseException] = []

    # --- the reader's loop ---

    async def read_and_answer(self, episodes: Iterable[Episode], *, is_part: bool) -> None:
        """Start an episode task per episode with work to do while the reader reads on;
        then wait for them all. On any exception the episodes in flight are cancelled."""
        try:
            selection = await self._start_episodes(episodes)
            if not is_part:  # the reader is through: the to-do count is exact now
                self._note_totals(selection)
            if self.tasks:
                await asyncio.gather(*self.tasks)
            if self.stopped:
                raise self.stopped[0]
            self.result.budget_stop = self.budget.reason
            # episodes without a question count as nothing (a shard may be empty)
            if not selection.in_input and not is_part and self.config.shard is None:
                raise self._no_questions()
        except BaseException:
            for t in self.tasks:
                t.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            raise

    async def _start_episodes(self, episodes: Iterable[Episode]) -> _Selection:
        selection = _Selection(self.config.limit)
        spent = False  # a budget stopped the run: the reader only counts on
        started = False
        for episode in episodes:
            selection.in_input += len(episode.questions)
            if selection.full:
                break
            todo = [q for q in selection.take(episode) if q.question_id not in self.done_ok]
            if not todo or spent:
                continue
            self.result.queued += len(todo)
            await self.episodes_in_flight.acquire()
            if self.stopped:  # an episode stopped the run: start nothing more
                raise self.stopped[0]
            if self.budget.reason:  # spent: start nothing more (in-flight ones finish), but
                self.episodes_in_flight.release()  # read on, so the run knows its size (0040)
                spent = True
                continue
            task = self._start_episode(episode, todo)
            if not started:
                started = True
                await self._first_request_out(task)
            await asyncio.sleep(0)  # let work start while the loader reads on
        return selection

    def _start_episode(self, episode: Episode, todo: list[Question]) -> asyncio.Task[None]:
        task = asyncio.create_task(self._episode(episode, todo))
        self.tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None and not self.stopped:
            self.stopped.append(task.exception())  # type: ignore[arg-type]

    async def _first_request_out(self, task: asyncio.Task[None]) -> None:
        """Get the first request on the wire before reading on (bounded wait); then the
        manifest gets the package versions."""
        model = self.s.model
        deadline = time.monotonic() + 1.0
        while (isinstance(model, SendClock) and model.first_send_at is None
               and not task.done()
               and time.monotonic() < deadline):
            await asyncio.sleep(0.001)
        if self.manifest is not None:
            self.manifest["packages"] = package_versions()
            write_manifest(self.runner.run_dir, self.manifest)

    def _note_totals(self, selection: _Selection) -> None:
        c, manifest, result = self.config, self.manifest, self.result
        result.total = result.queued
        if selection.remaining is None and c.shard is None and manifest is not None:
            manifest["questions_in_input"] = selection.in_input  # a later rerun's total
        if manifest is not None:  # exact now: what a report counts the run against
            manifest["questions_planned"] = selection.selected
        if self.runner.on_progress:
            self.runner.on_progress(result, None)

    def _no_questions(self) -> InputError:
        c = self.config
        return InputError("holds no questions"
                          + (f" among --question-ids {c.question_ids}"
                             if c.question_ids else "")
                          + ": nothing to run", file=c.data)

    # --- an episode ---

    async def _episode(self, episode: Episode, todo: list[Question]) -> None:
        self.missing[episode.episode_id] = missing_images(episode)
        order = next(self.episode_order)
        ROUTING_KEY.set(episode.episode_id)  # this task's requests: one replica (0031)
        system: Any = None
        try:
            if self.s.captions is not None:  # once per distinct image, before any system reads
                await self.s.captions.apply(episode)
            system = self.s.new_system()
            await self._ingest_and_ask(system, episode, todo, order)
        except (RunStopped, StorageError):  # the run stops; its records cannot be written
            raise
        except Exception as exc:  # noqa: BLE001 - its unanswered questions become errors
            await self._fail_unanswered(episode, todo, exc)
        finally:
            self.missing.pop(episode.episode_id, None)
            self.episodes_in_flight.release()
            if isinstance(system, EpisodeEnding):  # frees what it holds on a server (letta)
                await system.end_episode()

    async def _ingest_and_ask(self, system: Any, episode: Episode, todo: list[Question],
                              order: int) -> None:
        """Ingest the sessions up to each question's history cut, asking the questions of
        a cut once it is reached; the ingest's cost is shared among them (0027)."""
        meter = IngestMeter()
        with meter.timing():
            await system.reset(episode)
        ingested = 0
        by_cut: dict[int, list[Question]] = {}
        for q in todo:
            by_cut.setdefault(_history_cut(self.config.protocol, episode, q), []).append(q)
        for cut in sorted(by_cut):
            if self.budget.reason:  # no more ingest calls either; a rerun goes on
                break
            while ingested < cut:
                with meter.timing(sessions=1):
                    await system.ingest(episode.sessions[ingested])
                ingested += 1
            batch = by_cut[cut]
            answered = await self._ask_batch(system, episode, batch,
                                             meter.shares(len(batch)), order)
            meter.answered(answered)

    async def _ask_batch(self, system: Any, episode: Episode, batch: list[Question],
                         shares: list[Share], order: int) -> list[Response | None]:
        if len(batch) == 1:  # the usual case: no extra task
            return [await self._answer_one(system, episode, batch[0], shares[0], (order, 0))]
        if self.prefix:
            return await warm_first([
                functools.partial(self._answer_one, system, episode, q, sh, (order, i))
                for i, (q, sh) in enumerate(zip(batch, shares, strict=True))])
        return await asyncio.gather(*(
            self._answer_one(system, episode, q, sh, (order, i))
            for i, (q, sh) in enumerate(zip(batch, shares, strict=True))))

    async def _fail_unanswered(self, episode: Episode, todo: list[Question],
                               exc: Exception) -> None:
        """An episode that failed (its captions, reset or ingest): each of its questions
        without a record gets one with the error (``caption_error`` for a caption)."""
        kind = exc.error_kind if isinstance(exc, EpisodeFailure) else "system_error"
        err = ErrorInfo(kind=kind, message=f"{type(exc).__name__}: {exc}")
        for q in todo:
            if q.question_id in self.written:
                continue
            await self.writer.write(make_record(episode, q, Response(error=err),
                                                self.s.scorers, {}))
            self.written.add(q.question_id)
            self.result.done += 1
            self.result.errors += 1

    # --- a question ---

    async def _answer_one(self, system: Any, episode: Episode, q: Question, share: Share,
                          rank: tuple[int, int] = (0, 0),
                          then: Then | None = None) -> Response | None:
        t0 = time.perf_counter()
        PRIORITY.set(rank)  # the endpoint's adaptive limit keeps the gate's order (0034)
        async with self.gate.hold(rank):
            if self.breaker.reason or self.budget.reason:  # the run is stopping: send nothing
                return None  # more (no record: the question stays to do for a rerun)
            t_sent = time.perf_counter()
            try:
                response = await system.answer(q)
            except Exception as exc:  # noqa: BLE001 - a system bug must not lose the item
                response = Response(error=ErrorInfo(
                    kind="system_error", message=f"{type(exc).__name__}: {exc}"))
            answer_s = time.perf_counter() - t_sent
            if then is not None:  # warm_first: the followers queue before this slot frees
                await then()
        record = make_record(episode, q, response, self.s.scorers,
                             {"answer_s": round(time.perf_counter() - t0, 4)},
                             self.missing.get(episode.episode_id),
                             cost=share.cost(response, answer_s))
        self.breaker.observe(record)  # before any await: the next question must see a stop
        self.budget.add(record)
        if self.levels is not None:
            self.result.levels = self.levels()
        await self._judge_and_write(record, q)
        if self.breaker.reason:
            raise RunStopped(self.breaker.reason)
        return response

    async def _judge_and_write(self, record: Record, q: Question) -> None:
        judging, result = self.s.judging, self.result
        if judging is not None:
            t1 = time.perf_counter()
            await judging.apply(record)
            record.timings["judge_s"] = round(time.perf_counter() - t1, 4)
        await self.writer.write(record)
        self.written.add(q.question_id)
        result.done += 1
        if record.status == "ok":
            result.ok += 1
        else:
            result.errors += 1
        if self.runner.on_progress:
            self.runner.on_progress(result, record)
