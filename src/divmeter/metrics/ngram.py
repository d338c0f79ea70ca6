"""Set-level form (n-gram) metrics pooled over a response set.

distinct-n, entropy-n, expectation-adjusted distinct (EAD), n-gram cosine diversity, n-gram
diversity score, compression ratio and self-repetition. All n-gram counting starts from exact
integer token ids (:func:`divmeter.inputs.text.encode_sets`; n-grams never cross response
boundaries): the base-``B`` number of an n-gram's token ids, next to its set's index, is an
exact key while it fits in 62 bits (one sort per order for every set of a batch, no interning
of lower orders); a set too wide for that on its own is counted from the interned n-gram ids of
:class:`divmeter.inputs.text.NgramIndex`. Every metric is therefore exact and vectorised: a few
numpy calls per order.

Degenerate sets, shared conventions (each metric's docstring says which apply):

* an empty set, or a set in which no response has a token, gives ``value=None`` with a reason;
* an n-gram order with no n-gram at all (every text shorter than n) contributes 0 to averages
  and sums over orders, as in Tevet & Berant's code.

Each metric is one :class:`~divmeter.engine.definition.Metric` subclass (the tokenizer and the
n-gram orders resolved once by :class:`NgramMetric`; distinct-n, entropy-n, EAD and n-gram
diversity share :class:`PooledMetric`, whose value is a function of each order's pooled counts).
Its ``score`` scores many sets with one tokenizing pass and one sort per order for all of them
(see the end of this module), the public function (``distinct_n`` ...) is that definition on a
batch of one, and its corpus statistics (``statistics``) read every setting from the same
resolved definition.
"""

from __future__ import annotations

import lzma
import math
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from divmeter.core.memory import Cost, pair_cost
from divmeter.core.params import LOWERCASE, MAX_ORDER, Param, tokenizer_param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.corpus.stats import Accumulator, FrozenTables
from divmeter.engine.definition import Granularity, Metric
from divmeter.engine.public import public_function, register
from divmeter.inputs.text import NgramIndex, SetTokens, Tokenizer, get_tokenizer, ngram_tuples
from divmeter.inputs.text import encode_sets as _encode_sets
from divmeter.inputs.text import fit_groups as _fit_groups
from divmeter.inputs.text import interned as _interned  # noqa: F401  (tests check its cache)
from divmeter.inputs.text import longest_response as _longest_response
from divmeter.inputs.text import set_ngram_keys as _set_ngram_keys
from divmeter.inputs.text.keys import KEY_SCHEME
from divmeter.inputs.text.sketch import LABEL as SKETCH_LABEL
from divmeter.inputs.text.sketch import RSE as SKETCH_RSE
from divmeter.inputs.text.sketch import HyperLogLog
from divmeter.inputs.text.table import (
    COUNT,
    DOCS,
    NgramTable,
    hashed_chunks,
    order_keys,
)
from divmeter.metrics._common import entropy_base, undefined
from divmeter.metrics.reduce import REDUCTIONS, diversity_from_similarity

TEVET = ("Tevet & Berant 2021, Evaluating the Evaluation of Diversity in Natural Language "
         "Generation (EACL)")

#: ``n_max``'s default: Tevet & Berant's averaged distinct-n takes orders 1..5.
N_MAX = 5


def _n_max_conflict(n_max: Any, params: Mapping[str, Any]) -> str | None:
    """``n`` (one order) and a non-default ``n_max`` (the mean over 1..n_max) name two different
    numbers: the pair is refused instead of ``n_max`` being dropped without a word (the
    ``relation`` of ``n_max`` in :data:`ORDERS`; :func:`_orders` says the same on the functions'
    own path).

    Example:
        >>> _n_max_conflict(3, {"n": 2})  # doctest: +ELLIPSIS
        'applies only without `n` (the mean over orders 1..n_max); got n=2 and n_max=3: give ...'
        >>> _n_max_conflict(3, {"n": None}) is None
        True
    """
    if params.get("n") is None or n_max == N_MAX:
        return None
    return (f"applies only without `n` (the mean over orders 1..n_max); got n={params['n']!r} "
            f"and n_max={n_max!r}: give one of them.")


#: The order parameters shared by the metrics that take one order ``n`` or average over
#: ``1..n_max`` (distinct-n, entropy-n, EAD, n-gram cosine). Giving both is refused
#: (:func:`_n_max_conflict`).
ORDERS: dict[str, Param] = {
    "n": Param(int, ge=1, allow_none=True, default=None,
               doc="one n-gram order (None: mean over 1..n_max)"),
    "n_max": Param(int, ge=1, le=MAX_ORDER, default=N_MAX,
                   doc="highest n-gram order when n is None (not with n)",
                   relation=_n_max_conflict),
}
#: ``approx`` of the metrics that need only distinct and total n-gram counts (distinct-n, EAD,
#: n-gram diversity): ``None`` (exact) or ``hll`` (distinct counts from a HyperLogLog sketch:
#: constant memory, relative standard error in the signature).
APPROX = Param(str, choices=("hll",), allow_none=True, default=None,
               doc="None: exact counts; hll: distinct n-grams from a HyperLogLog sketch "
               "(16 KiB per order, relative standard error 0.81%)", alternative="hll")
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


def _orders(n: int | None, n_max: int) -> tuple[list[int], str, str | None]:
    """The n-gram orders to compute and their signature fields (``n``, ``avg``): the single
    order ``n``, else ``1..n_max`` averaged."""
    if n is not None:
        return [n], str(n), None
    return list(range(1, n_max + 1)), f"1..{n_max}", "mean"


def _approx_fields(approx: str | None) -> dict[str, str | None]:
    """The signature fields of ``approx``: the sketch, its relative standard error and the key
    scheme it hashes (none for exact counts)."""
    if approx is None:
        return {}
    return {"approx": SKETCH_LABEL, "rse": f"{SKETCH_RSE:.4f}", "key": KEY_SCHEME}


def _sketch_stats(texts: Sequence[str], tok: Tokenizer, orders: Sequence[int]
                  ) -> tuple[dict[int, HyperLogLog], dict[int, int], int]:
    """The HyperLogLog sketch of each order's n-gram keys over ``texts``, the exact number of
    n-gram occurrences of each order, and the token count (the statistics of ``approx=hll``,
    for one set and for a corpus alike)."""
    sketches = {n: HyperLogLog() for n in orders}
    totals = dict.fromkeys(orders, 0)
    tokens = 0
    for chunk in hashed_chunks(texts, tok):
        tokens += int(chunk.ids.size)
        for n, hi, lo, _ in order_keys(chunk, orders):
            sketches[n].add(hi, lo)
            totals[n] += int(hi.size)
    return sketches, totals, tokens


def _beyond_longest(text_sets: Sequence[Sequence[str]], tok: Tokenizer, n: int, metric: str,
                    sig: str, results: list[MetricResult | None], *, blank: bool = True) -> bool:
    """Set a null result, with the reason, for every set not yet decided whose longest response
    is shorter than the single order ``n`` (no n-gram can exist there, whatever ``n``: a huge
    ``n`` costs nothing). With ``blank``, an empty set and a set without any token get their
    usual reasons here too. Returns whether every set is now decided."""
    longest = _longest_response(text_sets, tok).tolist()
    for i, top in enumerate(longest):
        if results[i] is not None:
            continue
        if top > 0 and n > top:
            results[i] = undefined(
                metric, sig, f"n = {n} is larger than the longest response ({top} tokens): "
                f"no {n}-grams")
        elif blank and top == 0 and n > 1:
            results[i] = undefined(metric, sig, "empty set" if not text_sets[i]
                                   else "no tokens in any response")
    return all(r is not None for r in results)


def _index(texts: list[str], tok: Tokenizer) -> NgramIndex:
    return NgramIndex.from_tokens(tok.many(texts))


#: One order's statistics for each set of a group: distinct n-grams, n-gram occurrences and
#: (when asked) ``sum c ln c`` over the n-grams' counts ``c``.
_OrderStats = tuple[list[int], list[int], list[float] | None]


def _set_index(one: SetTokens) -> NgramIndex:
    """The :class:`NgramIndex` of one encoded set, from its own set-local ids (no second
    tokenization): ids >= 1 below ``width``, each text closed by a 0; renumbered ``0 .. V-1``
    in id order, as the index wants them."""
    ends = np.flatnonzero(one.ids == 0)
    lengths = np.diff(ends, prepend=-1) - 1
    raw = one.ids[one.ids != 0]
    present = np.zeros(int(one.width[0]), dtype=bool)
    present[raw] = True
    renumber = np.cumsum(present, dtype=np.int64) - 1
    return NgramIndex(renumber[raw], lengths.astype(np.int64), int(present.sum()))


def _pooled_wide_stats(one: SetTokens, orders: Sequence[int], *, xlogx: bool
                       ) -> dict[int, _OrderStats]:
    """:func:`_pooled_set_stats` of one set too wide for the batched keys (its n-grams need more
    than 62 bits even alone), from the exact interned ids of :class:`NgramIndex`."""
    idx = _set_index(one)
    out: dict[int, _OrderStats] = {}
    for k in orders:
        c = idx.pooled_counts(k)
        s = _xlogx_sums(np.zeros(c.size, dtype=np.int64), c, 1).tolist() if xlogx else None
        out[k] = ([int(c.size)], [int(c.sum())], s)
    return out


def _distinct_value(unique: int, total: int, _: float) -> float:
    """``unique / total`` (0 for an order with no n-gram)."""
    return unique / total if total else 0.0


def _sep_label(separator: str) -> str:
    """How a separator is written in a signature: a name, or its code points."""
    names = {" ": "space", "\n": "newline", "\n\n": "blankline", "\t": "tab", "": "none"}
    if separator in names:
        return names[separator]
    return ",".join(f"U+{ord(c):04X}" for c in separator)


# --------------------------------------------------------------------------------------------
# the pooled-count metrics' statistics and finishing (one formula for sets and corpora)
#
# Per order, distinct-n, entropy-n, EAD and n-gram diversity are functions of three numbers: the
# distinct n-grams, the n-gram occurrences and ``sum c ln c`` over the n-grams' counts ``c``,
# all three functions of the count spectrum (how many n-grams occur ``c`` times). The many-set
# kernels get them from one sort per order (:func:`_pooled_set_stats`); corpus mode from the
# merged :class:`divmeter.inputs.text.table.NgramTable` (:meth:`PooledCounts.result`); both
# finish with :func:`_finish_rows`.


def _xlogx_spectrum(values: Sequence[int], mult: Sequence[int]) -> float:
    """``sum c ln c`` from a count spectrum (count ``values`` in increasing order, each with
    its multiplicity): ``h_v * (v ln v)`` added by increasing ``v`` (counts of 1 add 0), the
    canonical order of :func:`_xlogx_sums`."""
    acc = 0.0
    for v, h in zip(values, mult, strict=True):
        if v > 1:
            acc += h * (v * math.log(v))
    return acc


def _finish_rows(rows: list[list[float]], agg: str) -> list[float]:
    """The head value of each row of per-order values: their mean (``np.mean`` of each row, as
    one reshape reduces it) or their sum."""
    if agg == "mean":
        out: list[float] = np.array(rows, dtype=np.float64).reshape(
            len(rows), len(rows[0]) if rows else 0).mean(axis=1).tolist()
        return out
    return [float(sum(r)) for r in rows]


#: One order's corpus statistics: the count spectrum ``{count: n-grams with that count}``, the
#: distinct n-grams and the occurrences.
_Spectrum = tuple[dict[int, int], int, int]


class PooledCounts(Accumulator):
    """distinct-n, entropy-n, EAD and n-gram diversity in corpus mode: per order, the count of
    every n-gram pooled over the corpus (n-grams never cross response boundaries) as an
    :class:`divmeter.inputs.text.table.NgramTable` (24 bytes a distinct n-gram, spilled to
    disk past the run's memory budget), and the token total. The value is finished from each
    order's count spectrum with the per-set formula (:func:`_finish_rows`)."""

    def _setup(self) -> None:
        m: PooledMetric = self.metric  # type: ignore[assignment]
        self.tok, self.orders, self.sig = m.tok, m.orders, m.signature()
        self._per_order, self.agg, self.xlogx = m.per_order, m.agg, m.xlogx
        self.approx = m.p.get("approx")

    def _reset(self) -> None:
        self.table = NgramTable(self.orders, COUNT, self.budget, self.spill_dir)
        self.n_tokens = 0
        self.spectra: dict[int, _Spectrum] | None = None
        # approx=hll: one sketch and the exact occurrence count per order (constant memory)
        self.sketches = {n: HyperLogLog() for n in self.orders} if self.approx else {}
        self.totals = dict.fromkeys(self.orders, 0)

    def _configure(self) -> None:
        self.table.budget, self.table.spill_dir = self.budget, self.spill_dir

    def _add(self, texts: Sequence[str]) -> None:
        if self.approx:
            sketches, totals, tokens = _sketch_stats(texts, self.tok, self.orders)
            for n in self.orders:
                self.sketches[n].merge(sketches[n])
                self.totals[n] += totals[n]
            self.n_tokens += tokens
            return
        before = self.table.tokens
        self.table.add_texts(texts, self.tok)
        self.n_tokens += self.table.tokens - before

    def _merge(self, other: PooledCounts) -> None:
        self.n_tokens += other.n_tokens
        self.table.merge(other.table)
        for n in self.orders:
            if self.approx:
                self.sketches[n].merge(other.sketches[n])
            self.totals[n] += other.totals[n]

    def close(self) -> None:
        self.table.close()

    def split(self, parts: int) -> list[Any] | None:
        if self.approx:
            return None  # a sketch is a few KiB: merged on the driver
        out: list[Any] = self.table.split(parts)
        self.table.close()
        self.table = NgramTable(self.orders, COUNT, self.budget, self.spill_dir)
        return out

    def reduce_part(self, parts: Sequence[Any]) -> Any:
        t = NgramTable(self.orders, COUNT, self.budget, self.spill_dir)
        for part in parts:
            t.merge(part)
        try:
            return {n: t.spectrum(n) for n in self.orders}
        finally:
            t.close()

    def absorb(self, summaries: Sequence[Any]) -> None:
        spectra: dict[int, _Spectrum] = {}
        for n in self.orders:
            spec: dict[int, int] = {}
            distinct = total = 0
            for summary in summaries:
                s, d, t = summary[n]
                for v, m in s.items():
                    spec[v] = spec.get(v, 0) + m
                distinct += d
                total += t
            spectra[n] = (spec, distinct, total)
        self.spectra = spectra

    def result(self) -> MetricResult:
        if self.n_responses == 0:
            return undefined(self.name, self.sig, "empty set")
        if self.n_tokens == 0:
            return undefined(self.name, self.sig, "no tokens in any response")
        if self.approx:
            row = [self._per_order(self.sketches[n].estimate(), self.totals[n], 0.0)  # type: ignore[arg-type]
                   for n in self.orders]
            return MetricResult(self.name, _finish_rows([row], self.agg)[0], self.sig,
                                details={"per_n": dict(zip(self.orders, row, strict=True))})
        spectra = self.spectra or {n: self.table.spectrum(n) for n in self.orders}
        row = []
        for n in self.orders:
            spec, distinct, total = spectra[n]
            vals = sorted(spec)
            s = _xlogx_spectrum(vals, [spec[v] for v in vals]) if self.xlogx else 0.0
            row.append(self._per_order(distinct, total, s))
        head = _finish_rows([row], self.agg)[0]
        return MetricResult(self.name, head, self.sig,
                            details={"per_n": dict(zip(self.orders, row, strict=True))})


# --------------------------------------------------------------------------------------------
# distinct-n


class NgramMetric(Metric):
    """A form metric of this module: its tokenizer resolved once from ``tokenizer`` and
    ``lowercase`` (:meth:`setup`), and, where it declares them, its n-gram orders from ``n``
    (one order) or ``n_max`` (``1..n_max``; :data:`ORDERS`)."""

    family = "form"
    granularity: ClassVar[Granularity] = "set"

    def setup(self) -> None:
        p = self.p
        self.tok = get_tokenizer(p["tokenizer"], p["lowercase"])
        if "n_max" in p:
            self.orders, self.n_label, self.avg = _orders(p.get("n"), p["n_max"])

    def _tok_fields(self) -> dict[str, str]:
        return {"tok": self.tok.name, "case": self.tok.case}


class PooledMetric(NgramMetric):
    """distinct-n, entropy-n, EAD and n-gram diversity: per order, a function
    (:meth:`per_order`) of the distinct n-grams, the n-gram occurrences and ``sum c ln c`` over
    the n-grams' counts ``c``, pooled over the set; the orders' values combined by ``agg``
    (``mean`` or ``sum``). One set and many sets: :func:`_pooled_many`; a corpus: the same
    statistics merged (:class:`PooledCounts`)."""

    statistics = PooledCounts
    #: How the orders' values combine: ``mean`` or ``sum``.
    agg: ClassVar[str] = "mean"
    #: Whether :meth:`per_order` reads ``sum c ln c`` (it costs a second pass per order).
    xlogx: ClassVar[bool] = False

    def per_order(self, unique: int, total: int, xlogx: float) -> float:
        """One order's value from its distinct n-grams, occurrences and ``sum c ln c``."""
        raise NotImplementedError

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        return _pooled_many(sets, metric=self.name, tok=self.tok, orders=self.orders,
                            sig=self._sig(), per_order=self.per_order, agg=self.agg,
                            xlogx=self.xlogx, approx=self.p.get("approx"))


@register
class DistinctN(PooledMetric):
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
        approx: ``None`` (exact) or ``"hll"``: the distinct n-grams of each order estimated
            by a HyperLogLog sketch of their 128-bit keys (:mod:`divmeter.inputs.text.sketch`:
            16 KiB per order whatever the corpus, relative standard error 0.81%, written in
            the signature); the n-gram totals stay exact.

    Returns:
        MetricResult with ``details["per_n"]`` (distinct-k for each k averaged). ``value`` is
        ``None`` for an empty set or a set with no tokens at all (Tevet's code writes 0 there).

    Example:
        >>> distinct_n(["a b a b", "a b c"], n=2).value
        0.6
        >>> distinct_n(["a b a b", "a b c"], n=2).signature
        'distinct-n|n:2|tok:tevet|case:mixed|v:0.1.0'
    """

    name = "distinct-n"
    higher_is_more_diverse = True
    bounds = (0.0, 1.0)
    citation = f"{LI2016}; averaged over n=1..5 as in {TEVET}"
    description = ("Unique n-grams / all n-grams pooled over the set; mean over n=1..n_max "
                   "unless `n` is given")
    params = {**ORDERS, "tokenizer": tokenizer_param("tevet"), "lowercase": LOWERCASE,
              "approx": APPROX}

    def signature(self) -> str:
        return make_signature(self.name, n=self.n_label, avg=self.avg,
                              **_approx_fields(self.p["approx"]), **self._tok_fields())

    def per_order(self, unique: int, total: int, xlogx: float) -> float:
        return _distinct_value(unique, total, xlogx)


distinct_n = public_function(DistinctN)


# --------------------------------------------------------------------------------------------
# entropy-n


def _xlogx_sums(group: np.ndarray, counts: np.ndarray, n_groups: int) -> np.ndarray:
    """``sum c ln c`` over the counts of each group, in a canonical order.

    The terms are summed by increasing count value (``h_v * v ln v`` for each distinct count
    ``v`` with multiplicity ``h_v``; counts of 1 add exactly 0 and are skipped), one group after
    the other in a single sequential ``bincount``, with ``v ln v`` from :func:`math.log`. The
    float result therefore depends only on the multiset of counts of a group, not on the order
    in which the n-grams were found nor on the other groups.
    """
    sel = counts > 1
    c = counts[sel]
    if c.size == 0:
        return np.zeros(n_groups)
    if n_groups == 1:  # small-input branch: the same sum, term by term, without the pairing
        vals, mult = np.unique(c, return_counts=True)
        return np.array([_xlogx_spectrum(vals.tolist(), mult.tolist())])
    g = group[sel]
    m = int(c.max()) + 1
    pair, h = np.unique(g * m + c, return_counts=True)  # sorted by (group, count value)
    v = pair % m
    vals = np.unique(v)
    table = np.array([x * math.log(x) for x in vals.tolist()])
    terms = h * table[np.searchsorted(vals, v)]
    return np.bincount(pair // m, weights=terms, minlength=n_groups)


def _entropy_value(total: int, xlogx: float, base: float) -> float:
    """``H = ln T - (1/T) sum c ln c`` (0 for no n-gram), clipped at 0, in base ``base``."""
    if total == 0:
        return 0.0
    h = math.log(total) - xlogx / total
    return max(h, 0.0) / math.log(base)


@register
class EntropyN(PooledMetric):
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

    name = "entropy-n"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = ("Shannon entropy of n-gram frequencies (Ent-n), e.g. Zhang et al. 2018, "
                "Generating Informative and Diverse Conversational Responses via Adversarial "
                "Information Maximization (NeurIPS)")
    description = ("Shannon entropy of the n-gram distribution pooled over the set (nats by "
                   "default, bits with base=2); mean over n=1..n_max unless `n` is given")
    params = {**ORDERS,
              "base": Param(float, default="e", doc="logarithm base",
                            predicate=lambda b: b in ("e", "nats", "bits") or (
                                isinstance(b, (int, float)) and not isinstance(b, bool)
                                and 0 < b < float("inf") and b != 1),
                            expect="'e', 'bits' or a number > 0 other than 1",
                            alternative=2.0),
              "tokenizer": tokenizer_param("tevet"), "lowercase": LOWERCASE}
    xlogx = True

    def setup(self) -> None:
        super().setup()
        self.base, self.base_label = entropy_base(self.p["base"])

    def signature(self) -> str:
        return make_signature(self.name, n=self.n_label, avg=self.avg, base=self.base_label,
                              **self._tok_fields())

    def per_order(self, unique: int, total: int, xlogx: float) -> float:
        return _entropy_value(total, xlogx, self.base)


entropy_n = public_function(EntropyN)


# --------------------------------------------------------------------------------------------
# expectation-adjusted distinct


def _ead_one(unique: int, total: int, v: int) -> float:
    """``unique / (V (1 - ((V-1)/V)^C))``, computed stably; 0 when ``C = 0``."""
    if total == 0:
        return 0.0
    # 1 - (1 - 1/V)^C = -expm1(C * log1p(-1/V)); V = 1 gives 1 for every C >= 1.
    frac = 1.0 if v == 1 else -math.expm1(total * math.log1p(-1.0 / v))
    return unique / (v * frac)


@register
class EAD(PooledMetric):
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
        approx: ``None`` (exact) or ``"hll"`` (distinct n-grams from a HyperLogLog sketch;
            see :func:`distinct_n`).

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

    name = "ead"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{LIU2022}; averaged over n=1..5 with V=50257 as in {KIRK2023}"
    description = ("Expectation-adjusted distinct: unique n-grams / V(1-((V-1)/V)^C); mean "
                   "over n=1..n_max unless `n` is given")
    params = {**ORDERS,
              "vocab_size": Param(int, ge=1, cap=10**12, default=GPT2_VOCAB,
                                  doc="vocabulary size V"),
              "tokenizer": tokenizer_param("tevet"), "lowercase": LOWERCASE, "approx": APPROX}

    def signature(self) -> str:
        return make_signature(self.name, n=self.n_label, avg=self.avg, V=self.p["vocab_size"],
                              **_approx_fields(self.p["approx"]), **self._tok_fields())

    def per_order(self, unique: int, total: int, xlogx: float) -> float:
        return _ead_one(unique, total, self.p["vocab_size"])


ead = public_function(EAD)


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


def _cosine_from_gram(gram: np.ndarray) -> np.ndarray:
    """Cosines from Gram matrices (the last two axes); 0 where either vector is empty."""
    norms = np.sqrt(np.diagonal(gram, axis1=-2, axis2=-1).copy())
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    out: np.ndarray = gram * inv[..., :, None] * inv[..., None, :]
    return out


def _cosine_similarity_matrix(doc: np.ndarray, ids: np.ndarray, n_docs: int, m: int
                              ) -> np.ndarray:
    """Pairwise cosine of count vectors; 0 for a pair where either vector is empty."""
    x = _count_matrix(doc, ids, n_docs, m)
    prod = x @ x.T
    gram = np.asarray(prod.toarray() if hasattr(prod, "toarray") else prod, dtype=np.float64)
    return _cosine_from_gram(gram)


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


class NgramCosineStats(Accumulator):
    """n-gram cosine: per order and n-gram ``g``, ``S_g = sum_i w_ig`` and ``Q_g = sum_i
    w_ig^2`` of the responses' L2-normalised count vectors ``w_i``; the pair sum is
    ``sum_g (S_g^2 - Q_g) / 2`` (exactly 0 for n-grams of one response)."""

    def _setup(self) -> None:
        m: NgramCosine = self.metric  # type: ignore[assignment]
        self.tok, self.orders, self.red, self.sig = (m.tok, m.orders, m.p["reduction"],
                                                     m.signature())

    def _reset(self) -> None:
        self.sums: dict[int, dict[Any, list[float]]] = {k: {} for k in self.orders}
        self.n_tokens = 0

    def _add(self, texts: Sequence[str]) -> None:
        for toks in self.tok.each(texts):
            self.n_tokens += len(toks)
            for k in self.orders:
                c = Counter(ngram_tuples(toks, k))
                if not c:
                    continue
                norm = math.sqrt(float(sum(v * v for v in c.values())))
                table = self.sums[k]
                for g, v in c.items():
                    w = v / norm
                    cell = table.get(g)
                    if cell is None:
                        table[g] = [w, w * w]
                    else:
                        cell[0] += w
                        cell[1] += w * w

    def _merge(self, other: NgramCosineStats) -> None:
        self.n_tokens += other.n_tokens
        for k in self.orders:
            table = self.sums[k]
            for g, (s, q) in other.sums[k].items():
                cell = table.get(g)
                if cell is None:
                    table[g] = [s, q]
                else:
                    cell[0] += s
                    cell[1] += q

    def result(self) -> MetricResult:
        n = self.n_responses
        if n == 0:
            return undefined(self.name, self.sig, "empty set")
        if n < 2:
            return undefined(self.name, self.sig, "needs at least 2 responses (pairs); got 1")
        if self.n_tokens == 0:
            return undefined(self.name, self.sig, "no tokens in any response")
        per_n: dict[int, float] = {}
        for k in self.orders:
            cross = math.fsum(s * s - q for s, q in self.sums[k].values())
            mean = (cross / 2.0) / (n * (n - 1) / 2.0)
            per_n[k] = -mean if self.red == "neg-mean" else 1.0 - mean
        value = float(np.mean(list(per_n.values())))
        return MetricResult(self.name, value, self.sig, details={"per_n": per_n})


@register
class NgramCosine(NgramMetric):
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

    name = "ngram-cosine"
    higher_is_more_diverse = True
    bounds = (-1.0, 0.0)
    citation = f"{TEVET} (cos-sim, section 5 reduction)"
    description = ("Minus the mean pairwise cosine of n-gram count vectors, mean over "
                   "n=1..n_max (Tevet & Berant's cos-sim)")
    params = {**ORDERS,
              "reduction": Param(str, choices=REDUCTIONS, default="neg-mean",
                                 doc="how similarities become a diversity"),
              "tokenizer": tokenizer_param("tevet"), "lowercase": LOWERCASE}
    statistics = NgramCosineStats

    def signature(self) -> str:
        return make_signature(self.name, n=self.n_label, avg=self.avg, sim="cosine-counts",
                              red=self.p["reduction"], **self._tok_fields())

    def cost(self, n: int, items: Sequence[Any] | None = None) -> Cost:
        """Three ``n x n`` float64 matrices: one Gram matrix per order, its dense copy and the
        sum (the pair matrix of a set scored alone)."""
        return pair_cost(self.name, n, 3, "Gram")

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        """Per order, one sort of ``(set, n-gram, response)`` keys gives every set's count
        vectors; one sparse product gives every set's Gram matrix. Its entries are sums of
        products of integer counts, hence exact whatever the summation order, so the cosines
        and their pair means (per set size, one row per set, reduced as ``np.mean`` reduces one
        set) carry the same bits as one set's dense count-matrix product. Sets of more than 64
        responses, and a batch with a single scorable set (small-input branch: one dense
        product is quicker than the sparse blocks), go through that dense (or, above 2,048
        responses, linear-time) path."""
        tok, orders, red, sig = self.tok, self.orders, self.p["reduction"], self._sig()
        results, paired = _sets_with_pairs(sets, self.name, sig,
                                           "needs at least 2 responses (pairs); got 1")
        if self.p["n"] is not None and paired:
            _beyond_longest(sets, tok, orders[0], self.name, sig, results)
            paired = [i for i in paired if results[i] is None]
        live: list[int] = []
        for i in paired:
            if len(sets[i]) > _COSINE_BATCH_MAX_DOCS or len(paired) == 1:
                results[i] = _cosine_one_set(sets[i], tok, orders, red, sig)
            else:
                live.append(i)
        if not live:
            return results  # type: ignore[return-value]
        top = max(orders)
        st = _encode_live(sets, live, tok, top)
        n_tok = st.n_tokens().tolist()
        for a, b, solo in _fit_groups(st, top, st.n_texts):
            if solo:  # too wide for the batched keys even alone: interned ids
                results[live[a]] = _cosine_one_set(sets[live[a]], tok, orders, red, sig)
                continue
            per = _cosine_set_diversity(st.group(a, b), orders, red)
            table = np.column_stack([per[k] for k in orders])
            heads = table.mean(axis=1).tolist()  # == np.mean(row) for each row
            for j, (row, head) in enumerate(zip(table.tolist(), heads, strict=True)):
                if n_tok[a + j] == 0:
                    results[live[a + j]] = undefined(self.name, sig, "no tokens in any response")
                else:
                    results[live[a + j]] = MetricResult(
                        self.name, head, sig,
                        details={"per_n": dict(zip(orders, row, strict=True))})
        return results  # type: ignore[return-value]


ngram_cosine = public_function(NgramCosine)


def _cosine_one_set(texts: Sequence[str], tok: Tokenizer, orders: Sequence[int], red: str,
                    sig: str) -> MetricResult:
    """N-gram cosine diversity of one set of two or more responses, from its count matrix (see
    :func:`ngram_cosine`): the path of a large set (more responses than one batched block
    holds, or n-grams too wide for the batched keys) and of a lone small set, for which one
    dense count-matrix product is quicker than the batched blocks (same bits)."""
    idx = _index(list(texts), tok)
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


@register
class NgramDiversity(PooledMetric):
    """N-gram diversity score (NGD, Shaib et al. 2024): ``sum_{n=1}^{N} unique_n / total_n``.

    Counts are pooled over the whole set (corpus); n-grams never cross response boundaries. An
    order with no n-gram adds 0. ``N = 4`` and whitespace tokens by default, as in the
    ``diversity`` package (v0.3.1), which differs in two ways named here: it joins the documents
    with a space and splits on ``' '``, so its n-grams *do* cross document boundaries (and runs of
    spaces give empty tokens); and it rounds to 3 decimals. For single-spaced texts its value is
    this metric's formula on the single joined text. One text is a set the rule for degenerate
    sets refuses (``ngram_diversity([" ".join(docs)])`` is ``None``), so call the formula
    without the rule: ``divmeter.testing.formula("ngram-diversity", [" ".join(docs)])`` (last
    lines of the example; on the package's README example it gives 3.31495, which the package
    prints as 3.315).

    Args:
        responses: The response set / corpus.
        n_max: ``N``, the highest order summed.
        tokenizer: ``whitespace`` (default), ``tevet`` or ``word``.
        lowercase: Lowercase before tokenizing.
        approx: ``None`` (exact) or ``"hll"`` (distinct n-grams from a HyperLogLog sketch;
            see :func:`distinct_n`).

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
        >>> from divmeter.testing import formula
        >>> docs = ["the cat sat", "the cat ran"]
        >>> ngram_diversity(docs).value  # 4/6 + 3/4 + 2/2 + 0: n-grams within each response
        2.4166666666666665
        >>> formula("ngram-diversity", [" ".join(docs)]).value  # the diversity package's number
        3.466666666666667
    """

    name = "ngram-diversity"
    granularity = "corpus"
    higher_is_more_diverse = True
    bounds = (0.0, None)
    citation = f"{SHAIB2024} (NGD; `diversity` package's ngram_diversity_score)"
    description = ("N-gram diversity score: sum over n=1..n_max of unique/total n-grams, "
                   "n-grams not crossing response boundaries")
    params = {"n_max": Param(int, ge=1, le=MAX_ORDER, default=4,
                             doc="sum over n-gram orders 1..n_max"),
              "tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE,
              "approx": APPROX}
    agg = "sum"

    def signature(self) -> str:
        return make_signature(self.name, n=f"1..{self.p['n_max']}", agg="sum",
                              **_approx_fields(self.p["approx"]), **self._tok_fields())

    def per_order(self, unique: int, total: int, xlogx: float) -> float:
        return _distinct_value(unique, total, xlogx)


ngram_diversity = public_function(NgramDiversity)


# --------------------------------------------------------------------------------------------
# compression ratio


ALGORITHMS = ("gzip", "xz")


def _compressed_size(data: bytes, algo: str) -> int:
    """Size of ``data`` compressed once in memory: ``gzip`` level 9 (the size of
    ``gzip.compress(data)``), ``xz`` preset 6 with a CRC64 check (``lzma.compress``'s)."""
    if algo == "gzip":
        # gzip container around one deflate stream: 10-byte header + 8-byte trailer (CRC, size)
        return len(zlib.compress(data, 9, wbits=31))
    return len(lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=6))


@register
class CompressionRatio(Metric):
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

    name = "compression-ratio"
    family = "form"
    granularity = "corpus"
    higher_is_more_diverse = False
    bounds = (0.0, None)
    citation = f"{SHAIB2024} (CR; `diversity` package's compression_ratio)"
    description = ("UTF-8 size of the texts joined by `separator` / their compressed size "
                   "(gzip level 9 or xz preset 6), compressed once; higher = more repetitive")
    params = {"algorithm": Param(str, choices=ALGORITHMS, default="gzip", doc="compressor"),
              "separator": Param(str, default=" ", doc="joins the texts before compressing",
                                 alternative=" | ")}
    order_invariant = False  # the texts are joined in order, then compressed

    def signature(self) -> str:
        algo = self.p["algorithm"]
        return make_signature(self.name, algo=algo, level=9 if algo == "gzip" else 6,
                              sep=_sep_label(self.p["separator"]), enc="utf-8")

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        return [self._one(texts) for texts in sets]

    def _one(self, texts: Sequence[str]) -> MetricResult:
        if not texts:
            return self.result(None, "empty set")
        if not any(texts):
            return self.result(None, "every response is an empty string")
        data = self.p["separator"].join(texts).encode("utf-8")
        compressed = _compressed_size(data, self.p["algorithm"])
        return self.result(len(data) / compressed,
                           details={"original_bytes": len(data),
                                    "compressed_bytes": compressed})


compression_ratio = public_function(CompressionRatio)


# --------------------------------------------------------------------------------------------
# self-repetition


def _df_minus_one(pair: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """From sorted keys ``gram * width + response`` of n-gram occurrences: the distinct
    (n-gram, response) pairs and, for each, ``df - 1`` (how many *other* responses hold the
    n-gram), the runs of one n-gram giving its document frequency ``df``."""
    pair = pair[np.concatenate(([True], pair[1:] != pair[:-1]))]
    gram = pair // width
    starts = np.flatnonzero(np.concatenate(([True], gram[1:] != gram[:-1])))
    runs = np.diff(np.append(starts, gram.size))
    return pair, np.repeat(runs - 1, runs).astype(np.float64)


def _log1p_ints(x: np.ndarray) -> np.ndarray:
    """``ln(1 + x)`` of integer-valued floats, through :func:`math.log1p` of each distinct value
    (the same bits whatever the array's length or alignment, unlike a SIMD ufunc)."""
    if x.size == 0:
        return np.zeros(0)
    vals, inv = np.unique(x, return_inverse=True)
    table = np.array([math.log1p(v) for v in vals.tolist()])
    out: np.ndarray = table[inv.reshape(-1)]
    return out


def exact_weighted_log1p(counts: dict[int, int]) -> float:
    """``sum_s h_s * ln(1 + s)`` over a spectrum ``{s: h_s}`` of integers, exactly, rounded
    once (the correctly rounded sum of every term, as :class:`ExactSum` of the terms one by one
    gives it, in any order)."""
    total = Fraction(0)
    for s, h in counts.items():
        if s:
            total += Fraction(math.log1p(float(s))) * h
    return float(total)


class SelfRepetitionStats(FrozenTables):
    """Self-repetition in two passes. Pass 1: each n-gram's document frequency (an
    :class:`divmeter.inputs.text.table.NgramTable` of responses holding it, spilled past the
    memory budget), frozen as the n-grams of two or more responses (only they add to any
    ``s_d``). Pass 2: each response's ``s_d`` against it, kept as the spectrum ``{s_d:
    responses}``; the value is ``sum ln(1 + s_d)`` over it, exactly rounded, over the responses."""

    def _setup(self) -> None:
        m: SelfRepetition = self.metric  # type: ignore[assignment]
        self.tok, self.n, self.sig = m.tok, m.p["n"], m.signature()
        self._tables((self.n,), DOCS)
        self.n_docs = 0

    def _reset(self) -> None:
        if self.pass_ == 0:
            self.table = self._table()
            self.frozen = None
        self.s_counts: dict[int, int] = {}

    def _add(self, texts: Sequence[str]) -> None:
        if self.pass_ == 0:
            self.table.add_texts(texts, self.tok)
            return
        assert self.frozen is not None  # set by next_pass
        frozen = self.frozen[self.n]
        for chunk in hashed_chunks(texts, self.tok):
            s = np.zeros(chunk.lengths.size, np.int64)
            for _, hi, lo, doc in order_keys(chunk, (self.n,)):
                s = frozen.doc_sums(hi, lo, doc, chunk.lengths.size, DOCS)
            _add_spectrum(self.s_counts, s)

    def _merge(self, other: SelfRepetitionStats) -> None:
        if self.pass_ == 0:
            self.table.merge(other.table)
        else:
            for v, h in other.s_counts.items():
                self.s_counts[v] = self.s_counts.get(v, 0) + h

    def result(self) -> MetricResult:
        if self.n_docs == 0:
            return undefined(self.name, self.sig, "empty set")
        if self.n_docs == 1:
            return undefined(self.name, self.sig,
                             "needs at least 2 responses (repetition across responses); got 1")
        return MetricResult(self.name, exact_weighted_log1p(self.s_counts) / self.n_docs,
                            self.sig, details={"n_responses": self.n_docs})


def _add_spectrum(spec: dict[int, int], values: np.ndarray) -> None:
    """Count each value of ``values`` (integers) into ``spec``."""
    vals, mult = np.unique(values, return_counts=True)
    for v, h in zip(vals.tolist(), mult.tolist(), strict=True):
        spec[v] = spec.get(v, 0) + h


@register
class SelfRepetition(NgramMetric):
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

    name = "self-repetition"
    higher_is_more_diverse = False
    bounds = (0.0, None)
    citation = f"{SALKAR2022}; score as defined in {SHAIB2024} and its `diversity` package"
    description = ("Mean over responses of ln(1 + number of (n-gram, other response) matches "
                   "of the response's distinct n-grams); higher = more repetitive")
    params = {"n": Param(int, ge=1, default=4, doc="n-gram order"),
              "tokenizer": tokenizer_param("whitespace"), "lowercase": LOWERCASE}
    statistics = SelfRepetitionStats

    def signature(self) -> str:
        return make_signature(self.name, n=self.p["n"], log="ln", **self._tok_fields())

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        """All sets' distinct (n-gram, response) pairs come from one sort of
        ``(set, n-gram, response)`` keys; runs of one n-gram give its document frequency."""
        tok, k, sig = self.tok, self.p["n"], self._sig()
        results, live = _sets_with_pairs(
            sets, self.name, sig,
            "needs at least 2 responses (repetition across responses); got 1")
        if live:
            _beyond_longest(sets, tok, k, self.name, sig, results, blank=False)
            blank = _longest_response(sets, tok).tolist()
            for i in live:  # no token at all: every s_d is 0 (as computed), whatever n
                if results[i] is None and blank[i] == 0:
                    results[i] = MetricResult(self.name, 0.0, sig,
                                              details={"per_response": [0.0] * len(sets[i])})
            live = [i for i in live if results[i] is None]
        if not live:
            return results  # type: ignore[return-value]
        st = None if len(live) == 1 else _encode_live(sets, live, tok, k)
        # a batch of one set (small-input branch) is scored from its own keys, as a set too wide
        groups = [(0, 1, True)] if st is None else _fit_groups(st, k, _pow2_at_least(st.n_texts))
        for a, b, solo in groups:
            if solo or st is None:
                sizes = [len(sets[live[a]])]
                per = _self_repetition_one_set(sets[live[a]], tok, k)
            else:
                g = st.group(a, b)
                sizes = g.n_texts.tolist()
                per = _self_repetition_per_response(g, k)
            means = _segment_means(per, sizes)
            per_list = per.tolist()
            start = 0
            for j, (size, mean) in enumerate(zip(sizes, means, strict=True)):
                results[live[a + j]] = MetricResult(
                    self.name, mean, sig,
                    details={"per_response": per_list[start:start + size]})
                start += size
        return results  # type: ignore[return-value]


self_repetition = public_function(SelfRepetition)


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


def _self_repetition_one_set(texts: Sequence[str], tok: Tokenizer, n: int) -> np.ndarray:
    """``ln(1 + s_d)`` of every response of one set, from its own n-gram keys: the path of a
    lone set (small-input branch of :func:`self_repetition_many`) and of a set too wide for the
    batched keys."""
    n_docs = len(texts)
    keys, doc = _ngram_keys(_index(list(texts), tok), n)
    if not keys.size:
        return np.zeros(n_docs)
    pair, others = _df_minus_one(np.sort(keys * np.int64(n_docs) + doc), n_docs)
    return _log1p_ints(np.bincount(pair % n_docs, weights=others, minlength=n_docs))


# --------------------------------------------------------------------------------------------
# the kernels: many response sets at once
#
# Scoring 1,000 small sets one call at a time is dominated by per-call overhead (tokenizer and
# numpy calls on arrays of a few hundred items). The kernels below score a whole batch with one
# tokenizing pass (:func:`divmeter.inputs.text.encode_sets`) and, per n-gram order, one sort over
# the n-grams of *every* set: each token gets a set-local id (< V_s, the set's vocabulary size), and
# an n-gram's key is ``set * B**n + (its base-B number)`` with ``B = max_s V_s``, exact as long
# as ``n_sets * B**n < 2**62``. Batches too wide for that are cut into consecutive groups that
# fit (:func:`divmeter.inputs.text.fit_groups`); a single set too wide on its own is counted from
# the interned ids of :class:`NgramIndex`. Counts are integers, and every float is reduced in an
# order that does not depend on the batch (see :func:`_xlogx_sums`, :func:`_log1p_ints`), so a
# set's result does not depend on the other sets of its batch. The kernels receive sets already
# validated as tuples of strings (the engine validates them once, and applies the rule for
# degenerate sets, before the definitions' ``score``).

def _pooled_set_stats(st: SetTokens, orders: Sequence[int], *, xlogx: bool
                      ) -> dict[int, _OrderStats]:
    """Per order: distinct n-grams, n-gram occurrences and (``xlogx``) ``sum c ln c`` of each
    set, pooled over its texts. One sort per order for all sets."""
    n_sets = st.n_texts.size
    out: dict[int, _OrderStats] = {}
    for n, key, valid, scale in _set_ngram_keys(st, orders):
        if n == 1 and not xlogx:  # unigrams: the interning already counted them
            out[1] = (st.n_types.tolist(), st.n_tokens().tolist(), None)
            continue
        srt = key[valid]
        srt.sort()
        first = np.empty(srt.size, dtype=bool)
        first[:1] = True
        np.not_equal(srt[1:], srt[:-1], out=first[1:])
        sums = None
        if xlogx:
            starts = np.flatnonzero(first)
            runs = np.diff(np.append(starts, srt.size))
            sums = _xlogx_sums(srt[starts] // scale, runs, n_sets).tolist()
        if n_sets == 1:  # small-input branch (a batch of one): no cut into sets
            out[n] = ([int(np.count_nonzero(first))], [int(srt.size)], sums)
            continue
        cut = np.searchsorted(srt, np.arange(n_sets + 1, dtype=np.int64) * scale)
        n_first = np.concatenate(([0], np.cumsum(first)))  # distinct n-grams before each key
        out[n] = (np.diff(n_first[cut]).tolist(), np.diff(cut).tolist(), sums)
    return out


def _pooled_many(
    text_sets: Sequence[Sequence[str]],
    *,
    metric: str,
    tok: Tokenizer,
    orders: list[int],
    sig: str,
    per_order: Callable[[int, int, float], float],
    agg: str,
    xlogx: bool,
    approx: str | None = None,
) -> list[MetricResult]:
    """The kernel of the pooled-count metrics (distinct-n, entropy-n, EAD, n-gram diversity):
    ``per_order(distinct, total, sum c ln c)`` gives one order's value, ``agg`` (``mean`` or
    ``sum``) combines the orders; with ``approx``, each set's distinct counts come from its
    sketch (:func:`_sketch_stats`, as in corpus mode)."""
    results: list[MetricResult | None] = [None] * len(text_sets)
    if len(orders) == 1 and _beyond_longest(text_sets, tok, orders[0], metric, sig, results):
        return results  # type: ignore[return-value]
    if approx is not None:
        return _sketched_many(text_sets, metric, tok, orders, sig, per_order, agg, results)
    st = _encode_sets(text_sets, tok, max(orders))
    n_tok = st.n_tokens().tolist()
    for i, (k, t) in enumerate(zip(st.n_texts.tolist(), n_tok, strict=True)):
        if k == 0:
            results[i] = undefined(metric, sig, "empty set")
        elif t == 0:
            results[i] = undefined(metric, sig, "no tokens in any response")
    for a, b, solo in _fit_groups(st, max(orders)):
        if solo and results[a] is not None:
            continue
        stats = (_pooled_wide_stats(st.group(a, b), orders, xlogx=xlogx) if solo
                 else _pooled_set_stats(st.group(a, b), orders, xlogx=xlogx))
        cols = [stats[k] for k in orders]
        rows = [[per_order(d[j], t[j], 0.0 if s is None else s[j]) for d, t, s in cols]
                for j in range(b - a)]
        heads = _finish_rows(rows, agg)  # == np.mean(row) (or the sum) of each row
        for j, (row, head) in enumerate(zip(rows, heads, strict=True)):
            if results[a + j] is None:
                results[a + j] = MetricResult(metric, head, sig,
                                              details={"per_n": dict(zip(orders, row,
                                                                         strict=True))})
    return results  # type: ignore[return-value]


def _sketched_many(text_sets: Sequence[Sequence[str]], metric: str, tok: Tokenizer,
                   orders: list[int], sig: str, per_order: Callable[[Any, int, float], float],
                   agg: str, results: list[MetricResult | None]) -> list[MetricResult]:
    """:func:`_pooled_many` with ``approx=hll``: each set's sketch, one set at a time."""
    for i, texts in enumerate(text_sets):
        if results[i] is not None:
            continue
        if not texts:
            results[i] = undefined(metric, sig, "empty set")
            continue
        sketches, totals, tokens = _sketch_stats(texts, tok, orders)
        if tokens == 0:
            results[i] = undefined(metric, sig, "no tokens in any response")
            continue
        row = [per_order(sketches[n].estimate(), totals[n], 0.0) for n in orders]
        results[i] = MetricResult(metric, _finish_rows([row], agg)[0], sig,
                                  details={"per_n": dict(zip(orders, row, strict=True))})
    return results  # type: ignore[return-value]


def _sets_with_pairs(text_sets: Sequence[Sequence[str]], metric: str, sig: str, one: str
                     ) -> tuple[list[MetricResult | None], list[int]]:
    """Results for the sets a pair metric cannot score (empty: "empty set"; one response:
    ``one``), ``None`` for the others, and the indices of the others."""
    results: list[MetricResult | None] = [None] * len(text_sets)
    live: list[int] = []
    for i, texts in enumerate(text_sets):
        if not texts:
            results[i] = undefined(metric, sig, "empty set")
        elif len(texts) < 2:
            results[i] = undefined(metric, sig, one)
        else:
            live.append(i)
    return results, live


def _encode_live(text_sets: Sequence[Sequence[str]], live: list[int], tok: Tokenizer, top: int
                 ) -> SetTokens:
    """:func:`_encode_sets` of the sets ``live``, with room for the response index in keys."""
    sub = text_sets if len(live) == len(text_sets) else [text_sets[i] for i in live]
    return _encode_sets(sub, tok, top, max((len(t) for t in sub), default=1))


def _segment_means(values: np.ndarray, sizes: list[int]) -> list[float]:
    """``float(np.mean(segment))`` of consecutive segments (one reshape when sizes are equal,
    which reduces each row exactly as ``np.mean`` reduces it alone)."""
    if sizes and min(sizes) == max(sizes) > 0:
        out: list[float] = values.reshape(len(sizes), sizes[0]).mean(axis=1).tolist()
        return out
    bounds = np.cumsum([0, *sizes]).tolist()
    return [float(np.mean(values[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _text_starts(st: SetTokens) -> tuple[int, np.ndarray]:
    """A bound on a response's index within its set (``width``), and the index of each set's
    first response among all the group's responses."""
    n_texts = st.n_texts
    return max(int(n_texts.max(initial=0)), 1), np.cumsum(n_texts) - n_texts


def _response_pairs(st: SetTokens, orders: Sequence[int], width: int, text_start: np.ndarray
                    ) -> Iterator[tuple[int, np.ndarray, int]]:
    """For each order ``n``: ``(n, pair, B**n)`` with ``pair`` the sorted keys
    ``(set * B**n + n-gram) * width + response-in-set`` of every n-gram occurrence of the
    group (see :func:`_set_ngram_keys`)."""
    set_of_text = np.repeat(np.arange(st.n_texts.size, dtype=np.int64), st.n_texts)
    ends = st.ids == 0
    text_at = np.cumsum(ends) - ends  # text of each stream position (its index in the group)
    for n, key, valid, scale in _set_ngram_keys(st, orders):
        pos = np.flatnonzero(valid)
        text = text_at[pos]
        pair = key[pos] * width + (text - text_start[set_of_text[text]])
        pair.sort()
        yield n, pair, scale


def _pow2_at_least(x: np.ndarray) -> np.ndarray:
    """The smallest power of two >= each entry (>= 2)."""
    out: np.ndarray = np.left_shift(1, np.ceil(np.log2(np.maximum(x, 2))).astype(np.int64))
    return out


def _self_repetition_per_response(st: SetTokens, n: int) -> np.ndarray:
    """``ln(1 + s_d)`` for every response of every set (see :func:`self_repetition`).

    One sort of the keys ``(set * B**n + n-gram) << bits | response-in-set`` of every n-gram
    occurrence of the group (``2**bits``: a power of two >= the largest set, which
    :func:`_fit_groups` accounts for); runs of equal keys are the distinct (n-gram, response)
    pairs, runs of one n-gram within them give its document frequency, and each set's slice of
    the sorted keys is found by a binary search (no division)."""
    n_texts = st.n_texts
    n_sets, n_all = n_texts.size, int(n_texts.sum())
    bits = int(_pow2_at_least(np.array([n_texts.max(initial=1)]))[0]).bit_length() - 1
    text_start = np.cumsum(n_texts) - n_texts
    ends = st.ids == 0
    rin = np.cumsum(ends)  # response index within its set, at each stream position
    rin -= ends
    rin -= np.repeat(text_start, st.n_words)
    sums: np.ndarray = np.zeros(n_all)
    for _, key, valid, scale in _set_ngram_keys(st, [n]):
        pair = key[valid]
        if not pair.size:
            break
        pair <<= bits
        pair |= rin[: valid.size][valid]
        pair.sort()
        first = np.empty(pair.size, dtype=bool)
        first[0] = True
        np.not_equal(pair[1:], pair[:-1], out=first[1:])
        uniq = pair[first]  # distinct (set, n-gram, response)
        gram = uniq >> bits
        # only n-grams held by two or more responses (df >= 2) add to any s_d
        shared = gram[1:] == gram[:-1]
        keep = np.zeros(uniq.size, dtype=bool)
        keep[1:] = shared
        keep[:-1] |= shared
        at = np.flatnonzero(keep)
        if not at.size:
            break
        starts = np.flatnonzero(np.concatenate(([True], gram[at[1:]] != gram[at[:-1]])))
        runs = np.diff(np.append(starts, at.size))  # df of each shared n-gram
        others = np.repeat((runs - 1).astype(np.float64), runs)  # df - 1, per pair
        cuts = np.searchsorted(uniq, (np.arange(n_sets + 1, dtype=np.int64) * scale) << bits)
        set_of = np.searchsorted(cuts, at, side="right") - 1
        doc = text_start[set_of] + (uniq[at] & ((1 << bits) - 1))
        sums = np.bincount(doc, weights=others, minlength=n_all)
    return _log1p_ints(sums)


#: Sets with more responses than this are scored one by one from their count matrix (the batched
#: path holds one dense k x k similarity block per set).
_COSINE_BATCH_MAX_DOCS = 64


def _cosine_set_diversity(st: SetTokens, orders: Sequence[int], red: str
                          ) -> dict[int, np.ndarray]:
    """Per order, the pair-mean cosine diversity of each set (see :func:`ngram_cosine`)."""
    from scipy import sparse

    n_texts = st.n_texts
    n_sets, n_all = n_texts.size, int(n_texts.sum())
    width, text_start = _text_starts(st)
    sizes = {k: np.flatnonzero(n_texts == k) for k in np.unique(n_texts).tolist()}
    out: dict[int, np.ndarray] = {}
    for n, pair, scale in _response_pairs(st, orders, width, text_start):
        first = np.concatenate(([True], pair[1:] != pair[:-1])) if pair.size else pair > 0
        starts = np.flatnonzero(first)
        counts = np.diff(np.append(starts, pair.size)).astype(np.float64)
        uniq = pair[starts]
        gram_key = uniq // width
        # [:size]: an order with no n-gram in the whole group leaves no column (not one)
        col = (np.cumsum(np.concatenate(([True], gram_key[1:] != gram_key[:-1]))) - 1
               )[:gram_key.size]
        row = text_start[gram_key // scale] + uniq % width
        x = sparse.csr_matrix((counts, (row, col)),
                              shape=(n_all, int(col[-1]) + 1 if col.size else 0))
        prod = (x @ x.T).tocoo()  # block diagonal: sets share no column
        value = np.empty(n_sets)
        for k, members in sizes.items():
            # dense k x k Gram block of each set of k responses (exact integers)
            local = np.full(n_all, -1, dtype=np.int64)
            local[np.repeat(text_start[members], k) + np.tile(np.arange(k), members.size)] = (
                np.arange(members.size * k))
            sel = local[prod.row] >= 0
            gram = np.zeros(members.size * k * k)
            r, c = local[prod.row[sel]], local[prod.col[sel]]
            gram[(r // k) * k * k + (r % k) * k + (c % k)] = prod.data[sel]
            sim = _cosine_from_gram(gram.reshape(members.size, k, k))
            iu = np.triu_indices(k, k=1)
            # one C-contiguous row of pairs per set: each row is reduced as np.mean reduces it
            mean = np.ascontiguousarray(sim[:, iu[0], iu[1]]).mean(axis=1)
            value[members] = -mean if red == "neg-mean" else 1.0 - mean
        out[n] = value
    return out
