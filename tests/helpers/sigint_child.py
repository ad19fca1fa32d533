"""Start a CLI child for a Ctrl-C test with SIGINT as a user's shell gives it: default
disposition, not blocked. A child inherits both from the process that starts it, and the
test process has loaded many libraries by the time these tests run (in the full suite a child
was seen to ignore SIGINT, though none of memgauge's code ignores it); a test of memgauge's
Ctrl-C handling must not depend on what they left in pytest's process."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def _as_from_a_shell() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen(cmd: list[str], **kwargs: Any) -> subprocess.Popen:
    return subprocess.Popen(cmd, preexec_fn=_as_from_a_shell, **kwargs)  # noqa: PLW1509
