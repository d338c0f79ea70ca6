"""Set-level form (n-gram) metrics pooled over a response set.

distinct-n, entropy-n, expectation-adjusted distinct, n-gram cosine diversity, n-gram diversity
score, compression ratio and self-repetition. All counting goes through
:class:`divmeter.text.NgramIndex`, so every metric is exact and vectorised.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from divmeter.data.model import as_texts
from divmeter.metrics._common import check_int, undefined
from divmeter.registry import register
from divmeter.result import MetricResult, make_signature
from divmeter.text import NgramIndex, get_tokenizer

TEVET = "Tevet & Berant 2021, Evaluating the Evaluation of Diversity in NLG (EACL)"
LI2016 = "Li et al. 2016, A Diversity-Promoting Objective Function for Neural Conversation Models"


@register(
    "distinct-n",
    family="form",
    granularity="set",
    higher_is_more_diverse=True,
    bounds=(0.0, 1.0),
    citation=f"{LI2016}; averaged over n=1..5 as in {TEVET}",
    params={"n": None, "n_max": 5, "tokenizer": "tevet", "lowercase": False},
    description="Unique n-grams / all n-grams pooled over the set; mean over n=1..n_max "
    "unless `n` is given",
)
def distinct_n(
    responses: Sequence[str],
    *,
    n: int | None = None,
    n_max: int = 5,
    tokenizer: str = "tevet",
    lowercase: bool = False,
) -> MetricResult:
    """Distinct-n: unique n-grams over all n-grams, pooled over the whole set.

    With ``n`` given, the value is distinct-n for that single order. Otherwise it is the plain
    mean of distinct-1 .. distinct-``n_max`` (Tevet & Berant's ``averaged_distinct_ngrams`` with
    ``n_max=5``). An order with no n-gram at all counts as 0, as in Tevet's code.

    Args:
        responses: The response set.
        n: A single n-gram order, or ``None`` for the average over 1..n_max.
        n_max: Highest order averaged when ``n`` is ``None``.
        tokenizer: ``tevet``, ``whitespace`` or ``word``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult with ``details["per_n"]`` (distinct-k for each k averaged). ``value`` is
        ``None`` for an empty set or a set with no tokens at all.

    Example:
        >>> distinct_n(["a b a b", "a b c"], n=2).value
        0.6
        >>> distinct_n(["a b a b", "a b c"], n=2).signature
        'distinct-n|n:2|tok:tevet|case:mixed|v:0.1.0'
    """
    texts = as_texts(responses)
    tok = get_tokenizer(tokenizer, lowercase)
    if n is not None:
        orders = [check_int(n, "n", "distinct-n")]
        sig = make_signature("distinct-n", n=n, tok=tok.name, case=tok.case)
    else:
        check_int(n_max, "n_max", "distinct-n")
        orders = list(range(1, n_max + 1))
        sig = make_signature("distinct-n", n=f"1..{n_max}", avg="mean", tok=tok.name, case=tok.case)
    if not texts:
        return undefined("distinct-n", sig, "empty set")
    idx = NgramIndex.from_tokens(tok.many(texts))
    if idx.tokens.size == 0:
        return undefined("distinct-n", sig, "no tokens in any response")
    per_n = {}
    for k in orders:
        ids, _, m = idx.order(k)
        per_n[k] = m / ids.size if ids.size else 0.0
    value = float(np.mean(list(per_n.values())))
    return MetricResult("distinct-n", value, sig, details={"per_n": per_n})
