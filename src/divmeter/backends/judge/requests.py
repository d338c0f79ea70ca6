"""The requests a judge run sends: one :class:`Job` per answer asked for, its JSON body per answer
mode, and the salt that joins the request cache key.

* ``text``: ``/chat/completions`` with the rubric (and few-shot turns) as chat messages, at the
  run's temperature, one request per sample.
* ``schema``: the same, plus ``response_format``: a JSON schema whose rating fields are the
  integers 1-5, in OpenAI's ``json_schema`` form (OpenAI, vLLM, llama.cpp's server), or, when the
  server refuses that form on a first probe request, in the ``json_object`` + ``schema`` form
  (llama-cpp-python's server).
* ``logprobs``: ``/completions`` with the completion prompt cut where the rating goes,
  ``max_tokens: 1``, temperature 0 and ``logprobs: top_logprobs``; one request per item (per
  presentation order, and per set of a pair), the N samples are drawn from its answer
  (:mod:`divmeter.backends.judge.logprobs`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from divmeter.backends.judge.config import JudgeConfig
from divmeter.backends.judge.prompts import (
    FewShot,
    Template,
    absolute_completion,
    absolute_messages,
    pairwise_completion,
    pairwise_messages,
)

__all__ = ["Job", "content", "endpoint", "pair_jobs", "payload", "salt", "set_jobs"]

CHAT = "chat/completions"
COMPLETIONS = "completions"


@dataclass(frozen=True)
class Job:
    """One answer to ask for: chat ``messages`` (``text``/``schema``) or a completion
    ``prompt`` (``logprobs``), the sample index (``0`` for a ``logprobs`` job, which serves every
    sample) and the presentation order of a pair (``None`` for a set)."""

    messages: list[dict[str, str]] | None
    sample: int
    order: str | None
    prompt: str | None = None

    @property
    def key(self) -> str:
        """A short hash of what the job asks (seeds the ``logprobs`` draws)."""
        text = self.prompt if self.prompt is not None else repr(self.messages)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def endpoint(cfg: JudgeConfig) -> str:
    """The path the answer mode posts to."""
    return COMPLETIONS if cfg.answer == "logprobs" else CHAT


def _schema(task: str) -> dict[str, Any]:
    rating = {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    keys = ["score"] if task == "absolute" else ["Diversity_Score_Set1", "Diversity_Score_Set2"]
    props: dict[str, Any] = dict.fromkeys(keys, rating)
    props["rationale"] = {"type": "string", "maxLength": 400}
    return {"type": "object", "properties": props, "required": [*keys, "rationale"],
            "additionalProperties": False}


def response_format(task: str, style: str = "json_schema") -> dict[str, Any]:
    """The ``response_format`` of the ``schema`` mode: OpenAI's ``json_schema`` form, or the
    ``json_object`` + ``schema`` form of llama-cpp-python's server (``style="json_object"``).

    Example:
        >>> response_format("absolute")["json_schema"]["schema"]["required"]
        ['score', 'rationale']
    """
    if style == "json_object":
        return {"type": "json_object", "schema": _schema(task)}
    return {"type": "json_schema", "json_schema": {"name": f"diversity_{task}", "strict": True,
                                                   "schema": _schema(task)}}


def payload(cfg: JudgeConfig, job: Job, ask: int, task: str = "absolute",
            schema_style: str = "json_schema") -> dict[str, Any]:
    """The JSON body of ``job`` (re-ask number ``ask``)."""
    if cfg.answer == "logprobs":
        return {"model": cfg.model_name, "prompt": job.prompt, "max_tokens": 1,
                "temperature": 0.0, "logprobs": cfg.top_logprobs}
    body: dict[str, Any] = {"model": cfg.model_name, "messages": job.messages,
                            "temperature": float(cfg.temperature), "max_tokens": cfg.max_tokens}
    if cfg.seed is not None:
        body["seed"] = cfg.seed + job.sample + 1000 * ask
    if cfg.answer == "schema":
        body["response_format"] = response_format(task, schema_style)
    return body


def salt(template: Template, fewshot: FewShot, job: Job, ask: int) -> dict[str, Any]:
    """What joins the cache key without being sent: template and few-shot ids, sample index
    and re-ask number (so N samples of one item are N cache entries)."""
    return {"judge": "divmeter", "template": template.id, "fewshot": fewshot.id,
            "sample": job.sample, "ask": ask}


def content(data: dict[str, Any]) -> str | None:
    """The text of a chat (or completion) answer, or ``None`` when it has none."""
    try:
        choice = data["choices"][0]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(choice, dict):
        return None
    msg = choice.get("message")
    if isinstance(msg, dict) and isinstance(msg.get("content"), str):
        return str(msg["content"])
    return choice["text"] if isinstance(choice.get("text"), str) else None


def set_jobs(sets: Sequence[Sequence[str]], cfg: JudgeConfig, template: Template,
             fewshot: FewShot, contexts: Sequence[str | None] | None
             ) -> tuple[list[Job], list[int]]:
    """Requests of an absolute run and the set each belongs to: per non-empty set, one per
    sample (``text``/``schema``) or one (``logprobs``)."""
    ctx = list(contexts) if contexts is not None else [None] * len(sets)
    jobs: list[Job] = []
    owner: list[int] = []
    for i, t in enumerate(sets):
        if not t:
            continue
        if cfg.answer == "logprobs":
            jobs.append(Job(None, 0, None, absolute_completion(template, fewshot, list(t),
                                                               ctx[i])))
            owner.append(i)
            continue
        msgs = absolute_messages(template, fewshot, list(t), ctx[i])
        jobs.extend(Job(msgs, k, None) for k in range(cfg.samples))
        owner.extend([i] * cfg.samples)
    return jobs, owner


def orders_of(cfg: JudgeConfig) -> tuple[str, ...]:
    """The presentation orders a pairwise run asks: ``ab`` and ``ba``, or ``ab``."""
    return ("ab", "ba") if cfg.orders == "both" else ("ab",)


def pair_jobs(pairs: Sequence[tuple[Sequence[str], Sequence[str]]], cfg: JudgeConfig,
              template: Template, fewshot: FewShot, contexts: Sequence[str | None] | None
              ) -> tuple[list[Job], list[int]]:
    """Requests of a pairwise run and the pair each belongs to: per pair with two non-empty
    sets, per order, one per sample (``text``/``schema``) or the first of the two ``logprobs``
    requests (Set 1's rating; Set 2's is asked once Set 1's is known)."""
    ctx = list(contexts) if contexts is not None else [None] * len(pairs)
    jobs: list[Job] = []
    owner: list[int] = []
    for i, (a, b) in enumerate(pairs):
        if not a or not b:
            continue
        for order in orders_of(cfg):
            first, second = (a, b) if order == "ab" else (b, a)
            if cfg.answer == "logprobs":
                jobs.append(Job(None, 0, order, pairwise_completion(
                    template, fewshot, list(first), list(second), ctx[i])))
                owner.append(i)
                continue
            msgs = pairwise_messages(template, fewshot, list(first), list(second), ctx[i])
            jobs.extend(Job(msgs, k, order) for k in range(cfg.samples))
            owner.extend([i] * cfg.samples)
    return jobs, owner
