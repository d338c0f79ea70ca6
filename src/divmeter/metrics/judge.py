"""The ``judge`` family: an LLM rates each set's diversity 1-5 (mean of N samples).

The commonsense meta-evaluation paper's annotator protocol (Zhang, Peng & Bollegala; section 4.1,
appendices D-F) on any OpenAI-compatible server; the protocol lives in the judge's rating core
(:mod:`divmeter.backends.judge.config`, :mod:`divmeter.backends.judge.run` and the modules they use, which need
only the HTTP client below the metrics), imported when a set is rated, so ``divmeter list``
imports nothing of the HTTP stack. Use it as ``divmeter score -m
judge:model=openai:NAME,base_url=URL`` (``answer=logprobs`` for base and small models); the key
comes from ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY`` and never appears in the output. A call
whose valid-answer rate is below 80% warns (``RuntimeWarning``) with the rate, the model and
what to try.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from divmeter.inputs.data.model import as_texts
from divmeter.backends.judge.config import CAPS
from divmeter.core.params import Param
from divmeter.engine.registry import register, register_batch
from divmeter.core.result import MetricResult

__all__ = ["judge", "judge_many"]

#: Declared parameters of the ``judge`` metric (see :class:`divmeter.backends.judge.config.JudgeConfig`).
JUDGE_PARAMS: dict[str, Param] = {
    "model": Param(str, allow_none=True, default=None,
                   doc="judge model: openai:NAME (required; base_url or $DIVMETER_BASE_URL)",
                   alternative="openai:gpt-4o"),
    "base_url": Param(str, allow_none=True, default=None, doc="OpenAI-compatible API root",
                      runtime=True),
    "samples": Param(int, ge=1, cap=CAPS["samples"], default=5,
                     doc="ratings per set, averaged (paper: 5)"),
    "temperature": Param(float, ge=0, default=1.0, doc="sampling temperature (paper: 1)"),
    "max_tokens": Param(int, ge=1, cap=CAPS["max_tokens"], default=256,
                        doc="answer length limit"),
    "template": Param(str, default="default", doc="rubric template: default or a file path"),
    "fewshot": Param(str, default="default", doc="few-shot examples: default, none or a file",
                     alternative="none"),
    "retries": Param(int, ge=0, cap=CAPS["retries"], default=2,
                     doc="re-asks after an unparseable answer"),
    "seed": Param(int, allow_none=True, default=None, doc="sampling seed sent to the server"),
    "concurrency": Param(int, ge=1, cap=CAPS["concurrency"], default=4, doc="requests in flight",
                         runtime=True),
    "timeout": Param(float, gt=0, default=60.0, doc="seconds per request", runtime=True),
    "max_attempts": Param(int, ge=1, cap=CAPS["max_attempts"], default=5,
                          doc="HTTP attempts per request", runtime=True),
    "cache": Param(str, default="default", doc="request cache: default, none or a folder",
                   runtime=True),
    "answer": Param(str, choices=("text", "logprobs", "schema"), default="text",
                    doc="how the rating is read: text (parsed JSON answer), logprobs (from the "
                    "log-probabilities of the tokens 1-5 on /completions) or schema (a JSON "
                    "schema the server enforces)"),
    "top_logprobs": Param(int, ge=1, cap=CAPS["top_logprobs"], default=20,
                          doc="logprobs answers: most likely tokens "
                          "listed"),
}


@register(
    "judge", family="judge", granularity="set", higher_is_more_diverse=True, bounds=(1, 5),
    citation="Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in "
    "Commonsense Generation, section 4.1 and appendices D-F (LLM annotator)",
    params=JUDGE_PARAMS,
    description="LLM judge's diversity rating 1-5 (mean of N samples at temperature 1) from an "
    "OpenAI-compatible server.",
    extra="judge",
)
def judge(
    responses: Sequence[str],
    *,
    model: str | None = None, base_url: str | None = None,
    samples: int = 5, temperature: float = 1.0, max_tokens: int = 256,
    template: str = "default", fewshot: str = "default", retries: int = 2, seed: int | None = None,
    concurrency: int = 4, timeout: float = 60.0, max_attempts: int = 5, cache: str = "default",
    answer: str = "text", top_logprobs: int = 20,
) -> MetricResult:
    """The judge's diversity rating of one set: the mean of ``samples`` ratings 1-5.

    Args:
        responses: The set.
        model, base_url, samples, temperature, max_tokens, template, fewshot, retries, seed,
            concurrency, timeout, max_attempts, cache, answer, top_logprobs: See
            :data:`JUDGE_PARAMS` and :class:`divmeter.backends.judge.config.JudgeConfig` (``model`` is
            required).

    Returns:
        :class:`~divmeter.core.result.MetricResult` with the mean rating, or ``None`` with the reason
        (empty set; no parseable answer among the samples; requests that failed). ``details``:
        ``samples`` (each with score or reason, rationale and number of asks), ``n_valid``.

    Raises:
        InvalidInputError: Bad parameters or a set that is not a list of strings.
    """
    return judge_many(
        [as_texts(responses)], model=model, base_url=base_url, samples=samples,
        temperature=temperature, max_tokens=max_tokens, template=template, fewshot=fewshot,
        retries=retries, seed=seed, concurrency=concurrency, timeout=timeout,
        max_attempts=max_attempts, cache=cache, answer=answer, top_logprobs=top_logprobs,
    )[0]


@register_batch("judge")
def judge_many(sets: Sequence[Sequence[str]], **params: Any) -> list[MetricResult]:
    """:func:`judge` on many sets with one client, all requests ``concurrency`` at a time."""
    from divmeter.backends.judge.config import JudgeConfig
    from divmeter.backends.judge.results import VALID_RATE_DEFAULT, valid_rate_problem
    from divmeter.backends.judge.run import judge_sets

    unknown = [k for k in params if k not in JUDGE_PARAMS]
    if unknown:
        from divmeter.core.errors import InvalidInputError

        raise InvalidInputError(f"judge has no parameter {unknown[0]!r}; its parameters are: "
                                f"{', '.join(JUDGE_PARAMS)}.")
    merged = {**{k: p.default for k, p in JUDGE_PARAMS.items()}, **params}
    if merged["cache"] in ("none", "off"):
        merged["cache"] = None
    cfg = JudgeConfig(**{k: v for k, v in merged.items()})
    run = judge_sets([as_texts(s) for s in sets], cfg)
    problem = valid_rate_problem(run.summary(), cfg.model, VALID_RATE_DEFAULT, cli=False)
    if problem is not None:
        warnings.warn(problem, RuntimeWarning, stacklevel=2)
    return [
        MetricResult("judge", it.value, run.signature, reason=it.reason,
                     details={"samples": [s.to_dict() for s in it.samples],
                              "n_valid": it.n_valid,
                              **({"dist": it.dist} if it.dist is not None else {})})
        for it in run.items
    ]
