"""Warm Ray workers kept between runs (``--ray-keep-warm SECONDS``; design 0033).

Opt-in: the parts run in named detached actors (namespace ``memgauge``, one per part slot)
instead of fresh tasks. They stay alive after the run for SECONDS of idleness and then end
themselves, so a later run with the same installed code finds them and pays no worker start.
The name carries memgauge's version and a fingerprint of the package's source files (path,
size, mtime), so a changed install never reuses a process holding stale code.

A part runs through the same ``answer_part`` as a task. An actor whose process dies is
restarted by Ray and the call retried (``max_restarts``/``max_task_retries``, as many as a
task's retries); the retry finds the part's task file and skips what was written.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigFieldError

if TYPE_CHECKING:
    from ._config import RunConfig

NAMESPACE = "memgauge"
MAX_KEEP_WARM_S = 7 * 24 * 3600.0  # a bound, so a typo cannot leave processes for years
# after a warm call the run's parts are on their way: not idle until then, unless the driver
# is gone (it waits at most RayStart.WARM_WAIT_S for the warm calls, then submits)
PARTS_DUE_S = 300.0


def check_keep_warm(config: RunConfig) -> None:
    keep = config.ray_keep_warm_s
    if keep is None:
        return
    if config.executor != "ray":
        raise ConfigFieldError("{ray_keep_warm_s} applies to {executor} ray only",
                               "ray_keep_warm_s", "executor")
    if not (math.isfinite(keep) and 0 < keep <= MAX_KEEP_WARM_S):
        raise ConfigFieldError(f"{{ray_keep_warm_s}} {keep:g}: must be seconds of idleness, "
                               f"more than 0 and at most {MAX_KEEP_WARM_S:g} (7 days)",
                               "ray_keep_warm_s")


@functools.cache
def code_fingerprint() -> str:
    """The installed memgauge's fingerprint (computed once per process)."""
    return source_fingerprint(Path(__file__).resolve().parents[1])


def source_fingerprint(root: Path) -> str:
    """A cheap digest of a package's source (relative path, size, mtime of every .py file):
    no file is read, so it costs a few ms for the whole package."""
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def actor_name(slot: int) -> str:
    from .. import __version__

    return f"memgauge-{__version__}-{code_fingerprint()}-slot{slot}"


class PartWorker:
    """The body of a warm actor: answers parts one at a time, and ends itself once idle for
    the keep-warm seconds the latest call gave."""

    def __init__(self, keep_warm_s: float) -> None:
        self.keep_warm_s = keep_warm_s
        self.busy = 0
        self.last = time.monotonic()
        self.calls = 0
        self.parts_due = False  # warmed for a run whose parts have not come yet
        threading.Thread(target=self._watch, name="memgauge-idle", daemon=True).start()

    def _touch(self, keep_warm_s: float) -> None:
        self.keep_warm_s = keep_warm_s
        self.last = time.monotonic()

    def pid(self) -> int:
        return os.getpid()

    def warm(self, config: RunConfig, keep_warm_s: float) -> dict[str, Any]:
        """Import what the run's parts use, and say which process this is."""
        from ._ray import warm_up

        self._touch(keep_warm_s)
        warm_up(config)
        self.calls += 1
        self.parts_due = True
        return {"pid": os.getpid(), "calls": self.calls}

    def answer(self, config: RunConfig, done_ok: frozenset[str], k: int, n: int,
               keep_warm_s: float) -> dict[str, Any]:
        from ._ray import answer_part

        self._touch(keep_warm_s)
        self.busy += 1
        self.parts_due = False
        try:
            return answer_part(config, done_ok, k, n) | {"pid": os.getpid()}
        finally:
            self.busy -= 1
            self.last = time.monotonic()

    def idle_for(self) -> float:
        """How long the actor may stay idle now before it ends itself."""
        return max(self.keep_warm_s, PARTS_DUE_S) if self.parts_due else self.keep_warm_s

    def expire(self) -> bool:
        """Runs between calls (an actor's calls are serial): ends the actor only if no call
        came since the watcher saw it idle."""
        if self.busy or time.monotonic() - self.last < self.idle_for():
            return False
        import ray

        # ray.actor.exit_actor() is restarted like a crash when max_restarts > 0 (seen with
        # Ray 2.60); a kill with no_restart ends the actor for good and frees its name
        ray.kill(ray.get_runtime_context().current_actor, no_restart=True)
        return True

    def _watch(self) -> None:
        import ray

        while True:
            left = self.idle_for() - (time.monotonic() - self.last)
            if left > 0 or self.busy:
                time.sleep(min(max(left, 0.05), 1.0))
                continue
            with_handle = ray.get_runtime_context().current_actor
            with_handle.expire.remote()
            time.sleep(1.0)


class WarmPool:
    """The driver's side: find or create the slot actors, warm them, run parts on them."""

    def __init__(self, ray: Any, config: RunConfig, slots: int, retries: int) -> None:
        self.ray, self.config, self.retries = ray, config, retries
        self.keep = float(config.ray_keep_warm_s or 0)
        self.cls = ray.remote(num_cpus=1, max_restarts=retries,
                              max_task_retries=retries)(PartWorker)
        self.actors = [self._get_or_create(k) for k in range(slots)]
        self.warm_refs = [a.warm.remote(config, self.keep) for a in self.actors]

    def _get_or_create(self, slot: int) -> Any:
        return self.cls.options(name=actor_name(slot), namespace=NAMESPACE,
                                lifetime="detached", get_if_exists=True).remote(self.keep)

    def wait_warm(self, timeout_s: float) -> list[dict[str, Any]]:
        """Each warm actor's pid and call count (1: made for this run); an actor that ended
        (its idle expiry racing this run) is made anew."""
        found: list[dict[str, Any]] = []
        ready, _ = self.ray.wait(self.warm_refs, num_returns=len(self.warm_refs),
                                 timeout=timeout_s)
        for slot, ref in enumerate(self.warm_refs):
            if ref not in ready:
                continue
            try:
                found.append(self.ray.get(ref))
            except self.ray.exceptions.RayActorError:
                self.actors[slot] = self._get_or_create(slot)
        self.warm_refs = []  # no reference may outlive ray.shutdown()
        return found

    def submit(self, config: RunConfig, done_ref: Any, k: int, n: int) -> Any:
        actor = self.actors[k % len(self.actors)]
        return actor.answer.remote(config, done_ref, k, n, self.keep)

    def kill_all(self) -> None:
        """Ctrl-C: a running actor call cannot be cancelled (Ray interrupts tasks, not sync
        actor calls), and it must not write on into a folder the driver has let go."""
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)

    def close(self) -> None:
        self.actors = []
        self.warm_refs = []
