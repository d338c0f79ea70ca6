"""The judge's two tasks: absolute ratings of sets (:func:`judge_sets`) and side-by-side ratings of
pairs (:func:`judge_pairs`), the commonsense meta-evaluation paper's protocol (section 4.1,
section 5.1, appendices D-F).

Each item's value is the mean of its valid samples (``n_valid`` is kept); it is null, with the
most common reason, when no sample is valid. Pairs are shown in both presentation orders by
default; the label follows the mean ratings (0 = set1 more diverse, 1 = set2, 2 = equal).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from divmeter.backends.judge.ask import ask_distributions, ask_ratings
from divmeter.backends.judge.bias import position_bias
from divmeter.backends.judge.config import JudgeConfig
from divmeter.backends.judge.logprobs import draw, most_likely
from divmeter.backends.judge.parse import parse_absolute, parse_pairwise
from divmeter.backends.judge.prompts import pairwise_completion
from divmeter.backends.judge.requests import Job, orders_of, pair_jobs, set_jobs
from divmeter.backends.judge.results import (
    JudgedPair,
    JudgedSet,
    JudgeRun,
    Sample,
    label_of,
    mean,
    null_reason,
)
from divmeter.core.errors import InvalidInputError

__all__ = ["judge_pairs", "judge_sets"]


def _texts(value: Any, where: str) -> list[str]:
    from divmeter.inputs.data.model import as_texts

    return as_texts(value, what=where)


def _contexts(contexts: Sequence[str | None] | None, n: int, what: str) -> list[str | None]:
    ctx: list[str | None] = list(contexts) if contexts is not None else [None] * n
    if len(ctx) != n:
        raise InvalidInputError(f"`contexts` must have one entry per {what} ({n}); got "
                                f"{len(ctx)}.")
    return ctx


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
        config: The :class:`~divmeter.backends.judge.config.JudgeConfig` (its ``answer`` says how
            the rating is read).
        contexts: Per set, the input the responses answer (shown as ``Input: ...``), or ``None``.
        client: An :class:`~divmeter.backends.http.HttpClient` to reuse (default: a new one from
            ``config``).
        on_answer: Called after each answer (progress bars).

    Returns:
        A :class:`~divmeter.backends.judge.results.JudgeRun` whose ``items`` are
        :class:`~divmeter.backends.judge.results.JudgedSet`. An empty set is null ("empty set")
        without a request.

    Raises:
        InvalidInputError: Bad settings, template or few-shot file, or a set that is not a list
            of strings.
    """
    config.check()
    template, fewshot = config.prompts("absolute")
    sig = config.signature("absolute", template, fewshot)
    texts = [_texts(s, f"sets[{i}]") for i, s in enumerate(sets)]
    ctx = _contexts(contexts, len(texts), "set")
    jobs, owner = set_jobs(texts, config, template, fewshot, ctx)
    client = client if client is not None else config.client()
    per: list[list[Sample]] = [[] for _ in texts]
    dists: list[dict[str, Any] | None] = [None] * len(texts)
    if config.answer == "logprobs":
        answers, failures = ask_distributions(client, config, template, fewshot, jobs, on_answer)
        for job, i, (dist, reason, kind, asks) in zip(jobs, owner, answers, strict=True):
            dists[i] = dist
            per[i] = _drawn(config, job, dist, reason, kind, asks)
    else:
        answers, failures = ask_ratings(client, config, template, fewshot, jobs, parse_absolute,
                                        "absolute", on_answer)
        for job, i, (parsed, reason, kind, asks) in zip(jobs, owner, answers, strict=True):
            per[i].append(Sample(job.sample, None, None if parsed is None else (parsed.score,),
                                 None if parsed is None else parsed.rationale, reason, kind,
                                 asks))
    items = []
    for t, samples, dist in zip(texts, per, dists, strict=True):
        if not t:
            items.append(JudgedSet(None, "empty set", ()))
            continue
        valid = [s.scores[0] for s in samples if s.scores is not None]
        items.append(JudgedSet(mean(valid), None if valid else null_reason(samples),
                               tuple(samples), dist))
    return JudgeRun(sig, items, failures, client.stats.to_dict(), answer=config.answer)


def _drawn(cfg: JudgeConfig, job: Job, dist: dict[str, Any] | None, reason: str | None,
           kind: str | None, asks: int) -> list[Sample]:
    """The N samples of one ``logprobs`` answer: draws from its distribution, or N nulls."""
    if dist is None:
        return [Sample(k, job.order, None, None, reason, kind, asks) for k in range(cfg.samples)]
    seed = cfg.seed or 0
    return [Sample(k, job.order, (draw(dist, cfg.temperature, seed, job.key, k),), None,
                   asks=asks) for k in range(cfg.samples)]


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

    In the ``logprobs`` mode each order takes two requests: Set 1's rating distribution, then,
    with Set 1's most likely rating written, Set 2's; sample k pairs the k-th draws of both.

    Args:
        pairs: ``(set1, set2)`` per pair.
        config: The :class:`~divmeter.backends.judge.config.JudgeConfig`.
        contexts: Per pair, the input both sets answer, or ``None``.
        client: An HTTP client to reuse (default: a new one from ``config``).
        on_answer: Called after each answer.

    Returns:
        A :class:`~divmeter.backends.judge.results.JudgeRun` whose ``items`` are
        :class:`~divmeter.backends.judge.results.JudgedPair` and whose ``bias`` is the
        :class:`~divmeter.backends.judge.bias.PositionBias`. A pair with an empty set is null
        ("empty set") without a request.

    Raises:
        InvalidInputError: As :func:`judge_sets`.
    """
    config.check()
    template, fewshot = config.prompts("pairwise")
    sig = config.signature("pairwise", template, fewshot)
    sets = [(_texts(a, f"pairs[{i}][0]"), _texts(b, f"pairs[{i}][1]"))
            for i, (a, b) in enumerate(pairs)]
    ctx = _contexts(contexts, len(sets), "pair")
    jobs, owner = pair_jobs(sets, config, template, fewshot, ctx)
    client = client if client is not None else config.client()
    per: list[list[Sample]] = [[] for _ in sets]
    dists: list[dict[str, dict[str, Any]]] = [{} for _ in sets]
    if config.answer == "logprobs":
        failures = _pair_logprobs(client, config, template, fewshot, jobs, owner, sets, ctx, per,
                                  dists, on_answer)
    else:
        answers, failures = ask_ratings(client, config, template, fewshot, jobs, parse_pairwise,
                                        "pairwise", on_answer)
        for job, i, (parsed, reason, kind, asks) in zip(jobs, owner, answers, strict=True):
            scores = None
            if parsed is not None:
                scores = ((parsed.score1, parsed.score2) if job.order == "ab"
                          else (parsed.score2, parsed.score1))
            per[i].append(Sample(job.sample, job.order, scores,
                                 None if parsed is None else parsed.rationale, reason, kind,
                                 asks))
    items = []
    for (a, b), samples, dist in zip(sets, per, dists, strict=True):
        if not a or not b:
            items.append(JudgedPair(None, None, None, "empty set", (), {}))
            continue
        by_order = {}
        for order in orders_of(config):
            got = [s.scores for s in samples if s.order == order and s.scores is not None]
            r1, r2 = mean([g[0] for g in got]), mean([g[1] for g in got])
            by_order[order] = {"rating1": r1, "rating2": r2, "label": label_of(r1, r2),
                               "n_valid": len(got), **dist.get(order, {})}
        got = [s.scores for s in samples if s.scores is not None]
        r1, r2 = mean([g[0] for g in got]), mean([g[1] for g in got])
        items.append(JudgedPair(r1, r2, label_of(r1, r2), None if got else null_reason(samples),
                                tuple(samples), by_order))
    return JudgeRun(sig, items, failures, client.stats.to_dict(), position_bias(items),
                    answer=config.answer)


def _pair_logprobs(client: Any, cfg: JudgeConfig, template: Any, fewshot: Any,
                   jobs: list[Job], owner: list[int],
                   sets: list[tuple[list[str], list[str]]], ctx: list[str | None],
                   per: list[list[Sample]], dists: list[dict[str, dict[str, Any]]],
                   on_answer: Callable[[], None] | None) -> Counter[str]:
    """Both ``logprobs`` rounds of a pairwise run; fills ``per`` (samples) and ``dists``
    (``{order: {"dist_first", "dist_second"}}``, the rating distributions of the set shown
    first and second) in place and returns the answers without a rating by kind."""
    first, failures = ask_distributions(client, cfg, template, fewshot, jobs, on_answer)
    second_jobs: list[Job] = []
    where: list[int] = []
    for k, (job, i, (dist, _, _, _)) in enumerate(zip(jobs, owner, first, strict=True)):
        if dist is None:
            continue
        a, b = sets[i] if job.order == "ab" else sets[i][::-1]
        second_jobs.append(Job(None, 0, job.order, pairwise_completion(
            template, fewshot, a, b, ctx[i], score1=most_likely(dist))))
        where.append(k)
    second, more = ask_distributions(client, cfg, template, fewshot, second_jobs, on_answer)
    failures.update(more)
    after: dict[int, Any] = dict(zip(where, second, strict=True))
    seed = cfg.seed or 0
    for k, (job, i) in enumerate(zip(jobs, owner, strict=True)):
        d1, reason, kind, _ = first[k]
        d2: Any = None
        asks = 1
        if d1 is not None:
            d2, reason, kind, _ = after[k]
            asks = 2
        dists[i][str(job.order)] = {"dist_first": d1, "dist_second": d2}
        for k_s in range(cfg.samples):
            if d1 is None or d2 is None:
                per[i].append(Sample(k_s, job.order, None, None, reason, kind, asks))
                continue
            first_r = draw(d1, cfg.temperature, seed, job.key, k_s)
            second_r = draw(d2, cfg.temperature, seed, job.key + "|2", k_s)
            per[i].append(Sample(k_s, job.order, (first_r, second_r) if job.order == "ab"
                                 else (second_r, first_r), None, asks=asks))
    return failures
