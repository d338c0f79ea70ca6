"""The OpenAI Batch API: write a run's requests as a batch input file, and store a batch's
results in the request cache so the ordinary run is served from it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from divmeter.backends.judge.config import JudgeConfig
from divmeter.backends.judge.requests import CHAT, payload, salt
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.lines import bounded_lines, display_name, open_source
from divmeter.inputs.data.outputs import claim_write
from divmeter.studies.judge.cost import run_jobs

__all__ = ["ingest_batch_results", "write_batch_requests"]


def write_batch_requests(path: str, task: str, items: Sequence[Any], config: JudgeConfig, *,
                         contexts: Sequence[str | None] | None = None, client: Any = None
                         ) -> int:
    """Write an OpenAI Batch API input file for the first answer of every request not cached.

    Each line is ``{"custom_id": <cache key>, "method": "POST", "url": "/v1/chat/completions",
    "body": <the request>}``. Upload it as a batch; when it is done, give its results file to
    :func:`ingest_batch_results` with the same ``base_url``: the answers land in the cache, and
    the ordinary run then sends only the re-asks of unparseable answers.

    Returns:
        The number of requests written.

    Raises:
        InvalidInputError: The ``logprobs`` answer mode (its requests go to ``/completions``,
            which the Batch API's chat models do not serve; use ``text`` or ``schema``).
    """
    from divmeter.backends.http import request_key

    if config.answer == "logprobs":
        raise InvalidInputError("the Batch API files hold chat requests; use --answer text or "
                                "--answer schema with --batch-write (got logprobs).")
    jobs, template, fewshot = run_jobs(task, items, config, contexts)
    client = client if client is not None else config.client()
    url = f"{client.base_url}/{CHAT}"
    n = 0
    seen = set()
    claim_write(path, "--batch-write")  # never a file the command read
    with open(path, "w", encoding="utf-8") as fh:
        for job in jobs:
            body = payload(config, job, 0, task)
            key = request_key(url, body, salt(template, fewshot, job, 0))
            if key in seen or (client.cache is not None and client.cache.get(key) is not None):
                continue
            seen.add(key)
            fh.write(json.dumps({"custom_id": key, "method": "POST",
                                 "url": "/v1/chat/completions", "body": body},
                                ensure_ascii=False) + "\n")
            n += 1
    return n


def ingest_batch_results(path: str, config: JudgeConfig, *, client: Any = None
                         ) -> dict[str, int]:
    """Store the answers of an OpenAI Batch API results file in the request cache.

    Lines with ``response.status_code`` 200 are stored under their ``custom_id`` (the cache key
    written by :func:`write_batch_requests`); others are counted as failed (their requests will be
    sent by the ordinary run).

    Returns:
        ``{"stored": ..., "failed": ...}``.

    Raises:
        InvalidInputError: No cache configured, or a malformed line (file and line named).
    """
    from divmeter.backends.http import is_request_key, shape_problem

    client = client if client is not None else config.check().client()
    if client.cache is None:
        raise InvalidInputError("ingesting batch results needs the request cache; got cache=None.")
    stored = failed = 0
    with open_source(path) as fh:
        for lineno, line in enumerate(bounded_lines(fh, display_name(path)), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key = row["custom_id"]
                resp = row.get("response") or {}
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                raise InvalidInputError(
                    f"{path} line {lineno}: expected an OpenAI batch result with 'custom_id' and "
                    "'response'.") from None
            if not is_request_key(key):
                raise InvalidInputError(
                    f"{path} line {lineno}: 'custom_id' must be a request key divmeter wrote "
                    f"(64 lower-case hex digits, from --batch-write); got {str(key)[:80]!r}.")
            body = resp.get("body") if isinstance(resp, dict) else None
            if (isinstance(resp, dict) and resp.get("status_code") == 200
                    and isinstance(body, dict)
                    and shape_problem(f"{client.base_url}/{CHAT}", None, body) is None):
                client.cache.put(key, body)
                stored += 1
            else:
                failed += 1
    return {"stored": stored, "failed": failed}
