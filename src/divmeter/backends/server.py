"""Model backends served over HTTP: sentence embeddings from ``/v1/embeddings`` and token
log-probabilities from ``/v1/completions`` (``echo`` + ``logprobs``), both on the one shared
:class:`~divmeter.backends.http.HttpClient` (concurrency, retries, key handling).

A model name ``"openai:NAME"`` selects these backends; ``NAME`` is the model the server is asked
for, and ``base_url=`` (or ``$DIVMETER_BASE_URL``) says where the server is:

* **Embeddings** (:class:`ServerEncoder`): texts are sent in batches of ``batch_size`` per
  request, ``concurrency`` requests at a time; vectors go through the same on-disk
  :class:`~divmeter.backends.cache.EmbeddingCache` as local models, keyed by a signature that
  names the server model, the pooling (``pool:server``: whatever the server does; servers and
  sentence-transformers are known to pool differently, see :func:`parity_check`) and the
  normalisation applied here (``norm:none`` or ``norm:l2``). Every answer is checked before
  anything is cached: one vector per text, one dimension for all, finite values; a bad answer
  stops the call with one line and leaves the cache untouched (entries are written atomically).
* **Completions** (:class:`CompletionsScorer`): each text is sent once with ``echo=true``,
  ``logprobs=1``, ``max_tokens=1``; the server returns the log-probability of every prompt token
  with its character offset (``text_offset``, as llama.cpp's server and vLLM provide), and tokens
  are attributed to character spans by those offsets, exactly like the local scorer
  (:func:`divmeter.backends.lm.attribute_tokens`). This is what Decan needs
  (``divmeter.score(texts, "decan", model="openai:NAME", base_url=...)``).

Needs the ``http`` extra (``httpx``, ``tenacity``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from divmeter.backends.cache import EmbeddingCache, get_cache
from divmeter.backends.http import Failure, HttpClient, ServerError, resolve_base_url
from divmeter.core.errors import InvalidInputError

__all__ = [
    "PREFIX",
    "server_model_name",
    "ServerEncoder",
    "CompletionsScorer",
    "get_server_encoder",
    "get_completions_scorer",
    "parity_check",
]

#: Model names starting with this prefix are served over HTTP.
PREFIX = "openai:"
NORMS = ("none", "l2")
_LN2 = math.log(2.0)


def server_model_name(model: Any) -> str | None:
    """``NAME`` of ``"openai:NAME"``, ``None`` for any other model argument.

    Raises:
        InvalidInputError: If the name after the prefix is empty.

    Example:
        >>> server_model_name("openai:text-embedding-3-small"), server_model_name("minilm")
        ('text-embedding-3-small', None)
    """
    if not isinstance(model, str) or not model.startswith(PREFIX):
        return None
    name = model[len(PREFIX):].strip()
    if not name:
        raise InvalidInputError(
            f"`model` {model!r} names no server model: expected 'openai:NAME', e.g. "
            "'openai:text-embedding-3-small'."
        )
    return name


def _host(base_url: str) -> str:
    """``host:port/path`` of a base URL (no scheme, no credentials), for signatures."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return host + parts.path.rstrip("/")


def _fail_line(client: HttpClient, what: str, f: Failure) -> str:
    tries = f"after {f.attempts} attempt{'s' if f.attempts != 1 else ''}"
    return f"{client.base_url}/{what}: {f.message} ({f.kind}, {tries})."


# ------------------------------------------------------------------------------------------------
# Embeddings
# ------------------------------------------------------------------------------------------------


class ServerEncoder:
    """Sentence vectors from an OpenAI-compatible ``/v1/embeddings`` endpoint.

    Args:
        name: The model name the server is asked for (``NAME`` of ``openai:NAME``).
        base_url: The API root (default ``$DIVMETER_BASE_URL``).
        api_key: Bearer token (default ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY``).
        normalize: ``"none"`` (vectors as served) or ``"l2"`` (scaled to unit length here).
        batch_size: Texts per request.
        concurrency: Requests in flight.
        max_attempts: Attempts per request (retries on 429, 5xx, time-outs, dropped connections).
        timeout: Seconds per request.
        cache: Use the on-disk embedding cache (``$DIVMETER_CACHE``); ``False``: memory only.

    Example:
        >>> ServerEncoder("bge-small", "http://127.0.0.1:8080/v1").signature
        'openai:bge-small@127.0.0.1:8080/v1|pool:server|norm:none'
    """

    def __init__(
        self, name: str, base_url: str | None = None, *, api_key: str | None = None,
        normalize: str = "none", batch_size: int = 32,
        concurrency: int = 4, max_attempts: int = 5, timeout: float = 60.0, cache: bool = True,
    ) -> None:
        if normalize not in NORMS:
            raise InvalidInputError(
                f"`normalize` must be one of {', '.join(NORMS)}; got {normalize!r}."
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"`batch_size` must be an integer >= 1; got {batch_size!r}.")
        self.name = name
        self.normalize = normalize
        self.batch_size = batch_size
        self.client = HttpClient(base_url, api_key, concurrency=concurrency, timeout=timeout,
                                 max_attempts=max_attempts, cache=None)
        self.signature = (
            f"{PREFIX}{name}@{_host(self.client.base_url)}|pool:server|norm:{normalize}"
        )
        self.cache: EmbeddingCache = get_cache(self.signature, "default" if cache else None)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """Vector dimension (asks the server once if nothing was embedded yet)."""
        if self._dim is None:
            self._dim = int(self._fetch(["dimension probe"]).shape[1])
        return self._dim

    def _check(self, answer: dict[str, Any], n: int, where: str) -> np.ndarray:
        data = answer.get("data")
        if not isinstance(data, list) or len(data) != n:
            got = len(data) if isinstance(data, list) else type(data).__name__
            raise ServerError(
                f"{where}: the server must return one embedding per input ({n}); got {got}."
            )
        rows: list[Any] = [None] * n
        for k, item in enumerate(data):
            idx = item.get("index", k) if isinstance(item, dict) else k
            emb = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(idx, int) or not 0 <= idx < n or rows[idx] is not None:
                raise ServerError(f"{where}: embedding {k} has a bad index {idx!r}.")
            rows[idx] = emb
        dims = set()
        for k, emb in enumerate(rows):
            if not isinstance(emb, list) or not emb or isinstance(emb[0], list):
                shape = "a list of vectors (token-level embeddings: start the server with a "\
                    "pooling type)" if isinstance(emb, list) and emb and isinstance(
                        emb[0], list) else type(emb).__name__
                raise ServerError(
                    f"{where}: embedding {k} must be a non-empty list of numbers; got {shape}."
                )
            dims.add(len(emb))
        if len(dims) != 1:
            raise ServerError(
                f"{where}: every embedding must have the same dimension; got {sorted(dims)}."
            )
        arr = np.asarray(rows, dtype=np.float64)
        bad = np.nonzero(~np.all(np.isfinite(arr), axis=1))[0]
        if bad.size:
            raise ServerError(
                f"{where}: embedding {int(bad[0])} holds NaN or infinite values; nothing was "
                "cached."
            )
        return arr

    def _fetch(self, texts: list[str]) -> np.ndarray:
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        payloads = [{"model": self.name, "input": b} for b in batches]
        answers = self.client.post_many("embeddings", payloads)
        parts = []
        for b, (batch, ans) in enumerate(zip(batches, answers, strict=True)):
            if isinstance(ans, Failure):
                raise ServerError(_fail_line(self.client, "embeddings", ans))
            parts.append(self._check(ans, len(batch), f"{self.client.base_url}/embeddings "
                                     f"(batch {b})"))
        dims = {p.shape[1] for p in parts}
        if self._dim is not None:
            dims.add(self._dim)
        if len(dims) != 1:
            raise ServerError(
                f"{self.client.base_url}/embeddings: the server returned vectors of different "
                f"dimensions {sorted(dims)} for model {self.name!r}; nothing was cached."
            )
        X = np.concatenate(parts)
        if self.normalize == "l2":
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            if np.any(norms == 0):
                raise ServerError(
                    f"{self.client.base_url}/embeddings: a zero vector cannot be L2-normalised."
                )
            X = X / norms
        return X.astype(np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (cached); returns a ``(len(texts), d)`` float32 array.

        Raises:
            ServerError: When the server cannot be reached or returns a wrong answer (wrong
                count or dimension, NaN); nothing of that call is cached then.
        """
        return self.cache.vectors(texts, self._fetch_new, lambda: self.dim)

    def _fetch_new(self, texts: list[str], cached: dict[int, np.ndarray]) -> np.ndarray:
        vecs = self._fetch(texts)  # checked whole before anything is cached
        self._dim = int(vecs.shape[1])
        if cached:
            have = next(iter(cached.values())).shape[0]
            if have != self._dim:
                raise ServerError(
                    f"{self.client.base_url}/embeddings: the server now returns "
                    f"{self._dim}-d vectors but {have}-d ones are cached for "
                    f"{self.signature!r}; nothing was cached."
                )
        return vecs


_SERVER_ENCODERS: dict[tuple[str, str, str, bool], ServerEncoder] = {}


def get_server_encoder(model: str, base_url: str | None = None, *, normalize: str = "none",
                       cache: bool = True) -> ServerEncoder:
    """A process-wide :class:`ServerEncoder` for ``"openai:NAME"`` at ``base_url``.

    Example:
        >>> get_server_encoder("openai:e5", "http://127.0.0.1:9/v1").name
        'e5'
    """
    name = server_model_name(model)
    if name is None:
        raise InvalidInputError(f"server model names start with 'openai:'; got {model!r}.")
    url = resolve_base_url(base_url)
    key = (name, url, normalize, cache)
    if key not in _SERVER_ENCODERS:
        _SERVER_ENCODERS[key] = ServerEncoder(name, url, normalize=normalize, cache=cache)
    return _SERVER_ENCODERS[key]


def parity_check(texts: Sequence[str], model: str, base_url: str | None = None, *,
                 local: str = "minilm", normalize: str = "none") -> dict[str, Any]:
    """Compare a server's embeddings with a local model's on the same texts.

    Servers and sentence-transformers often pool or normalise differently (mean vs CLS vs last
    token, a normalisation layer or not), which changes every content metric; this check shows it.

    Args:
        texts: A sample of texts (at least one).
        model: The server model, ``"openai:NAME"``.
        base_url: The server's API root.
        local: The local model to compare with (an alias, folder or cached name).
        normalize: Normalisation of the server vectors (see :class:`ServerEncoder`).

    Returns:
        ``{"n", "worst_cosine", "mean_cosine", "worst_index", "server", "local"}`` (the two
        signatures).

    Raises:
        InvalidInputError: On an empty sample or vectors of different dimensions.
    """
    from divmeter.backends.embed import get_encoder

    texts = list(texts)
    if not texts:
        raise InvalidInputError("the parity check needs at least one text; got none.")
    srv = get_server_encoder(model, base_url, normalize=normalize)
    loc = get_encoder(local)
    A = srv.encode(texts).astype(np.float64)
    B = loc.encode(texts).astype(np.float64)
    if A.shape[1] != B.shape[1]:
        raise InvalidInputError(
            f"server model {model!r} returns {A.shape[1]}-d vectors but local model {local!r} "
            f"{B.shape[1]}-d: they are not the same model."
        )
    na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.sum(A * B, axis=1) / (na * nb)
    cos = np.where((na > 0) & (nb > 0), cos, 0.0)
    worst = int(np.argmin(cos))
    return {
        "n": len(texts),
        "worst_cosine": float(cos[worst]),
        "mean_cosine": float(cos.mean()),
        "worst_index": worst,
        "server": srv.signature,
        "local": loc.signature,
    }


# ------------------------------------------------------------------------------------------------
# Completions with prompt log-probabilities
# ------------------------------------------------------------------------------------------------


def _token_table(answer: dict[str, Any], text: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (T, 2) and bits (T,) of the prompt tokens in an echo+logprobs answer.

    Tokens at or beyond ``len(text)`` (the generated one) are dropped; the first token's
    log-probability is ``null`` (no context) and is given 0 bits (it is never attributed).
    """
    choices = answer.get("choices")
    lp = choices[0].get("logprobs") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None
    if not isinstance(lp, dict) or not isinstance(lp.get("token_logprobs"), list) \
            or not isinstance(lp.get("text_offset"), list):
        raise ServerError(
            f"{where}: the answer has no prompt log-probabilities (choices[0].logprobs with "
            "token_logprobs and text_offset); the server must support echo=true with logprobs "
            "on /v1/completions (llama.cpp's server and vLLM do)."
        )
    offs = lp["text_offset"]
    vals = lp["token_logprobs"]
    if len(offs) != len(vals):
        raise ServerError(f"{where}: text_offset and token_logprobs differ in length.")
    keep = [k for k, o in enumerate(offs) if isinstance(o, int) and o < len(text)]
    if len(keep) != len([o for o in offs if not isinstance(o, int) or o < len(text)]):
        raise ServerError(f"{where}: text_offset must hold integers.")
    starts = np.asarray([offs[k] for k in keep], dtype=np.int64)
    if starts.size and (np.any(np.diff(starts) < 0) or starts[0] < 0):
        raise ServerError(f"{where}: text_offset must be non-decreasing character offsets.")
    ends = np.append(starts[1:], len(text)) if starts.size else starts
    bits = np.zeros(len(keep), dtype=np.float64)
    for j, k in enumerate(keep):
        v = vals[k]
        if v is None:
            if j == 0:
                continue
            raise ServerError(f"{where}: token {j} of the prompt has no log-probability.")
        bits[j] = -float(v) / _LN2
    if not np.all(np.isfinite(bits)):
        raise ServerError(f"{where}: a prompt log-probability is not finite.")
    # a zero-width token 0 placeholder keeps attribute_tokens' rule "token 0 is context only"
    offsets = np.stack([starts, ends], axis=1) if starts.size else np.zeros((0, 2), np.int64)
    return offsets, bits


class CompletionsScorer:
    """Log-probabilities of texts' tokens from an OpenAI-compatible completions endpoint.

    The counterpart of :class:`divmeter.backends.lm.CausalLMScorer` for a server: same
    :meth:`span_bits` contract (bits of character spans, tokens attributed by offset overlap).

    Args:
        name: Model the server is asked for.
        base_url: The API root (default ``$DIVMETER_BASE_URL``).
        api_key: Bearer token.
        concurrency: Requests in flight.
        max_attempts: Attempts per request.
        timeout: Seconds per request.
        cache: The HTTP answer cache (``"default"``, a folder or ``None``): a rerun of the same
            texts sends no request.

    Example:
        >>> CompletionsScorer("qwen2.5-3b", "http://127.0.0.1:8000/v1").signature
        'openai:qwen2.5-3b@127.0.0.1:8000/v1|api:completions-echo'
    """

    def __init__(
        self, name: str, base_url: str | None = None, *, api_key: str | None = None,
        concurrency: int = 2, max_attempts: int = 5, timeout: float = 600.0,
        cache: Any = "default",
    ) -> None:
        self.name = name
        self.client = HttpClient(base_url, api_key, concurrency=concurrency, timeout=timeout,
                                 max_attempts=max_attempts, cache=cache)
        self.signature = f"{PREFIX}{name}@{_host(self.client.base_url)}|api:completions-echo"

    def payload(self, text: str) -> dict[str, Any]:
        """The request body for one text (echo the prompt with its log-probabilities)."""
        return {"model": self.name, "prompt": text, "max_tokens": 1, "echo": True,
                "logprobs": 1, "temperature": 0.0}

    def token_tables(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: prompt-token character offsets (T, 2) and surprise in bits (T,)."""
        texts = list(texts)
        answers = self.client.post_many("completions", [self.payload(t) for t in texts])
        out = []
        for i, (t, ans) in enumerate(zip(texts, answers, strict=True)):
            if isinstance(ans, Failure):
                raise ServerError(_fail_line(self.client, "completions", ans))
            out.append(_token_table(ans, t, f"{self.client.base_url}/completions (text {i})"))
        return out

    def span_bits(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]],
                  **_: Any) -> list[np.ndarray]:
        """Total surprise (bits) of character spans of texts (see
        :meth:`divmeter.backends.lm.CausalLMScorer.span_bits`)."""
        from divmeter.backends.lm import attribute_tokens

        out = []
        for (offsets, bits), sp in zip(self.token_tables(texts), spans, strict=True):
            # attribute_tokens never attributes row 0 (no context): prepend a zero-width row
            offs = np.concatenate([np.zeros((1, 2), np.int64), offsets])
            idx, own = attribute_tokens(offs, sp)
            b = np.concatenate([[0.0], bits])[idx]
            if idx.size and np.any(idx == 1) and offsets[0, 0] < offsets[0, 1]:
                # the text's first token has no log-probability (no BOS context on the server)
                first = own[idx == 1]
                raise ServerError(
                    f"{self.client.base_url}/completions: the first token of a text falls in "
                    f"span {int(first[0])}, which the server cannot score; start texts with "
                    "context."
                )
            out.append(np.bincount(own, weights=b, minlength=len(sp)))
        return out


_SCORERS: dict[tuple[str, str], CompletionsScorer] = {}


def get_completions_scorer(model: str, base_url: str | None = None) -> CompletionsScorer:
    """A process-wide :class:`CompletionsScorer` for ``"openai:NAME"`` at ``base_url``."""
    name = server_model_name(model)
    if name is None:
        raise InvalidInputError(f"server model names start with 'openai:'; got {model!r}.")
    url = resolve_base_url(base_url)
    if (name, url) not in _SCORERS:
        _SCORERS[(name, url)] = CompletionsScorer(name, url)
    return _SCORERS[(name, url)]
