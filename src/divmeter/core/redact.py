"""Secrets never leave the process: one redaction for every message, output and log line.

Two kinds of secret are removed from any text that passes :func:`redact`:

* the user-info of a URL (``http://user:password@host/v1`` -> ``http://<redacted>@host/v1``);
* every secret string the process has declared with :func:`register_secret` (the HTTP client
  declares its API key and the password of its base URL) and the API keys in the environment
  (``DIVMETER_API_KEY``, ``OPENAI_API_KEY``), wherever they appear (a server that echoes the
  key back in an error body, a parameter value, a traceback line).

Stdlib only: the CLI's error printer, the record writers and the log handler all call it.
"""

from __future__ import annotations

import os
import re
import threading

__all__ = ["register_secret", "redact", "strip_userinfo"]

#: Environment variables whose values are secrets.
SECRET_ENV = ("DIVMETER_API_KEY", "OPENAI_API_KEY")
#: Shorter strings are not treated as secrets (they would redact ordinary words).
MIN_SECRET = 4
MASK = "<redacted>"

_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#@\s\"']+)@")
_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Declare ``value`` a secret: :func:`redact` removes it from every text from now on."""
    if value and len(value) >= MIN_SECRET:
        with _lock:
            _secrets.add(value)


def _known() -> list[str]:
    env = [os.environ.get(k) or "" for k in SECRET_ENV]
    with _lock:
        found = set(_secrets)
    found.update(v for v in env if len(v) >= MIN_SECRET)
    return sorted(found, key=len, reverse=True)  # longest first: no secret left half-masked


def redact(text: str) -> str:
    """``text`` with URL user-info and every known secret replaced by ``<redacted>``.

    Example:
        >>> redact("GET http://me:pw@127.0.0.1:8000/v1 failed")
        'GET http://<redacted>@127.0.0.1:8000/v1 failed'
        >>> register_secret("sk-example-123"); redact("bad key sk-example-123")
        'bad key <redacted>'
    """
    if not isinstance(text, str):
        return text
    for s in _known():
        if s in text:
            text = text.replace(s, MASK)
    if "@" in text and "://" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    return text


def strip_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """``(url without user-info, user, password)``; user and password percent-decoded.

    Example:
        >>> strip_userinfo("http://me:p%40ss@h:8/v1")
        ('http://h:8/v1', 'me', 'p@ss')
        >>> strip_userinfo("http://h/v1")
        ('http://h/v1', None, None)
    """
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None, None
    info, _, host = parts.netloc.rpartition("@")
    user, sep, password = info.partition(":")
    return (urlunsplit(parts._replace(netloc=host)), unquote(user),
            unquote(password) if sep else None)
