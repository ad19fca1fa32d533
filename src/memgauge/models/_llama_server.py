"""llama.cpp's own HTTP server (through xllamacpp) for one run, on 127.0.0.1.

The server runs in a child process (``python -m memgauge.models._llama_server``) rather than
in ours: llama.cpp's threads then never meet a fork (``--workers``), a crash in native code
cannot take the run with it, and stopping is closing a pipe. The child starts the server on
a free port, prints one JSON line with its address, and serves until its stdin reaches EOF,
which also happens when the parent dies (kill -9 included), so no server is left behind.
memgauge then talks to it over HTTP like to any OpenAI-compatible endpoint.

Example::

    server = LlamaServer.start(LlamaServerOptions(model=path, n_ctx=8192, slots=1))
    server.base_url        # http://127.0.0.1:PORT/v1
    server.stop()
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

# Start-up waits on the server's own /health (503 while it loads the model, 200 when it can
# answer), for a limit scaled to the model's size and to how busy the cores are now: a fixed
# 120 s stopped the demo on a loaded machine (issue 27). SmolLM2-135M (98 MB) is ready in
# ~1.3 s on two idle cores; the base and the slow read rate leave room for a cold disk.
START_BASE_S = 30.0
START_BYTES_PER_S = 20e6
HEALTH_POLL_S = 0.2
STOP_GRACE_S = 2.0


@dataclass(frozen=True)
class LlamaServerOptions:
    model: Path
    n_ctx: int = 8192  # per slot: what one request may use (prompt + answer)
    slots: int = 1  # llama.cpp's n_parallel: requests computed at once
    threads: int = 0  # 0 = every core
    mmproj: Path | None = None  # multimodal projector: images for a VLM GGUF
    flash_attn: str = "auto"  # auto | on | off
    chat_template: str | None = None  # a built-in template name; default: the model's own

    def to_child(self) -> dict[str, Any]:
        return {"model": str(self.model), "n_ctx": self.n_ctx, "slots": self.slots,
                "threads": self.threads or (os.cpu_count() or 1),
                "mmproj": str(self.mmproj) if self.mmproj else None,
                "flash_attn": self.flash_attn, "chat_template": self.chat_template}


def engine_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("xllamacpp")
    except Exception:  # noqa: BLE001 - not installed: the caller says how to install it
        return None


def require_engine() -> str:
    v = engine_version()
    if v is None:
        raise ConfigError("--model local: needs llama.cpp's server from the `local` extra: "
                          "pip install 'memgauge[local]' (xllamacpp, prebuilt CPU wheels)")
    return v


@dataclass
class LlamaServer:
    """A running server: its address, what it reports about itself, and the child process."""

    options: LlamaServerOptions
    address: str  # http://127.0.0.1:PORT
    props: dict[str, Any]
    models: dict[str, Any]
    engine_version: str
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log: Any = field(default=None, repr=False)
    _owner: int = field(default_factory=os.getpid, repr=False)
    start_limit_s: float = START_BASE_S  # what start-up was allowed: a first request's floor

    @property
    def base_url(self) -> str:
        return f"{self.address}/v1"

    @property
    def slots(self) -> int:
        return int(self.props.get("total_slots") or self.options.slots)

    @property
    def n_ctx(self) -> int:
        """Tokens one request may use, as the server reports it."""
        settings = self.props.get("default_generation_settings") or {}
        return int(settings.get("n_ctx") or self.options.n_ctx)

    @property
    def vision(self) -> bool:
        return bool((self.props.get("modalities") or {}).get("vision"))

    @property
    def model_id(self) -> str:
        data = self.models.get("data") or [{}]
        return str(data[0].get("id") or self.options.model.name)

    @classmethod
    def start(cls, options: LlamaServerOptions, floor_s: float = 0.0) -> LlamaServer:
        """Start the server and wait until its /health says it is ready, for at least
        ``floor_s`` (a run's ``--timeout``) and at least :func:`start_limit`."""
        version = require_engine()
        limit = start_limit(options.model, floor_s)
        # The server's log lives as long as the server (closed and removed by stop()).
        log = tempfile.NamedTemporaryFile(  # noqa: SIM115
            prefix="memgauge-llama-", suffix=".log", delete=False)
        proc = subprocess.Popen(_child_command(options), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, close_fds=True)
        server: LlamaServer | None = None
        deadline = time.monotonic() + limit.seconds
        try:
            line = _read_line(proc, limit.seconds)
            if not line:
                raise ConfigError(_start_failure(options, proc, log.name, limit))
            info = json.loads(line)
            if "error" in info:
                raise ConfigError(f"llama.cpp could not start {options.model.name}: "
                                  f"{info['error']}{_log_tail(log.name)}")
            address = str(info["address"]).rstrip("/")
            if not address.startswith("http"):
                address = f"http://{address}"
            _wait_ready(address, deadline, proc, options, limit, log.name)
            server = cls(options=options, address=address, props=_get_json(address, "/props"),
                         models=_get_json(address, "/v1/models"), engine_version=version,
                         _proc=proc, _log=log, start_limit_s=limit.seconds)
            _RUNNING.add(server)
            return server
        finally:
            if server is None:
                _terminate(proc)
                log.close()
                with contextlib.suppress(OSError):
                    os.unlink(log.name)

    def stop(self) -> None:
        """Stop the server (only the process that started it does; forked children don't)."""
        if self._proc is None or os.getpid() != self._owner:
            return
        proc, self._proc = self._proc, None
        _terminate(proc)
        _RUNNING.discard(self)
        if self._log is not None:
            self._log.close()
            with contextlib.suppress(OSError):
                os.unlink(self._log.name)

    def __hash__(self) -> int:
        return id(self)

    def death(self) -> str | None:
        """Why the server is gone, with the last lines it wrote, if its process has ended
        (a crash, the OOM killer, a kill); ``None`` while it runs or after :meth:`stop`."""
        code = self._proc.poll() if self._proc is not None else None
        if code is None:
            return None
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        tail = _log_tail(self._log.name, 8) if self._log is not None else ""
        return (f"llama.cpp's server for {self.options.model.name} died: its process {how}; "
                f"rerun to resume{tail}")

    def describe(self) -> dict[str, Any]:
        return {"engine": "llama.cpp server (xllamacpp)", "engine_version": self.engine_version,
                "n_ctx": self.n_ctx, "slots": self.slots, "vision": self.vision,
                "threads": self.options.to_child()["threads"],
                "flash_attn": self.options.flash_attn,
                "chat_template": self.options.chat_template or "the model's own"}


_RUNNING: set[LlamaServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop()


@dataclass(frozen=True)
class StartLimit:
    """How long a server may take to become ready, and what that was scaled from."""

    seconds: float
    model_mb: float
    load: float
    cpus: int
    floor_s: float

    def describe(self) -> str:
        return (f"{self.seconds:.0f} s, scaled to a {self.model_mb:.0f} MB model and a load "
                f"average of {self.load:.1f} on {self.cpus} cores, at least --timeout "
                f"{self.floor_s:g}")


def start_limit(model: Path, floor_s: float = 0.0, load: float | None = None,
                cpus: int | None = None) -> StartLimit:
    """A base plus the model file at a slow read rate, times how oversubscribed the cores
    are (the 1-minute load average, plus the server itself, per core), never under
    ``floor_s``."""
    cpus = cpus or os.cpu_count() or 1
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    try:
        size = model.stat().st_size
    except OSError:
        size = 0
    busy = max(1.0, (load + 1.0) / cpus)
    seconds = max(floor_s, (START_BASE_S + size / START_BYTES_PER_S) * busy)
    return StartLimit(seconds=seconds, model_mb=size / 1e6, load=load, cpus=cpus,
                      floor_s=floor_s)


def _child_command(options: LlamaServerOptions) -> list[str]:
    return [sys.executable, "-m", "memgauge.models._llama_server",
            json.dumps(options.to_child())]


def _health(address: str) -> tuple[bool, str]:
    """(ready, what /health said): 200 is ready; 503 is llama.cpp still loading the model."""
    try:
        with urllib.request.urlopen(f"{address}/health", timeout=5) as resp:
            return resp.status == 200, resp.read(200).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        body = exc.read(300).decode("utf-8", "replace")
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            body = json.loads(body)["error"]["message"]
        return False, f"HTTP {exc.code}: {body}"
    except (urllib.error.URLError, OSError) as exc:
        return False, f"no answer ({getattr(exc, 'reason', exc)})"


def _wait_ready(address: str, deadline: float, proc: subprocess.Popen[bytes],
                options: LlamaServerOptions, limit: StartLimit, log_path: str) -> None:
    """Poll /health until the server is ready; a ConfigError naming its last state and
    the fix when the limit passes or the process ends first."""
    said = "nothing"
    while True:
        ready, said = _health(address)
        if ready:
            return
        if proc.poll() is not None:
            raise ConfigError(_start_failure(options, proc, log_path, limit))
        if time.monotonic() >= deadline:
            raise ConfigError(
                f"llama.cpp's server for {options.model.name} did not become ready within "
                f"{limit.describe()}; its /health last said: {said}. Rerun when the machine "
                "is less busy, or allow more time with --timeout SECONDS"
                f"{_log_tail(log_path)}")
        time.sleep(HEALTH_POLL_S)


def _read_line(proc: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    """The child's first stdout line, or b'' if it exits or says nothing in time."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    buf = b""
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b""
            buf += chunk
            if b"\n" in buf:
                return buf.split(b"\n", 1)[0]
        elif proc.poll() is not None:
            return b""
    return b""


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        if proc.stdin is not None:
            proc.stdin.close()  # the child's cue to stop the server and exit
    try:
        # An idle server exits at once; one still computing an answer (a run interrupted)
        # would finish that batch first: nothing of it is wanted, so it is not waited for.
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    with contextlib.suppress(OSError, ValueError):
        if proc.stdout is not None:
            proc.stdout.close()


def _log_tail(path: str, lines: int = 6) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    keep = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return ("\n  llama.cpp said:\n    " + "\n    ".join(keep)) if keep else ""


def _start_failure(options: LlamaServerOptions, proc: subprocess.Popen[bytes],
                   log_path: str, limit: StartLimit) -> str:
    code = proc.poll()
    how = (f"exited with status {code}" if code is not None
           else f"did not start within {limit.describe()} (allow more with --timeout SECONDS)")
    return (f"llama.cpp's server for {options.model.name} {how} (n_ctx {options.n_ctx} x "
            f"{options.slots} slots){_log_tail(log_path)}")


def _get_json(address: str, path: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"{address}{path}", timeout=30) as resp:
            obj = json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ConfigError(f"llama.cpp's server at {address} did not answer {path}: {exc}") \
            from None
    return obj if isinstance(obj, dict) else {}


class Tokenizer:
    """Counts text tokens with the served model's own tokenizer (llama.cpp's ``/tokenize``).

    Synchronous on purpose: prompt assembly is synchronous, and a loopback call costs about
    a millisecond; the token counter memoises each distinct text, so a haystack turn shared
    by many prompts is sent once. One keep-alive connection per thread.
    """

    def __init__(self, address: str, death: Callable[[], str | None] | None = None) -> None:
        from urllib.parse import urlsplit

        self._death = death  # what the server's process says when a request cannot reach it
        parts = urlsplit(address)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._local = threading.local()

    def _conn(self) -> Any:
        import http.client

        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=60)
            self._local.conn = conn
        return conn

    def count(self, text: str) -> int:
        return len(self._post("/tokenize", {"content": text, "add_special": False})["tokens"])

    def template_overhead(self) -> tuple[int, int]:
        """(tokens per message, tokens priming the reply) of the model's chat template,
        measured by rendering it (``/apply-template``): e.g. 5 and 4 for ChatML."""
        def rendered(n_users: int) -> int:
            msgs = [{"role": "system", "content": "x"}] + [{"role": "user",
                                                            "content": "x"}] * n_users
            prompt = self._post("/apply-template", {"messages": msgs})["prompt"]
            return len(self._post("/tokenize", {"content": prompt, "add_special": True,
                                                "parse_special": True})["tokens"])

        x = self.count("x")
        one, two = rendered(1), rendered(2)
        per_message = max(0, two - one - x)
        return per_message, max(0, one - 2 * (per_message + x))

    def _post(self, path: str, obj: dict[str, Any]) -> Any:
        body = json.dumps(obj).encode()
        for attempt in (1, 2):  # a keep-alive connection the server closed: reconnect once
            conn = self._conn()
            try:
                conn.request("POST", path, body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                if resp.status != 200:
                    raise ConfigError(f"llama.cpp {path} answered HTTP {resp.status}: "
                                      f"{data[:200]!r}")
                return json.loads(data)
            except (OSError, ValueError) as exc:
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    died = self._death() if self._death is not None else None
                    raise ConfigError(died or f"llama.cpp {path} failed: {exc}") from None
        raise AssertionError("unreachable")


# -- the child process ---------------------------------------------------------------------

def _child(spec: dict[str, Any]) -> int:
    if sys.platform.startswith("linux"):  # die with the parent even if stdin stays open
        with contextlib.suppress(Exception):
            import ctypes
            import signal

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PDEATHSIG
    try:
        import xllamacpp

        xl: Any = xllamacpp  # a compiled extension without type stubs
        p = xl.CommonParams()
        p.model.path = spec["model"]
        p.n_parallel = int(spec["slots"])
        p.n_ctx = int(spec["n_ctx"]) * int(spec["slots"])  # llama.cpp splits it among slots
        p.cpuparams.n_threads = int(spec["threads"])
        p.cpuparams_batch.n_threads = int(spec["threads"])
        p.hostnames = ["127.0.0.1"]
        p.port = 0  # a free port, chosen by the OS
        p.endpoint_props = True
        p.offline = True  # never fetch anything
        p.flash_attn_type = {"on": xl.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED,
                             "off": xl.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED,
                             }.get(spec.get("flash_attn") or "",
                                   xl.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_AUTO)
        if spec.get("mmproj"):
            p.mmproj.path = spec["mmproj"]
        if spec.get("chat_template"):
            p.chat_template = spec["chat_template"]
        server = xl.Server(p)
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one JSON line
        sys.stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        sys.stdout.flush()
        return 1
    sys.stdout.write(json.dumps({"address": server.listening_address}) + "\n")
    sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.buffer.read()  # until the parent closes the pipe (or dies)
    del server
    return 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops us
    sys.exit(_child(json.loads(sys.argv[1])))
