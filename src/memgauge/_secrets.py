"""Keeping secrets out of run folders, reports and the terminal: passwords and tokens in
URLs, keys echoed back by servers (design 0016, "No secret in any artefact").

Example::

    redact_url("http://user:s3cret@host:8000/v1")   # 'http://user:***@host:8000/v1'
    redact_url("https://host/v1?api_key=k&x=1")       # 'https://host/v1?api_key=***&x=1'
    redact_urls_in_text("GET http://tok@host/ failed") # 'GET http://***@host/ failed'
    redact_text("bad key sk-abc", ["sk-abc"])        # 'bad key ***'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

MASK = "***"
# Query parameters whose value is a credential. Matched on the name lower-cased with "-"
# read as "_"; anything ending in one of the suffixes counts too ("x_api_key", "auth_token").
_SECRET_PARAMS = frozenset({"key", "api_key", "apikey", "token", "access_token", "auth",
                            "password", "passwd", "pwd", "secret", "sig", "signature",
                            "credential", "credentials", "session", "code"})
_SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "_signature", "_sig")
# A URL inside free text: a scheme, then everything up to white space or a quote/bracket
# that would end it in JSON, Markdown or HTML.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{1,15}://[^\s\"'<>`|\\]+")
_NEXT_URL = re.compile(r",(?=[A-Za-z][A-Za-z0-9+.\-]{1,15}://)")


def _secret_param(name: str) -> bool:
    name = name.lower().replace("-", "_")
    return name in _SECRET_PARAMS or name.endswith(_SECRET_SUFFIXES)


def _redact_query(query: str) -> str:
    if not query:
        return query
    parts = query.split("&")
    out = []
    for part in parts:
        name, eq, _value = part.partition("=")
        pairs = parse_qsl(part, keep_blank_values=True)
        key = pairs[0][0] if pairs else name
        out.append(f"{name}={MASK}" if eq and _secret_param(key) else part)
    return "&".join(out)


def redact_url(url: str | None) -> str | None:
    """``url`` with its credentials masked: the password of its user info (a user name
    alone is masked too: ``https://TOKEN@host`` is how many services take a token), and the
    value of every token-like query parameter (``api_key``, ``token``, ``sig``, ...)."""
    if not url or ("@" not in url and "?" not in url):
        return url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:  # not a URL we can take apart: mask whatever precedes an "@"
        return re.sub(r"//[^/@\s]*@", f"//{MASK}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        host = netloc.rpartition("@")[2]
        user = parts.username if parts.password is not None else None
        netloc = f"{user}:{MASK}@{host}" if user else f"{MASK}@{host}"
    query = _redact_query(parts.query)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_urls(text: str | None) -> str | None:
    """A comma-separated list of URLs (``--base-url a,b``), each redacted."""
    if not text or "," not in text:
        return redact_url(text)
    return ",".join(redact_url(u.strip()) or "" for u in text.split(","))


def redact_urls_in_text(text: str) -> str:
    """Every URL found in free text (an error message, a system's name, a report line),
    redacted; the text around it kept."""
    if "://" not in text:
        return text
    def one(match: re.Match[str]) -> str:
        url = match.group(0)
        end = len(url.rstrip(".,;:!?)]}"))  # sentence punctuation after a URL is not in it
        # "a,b": a list of URLs (--base-url a,b) is redacted URL by URL
        urls = _NEXT_URL.split(url[:end])
        return ",".join(redact_url(u) or "" for u in urls) + url[end:]

    return _URL_IN_TEXT.sub(one, text)


def redact_tree(obj: Any) -> Any:
    """A JSON-like value (a manifest, a config) with every URL in its strings redacted, in
    keys as well as values: one pass that covers every URL-valued option, present or
    future (system, base URLs, embedder, captioner, letta, ray address)."""
    if isinstance(obj, str):
        return redact_urls_in_text(obj)
    if isinstance(obj, dict):
        return {redact_tree(k) if isinstance(k, str) else k: redact_tree(v)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_tree(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_tree(v) for v in obj)
    return obj


def redact_text(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret of 8 characters or more replaced by ``***`` (shorter ones
    would match ordinary words)."""
    for secret in secrets:
        if secret and len(secret) >= 8:
            text = text.replace(secret, MASK)
    return text
