"""Sufficient statistics of corpus-level metric values, with an exact merge.

In corpus mode a metric is computed over *every* response of every input shard taken as one
set. Each metric below keeps the statistics its value is a function of; statistics of two shards
merge (:meth:`Accumulator.merge`) into the statistics of their union, so a corpus can be split
into shards in any way, the shards scored anywhere (processes, Ray workers, machines) and merged
in any order. The value from the merged statistics equals the metric called once on the whole
corpus (:func:`divmeter.score` on the list of all responses): integers (counts) bit for bit,
floats within 1e-12 relative (``tests/test_corpus.py`` checks both with random shardings).

Which metrics merge, and how (also :attr:`divmeter.registry.MetricSpec.merge`, shown by
``divmeter list``):

* ``exact`` (one pass): distinct-n, entropy-n, EAD and n-gram diversity (per-order n-gram count
  tables; entropy's ``sum c ln c`` is taken over the merged counts in a canonical order, so it
  is bit-identical); n-gram cosine (per n-gram the sum of each response's L2-normalised count
  weights and of their squares: ``sum_{i<j} u_i.u_j = sum_g (S_g^2 - Q_g) / 2``); embedding
  cosine (the same with dense embeddings); Vendi on embeddings (the ``d x d`` feature
  covariance sum ``sum_i u_i u_i^T``, Friedman & Dieng 2023 section 3's dual computation);
  response-level metrics (TTR, MATTR, MTLD, HD-D, length, PATTR, response compression and the
  richness indices of :mod:`divmeter.metrics.indices`: the per-response values, kept as an
  exactly rounded sum, :class:`ExactSum`).
* ``exact-two-pass``: self-repetition (pass 1: document frequency of every n-gram; pass 2:
  each response's ``ln(1 + sum_g (df(g) - 1))`` against the merged table, Salkar et al. 2022 /
  Shaib et al. 2024); self-BLEU (pass 1: per n-gram the top-two counts of any response and the
  multiset of lengths; pass 2: each response's clipped matches against its best *other*
  response and its closest other length, summed as integers: BLEU's sufficient statistics).
* ``none``: the others (compression ratio, homogenization, Chamfer, n-gram Vendi, BERTScore,
  ...). They run on one worker: the shards' texts are gathered (shards in the order of their
  names, so the result does not depend on the order they were given or merged in) and the
  metric is called once.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from divmeter.metrics._common import undefined
from divmeter.result import MetricResult

__all__ = [
    "ExactSum",
    "Accumulator",
    "MERGE_KINDS",
    "merge_kind",
    "make_accumulator",
]

def merge_kind(name: str) -> str:
    """``exact``, ``exact-two-pass`` or ``none`` (see the module docstring).

    Example:
        >>> merge_kind("distinct-n"), merge_kind("self-repetition"), merge_kind("chamfer")
        ('exact', 'exact-two-pass', 'none')
    """
    return MERGE_KINDS.get(name, "none")


class ExactSum:
    """A sum of floats kept exactly (Shewchuk's non-overlapping partials, as :func:`math.fsum`),
    so sums of shards merged in any order round to the same float.

    Example:
        >>> a, b = ExactSum(), ExactSum()
        >>> for x in (1e100, 1.0): a.add(x)
        >>> for x in (-1e100, 1e-20): b.add(x)
        >>> a.merge(b); a.value()
        1.0
    """

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, x: float) -> None:
        """Add one float exactly."""
        partials = self.partials
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def extend(self, xs: Iterable[float]) -> None:
        for x in xs:
            self.add(x)

    def merge(self, other: ExactSum) -> None:
        """Add another exact sum (still exact)."""
        self.extend(list(other.partials))

    def value(self) -> float:
        """The exact sum, correctly rounded."""
        return math.fsum(self.partials)


# --------------------------------------------------------------------------------------------
# the accumulators


class Accumulator:
    """Statistics of one metric over the responses added so far.

    Subclasses set :attr:`passes` (1 or 2). A run adds every shard's responses for pass 0,
    merges the shards' accumulators, then (two-pass metrics) calls :meth:`next_pass` on the
    merged one and repeats with accumulators made by :meth:`spawn` (they carry the frozen
    statistics of the earlier pass).

    Attributes:
        name: The metric.
        params: Its parameters, defaults filled in.
        pass_: The current pass (0-based).
        n_responses: Responses added in the current pass.
    """

    passes = 1
    kind = "exact"
    #: The shard being added (set by the runner; one-worker metrics order texts by it).
    key = ""

    def __init__(self, name: str, params: Mapping[str, Any]) -> None:
        self.name = name
        self.params = dict(params)
        self.pass_ = 0
        self.n_responses = 0
        self._setup()
        self._reset()

    def _setup(self) -> None:
        """Resolve the parameters (tokenizer, signature ...)."""

    def _reset(self) -> None:
        """Empty statistics of the current pass."""

    def add(self, texts: Sequence[str]) -> None:
        """Add a batch of responses (validated strings) to the current pass."""
        self.n_responses += len(texts)
        self._add(texts)

    def _add(self, texts: Sequence[str]) -> None:
        raise NotImplementedError

    def merge(self, other: Accumulator) -> None:
        """Add another accumulator's statistics of the same metric and pass."""
        if other.name != self.name or other.pass_ != self.pass_ or other.params != self.params:
            raise ValueError(f"cannot merge statistics of {other.name}/{other.pass_} into "
                             f"{self.name}/{self.pass_}")
        self.n_responses += other.n_responses
        self._merge(other)

    def _merge(self, other: Any) -> None:
        raise NotImplementedError

    def spawn(self) -> Accumulator:
        """An empty accumulator of the same metric and pass (with the earlier passes' frozen
        statistics), for one more shard."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.n_responses = 0
        new._reset()
        return new

    def next_pass(self) -> None:
        """Freeze this (merged) pass's statistics and start the next pass, empty."""
        raise NotImplementedError

    def result(self) -> MetricResult:
        """The metric's value over everything merged (after the last pass)."""
        raise NotImplementedError


def _ngrams(toks: list[str], k: int) -> Iterable[Any]:
    if k == 1:
        return toks
    return zip(*(toks[i:] for i in range(k)), strict=False)


class PooledCounts(Accumulator):
    """distinct-n, entropy-n, EAD and n-gram diversity: per order, the count of every n-gram
    pooled over the corpus (n-grams never cross response boundaries), and the token total."""

    def _setup(self) -> None:
        from divmeter.metrics import ngram as lx

        p = self.params
        if self.name == "distinct-n":
            self.tok, self.orders, self.sig = lx._distinct_setup(
                p["n"], p["n_max"], p["tokenizer"], p["lowercase"])
            self._per_order = lx._distinct_value
            self.agg, self.xlogx = "mean", False
        elif self.name == "entropy-n":
            self.tok, self.orders, b, self.sig = lx._entropy_setup(
                p["n"], p["n_max"], p["base"], p["tokenizer"], p["lowercase"])
            self._base = b
            self.agg, self.xlogx = "mean", True
        elif self.name == "ead":
            self.tok, self.orders, self._v, self.sig = lx._ead_setup(
                p["n"], p["n_max"], p["vocab_size"], p["tokenizer"], p["lowercase"])
            self.agg, self.xlogx = "mean", False
        else:  # ngram-diversity
            self.tok, self.orders, self.sig = lx._ngram_diversity_setup(
                p["n_max"], p["tokenizer"], p["lowercase"])
            self._per_order = lx._distinct_value
            self.agg, self.xlogx = "sum", False

    def _reset(self) -> None:
        self.counts: dict[int, Counter[Any]] = {k: Counter() for k in self.orders}
        self.n_tokens = 0

    def _add(self, texts: Sequence[str]) -> None:
        for toks in self.tok.each(texts):
            self.n_tokens += len(toks)
            for k in self.orders:
                self.counts[k].update(_ngrams(toks, k))

    def _merge(self, other: PooledCounts) -> None:
        self.n_tokens += other.n_tokens
        for k in self.orders:
            self.counts[k].update(other.counts[k])

    def _order_value(self, k: int) -> float:
        from divmeter.metrics import ngram as lx

        c = self.counts[k]
        unique, total = len(c), sum(c.values())
        if self.name == "entropy-n":
            # sum c ln c by increasing count value: the single-set branch of _xlogx_sums
            acc = 0.0
            for v, h in sorted(Counter(x for x in c.values() if x > 1).items()):
                acc += h * (v * math.log(v))
            return lx._entropy_value(total, acc, self._base)
        if self.name == "ead":
            return lx._ead_one(unique, total, self._v)
        return self._per_order(unique, total, 0.0)

    def result(self) -> MetricResult:
        if self.n_responses == 0:
            return undefined(self.name, self.sig, "empty set")
        if self.n_tokens == 0:
            return undefined(self.name, self.sig, "no tokens in any response")
        row = [self._order_value(k) for k in self.orders]
        if self.agg == "mean":
            head = float(np.array([row], dtype=np.float64).mean(axis=1)[0])
        else:
            head = float(sum(row))
        return MetricResult(self.name, head, self.sig,
                            details={"per_n": dict(zip(self.orders, row, strict=True))})


class TwoPass(Accumulator):
    """An exact two-pass metric: pass 1 gathers corpus-wide statistics, pass 2 scores each
    response against them; :meth:`next_pass` records the number of responses (``n_docs``)."""

    passes = 2
    kind = "exact-two-pass"

    def _freeze(self) -> None:
        """Freeze what pass 2 reads from pass 1 (beyond ``n_docs``)."""

    def next_pass(self) -> None:
        self.n_docs = self.n_responses
        self._freeze()
        self.pass_ = 1
        self.n_responses = 0
        self._reset()


class SelfRepetition(TwoPass):
    """Self-repetition in two passes: document frequencies, then each response's
    ``ln(1 + s_d)`` against the merged frequencies (an :class:`ExactSum` of them)."""

    def _setup(self) -> None:
        from divmeter.metrics import ngram as lx

        p = self.params
        self.tok, self.n, self.sig = lx._self_repetition_setup(
            p["n"], p["tokenizer"], p["lowercase"])
        self.df: Counter[Any] = Counter()
        self.n_docs = 0

    def _reset(self) -> None:
        if self.pass_ == 0:
            self.df = Counter()
        self.total = ExactSum()

    def _add(self, texts: Sequence[str]) -> None:
        for toks in self.tok.each(texts):
            grams = set(_ngrams(toks, self.n))
            if self.pass_ == 0:
                self.df.update(grams)
            else:
                df = self.df
                s = sum(df[g] for g in grams) - len(grams)
                self.total.add(math.log1p(float(s)))

    def _merge(self, other: SelfRepetition) -> None:
        if self.pass_ == 0:
            self.df.update(other.df)
        else:
            self.total.merge(other.total)

    def result(self) -> MetricResult:
        if self.n_docs == 0:
            return undefined(self.name, self.sig, "empty set")
        if self.n_docs == 1:
            return undefined(self.name, self.sig,
                             "needs at least 2 responses (repetition across responses); got 1")
        return MetricResult(self.name, self.total.value() / self.n_docs, self.sig,
                            details={"n_responses": self.n_docs})


class NgramCosine(Accumulator):
    """n-gram cosine: per order and n-gram ``g``, ``S_g = sum_i w_ig`` and ``Q_g = sum_i
    w_ig^2`` of the responses' L2-normalised count vectors ``w_i``; the pair sum is
    ``sum_g (S_g^2 - Q_g) / 2`` (exactly 0 for n-grams of one response)."""

    def _setup(self) -> None:
        from divmeter.metrics import ngram as lx

        p = self.params
        self.tok, self.orders, self.red, self.sig = lx._ngram_cosine_setup(
            p["n"], p["n_max"], p["reduction"], p["tokenizer"], p["lowercase"])

    def _reset(self) -> None:
        self.sums: dict[int, dict[Any, list[float]]] = {k: {} for k in self.orders}
        self.n_tokens = 0

    def _add(self, texts: Sequence[str]) -> None:
        for toks in self.tok.each(texts):
            self.n_tokens += len(toks)
            for k in self.orders:
                c = Counter(_ngrams(toks, k))
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

    def _merge(self, other: NgramCosine) -> None:
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


class _Embedded(Accumulator):
    """Shared by the embedding metrics: the encoder (loaded once per process) and the count of
    responses whose embedding is all zeros (the metric is undefined on such a corpus)."""

    def _setup(self) -> None:
        from divmeter.metrics import embedding as em

        self.sig = self._signature(em)
        self.n_zero = 0

    def _signature(self, em: Any) -> str:
        raise NotImplementedError

    def _unit_rows(self, texts: Sequence[str]) -> np.ndarray:
        from divmeter.metrics.embedding import embed_texts

        X = np.asarray(embed_texts(list(texts), self.params["model"]), dtype=np.float64)
        zero = ~np.any(X != 0, axis=1)
        self.n_zero += int(zero.sum())
        return X[~zero]

    def _undefined(self, min_n: int) -> MetricResult | None:
        n = self.n_responses
        if n == 0:
            return undefined(self.name, self.sig, "empty set")
        if n < min_n:
            return undefined(self.name, self.sig, f"needs at least {min_n} responses; got {n}")
        if self.n_zero:
            return undefined(self.name, self.sig,
                             f"{self.n_zero} responses have a zero embedding (no in-vocabulary "
                             f"word for {self.params['model']!r})")
        return None


class EmbeddingCosine(_Embedded):
    """embedding-cosine: the sum ``S`` of the unit embeddings and the sum of their squared
    norms; ``sum_{i<j} cos(e_i, e_j) = (|S|^2 - sum_i |u_i|^2) / 2``."""

    def _signature(self, em: Any) -> str:
        return str(em._sig("embedding-cosine", self.params["model"],
                           reduction=self.params["reduction"]))

    def _reset(self) -> None:
        self.S: np.ndarray | None = None
        self.sq = ExactSum()

    def _add(self, texts: Sequence[str]) -> None:
        from divmeter.metrics.embedding import normalize_rows

        if not texts:
            return
        U = normalize_rows(self._unit_rows(texts))
        s = U.sum(axis=0)
        self.S = s if self.S is None else self.S + s
        self.sq.extend(np.einsum("ij,ij->i", U, U).tolist())

    def _merge(self, other: EmbeddingCosine) -> None:
        self.n_zero += other.n_zero
        if other.S is not None:
            self.S = other.S.copy() if self.S is None else self.S + other.S
        self.sq.merge(other.sq)

    def result(self) -> MetricResult:
        bad = self._undefined(2)
        if bad is not None:
            return bad
        assert self.S is not None
        n = self.n_responses
        cross = (math.fsum((self.S * self.S).tolist()) - self.sq.value()) / 2.0
        mean = cross / (n * (n - 1) / 2.0)
        value = -mean if self.params["reduction"] == "neg-mean" else 1.0 - mean
        return MetricResult(self.name, value, self.sig, details={"n_responses": n})


class VendiEmbedding(_Embedded):
    """vendi-embedding: the ``d x d`` sum ``sum_i u_i u_i^T`` of the unit embeddings; the
    eigenvalues of its ``1/n`` multiple are the non-zero eigenvalues of ``K / n``."""

    def _signature(self, em: Any) -> str:
        from divmeter.metrics._common import check_positive

        q = check_positive(self.params["q"], "q", "vendi-embedding")
        self.q = q
        return str(em._sig("vendi-embedding", self.params["model"], q=q, kernel="cosine"))

    def _reset(self) -> None:
        self.G: np.ndarray | None = None

    def _add(self, texts: Sequence[str]) -> None:
        from divmeter.metrics.vendi import _row_norms, _scale_rows

        if not texts:
            return
        X = self._unit_rows(texts)
        if X.shape[0] == 0:
            return
        U = _scale_rows(X, 1.0 / _row_norms(X))
        g = U.T @ U
        self.G = g if self.G is None else self.G + g

    def _merge(self, other: VendiEmbedding) -> None:
        self.n_zero += other.n_zero
        if other.G is not None:
            self.G = other.G.copy() if self.G is None else self.G + other.G

    def result(self) -> MetricResult:
        from divmeter.metrics.vendi import (
            _clean_eigenvalues,
            _eigvalsh,
            _nonzero_or_raise,
            _vendi_q,
        )

        bad = self._undefined(1)
        if bad is not None:
            return bad
        assert self.G is not None
        w = _eigvalsh(self.G / self.n_responses)
        value = _vendi_q(_nonzero_or_raise(_clean_eigenvalues(w)), self.q)
        return MetricResult(self.name, value, self.sig, details={"n_responses": self.n_responses})


class ResponseMean(Accumulator):
    """Response-level metrics: each response's value (the metric on a batch of responses gives
    the same per-response values as on any other batch) and their exactly rounded sum; the
    corpus value is the mean over the defined responses, as the metric's set value."""

    def _setup(self) -> None:
        from divmeter.registry import get_metric

        spec = get_metric(self.name)
        self._fn = spec.load()
        self.sig = self._fn([""], **self.params).signature
        self.none_reason: str | None = None

    def _reset(self) -> None:
        self.total = ExactSum()
        self.n_defined = 0

    def _add(self, texts: Sequence[str]) -> None:
        if not texts:
            return
        res = self._fn(list(texts), **self.params)
        per = (res.details or {}).get("per_response") or []
        for v in per:
            if v is not None and v == v:
                self.total.add(float(v))
                self.n_defined += 1
        if res.value is None and self.none_reason is None:
            self.none_reason = res.reason

    def _merge(self, other: ResponseMean) -> None:
        self.total.merge(other.total)
        self.n_defined += other.n_defined
        if self.none_reason is None:
            self.none_reason = other.none_reason

    def result(self) -> MetricResult:
        details = {"n_responses": self.n_responses, "n_defined": self.n_defined}
        if self.n_responses == 0:
            return undefined(self.name, self.sig, "empty set", **details)
        if self.n_defined == 0:
            return undefined(self.name, self.sig, self.none_reason or "no defined response",
                             **details)
        return MetricResult(self.name, self.total.value() / self.n_defined, self.sig,
                            details=details)


class SelfBleu(TwoPass):
    """self-BLEU in two passes. Pass 1: for every n-gram (orders 1..n) the two largest counts
    any single response has (a multiset top-two, merged exactly) and the multiset of response
    lengths. Pass 2: each response's clipped matches against the best *other* response
    (``min(c, top2 if c == top1 else top1)``), its totals and its closest other length,
    summed as integers (corpus variant) or its sentence BLEU in an :class:`ExactSum`
    (sentence variant). The BLEU arithmetic is the metric's own
    (:mod:`divmeter.metrics.overlap`)."""

    def _setup(self) -> None:
        from divmeter.metrics import overlap as ov

        p = self.params
        self.n, self.variant, self.smooth = ov._check_self_bleu_params(
            p["n"], p["variant"], p["smooth"])
        _, tok_name, case = ov._tokenize([], p["tokenizer"], p["lowercase"], False, "self-bleu")
        self.sig = ov._self_bleu_signature(self.n, self.variant, self.smooth, tok_name, case)
        self.top: dict[int, dict[Any, tuple[int, int]]] = {}
        self.lengths: Counter[int] = Counter()
        self.n_docs = self.n_tokens = 0
        self._sorted: list[int] = []

    def _reset(self) -> None:
        if self.pass_ == 0:
            self.top = {k: {} for k in range(1, self.n + 1)}
            self.lengths = Counter()
            self.n_tokens = 0
        self.matches = [0] * self.n
        self.totals = [0] * self.n
        self.sys_len = self.ref_len = 0
        self.sentence = ExactSum()

    def _tokens(self, texts: Sequence[str]) -> list[list[str]]:
        from divmeter.metrics import overlap as ov

        p = self.params
        return ov._tokenize(list(texts), p["tokenizer"], p["lowercase"], False, "self-bleu")[0]

    def _add(self, texts: Sequence[str]) -> None:
        tokens = self._tokens(texts)
        if self.pass_ == 0:
            for toks in tokens:
                self.lengths[len(toks)] += 1
                self.n_tokens += len(toks)
                for k in range(1, self.n + 1):
                    table = self.top[k]
                    for g, c in Counter(_ngrams(toks, k)).items():
                        t = table.get(g)
                        if t is None:
                            table[g] = (c, 0)
                        elif c > t[1]:  # the new count enters the top two
                            table[g] = (c, t[0]) if c > t[0] else (t[0], c)
            return
        per = np.zeros((self.n, len(tokens)), dtype=np.int64)
        tot = np.zeros((self.n, len(tokens)), dtype=np.int64)
        lens = np.array([len(t) for t in tokens], dtype=np.int64)
        closest = np.array([self._closest(int(v)) for v in lens], dtype=np.int64)
        for i, toks in enumerate(tokens):
            for k in range(1, self.n + 1):
                table = self.top[k]
                m = 0
                for g, c in Counter(_ngrams(toks, k)).items():
                    t1, t2 = table[g]
                    m += min(c, t2 if c == t1 else t1)
                per[k - 1, i] = m
                tot[k - 1, i] = max(len(toks) - k + 1, 0)
        if self.variant == "corpus":
            for k in range(self.n):
                self.matches[k] += int(per[k].sum())
                self.totals[k] += int(tot[k].sum())
            self.sys_len += int(lens.sum())
            self.ref_len += int(closest.sum())
            return
        from divmeter.metrics import overlap as ov

        den = np.maximum(tot, 1).astype(float)
        prec = np.where(per > 0, per, ov.EPSILON_METHOD1) / den
        log_mean = np.log(prec).sum(axis=0) / self.n
        bp = ov._brevity_penalty(lens, closest)
        self.sentence.extend(np.where(per[0] > 0, bp * np.exp(log_mean), 0.0).tolist())

    def _closest(self, length: int) -> int:
        """The length of the other response closest to ``length`` (ties: the shorter)."""
        import bisect

        if self.lengths[length] >= 2:
            return length
        s = self._sorted
        i = bisect.bisect_left(s, length)
        prev = s[i - 1] if i > 0 else None
        nxt = s[i + 1] if i + 1 < len(s) else None
        if prev is None:
            return -1 if nxt is None else nxt
        if nxt is None or length - prev <= nxt - length:
            return prev
        return nxt

    def _merge(self, other: SelfBleu) -> None:
        if self.pass_ == 0:
            self.lengths.update(other.lengths)
            self.n_tokens += other.n_tokens
            for k in range(1, self.n + 1):
                table = self.top[k]
                for g, t in other.top[k].items():
                    mine = table.get(g)
                    table[g] = t if mine is None else _top2(mine, t)
            return
        self.matches = [a + b for a, b in zip(self.matches, other.matches, strict=True)]
        self.totals = [a + b for a, b in zip(self.totals, other.totals, strict=True)]
        self.sys_len += other.sys_len
        self.ref_len += other.ref_len
        self.sentence.merge(other.sentence)

    def _freeze(self) -> None:
        self._sorted = sorted(self.lengths)

    def result(self) -> MetricResult:
        from divmeter.metrics import overlap as ov

        if self.n_docs == 0:
            return undefined(self.name, self.sig, "empty set")
        if self.n_docs == 1:
            return undefined(self.name, self.sig, "one response: self-BLEU needs at least two")
        if self.n_tokens == 0:
            return undefined(self.name, self.sig, "no tokens in any response")
        if self.variant == "sentence":
            value = self.sentence.value() / self.n_docs
            return MetricResult(self.name, value, self.sig, details={"diversity": 1.0 - value})
        c_sum = np.array(self.matches, dtype=np.float64)[:, None]
        t_sum = np.array(self.totals, dtype=np.float64)[:, None]
        sys_len = np.array([float(self.sys_len)])
        ref_len = np.array([float(self.ref_len)])
        values: np.ndarray
        if self.smooth == "coco":
            values, prec, bp = ov._coco_bleu(c_sum, t_sum, sys_len, ref_len, self.n)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                prec = np.where(t_sum > 0, c_sum / np.where(t_sum > 0, t_sum, 1), 0.0)
                log_mean = np.log(np.where(c_sum > 0, prec, 1.0)).sum(axis=0) / self.n
            bp = ov._brevity_penalty(sys_len, ref_len)
            values = np.where((c_sum > 0).all(axis=0), bp * np.exp(log_mean), 0.0)
        stats: dict[str, np.ndarray] = {
            "value": values, "matches": c_sum, "totals": t_sum, "precisions": prec, "bp": bp,
            "sys_len": sys_len, "ref_len": ref_len}
        res: MetricResult = ov._self_bleu_pack(stats, 0, self.n, "corpus", self.sig)
        return res


def _top2(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The two largest of two top-two pairs (a multiset: ties keep both)."""
    x = sorted((*a, *b), reverse=True)
    return x[0], x[1]


class OneWorker(Accumulator):
    """Metrics with no exact merge: the texts of each shard, gathered and scored once, shards in
    the order of their keys (so merge order does not matter)."""

    kind = "none"

    def _reset(self) -> None:
        self.shards: dict[str, list[str]] = {}

    def _add(self, texts: Sequence[str]) -> None:
        self.shards.setdefault(self.key, []).extend(texts)

    def _merge(self, other: OneWorker) -> None:
        for k, texts in other.shards.items():
            self.shards.setdefault(k, []).extend(texts)

    def result(self) -> MetricResult:
        from divmeter.registry import get_metric

        texts = [t for k in sorted(self.shards) for t in self.shards[k]]
        res: MetricResult = get_metric(self.name).load()(texts, **self.params)
        return res


_KINDS: dict[str, type[Accumulator]] = {
    "distinct-n": PooledCounts,
    "entropy-n": PooledCounts,
    "ead": PooledCounts,
    "ngram-diversity": PooledCounts,
    "self-repetition": SelfRepetition,
    "self-bleu": SelfBleu,
    "ngram-cosine": NgramCosine,
    "embedding-cosine": EmbeddingCosine,
    "vendi-embedding": VendiEmbedding,
    "ttr": ResponseMean,
    "mattr": ResponseMean,
    "mtld": ResponseMean,
    "hdd": ResponseMean,
    "length": ResponseMean,
    "pattr": ResponseMean,
    "response-compression": ResponseMean,
    # the richness indices of divmeter.metrics.indices: per-response values too (vocd-D's
    # draws are keyed by each response's own tokens, so a shard gives the same values)
    **dict.fromkeys(("root-ttr", "corrected-ttr", "log-ttr", "summer-s", "dugast-u", "maas-a2",
                     "maas-log-v0", "yule-k", "yule-i", "herdan-vm", "simpson-d", "msttr",
                     "vocd-d", "mtld-ma-bi", "mtld-ma-wrap"), ResponseMean),
}


#: How each metric's corpus value is assembled from shards (a metric not named: ``none``).
MERGE_KINDS: dict[str, str] = {name: cls.kind for name, cls in _KINDS.items()}


def make_accumulator(name: str, params: Mapping[str, Any]) -> Accumulator:
    """An empty accumulator of metric ``name`` with ``params`` (validated, defaults filled
    in from the registry).

    Example:
        >>> acc = make_accumulator("distinct-n", {"n": 1})
        >>> acc.add(["a b", "a c"]); acc.result().value
        0.75
    """
    from divmeter.registry import get_metric

    spec = get_metric(name)
    full = {**spec.params, **dict(params)}
    return _KINDS.get(name, OneWorker)(name, full)
