"""Ratings read from log-probabilities: the judge's ``logprobs`` answer mode.

The prompt (a completion-style template,
:func:`divmeter.backends.judge.prompts.absolute_completion`) is cut where the rating goes, and sent
to ``/completions`` with ``max_tokens: 1`` and ``logprobs``: the server lists the most likely next
tokens with their log-probabilities. The tokens whose text is one of the ratings ``1`` to ``5``
(leading or trailing spaces ignored: ``" 4"`` counts as 4) make the rating distribution,
renormalised over the five ratings; ``mass`` keeps how much probability the model gave them in total
(near 1 when it answers with a rating; small when it would rather write something else: a weak
answer, though a valid one).

Sample k of an item is a draw from that distribution at the run's temperature T
(``p_T(r) ∝ p(r)^(1/T)``; T = 0 takes the most likely rating, the lower one on a tie), from a
generator seeded by the run's seed, the prompt and k, so the N samples of the paper's protocol
(section 4.1: five ratings at temperature 1, averaged) need one request per item, and a rerun
repeats them. Constraining the next token to the five ratings is what a grammar would do; the
draw is the one a server would make under that constraint.

An answer is unusable only when the server sends no log-probabilities (kind ``no_logprobs``:
it does not support them) or none of the listed tokens is a rating (``no_rating_token``).

Both answer shapes are read: the completions one (``choices[0].logprobs.top_logprobs[0]``, a
``{token: logprob}`` map: OpenAI, vLLM, llama-cpp-python) and the per-token list
(``choices[0].logprobs.content[0].top_logprobs``: chat completions and llama.cpp's server).
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any

from divmeter.backends.judge.parse import HIGH, LOW, ParseError

__all__ = ["RATINGS", "draw", "rating_distribution"]

#: The ratings, as the token texts that stand for them.
RATINGS = tuple(str(r) for r in range(LOW, HIGH + 1))


def _top(answer: Any) -> list[tuple[str, float]] | None:
    """The ``(token, logprob)`` list of the answer's first generated token, or ``None``."""
    try:
        lp = answer["choices"][0]["logprobs"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(lp, dict):
        return None
    top = lp.get("top_logprobs")
    if isinstance(top, list) and top and isinstance(top[0], dict):
        first = top[0]
        if all(isinstance(v, (int, float)) for v in first.values()):
            return [(str(k), float(v)) for k, v in first.items()]
    content = lp.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        entries = content[0].get("top_logprobs")
        if isinstance(entries, list):
            return [(str(e["token"]), float(e["logprob"])) for e in entries
                    if isinstance(e, dict) and "token" in e and isinstance(
                        e.get("logprob"), (int, float))]
    return None


def rating_distribution(answer: Any) -> dict[str, Any]:
    """The rating distribution in a ``/completions`` answer with ``logprobs``.

    Returns:
        ``{"p": {"1": p1, ..., "5": p5}, "mass": m}``: probabilities renormalised over the
        ratings (each rounded to 6 digits), and their total probability before that.

    Raises:
        ParseError: ``no_logprobs`` (the answer has none) or ``no_rating_token`` (no listed
            token is a rating).

    Example:
        >>> a = {"choices": [{"logprobs": {"top_logprobs": [
        ...     {"4": math.log(0.6), " 3": math.log(0.2), "the": math.log(0.1)}]}}]}
        >>> d = rating_distribution(a)
        >>> d["p"]["4"], d["p"]["3"], d["p"]["1"], round(d["mass"], 3)
        (0.75, 0.25, 0.0, 0.8)
    """
    top = _top(answer)
    if not top:
        raise ParseError("no_logprobs", "the answer has no log-probabilities (does the server "
                         "support `logprobs` on /completions?)")
    probs = dict.fromkeys(RATINGS, 0.0)
    for token, logprob in top:
        key = token.strip()
        if key in probs and math.isfinite(logprob):
            probs[key] += math.exp(logprob)
    mass = sum(probs.values())
    if mass <= 0:
        shown = ", ".join(repr(t) for t, _ in sorted(top, key=lambda x: -x[1])[:5])
        raise ParseError("no_rating_token", f"none of the {len(top)} most likely tokens is a "
                         f"rating {LOW}-{HIGH} (top: {shown})")
    return {"p": {k: round(v / mass, 6) for k, v in probs.items()}, "mass": mass}


def draw(dist: dict[str, Any], temperature: float, seed: int, key: str, sample: int) -> int:
    """Sample ``sample`` of an item: a rating drawn from ``dist`` at ``temperature`` (0: the
    most likely rating), with a generator seeded by ``seed``, the item's ``key`` and the sample
    index.

    Example:
        >>> d = {"p": {"1": 0.0, "2": 0.1, "3": 0.0, "4": 0.9, "5": 0.0}, "mass": 1.0}
        >>> draw(d, 0.0, 0, "item", 0), draw(d, 1.0, 0, "item", 3) == draw(d, 1.0, 0, "item", 3)
        (4, True)
    """
    p = [dist["p"][r] for r in RATINGS]
    if temperature == 0:
        return LOW + max(range(len(p)), key=lambda i: (p[i], -i))
    w = [x ** (1.0 / temperature) if x > 0 else 0.0 for x in p]
    digest = hashlib.sha256(f"{seed}|{key}|{sample}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    return LOW + rng.choices(range(len(p)), weights=w)[0]


def most_likely(dist: dict[str, Any]) -> int:
    """The most likely rating of ``dist`` (the lower one on a tie)."""
    return draw(dist, 0.0, 0, "", 0)
