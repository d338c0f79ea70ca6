"""LLM-as-judge diversity ratings: the commonsense meta-evaluation paper's annotator protocol
(section 4.1, appendices D-F) on any OpenAI-compatible chat endpoint.

* :mod:`divmeter.judge.prompts`: rubric templates (package data, replaceable) and few-shot turns.
* :mod:`divmeter.judge.parse`: strict parsing of the judge's answers (never invents a value).
* :mod:`divmeter.judge.protocol`: N samples per item at temperature 1 averaged, both presentation
  orders for pairs with the position bias, bounded re-asking on unparseable answers, the cost
  estimate, the OpenAI Batch API files; requests go through the shared
  :class:`divmeter.backends.http.HttpClient` (retries, on-disk cache, counts).
* :mod:`divmeter.judge.consistency`: the judge's self-consistency and its agreement with a
  reference as a function of N and of the temperature (appendix E).

The absolute rating is also the registry metric ``judge`` (family ``judge``):
``divmeter score -m judge:model=openai:NAME,base_url=http://127.0.0.1:8000/v1``.
Needs ``pip install 'divmeter[judge]'``.
"""

from __future__ import annotations

from divmeter.judge.parse import PairRating, ParseError, Rating, parse_absolute, parse_pairwise
from divmeter.judge.prompts import load_fewshot, load_template

__all__ = [
    "ParseError",
    "Rating",
    "PairRating",
    "parse_absolute",
    "parse_pairwise",
    "load_template",
    "load_fewshot",
]
