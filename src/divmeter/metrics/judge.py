"""The ``judge`` family: an LLM rates each set's diversity 1-5 (mean of N samples).

The commonsense meta-evaluation paper's annotator protocol (Zhang, Peng & Bollegala; section 4.1,
appendices D-F) on any OpenAI-compatible server; the protocol lives in the judge's rating core
(:mod:`divmeter.backends.judge.config`, :mod:`divmeter.backends.judge.run` and the modules they
use, which need only the HTTP client below the metrics), imported when a set is rated, so
``divmeter list`` imports nothing of the HTTP stack. Use it as ``divmeter score -m
judge:model=openai:NAME,base_url=URL`` (``answer=logprobs`` for base and small models); the key
comes from ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY`` and never appears in the output. A call
whose valid-answer rate is below 80% warns (``RuntimeWarning``) with the rate, the model and
what to try.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from divmeter.backends.judge.config import CAPS, JudgeConfig
from divmeter.core.errors import UnavailableError
from divmeter.core.params import Param
from divmeter.core.result import MetricResult
from divmeter.engine.definition import Metric
from divmeter.engine.public import public_function, register

__all__ = ["Judge", "judge", "JUDGE_PARAMS"]

#: Declared parameters of the ``judge`` metric (see
#: :class:`divmeter.backends.judge.config.JudgeConfig`).
JUDGE_PARAMS: dict[str, Param] = {
    "model": Param(str, allow_none=True, default=None,
                   doc="judge model: openai:NAME (required; base_url or $DIVMETER_BASE_URL)",
                   alternative="openai:gpt-4o"),
    "base_url": Param(str, allow_none=True, default=None, doc="OpenAI-compatible API root",
                      runtime=True),
    "samples": Param(int, ge=1, cap=CAPS["samples"], default=5,
                     doc="ratings per set, averaged (paper: 5)"),
    "temperature": Param(float, ge=0, le=2, default=1.0, expect="a number from 0 to 2",
                         doc="sampling temperature (paper: 1)"),
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


@register
class Judge(Metric):
    """The judge's diversity rating of one set: the mean of ``samples`` ratings 1-5.

    The judge needs a server: ``model`` names it (``openai:NAME``) and ``base_url`` (or
    ``$DIVMETER_BASE_URL``) says where it runs. Without either the metric cannot be planned
    (:class:`~divmeter.core.errors.UnavailableError`, an
    :class:`~divmeter.core.errors.InvalidInputError`), so :func:`divmeter.testing.check_metric`
    reports its checks as skipped with that reason unless it is given a server. Many sets are
    rated with one client, all requests ``concurrency`` at a time.

    Args:
        responses: The set.
        model: The judge model (required), e.g. ``openai:gpt-4o``; ``base_url``, ``samples``,
            ``temperature``, ``max_tokens``, ``template``, ``fewshot``, ``retries``, ``seed``,
            ``concurrency``, ``timeout``, ``max_attempts``, ``cache``, ``answer`` and
            ``top_logprobs`` are described in :data:`JUDGE_PARAMS` and
            :class:`divmeter.backends.judge.config.JudgeConfig`.

    Returns:
        :class:`~divmeter.core.result.MetricResult` with the mean rating, or ``None`` with the
        reason (empty set; no parseable answer among the samples; requests that failed).
        ``details``: ``samples`` (each with score or reason, rationale and number of asks),
        ``n_valid``.

    Raises:
        InvalidInputError: Bad parameters or a set that is not a list of strings;
            :class:`~divmeter.core.errors.UnavailableError` without a ``model`` or a server
            URL.

    Example:
        >>> judge(["a b", "c d"])
        Traceback (most recent call last):
        ...
        divmeter.core.errors.UnavailableError: `model` of judge is required, e.g. \
model=openai:gpt-4o (or the name a local server serves); got None.
    """

    name = "judge"
    family = "judge"
    granularity = "set"
    higher_is_more_diverse = True
    bounds = (1, 5)
    citation = ("Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in "
                "Commonsense Generation, section 4.1 and appendices D-F (LLM annotator)")
    description = ("LLM judge's diversity rating 1-5 (mean of N samples at temperature 1) from "
                   "an OpenAI-compatible server.")
    extra = "judge"
    params = JUDGE_PARAMS

    def setup(self) -> None:
        p = self.p
        model = p["model"]
        if model is None or not model.removeprefix("openai:").strip():
            raise UnavailableError(
                "`model` of judge is required, e.g. model=openai:gpt-4o (or the name a local "
                f"server serves); got {model!r}.")
        from divmeter.backends.http import resolve_base_url

        resolve_base_url(p["base_url"])  # a server to ask, named before any set is rated
        settings = {**p, "cache": None if p["cache"] in ("none", "off") else p["cache"]}
        self.config = JudgeConfig(**settings)

    def signature(self) -> str:
        return self.config.signature("absolute", *self.config.prompts("absolute"))

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        from divmeter.backends.judge.results import VALID_RATE_DEFAULT, valid_rate_problem
        from divmeter.backends.judge.run import judge_sets

        run = judge_sets(list(sets), self.config)
        problem = valid_rate_problem(run.summary(), self.config.model, VALID_RATE_DEFAULT,
                                     cli=False)
        if problem is not None:
            warnings.warn(problem, RuntimeWarning, stacklevel=2)
        return [
            self.result(it.value, it.reason,
                        details={"samples": [s.to_dict() for s in it.samples],
                                 "n_valid": it.n_valid,
                                 **({"dist": it.dist} if it.dist is not None else {})})
            for it in run.items
        ]


judge = public_function(Judge)
