"""Pair questions to an LLM behind an OpenAI-compatible server, answered by log-probabilities.

Two questions, each one chat request with ``max_tokens=1``, ``temperature=0`` and
``logprobs`` / ``top_logprobs``, sent through the one HTTP client
(:class:`divmeter.backends.http.HttpClient`: bounded concurrency, retries, the on-disk request
cache):

* :class:`SameJudge`: are two responses to a prompt the *same* or *different* (NoveltyBench's
  functional equivalence: would a user who has seen one benefit from the other)? The answer is
  ``P(same) = m_same / (m_same + m_different)``, where ``m_w`` is the probability mass of the
  first-token candidates that spell the answer word ``w`` (case-insensitive; a token that is
  the start of the word counts when it has at least 3 letters). Reading the two answers'
  probabilities instead of the sampled text lets a small model answer: it need not follow the
  format, only rank the two words.
* :class:`QualityJudge`: a 1-10 quality rating of one response, the expected value over the
  first-token candidates ``1`` .. ``10`` (renormalised over those present).

A request whose top candidates hold neither answer is a failure with the reason (the candidates
it saw), never a guess. The prompts are package text (:data:`SAME_SYSTEM`,
:data:`QUALITY_SYSTEM`), hashed into the signature (``tmpl:``).

Needs the ``http`` extra (``httpx`` and ``tenacity``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

from divmeter.backends.http import Failure, HttpClient
from divmeter.core.errors import InvalidInputError

__all__ = ["SameJudge", "QualityJudge", "answer_mass", "SAME_SYSTEM", "QUALITY_SYSTEM",
           "quality_judge_items"]

SAME_SYSTEM = (
    "You compare two responses to the same request. They are the same if a reader who has "
    "seen one would gain nothing meaningful from seeing the other: they give the same answer, "
    "idea or story, however differently they are worded. They are different if the second "
    "offers something meaningfully new. Answer with one word in lower case: same or different."
)
SAME_USER = "{request}Response 1:\n{a}\n\nResponse 2:\n{b}\n\nAnswer (same or different):"
QUALITY_SYSTEM = (
    "You rate how good a response is as an answer to a request: helpful, correct, fluent and "
    "on topic. Answer with one number from 1 (very poor) to 10 (excellent)."
)
QUALITY_USER = "{request}Response:\n{a}\n\nRating (1-10):"
ANSWERS = ("same", "different")
_STRIP = " \t\r\n\"'*`.:,;!()[]"


def _template_hash(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:8]


def _norm(token: str) -> str:
    return token.replace("\u0120", " ").replace("\u2581", " ").strip(_STRIP).lower()


def _candidates(answer: dict[str, Any]) -> list[tuple[str, float]] | str:
    """``(token, logprob)`` of the first answer token's candidates (the chosen one included),
    or why the answer has none."""
    try:
        first = answer["choices"][0]["logprobs"]["content"][0]
    except (KeyError, IndexError, TypeError):
        return ("the answer has no log-probabilities (choices[0].logprobs.content); the server "
                "must support logprobs with top_logprobs on /chat/completions")
    seen: dict[str, float] = {}
    for c in [first, *(first.get("top_logprobs") or [])]:
        if isinstance(c, dict) and isinstance(c.get("token"), str) and isinstance(
                c.get("logprob"), (int, float)):
            seen.setdefault(c["token"], float(c["logprob"]))
    return list(seen.items())


def answer_mass(candidates: Sequence[tuple[str, float]], word: str) -> float:
    """Probability mass of the candidate tokens that spell ``word`` (its whole, or a start of
    at least 3 letters), case and surrounding punctuation ignored.

    Example:
        >>> answer_mass([(" Same", math.log(0.5)), ("same", math.log(0.25)), ("Sa", 0.0)], "same")
        0.75
        >>> answer_mass([("Diff", math.log(0.2)), ("D", math.log(0.3))], "different")
        0.2
    """
    total = 0.0
    for tok, lp in candidates:
        t = _norm(tok)
        if t == word or (len(t) >= 3 and word.startswith(t)):
            total += math.exp(lp)
    return total


def _server(model: str, base_url: str | None) -> tuple[str, str]:
    from divmeter.backends.server import server_model_name

    name = server_model_name(model)
    if name is None:
        raise InvalidInputError(
            f"an LLM judge is a server model 'openai:NAME' (with base_url); got {model!r}."
        )
    from divmeter.backends.http import resolve_base_url

    return name, resolve_base_url(base_url)


class _Asker:
    """Shared plumbing: one client, the request body, failures as reasons."""

    system = ""
    user = ""

    def __init__(self, model: str, base_url: str | None = None, *,
                 cache: str | None = "default", top_logprobs: int = 20, concurrency: int = 4,
                 timeout: float = 60.0, max_attempts: int = 5) -> None:
        if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or not (
                1 <= top_logprobs <= 20):
            raise InvalidInputError(f"`top_logprobs` must be an integer from 1 to 20; got "
                                    f"{top_logprobs!r}.")
        self.name, url = _server(model, base_url)
        self.top_logprobs = top_logprobs
        self.client = HttpClient(url, concurrency=concurrency, timeout=timeout,
                                 max_attempts=max_attempts, cache=cache)

    def items(self) -> list[tuple[str, Any]]:
        from divmeter.backends.server import _host

        return [("model", f"openai:{self.name}@{_host(self.client.base_url)}"),
                ("api", "chat-logprobs"), ("top", self.top_logprobs),
                ("tmpl", _template_hash(self.system, self.user))]

    def _payload(self, prompt: str | None, a: str, b: str | None = None) -> dict[str, Any]:
        request = f"Request:\n{prompt}\n\n" if prompt else ""
        user = self.user.format(request=request, a=a, b=b)
        return {"model": self.name,
                "messages": [{"role": "system", "content": self.system},
                             {"role": "user", "content": user}],
                "max_tokens": 1, "temperature": 0.0, "logprobs": True,
                "top_logprobs": self.top_logprobs}

    def _send(self, payloads: list[dict[str, Any]]) -> list[list[tuple[str, float]] | str]:
        out: list[list[tuple[str, float]] | str] = []
        for r in self.client.post_many("chat/completions", payloads) if payloads else []:
            if isinstance(r, Failure):
                out.append(f"{self.client.base_url}: {r.message} ({r.kind}, after "
                           f"{r.attempts} attempt{'s' if r.attempts != 1 else ''})")
            else:
                out.append(_candidates(r))
        return out


def _shown(cands: Sequence[tuple[str, float]]) -> str:
    return ", ".join(repr(t) for t, _ in cands[:8])


class SameJudge(_Asker):
    """``P(same)`` of ``(prompt, a, b)`` questions (one order each; the caller swaps orders).

    Args:
        model: ``openai:NAME``.
        base_url: The server's API root (``$DIVMETER_BASE_URL`` by default).
        cache: The request cache (``default``, a folder, or ``None``).
        top_logprobs: First-token candidates asked for (at most 20, the OpenAI API's limit).
        concurrency, timeout, max_attempts: Of the HTTP client.

    Example:
        >>> SameJudge("openai:m", "http://127.0.0.1:9/v1", cache=None).items()[1]
        ('api', 'chat-logprobs')
    """

    system = SAME_SYSTEM
    user = SAME_USER

    def p_same(self, queries: Sequence[tuple[str | None, str, str]]) -> list[float | str]:
        """``P(same)`` per query, or the reason it could not be read."""
        out: list[float | str] = []
        for cands in self._send([self._payload(p, a, b) for p, a, b in queries]):
            if isinstance(cands, str):
                out.append(cands)
                continue
            same, diff = answer_mass(cands, "same"), answer_mass(cands, "different")
            if same + diff <= 0.0:
                out.append(f"neither 'same' nor 'different' among the judge's top "
                           f"{self.top_logprobs} first tokens ({_shown(cands)})")
            else:
                out.append(same / (same + diff))
        return out


class QualityJudge(_Asker):
    """A 1-10 quality rating per ``(prompt, response)``: the expected rating over the
    first-token candidates that are the numbers 1 to 10."""

    system = QUALITY_SYSTEM
    user = QUALITY_USER

    def ratings(self, items: Sequence[tuple[str | None, str]]) -> list[float | str]:
        """The expected rating per item, or the reason it could not be read."""
        out: list[float | str] = []
        for cands in self._send([self._payload(p, a) for p, a in items]):
            if isinstance(cands, str):
                out.append(cands)
                continue
            mass = {r: 0.0 for r in range(1, 11)}
            for tok, lp in cands:
                t = _norm(tok)
                if t.isdigit() and 1 <= int(t) <= 10:
                    mass[int(t)] += math.exp(lp)
            total = sum(mass.values())
            if total <= 0.0:
                out.append(f"no rating 1-10 among the judge's top {self.top_logprobs} first "
                           f"tokens ({_shown(cands)})")
            else:
                out.append(sum(r * m for r, m in mass.items()) / total)
        return out


def quality_judge_items(model: str, base_url: str | None) -> list[tuple[str, Any]]:
    """The signature items of a :class:`QualityJudge` (no request is sent)."""
    return QualityJudge(model, base_url, cache=None).items()
