"""What a judge run will send, before it starts (:func:`estimate_cost`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from divmeter.backends.judge.config import JudgeConfig
from divmeter.backends.judge.prompts import FewShot, Template
from divmeter.backends.judge.requests import Job, endpoint, pair_jobs, payload, salt, set_jobs
from divmeter.core.errors import InvalidInputError

__all__ = ["CHARS_PER_TOKEN", "estimate_cost", "run_jobs"]

#: Characters per token assumed by the cost estimate when no tokenizer is used (OpenAI's rule of
#: thumb for English text).
CHARS_PER_TOKEN = 4


def run_jobs(task: str, items: Sequence[Any], config: JudgeConfig,
             contexts: Sequence[str | None] | None) -> tuple[list[Job], Template, FewShot]:
    """The first-round requests of a run (every request of ``text``/``schema`` runs; Set 1's
    of a ``logprobs`` pairwise run), with the template and few-shot examples."""
    config.check()
    if task not in ("pairwise", "absolute"):
        raise InvalidInputError(f"`task` must be absolute or pairwise; got {task!r}.")
    if contexts is not None and len(contexts) != len(items):
        raise InvalidInputError(f"`contexts` must have one entry per item ({len(items)}); got "
                                f"{len(contexts)}.")
    template, fewshot = config.prompts(task)
    make = pair_jobs if task == "pairwise" else set_jobs
    jobs, _ = make(items, config, template, fewshot, contexts)
    return jobs, template, fewshot


def _chars(job: Job) -> int:
    if job.prompt is not None:
        return len(job.prompt)
    return sum(len(m["content"]) for m in job.messages or [])


def estimate_cost(task: str, items: Sequence[Any], config: JudgeConfig, *,
                  contexts: Sequence[str | None] | None = None, client: Any = None
                  ) -> dict[str, Any]:
    """What a run will send, before it starts.

    Prompt tokens are estimated from characters (``ceil(characters / 4)`` per request, the
    message texts only, no tokenizer); completion tokens are bounded by ``max_tokens`` per
    request (1 in the ``logprobs`` mode). Requests already in the client's cache are counted
    apart (a rerun sends none). Re-asks after unparseable answers can add up to ``retries`` x
    the requests (``text``/``schema``). A ``logprobs`` pairwise run asks twice per order (Set 1's
    rating, then Set 2's): the second request counts as cached when the first one is.

    Args:
        task: ``absolute`` (items are sets) or ``pairwise`` (items are ``(set1, set2)``).
        items: The sets or pairs.
        config: The run's settings.
        contexts: Per item input, as for the run.
        client: The client whose cache is checked (default: one from ``config``).

    Returns:
        ``{"requests", "cached", "to_send", "max_requests_with_reasks", "prompt_tokens_est",
        "max_completion_tokens", "token_estimate"}``.

    Example:
        >>> cfg = JudgeConfig("openai:m", base_url="http://127.0.0.1:9/v1", samples=2,
        ...                   fewshot="none", cache=None)
        >>> c = estimate_cost("absolute", [["A cat.", "A dog."]], cfg)
        >>> c["requests"], c["max_completion_tokens"]
        (2, 512)
    """
    from divmeter.backends.http import request_key

    jobs, template, fewshot = run_jobs(task, items, config, contexts)
    client = client if client is not None else config.client()
    url = f"{client.base_url}/{endpoint(config)}"
    per_job = 2 if (config.answer == "logprobs" and task == "pairwise") else 1
    cached = 0
    chars = 0
    for job in jobs:
        if client.cache is not None and client.cache.get(request_key(
                url, payload(config, job, 0, task), salt(template, fewshot, job, 0))) is not None:
            cached += per_job
            continue
        chars += _chars(job) * per_job
    requests = len(jobs) * per_job
    to_send = requests - cached
    lp = config.answer == "logprobs"
    return {
        "requests": requests,
        "cached": cached,
        "to_send": to_send,
        "max_requests_with_reasks": to_send if lp else to_send * (1 + config.retries),
        "prompt_tokens_est": math.ceil(chars / CHARS_PER_TOKEN),
        "max_completion_tokens": to_send * (1 if lp else config.max_tokens),
        "token_estimate": f"characters/{CHARS_PER_TOKEN}, no tokenizer",
    }
