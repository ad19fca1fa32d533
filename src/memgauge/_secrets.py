"""Keeping secrets out of run folders: passwords in URLs, keys echoed back by servers.

Example::

    redact_url("http://user:s3cret@host:8000/v1")   # 'http://user:***@host:8000/v1'
    redact_text("bad key sk-abc", ["sk-abc"])        # 'bad key ***'
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str | None) -> str | None:
    """``url`` with the password of its user info replaced by ``***``."""
    if not url or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def redact_text(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret of 8 characters or more replaced by ``***`` (shorter ones
    would match ordinary words)."""
    for secret in secrets:
        if secret and len(secret) >= 8:
            text = text.replace(secret, "***")
    return text
