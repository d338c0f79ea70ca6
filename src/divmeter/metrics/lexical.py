"""Set-level form (n-gram) metrics pooled over a response set.

distinct-n, entropy-n, expectation-adjusted distinct (EAD), n-gram cosine diversity, n-gram
diversity score, compression ratio and self-repetition. All n-gram counting starts from
:class:`divmeter.text.NgramIndex` (exact integer token ids; n-grams never cross response
boundaries). Where the base-``V`` number of an n-gram's token ids fits in 62 bits it is used as an
exact key (one sort per order, no interning of lower orders); otherwise the index's interned
n-gram ids are. Every metric is therefore exact and vectorised: a few numpy calls per order.

Degenerate sets, shared conventions (each metric's docstring says which apply):

* an empty set, or a set in which no response has a token, gives ``value=None`` with a reason;
* an n-gram order with no n-gram at all (every text shorter than n) contributes 0 to averages
  and sums over orders, as in Tevet & Berant's code.
"""

from __future__ import annotations

import lzma
import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from divmeter.data.model import as_texts
from divmeter.errors import InvalidInputError
from divmeter.metrics._common import check_choice, check_int, undefined
from divmeter.metrics.reduce import REDUCTIONS, diversity_from_similarity
from divmeter.registry import register
from divmeter.result import MetricResult, make_signature
from divmeter.text import NgramIndex, Tokenizer, get_tokenizer

TEVET = "Tevet & Berant 2021, Evaluating the Evaluation of Diversity in NLG (EACL)"
LI2016 = "Li et al. 2016, A Diversity-Promoting Objective Function for Neural Conversation Models"
LIU2022 = "Liu et al. 2022, Rethinking and Refining the Distinct Metric (ACL)"
KIRK2023 = "Kirk et al. 2023, Understanding the Effects of RLHF on LLM Generalisation and Diversity"
SHAIB2024 = (
    "Shaib et al. 2024, Standardizing the Measurement of Text Diversity: A Tool and a "
    "Comparative Analysis of Scores"
)
SALKAR2022 = "Salkar et al. 2022, Self-Repetition in Abstractive Neural Summarizers (AACL)"

#: GPT-2's vocabulary size, the ``V`` Kirk et al. use for EAD.
GPT2_VOCAB = 50257
#: Above this many responses, n-gram cosine uses the linear-time closed form instead of the
#: pairwise similarity matrix (both are exact; the matrix would need k^2 floats).
_COSINE_MATRIX_MAX = 2048
#: Dense count matrices up to this many cells; sparse (scipy) above.
_DENSE_MAX_CELLS = 2_000_000


# --------------------------------------------------------------------------------------------
# shared helpers (inputs already validated)


def _orders(metric: str, n: int | None, n_max: int) -> tuple[list[int], str, str | None]:
    """The n-gram orders to compute and their signature fields (``n``, ``avg``)."""
    if n is not None:
        k = check_int(n, "n", metric)
        return [k], str(k), None
    check_int(n_max, "n_max", metric)
    return list(range(1, n_max + 1)), f"1..{n_max}", "mean"


def _index(texts: list[str], tok: Tokenizer) -> NgramIndex:
    return NgramIndex.from_tokens(tok.many(texts))


def _pooled_counts(idx: NgramIndex, orders: Sequence[int]) -> dict[int, np.ndarray]:
    """For each order, the multiplicity of every distinct n-gram pooled over the set (in no
    particular order; empty when no text has n tokens).

    When ``V**max(orders)`` fits in 62 bits the n-grams are exact base-``V`` keys of their token
    ids, extended one token per order and counted with one sort (no interning); otherwise the
    interned ids of :meth:`NgramIndex.order` are counted.
    """
    top, v = max(orders), max(idx.vocab_size, 1)
    out: dict[int, np.ndarray] = {}
    if top * math.log2(v) >= 62:
        for k in orders:
            ids, _, m = idx.order(k)
            out[k] = np.bincount(ids, minlength=m)
        return out
    wanted = set(orders)
    end = np.repeat(np.cumsum(idx.lengths), idx.lengths)  # exclusive end of each token's text
    pos = np.arange(idx.tokens.size, dtype=np.int64)
    key = idx.tokens
    for k in range(1, top + 1):
        if k > 1:
            keep = pos + (k - 1) < end
            pos, end = pos[keep], end[keep]
            key = key[keep] * np.int64(v) + idx.tokens[pos + (k - 1)]
        if k in wanted:
            srt = np.sort(key)
            first = np.ones(srt.size, dtype=bool)
            first[1:] = srt[1:] != srt[:-1]
            out[k] = np.diff(np.append(np.flatnonzero(first), srt.size))
    return out


def _ngram_keys(idx: NgramIndex, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer keys of every n-gram occurrence (equal keys iff equal n-grams) and the
    response each comes from, for a single order ``n``.

    When ``V**n * n_docs`` fits in 62 bits the key is the base-``V`` number of the n token ids,
    computed directly (no interning of the lower orders); otherwise the ids of
    :meth:`NgramIndex.order` are used.
    """
    v, n_docs = max(idx.vocab_size, 1), max(idx.n_docs, 1)
    if n * math.log2(v) + math.log2(n_docs) >= 62:
        ids, doc, _ = idx.order(n)
        return ids, doc
    ends = np.cumsum(idx.lengths)
    doc_of_tok = np.repeat(np.arange(idx.n_docs, dtype=np.int64), idx.lengths)
    start = np.flatnonzero(np.arange(idx.tokens.size) + n <= ends[doc_of_tok])
    key = idx.tokens[start].copy()
    for j in range(1, n):
        key = key * np.int64(v) + idx.tokens[start + j]
    return key, doc_of_tok[start]


def _base_label(base: float | str, metric: str) -> tuple[float, str]:
    """Resolve an entropy base: ``"e"`` (nats), 2 (bits), or any number > 0 other than 1."""
    if isinstance(base, str):
        if base in {"e", "nats"}:
            return math.e, "e"
        if base == "bits":
            return 2.0, "2"
        raise InvalidInputError(
            f"`base` of {metric} must be 'e', 'bits' or a number > 0 other than 1; got {base!r}."
        )
    ok = isinstance(base, (int, float)) and not isinstance(base, bool)
    if not ok or not math.isfinite(base) or base <= 0 or base == 1:
        raise InvalidInputError(
            f"`base` of {metric} must be 'e', 'bits' or a number > 0 other than 1; got {base!r}."
        )
    b = float(base)
    return b, (str(int(b)) if b.is_integer() else repr(b))


def _sep_label(separator: str) -> str:
    """How a separator is written in a signature: a name, or its code points."""
    names = {" ": "space", "\n": "newline", "\n\n": "blankline", "\t": "tab", "": "none"}
    if separator in names:
        return names[separator]
    return ",".join(f"U+{ord(c):04X}" for c in separator)


# --------------------------------------------------------------------------------------------
# distinct-n


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
        ``None`` for an empty set or a set with no tokens at all (Tevet's code writes 0 there).

    Example:
        >>> distinct_n(["a b a b", "a b c"], n=2).value
        0.6
        >>> distinct_n(["a b a b", "a b c"], n=2).signature
        'distinct-n|n:2|tok:tevet|case:mixed|v:0.1.0'
    """
    texts = as_texts(responses)
    tok = get_tokenizer(tokenizer, lowercase)
    orders, n_label, avg = _orders("distinct-n", n, n_max)
    sig = make_signature("distinct-n", n=n_label, avg=avg, tok=tok.name, case=tok.case)
    if not texts:
        return undefined("distinct-n", sig, "empty set")
    idx = _index(texts, tok)
    if idx.tokens.size == 0:
        return undefined("distinct-n", sig, "no tokens in any response")
    counts = _pooled_counts(idx, orders)
    per_n = {k: c.size / int(c.sum()) if c.size else 0.0 for k, c in counts.items()}
    value = float(np.mean(list(per_n.values())))
    return MetricResult("distinct-n", value, sig, details={"per_n": per_n})


# --------------------------------------------------------------------------------------------
# entropy-n


@register(
    "entropy-n",
    family="form",
    granularity="set",
    higher_is_more_diverse=True,
    bounds=(0.0, None),
    citation="Shannon entropy of n-gram frequencies (Ent-n), e.g. Zhang et al. 2018, "
    "Generating Informative and Diverse Conversational Responses via Adversarial "
    "Information Maximization (NeurIPS)",
    params={"n": None, "n_max": 5, "base": "e", "tokenizer": "tevet", "lowercase": False},
    description="Shannon entropy of the n-gram distribution pooled over the set (nats by "
    "default, bits with base=2); mean over n=1..n_max unless `n` is given",
)
def entropy_n(
    responses: Sequence[str],
    *,
    n: int | None = None,
    n_max: int = 5,
    base: float | str = "e",
    tokenizer: str = "tevet",
    lowercase: bool = False,
) -> MetricResult:
    """Entropy-n: Shannon entropy of the pooled n-gram frequency distribution of the set.

    ``H_n = -sum_g p(g) log p(g)`` with ``p(g) = count(g) / total`` over every n-gram occurrence
    of every response (n-grams never cross response boundaries). With ``n`` given the value is
    ``H_n``; otherwise the plain mean of ``H_1 .. H_n_max`` (the same averaging as distinct-n).
    An order with no n-gram has entropy 0 (the empty sum).

    Args:
        responses: The response set.
        n: A single n-gram order, or ``None`` for the mean over 1..n_max.
        n_max: Highest order averaged when ``n`` is ``None``.
        base: Logarithm base: ``"e"`` (nats, default), ``2`` or ``"bits"`` (bits), or any
            number > 0 other than 1.
        tokenizer: ``tevet``, ``whitespace`` or ``word``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult with ``details["per_n"]``. ``value`` is ``None`` for an empty set or a set
        with no tokens at all.

    Raises:
        InvalidInputError: For a bad ``n``, ``n_max``, ``base`` or tokenizer.

    Example:
        >>> entropy_n(["a b", "a c"], n=1, base=2).value  # p = (1/2, 1/4, 1/4)
        1.5
        >>> entropy_n(["a b", "a c"], n=1, base=2).signature
        'entropy-n|n:1|base:2|tok:tevet|case:mixed|v:0.1.0'
    """
    texts = as_texts(responses)
    tok = get_tokenizer(tokenizer, lowercase)
    orders, n_label, avg = _orders("entropy-n", n, n_max)
    b, b_label = _base_label(base, "entropy-n")
    sig = make_signature(
        "entropy-n", n=n_label, avg=avg, base=b_label, tok=tok.name, case=tok.case
    )
    if not texts:
        return undefined("entropy-n", sig, "empty set")
    idx = _index(texts, tok)
    if idx.tokens.size == 0:
        return undefined("entropy-n", sig, "no tokens in any response")
    per_n = {}
    for k, counts in _pooled_counts(idx, orders).items():
        c = counts.astype(np.float64)
        total = c.sum()
        if total == 0:
            per_n[k] = 0.0
            continue
        # H = log T - (1/T) sum c log c, computed in nats then converted
        h = math.log(total) - float(np.dot(c, np.log(c))) / total
        per_n[k] = max(h, 0.0) / math.log(b)
    value = float(np.mean(list(per_n.values())))
    return MetricResult("entropy-n", value, sig, details={"per_n": per_n})


# --------------------------------------------------------------------------------------------
# expectation-adjusted distinct


def _ead_one(unique: int, total: int, v: int) -> float:
    """``unique / (V (1 - ((V-1)/V)^C))``, computed stably; 0 when ``C = 0``."""
    if total == 0:
        return 0.0
    # 1 - (1 - 1/V)^C = -expm1(C * log1p(-1/V)); V = 1 gives 1 for every C >= 1.
    frac = 1.0 if v == 1 else -math.expm1(total * math.log1p(-1.0 / v))
    return unique / (v * frac)


@register(
    "ead",
    family="form",
    granularity="set",
    higher_is_more_diverse=True,
    bounds=(0.0, None),
    citation=f"{LIU2022}; averaged over n=1..5 with V=50257 as in {KIRK2023}",
    params={"n": None, "n_max": 5, "vocab_size": GPT2_VOCAB, "tokenizer": "tevet",
            "lowercase": False},
    description="Expectation-adjusted distinct: unique n-grams / V(1-((V-1)/V)^C); mean over "
    "n=1..n_max unless `n` is given",
)
def ead(
    responses: Sequence[str],
    *,
    n: int | None = None,
    n_max: int = 5,
    vocab_size: int = GPT2_VOCAB,
    tokenizer: str = "tevet",
    lowercase: bool = False,
) -> MetricResult:
    """Expectation-adjusted distinct n-grams (EAD, Liu et al. 2022).

    For one order n, with ``N`` the number of distinct n-grams and ``C`` the number of n-gram
    occurrences pooled over the set (n-grams never cross response boundaries)::

        EAD_n = N / (V * (1 - ((V - 1) / V) ** C))

    the denominator being the expected number of distinct items in ``C`` uniform draws from a
    vocabulary of ``V``. With ``n`` given the value is ``EAD_n``; otherwise the plain mean of
    ``EAD_1 .. EAD_n_max``. This is Kirk et al.'s ``ead_averaged_distinct_ngrams`` (their fork of
    Tevet's code: Tevet tokens, n = 1..5, ``V = 50257``, GPT-2's vocabulary size, used for every
    order), which the Decan paper reuses. An order with ``C = 0`` counts as 0, as in their code.
    EAD can exceed 1 slightly when nearly every n-gram is distinct. The denominator is computed
    as ``-V * expm1(C * log1p(-1/V))``, exact to rounding; the literal ``((V-1)/V) ** C`` of
    their code loses about 1e-12 (relative) to cancellation at ``V = 50257``.

    Args:
        responses: The response set.
        n: A single n-gram order, or ``None`` for the mean over 1..n_max.
        n_max: Highest order averaged when ``n`` is ``None``.
        vocab_size: ``V``, the vocabulary size of the expectation.
        tokenizer: ``tevet``, ``whitespace`` or ``word``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult with ``details["per_n"]``. ``value`` is ``None`` for an empty set or a set
        with no tokens at all.

    Raises:
        InvalidInputError: For a bad ``n``, ``n_max``, ``vocab_size`` or tokenizer.

    Example:
        >>> ead(["a b", "a c"], n=1, vocab_size=2).value  # 3 / (2 * (1 - (1/2)**4))
        1.6
        >>> ead(["a b", "a c"]).signature
        'ead|n:1..5|avg:mean|V:50257|tok:tevet|case:mixed|v:0.1.0'
    """
    texts = as_texts(responses)
    tok = get_tokenizer(tokenizer, lowercase)
    orders, n_label, avg = _orders("ead", n, n_max)
    v = check_int(vocab_size, "vocab_size", "ead")
    sig = make_signature("ead", n=n_label, avg=avg, V=v, tok=tok.name, case=tok.case)
    if not texts:
        return undefined("ead", sig, "empty set")
    idx = _index(texts, tok)
    if idx.tokens.size == 0:
        return undefined("ead", sig, "no tokens in any response")
    per_n = {k: _ead_one(c.size, int(c.sum()), v) for k, c in _pooled_counts(idx, orders).items()}
    value = float(np.mean(list(per_n.values())))
    return MetricResult("ead", value, sig, details={"per_n": per_n})


# --------------------------------------------------------------------------------------------
# n-gram cosine diversity (Tevet & Berant's cos-sim)


def _count_matrix(doc: np.ndarray, ids: np.ndarray, n_docs: int, m: int) -> Any:
    """Per-response n-gram count matrix (dense when small, scipy CSR otherwise)."""
    if n_docs * m <= _DENSE_MAX_CELLS:
        flat = np.bincount(doc * m + ids, minlength=n_docs * m)
        return flat.reshape(n_docs, m).astype(np.float64)
    from scipy import sparse

    data = np.ones(ids.shape[0], dtype=np.float64)
    return sparse.csr_matrix((data, (doc, ids)), shape=(n_docs, m))  # duplicates are summed


def _cosine_similarity_matrix(doc: np.ndarray, ids: np.ndarray, n_docs: int, m: int
                              ) -> np.ndarray:
    """Pairwise cosine of count vectors; 0 for a pair where either vector is empty."""
    x = _count_matrix(doc, ids, n_docs, m)
    prod = x @ x.T
    gram = np.asarray(prod.toarray() if hasattr(prod, "toarray") else prod, dtype=np.float64)
    norms = np.sqrt(np.diag(gram).copy())
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    out: np.ndarray = gram * inv[:, None] * inv[None, :]
    return out


def _mean_pair_cosine_linear(doc: np.ndarray, ids: np.ndarray, n_docs: int, m: int) -> float:
    """Mean cosine over unordered pairs in O(#n-grams): with unit rows u_i,
    ``sum_{i<j} u_i.u_j = (|sum_i u_i|^2 - #nonempty rows) / 2``."""
    key = doc * m + ids
    uniq, counts = np.unique(key, return_counts=True)
    pdoc, pid = uniq // m, uniq % m
    c = counts.astype(np.float64)
    norm2 = np.bincount(pdoc, weights=c * c, minlength=n_docs)
    w = c / np.sqrt(norm2[pdoc])
    s = np.bincount(pid, weights=w, minlength=m)
    nonempty = int(np.count_nonzero(norm2))
    pair_sum = (float(np.dot(s, s)) - nonempty) / 2.0
    return pair_sum / (n_docs * (n_docs - 1) / 2.0)


@register(
    "ngram-cosine",
    family="form",
    granularity="set",
    higher_is_more_diverse=True,
    bounds=(-1.0, 0.0),
    citation=f"{TEVET} (cos-sim, section 5 reduction)",
    params={"n": None, "n_max": 5, "reduction": "neg-mean", "tokenizer": "tevet",
            "lowercase": False},
    description="Minus the mean pairwise cosine of n-gram count vectors, mean over n=1..n_max "
    "(Tevet & Berant's cos-sim)",
)
def ngram_cosine(
    responses: Sequence[str],
    *,
    n: int | None = None,
    n_max: int = 5,
    reduction: str = "neg-mean",
    tokenizer: str = "tevet",
    lowercase: bool = False,
) -> MetricResult:
    """N-gram cosine-similarity diversity (Tevet & Berant's cos-sim).

    For each order n, every response is a vector of its n-gram counts; the similarity of two
    responses is the cosine of their vectors, 0 when they share no n-gram (in particular when
    either has none, e.g. an empty response or one shorter than n). The per-n diversity is the
    similarity-to-diversity reduction of Tevet & Berant's section 5 over the unordered pairs
    (``neg-mean``: minus the mean similarity; ``one-minus-mean``: 1 minus it), and the value is
    the plain mean over n = 1..n_max (or the single order ``n``). With the defaults this
    reproduces the ``metric_averaged_cosine_similarity`` column of the Tevet data.

    Computation: one count-matrix product per n (dense or sparse), reduced with
    :func:`divmeter.metrics.reduce.diversity_from_similarity`; above 2,048 responses an exact
    linear-time identity on the unit count vectors replaces the k x k matrix.

    Args:
        responses: The response set.
        n: A single n-gram order, or ``None`` for the mean over 1..n_max.
        n_max: Highest order averaged when ``n`` is ``None``.
        reduction: ``neg-mean`` (Tevet & Berant) or ``one-minus-mean``.
        tokenizer: ``tevet``, ``whitespace`` or ``word``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult with ``details["per_n"]``. ``value`` is ``None`` for an empty set, a set of
        one response (no pair), or a set with no tokens at all (Tevet's code writes 0 there).

    Raises:
        InvalidInputError: For a bad ``n``, ``n_max``, ``reduction`` or tokenizer.

    Example:
        >>> round(ngram_cosine(["a b", "a c", "d"], n=1).value, 12)  # pairs: 1/2, 0, 0
        -0.166666666667
        >>> ngram_cosine(["a b", "a c", "d"]).signature
        'ngram-cosine|n:1..5|avg:mean|sim:cosine-counts|red:neg-mean|tok:tevet|case:mixed|v:0.1.0'
    """
    texts = as_texts(responses)
    tok = get_tokenizer(tokenizer, lowercase)
    orders, n_label, avg = _orders("ngram-cosine", n, n_max)
    red = check_choice(reduction, "reduction", "ngram-cosine", REDUCTIONS)
    sig = make_signature("ngram-cosine", n=n_label, avg=avg, sim="cosine-counts", red=red,
                         tok=tok.name, case=tok.case)
    if not texts:
        return undefined("ngram-cosine", sig, "empty set")
    if len(texts) < 2:
        return undefined("ngram-cosine", sig, "needs at least 2 responses (pairs); got 1")
    idx = _index(texts, tok)
    if idx.tokens.size == 0:
        return undefined("ngram-cosine", sig, "no tokens in any response")
    k_docs = len(texts)
    per_n = {}
    for k in orders:
        ids, doc, m = idx.order(k)
        if k_docs <= _COSINE_MATRIX_MAX:
            sim = _cosine_similarity_matrix(doc, ids, k_docs, m)
            per_n[k] = diversity_from_similarity(sim, red)  # type: ignore[arg-type]
        else:
            mean = _mean_pair_cosine_linear(doc, ids, k_docs, m)
            per_n[k] = -mean if red == "neg-mean" else 1.0 - mean
    value = float(np.mean(list(per_n.values())))
    return MetricResult("ngram-cosine", value, sig, details={"per_n": per_n})


# --------------------------------------------------------------------------------------------
# n-gram diversity score (Shaib et al. 2024)


@register(
    "ngram-diversity",
    family="form",
    granularity="corpus",
    higher_is_more_diverse=True,
    bounds=(0.0, None),
    citation=f"{SHAIB2024} (NGD; `diversity` package's ngram_diversity_score)",
    params={"n_max": 4, "tokenizer": "whitespace", "lowercase": False},
    description="N-gram diversity score: sum over n=1..n_max of unique/total n-grams, "
    "n-grams not crossing response boundaries",
)
def ngram_diversity(
    responses: Sequence[str],
    *,
    n_max: int = 4,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """N-gram diversity score (NGD, Shaib et al. 2024): ``sum_{n=1}^{N} unique_n / total_n``.

    Counts are pooled over the whole set (corpus); n-grams never cross response boundaries. An
    order with no n-gram adds 0. ``N = 4`` and whitespace tokens by default, as in the
    ``diversity`` package (v0.3.1), which differs in two ways named here: it joins the documents
    with a space and splits on ``' '``, so its n-grams *do* cross document boundaries (and runs of
    spaces give empty tokens); and it rounds to 3 decimals. Its value equals this metric on the
    single joined text, ``ngram_diversity([" ".join(docs)])``, for single-spaced texts.

    Args:
        responses: The response set / corpus.
        n_max: ``N``, the highest order summed.
        tokenizer: ``whitespace`` (default), ``tevet`` or ``word``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult with ``details["per_n"]`` (unique/total per order). ``value`` is ``None``
        for an empty set or a set with no tokens at all.

    Raises:
        InvalidInputError: For a bad ``n_max`` or tokenizer.

    Example:
        >>> ngram_diversity(["a b a", "a b"], n_max=2).value  # 2/5 + 2/3
        1.0666666666666667
        >>> ngram_diversity(["a b a", "a b"]).signature
        'ngram-diversity|n:1..4|agg:sum|tok:whitespace|case:mixed|v:0.1.0'
    """
    texts = as_texts(responses)
    tok = get_tokenizer(tokenizer, lowercase)
    n_max = check_int(n_max, "n_max", "ngram-diversity")
    sig = make_signature("ngram-diversity", n=f"1..{n_max}", agg="sum", tok=tok.name,
                         case=tok.case)
    if not texts:
        return undefined("ngram-diversity", sig, "empty set")
    idx = _index(texts, tok)
    if idx.tokens.size == 0:
        return undefined("ngram-diversity", sig, "no tokens in any response")
    counts = _pooled_counts(idx, range(1, n_max + 1))
    per_n = {k: c.size / int(c.sum()) if c.size else 0.0 for k, c in counts.items()}
    return MetricResult("ngram-diversity", float(sum(per_n.values())), sig,
                        details={"per_n": per_n})


# --------------------------------------------------------------------------------------------
# compression ratio


ALGORITHMS = ("gzip", "xz")


@register(
    "compression-ratio",
    family="form",
    granularity="corpus",
    higher_is_more_diverse=False,
    bounds=(0.0, None),
    citation=f"{SHAIB2024} (CR; `diversity` package's compression_ratio)",
    params={"algorithm": "gzip", "separator": " "},
    description="UTF-8 size of the texts joined by `separator` / their compressed size "
    "(gzip level 9 or xz preset 6), compressed once; higher = more repetitive",
)
def compression_ratio(
    responses: Sequence[str],
    *,
    algorithm: str = "gzip",
    separator: str = " ",
) -> MetricResult:
    """Compression ratio (Shaib et al. 2024): original size / compressed size.

    The texts are joined with ``separator`` (one space by default, as ``' '.join(texts)`` in the
    ``diversity`` package), encoded as UTF-8, and compressed once in memory: ``gzip`` is the
    gzip format at level 9 (``gzip.compress``'s default: 10-byte header, deflate stream, 8-byte
    trailer); ``xz`` is the xz format at preset 6 with a CRC64 check (``lzma.compress``'s
    default). Higher means more repetitive (less diverse). The value is not rounded.

    Difference from the ``diversity`` package (v0.3.1), named: for ``xz`` it computes the same
    number (then rounds to 3 decimals). For ``gzip`` it compresses *twice*: it writes
    ``gzip.compress(text)`` into a ``GzipFile`` named ``compressed.gz`` and divides by that
    file's size, which adds the file-name field, a second header/trailer and deflate's
    overhead on incompressible input (about 30 bytes plus 5 bytes per 64 KiB), so its ratio is
    slightly lower, most visibly on small sets.

    Args:
        responses: The response set / corpus.
        algorithm: ``gzip`` (level 9) or ``xz`` (preset 6).
        separator: String placed between consecutive texts before encoding (``" "``).

    Returns:
        MetricResult with ``details`` ``original_bytes`` and ``compressed_bytes``. ``value`` is
        ``None`` for an empty set or a set whose responses are all empty strings.

    Raises:
        InvalidInputError: For an unknown algorithm or a non-string separator.

    Example:
        >>> r = compression_ratio(["the cat sat on the mat"] * 20)
        >>> r.details["original_bytes"], r.details["compressed_bytes"]
        (459, 44)
        >>> r.signature
        'compression-ratio|algo:gzip|level:9|sep:space|enc:utf-8|v:0.1.0'
    """
    texts = as_texts(responses)
    algo = check_choice(algorithm, "algorithm", "compression-ratio", ALGORITHMS)
    if not isinstance(separator, str):
        raise InvalidInputError(
            f"`separator` of compression-ratio must be a string; got {type(separator).__name__}."
        )
    level = 9 if algo == "gzip" else 6
    sig = make_signature("compression-ratio", algo=algo, level=level,
                         sep=_sep_label(separator), enc="utf-8")
    if not texts:
        return undefined("compression-ratio", sig, "empty set")
    if not any(texts):
        return undefined("compression-ratio", sig, "every response is an empty string")
    data = separator.join(texts).encode("utf-8")
    if algo == "gzip":
        # gzip container around one deflate stream: 10-byte header + 8-byte trailer (CRC, size)
        compressed = len(zlib.compress(data, 9, wbits=31))
    else:
        compressed = len(lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                                       preset=6))
    return MetricResult("compression-ratio", len(data) / compressed, sig,
                        details={"original_bytes": len(data), "compressed_bytes": compressed})


# --------------------------------------------------------------------------------------------
# self-repetition


@register(
    "self-repetition",
    family="form",
    granularity="set",
    higher_is_more_diverse=False,
    bounds=(0.0, None),
    citation=f"{SALKAR2022}; score as defined in {SHAIB2024} and its `diversity` package",
    params={"n": 4, "tokenizer": "whitespace", "lowercase": False},
    description="Mean over responses of ln(1 + number of (n-gram, other response) matches of "
    "the response's distinct n-grams); higher = more repetitive",
)
def self_repetition(
    responses: Sequence[str],
    *,
    n: int = 4,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """Self-repetition score (Salkar et al. 2022, in the form of Shaib et al. 2024).

    For response ``d``, let ``G_d`` be its set of distinct n-grams and ``df(g)`` the number of
    responses containing ``g``. Then ``s_d = sum_{g in G_d} (df(g) - 1)`` counts how often its
    n-grams reappear in *other* responses, and the score is ``mean_d ln(1 + s_d)`` (natural log)
    over all responses, those shorter than n included (``s_d = 0``). This is the ``diversity``
    package's ``self_repetition_score`` (``n = 4``, ``str.split()`` tokens, i.e. our
    ``whitespace`` tokenizer) computed in O(#n-grams) instead of with Python sets. Higher means
    more repetition across responses (less diverse).

    Args:
        responses: The response set.
        n: n-gram length (4, the "four or longer" n-grams of Salkar et al.).
        tokenizer: ``whitespace`` (default), ``tevet`` or ``word``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult with ``details["per_response"]`` (``ln(1 + s_d)`` per response). ``value``
        is ``None`` for an empty set or a single response (repetition *across* responses needs
        two; the package returns 0 there).

    Raises:
        InvalidInputError: For a bad ``n`` or tokenizer.

    Example:
        >>> r = self_repetition(["a b c", "a b d", "x y"], n=2)  # "a b" is in 2 responses
        >>> [round(v, 4) for v in r.details["per_response"]]
        [0.6931, 0.6931, 0.0]
        >>> r.signature
        'self-repetition|n:2|log:ln|tok:whitespace|case:mixed|v:0.1.0'
    """
    texts = as_texts(responses)
    tok = get_tokenizer(tokenizer, lowercase)
    k = check_int(n, "n", "self-repetition")
    sig = make_signature("self-repetition", n=k, log="ln", tok=tok.name, case=tok.case)
    if not texts:
        return undefined("self-repetition", sig, "empty set")
    if len(texts) < 2:
        return undefined("self-repetition", sig,
                         "needs at least 2 responses (repetition across responses); got 1")
    idx = _index(texts, tok)
    n_docs = len(texts)
    keys, doc = _ngram_keys(idx, k)
    per = np.zeros(n_docs)
    if keys.size:
        # distinct (n-gram, response) pairs, sorted by n-gram: runs of one n-gram give its df
        pair = np.sort(keys * np.int64(n_docs) + doc)
        pair = pair[np.concatenate(([True], pair[1:] != pair[:-1]))]
        gram, pdoc = pair // n_docs, pair % n_docs
        starts = np.flatnonzero(np.concatenate(([True], gram[1:] != gram[:-1])))
        runs = np.diff(np.append(starts, gram.size))
        others = np.repeat(runs - 1, runs).astype(np.float64)  # df - 1, per pair
        per = np.log1p(np.bincount(pdoc, weights=others, minlength=n_docs))
    return MetricResult("self-repetition", float(per.mean()), sig,
                        details={"per_response": per.tolist()})
