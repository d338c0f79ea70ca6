"""LLM-as-judge diversity ratings: the commonsense meta-evaluation paper's annotator protocol
(section 4.1, appendices D-F) on any OpenAI-compatible server.

* :mod:`divmeter.backends.judge.prompts`: rubric templates (package data, replaceable; chat and
  completion styles) and few-shot examples.
* :mod:`divmeter.backends.judge.parse`: strict parsing of the judge's answers (never invents a
  value).
* :mod:`divmeter.backends.judge.logprobs`: ratings read from the log-probabilities of the tokens
  1-5.
* :mod:`divmeter.backends.judge.config`, :mod:`~divmeter.backends.judge.requests`,
  :mod:`~divmeter.backends.judge.ask`, :mod:`~divmeter.backends.judge.run`,
  :mod:`~divmeter.backends.judge.results`, :mod:`~divmeter.backends.judge.bias`: the rating core:
  settings, request bodies per answer mode, sending them (bounded re-asks), the absolute and
  pairwise tasks (N samples averaged, both presentation orders), the run's counts and valid-answer
  rate, the position bias; requests go through the shared :class:`divmeter.backends.http.HttpClient`
  (retries, on-disk cache, counts).
* :mod:`divmeter.studies.judge.cost`, :mod:`~divmeter.studies.judge.batchfiles`,
  :mod:`~divmeter.studies.judge.files`: the cost estimate, the OpenAI Batch API files, judging a
  file (one nulls file, resume).
* :mod:`divmeter.studies.judge.protocol`: every public name of the above, in one place.
* :mod:`divmeter.studies.judge.consistency`: the judge's self-consistency and its agreement with a
  reference as a function of N and of the temperature (appendix E).

The absolute rating is also the registry metric ``judge`` (family ``judge``):
``divmeter score -m judge:model=openai:NAME,base_url=http://127.0.0.1:8000/v1``.
Needs ``pip install 'divmeter[judge]'``.
"""

from __future__ import annotations

from divmeter.backends.judge.parse import (
    PairRating,
    ParseError,
    Rating,
    parse_absolute,
    parse_pairwise,
)
from divmeter.backends.judge.prompts import load_fewshot, load_template

__all__ = [
    "ParseError",
    "Rating",
    "PairRating",
    "parse_absolute",
    "parse_pairwise",
    "load_template",
    "load_fewshot",
]
