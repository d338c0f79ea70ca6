"""The ``judge`` family: an LLM rates each set's diversity 1-5 (mean of N samples).

The commonsense meta-evaluation paper's annotator protocol (Zhang, Peng & Bollegala; section 4.1,
appendices D-F) on any OpenAI-compatible chat endpoint; the protocol lives in
:mod:`divmeter.judge` (this module only registers it, so ``divmeter list`` imports nothing of the
HTTP stack). Use it as ``divmeter score -m judge:model=openai:NAME,base_url=URL``; the key comes
from ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY`` and never appears in the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from divmeter.data.model import as_texts
from divmeter.registry import register, register_batch
from divmeter.result import MetricResult

__all__ = ["judge", "judge_many"]

#: Defaults of the ``judge`` metric (see :class:`divmeter.judge.protocol.JudgeConfig`).
JUDGE_PARAMS: dict[str, Any] = {
    "model": None,
    "base_url": None,
    "samples": 5,
    "temperature": 1.0,
    "max_tokens": 256,
    "template": "default",
    "fewshot": "default",
    "retries": 2,
    "seed": None,
    "concurrency": 4,
    "timeout": 60.0,
    "max_attempts": 5,
    "cache": "default",
}


@register(
    "judge",
    family="judge",
    granularity="set",
    higher_is_more_diverse=True,
    bounds=(1, 5),
    citation="Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in "
    "Commonsense Generation, section 4.1 and appendices D-F (LLM annotator)",
    params=JUDGE_PARAMS,
    description="LLM judge's diversity rating 1-5 (mean of N samples at temperature 1) from an "
    "OpenAI-compatible server.",
    extra="judge",
)
def judge(responses: Sequence[str], **params: Any) -> MetricResult:
    """The judge's diversity rating of one set: the mean of ``samples`` ratings 1-5.

    Args:
        responses: The set.
        **params: See :data:`JUDGE_PARAMS` and :class:`divmeter.judge.protocol.JudgeConfig`
            (``model`` is required).

    Returns:
        :class:`~divmeter.result.MetricResult` with the mean rating, or ``None`` with the reason
        (empty set; no parseable answer among the samples; requests that failed). ``details``:
        ``samples`` (each with score or reason, rationale and number of asks), ``n_valid``.

    Raises:
        InvalidInputError: Bad parameters or a set that is not a list of strings.
    """
    return judge_many([as_texts(responses)], **params)[0]


@register_batch("judge")
def judge_many(sets: Sequence[Sequence[str]], **params: Any) -> list[MetricResult]:
    """:func:`judge` on many sets with one client, all requests ``concurrency`` at a time."""
    from divmeter.judge.protocol import JudgeConfig, judge_sets

    unknown = [k for k in params if k not in JUDGE_PARAMS]
    if unknown:
        from divmeter.errors import InvalidInputError

        raise InvalidInputError(f"judge has no parameter {unknown[0]!r}; its parameters are: "
                                f"{', '.join(JUDGE_PARAMS)}.")
    merged = {**JUDGE_PARAMS, **params}
    if merged["cache"] in ("none", "off"):
        merged["cache"] = None
    cfg = JudgeConfig(**{k: v for k, v in merged.items()})
    run = judge_sets([as_texts(s) for s in sets], cfg)
    return [
        MetricResult("judge", it.value, run.signature, reason=it.reason,
                     details={"samples": [s.to_dict() for s in it.samples],
                              "n_valid": it.n_valid})
        for it in run.items
    ]
