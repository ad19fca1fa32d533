"""Answering: episodes streamed from the reader, ingested and asked, each record
scored, judged and written as it finishes."""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InputError
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

    # complexity above 15 kept: the answer loop with its gate, budget and breaker (design 0048)
    async def answer(self, s: Setup, done_ok: frozenset[str], result: RunResult, *,  # noqa: C901
                     manifest: dict[str, Any] | None = None,
                     part: tuple[int, int] | None = None) -> None:
        """Answer every question not yet done (of this ``part`` of the items, in a worker),
        writing each record as it finishes. ``manifest`` gets the package versions once the
        first request is out (the parent does that when there are workers)."""
        c = self.config
        scorers, judging, model, new_system = s.scorers, s.judging, s.model, s.new_system
        writer = RecordWriter(self.run_dir)
        gc_previous = quiet_gc()  # see runner/_gc.py
        prefix = shares_prefix(s.probe)  # its first question warms the server (design 0031)
        slots = gate_slots(c.concurrency, model, prefix)
        sem = PriorityGate(slots)
        episode_order = itertools.count()  # a question's gate key: (its episode's, its place)
        # A shared-prefix episode asked at several points (asked_after) frees the gate between
        # them; an episode started meanwhile would take the slot and evict its history from
        # the server's cache. So no more such episodes than slots (their ingest costs nothing).
        episodes_in_flight = asyncio.Semaphore(slots if prefix else max(2, c.concurrency * 2))
        tasks: set[asyncio.Task[None]] = set()
        budget = self.budget = make_budget(self.run_dir, c.model, c.budget_usd,
                                           c.max_tokens_total, c.prices,
                                           judges=[c.judge] if c.judge else [])
        if judging is not None:  # the judge's tokens count toward the budget too (0034)
            judging.on_spend = budget.add_judge
        levels = model.concurrency_levels if isinstance(model, EndpointReporting) else None

        async def answer_one(system: Any, episode: Episode, q: Question, share: Share,
                             rank: tuple[int, int] = (0, 0),
                             then: Then | None = None) -> Response | None:
            t0 = time.perf_counter()
            PRIORITY.set(rank)  # the endpoint's adaptive limit keeps the gate's order (0034)
            async with sem.hold(rank):
                if breaker.reason or budget.reason:  # the run is stopping: send nothing
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
            record = make_record(episode, q, response, scorers,
                                 {"answer_s": round(time.perf_counter() - t0, 4)},
                                 missing.get(episode.episode_id),
                                 cost=share.cost(response, answer_s))
            breaker.observe(record)  # before any await: the next question must see a stop
            budget.add(record)
            if levels is not None:
                result.levels = levels()
            if judging is not None:
                t1 = time.perf_counter()
                await judging.apply(record)
                record.timings["judge_s"] = round(time.perf_counter() - t1, 4)
            await writer.write(record)
            written.add(q.question_id)
            result.done += 1
            if record.status == "ok":
                result.ok += 1
            else:
                result.errors += 1
            if self.on_progress:
                self.on_progress(result, record)
            if breaker.reason:
                raise RunStopped(breaker.reason)
            return response

        missing: dict[str, list[str]] = {}  # per episode, computed once
        written: set[str] = set()  # question ids with a record from this invocation
        breaker = Breaker(c)

        async def do_episode(episode: Episode, todo: list[Question]) -> None:
            missing[episode.episode_id] = missing_images(episode)
            order = next(episode_order)
            ROUTING_KEY.set(episode.episode_id)  # this task's requests: one replica (0031)
            system: Any = None
            try:
                if s.captions is not None:  # once per distinct image, before any system reads
                    await s.captions.apply(episode)
                system = new_system()
                meter = IngestMeter()  # what ingest cost, shared among the questions (0027)
                with meter.timing():
                    await system.reset(episode)
                ingested = 0
                by_cut: dict[int, list[Question]] = {}
                for q in todo:
                    by_cut.setdefault(_history_cut(c.protocol, episode, q), []).append(q)
                for cut in sorted(by_cut):
                    if budget.reason:  # no more ingest calls either; a rerun goes on
                        break
                    while ingested < cut:
                        with meter.timing(sessions=1):
                            await system.ingest(episode.sessions[ingested])
                        ingested += 1
                    batch = by_cut[cut]
                    shares = meter.shares(len(batch))
                    if len(batch) == 1:  # the usual case: no extra task
                        answered = [await answer_one(system, episode, batch[0], shares[0],
                                                     (order, 0))]
                    elif prefix:
                        answered = await warm_first([
                            functools.partial(answer_one, system, episode, q, sh, (order, i))
                            for i, (q, sh) in enumerate(zip(batch, shares, strict=True))])
                    else:
                        answered = await asyncio.gather(*(
                            answer_one(system, episode, q, sh, (order, i))
                            for i, (q, sh) in enumerate(zip(batch, shares, strict=True))))
                    meter.answered(answered)
            except (RunStopped, StorageError):  # the run stops; its records cannot be written
                raise
            except Exception as exc:  # noqa: BLE001 - its unanswered questions become errors
                err = ErrorInfo(kind=getattr(exc, "error_kind", "system_error"),  # caption_error
                                message=f"{type(exc).__name__}: {exc}")
                for q in todo:
                    if q.question_id in written:
                        continue
                    await writer.write(make_record(episode, q, Response(error=err), scorers, {}))
                    written.add(q.question_id)
                    result.done += 1
                    result.errors += 1
            finally:
                missing.pop(episode.episode_id, None)
                episodes_in_flight.release()
                if isinstance(system, EpisodeEnding):  # frees what it holds on a server (letta)
                    await system.end_episode()

        # Episode tasks only raise when the run must stop (RunStopped, or an interrupt);
        # their exception is kept here as they finish, so the loop stops starting episodes.
        stopped: list[BaseException] = []

        def finished(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            if not task.cancelled() and task.exception() is not None and not stopped:
                stopped.append(task.exception())  # type: ignore[arg-type]

        remaining = c.limit
        started = False
        in_input = 0  # questions in the input (after --question-ids), done ones included
        selected = 0  # of those, the ones this run is meant to hold (--limit), done included
        spent = False  # a budget stopped the run: the reader only counts on
        try:
            for episode in self._episodes(s.bench, part):
                in_input += len(episode.questions)
                if remaining is not None and remaining <= 0:
                    break
                keep = episode.questions
                if remaining is not None:
                    # --limit counts questions (done ones included), in file order
                    keep = episode.questions[:remaining]
                    remaining -= len(keep)
                selected += len(keep)
                todo = [q for q in keep if q.question_id not in done_ok]
                if not todo or spent:
                    continue
                result.queued += len(todo)
                await episodes_in_flight.acquire()
                if stopped:  # an episode stopped the run: start nothing more
                    raise stopped[0]
                if budget.reason:  # spent: start nothing more (in-flight ones finish), but
                    episodes_in_flight.release()  # read on, so the run knows its size (0040)
                    spent = True
                    continue
                task = asyncio.create_task(do_episode(episode, todo))
                tasks.add(task)
                task.add_done_callback(finished)
                if not started:
                    # Get the first request on the wire before reading on (bounded wait).
                    started = True
                    deadline = time.monotonic() + 1.0
                    while (isinstance(model, SendClock) and model.first_send_at is None
                           and not task.done()
                           and time.monotonic() < deadline):
                        await asyncio.sleep(0.001)
                    if manifest is not None:
                        manifest["packages"] = package_versions()
                        write_manifest(self.run_dir, manifest)
                await asyncio.sleep(0)  # let work start while the loader reads on
            if part is None:  # the reader is through: the to-do count is exact now
                result.total = result.queued
                if remaining is None and c.shard is None and manifest is not None:
                    manifest["questions_in_input"] = in_input  # a later rerun's total
                if manifest is not None:  # exact now: what a report counts the run against
                    manifest["questions_planned"] = selected
                if self.on_progress:
                    self.on_progress(result, None)
            if tasks:
                await asyncio.gather(*tasks)
            if stopped:
                raise stopped[0]
            result.budget_stop = budget.reason
            # episodes without a question count as nothing (a shard may be empty)
            if not in_input and part is None and c.shard is None:
                raise InputError("holds no questions"
                                 + (f" among --question-ids {c.question_ids}"
                                    if c.question_ids else "")
                                 + ": nothing to run", file=c.data)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            restore_gc(gc_previous)
            await writer.close()

