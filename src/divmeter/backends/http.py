"""The one HTTP client of divmeter, for OpenAI-compatible servers.

Generation, the LLM judge, server embeddings and Decan over an API all talk to servers that speak
the OpenAI REST dialect (vLLM, llama.cpp's server, TGI, hosted APIs). They share this client:

* **Concurrency**: requests run on one ``httpx.AsyncClient`` with at most ``concurrency`` in
  flight; :meth:`HttpClient.post_many` keeps the input order and reports each result as it lands
  (so callers can stream it to disk).
* **Retries**: 429, 5xx, time-outs, dropped connections and malformed (non-JSON) bodies are
  retried with exponential back-off and jitter by ``tenacity``, honouring ``Retry-After``; other
  4xx answers are final. A request that still fails becomes a :class:`Failure` with its kind,
  and the run goes on.
* **Cache**: successful answers of the right shape (:func:`shape_problem`) are stored on disk,
  keyed by the request (URL path, JSON body and an optional salt such as a sample index),
  written atomically; a rerun of the same requests sends none. Keys are hex digests checked on
  every read and write. The API key is not part of the key and is never written anywhere.
* **Deadline**: ``timeout`` bounds each attempt as a whole, connect to last byte (a server
  dripping its answer cannot hold a request longer).
* **Secrets**: the API key and a ``user:password@`` in the base URL (sent as basic auth, never
  shown in ``base_url``) are redacted from every message (:mod:`divmeter.core.redact`).
* **Counts**: :class:`ClientStats` counts requests sent, cache hits, retries and failures by kind,
  and the prompt/completion tokens the server reported.
* **Circuit breaker**: once the server cannot be reached (a request's last attempt could not even
  connect: connection refused, connect time-out), :class:`CircuitBreaker` opens: the requests
  still waiting fail at once without being sent, those in back-off stop waiting, and the next
  :meth:`HttpClient.post_many` raises :class:`ServerUnreachable` ("the server at URL stopped
  answering (connection refused) after N of M requests; rerun with --resume"). Answers already
  received are returned (and cached), so callers write what they have. :meth:`HttpClient.check`
  closes it again.

The key comes from ``api_key=`` or the ``DIVMETER_API_KEY`` / ``OPENAI_API_KEY`` environment
variables; it is sent as a bearer token and redacted from every message and ``repr``.

Needs the ``http`` extra (``httpx`` and ``tenacity``).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import math
import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from divmeter.core._optional import require
from divmeter.core.errors import DivmeterError, InvalidInputError, UnavailableError
from divmeter.core.redact import redact, register_secret, strip_userinfo

__all__ = [
    "HttpClient",
    "ClientStats",
    "Failure",
    "RequestCache",
    "ServerError",
    "ServerUnreachable",
    "CircuitBreaker",
    "request_key",
    "is_request_key",
    "resolve_base_url",
    "resolve_api_key",
]

#: Failure kinds, in the order summaries print them.
KINDS = ("429", "5xx", "timeout", "connection", "malformed", "4xx")


class ServerError(DivmeterError):
    """A server could not be used at all (unreachable, or it refused the request outright)."""


class ServerUnreachable(ServerError):
    """The server stopped answering during a run (the :class:`CircuitBreaker` opened)."""


class CircuitBreaker:
    """Stops a client's run once its server cannot be reached.

    ``answered`` counts requests that got an answer (cache hits included), ``submitted`` the
    requests given to the client; a caller that knows the size of its whole run sets ``planned``
    (the M of the message).

    Example:
        >>> b = CircuitBreaker()
        >>> b.submitted, b.answered = 10, 4
        >>> b.trip("connection refused")
        >>> b.line("http://h").split("; ")
        ['the server at http://h stopped answering (connection refused) after 4 of 10 requests', \
'rerun with --resume']
    """

    def __init__(self) -> None:
        self.reason: str | None = None
        self.answered = 0
        self.submitted = 0
        self.planned: int | None = None

    @property
    def is_open(self) -> bool:
        return self.reason is not None

    def trip(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def reset(self) -> None:
        self.reason = None

    def plan(self, total: int) -> None:
        """Start counting a run of ``total`` requests (the N and M of the message)."""
        self.planned, self.answered = int(total), 0

    def line(self, base_url: str) -> str:
        total = self.planned if self.planned is not None else self.submitted
        if not self.answered:
            return (f"the server at {base_url} cannot be reached ({self.reason}); is it "
                    "running, and is the URL right (it usually ends in /v1)?")
        return (f"the server at {base_url} stopped answering ({self.reason}) after "
                f"{self.answered} of {total} requests; rerun with --resume")


@dataclass
class Failure:
    """A request that failed for good: its kind (one of :data:`KINDS`), a one-line message and
    the number of attempts made."""

    kind: str
    message: str
    attempts: int = 1

    def __bool__(self) -> bool:  # a failure is falsy, so `if result:` reads naturally
        return False


@dataclass
class ClientStats:
    """What a client did: HTTP requests sent, cache hits, retries and failures by kind, and the
    token counts servers reported in ``usage``."""

    requests: int = 0
    cache_hits: int = 0
    retries: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "retries": {k: self.retries[k] for k in KINDS if self.retries[k]},
            "failures": {k: self.failures[k] for k in KINDS if self.failures[k]},
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


class _Retryable(Exception):
    def __init__(self, kind: str, message: str, retry_after: float | None = None,
                 unreachable: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.unreachable = unreachable  # why no connection could be made, if none was


class _Final(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def resolve_base_url(base_url: str | None) -> str:
    """``base_url``, else ``$DIVMETER_BASE_URL``, else ``$OPENAI_BASE_URL``, without a trailing
    slash; an error naming the option when none is given.

    Example:
        >>> resolve_base_url("http://127.0.0.1:8000/v1/")
        'http://127.0.0.1:8000/v1'
    """
    url = base_url or os.environ.get("DIVMETER_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    if not url:
        raise UnavailableError(
            "no server URL: pass base_url= (CLI: --base-url), e.g. http://127.0.0.1:8000/v1, "
            "or set DIVMETER_BASE_URL."
        )
    if not url.startswith(("http://", "https://")):
        raise InvalidInputError(
            f"server URL must start with http:// or https://; got {redact(url)!r}.")
    return url.rstrip("/")


def resolve_api_key(api_key: str | None) -> str | None:
    """``api_key``, else ``$DIVMETER_API_KEY``, else ``$OPENAI_API_KEY``, else ``None``."""
    return api_key or os.environ.get("DIVMETER_API_KEY") or os.environ.get("OPENAI_API_KEY")


def request_key(url: str, payload: Any, salt: Any = None) -> str:
    """The cache key of a request: SHA-256 of the URL and the canonical JSON of body and salt.

    Example:
        >>> request_key("http://h/v1/completions", {"b": 1, "a": 2}) == request_key(
        ...     "http://h/v1/completions", {"a": 2, "b": 1})
        True
    """
    blob = json.dumps({"url": url, "payload": payload, "salt": salt}, sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_KEY_CHARS = frozenset("0123456789abcdef")


def is_request_key(key: Any) -> bool:
    """Whether ``key`` is a key :func:`request_key` makes: 64 lower-case hex digits.

    Example:
        >>> is_request_key("ab" * 32), is_request_key("../" * 21 + "x"), is_request_key("/" * 64)
        (True, False, False)
    """
    return isinstance(key, str) and len(key) == 64 and _KEY_CHARS.issuperset(key)


class RequestCache:
    """Answers of successful requests on disk, one JSON file per request key, written atomically
    (a temporary file renamed into place), so an interrupted run never leaves half an entry.

    Keys are checked on every read and write: only the hex digests :func:`request_key` makes
    name a file, so no key (e.g. a ``custom_id`` of a Batch API results file) can reach a path
    outside the cache folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        if not is_request_key(key):
            shown = key[:80] if isinstance(key, str) else type(key).__name__
            raise InvalidInputError(
                f"request cache key must be 64 lower-case hex digits (a key divmeter makes); "
                f"got {shown!r}.")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, data: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _default_cache() -> RequestCache | None:
    from divmeter.backends.cache import cache_root

    root = cache_root()
    return None if root is None else RequestCache(root / "http")


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_text(resp: Any) -> str:
    """The message of an OpenAI-style error body (``{"error": {"message": ...}}``), else the
    body itself."""
    try:
        err = resp.json().get("error")
    except (ValueError, AttributeError):
        return str(resp.text)
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])
    return str(err) if err else str(resp.text)


def _token_count(value: Any) -> int:
    """A token count a server reported in ``usage``: a finite number >= 0, else 0 (servers
    send ``Infinity``, lists and strings too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or value < 0 or value > 1e15:
        return 0
    return int(value)


def _is_number(x: Any) -> bool:
    return (isinstance(x, (int, float)) and not isinstance(x, bool)
            and math.isfinite(x))


def shape_problem(url: str, payload: Any, data: dict[str, Any]) -> str | None:
    """What is wrong with the shape of an answer from an OpenAI endpoint (``None``: nothing).

    Only answers that pass are cached (and only cached answers that pass are used): a
    server's malformed answer (a null text, a wrong number of embeddings) reaches the caller,
    which reports it, and is never replayed from the cache after the server is fixed.
    Endpoints other than ``completions``, ``chat/completions`` and ``embeddings`` are not
    checked.

    Example:
        >>> shape_problem("http://h/v1/completions", {}, {"choices": [{"text": None}]})
        'choices[0].text must be a string; got NoneType'
        >>> shape_problem("http://h/v1/completions", {}, {"choices": [{"text": "ok"}]}) is None
        True
    """
    path = url.rstrip("/")
    if path.endswith("/chat/completions") or path.endswith("/completions"):
        chat = path.endswith("/chat/completions")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            return "'choices' must be a non-empty list"
        for i, c in enumerate(choices):
            if not isinstance(c, dict):
                return f"choices[{i}] must be an object"
            if chat:
                msg = c.get("message")
                content = msg.get("content") if isinstance(msg, dict) else None
                if not isinstance(content, str):
                    return (f"choices[{i}].message.content must be a string; got "
                            f"{type(content).__name__}")
            elif not isinstance(c.get("text"), str):
                return f"choices[{i}].text must be a string; got {type(c.get('text')).__name__}"
        return None
    if path.endswith("/embeddings"):
        rows = data.get("data")
        inputs = payload.get("input") if isinstance(payload, dict) else None
        want = len(inputs) if isinstance(inputs, list) else 1
        if not isinstance(rows, list) or len(rows) != want:
            got = len(rows) if isinstance(rows, list) else type(rows).__name__
            return f"'data' must hold one embedding per input ({want}); got {got}"
        dims = set()
        for i, r in enumerate(rows):
            emb = r.get("embedding") if isinstance(r, dict) else None
            if not isinstance(emb, list) or not emb or not all(_is_number(x) for x in emb):
                return f"data[{i}].embedding must be a non-empty list of finite numbers"
            dims.add(len(emb))
        if len(dims) > 1:
            return f"embeddings of different dimensions {sorted(dims)}"
    return None


def _why_unreachable(exc: BaseException, text: str) -> str:
    """``"connection refused"`` when a refused connection is behind ``exc``, else ``text``."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    return text


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class HttpClient:
    """A client for one OpenAI-compatible server.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1`` (default from
            ``$DIVMETER_BASE_URL`` / ``$OPENAI_BASE_URL``).
        api_key: Bearer token (default from ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY``); never
            logged, cached or shown.
        concurrency: Requests in flight at once.
        timeout: Seconds per request (connect, read and write).
        max_attempts: Attempts per request, the first included.
        backoff: Base of the exponential back-off in seconds (doubled per retry, with jitter,
            capped at ``backoff_max``); a ``Retry-After`` header overrides it when longer.
        backoff_max: Longest wait between two attempts.
        cache: ``"default"`` (``$DIVMETER_CACHE``/http, off when the cache is off), a folder, or
            ``None`` for no cache.

    Example:
        >>> c = HttpClient("http://127.0.0.1:9/v1", api_key="sk-secret", cache=None)
        >>> "sk-secret" in repr(c)
        False
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        concurrency: int = 4,
        timeout: float = 60.0,
        max_attempts: int = 5,
        backoff: float = 0.5,
        backoff_max: float = 30.0,
        cache: str | Path | None = "default",
    ) -> None:
        # user:password@ in the URL is sent as HTTP basic auth and kept out of base_url, so
        # no message, signature or provenance that shows base_url shows it
        self.base_url, user, password = strip_userinfo(resolve_base_url(base_url))
        self._auth = None if user is None else (user, password or "")
        self._key = resolve_api_key(api_key)
        register_secret(self._key)
        register_secret(password)
        if concurrency < 1:
            raise InvalidInputError(f"`concurrency` must be an integer >= 1; got {concurrency}.")
        if max_attempts < 1:
            raise InvalidInputError(f"`max_attempts` must be an integer >= 1; got {max_attempts}.")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise InvalidInputError(f"`timeout` must be a number of seconds > 0; got {timeout!r}.")
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.backoff_max = backoff_max
        if cache == "default":
            self.cache = _default_cache()
        elif cache is None:
            self.cache = None
        else:
            self.cache = RequestCache(Path(cache))
        self.stats = ClientStats()
        self.breaker = CircuitBreaker()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        key = "set" if self._key else "none"
        return f"HttpClient({self.base_url!r}, api_key=<{key}>, concurrency={self.concurrency})"

    # ------------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def _redact(self, text: str) -> str:
        return redact(text.replace(self._key, "<api-key>") if self._key else text)

    def _wait(self, retry_state: Any) -> float:
        tenacity = require("tenacity", extra="http")
        expo = tenacity.wait_exponential_jitter(
            multiplier=self.backoff, max=self.backoff_max, jitter=self.backoff
        )
        wait = float(expo(retry_state))
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, _Retryable) and exc.retry_after is not None:
            wait = max(wait, min(exc.retry_after, self.backoff_max))
        return wait

    async def _attempt(self, client: Any, method: str, url: str, payload: Any) -> dict[str, Any]:
        httpx = require("httpx", extra="http")
        if self.breaker.is_open:
            raise _Final("connection", self.breaker.line(self.base_url))
        with self._lock:
            self.stats.requests += 1
        try:
            # one deadline for the whole attempt: httpx's own time-outs bound each read, so a
            # server dripping its answer a byte at a time would never time out without it
            async with asyncio.timeout(self.timeout):
                resp = await client.request(method, url, json=payload)
        except httpx.ConnectTimeout as exc:
            raise _Retryable("timeout", f"no connection within {self.timeout:g} s",
                             unreachable="connect time-out") from exc
        except httpx.ConnectError as exc:
            text = _short(self._redact(str(exc)) or type(exc).__name__)
            raise _Retryable("connection", text, unreachable=_why_unreachable(exc, text)) from exc
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise _Retryable("timeout", f"no answer within {self.timeout:g} s") from exc
        except httpx.TransportError as exc:
            raise _Retryable("connection", _short(self._redact(str(exc)) or type(exc).__name__)
                             ) from exc
        status = resp.status_code
        if status == 429:
            raise _Retryable("429", "rate limited (HTTP 429)",
                             _retry_after(resp.headers.get("retry-after")))
        if status >= 500:
            raise _Retryable("5xx", f"server error (HTTP {status}): "
                                    f"{_short(self._redact(resp.text))}")
        if status >= 400:
            raise _Final("4xx", f"HTTP {status}: {_short(self._redact(_error_text(resp)))}")
        try:
            data = resp.json()
        except ValueError as exc:
            raise _Retryable("malformed", f"answer is not JSON: "
                                          f"{_short(self._redact(resp.text))!r}") from exc
        if not isinstance(data, dict):
            raise _Retryable("malformed", f"answer is JSON but not an object: "
                                          f"{_short(self._redact(resp.text))}")
        return data

    async def _one(self, client: Any, sem: asyncio.Semaphore, method: str, path: str,
                   payload: Any, salt: Any) -> dict[str, Any] | Failure:
        tenacity = require("tenacity", extra="http")
        url = f"{self.base_url}/{path.lstrip('/')}"
        key = request_key(url, payload, salt) if self.cache is not None and method == "POST" \
            else None
        if key is not None:
            hit = self.cache.get(key)  # type: ignore[union-attr]
            if hit is not None and shape_problem(url, payload, hit) is None:
                with self._lock:
                    self.stats.cache_hits += 1
                    self.breaker.answered += 1
                return hit

        def note_retry(state: Any) -> None:
            exc = state.outcome.exception()
            with self._lock:
                self.stats.retries[getattr(exc, "kind", "connection")] += 1

        async def sleep(seconds: float) -> None:  # back-off, cut short when the breaker opens
            end = time.monotonic() + seconds
            while not self.breaker.is_open and (left := end - time.monotonic()) > 0:
                await asyncio.sleep(min(left, 0.1))

        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_any(tenacity.stop_after_attempt(self.max_attempts),
                                   lambda state: self.breaker.is_open),
            wait=self._wait,
            sleep=sleep,
            retry=tenacity.retry_if_exception_type(_Retryable),
            before_sleep=note_retry,
            reraise=True,
        )
        attempts = 0
        try:
            async with sem:
                async for attempt in retrying:
                    with attempt:
                        attempts += 1
                        data = await self._attempt(client, method, url, payload)
        except (_Retryable, _Final) as exc:
            with self._lock:
                self.stats.failures[exc.kind] += 1
                why = exc.unreachable if isinstance(exc, _Retryable) else None
                if why:
                    self.breaker.trip(why)
            return Failure(exc.kind, exc.message, attempts)
        usage = data.get("usage")
        with self._lock:
            self.breaker.answered += 1
        if isinstance(usage, dict):
            with self._lock:
                self.stats.prompt_tokens += _token_count(usage.get("prompt_tokens"))
                self.stats.completion_tokens += _token_count(usage.get("completion_tokens"))
        if key is not None and shape_problem(url, payload, data) is None:
            # only answers of the right shape are cached: a malformed one goes to the caller
            # (which reports it) and is asked again next run, not replayed from the cache
            self.cache.put(key, data)  # type: ignore[union-attr]
        return data

    async def _many(self, method: str, path: str, payloads: Sequence[Any],
                    salts: Sequence[Any] | None,
                    on_result: Callable[[int, dict[str, Any] | Failure], None] | None
                    ) -> list[dict[str, Any] | Failure]:
        httpx = require("httpx", extra="http")
        if self.breaker.is_open:
            raise ServerUnreachable(self.breaker.line(self.base_url))
        self.breaker.submitted += len(payloads)
        sem = asyncio.Semaphore(self.concurrency)
        limits = httpx.Limits(max_connections=self.concurrency,
                              max_keepalive_connections=self.concurrency)
        out: list[dict[str, Any] | Failure] = [Failure("connection", "not sent")] * len(payloads)
        async with httpx.AsyncClient(headers=self._headers(), timeout=self.timeout,
                                     limits=limits, auth=self._auth) as client:

            async def run(i: int) -> None:
                salt = salts[i] if salts is not None else None
                out[i] = await self._one(client, sem, method, path, payloads[i], salt)
                if on_result is not None:
                    on_result(i, out[i])

            await asyncio.gather(*(run(i) for i in range(len(payloads))))
        if self.breaker.is_open:  # every request the dead server left unanswered says so
            line = self.breaker.line(self.base_url)
            out = [Failure(r.kind, line, r.attempts) if isinstance(r, Failure) and r.kind in
                   ("connection", "timeout") else r for r in out]
        return out

    # ------------------------------------------------------------------------------------------
    def post_many(
        self,
        path: str,
        payloads: Sequence[dict[str, Any]],
        *,
        salts: Sequence[Any] | None = None,
        on_result: Callable[[int, dict[str, Any] | Failure], None] | None = None,
    ) -> list[dict[str, Any] | Failure]:
        """POST every payload to ``path`` (e.g. ``"completions"``), ``concurrency`` at a time.

        Args:
            path: Endpoint below the base URL.
            payloads: JSON bodies.
            salts: Optional per-request values that join the cache key without being sent (e.g.
                the sample index of the 5 samples a judge draws for one item).
            on_result: Called as ``on_result(i, result)`` as each request finishes (in
                completion order, from the event loop's thread), e.g. to stream rows to disk.

        Returns:
            Per payload, in input order, the decoded JSON answer or a :class:`Failure`.
        """
        if salts is not None and len(salts) != len(payloads):
            raise InvalidInputError(
                f"`salts` must have one value per payload ({len(payloads)}); got {len(salts)}."
            )
        return _run(self._many("POST", path, list(payloads), salts, on_result))

    def post(self, path: str, payload: dict[str, Any], *, salt: Any = None) -> dict[str, Any]:
        """POST one payload; raises :class:`ServerError` (one line) when it fails for good."""
        result = self.post_many(path, [payload], salts=[salt])[0]
        if isinstance(result, Failure):
            raise ServerError(self._failure_line(result))
        return result

    def get(self, path: str) -> dict[str, Any]:
        """GET ``path`` (not cached); raises :class:`ServerError` when it fails for good."""
        result = _run(self._many("GET", path, [None], None, None))[0]
        if isinstance(result, Failure):
            raise ServerError(self._failure_line(result))
        return result

    def check(self) -> list[str]:
        """Ask the server for its models (``GET /models``): the model ids, or a one-line
        :class:`ServerError` that says how to fix the URL when the server cannot be reached."""
        saved = self.max_attempts
        self.max_attempts = min(saved, 2)
        self.breaker.reset()
        try:
            data = self.get("models")
        except ServerError as exc:
            raise ServerError(
                f"{exc} Is the server running, and is --base-url right (it usually ends in /v1)?"
            ) from None
        finally:
            self.max_attempts = saved
        models = data.get("data")
        return [str(m.get("id")) for m in models if isinstance(m, dict)] if isinstance(
            models, list) else []

    def _failure_line(self, f: Failure) -> str:
        tries = f"after {f.attempts} attempt{'s' if f.attempts != 1 else ''}"
        return f"{self.base_url}: {f.message} ({f.kind}, {tries})."


def _run(coro: Any) -> Any:
    """Run a coroutine to completion, also from inside a running event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
