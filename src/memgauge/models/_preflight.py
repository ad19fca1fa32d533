"""Pre-flight: one cheap request per distinct endpoint (model and judge) before the first
question, so a wrong URL, a refused key or a server that is not there is one clear
``ConfigError`` at once instead of an error (after minutes of retries) per question.

The request is ``GET <base>/models`` (docs/design/0016). What it decides:

- nothing listening, a name that does not resolve, a certificate that does not verify, a
  proxy that refuses the tunnel, no connection within the time: ``ConfigError``, naming
  the URL (and the proxy);
- 401/403: ``ConfigError``: the key was refused (or is missing), naming the variable;
- 404 while ``<base>/v1/models`` answers with a model list: ``ConfigError`` suggesting
  ``--base-url <base>/v1``;
- a 301/302/303 on the way: ``ConfigError`` naming the status and Location with the
  ``--base-url`` to use (the chat POST would not follow it); a 307/308 is followed (the POST
  follows it too) with a warning that every request takes the extra hop;
- a model list: the entry whose ``id`` is the model's name (``id``, ``root``, ``created``,
  ``owned_by`` where given) is handed to the model, which keys its cache on it and records
  it; a ``created`` within ``NOW_STAMP_S`` of now is the server's clock at reply time (vLLM,
  SGLang, llama.cpp stamp every listing so), not the model's, and is left out;
- a model list without the model's name (``name:latest`` counts, as Ollama lists it):
  ``ConfigError`` naming the names it lists (every request would be refused);
- anything else (404/405/501 for both paths, a 5xx, not JSON, an empty list, a reply that
  timed out on an open connection): one warning, and the run goes on keyed as before.

A hosted ``https`` URL (not loopback) sent without an API key gets one warning. Models
without ``preflight_target`` (replay, scripted, none) and ``local:`` (whose server this
process started and already asked) are not checked. Each endpoint is asked once per run:
the findings are kept by the caller and applied to the models a worker process makes.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import orjson

from .._secrets import redact_text, redact_url
from ..errors import ConfigError
from ._capabilities import Preflighted
from ._http import (
    MAX_REDIRECTS,
    ConnectError,
    HttpClient,
    HttpError,
    HttpResponse,
    TlsVerifyError,
    is_loopback,
)
from .openai_compat import bounded

PREFLIGHT_TIMEOUT_S = 30.0
NOW_STAMP_S = 300.0  # a `created` this close to now is when the list was made, not the model
ENTRY_FIELDS = ("id", "root", "created", "owned_by")
T = TypeVar("T")


@dataclass(frozen=True)
class Role:
    """Which model an endpoint serves, and the flags its errors name."""

    label: str  # "model" or "judge"
    url_flag: str  # --base-url / --judge-base-url
    key_flag: str  # --api-key-env / --judge-api-key-env


MODEL = Role("model", "--base-url", "--api-key-env")
JUDGE = Role("judge", "--judge-base-url", "--judge-api-key-env")


@dataclass
class Listing:
    """What one endpoint's ``/models`` said: its entries, or why there are none."""

    entries: list[dict[str, Any]] | None = None
    note: str | None = None  # why the cache cannot be keyed on the served model
    warnings: list[str] = field(default_factory=list)


def check(models: list[tuple[Any, Role]], known: dict[tuple[str, str], Listing],
          warn: Any = None) -> None:
    """Pre-flight every model that has an endpoint to check, once per distinct (base URL,
    credentials): raise ``ConfigError`` for an endpoint that cannot work, print each
    warning once, and hand each model what its server serves. ``known`` holds the findings
    of earlier calls (a worker process's models are given them without a request)."""
    say = warn or _warn
    todo: dict[tuple[str, str], tuple[str, dict[str, str], Preflighted, Role]] = {}
    for model, role in models:
        target = model.preflight_target() if isinstance(model, Preflighted) else None
        if target is None:
            continue
        base, headers = target
        key = (base, headers.get("Authorization", ""))
        if key not in known and key not in todo:
            todo[key] = (base, headers, model, role)
    if todo:
        found = _run(_check_all(todo))
        for key, listing in found.items():
            for line in listing.warnings:
                say(line)
            known[key] = listing
    told: set[tuple[str, str]] = set()
    for model, role in models:
        target = model.preflight_target() if isinstance(model, Preflighted) else None
        if target is None:
            continue
        base, headers = target
        key = (base, headers.get("Authorization", ""))
        entry, note = served_entry(known[key], model.name, base)
        listed = known[key].entries
        if entry is None and listed:  # a list that leaves this name out
            raise ConfigError(unlisted_message(listed, model.name, base, role))
        # said once: by the call that asked (not again in each worker process), and a
        # listing's own note (already among its warnings) not twice
        if note and key in todo and note != known[key].note and (base, model.name) not in told:
            told.add((base, model.name))
            say(note)
        model.note_served(entry, note)


def _warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr, flush=True)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end from synchronous code, inside a running event loop or not
    (setup is called from both): in a thread of its own, with a loop of its own."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append((True, asyncio.run(coro)))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out.append((False, exc))

    thread = threading.Thread(target=target, name="memgauge-preflight", daemon=True)
    thread.start()
    thread.join()
    ok, value = out[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


async def _check_all(todo: dict[tuple[str, str], tuple[str, dict[str, str], Preflighted, Role]],
                     ) -> dict[tuple[str, str], Listing]:
    keys = list(todo)
    timeout = {k: min(PREFLIGHT_TIMEOUT_S, todo[k][2].settings.timeout_s) for k in keys}
    results = await asyncio.gather(*(
        check_endpoint(todo[k][0], todo[k][1], todo[k][3], timeout[k],
                       key_env=todo[k][2].settings.api_key_env)
        for k in keys))
    return dict(zip(keys, results, strict=True))


async def check_endpoint(base: str, headers: dict[str, str], role: Role = MODEL,
                         timeout_s: float = PREFLIGHT_TIMEOUT_S,
                         key_env: str = "OPENAI_API_KEY") -> Listing:
    """The pre-flight of one endpoint (see the module docstring)."""
    shown = redact_url(base) or base
    listing = Listing()
    host = urlsplit(base).hostname
    auth = headers.get("Authorization", "")
    key = auth.removeprefix("Bearer ").strip() or None
    if urlsplit(base).scheme == "https" and not is_loopback(host) and not key:
        listing.warnings.append(f"no API key for the {role.label} at {shown}: ${key_env} is "
                                f"not set, so requests go without one (set it, or name "
                                f"another variable with {role.key_flag})")
    client = HttpClient(f"{base}/models", headers, timeout_s)
    try:
        resp = await _get(client, f"{base}/models", shown, role, timeout_s, listing)
        if resp is None:
            return listing
        if resp.status == 404 and not base.rstrip("/").endswith("/v1"):
            alt = await _probe(client, f"{base}/v1/models", timeout_s)
            if alt is not None and alt.status == 200 and _entries(alt.body) is not None:
                raise ConfigError(f"the {role.label} endpoint {shown} has no /models (HTTP "
                                  f"404) but {shown}/v1/models answers: did you mean "
                                  f"{role.url_flag} {shown}/v1?")
        return _read(resp, listing, shown, role, key_env, key)
    finally:
        await client.aclose()


async def _get(client: HttpClient, url: str, shown: str, role: Role, timeout_s: float,
               listing: Listing) -> HttpResponse | None:
    """The reply to the first GET; ``ConfigError`` where no connection could be made;
    None (with a warning) where one was made but no usable reply came."""
    try:
        return await client.get(url)
    except TlsVerifyError as exc:
        raise ConfigError(f"the {role.label} endpoint {shown}: {exc}; fix the certificate "
                          "(or the URL); this is never retried") from None
    except ConnectError as exc:
        why = str(exc)
        if isinstance(exc.__cause__, socket.gaierror):
            why = (f"the host name in {exc.target} does not resolve "
                   f"({exc.__cause__.strerror or exc.__cause__})")
        raise ConfigError(f"nothing answers at the {role.label} endpoint {shown}: {why}; "
                          f"is the server running, and is {role.url_flag} right?") from None
    except TimeoutError:
        if client.connections_opened == 0:
            raise ConfigError(f"no connection to the {role.label} endpoint {shown} within "
                              f"{timeout_s:g} s; is the server running, and is "
                              f"{role.url_flag} right?") from None
        listing.note = f"GET {shown}/models did not answer within {timeout_s:g} s"
        listing.warnings.append(f"{listing.note}; going on without checking the endpoint")
        return None
    except HttpError as exc:
        listing.note = f"GET {shown}/models failed ({exc})"
        listing.warnings.append(f"{listing.note}; going on without checking the endpoint")
        return None


async def _probe(client: HttpClient, url: str, timeout_s: float) -> HttpResponse | None:
    try:
        return await client.get(url)
    except (HttpError, TimeoutError):
        return None


def _read(resp: HttpResponse, listing: Listing, shown: str, role: Role, key_env: str,
          key: str | None) -> Listing:
    url = f"{shown}/models"
    followed = [s for s, _ in resp.redirects]
    if any(s not in (307, 308) for s in followed):
        status, location = next(h for h in resp.redirects if h[0] not in (307, 308))
        raise ConfigError(f"the {role.label} endpoint redirects: GET {url} got HTTP {status} "
                          f"to {location}, which a chat request (a POST) does not follow; "
                          f"use {role.url_flag} {_base_of(location)}")
    if resp.redirects:
        final = resp.redirects[-1][1]
        listing.warnings.append(f"the {role.label} endpoint {shown} redirects (HTTP "
                                f"{followed[0]}) to {final}: every request takes the extra "
                                f"hop; {role.url_flag} {_base_of(final)} avoids it")
    if resp.status in (301, 302, 303, 307, 308):
        listing.note = (f"GET {url}: more than {MAX_REDIRECTS} redirects"
                        if len(resp.redirects) >= MAX_REDIRECTS
                        else f"GET {url} answered HTTP {resp.status} without a usable Location")
        listing.warnings.append(f"{listing.note}; going on without checking the endpoint")
        return listing
    if resp.status in (401, 403):
        said = _server_message(resp.body, key)
        if key:
            raise ConfigError(f"the key was refused: GET {url} answered HTTP {resp.status}"
                              f"{said}; check ${key_env} (or name another variable with "
                              f"{role.key_flag})")
        raise ConfigError(f"the {role.label} endpoint {shown} needs an API key (HTTP "
                          f"{resp.status}{said}): set ${key_env} or name another variable "
                          f"with {role.key_flag}")
    if resp.status != 200:
        listing.note = f"GET {url} answered HTTP {resp.status}"
        listing.warnings.append(f"{listing.note}: the endpoint is not checked, and its cache "
                                "is keyed on the URL and model name only")
        return listing
    entries = _entries(resp.body)
    if entries is None:
        listing.note = f"GET {url} did not answer with a model list"
        listing.warnings.append(f"{listing.note}: the cache is keyed on the URL and model "
                                "name only")
        return listing
    listing.entries = entries
    return listing


def served_entry(listing: Listing, name: str, base: str,
                 now: float | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """The entry this model's cache key and description take from the listing, and a note
    when there is none."""
    if listing.entries is None:
        return None, listing.note
    shown = redact_url(base) or base
    for e in listing.entries:
        if e.get("id") in (name, f"{name}:latest"):  # Ollama lists a bare name's default tag
            entry = {k: e[k] for k in ENTRY_FIELDS
                     if isinstance(e.get(k), str | int | float) and not isinstance(e[k], bool)}
            created = entry.get("created")
            clock = time.time() if now is None else now
            if isinstance(created, int | float) and abs(created - clock) <= NOW_STAMP_S:
                del entry["created"]  # the time of the listing, new at every request
            return entry, None
    ids = [str(e.get("id")) for e in listing.entries[:8]]
    more = f", … ({len(listing.entries) - 8} more)" if len(listing.entries) > 8 else ""
    return None, (f"{shown}/models lists no model named {name!r} (it lists: "
                  f"{', '.join(ids) or 'none'}{more}): the cache is keyed on the URL and "
                  "model name only")


def unlisted_message(entries: list[dict[str, Any]], name: str, base: str, role: Role) -> str:
    """A model name the endpoint's list leaves out: every request would be refused, so the
    run stops before the first, naming what the endpoint does serve."""
    shown = redact_url(base) or base
    ids = [str(e.get("id")) for e in entries[:20]]
    more = f", … ({len(entries) - 20} more)" if len(entries) > 20 else ""
    return (f"the {role.label} endpoint {shown} does not serve {name!r}: its /models lists "
            f"{', '.join(ids)}{more}; name one of those, or point {role.url_flag} at the "
            f"server that serves {name!r}")


def _base_of(models_url: str) -> str:
    base = models_url.removesuffix("/models")
    return base.rstrip("/")


def _entries(body: bytes) -> list[dict[str, Any]] | None:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    data = obj.get("data") if isinstance(obj, dict) else None
    if not isinstance(data, list):
        return None
    return [e for e in data if isinstance(e, dict)]


def _server_message(body: bytes, key: str | None) -> str:
    """The server's own words on a refusal (a key it echoes replaced by ***)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        msg: Any = body[:300].decode("utf-8", "replace").strip()
    else:
        err = obj.get("error", obj) if isinstance(obj, dict) else None
        msg = err.get("message") if isinstance(err, dict) else None
    return f": {redact_text(bounded(str(msg), 160), [key])}" if msg else ""
