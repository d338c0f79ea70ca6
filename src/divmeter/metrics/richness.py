"""Response-level lexical diversity: TTR and its relatives, the PATTR paper's family, and the
lexical richness indices of the anchor libraries (LexicalRichness, TAALED, lexical-diversity).
One concern, one module (issue 32 merged the former ``metrics/indices.py`` in): every metric
here is a function of each response's own tokens.

Each metric scores every response on its own; the set's ``value`` is the mean over the responses
on which the metric is defined, and ``details["per_response"]`` holds one float (or ``None``)
per input response, in input order. A set where no response is defined gets ``value=None`` with
a reason. Tokens default to ``tokenizer="whitespace"``, ``lowercase=False`` (the PATTR paper
counts "whitespace-separated words" without lowercasing; the peers' own tokenizers differ, so
parity is checked on the same token lists).

* ``ttr``: types / tokens (Deshpande et al. 2025, eq. 4).
* ``mattr``: moving-average TTR over windows of ``window`` tokens (Covington & McFall 2010).
* ``pattr``: penalty-adjusted TTR, types / (L + |L - L_T|) (Deshpande et al. 2025, eq. 6).
* ``response-compression``: per-response compression ratio of the first ``truncate`` words
  (Shaib et al. 2024's CR, used per response with truncation in Deshpande et al. 2025).
* ``mtld``: measure of textual lexical diversity, bidirectional (McCarthy & Jarvis 2010).
* ``hdd``: hypergeometric distribution D (McCarthy & Jarvis 2007, 2010).
* ``length``: response length in words or UTF-8 bytes (a length, not a diversity; for
  length-bias analyses).

The richness indices, with ``N`` tokens, ``V`` types and ``M2`` the sum over types of their
squared counts:

=================  ===============================================  ==========================
metric             value                                            original paper
=================  ===============================================  ==========================
``root-ttr``       Guiraud's R, ``V / sqrt(N)``                     Guiraud 1954
``corrected-ttr``  Carroll's CTTR, ``V / sqrt(2N)``                 Carroll 1964
``log-ttr``        Herdan's C, ``log V / log N``                    Herdan 1960
``summer-s``       ``log log V / log log N``                        Somers 1966
``dugast-u``       ``(log N)^2 / (log N - log V)``                  Dugast 1978
``maas-a2``        ``(log N - log V) / (log N)^2``                  Maas 1972
``maas-log-v0``    ``log V / sqrt(1 - (log V / log N)^2)``          Maas 1972
``yule-k``         ``10^4 (M2 - N) / N^2``                          Yule 1944
``yule-i``         ``V^2 / (M2 - V)``                               Yule 1944
``herdan-vm``      ``sqrt(M2 / N^2 - 1 / V)``                       Herdan 1955
``simpson-d``      ``(M2 - N) / (N (N - 1))``                       Simpson 1949
``msttr``          mean TTR of consecutive segments                 Johnson 1944
``vocd-d``         D of the TTR curve of random samples             McKee, Malvern & Richards
                                                                    2000
``mtld-ma-bi``     moving-average MTLD, forward and backward        McCarthy & Jarvis 2010;
                                                                    Kyle et al. 2021
``mtld-ma-wrap``   moving-average MTLD, wrapping around the text    McCarthy & Jarvis 2010;
                                                                    Kyle et al. 2021
=================  ===============================================  ==========================

Where the libraries disagree, each definition is a named parameter value and the signature
carries it: the log base of Maas, Dugast and Summer (``base``: lexicalrichness uses ``e``,
TAALED and lexical-diversity ``10``), MSTTR's segments (``convention``), MTLD-MA's factor rule
(``factor``, ``min_length``) and vocd-D's sampling (``sampling``, ``seed``).

Definitions: each metric is one :class:`~divmeter.engine.definition.Metric` subclass of
:class:`ResponseMetric` (the indices of the table: of :class:`Index`), whose ``values`` is its
formula on every response of every set together; the shared ``score`` takes each set's mean
over its own responses, and the public function (``ttr(responses, ...)``) is that definition
on a batch of one. A response's value never depends on the other responses (vocd-D's random
stream included: it is derived from the seed and the response's own tokens), so corpus mode is
the exact mean of the same per-response values (:class:`ResponseMean`).

Speed: TTR, PATTR and the indices of ``N``, ``V`` and ``M2`` are formulas of one count pass
(:func:`_counts`) that every one of them shares on a batch: the engine passes one immutable
batch to every metric it scores, so ``divmeter score -m ttr -m root-ttr -m yule-k ...`` counts
once. With numba (``divmeter[fast]``, loaded once a process has tokenized 16M characters) the
pass is the compiled scan of :mod:`divmeter.inputs.text.jit` (``local_types``); without
it, the sorted token keys of :class:`divmeter.inputs.text.TokenKeys` (one plain sort of
``hash32(key) << 32 | position``, checked against the keys). MATTR, MTLD, HD-D, MSTTR and
MTLD-MA work on those keys too (each token's previous and next occurrence in its response); TTR
and MTLD also have compiled loops, and vocd-D's sampling runs as one numpy pass over many
samples or as a compiled loop (the same random numbers, the same counts). Every path gives the
same values, bit for bit.
"""

from __future__ import annotations

import hashlib
import math
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from itertools import chain
from typing import Any, ClassVar

import numpy as np
from scipy.special import gammaln

from divmeter.core.params import LOWERCASE, Param, tokenizer_param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.corpus.stats import ResponseMean
from divmeter.engine.definition import Metric
from divmeter.engine.public import public_function, register
from divmeter.inputs.text import Tokenizer, TokenKeys, get_tokenizer
from divmeter.inputs.text.intern import TokenIds, compiled, per_text
from divmeter.metrics._common import undefined
from divmeter.metrics.ngram import ALGORITHMS, _compressed_size

#: The former name of :class:`divmeter.inputs.text.TokenKeys` (tokenize-and-intern lives in
#: :mod:`divmeter.inputs.text.intern`).
_Encoded = TokenKeys

__all__ = [
    "ttr", "mattr", "pattr", "response_compression", "mtld", "hdd", "length",
    "root_ttr", "corrected_ttr", "log_ttr", "summer_s", "dugast_u", "maas_a2", "maas_log_v0",
    "yule_k", "yule_i", "herdan_vm", "simpson_d", "msttr", "vocd_d", "mtld_ma_bi",
    "mtld_ma_wrap", "mtld_taaled",
]

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
KYLE2021 = (
    "Kyle, Crossley & Jarvis 2021, Assessing the Validity of Lexical Diversity Indices Using "
    "Direct Judgements, Language Assessment Quarterly 18(2) (TAALED)"
)
SHAIB2024 = (
    "Shaib et al. 2024, Standardizing the Measurement of Text Diversity: A Tool and a "
    "Comparative Analysis of Scores"
)

_TOK_PARAMS = {"tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE}
_NO_TOKEN = "no response has a token"
_NO_TWO = "no response has two or more tokens"
_NO_REPEAT = "no response has a repeated word"


# --------------------------------------------------------------------------------------------
# shared plumbing


#: The last batch flattened (:func:`_flatten`) and its result: an immutable batch (a tuple of
#: tuples, as :func:`divmeter.engine.batch.evaluate` passes one batch to every metric) is
#: flattened once, and the same list lets the metrics share their counts (:func:`_counts`).
_LAST_FLAT: list[Any] = [None, None]


def _flatten(text_sets: Sequence[Sequence[str]]) -> tuple[list[str], list[int]]:
    """Every set's responses in one list, and the number of responses of each set."""
    if _LAST_FLAT[0] is text_sets:
        out: tuple[list[str], list[int]] = _LAST_FLAT[1]
        return out
    if len(text_sets) == 1:  # a batch of one: its list as it is
        out = list(text_sets[0]), [len(text_sets[0])]
    else:
        out = list(chain.from_iterable(text_sets)), [len(t) for t in text_sets]
    if type(text_sets) is tuple and all(type(t) is tuple for t in text_sets):
        _LAST_FLAT[:] = [text_sets, out]
    return out


#: The last counts per tokenizer, with the list of texts they are of (held, so that its
#: identity stays unique): every index of one batch counts its tokens and types once.
_LAST_COUNTS: dict[Tokenizer, tuple[list[str], np.ndarray]] = {}


def _counts(texts: list[str], tok: Tokenizer) -> np.ndarray:
    """``(N, V, M2)`` of every text as the rows of a ``(3, texts)`` int64 array: tokens, types
    and the sum over types of their squared counts; one pass for every index that asks for
    them on the same batch (the compiled kernel :func:`divmeter.inputs.text.jit.local_types`
    with numba, else the sorted keys of :class:`divmeter.inputs.text.TokenKeys`)."""
    last = _LAST_COUNTS.get(tok)
    if last is not None and last[0] is texts:
        return last[1]
    fast = per_text(texts, tok, _count_chunk, local="counts")
    if fast is not None:
        out = np.ascontiguousarray(fast.T)
    else:
        enc = TokenKeys.from_texts(texts, tok)
        doc, k = enc.type_counts()
        out = np.empty((3, enc.n_docs), np.int64)
        out[0] = enc.lengths
        out[1] = np.bincount(doc, minlength=enc.n_docs)
        # bincount sums in float64: exact while a response's M2 <= N^2 stays below 2**53
        out[2] = np.bincount(doc, weights=k.astype(np.float64) ** 2, minlength=enc.n_docs)
    _LAST_COUNTS[tok] = (texts, out)
    return out


def _count_chunk(chunk: TokenIds) -> np.ndarray:
    """``(N, V, M2)`` of each text of a chunk of the compiled path (``local="counts"``), one
    row a text."""
    assert chunk.types is not None and chunk.squares is not None  # (local="counts" sets them)
    return np.column_stack((chunk.lengths, chunk.types, chunk.squares))


@lru_cache(maxsize=64)
def _cached_tokenizer(tokenizer: str | Tokenizer, lowercase: Any) -> Tokenizer:
    return get_tokenizer(tokenizer, lowercase)


def _get_tokenizer(tokenizer: Any, lowercase: Any) -> Tokenizer:
    try:
        return _cached_tokenizer(tokenizer, lowercase)
    except TypeError:  # unhashable argument: let get_tokenizer report it
        return get_tokenizer(tokenizer, lowercase)


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


class ResponseMetric(Metric):
    """A response-level form metric of this module: each response scored on its own tokens
    (:meth:`values`, every response of every set at once), the set's value the mean over its
    defined responses, ``details["per_response"]`` one float or ``None`` per response, corpus
    mode the exact mean of the same per-response values (:class:`ResponseMean`). The
    tokenizer is resolved once (:meth:`setup`) and the signature is the metric's
    :meth:`fields` followed by the tokenizer's."""

    family = "form"
    granularity = "response"
    statistics = ResponseMean
    params: ClassVar[Mapping[str, Param]] = _TOK_PARAMS
    #: The reason of a set where no response is defined (set in :meth:`setup` where a
    #: parameter names it).
    none_reason: str = _NO_TOKEN

    def setup(self) -> None:
        self.tok = _get_tokenizer(self.p["tokenizer"], self.p["lowercase"])

    def fields(self) -> dict[str, Any]:
        """The signature's fields ahead of the tokenizer's."""
        return {}

    def signature(self) -> str:
        return make_signature(self.name, **self.fields(), **_tok_sig(self.tok))

    def values(self, texts: list[str]) -> np.ndarray | list[float | None]:
        """The value of every text (NaN or ``None`` where undefined), in order."""
        raise NotImplementedError

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        texts, sizes = _flatten(sets)
        vals = self.values(texts)
        per = _nan_to_none(vals) if isinstance(vals, np.ndarray) else vals
        return _per_set_results(self.name, self._sig(), per, sizes, self.none_reason)


# --------------------------------------------------------------------------------------------
# TTR


@register
class TTR(ResponseMetric):
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

    name = "ttr"
    higher_is_more_diverse = True
    bounds = (0.0, 1.0)
    citation = f"Johnson 1944; as defined (eq. 4) in {PATTR_PAPER}"
    description = "Type-token ratio of each response (unique words / words), mean over the set"

    def values(self, texts: list[str]) -> np.ndarray:
        n, v, _ = _counts(texts, self.tok)
        with np.errstate(invalid="ignore", divide="ignore"):
            return v / n  # |set(w)| / |w|, correctly rounded; 0 / 0: NaN (None)


ttr = public_function(TTR)


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


@register
class MATTR(ResponseMetric):
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

    name = "mattr"
    higher_is_more_diverse = True
    bounds = (0.0, 1.0)
    citation = f"{COVINGTON2010}; used per response in {PATTR_PAPER}"
    description = ("Moving-average type-token ratio over windows of `window` words, per "
                   "response; a response shorter than the window gets its plain TTR")
    params = {"window": Param(int, ge=1, cap=10**7, default=50, doc="window length in words"),
              **_TOK_PARAMS}

    def fields(self) -> dict[str, Any]:
        return {"window": self.p["window"], "short": "ttr"}

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        texts, sizes = _flatten(sets)
        vals, short = _mattr_values(TokenKeys.from_texts(texts, self.tok), self.p["window"])
        return _per_set_results(self.name, self._sig(), _nan_to_none(vals), sizes,
                                self.none_reason, short=short)


mattr = public_function(MATTR)


# --------------------------------------------------------------------------------------------
# PATTR


@register
class PATTR(ResponseMetric):
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

    name = "pattr"
    higher_is_more_diverse = True
    bounds = (0.0, 1.0)
    citation = f"{PATTR_PAPER} (eq. 6)"
    description = ("Penalty-adjusted TTR: unique words / (L + |L - L_T|) per response, L_T the "
                   "task's target length in words")
    params = {"target_length": Param(int, ge=1, cap=10**7, default=400,
                                     doc="the task's target length L_T in words"),
              **_TOK_PARAMS}
    none_reason = "no response"

    def fields(self) -> dict[str, Any]:
        return {"target_length": self.p["target_length"]}

    def values(self, texts: list[str]) -> np.ndarray:
        n, v, _ = _counts(texts, self.tok)
        lt = self.p["target_length"]
        out: np.ndarray = v / (n + np.abs(n - lt))
        return out


pattr = public_function(PATTR)


# --------------------------------------------------------------------------------------------
# per-response compression ratio

@register
class ResponseCompression(ResponseMetric):
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

    name = "response-compression"
    higher_is_more_diverse = False
    bounds = (0.0, None)
    citation = (f"{SHAIB2024} (CR); per response, truncated to the first L words, as in "
                f"{PATTR_PAPER}")
    description = ("Compression ratio (UTF-8 bytes / compressed bytes) of each response's first "
                   "`truncate` words; higher = more repetitive")
    params = {"algorithm": Param(str, choices=ALGORITHMS, default="gzip", doc="compressor"),
              "truncate": Param(int, ge=1, cap=10**7, allow_none=True, default=128,
                                doc="words kept per response (None: all)"),
              **_TOK_PARAMS}

    def fields(self) -> dict[str, Any]:
        algo, truncate = self.p["algorithm"], self.p["truncate"]
        return {"algo": algo, "level": 9 if algo == "gzip" else 6,
                "trunc": "all" if truncate is None else truncate}

    def values(self, texts: list[str]) -> list[float | None]:
        algo, truncate = self.p["algorithm"], self.p["truncate"]
        per: list[float | None] = []
        for toks in self.tok.each(texts):
            if not toks:
                per.append(None)
                continue
            data = " ".join(toks if truncate is None else toks[:truncate]).encode("utf-8")
            per.append(len(data) / _compressed_size(data, algo))
        return per


response_compression = public_function(ResponseCompression)


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


@register
class MTLD(ResponseMetric):
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

    name = "mtld"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = MCCARTHY2010
    description = ("Measure of textual lexical diversity (mean factor length, TTR threshold "
                   "0.72, forward and backward averaged), per response")
    params = {"threshold": Param(float, gt=0, lt=1, default=0.72, doc="TTR factor threshold",
                                 expect="a number strictly between 0 and 1"),
              **_TOK_PARAMS}
    none_reason = "no response has a repeated word (MTLD is undefined without a repetition)"

    def fields(self) -> dict[str, Any]:
        return {"threshold": float(self.p["threshold"]), "dir": "bi"}

    def values(self, texts: list[str]) -> np.ndarray:
        thr = float(self.p["threshold"])
        vals = per_text(  # compiled (divmeter[fast]): the same floats
            texts, self.tok, lambda c: compiled().mtld_values(  # type: ignore[union-attr]
                c.ids, c.lengths, c.n_types, thr))
        if vals is None:
            vals = _mtld_values(TokenKeys.from_texts(texts, self.tok), thr)
        return vals


mtld = public_function(MTLD)


def _taaled_factors(tokens: Sequence[str], min_length: int, threshold: float
                    ) -> tuple[list[int], list[float]]:
    """The factors of one reading direction as TAALED's ``MTLDER`` forms them: a factor ends
    at the first token where its TTR is below ``threshold`` *and* it holds ``min_length``
    tokens or more (weight 1); the tokens left at the end (always, even when they would
    close a factor) are a partial factor of weight ``(1 - TTR) / (1 - threshold)``.
    Returns the factor lengths and weights."""
    lengths: list[int] = []
    weights: list[float] = []
    start, seen, last = 0, set(), len(tokens) - 1
    for x, t in enumerate(tokens):
        seen.add(t)
        n = x + 1 - start
        ttr = len(seen) / n
        if x == last:
            lengths.append(n)
            weights.append((1 - ttr) / (1 - threshold))
        elif ttr < threshold and n >= min_length:
            lengths.append(n)
            weights.append(1)
            start, seen = x + 1, set()
    return lengths, weights


@register
class MtldTaaled(ResponseMetric):
    """TAALED's MTLD (Kyle, Crossley & Jarvis 2021), per response, in its two estimates.

    Factors differ from :func:`mtld`'s (lexicalrichness's): a factor ends where its TTR falls
    *below* ``threshold`` and only once it holds at least ``min_length`` tokens (10, as in
    lexical-diversity); the tokens left at the end form a partial factor weighted
    ``(1 - TTR) / (1 - threshold)``. Both reading directions are factored.

    * ``estimate="mfl"`` (TAALED's ``mtld``): the mean factor length over the factors of both
      directions, each factor's length divided by its weight;
    * ``estimate="original"`` (TAALED's ``mtldo``, McCarthy & Jarvis's estimate): tokens /
      summed weights in each direction, the mean of the two.

    Equal to TAALED's values to the last bit (``tests/test_mtld_taaled.py``, frozen from
    TAALED 0.32 on its own sample and on Tevet & Berant's texts). Where TAALED returns 0 (a
    response without tokens, or without a repeated word, whose weights sum to 0) the value
    is undefined (``None``) with the reason.

    Args:
        responses: The response set.
        estimate: ``mfl`` (mean factor length, TAALED's ``mtld``) or ``original``
            (TAALED's ``mtldo``).
        threshold: The factor TTR threshold, strictly between 0 and 1 (0.72).
        min_length: The fewest tokens a factor holds (10).
        tokenizer: ``whitespace`` (default), ``word`` or ``tevet``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> text = "a b a c a d a e a f a g a h"  # each way: a factor of 10, a partial of 4
        >>> mtld_taaled([text]).value  # mean of 10, 4 / (0.25 / 0.28) = 4.48, 10 and 4.48
        7.24
    """

    name = "mtld-taaled"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{KYLE2021}; {MCCARTHY2010}"
    description = ("TAALED's MTLD: factors of at least 10 tokens ending at TTR < 0.72; mean "
                   "factor length (mtld) or tokens per factor (mtldo), per response")
    params = {"estimate": Param(str, choices=("mfl", "original"), default="mfl",
                                doc="mfl: mean factor length (TAALED's mtld); original: tokens "
                                "/ factors, both directions averaged (TAALED's mtldo)"),
              "threshold": Param(float, gt=0, lt=1, default=0.72, doc="TTR factor threshold",
                                 expect="a number strictly between 0 and 1"),
              "min_length": Param(int, ge=1, cap=10**7, default=10,
                                  doc="the fewest tokens of a factor"),
              **_TOK_PARAMS}
    none_reason = "no response has a repeated word (MTLD is undefined without a repetition)"

    def fields(self) -> dict[str, Any]:
        return {"est": self.p["estimate"], "threshold": float(self.p["threshold"]),
                "min": self.p["min_length"]}

    def values(self, texts: list[str]) -> list[float | None]:
        thr, mn, mfl = float(self.p["threshold"]), int(self.p["min_length"]), (
            self.p["estimate"] == "mfl")
        out: list[float | None] = []
        for toks in self.tok.many(texts):
            fl, fp = _taaled_factors(toks, mn, thr)
            bl, bp = _taaled_factors(toks[::-1], mn, thr)
            if mfl:
                sizes = [w / p for w, p in zip(fl + bl, fp + bp, strict=True) if p != 0]
                out.append(sum(sizes) / len(sizes) if sizes else None)
            elif sum(fp) == 0 or sum(bp) == 0:
                out.append(None)
            else:
                out.append(statistics.mean([sum(fl) / sum(fp), sum(bl) / sum(bp)]))
        return out


mtld_taaled = public_function(MtldTaaled)


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


@register
class HDD(ResponseMetric):
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

    name = "hdd"
    higher_is_more_diverse = True
    bounds = (0.0, 1.0)
    citation = f"{MCCARTHY2007}; {MCCARTHY2010}"
    description = ("HD-D: expected TTR of a random sample of `sample_size` tokens "
                   "(hypergeometric), per response")
    params = {"sample_size": Param(int, ge=1, cap=10**7, default=42, doc="tokens drawn"),
              **_TOK_PARAMS}

    def setup(self) -> None:
        super().setup()
        self.none_reason = (
            f"every response has fewer than sample_size={self.p['sample_size']} tokens")

    def fields(self) -> dict[str, Any]:
        return {"sample": self.p["sample_size"]}

    def values(self, texts: list[str]) -> np.ndarray:
        return _hdd_values(TokenKeys.from_texts(texts, self.tok), self.p["sample_size"])


hdd = public_function(HDD)


# --------------------------------------------------------------------------------------------
# length

UNITS = ("words", "bytes")


@register
class Length(ResponseMetric):
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

    name = "length"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{PATTR_PAPER} (response length in whitespace-separated words, Appendix B)"
    description = ("Response length in words or UTF-8 bytes (a length, not a diversity: used by "
                   "length-bias analyses)")
    params = {"unit": Param(str, choices=UNITS, default="words", doc="unit of length"),
              **_TOK_PARAMS}
    none_reason = "no response"

    def signature(self) -> str:
        if self.p["unit"] == "bytes":  # the raw text's bytes: no tokenizer applies
            return make_signature(self.name, unit="bytes")
        return super().signature()

    def fields(self) -> dict[str, Any]:
        return {"unit": self.p["unit"]}

    def values(self, texts: list[str]) -> list[float | None]:
        if self.p["unit"] == "bytes":
            return [float(len(t.encode("utf-8"))) for t in texts]
        return [float(len(t)) for t in self.tok.each(texts)]


length = public_function(Length)


# ============================================================================================
# lexical richness indices (issue 24)

GUIRAUD1954 = "Guiraud 1954, Les caractères statistiques du vocabulaire (Presses Universitaires " \
    "de France)"
CARROLL1964 = "Carroll 1964, Language and Thought (Prentice-Hall)"
HERDAN1960 = "Herdan 1960, Type-Token Mathematics: A Textbook of Mathematical Linguistics (Mouton)"
SOMERS1966 = ("Somers 1966, Statistical methods in literary analysis, in Leed (ed.), The Computer "
              "and Literary Style (Kent State University Press); 'Summer's S' in lexicalrichness")
DUGAST1978 = ("Dugast 1978, Sur quoi se fonde la notion d'étendue théorique du vocabulaire?, "
              "Le Français Moderne 46")
MAAS1972 = ("Maas 1972, Über den Zusammenhang zwischen Wortschatzumfang und Länge eines Textes, "
            "Zeitschrift für Literaturwissenschaft und Linguistik 2(8)")
YULE1944 = "Yule 1944, The Statistical Study of Literary Vocabulary (Cambridge University Press)"
HERDAN1955 = ("Herdan 1955, A new derivation and interpretation of Yule's characteristic K, "
              "Zeitschrift für angewandte Mathematik und Physik 6")
SIMPSON1949 = "Simpson 1949, Measurement of diversity, Nature 163"
JOHNSON1944 = ("Johnson 1944, Studies in language behavior: I. A program of research, "
               "Psychological Monographs 56(2)")
MCKEE2000 = ("McKee, Malvern & Richards 2000, Measuring vocabulary diversity using dedicated "
             "software, Literary and Linguistic Computing 15(3)")
KYLE2021 = ("Kyle, Crossley & Jarvis 2021, Assessing the validity of lexical diversity indices "
            "using direct judgements, Language Assessment Quarterly 18(2)")



# --------------------------------------------------------------------------------------------
# the indices' shared parts

#: The largest window, segment or factor length of a per-response index, in tokens (a
#: response is never longer; the values beyond are null at once, the work stays finite).
MAX_TOKENS = 10**7
#: The largest sample size of vocd-D, and the most tokens one response may draw in all
#: (samples x trials x the sum of the sizes; the default draws 204,000).
VOCD_MAX_SIZE = 10**5
VOCD_MAX_DRAWS = 10**9


def _is_base(b: Any) -> bool:
    return b == "e" or (isinstance(b, (int, float)) and not isinstance(b, bool)
                        and 1 < b < float("inf"))


def _base_param(doc: str, alternative: float | str, default: float | str) -> Param:
    """The ``base`` parameter; ``alternative`` is the other libraries' base (for the contract
    that every parameter changes the value or the signature)."""
    return Param(float, predicate=_is_base, expect="'e' or a number > 1", doc=doc,
                 alternative=alternative, default=default)


def _base_label(base: float | str) -> str:
    """``e``, ``10``, ``2``, ``2.5``: the same label for ``10`` and ``10.0``."""
    return "e" if base == "e" else f"{float(base):g}"


def _log(x: np.ndarray, base: float | str) -> np.ndarray:
    """``log_base(x)``: numpy's ``log`` for ``e``, ``log10`` for 10 (as the peers that use base
    10 call ``math.log10``), else ``log(x) / log(base)``."""
    if base == "e":
        return np.log(x)
    if float(base) == 10.0:
        return np.log10(x)
    if float(base) == 2.0:
        return np.log2(x)
    return np.log(x) / math.log(float(base))


# --------------------------------------------------------------------------------------------
# counts of every response: tokens N, types V, sum of squared type counts M2


def _tokens_types(texts: list[str], tok: Tokenizer) -> tuple[np.ndarray, np.ndarray]:
    """``(N, V)`` of every text (int64 arrays), from the shared :func:`_counts`."""
    n, v, _ = _counts(texts, tok)
    return n, v


@cache
def _jit(loop: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``loop`` (a plain-Python kernel) compiled by numba, once per process (and cached on
    disk across runs)."""
    from divmeter.inputs.text.intern import JIT_IMPORT_LOCK

    with JIT_IMPORT_LOCK:  # numba imported by one thread at a time (see the lock)
        from numba import njit

    fn: Callable[..., np.ndarray] = njit(cache=True, nogil=True)(loop)
    return fn


def _values(n: np.ndarray, ok: np.ndarray, formula: Callable[[], np.ndarray]) -> np.ndarray:
    """``formula()`` where ``ok``, NaN elsewhere (warnings of the undefined rows silenced)."""
    with np.errstate(all="ignore"):
        out = np.asarray(formula(), dtype=np.float64)
    return np.where(ok, out, np.nan)


class Index(ResponseMetric):
    """A lexical richness index of the table in the module docstring: a formula of each
    response's counts (or of its token keys), scored on every response of every set at once;
    the tokenizer's parameters come last, after the index's own; an index with a ``base``
    names it in its signature (``log:e``)."""

    def fields(self) -> dict[str, Any]:
        return {"log": _base_label(self.p["base"])} if "base" in self.p else {}


# --------------------------------------------------------------------------------------------
# indices of N and V


@register
class RootTTR(Index):
    """Root type-token ratio (Guiraud's R), per response: ``V / sqrt(N)``.

    As lexicalrichness's ``rttr``, TAALED's ``RTTR`` and lexical-diversity's ``root_ttr``.
    Undefined for a response without tokens (the last two return 0).

    Args:
        responses: The response set.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the responses with a token; ``per_response``.

    Example:
        >>> root_ttr(["a b a b", "x"]).details["per_response"]  # 2 / sqrt(4), 1 / 1
        [1.0, 1.0]
        >>> root_ttr(["a"]).signature
        'root-ttr|tok:whitespace|case:mixed|v:0.1.0'
    """

    name = "root-ttr"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{GUIRAUD1954} (Guiraud's R)"
    description = ("Root TTR (Guiraud's R): types / sqrt(tokens) of each response, mean over "
                   "the set")

    def values(self, texts: list[str]) -> np.ndarray:
        n, v = _tokens_types(texts, self.tok)
        return _values(n, n > 0, lambda: v / np.sqrt(n))


root_ttr = public_function(RootTTR)


@register
class CorrectedTTR(Index):
    """Corrected type-token ratio (Carroll's CTTR), per response: ``V / sqrt(2 N)``.

    As lexicalrichness's ``cttr``. Undefined for a response without tokens.

    Args:
        responses: The response set.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the responses with a token; ``per_response``.

    Example:
        >>> corrected_ttr(["a b a b a b a b"]).value  # 2 / sqrt(16)
        0.5
    """

    name = "corrected-ttr"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{CARROLL1964} (Carroll's CTTR)"
    description = ("Corrected TTR (Carroll's CTTR): types / sqrt(2 tokens) of each response, "
                   "mean over the set")

    def values(self, texts: list[str]) -> np.ndarray:
        n, v = _tokens_types(texts, self.tok)
        return _values(n, n > 0, lambda: v / np.sqrt(2 * n))


corrected_ttr = public_function(CorrectedTTR)


@register
class LogTTR(Index):
    """Log type-token ratio (Herdan's C), per response: ``log V / log N``.

    The ratio does not depend on the log base (natural logs here; lexicalrichness's ``Herdan``
    uses ``log``, TAALED's ``LTTR`` and lexical-diversity's ``log_ttr`` ``log10``: equal to
    rounding). Undefined for a response with fewer than two tokens (``log 1 = 0``; TAALED and
    lexical-diversity return 0, lexicalrichness raises).

    Args:
        responses: The response set.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the responses with two or more tokens; ``per_response``.

    Example:
        >>> log_ttr(["a b a b", "x"]).details["per_response"]  # log 2 / log 4
        [0.5, None]
    """

    name = "log-ttr"
    higher_is_more_diverse = True
    bounds = (0.0, 1.0)
    citation = f"{HERDAN1960} (Herdan's C)"
    description = ("Log TTR (Herdan's C): log types / log tokens of each response, mean over "
                   "the set")
    none_reason = _NO_TWO

    def values(self, texts: list[str]) -> np.ndarray:
        n, v = _tokens_types(texts, self.tok)
        return _values(n, n > 1, lambda: np.log(v) / np.log(n))


log_ttr = public_function(LogTTR)


@register
class SummerS(Index):
    """Summer's S (Somers 1966), per response: ``log(log V) / log(log N)``.

    The outer logarithms cancel in the ratio; the inner ones do not: ``base="e"`` is
    lexicalrichness's ``Summer``. Undefined for a response with fewer than two types
    (``log log 1`` is infinite) and where ``log log N = 0`` (``N`` equal to the base).

    Args:
        responses: The response set.
        base: Base of the inner logarithms: ``"e"`` (default) or a number > 1.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> r = summer_s(["a b c d e f g h i a"])  # ln(ln 9) / ln(ln 10)
        >>> round(r.value, 6), r.signature
        (0.943842, 'summer-s|log:e|tok:whitespace|case:mixed|v:0.1.0')
    """

    name = "summer-s"
    higher_is_more_diverse = True
    bounds = (None, None)
    citation = SOMERS1966
    description = ("Summer's S: log(log types) / log(log tokens) of each response, mean over "
                   "the set")
    params = {"base": _base_param("base of the inner logarithm (e: lexicalrichness)", 10, "e"),
              **_TOK_PARAMS}

    def setup(self) -> None:
        super().setup()
        base = self.p["base"]
        self.none_reason = "no response has two or more types" + (
            "" if base == "e" else
            f" (and a token count other than the base, {_base_label(base)})")

    def values(self, texts: list[str]) -> np.ndarray:
        base = self.p["base"]
        n, v = _tokens_types(texts, self.tok)
        with np.errstate(all="ignore"):
            lln = np.log(_log(n, base))
        return _values(n, (v > 1) & (lln != 0), lambda: np.log(_log(v, base)) / lln)


summer_s = public_function(SummerS)


@register
class DugastU(Index):
    """Dugast's U, per response: ``(log N)^2 / (log N - log V)``.

    Proportional to ``1 / log(base)``; ``base="e"`` is lexicalrichness's ``Dugast``.
    Undefined for a response without a repeated word (``V = N``: lexicalrichness raises).

    Args:
        responses: The response set.
        base: Logarithm base: ``"e"`` (default) or a number > 1.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> dugast_u(["a a a a", "a b"], base=2).details["per_response"]  # 2^2 / (2 - 0)
        [2.0, None]
    """

    name = "dugast-u"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = DUGAST1978
    description = ("Dugast's U: (log tokens)^2 / (log tokens - log types) of each response, "
                   "mean over the set")
    params = {"base": _base_param("logarithm base (e: lexicalrichness)", 10, "e"),
              **_TOK_PARAMS}
    none_reason = _NO_REPEAT

    def values(self, texts: list[str]) -> np.ndarray:
        n, v = _tokens_types(texts, self.tok)
        with np.errstate(all="ignore"):
            ln, lv = _log(n, self.p["base"]), _log(v, self.p["base"])
        return _values(n, (n > 0) & (v < n), lambda: ln ** 2 / (ln - lv))


dugast_u = public_function(DugastU)


@register
class MaasA2(Index):
    """Maas's a^2, per response: ``(log N - log V) / (log N)^2``; lower is more diverse.

    Proportional to ``log(base)``: ``base=10`` (default) is TAALED's ``MAAS`` and
    lexical-diversity's ``maas_ttr``; ``base="e"`` is lexicalrichness's ``Maas``. Undefined for
    a response with fewer than two tokens (TAALED and lexical-diversity return 0).

    Args:
        responses: The response set.
        base: Logarithm base: 10 (default), ``"e"`` or any number > 1.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> maas_a2(["a a a a a a a a a a"]).value  # (1 - 0) / 1^2
        1.0
        >>> maas_a2(["a b"], base="e").signature
        'maas-a2|log:e|tok:whitespace|case:mixed|v:0.1.0'
    """

    name = "maas-a2"
    higher_is_more_diverse = False
    bounds = (0.0, None)
    citation = f"{MAAS1972} (a^2)"
    description = ("Maas a^2: (log tokens - log types) / (log tokens)^2 of each response "
                   "(lower = more diverse), mean over the set")
    params = {"base": _base_param("logarithm base (10: TAALED, lexical-diversity; e: "
                                  "lexicalrichness)", "e", 10),
              **_TOK_PARAMS}
    none_reason = _NO_TWO

    def values(self, texts: list[str]) -> np.ndarray:
        n, v = _tokens_types(texts, self.tok)
        with np.errstate(all="ignore"):
            ln, lv = _log(n, self.p["base"]), _log(v, self.p["base"])
        return _values(n, n > 1, lambda: (ln - lv) / ln ** 2)


maas_a2 = public_function(MaasA2)


@register
class MaasLogV0(Index):
    """Maas's ``log V0``, per response: ``log V / sqrt(1 - (log V / log N)^2)``.

    The ratio under the root does not depend on the base; the numerator does (``base=10``,
    the default, is Maas's common logarithm; ``base="e"`` is koRpus's ``lgeV0``). None of the
    three Python peers computes it. Undefined for a response without a repeated word
    (``V = N``: the root is 0).

    Args:
        responses: The response set.
        base: Logarithm base of ``log V``: 10 (default), ``"e"`` or any number > 1.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> r = maas_log_v0([" ".join(["a", "b"] * 50)])  # log10 2 / sqrt(1 - (ln 2/ln 100)^2)
        >>> round(r.value, 6)
        0.304499
    """

    name = "maas-log-v0"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{MAAS1972} (log V0)"
    description = ("Maas's log V0: log types / sqrt(1 - (log types / log tokens)^2) of each "
                   "response, mean over the set")
    params = {"base": _base_param("logarithm base of the numerator log V", "e", 10),
              **_TOK_PARAMS}
    none_reason = _NO_REPEAT

    def values(self, texts: list[str]) -> np.ndarray:
        n, v = _tokens_types(texts, self.tok)
        base = self.p["base"]
        return _values(n, (n > 0) & (v < n),
                       lambda: _log(v, base) / np.sqrt(1.0 - (np.log(v) / np.log(n)) ** 2))


maas_log_v0 = public_function(MaasLogV0)


# --------------------------------------------------------------------------------------------
# indices of the frequency spectrum


@register
class YuleK(Index):
    """Yule's characteristic K, per response: ``10^4 (M2 - N) / N^2`` with ``M2`` the sum of the
    squared type counts; lower is more diverse.

    lexicalrichness's ``yulek`` computes ``10^4 (M2 / N^2 - 1 / N)``: equal to rounding; here
    the numerator is an exact integer (0 exactly for a response without repetition).

    Args:
        responses: The response set.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the responses with a token; ``per_response``.

    Example:
        >>> yule_k(["a a b c", "a b"]).details["per_response"]  # 10^4 (6 - 4) / 16
        [1250.0, 0.0]
    """

    name = "yule-k"
    higher_is_more_diverse = False
    bounds = (0.0, 10000.0)
    citation = f"{YULE1944} (characteristic K)"
    description = ("Yule's K: 10^4 (sum of squared type counts - tokens) / tokens^2 of each "
                   "response (lower = more diverse), mean over the set")

    def values(self, texts: list[str]) -> np.ndarray:
        n, _, m2 = _counts(texts, self.tok)
        return _values(n, n > 0, lambda: 1e4 * (m2 - n) / (n.astype(np.float64) ** 2))


yule_k = public_function(YuleK)


@register
class YuleI(Index):
    """Yule's I, per response: ``V^2 / (M2 - V)``, as lexicalrichness's ``yulei``.

    Undefined for a response without a repeated word (``M2 = V``; lexicalrichness returns
    ``inf``).

    Args:
        responses: The response set.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> yule_i(["a a b c", "a b"]).details["per_response"]  # 9 / (6 - 3)
        [3.0, None]
    """

    name = "yule-i"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{YULE1944} (characteristic I)"
    description = ("Yule's I: types^2 / (sum of squared type counts - types) of each response, "
                   "mean over the set")
    none_reason = _NO_REPEAT

    def values(self, texts: list[str]) -> np.ndarray:
        n, v, m2 = _counts(texts, self.tok)
        return _values(n, m2 > v, lambda: v.astype(np.float64) ** 2 / (m2 - v))


yule_i = public_function(YuleI)


@register
class HerdanVm(Index):
    """Herdan's Vm, per response: ``sqrt(M2 / N^2 - 1 / V)``; lower is more diverse.

    The radicand is computed as the exact integer ratio ``(V M2 - N^2) / (V N^2)``, so a
    response whose types all have the same count gets exactly 0; lexicalrichness's
    ``herdanvm`` subtracts the two floats and gets rounding noise there (``~1e-8``, or NaN
    when the noise is negative). Elsewhere the two agree to rounding.

    Args:
        responses: The response set.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the responses with a token; ``per_response``.

    Example:
        >>> herdan_vm(["a a b c", "a b"]).details["per_response"]  # sqrt(6/16 - 1/3); 0
        [0.2041241452319315, 0.0]
    """

    name = "herdan-vm"
    higher_is_more_diverse = False
    bounds = (0.0, 1.0)
    citation = f"{HERDAN1955} (Vm)"
    description = ("Herdan's Vm: sqrt(sum of squared type counts / tokens^2 - 1 / types) of "
                   "each response (lower = more diverse), mean over the set")

    def values(self, texts: list[str]) -> np.ndarray:
        n, v, m2 = _counts(texts, self.tok)
        nf, vf = n.astype(np.float64), v.astype(np.float64)
        # V M2 - N^2 >= 0 (Cauchy-Schwarz), exact in int64 while N^3 < 2**63
        small = n < 2_000_000
        num = np.where(small, (v * m2 - n * n).astype(np.float64), vf * m2 - nf * nf)
        return _values(n, n > 0, lambda: np.sqrt(np.maximum(num, 0.0) / (vf * nf * nf)))


herdan_vm = public_function(HerdanVm)


@register
class SimpsonD(Index):
    """Simpson's D, per response: ``sum_t k_t (k_t - 1) / (N (N - 1))``, the probability that
    two tokens drawn without replacement are of the same type; lower is more diverse. As
    lexicalrichness's ``simpsond``; undefined for a response with fewer than two tokens.

    Args:
        responses: The response set.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the responses with two or more tokens; ``per_response``.

    Example:
        >>> simpson_d(["a a b c", "a"]).details["per_response"]  # 2 / 12
        [0.16666666666666666, None]
    """

    name = "simpson-d"
    higher_is_more_diverse = False
    bounds = (0.0, 1.0)
    citation = SIMPSON1949
    description = ("Simpson's D: the chance that two tokens drawn without replacement are the "
                   "same type, per response (lower = more diverse), mean over the set")
    none_reason = _NO_TWO

    def values(self, texts: list[str]) -> np.ndarray:
        n, _, m2 = _counts(texts, self.tok)
        return _values(n, n > 1, lambda: (m2 - n) / (n * (n - 1)).astype(np.float64))


simpson_d = public_function(SimpsonD)


# --------------------------------------------------------------------------------------------
# MSTTR

#: MSTTR's segment conventions: which segments of ``segment`` tokens are averaged.
CONVENTIONS = ("drop-remainder", "drop-last", "keep-remainder")


def _msttr_values(enc: TokenKeys, width: int, convention: str) -> np.ndarray:
    """MSTTR of every response (NaN where no segment is kept).

    Token ``j`` is the first of its type in its segment iff its previous occurrence lies
    before the segment's start; the types of every segment of every response are one
    ``bincount``, and each response's kept segments are averaged in order (a sequential sum,
    as the peers' loops add them)."""
    n = enc.lengths.astype(np.int64)
    n_docs = enc.n_docs
    start = enc.starts[enc.doc]
    seg = (np.arange(enc.n_tokens, dtype=np.int64) - start) // width
    n_seg = -(-n // width)
    seg_base = np.cumsum(n_seg) - n_seg
    total = int(n_seg.sum())
    flat = seg_base[enc.doc] + seg
    first = enc.prev() < start + seg * width
    types = np.bincount(flat, weights=first, minlength=total)
    lens = np.bincount(flat, minlength=total)
    seg_doc = np.repeat(np.arange(n_docs, dtype=np.int64), n_seg)
    seg_idx = np.arange(total, dtype=np.int64) - seg_base[seg_doc]
    if convention == "drop-remainder":  # full segments; a response shorter than one: itself
        keep = seg_idx < np.maximum(n // width, 1)[seg_doc]
    elif convention == "drop-last":
        keep = seg_idx < (n_seg - 1)[seg_doc]
    else:
        keep = np.ones(total, dtype=bool)
    with np.errstate(all="ignore"):
        sums = np.bincount(seg_doc[keep], weights=(types / lens)[keep], minlength=n_docs)
        count = np.bincount(seg_doc[keep], minlength=n_docs)
        return np.where(count > 0, sums / count, np.nan)


def _msttr_loop(ids: np.ndarray, lengths: np.ndarray, n_types: int, width: int,
                convention: int) -> np.ndarray:
    """:func:`_msttr_values` over the compiled path's token ids (``convention``: the index in
    :data:`CONVENTIONS`): types per segment by a stamp per type, the same float operations in
    the same order. Plain Python, compiled with numba by :func:`_msttr_compiled`."""
    out = np.empty(lengths.shape[0])
    stamp = np.zeros(max(n_types, 1), dtype=np.int64)
    tick = 0
    pos = 0
    for d in range(lengths.shape[0]):
        n = lengths[d]
        n_seg = (n + width - 1) // width
        if convention == 0:
            keep = max(n // width, 1) if n > 0 else 0
        elif convention == 1:
            keep = n_seg - 1
        else:
            keep = n_seg
        total = 0.0
        for g in range(keep):
            a = pos + g * width
            b = min(a + width, pos + n)
            tick += 1
            types = 0
            for j in range(a, b):  # without a branch (new or not is a coin toss)
                x = ids[j]
                types += stamp[x] != tick
                stamp[x] = tick
            total += types / (b - a)
        out[d] = total / keep if keep > 0 else np.nan
        pos += n
    return out


def _msttr_compiled() -> Callable[..., np.ndarray]:
    return _jit(_msttr_loop)


@register
class MSTTR(Index):
    """Mean segmental type-token ratio (Johnson 1944), per response.

    The response is cut into consecutive segments of ``segment`` tokens from its start; the
    value is the mean TTR of the segments that count, by ``convention``:

    * ``drop-remainder`` (default): the full segments; a response shorter than one segment
      gets its own TTR. TAALED's ``MSTTR`` and lexical-diversity's ``msttr`` (whose default
      segment is 50).
    * ``drop-last``: every segment but the last one, whether the last is partial or full;
      undefined when there is only one. lexicalrichness's ``msttr(discard=True)`` (default
      segment 100; it refuses a response of ``segment`` tokens or fewer).
    * ``keep-remainder``: every segment, the partial last one included. lexicalrichness's
      ``msttr(discard=False)``, except that a response of at most ``segment`` tokens gets its
      own TTR here where lexicalrichness refuses it.

    Args:
        responses: The response set.
        segment: Segment length in tokens (>= 1; default 50).
        convention: ``drop-remainder``, ``drop-last`` or ``keep-remainder``.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> r = msttr(["a a b b c"], segment=2)  # segments aa, bb (c dropped): 1/2 each
        >>> r.value, r.signature
        (0.5, 'msttr|segment:2|convention:drop-remainder|tok:whitespace|case:mixed|v:0.1.0')
        >>> msttr(["a a b b c"], segment=2, convention="keep-remainder").value  # + c: 1
        0.6666666666666666
    """

    name = "msttr"
    higher_is_more_diverse = True
    bounds = (0.0, 1.0)
    citation = JOHNSON1944
    description = ("Mean segmental TTR: mean TTR of consecutive segments of `segment` tokens, "
                   "per response, mean over the set")
    params = {"segment": Param(int, ge=1, cap=MAX_TOKENS, default=50,
                             doc="segment length in tokens"),
              "convention": Param(str, choices=CONVENTIONS, default="drop-remainder",
                                  doc="which segments count (drop-remainder: TAALED, "
                                  "lexical-diversity; drop-last, keep-remainder: "
                                  "lexicalrichness discard=True / False)"),
              **_TOK_PARAMS}

    def setup(self) -> None:
        super().setup()
        if self.p["convention"] == "drop-last":
            self.none_reason = f"no response has more than segment={self.p['segment']} tokens"

    def fields(self) -> dict[str, Any]:
        return {"segment": self.p["segment"], "convention": self.p["convention"]}

    def values(self, texts: list[str]) -> np.ndarray:
        segment, convention = self.p["segment"], self.p["convention"]
        code = CONVENTIONS.index(convention)
        vals = per_text(texts, self.tok, lambda c: _msttr_compiled()(  # compiled: same floats
            c.ids, c.lengths, c.n_types, segment, code), local="ids")
        if vals is None:
            vals = _msttr_values(TokenKeys.from_texts(texts, self.tok), segment, convention)
        return vals


msttr = public_function(MSTTR)


# --------------------------------------------------------------------------------------------
# MTLD moving averages

FACTOR_RULES = ("lt", "le")


def _walk_factors(prev: np.ndarray, x: np.ndarray, limit: np.ndarray, threshold: float,
                  min_length: int, strict: bool) -> np.ndarray:
    """The length of the first factor of every walk (0 when none ends before ``limit``).

    Walk ``w`` reads positions ``x[w], x[w] + 1, ...`` (exclusive bound ``limit[w]``) of
    sequences whose ``prev`` gives each position's previous occurrence of its type (anything
    before the sequence's start when there is none); the walk's type count grows at position
    ``e`` iff ``prev[e] < x[w]``. A factor ends at the first length ``L >= min_length`` whose
    TTR ``types / L`` (a float division, as the peers compute it) is below ``threshold``
    (``strict``) or at most ``threshold``. Every walk advances one token per round, so all
    active walks share ``L``: one vector step per round, the work the sum of the walks'
    lengths."""
    out = np.zeros(x.shape[0], dtype=np.int64)
    for a in range(0, x.shape[0], _WALK_BLOCK):  # blocks that stay in cache
        b = min(a + _WALK_BLOCK, x.shape[0])
        out[a:b] = _walk_block(prev, x[a:b], limit[a:b], threshold, min_length, strict)
    return out


#: Walks advanced together by :func:`_walk_factors` (their arrays stay in the CPU cache).
_WALK_BLOCK = 1 << 14


def _walk_block(prev: np.ndarray, x: np.ndarray, limit: np.ndarray, threshold: float,
                min_length: int, strict: bool) -> np.ndarray:
    out = np.zeros(x.shape[0], dtype=np.int64)
    idx = np.arange(x.shape[0], dtype=np.int64)
    xs, lim = x.copy(), limit.copy()
    types = np.zeros(x.shape[0], dtype=np.int64)
    length = 0
    while idx.size:
        pos = xs + length
        types += prev[pos] < xs
        length += 1
        keep = pos + 1 < lim
        if length >= min_length:
            ratio = types / length
            done = ratio < threshold if strict else ratio <= threshold
            out[idx[done]] = length
            keep &= ~done
        if not keep.all():
            idx, xs, lim, types = idx[keep], xs[keep], lim[keep], types[keep]
    return out


def _mean_factor(lengths: np.ndarray, doc: np.ndarray, n_docs: int) -> np.ndarray:
    """Mean of the found factors' lengths per response (an exact integer sum over an integer
    count, as the peers divide them), NaN without a factor."""
    total = np.bincount(doc, weights=lengths, minlength=n_docs)
    count = np.bincount(doc, weights=lengths > 0, minlength=n_docs)
    with np.errstate(all="ignore"):
        return np.where(count > 0, total / count, np.nan)


def _first_last(enc: TokenKeys) -> tuple[np.ndarray, np.ndarray]:
    """The global index of the first and of the last occurrence of each token's type in its
    response (from the grouping of the keys: equal keys in position order)."""
    n_tok = enc.n_tokens
    if not n_tok:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order, same = enc.sorted_keys()
    d = enc.doc[order]
    brk = np.ones(n_tok, dtype=bool)
    brk[1:] = ~same | (d[1:] != d[:-1])
    group = np.cumsum(brk) - 1
    ends = np.append(np.flatnonzero(brk)[1:], n_tok) - 1
    first, last = np.empty(n_tok, dtype=np.int64), np.empty(n_tok, dtype=np.int64)
    first[order] = order[brk][group]
    last[order] = order[ends][group]
    return first, last


def _mtld_ma_bi_values(enc: TokenKeys, threshold: float, min_length: int,
                       strict: bool) -> np.ndarray:
    prev, nxt = enc.neighbours()
    x = np.arange(enc.n_tokens, dtype=np.int64)
    limit = enc.ends[enc.doc]
    fwd = _walk_factors(prev, x, limit, threshold, min_length, strict)
    # the reversed response in the same index range: position q mirrors to start + end - 1 - q
    mirror = (enc.starts + enc.ends - 1)[enc.doc]
    prev_rev = np.empty_like(prev)
    prev_rev[mirror - x] = mirror - nxt  # no next occurrence (end) -> start - 1
    bwd = _walk_factors(prev_rev, x, limit, threshold, min_length, strict)
    # a window with a factor is found from both ends: both directions have one or neither
    return (_mean_factor(fwd, enc.doc, enc.n_docs) + _mean_factor(bwd, enc.doc, enc.n_docs)) / 2


def _mtld_ma_wrap_values(enc: TokenKeys, threshold: float, min_length: int,
                         strict: bool) -> np.ndarray:
    """Walks from every token of the response written twice (the text followed by itself):
    response ``d`` of ``n`` tokens starting at ``s`` becomes positions ``2s .. 2s + 2n``. In
    the second copy a type's previous occurrence is its previous one there, else its last one
    in the first copy."""
    prev = enc.prev()
    _, last = _first_last(enc)
    s, n = enc.starts[enc.doc], enc.lengths[enc.doc]
    g = np.arange(enc.n_tokens, dtype=np.int64)
    has = prev >= s
    doubled = np.empty(2 * enc.n_tokens, dtype=np.int64)
    doubled[g + s] = np.where(has, prev + s, 2 * s - 1)
    doubled[g + s + n] = np.where(has, prev + s + n, last + s)
    lengths = _walk_factors(doubled, g + s, 2 * (s + n), threshold, min_length, strict)
    return _mean_factor(lengths, enc.doc, enc.n_docs)


def _mtld_ma_loop(ids: np.ndarray, lengths: np.ndarray, n_types: int, threshold: float,
                  min_length: int, strict: bool, wrap: bool) -> np.ndarray:
    """:func:`_mtld_ma_bi_values` (``wrap``: :func:`_mtld_ma_wrap_values`) over the compiled
    path's token ids: each walk counts its types with a stamp per type; the factor lengths are
    integers and their mean the same integer sum over the same count, so the values are the
    numpy path's, bit for bit. Plain Python, compiled with numba by :func:`_mtld_ma_compiled`."""
    out = np.empty(lengths.shape[0])
    stamp = np.zeros(max(n_types, 1), dtype=np.int64)
    tick = 0
    pos = 0
    for d in range(lengths.shape[0]):
        n = lengths[d]
        mean = 0.0
        for direction in range(1 if wrap else 2):
            total = 0.0
            count = 0
            for x in range(n):
                tick += 1
                types = 0
                limit = 2 * n - x if wrap else n - x
                for length in range(1, limit + 1):
                    i = (x + length - 1) % n
                    tok = ids[pos + (i if direction == 0 else n - 1 - i)]
                    types += stamp[tok] != tick  # (no branch: new or not is a coin toss)
                    stamp[tok] = tick
                    if length >= min_length:
                        ratio = types / length
                        if ratio < threshold if strict else ratio <= threshold:
                            total += length
                            count += 1
                            break
            if count == 0:
                mean = np.nan
                break
            mean += total / count
        out[d] = mean if wrap else mean / 2
        pos += n
    return out


def _mtld_ma_compiled() -> Callable[..., np.ndarray]:
    return _jit(_mtld_ma_loop)


class MovingMTLD(Index):
    """The moving-average MTLD variants: a walk from every token until a factor ends
    (:attr:`walks`: the numpy walks; :attr:`wrap`: the compiled loop's variant)."""

    params = {
        "threshold": Param(float, gt=0, lt=1, default=0.72, doc="TTR a factor falls below",
                           expect="a number strictly between 0 and 1"),
        "factor": Param(str, choices=FACTOR_RULES, default="lt",
                        doc="lt: a factor ends at TTR < threshold (lexical-diversity, TAALED); "
                        "le: at TTR <= threshold (lexicalrichness's MTLD)"),
        "min_length": Param(int, ge=1, cap=MAX_TOKENS, default=10,
                            doc="tokens a factor needs at least (lexical-diversity: 10)"),
        **_TOK_PARAMS,
    }
    wrap: ClassVar[bool]
    #: ``(keys, threshold, min_length, strict) -> values``: the variant's numpy path.
    walks: ClassVar[Callable[..., np.ndarray]]

    def setup(self) -> None:
        super().setup()
        self.none_reason = (f"no response has a factor (a stretch of at least "
                            f"{self.p['min_length']} tokens whose TTR falls to the threshold)")

    def fields(self) -> dict[str, Any]:
        return {"threshold": float(self.p["threshold"]), "factor": self.p["factor"],
                "min": self.p["min_length"]}

    def values(self, texts: list[str]) -> np.ndarray:
        """The values of every text: the compiled loop (the same floats), else :attr:`walks`
        on the token keys."""
        threshold, min_length = float(self.p["threshold"]), self.p["min_length"]
        strict = self.p["factor"] == "lt"
        vals = per_text(texts, self.tok, lambda c: _mtld_ma_compiled()(
            c.ids, c.lengths, c.n_types, threshold, min_length, strict, self.wrap))
        if vals is None:
            vals = self.walks(TokenKeys.from_texts(texts, self.tok), threshold, min_length,
                              strict)
        return vals


@register
class MTLDMABi(MovingMTLD):
    """Moving-average MTLD, bidirectional (MTLD-MA-Bi), per response.

    From every token a factor is grown one token at a time until its TTR falls below
    ``threshold`` with at least ``min_length`` tokens (``factor="lt"``; ``"le"``: TTR at most
    the threshold); a start whose factor does not end before the text does is not counted
    (no partial factors). The value is the mean factor length, averaged over the forward and
    the backward (reversed text) reading. The defaults are lexical-diversity's
    ``mtld_ma_bid``.

    Undefined (``None``) for a response with no factor in it (lexical-diversity returns 0).

    Args:
        responses: The response set.
        threshold: TTR threshold, strictly between 0 and 1 (0.72).
        factor: ``lt`` (TTR < threshold, default) or ``le`` (TTR <= threshold).
        min_length: Fewest tokens of a factor (>= 1; default 10).
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> r = mtld_ma_bi(["a b a b c"], min_length=1)  # forward: aba, bab -> 3
        >>> r.value  # backward (c b a b a): cbaba, bab, aba -> 11/3; (3 + 11/3) / 2
        3.333333333333333
        >>> r.signature
        'mtld-ma-bi|threshold:0.72|factor:lt|min:1|tok:whitespace|case:mixed|v:0.1.0'
    """

    name = "mtld-ma-bi"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{MCCARTHY2010} (MTLD; moving-average form); {KYLE2021} (MTLD-MA-Bi)"
    description = ("Moving-average MTLD, bidirectional: mean length of the factor that starts "
                   "at each token, forward and backward, per response")

    wrap = False
    walks = staticmethod(_mtld_ma_bi_values)


mtld_ma_bi = public_function(MTLDMABi)


@register
class MTLDMAWrap(MovingMTLD):
    """Moving-average MTLD with wrap-around (MTLD-MA-Wrap), per response.

    As :func:`mtld_ma_bi`, forward only, but a factor that reaches the end of the text goes on
    from its start (the text is read as itself followed by itself), so every start has a
    factor unless even the doubled text has none. The defaults are lexical-diversity's
    ``mtld_ma_wrap``. Undefined (``None``) for a response with no factor (lexical-diversity
    returns 0).

    Args:
        responses: The response set.
        threshold: TTR threshold, strictly between 0 and 1 (0.72).
        factor: ``lt`` (TTR < threshold, default) or ``le`` (TTR <= threshold).
        min_length: Fewest tokens of a factor (>= 1; default 10).
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> mtld_ma_wrap(["a b c"], min_length=1).value  # abcab, bcabc, cabca: 3/5 each
        5.0
    """

    name = "mtld-ma-wrap"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{MCCARTHY2010} (MTLD; moving-average form); {KYLE2021} (MTLD-MA-Wrap)"
    description = ("Moving-average MTLD, wrap-around: mean length of the factor that starts at "
                   "each token, reading on from the text's start at its end, per response")

    wrap = True
    walks = staticmethod(_mtld_ma_wrap_values)


mtld_ma_wrap = public_function(MTLDMAWrap)


# --------------------------------------------------------------------------------------------
# vocd-D

SAMPLINGS = ("random", "expected")

# SplitMix64 (Steele, Lea & Flood 2014) as a counter-based generator: draw ``c`` of a
# response with key ``k`` is ``mix(k + (c + 1) * GAMMA)``. Any draw can be computed on its own,
# so the numpy path (whole arrays of draws) and the compiled loop (one draw at a time) get the
# same numbers, and a response's stream depends on nothing but its key.
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_UNIT = 2.0 ** -53


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    out: np.ndarray = z ^ (z >> _S31)
    return out


def _vocd_keys(local: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
               seed: int) -> np.ndarray:
    """Each response's stream key: BLAKE2b of the seed and of the response's token pattern
    (each token's type as the position of its first occurrence), so that equal token
    sequences (up to renaming of types) get the same draws whatever batch they are in."""
    keys = np.empty(starts.shape[0], dtype=np.uint64)
    seed_bytes = int(seed).to_bytes(16, "little")
    for r, (a, n) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        h = hashlib.blake2b(local[a:a + n].astype("<i8").tobytes(), digest_size=8,
                            key=seed_bytes, person=b"divmeter-vocd")
        keys[r] = int.from_bytes(h.digest(), "little")
    return keys


def _vocd_counts_loop(local: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                      keys: np.ndarray, min_size: int, max_size: int, samples: int,
                      trials: int) -> np.ndarray:
    """Types summed over the ``samples`` samples of each (response, trial, size): a partial
    Fisher-Yates shuffle per sample (step ``j`` swaps position ``j`` with ``j + floor(u (N -
    j))``, ``u`` the sample's draw ``j``), undone afterwards, types counted with a stamp per
    type. Plain Python: compiled with numba by :func:`_vocd_compiled` (the reference for the
    numpy path, :func:`_vocd_counts_numpy`)."""
    n_sizes = max_size - min_size + 1
    out = np.zeros((starts.shape[0], trials, n_sizes), dtype=np.int64)
    longest = 1
    for r in range(starts.shape[0]):
        longest = max(longest, lengths[r])
    scratch = np.empty(longest, dtype=np.int64)
    stamp = np.zeros(longest, dtype=np.int64)
    picks = np.empty(max_size, dtype=np.int64)
    tick = 0
    for r in range(starts.shape[0]):
        n_tok = lengths[r]
        if n_tok < max_size:
            continue
        for i in range(n_tok):
            scratch[i] = local[starts[r] + i]
        key = keys[r]
        for t in range(trials):
            for s in range(n_sizes):
                size = min_size + s
                total = 0
                for m in range(samples):
                    row = (t * n_sizes + s) * samples + m
                    tick += 1
                    for j in range(size):
                        z = key + np.uint64(row * max_size + j + 1) * _GAMMA
                        z = (z ^ (z >> _S30)) * _MIX1
                        z = (z ^ (z >> _S27)) * _MIX2
                        z = z ^ (z >> _S31)
                        u = np.float64(z >> _S11) * _UNIT
                        pick = j + np.int64(u * np.float64(n_tok - j))
                        picks[j] = pick
                        a = scratch[pick]
                        scratch[pick] = scratch[j]
                        scratch[j] = a
                        total += stamp[a] != tick  # (no branch)
                        stamp[a] = tick
                    for j in range(size - 1, -1, -1):
                        a = scratch[picks[j]]
                        scratch[picks[j]] = scratch[j]
                        scratch[j] = a
                out[r, t, s] = total
    return out


#: Work (token draws) from which vocd-D's sampling loads the compiled loop even when nothing
#: else has loaded numba yet: about 50 responses at the default settings.
_VOCD_JIT_DRAWS = 10_000_000


@cache
def _vocd_compiled() -> Callable[..., np.ndarray] | None:
    """:func:`_vocd_counts_loop` compiled by numba (cached on disk), or ``None`` without
    numba (or with ``DIVMETER_NO_JIT=1``)."""
    return None if compiled() is None else _jit(_vocd_counts_loop)


#: Row blocks of the numpy sampling path hold at most this many scratch entries.
_VOCD_BLOCK = 1 << 22


def _vocd_counts_numpy(local: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                       keys: np.ndarray, min_size: int, max_size: int, samples: int,
                       trials: int) -> np.ndarray:
    """:func:`_vocd_counts_loop` in numpy: the same draws, the same shuffles, the same counts.

    Rows (one per sample) of every response are shuffled together, a block at a time: each
    of the ``max_size`` steps is one vector swap over the block (rows of smaller samples keep
    swapping past their size, which never changes their first ``size`` positions), then each
    row's first ``size`` entries are sorted and their distinct values counted."""
    n_sizes = max_size - min_size + 1
    per_resp = trials * n_sizes * samples
    out = np.zeros(starts.shape[0] * trials * n_sizes, dtype=np.int64)
    live = np.flatnonzero(lengths >= max_size)
    i = 0
    while i < live.size:
        # a block: responses live[i:k] (or part of one response's rows when it is long)
        width = int(lengths[live[i]])
        k = i + 1
        while (k < live.size and (k - i + 1) * per_resp * max(width, int(lengths[live[k]]))
               <= _VOCD_BLOCK):
            width = max(width, int(lengths[live[k]]))
            k += 1
        resp = live[i:k]
        rows_all = np.arange(per_resp, dtype=np.int64)
        step = max(1, _VOCD_BLOCK // width) if k == i + 1 else per_resp
        for r0 in range(0, per_resp, step):
            row = np.tile(rows_all[r0:r0 + step], resp.size)
            which = np.repeat(resp, min(step, per_resp - r0))
            out_idx = which * (trials * n_sizes) + row // samples
            size = min_size + (row // samples) % n_sizes
            counts = _vocd_block(local, starts[which], lengths[which], keys[which], row, size,
                                 width, max_size)
            out += np.bincount(out_idx, weights=counts, minlength=out.size).astype(np.int64)
        i = k
    return out.reshape(starts.shape[0], trials, n_sizes)


def _vocd_block(local: np.ndarray, start: np.ndarray, n_tok: np.ndarray, key: np.ndarray,
                row: np.ndarray, size: np.ndarray, width: int, max_size: int) -> np.ndarray:
    """Types in each row's sample (see :func:`_vocd_counts_numpy`)."""
    n_rows = row.shape[0]
    cols = np.arange(width, dtype=np.int64)
    inside = cols < n_tok[:, None]
    scratch = np.where(inside, local[np.minimum(start[:, None] + cols, local.shape[0] - 1)], -1)
    r = np.arange(n_rows, dtype=np.int64)
    base = (row * max_size + 1).astype(np.uint64)
    span = n_tok.astype(np.float64)
    with np.errstate(over="ignore"):
        for j in range(max_size):
            z = _mix(key + (base + np.uint64(j)) * _GAMMA)
            u = (z >> _S11).astype(np.float64) * _UNIT
            pick = j + (u * (span - j)).astype(np.int64)
            a = scratch[r, pick]
            scratch[r, pick] = scratch[r, j]
            scratch[r, j] = a
    head = np.where(np.arange(max_size) < size[:, None], scratch[:, :max_size], -1)
    head.sort(axis=1)
    changes = np.count_nonzero(head[:, 1:] != head[:, :-1], axis=1)
    counts: np.ndarray = changes + (head[:, 0] >= 0)  # the -1 padding is not a type
    return counts


def _ttr_curve(t: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """McKee et al.'s TTR curve ``(D / n)(sqrt(1 + 2n / D) - 1)`` in ``t = 1 / D``, written
    ``2 / (1 + sqrt(1 + 2nt))`` (no cancellation as ``D`` grows), with its first two
    derivatives in ``t``."""
    root = np.sqrt(1.0 + 2.0 * sizes * t[:, None])
    f = 2.0 / (1.0 + root)
    df = -2.0 * sizes / (root * (1.0 + root) ** 2)
    d2f = 2.0 * sizes ** 2 * (1.0 + 3.0 * root) / (root ** 3 * (1.0 + root) ** 3)
    return f, df, d2f


def _fit_d(y: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The least-squares ``D`` of each row of mean TTRs ``y`` (one column per sample size),
    as McKee et al. fit it (``scipy.optimize.curve_fit`` in lexicalrichness); ``inf`` for a
    row of ones (no repetition in any sample).

    Solved in ``t = 1 / D``: each point alone is fitted by ``t_n = 2 (1 - y_n) / (n y_n^2)``
    and, as the curve decreases in ``t``, every residual has one sign below ``min t_n`` and the
    other above ``max t_n``, so the minimum lies in between. Newton's method on the gradient,
    kept inside that bracket by bisection, vectorised over all rows, to full precision."""
    sizes = sizes.astype(np.float64)
    y = np.minimum(y, 1.0)  # an expected TTR of 1 may round above it
    with np.errstate(all="ignore"):
        t_each = 2.0 * (1.0 - y) / (sizes * y * y)
    lo, hi = t_each.min(axis=1), t_each.max(axis=1)
    t = (lo + hi) / 2.0
    active = np.flatnonzero(hi > lo)
    for _ in range(200):
        if not active.size:
            break
        ta, la, ha = t[active], lo[active], hi[active]
        f, df, d2f = _ttr_curve(ta, sizes)
        resid = f - y[active]
        grad = (resid * df).sum(axis=1)  # half the gradient of the squared error
        curv = (df * df + resid * d2f).sum(axis=1)
        la = np.where(grad < 0, ta, la)  # the error still falls: the minimum lies above t
        ha = np.where(grad > 0, ta, ha)
        with np.errstate(all="ignore"):
            newton = ta - grad / curv
        ok = (curv > 0) & (newton > la) & (newton < ha)
        nt = np.where(ok, newton, (la + ha) / 2.0)
        nt = np.where(grad == 0, ta, nt)
        t[active], lo[active], hi[active] = nt, la, ha
        moving = (np.abs(nt - ta) > 4e-16 * np.abs(nt)) & (ha - la > 4e-16 * ha)
        active = active[moving]
    with np.errstate(divide="ignore"):
        return 1.0 / t


def _expected_ttr(enc: TokenKeys, sizes: np.ndarray) -> np.ndarray:
    """The expected TTR of a sample of each size drawn without replacement from each response
    (rows; NaN for a response shorter than the largest size): a type with ``k`` of the ``N``
    tokens is absent with probability ``C(N - k, n) / C(N, n)`` (log-gamma closed form)."""
    doc, k = enc.type_counts()
    n_all = enc.lengths.astype(np.float64)
    width = np.int64(int(k.max(initial=0)) + 1)
    groups, n_types = np.unique(doc * width + k, return_counts=True)
    gdoc, gk = groups // width, (groups % width).astype(np.float64)
    gn = n_all[gdoc][:, None]
    n = sizes.astype(np.float64)[None, :]
    kk = gk[:, None]
    with np.errstate(all="ignore"):
        log_absent = (gammaln(gn - kk + 1) - gammaln(gn - kk - n + 1)
                      - gammaln(gn + 1) + gammaln(gn - n + 1))
    present = np.where(gn - kk >= n, -np.expm1(log_absent), 1.0)
    out = np.zeros((enc.n_docs, sizes.shape[0]))
    np.add.at(out, gdoc, n_types[:, None] * present)
    out /= n
    out[np.bincount(doc, minlength=enc.n_docs) == enc.lengths] = 1.0  # no repeat: exactly 1
    out[enc.lengths < sizes.max()] = np.nan
    return out


def _vocd_values(enc: TokenKeys, min_size: int, max_size: int, samples: int, trials: int,
                 seed: int, sampling: str) -> np.ndarray:
    sizes = np.arange(min_size, max_size + 1, dtype=np.int64)
    ok = enc.lengths >= max_size
    out = np.full(enc.n_docs, np.nan)
    if not ok.any():
        return out
    if sampling == "expected":
        d = _fit_d(_expected_ttr(enc, sizes)[ok], sizes)
    else:
        first, _ = _first_last(enc)
        local = first - enc.starts[enc.doc]  # type = position of its first occurrence
        starts, lengths = enc.starts[ok], enc.lengths[ok].astype(np.int64)
        keys = _vocd_keys(local, starts, lengths, seed)
        draws = int(lengths.size) * trials * samples * int(sizes.sum())
        loop = _vocd_compiled() if (draws >= _VOCD_JIT_DRAWS
                                    or "divmeter.inputs.text.jit" in sys.modules) else None
        counter = loop if loop is not None else _vocd_counts_numpy
        counts = counter(local, starts, lengths, keys, min_size, max_size, samples, trials)
        y = counts.reshape(-1, sizes.size) / (samples * sizes.astype(np.float64))
        d = _fit_d(y, sizes).reshape(-1, trials).mean(axis=1)
    out[ok] = np.where(np.isfinite(d), d, np.nan)
    return out



def _vocd_draws(trials: int, p: Mapping[str, Any]) -> str | None:
    """The work of vocd-D per response bounded as a whole (each count is capped, and so is
    their product)."""
    lo, hi = p["min_size"], p["max_size"]
    draws = p["samples"] * trials * (lo + hi) * max(hi - lo + 1, 0) // 2
    if draws <= VOCD_MAX_DRAWS:
        return None
    return (f"with samples={p['samples']} over sizes {lo}..{hi} draws {draws:,} tokens per "
            f"response, more than {VOCD_MAX_DRAWS:,}; use fewer samples, trials or sizes.")


@register
class VocdD(Index):
    """vocd-D (McKee, Malvern & Richards 2000), per response.

    For each sample size ``n = min_size .. max_size`` (35..50), ``samples`` (100) random
    samples of ``n`` tokens are drawn without replacement and their mean TTR taken; the
    ``D`` whose curve ``TTR(n) = (D / n)(sqrt(1 + 2n / D) - 1)`` fits these means best (least
    squares) is found, and the value is the mean ``D`` of ``trials`` (3) such rounds. These are
    the original's settings and lexicalrichness's ``vocd`` (``ntokens=50, within_sample=100,
    iterations=3``).

    The draws are seeded: each response's stream comes from ``seed`` and the response's own
    tokens (SplitMix64 over a BLAKE2b key), so a response gets the same ``D`` in any set or
    batch and on any machine, and the seed is in the signature. Another seed gives another
    draw of the same random quantity (lexicalrichness's spread across seeds is the same).
    ``sampling="expected"`` replaces each size's sample mean by its exact expectation (the
    hypergeometric mean that HD-D also uses: the limit of infinitely many samples), a
    deterministic variant without seed.

    Undefined for a response with fewer than ``max_size`` tokens (lexicalrichness refuses
    ``max_size`` tokens or fewer) and for one whose samples never repeat a type (``D`` is
    infinite).

    Args:
        responses: The response set.
        min_size: Smallest sample size (35).
        max_size: Largest sample size (50), at least ``min_size``.
        samples: Samples per size and trial (100).
        trials: Fits averaged (3).
        seed: Seed of the draws (>= 0).
        sampling: ``random`` (default) or ``expected``.
        tokenizer: ``whitespace`` (default), ``word``, ``tevet`` or ``char``.
        lowercase: Lowercase before tokenizing.

    Returns:
        MetricResult: mean over the defined responses; ``per_response``.

    Example:
        >>> text = " ".join(f"w{i % 40}" for i in range(120))
        >>> r = vocd_d([text])
        >>> 30 < r.value < 35, r.value == vocd_d([text, "x"]).value  # each type 3 times
        (True, True)
        >>> r.signature
        'vocd-d|sizes:35..50|samples:100|trials:3|sampling:random|seed:0|rng:splitmix64|tok:whitespace|case:mixed|v:0.1.0'
        >>> vocd_d([text], sampling="expected").signature[:35]
        'vocd-d|sizes:35..50|sampling:expect'
    """

    name = "vocd-d"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = MCKEE2000
    description = ("vocd-D: the D of the TTR curve fitted to random samples of 35..50 tokens, "
                   "per response, mean over the set")
    params = {
        "min_size": Param(int, ge=1, cap=VOCD_MAX_SIZE, default=35,
                          doc="smallest sample, in tokens"),
        "max_size": Param(int, ge=1, cap=VOCD_MAX_SIZE, default=50, doc="largest sample, in tokens",
                          relation=lambda v, p: None if v >= p["min_size"] else
                          f"must be >= min_size ({p['min_size']}); got {v!r}."),
        "samples": Param(int, ge=1, cap=10**5, default=100, doc="random samples of each size"),
        "trials": Param(int, ge=1, cap=1000, default=3, doc="fits averaged",
                        relation=_vocd_draws),
        "seed": Param(int, ge=0, default=0,
                      doc="seed of the sampling (with each response's tokens)"),
        "sampling": Param(str, choices=SAMPLINGS, default="random",
                          doc="random: McKee et al.'s samples; expected: their exact mean"),
              **_TOK_PARAMS}

    def setup(self) -> None:
        super().setup()
        self.none_reason = (
            f"no response has {self.p['max_size']} tokens or more with a repeated word")

    def fields(self) -> dict[str, Any]:
        p = self.p
        rnd = p["sampling"] == "random"
        return {"sizes": f"{p['min_size']}..{p['max_size']}",
                "samples": p["samples"] if rnd else None,
                "trials": p["trials"] if rnd else None, "sampling": p["sampling"],
                "seed": p["seed"] if rnd else None, "rng": "splitmix64" if rnd else None}

    def values(self, texts: list[str]) -> np.ndarray:
        p = self.p
        return _vocd_values(TokenKeys.from_texts(texts, self.tok), p["min_size"],
                            p["max_size"], p["samples"], p["trials"], p["seed"], p["sampling"])


vocd_d = public_function(VocdD)
