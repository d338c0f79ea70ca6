"""Generation on an OpenAI-compatible server (``openai:NAME``), through the shared
:class:`~divmeter.backends.http.HttpClient`.

Each sample is its own request (``n: 1``) carrying the sample's seed, with the sample index as
the cache salt: the samples of a set are independent draws even on servers that ignore ``n``,
servers that honour ``seed`` (llama.cpp, vLLM, OpenAI) repeat themselves, and the on-disk cache
answers a rerun without sending anything. Requests run ``concurrency`` at a time with retries on
429/5xx/time-outs/dropped connections/malformed bodies (see the client). A sample that still
fails is reported per prompt by :meth:`OpenAIGenerator.generate_partial`, so a sweep can skip
that set and a rerun can retry it.

The server's text is cleaned of special-token text it may leave in (llama.cpp writes Gemma's
``<start_of_image>`` into completions): cut at the first end-of-turn marker, other special-token
strings removed (:func:`divmeter.studies.generation.base.clean_server_text`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from divmeter.backends.http import Failure, HttpClient, ServerError
from divmeter.core._version import __version__
from divmeter.core.errors import InvalidInputError
from divmeter.studies.generation.base import (
    Decoding,
    check_request,
    clean_server_text,
    sample_seeds,
)

__all__ = ["OpenAIGenerator"]


def _text(data: dict[str, Any], chat: bool) -> str | None:
    """The generated text of an answer, or ``None`` when it has none."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    first = choices[0]
    if chat:
        msg = first.get("message")
        text = msg.get("content") if isinstance(msg, dict) else None
    else:
        text = first.get("text")
    return text if isinstance(text, str) else None


class OpenAIGenerator:
    """Samples from model ``name`` on an OpenAI-compatible server.

    Args:
        name: The model name the server knows (``openai:NAME`` without the prefix).
        base_url: API root (default ``$DIVMETER_BASE_URL`` / ``$OPENAI_BASE_URL``).
        api_key: Bearer key (default ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY``).
        chat: ``True``: ``/chat/completions`` with the prompt as one user message; ``False`` or
            ``None``: ``/completions`` (the prompt is continued).
        send_seed: Send each sample's seed (``seed`` field); turn off for servers that reject it.
        check: Ask ``GET /models`` first: an unreachable server or an unknown model fails here,
            in one line, before any work.
        **client_kw: ``concurrency``, ``timeout``, ``max_attempts``, ``backoff``,
            ``backoff_max``, ``cache`` of :class:`~divmeter.backends.http.HttpClient`.

    Raises:
        ServerError: The server cannot be reached.
        InvalidInputError: The server lists its models and ``name`` is not one of them.
    """

    backend = "openai"

    def __init__(self, name: str, *, base_url: str | None = None, api_key: str | None = None,
                 chat: bool | None = None, send_seed: bool = True, check: bool = True,
                 **client_kw: Any) -> None:
        if not name:
            raise InvalidInputError("model 'openai:' needs a name after the colon, e.g. "
                                    "openai:gpt-4o-mini.")
        self.name = name
        self.client = HttpClient(base_url, api_key, **client_kw)
        self.concurrency = self.client.concurrency
        self.chat = bool(chat)
        self.send_seed = bool(send_seed)
        served: list[str] = []
        if check:
            served = self.client.check()
            if served and name not in served:
                shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
                raise InvalidInputError(
                    f"server {self.client.base_url} does not serve model {name!r}; it serves: "
                    f"{shown}.")
        self.signature = (f"gen|model:{name}|backend:openai|chat:{'yes' if self.chat else 'no'}"
                          f"|v:{__version__}")
        self.provenance: dict[str, Any] = {
            "model": name, "backend": "openai", "base_url": self.client.base_url,
            "endpoint": "chat/completions" if self.chat else "completions", "chat": self.chat,
            "seed_sent": self.send_seed, "versions": {"divmeter": __version__},
        }
        #: Counts of the last call: sequences, completion tokens (as reported), seconds.
        self.last_stats: dict[str, float] = {}

    def _payload(self, prompt: str, d: Decoding, seed: int) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.name}
        if self.chat:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        body.update(max_tokens=d.max_tokens, temperature=d.temperature, top_p=d.top_p, n=1)
        if d.top_k:
            body["top_k"] = d.top_k  # not in OpenAI's API: sent only when asked for
        if d.stop:
            body["stop"] = list(d.stop)
        if self.send_seed:
            body["seed"] = seed
        return body

    def generate_partial(self, prompts: Sequence[str], n: int, *, temperature: float = 1.0,
                         top_p: float = 1.0, top_k: int = 0, max_tokens: int = 64,
                         stop: Sequence[str] = (), seed: int = 0,
                         prompt_seeds: Sequence[int] | None = None,
                         ) -> list[tuple[list[str], list[str] | None]]:
        """Like :meth:`generate`, but a prompt whose samples did not all succeed comes back as
        ``(texts so far, [failure kinds])`` instead of raising; complete ones as
        ``(texts, None)``."""
        texts = check_request(prompts, n, prompt_seeds)
        d = Decoding(temperature, top_p, top_k, max_tokens, tuple(stop))
        where: list[tuple[int, int]] = []
        payloads: list[dict[str, Any]] = []
        salts: list[int] = []
        for i, p in enumerate(texts):
            ps = None if prompt_seeds is None else int(prompt_seeds[i])
            for j, s in enumerate(sample_seeds(seed, p, n, prompt_seed=ps)):
                where.append((i, j))
                payloads.append(self._payload(p, d, s))
                salts.append(j)
        before = self.client.stats.completion_tokens
        t0 = time.perf_counter()
        results = self.client.post_many("chat/completions" if self.chat else "completions",
                                        payloads, salts=salts)
        got: list[list[str | None]] = [[None] * n for _ in texts]
        kinds: list[list[str]] = [[] for _ in texts]
        for (i, j), res in zip(where, results, strict=True):
            if isinstance(res, Failure):
                kinds[i].append(res.kind)
                continue
            text = _text(res, self.chat)
            if text is None:
                kinds[i].append("malformed")
                continue
            text = clean_server_text(text)
            ends = [k for k in (text.find(s) for s in d.stop) if k >= 0]
            got[i][j] = text[: min(ends)] if ends else text
        self.last_stats = {"sequences": len(payloads),
                           "tokens": self.client.stats.completion_tokens - before,
                           "seconds": time.perf_counter() - t0}
        return [([t for t in g if t is not None], k or None) for g, k in zip(got, kinds,
                                                                                strict=True)]

    def generate(self, prompts: Sequence[str], n: int, *, temperature: float = 1.0,
                 top_p: float = 1.0, top_k: int = 0, max_tokens: int = 64,
                 stop: Sequence[str] = (), seed: int = 0,
                 prompt_seeds: Sequence[int] | None = None) -> list[list[str]]:
        """``n`` samples for each prompt (see
        :class:`~divmeter.studies.generation.base.SampleGenerator`).

        Raises:
            ServerError: Some sample failed for good (one line: how many, of which kinds).
        """
        out = self.generate_partial(prompts, n, temperature=temperature, top_p=top_p,
                                    top_k=top_k, max_tokens=max_tokens, stop=stop, seed=seed,
                                    prompt_seeds=prompt_seeds)
        kinds = [k for _, ks in out for k in (ks or [])]
        if kinds:
            counts = {k: kinds.count(k) for k in sorted(set(kinds))}
            raise ServerError(f"{self.client.base_url}: {len(kinds)} of {len(prompts) * n} "
                              f"samples failed ({counts}).")
        return [texts for texts, _ in out]
