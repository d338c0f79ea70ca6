"""Sending a judge run's requests through the shared HTTP client and turning each answer into a
rating or a failure with its reason and kind.

* :func:`ask_ratings` (``text`` and ``schema`` answers): every job is sent; an answer that does
  not parse (:mod:`divmeter.backends.judge.parse`) is asked again, at most ``retries`` more times
  per sample; then the sample is null with its reason. Transport failures (429, 5xx, time-outs) are
  retried by the HTTP client and become nulls with their kind.
* :func:`ask_distributions` (``logprobs`` answers): every job is sent once and its answer read
  as a rating distribution (:func:`divmeter.backends.judge.logprobs.rating_distribution`); the
  request is deterministic, so a failure is not re-asked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from divmeter.backends.judge.config import JudgeConfig
from divmeter.backends.judge.logprobs import rating_distribution
from divmeter.backends.judge.parse import ParseError
from divmeter.backends.judge.prompts import FewShot, Template
from divmeter.backends.judge.requests import Job, content, endpoint, payload, salt

__all__ = ["Answer", "ask_distributions", "ask_ratings"]

#: Per job: (parsed rating or distribution, or None; reason; kind; answers asked).
Answer = tuple[Any, str | None, str | None, int]


def _failure(res: Any, ask: int) -> Answer:
    tries = f"{res.attempts} attempt{'s' if res.attempts != 1 else ''}"
    return (None, f"request failed after {tries}: {res.message}", res.kind, ask + 1)


def ask_ratings(client: Any, cfg: JudgeConfig, template: Template, fewshot: FewShot,
                jobs: Sequence[Job], parse: Callable[[str], Any], task: str,
                on_answer: Callable[[], None] | None = None
                ) -> tuple[list[Answer], Counter[str]]:
    """Send every job, re-asking unparseable answers up to ``cfg.retries`` times.

    Returns per job ``(parsed or None, reason, kind, asks)`` and the parse failures by kind.
    """
    from divmeter.backends.http import Failure

    out: list[Answer] = [(None, "not asked", "connection", 0)] * len(jobs)
    failures: Counter[str] = Counter()
    pending = list(range(len(jobs)))
    style = _schema_style(client, cfg, jobs[0], task) if cfg.answer == "schema" and jobs \
        else "json_schema"
    for ask in range(cfg.retries + 1):
        if not pending:
            break
        results = client.post_many(
            endpoint(cfg), [payload(cfg, jobs[j], ask, task, style) for j in pending],
            salts=[salt(template, fewshot, jobs[j], ask) for j in pending],
            on_result=(lambda i, r: on_answer()) if on_answer else None)
        again = []
        for j, res in zip(pending, results, strict=True):
            if isinstance(res, Failure):
                out[j] = _failure(res, ask)
                continue
            text = content(res)
            try:
                if text is None:
                    raise ParseError("no_content", "the answer has no message content")
                out[j] = (parse(text), None, None, ask + 1)
            except ParseError as exc:
                failures[exc.kind] += 1
                out[j] = (None, f"unparseable answer (asked {ask + 1}x): {exc.message}",
                          exc.kind, ask + 1)
                again.append(j)
        pending = again
    return out, failures


def _schema_style(client: Any, cfg: JudgeConfig, job: Job, task: str) -> str:
    """``json_schema`` (OpenAI's ``response_format``) when the server takes it, else
    ``json_object`` + ``schema`` (llama-cpp-python's form; its server answers OpenAI's with a
    validation error, as a 500): one uncached request with a single attempt decides."""
    from divmeter.backends.http import Failure

    body = payload(cfg, job, 0, task, "json_schema")
    body["max_tokens"] = 1
    saved, cache = client.max_attempts, client.cache
    client.max_attempts, client.cache = 1, None
    try:
        res = client.post_many(endpoint(cfg), [body])[0]
    finally:
        client.max_attempts, client.cache = saved, cache
    if isinstance(res, Failure) and res.kind in ("4xx", "5xx"):
        return "json_object"
    return "json_schema"


def ask_distributions(client: Any, cfg: JudgeConfig, template: Template, fewshot: FewShot,
                      jobs: Sequence[Job], on_answer: Callable[[], None] | None = None
                      ) -> tuple[list[Answer], Counter[str]]:
    """Send every ``logprobs`` job once; per job ``(distribution or None, reason, kind, 1)``
    and the answers without a rating by kind (``no_logprobs``, ``no_rating_token``)."""
    from divmeter.backends.http import Failure

    results = client.post_many(
        endpoint(cfg), [payload(cfg, j, 0) for j in jobs],
        salts=[salt(template, fewshot, j, 0) for j in jobs],
        on_result=(lambda i, r: on_answer()) if on_answer else None)
    out: list[Answer] = []
    failures: Counter[str] = Counter()
    for res in results:
        if isinstance(res, Failure):
            out.append(_failure(res, 0))
            continue
        try:
            out.append((rating_distribution(res), None, None, 1))
        except ParseError as exc:
            failures[exc.kind] += 1
            out.append((None, f"no rating in the answer: {exc.message}", exc.kind, 1))
    return out, failures
