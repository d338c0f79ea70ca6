"""Response-level, length-related lexical diversity (the PATTR paper's family).

Each metric scores every response on its own; the set's ``value`` is the mean over the responses
on which the metric is defined, and ``details["per_response"]`` holds one float (or ``None``)
per input response, in input order. A set where no response is defined gets ``value=None`` with
a reason.

* ``ttr``: types / tokens (Deshpande et al. 2025, eq. 4).
* ``mattr``: moving-average TTR over windows of ``window`` tokens (Covington & McFall 2010).
* ``pattr``: penalty-adjusted TTR, types / (L + |L - L_T|) (Deshpande et al. 2025, eq. 6).
* ``response-compression``: per-response compression ratio of the first ``truncate`` words
  (Shaib et al. 2024's CR, used per response with truncation in Deshpande et al. 2025).
* ``mtld``: measure of textual lexical diversity, bidirectional (McCarthy & Jarvis 2010).
* ``hdd``: hypergeometric distribution D (McCarthy & Jarvis 2007, 2010).
* ``length``: response length in words or UTF-8 bytes (a length, not a diversity; for
  length-bias analyses).

Tokens: the PATTR paper counts "whitespace-separated words" without lowercasing, so every metric
here defaults to ``tokenizer="whitespace"``, ``lowercase=False``.

One kernel per metric, over many sets: ``ttr_many``, ``mattr_many``, ``pattr_many``,
``response_compression_many``, ``mtld_many``, ``hdd_many`` and ``length_many`` score every
response of every set together, then take each set's mean over its own responses; the
single-set functions are these kernels on a batch of one. A response's value never depends on
the other responses of the batch.

Speed: MATTR, MTLD and HD-D work on exact integer token keys of all responses at once
(:class:`divmeter.inputs.text.TokenKeys`): one plain sort of ``hash32(key) << 32 | position`` (checked
against the keys; an exact stable argsort on a collision) groups equal tokens in position order,
which gives every token's previous and next occurrence in its response. With the default
whitespace tokenizer the keys are made in numpy from the UTF-8 bytes, without Python string
objects; other tokenizers (and rare inputs) go through ``encode_tokens``. TTR, PATTR and length
are one ``str.split`` and one ``set`` per response, the floor in Python. With numba
(``divmeter[fast]``, loaded once a process has tokenized 16M characters) TTR and MTLD run as
compiled loops over the compiled tokenizer's ids (:func:`divmeter.inputs.text.intern.per_text`: types
per response by a stamp per type; MTLD's factor rounds with the same float operations in the
same order), and MATTR / HD-D get their keys from it: the same values, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np
from scipy.special import gammaln

from divmeter.engine.corpus.stats import ResponseMean
from divmeter.inputs.data.model import as_texts
from divmeter.core.errors import InvalidInputError
from divmeter.metrics._common import check_choice, check_int, undefined
from divmeter.metrics.ngram import ALGORITHMS, _compressed_size
from divmeter.core.params import LOWERCASE, Param, tokenizer_param
from divmeter.engine.public import register, register_batch
from divmeter.core.result import MetricResult, make_signature
from divmeter.inputs.text import Tokenizer, TokenKeys, get_tokenizer
from divmeter.inputs.text.intern import TokenIds, compiled, per_text

#: The former name of :class:`divmeter.inputs.text.TokenKeys` (tokenize-and-intern lives in
#: :mod:`divmeter.inputs.text.intern`).
_Encoded = TokenKeys

__all__ = ["ttr", "mattr", "pattr", "response_compression", "mtld", "hdd", "length"]

PATTR_PAPER = (
    "Deshpande et al. 2025, A Penalty Goes a Long Way: Measuring Lexical Diversity in Synthetic "
    "Texts Under Prompt-Influenced Length Variations"
)
COVINGTON2010 = (
    "Covington & McFall 2010, Cutting the Gordian Knot: The Moving-Average Type-Token Ratio "
    "(MATTR), Journal of Quantitative Linguistics 17(2)"
)
MCCARTHY2010 = (
    "McCarthy & Jarvis 2010, MTLD, vocd-D, and HD-D: A validation study of sophisticated "
    "approaches to lexical diversity assessment, Behavior Research Methods 42(2)"
)
MCCARTHY2007 = (
    "McCarthy & Jarvis 2007, vocd: A theoretical and empirical evaluation, Language Testing 24(4)"
)
SHAIB2024 = (
    "Shaib et al. 2024, Standardizing the Measurement of Text Diversity: A Tool and a "
    "Comparative Analysis of Scores"
)

_TOK = {"tokenizer": "whitespace", "lowercase": False}


# --------------------------------------------------------------------------------------------
# shared plumbing


def _flatten(text_sets: Sequence[Sequence[str]]) -> tuple[list[str], list[int]]:
    """Every set's responses in one list, and the number of responses of each set."""
    if len(text_sets) == 1:  # a batch of one: its list as it is
        return list(text_sets[0]), [len(text_sets[0])]
    return list(chain.from_iterable(text_sets)), [len(t) for t in text_sets]


@lru_cache(maxsize=64)
def _cached_tokenizer(tokenizer: str | Tokenizer, lowercase: Any) -> Tokenizer:
    return get_tokenizer(tokenizer, lowercase)


def _get_tokenizer(tokenizer: Any, lowercase: Any) -> Tokenizer:
    try:
        return _cached_tokenizer(tokenizer, lowercase)
    except TypeError:  # unhashable argument: let get_tokenizer report it
        return get_tokenizer(tokenizer, lowercase)


@lru_cache(maxsize=512)
def _signature(name: str, items: tuple[tuple[str, Any], ...]) -> str:
    return make_signature(name, **dict(items))


def cached_signature(name: str, **items: Any) -> str:
    """:func:`divmeter.core.result.make_signature`, memoised (it runs once per scored set)."""
    return _signature(name, tuple(items.items()))


def _per_response_result(metric: str, sig: str, per: list[float | None], none_reason: str,
                         **details: Any) -> MetricResult:
    """Mean over the defined responses; ``None`` with ``none_reason`` when none is defined."""
    if not per:
        return undefined(metric, sig, "empty set", per_response=[], n_defined=0, **details)
    defined: list[float] = (
        [v for v in per if v is not None] if None in per else per  # type: ignore[assignment]
    )
    if not defined:
        return undefined(metric, sig, none_reason, per_response=per, n_defined=0, **details)
    value = math.fsum(defined) / len(defined)
    return MetricResult(metric, value, sig,
                        details={"per_response": per, "n_defined": len(defined), **details})


def _per_set_results(metric: str, sig: str, per: list[float | None], sizes: list[int],
                     none_reason: str, short: np.ndarray | None = None) -> list[MetricResult]:
    """:func:`_per_response_result` of each set, from the values of all the sets' responses in
    order (``sizes``: responses per set); ``short`` adds ``n_short`` (MATTR)."""
    if len(sizes) == 1 and short is None:  # a batch of one
        return [_per_response_result(metric, sig, per, none_reason)]
    out: list[MetricResult] = []
    start = 0
    for size in sizes:
        end = start + size
        extra = {} if short is None else {"n_short": int(short[start:end].sum())}
        out.append(_per_response_result(metric, sig, per[start:end], none_reason, **extra))
        start = end
    return out


def _nan_to_none(arr: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in arr.tolist()]


def _tok_sig(tok: Tokenizer) -> dict[str, str]:
    return {"tok": tok.name, "case": tok.case}


def _register(name: str, **info: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """:func:`divmeter.engine.registry.register` for this module's metrics: each one is a response-level
    form metric (scored per response, mean over the set)."""
    return register(name, family="form", granularity="response", **info)


# --------------------------------------------------------------------------------------------
# TTR


@_register(
    "ttr",
    higher_is_more_diverse=True,
    bounds=(0.0, 1.0),
    citation=f"Johnson 1944; as defined (eq. 4) in {PATTR_PAPER}",
    params={"tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE},
    description="Type-token ratio of each response (unique words / words), mean over the set",
    corpus=ResponseMean,
)
def ttr(
    responses: Sequence[str],
    *,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """Type-token ratio, per response: ``|set(w)| / |w|`` (Deshpande et al. 2025, eq. 4).

    Args:
        responses: The response set.
        tokenizer: ``whitespace`` (default, the paper's whitespace-separated words), ``word`` or
            ``tevet``.
        lowercase: Lowercase before tokenizing (the paper does not).

    Returns:
        MetricResult: ``value`` is the mean TTR over the responses that have at least one
        token; ``details["per_response"]`` has ``None`` for a response without tokens.
        ``value`` is ``None`` for an empty set or when no response has a token.

    Example:
        >>> r = ttr(["a b a b", "a b c", ""])
        >>> r.details["per_response"], r.value
        ([0.5, 1.0, None], 0.75)
        >>> r.signature
        'ttr|tok:whitespace|case:mixed|v:0.1.0'
    """
    return ttr_many([as_texts(responses)], tokenizer=tokenizer, lowercase=lowercase)[0]


@register_batch("ttr")
def ttr_many(
    text_sets: Sequence[Sequence[str]],
    *,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> list[MetricResult]:
    """The kernel of :func:`ttr` (same parameters): one result per set of ``text_sets``
    (validated lists or tuples of strings), as ``ttr(set)``.

    Example:
        >>> [r.value for r in ttr_many([["a b a b", "a b c"], [""]])]
        [0.75, None]
    """
    texts, sizes = _flatten(text_sets)
    tok = _get_tokenizer(tokenizer, lowercase)
    sig = cached_signature("ttr", **_tok_sig(tok))
    fast = per_text(texts, tok, _ttr_values)  # compiled (divmeter[fast]): the same floats
    per = (_nan_to_none(fast) if fast is not None
           else [len(set(x)) / len(x) if x else None for x in tok.each(texts)])
    return _per_set_results("ttr", sig, per, sizes, "no response has a token")


def _ttr_values(chunk: TokenIds) -> np.ndarray:
    """TTR of each text of a chunk of the compiled path, NaN without tokens."""
    out: np.ndarray = compiled().ttr_values(  # type: ignore[union-attr]
        chunk.ids, chunk.lengths, chunk.n_types)
    return out


# --------------------------------------------------------------------------------------------
# MATTR


def _mattr_values(enc: TokenKeys, window: int) -> tuple[np.ndarray, np.ndarray]:
    """MATTR of every response (NaN when empty) and a mask of responses shorter than ``window``.

    Sum of the windows' type counts = number of (window, token) pairs where the token is the
    first of its type inside the window. Token ``j`` (previous occurrence ``p``) is first in the
    windows starting at ``i`` with ``max(p + 1, j - W + 1) <= i <= min(j, end - W)``: one O(N)
    pass, no per-window set. A response shorter than W uses W = its length: its one window is
    the whole response, so it gets its TTR.
    """
    prev = enc.prev()
    lengths = enc.lengths
    w_doc = np.minimum(lengths, window)
    q = np.arange(1, enc.n_tokens + 1, dtype=np.int64)  # position + 1
    # windows [i, i + W) with max(p + 1, j - W + 1) <= i <= min(j, end - W), counted as
    # min(j + 1, end - W + 1) - max(p + 1, j + 1 - W)
    hi = np.minimum(q, (enc.ends - w_doc + 1)[enc.doc])
    hi -= np.maximum(prev + 1, q - w_doc[enc.doc])
    total = np.bincount(enc.doc, weights=np.maximum(hi, 0), minlength=enc.n_docs)
    with np.errstate(invalid="ignore", divide="ignore"):  # empty responses: 0 / 0 -> NaN
        out = total / (w_doc * (lengths - w_doc + 1))
    return out, (lengths < window) & (lengths > 0)


@_register(
    "mattr",
    higher_is_more_diverse=True,
    bounds=(0.0, 1.0),
    citation=f"{COVINGTON2010}; used per response in {PATTR_PAPER}",
    params={"window": Param(int, ge=1, cap=10**7, default=50, doc="window length in words"),
            "tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE},
    description="Moving-average type-token ratio over windows of `window` words, per response; "
    "a response shorter than the window gets its plain TTR",
    corpus=ResponseMean,
)
def mattr(
    responses: Sequence[str],
    *,
    window: int = 50,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """Moving-average type-token ratio (Covington & McFall 2010), per response.

    The TTR of every window of ``window`` consecutive tokens (token 1..W, 2..W+1, ...), averaged.
    Default ``window=50``, the default of TAALED and lexical-diversity; the PATTR paper uses
    ``W=32`` (its length-bias Table 2) and ``W=128`` (its Figure 3, Table 3), so pass
    ``window=32`` to reproduce those.

    A response shorter than the window has no full window: it gets the TTR of the whole
    response, as TAALED and lexical-diversity do (lexicalrichness raises instead). The signature
    names this rule (``short:ttr``) and ``details["n_short"]`` counts such responses.

    Args:
        responses: The response set.
        window: Window length W in tokens (>= 1).
        tokenizer: ``whitespace`` (default), ``word`` or ``tevet``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean MATTR over the non-empty responses; ``per_response`` has ``None``
        for an empty response.

    Raises:
        InvalidInputError: If ``window`` is not an integer >= 1.

    Example:
        >>> r = mattr(["a b a c", "x y"], window=2)
        >>> r.details["per_response"]  # windows ab, ba, ac -> 1; the 2-token text: 1
        [1.0, 1.0]
        >>> mattr(["a a b a"], window=3).value  # (2/3 + 2/3) / 2
        0.6666666666666666
        >>> mattr(["a b"], window=3).signature
        'mattr|window:3|short:ttr|tok:whitespace|case:mixed|v:0.1.0'
    """
    return mattr_many([as_texts(responses)], window=window,
                      tokenizer=tokenizer, lowercase=lowercase)[0]


@register_batch("mattr")
def mattr_many(
    text_sets: Sequence[Sequence[str]],
    *,
    window: int = 50,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> list[MetricResult]:
    """The kernel of :func:`mattr` (same parameters): one result per set of ``text_sets``
    (validated lists or tuples of strings), as ``mattr(set)``.

    Example:
        >>> [r.value for r in mattr_many([["a a b a"], ["x y"]], window=3)]
        [0.6666666666666666, 1.0]
    """
    texts, sizes = _flatten(text_sets)
    tok = _get_tokenizer(tokenizer, lowercase)
    window = check_int(window, "window", "mattr")
    sig = cached_signature("mattr", window=window, short="ttr", **_tok_sig(tok))
    vals, short = _mattr_values(TokenKeys.from_texts(texts, tok), window)
    return _per_set_results("mattr", sig, _nan_to_none(vals), sizes, "no response has a token",
                            short=short)


# --------------------------------------------------------------------------------------------
# PATTR


@_register(
    "pattr",
    higher_is_more_diverse=True,
    bounds=(0.0, 1.0),
    citation=f"{PATTR_PAPER} (eq. 6)",
    params={"target_length": Param(int, ge=1, cap=10**7, default=400,
                                   doc="the task's target length L_T in words"),
            "tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE},
    description="Penalty-adjusted TTR: unique words / (L + |L - L_T|) per response, L_T the "
    "task's target length in words",
    corpus=ResponseMean,
)
def pattr(
    responses: Sequence[str],
    *,
    target_length: int = 400,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """Penalty-Adjusted Type-Token Ratio (Deshpande et al. 2025, eq. 5-6), per response.

    ``PATTR(w, L_T) = |set(w)| / (|w| + | |w| - L_T |)``: TTR whose denominator grows with the
    distance between the response length and the task's target length ``L_T``. ``L_T`` is
    task-specific (the paper: "1,000 for an essay or 200 for a short story"); the default 400 is
    the paper's main setting for its video scripts (Figures 2-3, Table 3). Set it for your task.

    An empty response is defined here: ``0 / (0 + L_T) = 0``.

    Args:
        responses: The response set.
        target_length: ``L_T``, target length in tokens (>= 1).
        tokenizer: ``whitespace`` (default, the paper's whitespace-separated words), ``word`` or
            ``tevet``.
        lowercase: Lowercase before tokenizing (the paper does not).

    Returns:
        MetricResult: mean PATTR over all responses; ``details["per_response"]``.

    Raises:
        InvalidInputError: If ``target_length`` is not an integer >= 1.

    Example:
        >>> pattr(["a b c d", "a b a b c d"], target_length=5).details["per_response"]
        [0.8, 0.5714285714285714]
        >>> pattr(["a b"], target_length=5).signature
        'pattr|target_length:5|tok:whitespace|case:mixed|v:0.1.0'
    """
    return pattr_many([as_texts(responses)], target_length=target_length,
                      tokenizer=tokenizer, lowercase=lowercase)[0]


@register_batch("pattr")
def pattr_many(
    text_sets: Sequence[Sequence[str]],
    *,
    target_length: int = 400,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> list[MetricResult]:
    """The kernel of :func:`pattr` (same parameters): one result per set of ``text_sets``
    (validated lists or tuples of strings), as ``pattr(set)``.

    Example:
        >>> [r.value for r in pattr_many([["a b a b"], []], target_length=4)]
        [0.5, None]
    """
    texts, sizes = _flatten(text_sets)
    tok = _get_tokenizer(tokenizer, lowercase)
    lt = check_int(target_length, "target_length", "pattr")
    sig = cached_signature("pattr", target_length=lt, **_tok_sig(tok))
    per: list[float | None] = [len(set(x)) / (len(x) + abs(len(x) - lt))
                               for x in tok.each(texts)]
    return _per_set_results("pattr", sig, per, sizes, "no response")


# --------------------------------------------------------------------------------------------
# per-response compression ratio

@_register(
    "response-compression",
    higher_is_more_diverse=False,
    bounds=(0.0, None),
    citation=f"{SHAIB2024} (CR); per response, truncated to the first L words, as in "
    f"{PATTR_PAPER}",
    params={"algorithm": Param(str, choices=ALGORITHMS, default="gzip", doc="compressor"),
            "truncate": Param(int, ge=1, cap=10**7, allow_none=True, default=128,
                              doc="words kept per response (None: all)"),
            "tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE},
    description="Compression ratio (UTF-8 bytes / compressed bytes) of each response's first "
    "`truncate` words; higher = more repetitive",
    corpus=ResponseMean,
)
def response_compression(
    responses: Sequence[str],
    *,
    algorithm: str = "gzip",
    truncate: int | None = 128,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """Per-response compression ratio with truncation (CR of Shaib et al. 2024, per response).

    The PATTR paper treats each response "as a single-document corpus" and compresses its first
    L = 128 words. Here: the response's first ``truncate`` tokens (all of them when ``None``)
    joined by single spaces, encoded as UTF-8; ratio = original bytes / compressed bytes, with
    ``gzip`` (gzip format, level 9, compressed once) or ``xz`` (preset 6, CRC64), as the
    set-level ``compression-ratio``. Higher means more repetitive (less diverse). Short texts
    compress badly (the gzip container alone is 18 bytes), so ratios below 1 are common.

    Args:
        responses: The response set.
        algorithm: ``gzip`` or ``xz``.
        truncate: Keep the first ``truncate`` tokens (>= 1), or ``None`` for the whole response.
        tokenizer: ``whitespace`` (default), ``word`` or ``tevet``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean ratio over the responses with at least one token; ``None`` in
        ``per_response`` for a response without tokens.

    Raises:
        InvalidInputError: For an unknown algorithm or a ``truncate`` that is not ``None`` or an
            integer >= 1.

    Example:
        >>> r = response_compression(["ab " * 50], truncate=None)
        >>> r.details["per_response"]  # 149 bytes -> 26 bytes
        [5.730769230769231]
        >>> r.signature
        'response-compression|algo:gzip|level:9|trunc:all|tok:whitespace|case:mixed|v:0.1.0'
    """
    return response_compression_many([as_texts(responses)], algorithm=algorithm, truncate=truncate,
                                     tokenizer=tokenizer, lowercase=lowercase)[0]


@register_batch("response-compression")
def response_compression_many(
    text_sets: Sequence[Sequence[str]],
    *,
    algorithm: str = "gzip",
    truncate: int | None = 128,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> list[MetricResult]:
    """The kernel of :func:`response_compression` (same parameters): one result per set of
    ``text_sets`` (validated lists or tuples of strings), as ``response_compression(set)``.

    Example:
        >>> [r.value for r in response_compression_many([["ab " * 50], []], truncate=None)]
        [5.730769230769231, None]
    """
    texts, sizes = _flatten(text_sets)
    tok = _get_tokenizer(tokenizer, lowercase)
    algo = check_choice(algorithm, "algorithm", "response-compression", ALGORITHMS)
    if truncate is not None:
        truncate = check_int(truncate, "truncate", "response-compression")
    sig = cached_signature("response-compression", algo=algo, level=9 if algo == "gzip" else 6,
                         trunc="all" if truncate is None else truncate, **_tok_sig(tok))
    per: list[float | None] = []
    for toks in tok.each(texts):
        if not toks:
            per.append(None)
            continue
        data = " ".join(toks if truncate is None else toks[:truncate]).encode("utf-8")
        per.append(len(data) / _compressed_size(data, algo))
    return _per_set_results("response-compression", sig, per, sizes,
                            "no response has a token")


# --------------------------------------------------------------------------------------------
# MTLD


def _mtld_factors(prev: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                  threshold: float) -> np.ndarray:
    """MTLD factor count of every response in one direction (all responses at once).

    ``prev`` holds each token's previous occurrence in reading order (``< start`` if none).
    A factor grows token by token until its TTR is <= ``threshold``; the factor count then
    increases by 1 and a new factor starts. The unfinished last factor adds the partial factor
    ``(1 - TTR) / (1 - threshold)``. Every round advances all unfinished responses by one
    factor, scanning each remaining span with vectorised cumulative type counts.
    """
    n_docs = starts.shape[0]
    factors = np.zeros(n_docs)
    cur = starts.copy()
    active = np.flatnonzero(ends > starts)
    one_minus = 1.0 - threshold
    rounds = 0
    while active.size:
        rounds += 1
        if rounds > _MTLD_ROUNDS:  # a response with very many factors: finish it token by token
            _mtld_scalar(prev, cur, ends, factors, active, threshold)
            break
        s = cur[active]
        span = ends[active] - s
        offs = np.cumsum(span)
        total = int(offs[-1])
        offs -= span  # first flat index of each response's span
        seg_start = np.repeat(s, span)
        pos = np.arange(total, dtype=np.int64) + np.repeat(s - offs, span)
        new = prev[pos] < seg_start
        cum = np.cumsum(new)
        cum -= np.repeat(cum[offs] - new[offs], span)  # types in the factor so far
        ratio = cum / (pos - seg_start + 1)
        hit = np.flatnonzero(ratio <= threshold)
        hseg = np.searchsorted(offs, hit, side="right") - 1
        first = np.ones(hit.size, dtype=bool)
        first[1:] = hseg[1:] != hseg[:-1]
        fseg = hseg[first]
        docs = active[fseg]
        factors[docs] += 1.0
        cur[docs] = pos[hit[first]] + 1
        going = np.zeros(active.size, dtype=bool)
        going[fseg] = cur[docs] < ends[docs]  # finished exactly at the end: no partial
        # responses with no factor end in their remaining span: partial factor, finished
        partial = np.ones(active.size, dtype=bool)
        partial[fseg] = False
        if partial.any():
            last = (offs + span - 1)[partial]
            factors[active[partial]] += (1.0 - ratio[last]) / one_minus
        active = active[going]
    return factors


#: Vectorised rounds (one factor per response per round) before the few responses that still
#: have factors left are finished by a scalar loop: keeps a very repetitive long response (one
#: factor every few tokens) linear instead of one round per factor.
_MTLD_ROUNDS = 32


def _mtld_scalar(prev: np.ndarray, cur: np.ndarray, ends: np.ndarray, factors: np.ndarray,
                 active: np.ndarray, threshold: float) -> None:
    """The same factor count, token by token, for the responses in ``active`` (in place)."""
    prev_list = prev.tolist()
    for d in active.tolist():
        start, end = int(cur[d]), int(ends[d])
        count = float(factors[d])  # add to it in the same order as the rounds do
        types = 0
        ratio = 1.0
        for j in range(start, end):
            if prev_list[j] < start:
                types += 1
            ratio = types / (j - start + 1)
            if ratio <= threshold:
                count += 1.0
                start = j + 1
                types = 0
        if start < end:
            count += (1.0 - ratio) / (1.0 - threshold)
        factors[d] = count


def _mtld_values(enc: TokenKeys, threshold: float) -> np.ndarray:
    prev, nxt = enc.neighbours()
    n_tok = enc.n_tokens
    # backward = the reversed response; position q mirrors to start + end - 1 - q. Both
    # directions run in one batch: the reversed responses are appended after the originals.
    mirror = (enc.starts + enc.ends - 1)[enc.doc]
    prev_rev = np.empty_like(prev)
    prev_rev[mirror - np.arange(n_tok)] = mirror - nxt  # nxt == end -> start - 1 (none)
    both_prev = np.concatenate((prev, prev_rev + n_tok))
    both_starts = np.concatenate((enc.starts, enc.starts + n_tok))
    both_ends = np.concatenate((enc.ends, enc.ends + n_tok))
    factors = _mtld_factors(both_prev, both_starts, both_ends, threshold)
    fwd, bwd = factors[: enc.n_docs], factors[enc.n_docs:]
    n = enc.lengths
    out = np.full(enc.n_docs, np.nan)
    ok = (fwd > 0) & (bwd > 0)
    out[ok] = (n[ok] / fwd[ok] + n[ok] / bwd[ok]) / 2.0
    return out


def _check_threshold(value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not 0.0 < value < 1.0:
        raise InvalidInputError(
            f"`threshold` of mtld must be a number strictly between 0 and 1; got {value!r}."
        )
    return float(value)


@_register(
    "mtld",
    higher_is_more_diverse=True,
    bounds=(0.0, None),
    citation=MCCARTHY2010,
    params={"threshold": Param(float, gt=0, lt=1, default=0.72, doc="TTR factor threshold",
                               expect="a number strictly between 0 and 1"),
            "tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE},
    description="Measure of textual lexical diversity (mean factor length, TTR threshold 0.72, "
    "forward and backward averaged), per response",
    corpus=ResponseMean,
)
def mtld(
    responses: Sequence[str],
    *,
    threshold: float = 0.72,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """MTLD (McCarthy & Jarvis 2010), bidirectional, per response.

    Reading forward, a factor grows one token at a time until its TTR falls to ``threshold``
    (``TTR <= 0.72``); the factor count then increases by 1 and a new factor starts. The
    unfinished last factor counts ``(1 - TTR_rest) / (1 - threshold)``. MTLD in one direction is
    tokens / factors; the value is the mean of the forward and backward (reversed text) MTLD.
    There is no minimum factor length. This is the MTLD of lexicalrichness; TAALED's and
    lexical-diversity's ``mtld`` differ (a factor also needs >= 10 tokens and ends on ``TTR <
    0.72``; TAALED reports the mean factor length over both directions).

    Undefined (``None``) for a response without tokens, and for a response where no type
    repeats: its TTR never leaves 1, so it has no factor and no partial factor (MTLD would be
    infinite; lexicalrichness returns the length instead). MTLD is meant for texts of 100
    tokens or more.

    Args:
        responses: The response set.
        threshold: The factor TTR threshold, strictly between 0 and 1 (0.72).
        tokenizer: ``whitespace`` (default), ``word`` or ``tevet``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean MTLD over the defined responses, ``per_response``.

    Raises:
        InvalidInputError: If ``threshold`` is not in (0, 1).

    Example:
        >>> r = mtld(["a b a c a d", "one two three"])
        >>> r.details["per_response"]  # forward: a b a | c a d -> 6 / (1 + 0) = 6; backward too
        [6.0, None]
        >>> r.signature
        'mtld|threshold:0.72|dir:bi|tok:whitespace|case:mixed|v:0.1.0'
    """
    return mtld_many([as_texts(responses)], threshold=threshold,
                     tokenizer=tokenizer, lowercase=lowercase)[0]


@register_batch("mtld")
def mtld_many(
    text_sets: Sequence[Sequence[str]],
    *,
    threshold: float = 0.72,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> list[MetricResult]:
    """The kernel of :func:`mtld` (same parameters): one result per set of ``text_sets``
    (validated lists or tuples of strings), as ``mtld(set)``.

    Example:
        >>> [r.value for r in mtld_many([["a b a c a d"], ["one two three"]])]
        [6.0, None]
    """
    texts, sizes = _flatten(text_sets)
    tok = _get_tokenizer(tokenizer, lowercase)
    thr = _check_threshold(threshold)
    sig = cached_signature("mtld", threshold=thr, dir="bi", **_tok_sig(tok))
    vals = per_text(  # compiled (divmeter[fast]): the same floats
        texts, tok, lambda c: compiled().mtld_values(  # type: ignore[union-attr]
            c.ids, c.lengths, c.n_types, thr))
    if vals is None:
        vals = _mtld_values(TokenKeys.from_texts(texts, tok), thr)
    return _per_set_results(
        "mtld", sig, _nan_to_none(vals), sizes,
        "no response has a repeated word (MTLD is undefined without a repetition)")


# --------------------------------------------------------------------------------------------
# HD-D


#: Up to this sample size the absence probability is an exact product (summed as logs);
#: beyond, the log-gamma closed form (relative error ~1e-12 for texts of thousands of tokens).
_HDD_PRODUCT_MAX = 256


def _hdd_values(enc: TokenKeys, sample_size: int) -> np.ndarray:
    """HD-D of every response (NaN when shorter than ``sample_size``).

    P(type with k of N tokens absent from a sample of n drawn without replacement) =
    C(N-k, n) / C(N, n) = prod_{i<n} (1 - k / (N - i)), summed in log space (``log1p``), which
    is exact to rounding. Types are grouped by (response, k): the probability is computed once
    per group and the sum runs in increasing k, so a response's value does not depend on the
    other responses of the set (not even in the last bit).
    """
    doc, k = enc.type_counts()
    ok_doc = enc.lengths >= sample_size
    keep = ok_doc[doc]
    doc, k = doc[keep], k[keep]
    width = np.int64(int(k.max(initial=0)) + 1)
    groups, n_types = np.unique(doc * width + k, return_counts=True)
    gdoc, gk = groups // width, groups % width
    gn = enc.lengths[gdoc]
    absent = np.zeros(groups.shape[0])
    can = gn - gk >= sample_size  # otherwise every sample contains the type
    if can.any() and sample_size <= _HDD_PRODUCT_MAX:
        i = np.arange(sample_size, dtype=np.float64)
        kk = gk[can].astype(np.float64)[:, None]
        nn = gn[can].astype(np.float64)[:, None]
        absent[can] = np.exp(np.log1p(-kk / (nn - i)).sum(axis=1))
    elif can.any():  # large samples: log-gamma closed form (no (groups x n) array)
        kk, nn = gk[can].astype(np.float64), gn[can].astype(np.float64)
        absent[can] = np.exp(gammaln(nn - kk + 1) - gammaln(nn - kk - sample_size + 1)
                             - gammaln(nn + 1) + gammaln(nn - sample_size + 1))
    contrib = n_types * (1.0 - absent) / sample_size
    total = np.bincount(gdoc, weights=contrib, minlength=enc.n_docs)
    out = np.full(enc.n_docs, np.nan)
    out[ok_doc] = total[ok_doc]
    return out


@_register(
    "hdd",
    higher_is_more_diverse=True,
    bounds=(0.0, 1.0),
    citation=f"{MCCARTHY2007}; {MCCARTHY2010}",
    params={"sample_size": Param(int, ge=1, cap=10**7, default=42, doc="tokens drawn"),
            "tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE},
    description="HD-D: expected TTR of a random sample of `sample_size` tokens (hypergeometric), "
    "per response",
    corpus=ResponseMean,
)
def hdd(
    responses: Sequence[str],
    *,
    sample_size: int = 42,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """HD-D (McCarthy & Jarvis 2007, 2010), per response.

    For each type with ``k`` occurrences among the response's ``N`` tokens, the probability that
    it appears at least once in a random sample of ``n = sample_size`` tokens drawn without
    replacement is ``1 - hypergeom.pmf(0, N, k, n)``; HD-D is the sum of these probabilities
    divided by ``n`` (the expected TTR of the sample), as in lexicalrichness, TAALED and
    lexical-diversity.

    Undefined (``None``) for a response with fewer than ``n`` tokens (no sample of n tokens
    exists; lexicalrichness raises, TAALED and lexical-diversity return 0).

    Args:
        responses: The response set.
        sample_size: ``n``, tokens per sample (42).
        tokenizer: ``whitespace`` (default), ``word`` or ``tevet``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean HD-D over the responses with at least ``n`` tokens, ``per_response``.

    Raises:
        InvalidInputError: If ``sample_size`` is not an integer >= 1.

    Example:
        >>> r = hdd(["a a b", "a b"], sample_size=2)
        >>> r.details["per_response"]  # a: 1 - C(1,2)/C(3,2) = 1; b: 1 - C(2,2)/C(3,2) = 2/3
        [0.8333333333333333, 1.0]
        >>> r.signature
        'hdd|sample:2|tok:whitespace|case:mixed|v:0.1.0'
    """
    return hdd_many([as_texts(responses)], sample_size=sample_size,
                    tokenizer=tokenizer, lowercase=lowercase)[0]


@register_batch("hdd")
def hdd_many(
    text_sets: Sequence[Sequence[str]],
    *,
    sample_size: int = 42,
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> list[MetricResult]:
    """The kernel of :func:`hdd` (same parameters): one result per set of ``text_sets``
    (validated lists or tuples of strings), as ``hdd(set)``.

    Example:
        >>> [r.value for r in hdd_many([["a b"], ["a"]], sample_size=2)]
        [1.0, None]
    """
    texts, sizes = _flatten(text_sets)
    tok = _get_tokenizer(tokenizer, lowercase)
    n = check_int(sample_size, "sample_size", "hdd")
    sig = cached_signature("hdd", sample=n, **_tok_sig(tok))
    vals = _hdd_values(TokenKeys.from_texts(texts, tok), n)
    return _per_set_results("hdd", sig, _nan_to_none(vals), sizes,
                            f"every response has fewer than sample_size={n} tokens")


# --------------------------------------------------------------------------------------------
# length

UNITS = ("words", "bytes")


@_register(
    "length",
    higher_is_more_diverse=True,
    bounds=(0.0, None),
    citation=f"{PATTR_PAPER} (response length in whitespace-separated words, Appendix B)",
    params={"unit": Param(str, choices=UNITS, default="words", doc="unit of length"),
            "tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE},
    description="Response length in words or UTF-8 bytes (a length, not a diversity: used by "
    "length-bias analyses)",
    corpus=ResponseMean,
)
def length(
    responses: Sequence[str],
    *,
    unit: str = "words",
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> MetricResult:
    """Response length, per response: tokens (``unit="words"``) or UTF-8 bytes.

    Not a diversity measure: it is registered so length-bias analyses (the PATTR paper measures
    "length as the number of white-space-separated words") can score it like any other metric.
    ``bytes`` counts the raw response's UTF-8 bytes, so the tokenizer does not apply to it and
    is left out of its signature.

    Args:
        responses: The response set.
        unit: ``words`` (tokens of ``tokenizer``) or ``bytes``.
        tokenizer: ``whitespace`` (default), ``word`` or ``tevet`` (``words`` only).
        lowercase: Lowercase before tokenizing (``words`` only).

    Returns:
        MetricResult: mean length over all responses, ``per_response`` (floats).

    Raises:
        InvalidInputError: For an unknown unit.

    Example:
        >>> length(["a b c", "été"]).details["per_response"]
        [3.0, 1.0]
        >>> length(["a b c", "été"], unit="bytes").details["per_response"]
        [5.0, 5.0]
        >>> length(["a"], unit="bytes").signature
        'length|unit:bytes|v:0.1.0'
    """
    return length_many([as_texts(responses)], unit=unit,
                       tokenizer=tokenizer, lowercase=lowercase)[0]


@register_batch("length")
def length_many(
    text_sets: Sequence[Sequence[str]],
    *,
    unit: str = "words",
    tokenizer: str = "whitespace",
    lowercase: bool = False,
) -> list[MetricResult]:
    """The kernel of :func:`length` (same parameters): one result per set of ``text_sets``
    (validated lists or tuples of strings), as ``length(set)``.

    Example:
        >>> [r.value for r in length_many([["a b c", "a"], []])]
        [2.0, None]
    """
    texts, sizes = _flatten(text_sets)
    tok = _get_tokenizer(tokenizer, lowercase)
    unit = check_choice(unit, "unit", "length", UNITS)
    if unit == "bytes":
        sig = cached_signature("length", unit=unit)
        per: list[float | None] = [float(len(t.encode("utf-8"))) for t in texts]
    else:
        sig = cached_signature("length", unit=unit, **_tok_sig(tok))
        per = [float(len(t)) for t in tok.each(texts)]
    return _per_set_results("length", sig, per, sizes, "no response")
