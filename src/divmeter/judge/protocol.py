"""The judge protocol: ask an OpenAI-compatible chat model to rate diversity, N times, strictly.

The commonsense meta-evaluation paper (section 4.1, section 5.1, appendices D-F) rates each
sentence set 1-5 with GPT-4o at temperature 1.0, five times, and averages; for a pair of sets the
set with the higher mean rating is the more diverse one, and pairs whose means differ by less than
0.5 are filtered out (``divmeter meta pairwise --min-rating-diff 0.5`` on the output of
:func:`judge_pairs`). Each step is a named option here, recorded in the signature:

* ``samples`` (N, default 5) answers per item at ``temperature`` (default 1.0), averaged;
* ``orders`` (pairwise): ``both`` shows every pair as (A, B) and as (B, A), because the paper found
  its judge picking the second set 87% of the time when asked directly; the position bias that
  remains is reported (:class:`PositionBias`);
* ``template`` / ``fewshot``: see :mod:`divmeter.judge.prompts`;
* ``retries``: an answer that does not parse (:mod:`divmeter.judge.parse`) is asked again, at most
  ``retries`` more times per sample; then the sample is null with its reason. Transport failures
  (429, 5xx, time-outs) are retried by the HTTP client and become nulls with their kind;
* an item's value is the mean of its valid samples (``n_valid`` is kept); it is null, with the
  most common reason, when no sample is valid.

Requests go through :class:`divmeter.backends.http.HttpClient`; the cache key is the request body
(model, messages, sampling parameters) plus a salt holding the template and few-shot hashes, the
sample index and the re-ask number, so a rerun is served from disk without a request, and N
samples of one item are N different entries.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.errors import InvalidInputError
from divmeter.judge.parse import PARSE_KINDS, ParseError, parse_absolute, parse_pairwise
from divmeter.judge.prompts import (
    FewShot,
    Template,
    absolute_messages,
    load_fewshot,
    load_template,
    pairwise_messages,
)
from divmeter.result import make_signature

__all__ = [
    "JudgeConfig",
    "Sample",
    "JudgedSet",
    "JudgedPair",
    "PositionBias",
    "JudgeRun",
    "judge_sets",
    "judge_pairs",
    "estimate_cost",
    "write_batch_requests",
    "ingest_batch_results",
    "CHARS_PER_TOKEN",
]

COMMONSENSE = (
    "Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in Commonsense "
    "Generation "
    "(commonsense meta-evaluation; LLM annotator protocol, section 4.1 and appendices D-F)"
)
ENDPOINT = "chat/completions"
#: Characters per token assumed by the cost estimate when no tokenizer is used (OpenAI's rule of
#: thumb for English text).
CHARS_PER_TOKEN = 4
ORDERS = ("both", "ab")


@dataclass(frozen=True)
class JudgeConfig:
    """Settings of a judge run (validated by :meth:`check`).

    Attributes:
        model: ``openai:NAME`` (any OpenAI-compatible server) or ``NAME``; the server sees
            ``NAME``.
        base_url: API root (default ``$DIVMETER_BASE_URL`` / ``$OPENAI_BASE_URL``).
        api_key: Bearer token (default ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY``); never in
            signatures, output, logs or the cache.
        samples: Answers per item (N), averaged (the paper: 5).
        temperature: Sampling temperature (the paper: 1.0, appendix E).
        max_tokens: Longest answer per request.
        template: ``default`` or a path (see :mod:`divmeter.judge.prompts`).
        fewshot: ``default``, ``none`` or a path to a JSONL file.
        retries: Re-asks per sample after an unparseable answer (bounded).
        seed: Sent as ``seed`` (+ sample index, + 1000 x re-ask) when set, for servers that
            honour it; ``None`` sends none.
        orders: Pairwise only: ``both`` (A/B then B/A) or ``ab``.
        concurrency: Requests in flight.
        timeout: Seconds per request.
        max_attempts: HTTP attempts per request (429 / 5xx / time-outs retried with back-off).
        cache: ``default``, a folder, or ``None``.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    samples: int = 5
    temperature: float = 1.0
    max_tokens: int = 256
    template: str = "default"
    fewshot: str | None = "default"
    retries: int = 2
    seed: int | None = None
    orders: str = "both"
    concurrency: int = 4
    timeout: float = 60.0
    max_attempts: int = 5
    cache: str | None = "default"

    @property
    def model_name(self) -> str:
        """The name sent to the server (``openai:`` prefix removed)."""
        return self.model[len("openai:"):] if self.model.startswith("openai:") else self.model

    def check(self) -> JudgeConfig:
        """Validate every field; one-line :class:`InvalidInputError` naming the bad one."""
        if not isinstance(self.model, str) or not self.model_name.strip():
            raise InvalidInputError(
                "`model` of judge is required, e.g. model=openai:gpt-4o (or the name a local "
                f"server serves); got {self.model!r}.")
        for name, low in (("samples", 1), ("max_tokens", 1), ("retries", 0), ("concurrency", 1),
                          ("max_attempts", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InvalidInputError(f"`{name}` of judge must be an integer >= {low}; got "
                                        f"{v!r}.")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 2:
            raise InvalidInputError(f"`temperature` of judge must be a number from 0 to 2; got "
                                    f"{t!r}.")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed,
                                                                                     int)):
            raise InvalidInputError(f"`seed` of judge must be an integer or none; got "
                                    f"{self.seed!r}.")
        if self.orders not in ORDERS:
            raise InvalidInputError(f"`orders` of judge must be both or ab; got {self.orders!r}.")
        to = self.timeout
        if isinstance(to, bool) or not isinstance(to, (int, float)) or not to > 0:
            raise InvalidInputError(f"`timeout` of judge must be a number > 0; got {to!r}.")
        return self

    def client(self) -> Any:
        """The shared :class:`~divmeter.backends.http.HttpClient` for these settings."""
        from divmeter.backends.http import HttpClient

        return HttpClient(self.base_url, self.api_key, concurrency=self.concurrency,
                          timeout=float(self.timeout), max_attempts=self.max_attempts,
                          cache=self.cache)

    def signature(self, task: str, template: Template, fewshot: FewShot) -> str:
        """``judge|task:...|model:...|template:name@hash|fewshot:...|n:5|temp:1|...|v:X``."""
        model = self.model if self.model.startswith("openai:") else f"openai:{self.model}"
        return make_signature(
            "judge", task=task, model=model, template=template.id, fewshot=fewshot.id,
            n=self.samples, temp=float(self.temperature), max_tokens=self.max_tokens,
            retries=self.retries, seed=self.seed,
            orders=("ab+ba" if self.orders == "both" else "ab") if task == "pairwise" else None,
            agg="mean")


@dataclass(frozen=True)
class Sample:
    """One of the N answers for an item (for pairs: in one presentation order).

    ``scores`` is ``(score,)`` (absolute) or ``(score of set1, score of set2)`` (pairwise, already
    mapped back from the presentation order), or ``None`` with ``reason`` and ``kind`` (a parse
    kind of :data:`~divmeter.judge.parse.PARSE_KINDS`, ``no_content``, or an HTTP failure kind).
    ``asks`` counts the answers requested for this sample (1 + re-asks).
    """

    sample: int
    order: str | None
    scores: tuple[int, ...] | None
    rationale: str | None
    reason: str | None = None
    kind: str | None = None
    asks: int = 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sample": self.sample}
        if self.order is not None:
            out["order"] = self.order
        if self.scores is not None and len(self.scores) == 1:
            out["score"] = self.scores[0]
        elif self.scores is not None:
            out["score1"], out["score2"] = self.scores
        out["rationale"] = self.rationale
        if self.reason is not None:
            out["reason"], out["kind"] = self.reason, self.kind
        out["asks"] = self.asks
        return out


def _mean(values: Sequence[float]) -> float | None:
    return float(sum(values) / len(values)) if values else None


def _null_reason(samples: Sequence[Sample]) -> str:
    kinds = Counter(s.kind for s in samples)
    kind = kinds.most_common(1)[0][0]
    first = next(s for s in samples if s.kind == kind)
    return f"no valid rating in {len(samples)} samples ({dict(kinds)}); e.g. {first.reason}"


@dataclass(frozen=True)
class JudgedSet:
    """The absolute rating of one set: the mean of the valid samples, or ``None`` with a
    reason."""

    value: float | None
    reason: str | None
    samples: tuple[Sample, ...]

    @property
    def n_valid(self) -> int:
        return sum(s.scores is not None for s in self.samples)


@dataclass(frozen=True)
class JudgedPair:
    """The ratings of a pair's two sets (means over the valid samples of every presentation
    order) and the label ``divmeter meta pairwise`` reads: 0 = set1 more diverse, 1 = set2,
    2 = equal means; ``None`` with a reason when no sample is valid. ``by_order`` holds the same
    numbers per presentation order (``ab``: set1 shown first; ``ba``: set2 shown first)."""

    rating1: float | None
    rating2: float | None
    label: int | None
    reason: str | None
    samples: tuple[Sample, ...]
    by_order: dict[str, dict[str, Any]]

    @property
    def n_valid(self) -> int:
        return sum(s.scores is not None for s in self.samples)


def _label(r1: float | None, r2: float | None) -> int | None:
    if r1 is None or r2 is None:
        return None
    return 0 if r1 > r2 else 1 if r2 > r1 else 2


@dataclass(frozen=True)
class PositionBias:
    """How much the judge's ratings depend on which set is shown first.

    Attributes:
        first_minus_second: Mean over valid samples of (rating of the set shown first - rating of
            the set shown second); 0 for a judge without position bias when both orders are
            asked (content differences cancel between A/B and B/A).
        first_preferred: Among valid samples that are not ties, the share that rates the first
            shown set higher (0.5 = no bias; the paper's direct-choice judge: 0.13).
        order_consistency: Among pairs with valid samples in both orders, the share whose label
            from the A/B answers equals the label from the B/A answers.
        n_samples: Valid samples behind the first two numbers.
        n_pairs: Pairs behind ``order_consistency``.
    """

    first_minus_second: float | None
    first_preferred: float | None
    order_consistency: float | None
    n_samples: int
    n_pairs: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def position_bias(pairs: Sequence[JudgedPair]) -> PositionBias:
    """The :class:`PositionBias` of judged pairs.

    Example:
        >>> s = [Sample(0, "ab", (4, 2), None), Sample(0, "ba", (3, 3), None)]
        >>> p = JudgedPair(3.5, 2.5, 0, None, tuple(s), {"ab": {"label": 0}, "ba": {"label": 2}})
        >>> b = position_bias([p])
        >>> b.first_minus_second, b.first_preferred, b.order_consistency
        (1.0, 1.0, 0.0)
    """
    diffs: list[float] = []
    for p in pairs:
        for s in p.samples:
            if s.scores is None:
                continue
            a, b = s.scores
            diffs.append(a - b if s.order == "ab" else b - a)
    strict = [d for d in diffs if d != 0]
    both = [p for p in pairs if all(p.by_order.get(o, {}).get("label") is not None
                                    for o in ("ab", "ba"))]
    return PositionBias(
        _mean(diffs), (sum(d > 0 for d in strict) / len(strict)) if strict else None,
        (sum(p.by_order["ab"]["label"] == p.by_order["ba"]["label"] for p in both) / len(both))
        if both else None, len(diffs), len(both))


@dataclass
class JudgeRun:
    """Everything a run produced: the items, the signature and the counts.

    ``summary()`` holds the items and nulls, valid samples, parse failures by kind (every
    unparseable answer, re-asked or not), null samples by kind (parse kinds and HTTP failure
    kinds), and the client's requests, cache hits, retries and failures by kind and tokens.
    """

    signature: str
    items: list[Any]
    parse_failures: Counter[str]
    client_stats: dict[str, Any]
    bias: PositionBias | None = None

    def summary(self) -> dict[str, Any]:
        samples = [s for it in self.items for s in it.samples]
        nulls = Counter(s.kind for s in samples if s.scores is None)
        out: dict[str, Any] = {
            "items": len(self.items),
            "null_items": sum(getattr(it, "reason", None) is not None for it in self.items),
            "samples": len(samples),
            "valid_samples": sum(s.scores is not None for s in samples),
            "unparseable_answers": {k: self.parse_failures[k] for k in (*PARSE_KINDS,
                                                                        "no_content")
                                    if self.parse_failures[k]},
            "null_samples": dict(sorted(nulls.items())),
            "client": self.client_stats,
            "signature": self.signature,
        }
        if self.bias is not None:
            out["position_bias"] = self.bias.to_dict()
        return out


# ------------------------------------------------------------------------------------------------
# requests


@dataclass(frozen=True)
class _Job:
    messages: list[dict[str, str]]
    sample: int
    order: str | None


def _payload(cfg: JudgeConfig, job: _Job, ask: int) -> dict[str, Any]:
    body: dict[str, Any] = {"model": cfg.model_name, "messages": job.messages,
                            "temperature": float(cfg.temperature), "max_tokens": cfg.max_tokens}
    if cfg.seed is not None:
        body["seed"] = cfg.seed + job.sample + 1000 * ask
    return body


def _salt(template: Template, fewshot: FewShot, job: _Job, ask: int) -> dict[str, Any]:
    return {"judge": "divmeter", "template": template.id, "fewshot": fewshot.id,
            "sample": job.sample, "ask": ask}


def _content(data: dict[str, Any]) -> str | None:
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


def _ask(client: Any, cfg: JudgeConfig, template: Template, fewshot: FewShot,
         jobs: Sequence[_Job], parse: Callable[[str], Any],
         on_answer: Callable[[], None] | None = None
         ) -> tuple[list[tuple[Any, str | None, str | None, int]], Counter[str]]:
    """Send every job, re-asking unparseable answers up to ``cfg.retries`` times.

    Returns per job ``(parsed or None, reason, kind, asks)`` and the parse failures by kind.
    """
    from divmeter.backends.http import Failure

    out: list[tuple[Any, str | None, str | None, int]] = [(None, "not asked", "connection", 0)
                                                          ] * len(jobs)
    failures: Counter[str] = Counter()
    pending = list(range(len(jobs)))
    for ask in range(cfg.retries + 1):
        if not pending:
            break
        results = client.post_many(
            ENDPOINT, [_payload(cfg, jobs[j], ask) for j in pending],
            salts=[_salt(template, fewshot, jobs[j], ask) for j in pending],
            on_result=(lambda i, r: on_answer()) if on_answer else None)
        again = []
        for j, res in zip(pending, results, strict=True):
            if isinstance(res, Failure):
                tries = f"{res.attempts} attempt{'s' if res.attempts != 1 else ''}"
                out[j] = (None, f"request failed after {tries}: {res.message}", res.kind,
                          ask + 1)
                continue
            text = _content(res)
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


def _texts(value: Any, where: str) -> list[str]:
    from divmeter.data.model import as_texts

    return as_texts(value, what=where)


def judge_sets(
    sets: Sequence[Sequence[str]],
    config: JudgeConfig,
    *,
    contexts: Sequence[str | None] | None = None,
    client: Any = None,
    on_answer: Callable[[], None] | None = None,
) -> JudgeRun:
    """Absolute ratings (1-5) of response sets, each the mean of N samples.

    Args:
        sets: Response sets (lists of strings).
        config: The :class:`JudgeConfig`.
        contexts: Per set, the input the responses answer (shown as ``Input: ...``), or ``None``.
        client: An :class:`~divmeter.backends.http.HttpClient` to reuse (default: a new one from
            ``config``).
        on_answer: Called after each answer (progress bars).

    Returns:
        A :class:`JudgeRun` whose ``items`` are :class:`JudgedSet`. An empty set is null
        ("empty set") without a request.

    Raises:
        InvalidInputError: Bad settings, template or few-shot file, or a set that is not a list
            of strings.
    """
    config.check()
    template = load_template("absolute", config.template)
    fewshot = load_fewshot("absolute", config.fewshot)
    sig = config.signature("absolute", template, fewshot)
    texts = [_texts(s, f"sets[{i}]") for i, s in enumerate(sets)]
    ctx = list(contexts) if contexts is not None else [None] * len(texts)
    if len(ctx) != len(texts):
        raise InvalidInputError(f"`contexts` must have one entry per set ({len(texts)}); got "
                                f"{len(ctx)}.")
    jobs, owner, _, _ = _set_jobs(texts, config, ctx)
    client = client if client is not None else config.client()
    answers, failures = _ask(client, config, template, fewshot, jobs, parse_absolute, on_answer)
    per: list[list[Sample]] = [[] for _ in texts]
    for job, i, (parsed, reason, kind, asks) in zip(jobs, owner, answers, strict=True):
        per[i].append(Sample(job.sample, None, None if parsed is None else (parsed.score,),
                             None if parsed is None else parsed.rationale, reason, kind, asks))
    items = []
    for t, samples in zip(texts, per, strict=True):
        if not t:
            items.append(JudgedSet(None, "empty set", ()))
            continue
        valid = [s.scores[0] for s in samples if s.scores is not None]
        items.append(JudgedSet(_mean(valid), None if valid else _null_reason(samples),
                               tuple(samples)))
    return JudgeRun(sig, items, failures, client.stats.to_dict())


def judge_pairs(
    pairs: Sequence[tuple[Sequence[str], Sequence[str]]],
    config: JudgeConfig,
    *,
    contexts: Sequence[str | None] | None = None,
    client: Any = None,
    on_answer: Callable[[], None] | None = None,
) -> JudgeRun:
    """Pairwise ratings: both sets of each pair rated side by side, in both presentation orders
    (``config.orders``), N samples per order; the label follows the mean ratings.

    Args:
        pairs: ``(set1, set2)`` per pair.
        config: The :class:`JudgeConfig`.
        contexts: Per pair, the input both sets answer, or ``None``.
        client: An HTTP client to reuse (default: a new one from ``config``).
        on_answer: Called after each answer.

    Returns:
        A :class:`JudgeRun` whose ``items`` are :class:`JudgedPair` and whose ``bias`` is the
        :class:`PositionBias`. A pair with an empty set is null ("empty set") without a request.

    Raises:
        InvalidInputError: As :func:`judge_sets`.
    """
    config.check()
    template = load_template("pairwise", config.template)
    fewshot = load_fewshot("pairwise", config.fewshot)
    sig = config.signature("pairwise", template, fewshot)
    sets = [(_texts(a, f"pairs[{i}][0]"), _texts(b, f"pairs[{i}][1]"))
            for i, (a, b) in enumerate(pairs)]
    ctx = list(contexts) if contexts is not None else [None] * len(sets)
    if len(ctx) != len(sets):
        raise InvalidInputError(f"`contexts` must have one entry per pair ({len(sets)}); got "
                                f"{len(ctx)}.")
    orders = ("ab", "ba") if config.orders == "both" else ("ab",)
    jobs, owner, _, _ = _pair_jobs(sets, config, ctx)
    client = client if client is not None else config.client()
    answers, failures = _ask(client, config, template, fewshot, jobs, parse_pairwise, on_answer)
    per: list[list[Sample]] = [[] for _ in sets]
    for job, i, (parsed, reason, kind, asks) in zip(jobs, owner, answers, strict=True):
        scores = None
        if parsed is not None:
            scores = ((parsed.score1, parsed.score2) if job.order == "ab"
                      else (parsed.score2, parsed.score1))
        per[i].append(Sample(job.sample, job.order, scores,
                             None if parsed is None else parsed.rationale, reason, kind, asks))
    items = []
    for (a, b), samples in zip(sets, per, strict=True):
        if not a or not b:
            items.append(JudgedPair(None, None, None, "empty set", (), {}))
            continue
        by_order = {}
        for order in orders:
            got = [s.scores for s in samples if s.order == order and s.scores is not None]
            r1, r2 = _mean([g[0] for g in got]), _mean([g[1] for g in got])
            by_order[order] = {"rating1": r1, "rating2": r2, "label": _label(r1, r2),
                               "n_valid": len(got)}
        got = [s.scores for s in samples if s.scores is not None]
        r1, r2 = _mean([g[0] for g in got]), _mean([g[1] for g in got])
        items.append(JudgedPair(r1, r2, _label(r1, r2), None if got else _null_reason(samples),
                                tuple(samples), by_order))
    return JudgeRun(sig, items, failures, client.stats.to_dict(), position_bias(items))


# ------------------------------------------------------------------------------------------------
# cost estimate and the OpenAI Batch API


_Jobs = tuple[list[_Job], list[int], Template, FewShot]


def _pair_jobs(pairs: Sequence[tuple[Sequence[str], Sequence[str]]], config: JudgeConfig,
               contexts: Sequence[str | None] | None) -> _Jobs:
    """Requests of a pairwise run: per pair with two non-empty sets, per order, per sample; and
    the pair each request belongs to."""
    template = load_template("pairwise", config.template)
    fewshot = load_fewshot("pairwise", config.fewshot)
    ctx = list(contexts) if contexts is not None else [None] * len(pairs)
    orders = ("ab", "ba") if config.orders == "both" else ("ab",)
    jobs: list[_Job] = []
    owner: list[int] = []
    for i, (a, b) in enumerate(pairs):
        if not a or not b:
            continue
        for order in orders:
            first, second = (a, b) if order == "ab" else (b, a)
            msgs = pairwise_messages(template, fewshot, list(first), list(second), ctx[i])
            jobs.extend(_Job(msgs, k, order) for k in range(config.samples))
            owner.extend([i] * config.samples)
    return jobs, owner, template, fewshot


def _set_jobs(sets: Sequence[Sequence[str]], config: JudgeConfig,
              contexts: Sequence[str | None] | None) -> _Jobs:
    """Requests of an absolute run: per non-empty set, per sample; and their sets."""
    template = load_template("absolute", config.template)
    fewshot = load_fewshot("absolute", config.fewshot)
    ctx = list(contexts) if contexts is not None else [None] * len(sets)
    jobs: list[_Job] = []
    owner: list[int] = []
    for i, t in enumerate(sets):
        if t:
            msgs = absolute_messages(template, fewshot, list(t), ctx[i])
            jobs.extend(_Job(msgs, k, None) for k in range(config.samples))
            owner.extend([i] * config.samples)
    return jobs, owner, template, fewshot


def _jobs(task: str, items: Sequence[Any], config: JudgeConfig,
          contexts: Sequence[str | None] | None) -> tuple[list[_Job], Template, FewShot]:
    config.check()
    if task not in ("pairwise", "absolute"):
        raise InvalidInputError(f"`task` must be absolute or pairwise; got {task!r}.")
    if contexts is not None and len(contexts) != len(items):
        raise InvalidInputError(f"`contexts` must have one entry per item ({len(items)}); got "
                                f"{len(contexts)}.")
    make = _pair_jobs if task == "pairwise" else _set_jobs
    jobs, _, template, fewshot = make(items, config, contexts)
    return jobs, template, fewshot


def estimate_cost(task: str, items: Sequence[Any], config: JudgeConfig, *,
                  contexts: Sequence[str | None] | None = None, client: Any = None
                  ) -> dict[str, Any]:
    """What a run will send, before it starts.

    Prompt tokens are estimated from characters (``ceil(characters / 4)`` per request, the
    message texts only, no tokenizer); completion tokens are bounded by ``max_tokens`` per
    request. Requests already in the client's cache are counted apart (a rerun sends none).
    Re-asks after unparseable answers can add up to ``retries`` x the requests.

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

    jobs, template, fewshot = _jobs(task, items, config, contexts)
    client = client if client is not None else config.client()
    url = f"{client.base_url}/{ENDPOINT}"
    cached = 0
    chars = 0
    for job in jobs:
        chars_job = sum(len(m["content"]) for m in job.messages)
        if client.cache is not None and client.cache.get(request_key(
                url, _payload(config, job, 0), _salt(template, fewshot, job, 0))) is not None:
            cached += 1
            continue
        chars += chars_job
    to_send = len(jobs) - cached
    return {
        "requests": len(jobs),
        "cached": cached,
        "to_send": to_send,
        "max_requests_with_reasks": to_send * (1 + config.retries),
        "prompt_tokens_est": math.ceil(chars / CHARS_PER_TOKEN),
        "max_completion_tokens": to_send * config.max_tokens,
        "token_estimate": f"characters/{CHARS_PER_TOKEN}, no tokenizer",
    }


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
    """
    from divmeter.backends.http import request_key

    jobs, template, fewshot = _jobs(task, items, config, contexts)
    client = client if client is not None else config.client()
    url = f"{client.base_url}/{ENDPOINT}"
    n = 0
    seen = set()
    with open(path, "w", encoding="utf-8") as fh:
        for job in jobs:
            body = _payload(config, job, 0)
            key = request_key(url, body, _salt(template, fewshot, job, 0))
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
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key = row["custom_id"]
                resp = row.get("response") or {}
            except (ValueError, KeyError, TypeError, AttributeError):
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
                    and shape_problem(f"{client.base_url}/{ENDPOINT}", None, body) is None):
                client.cache.put(key, body)
                stored += 1
            else:
                failed += 1
    return {"stored": stored, "failed": failed}
