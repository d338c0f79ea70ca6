"""The judge protocol: ask an OpenAI-compatible model to rate diversity, N times, strictly.

The commonsense meta-evaluation paper (section 4.1, section 5.1, appendices D-F) rates each
sentence set 1-5 with GPT-4o at temperature 1.0, five times, and averages; for a pair of sets the
set with the higher mean rating is the more diverse one, and pairs whose means differ by less than
0.5 are filtered out (``divmeter meta pairwise --min-rating-diff 0.5`` on the output of
:func:`judge_pairs`). Each step is a named option of :class:`JudgeConfig`, recorded in the
signature:

* ``samples`` (N, default 5) answers per item at ``temperature`` (default 1.0), averaged;
* ``orders`` (pairwise): ``both`` shows every pair as (A, B) and as (B, A), because the paper found
  its judge picking the second set 87% of the time when asked directly; the position bias that
  remains is reported (:class:`PositionBias`);
* ``template`` / ``fewshot``: see :mod:`divmeter.backends.judge.prompts`;
* ``answer``: how an answer becomes a rating: ``text`` (the paper's free JSON answer, parsed
  strictly, re-asked ``retries`` times when it does not parse), ``logprobs`` (read from the
  log-probabilities of the tokens 1-5, so an answer cannot be unparseable) or ``schema`` (a JSON
  schema the server enforces);
* an item's value is the mean of its valid samples (``n_valid`` is kept); it is null, with the
  most common reason, when no sample is valid.

Requests go through :class:`divmeter.backends.http.HttpClient`; the cache key is the request body
(model, messages or prompt, sampling parameters) plus a salt holding the template and few-shot
hashes, the sample index and the re-ask number, so a rerun is served from disk without a request,
and N samples of one item are N different entries.

This module gathers the public names; each lives in the module that has one reason to change:
settings (:mod:`~divmeter.backends.judge.config`), results and counts
(:mod:`~divmeter.backends.judge.results`), position bias (:mod:`~divmeter.backends.judge.bias`),
request bodies (:mod:`~divmeter.backends.judge.requests`), sending and reading answers
(:mod:`~divmeter.backends.judge.ask`, :mod:`~divmeter.backends.judge.logprobs`), the two tasks
(:mod:`~divmeter.backends.judge.run`), the cost estimate (:mod:`~divmeter.studies.judge.cost`) and
the OpenAI Batch API files (:mod:`~divmeter.studies.judge.batchfiles`).
"""

from __future__ import annotations

from divmeter.backends.judge.bias import PositionBias, position_bias
from divmeter.backends.judge.config import ANSWERS, COMMONSENSE, ORDERS, JudgeConfig
from divmeter.backends.judge.requests import CHAT as ENDPOINT
from divmeter.backends.judge.results import (
    VALID_RATE_DEFAULT,
    JudgedPair,
    JudgedSet,
    JudgeRun,
    Sample,
    valid_rate_problem,
)
from divmeter.backends.judge.run import judge_pairs, judge_sets
from divmeter.studies.judge.batchfiles import ingest_batch_results, write_batch_requests
from divmeter.studies.judge.cost import CHARS_PER_TOKEN, estimate_cost

__all__ = [
    "ANSWERS",
    "CHARS_PER_TOKEN",
    "COMMONSENSE",
    "ENDPOINT",
    "ORDERS",
    "VALID_RATE_DEFAULT",
    "JudgeConfig",
    "Sample",
    "JudgedSet",
    "JudgedPair",
    "PositionBias",
    "JudgeRun",
    "judge_sets",
    "judge_pairs",
    "estimate_cost",
    "position_bias",
    "valid_rate_problem",
    "write_batch_requests",
    "ingest_batch_results",
]
