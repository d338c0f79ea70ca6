"""Pairwise-overlap form metrics: self-BLEU (two named variants) and homogenization scores.

**self-BLEU** scores each response as a BLEU hypothesis against all the *other* responses of
the set as references. Two aggregations are found in the literature and are named apart:

* ``variant="corpus"`` (the commonsense meta-evaluation, whose code calls the corpus-level
  BLEU of ``pycocoevalcap``): clipped n-gram matches and n-gram totals are summed over all
  hypotheses before dividing; the brevity penalty compares the summed hypothesis lengths with
  the summed *closest* reference lengths (ties go to the shorter reference); no smoothing, so
  the value is 0 as soon as one order has no match. This is exactly sacrebleu's
  ``corpus_bleu(..., tokenize="none", smooth_method="none")`` on the same tokens. nltk's
  ``corpus_bleu`` differs in one convention only: it counts a hypothesis shorter than ``k``
  tokens as 1 (not 0) ``k``-gram in the denominator (``max(1, total)`` per hypothesis), and
  it returns ``~1e-77`` instead of 0 when an order has no match. ``pycocoevalcap`` (the
  paper's code) adds ``1e-15`` / ``1e-9`` to each order's matches / totals, which moves the
  value by < 1e-9 when every order matches, and leaves a small positive number instead of 0
  when one does not: that arithmetic is the named smoothing ``smooth="coco"`` (see
  :func:`self_bleu`); the default ``smooth="none"`` is exact BLEU. With whitespace tokens and
  case kept (the paper's code splits on whitespace), ``1 - self-BLEU-3`` of the two sets of the
  paper's Figure 1 is 0.486 and 0.593, the published numbers, under both smoothings.
* ``variant="sentence"`` (Texygen, Zhu et al. 2018): the mean over responses of nltk's
  ``sentence_bleu`` with smoothing ``method1`` (a zero match count becomes ``0.1``, over the
  ``max(1, total)`` denominator); a hypothesis with no unigram match scores 0, and a
  hypothesis shorter than ``k`` tokens gets precision ``0.1`` at order ``k``, exactly as nltk.

A set whose responses are all shorter than ``n`` tokens is scored by the same conventions
(0 unsmoothed; ``0.1`` per empty order under method1; ``1e-6`` per empty order under ``coco``),
as sacrebleu, nltk and pycocoevalcap compute it. The cost grows with ``n`` (one pass per order),
so ``n`` is bounded by :data:`divmeter.core.params.MAX_ORDER` (100), declared and checked before the
first set (issue 16: ``n=10**9`` used to loop over a billion orders).

Neither is quadratic in the number of responses: clipping a hypothesis n-gram against *all
other* responses only needs, per n-gram, its largest count among the other texts, i.e. the
top-2 counts over the set and which text holds the top one; the closest reference length
only needs each length's neighbours in the sorted lengths. Everything is a few sorts and
``bincount`` calls over the n-gram occurrences.

**homogenization** (Shaib et al. 2024) is the mean pairwise similarity of the set under
ROUGE-1/2/L F-measure (Google's ``rouge-score`` definitions and tokenizer) or sentence BLEU
(``bleu``: both directions averaged; ``bleu-hf``: Hugging Face ``evaluate``'s BLEU with its
defaults, one direction per pair, as the PATTR paper's Section 3.3 uses it).

Each metric is one definition (:class:`SelfBleu`, :class:`Homogenization`): its declared
parameters, its signature, its formula on many sets at once, its corpus statistics
(:class:`SelfBleuStats`, an exact two-pass merge; homogenization has no exact merge, so corpus
mode gathers the responses and scores them once) and its cost (:meth:`Homogenization.cost`,
checked and announced by the engine before the first pair).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from divmeter.core import memory
from divmeter.core.errors import InvalidInputError
from divmeter.core.memory import NO_STEPS, Steps
from divmeter.core.params import LOWERCASE, MAX_ORDER, TEXT_TOKENIZERS, Param, tokenizer_param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.corpus.stats import ExactSum, FrozenTables
from divmeter.engine.definition import Metric
from divmeter.engine.public import public_function, register
from divmeter.inputs.text import NgramIndex, get_tokenizer
from divmeter.inputs.text.table import (
    TOP2,
    HashedChunk,
    hashed_chunks,
    order_keys,
)
from divmeter.inputs.text.tokenize import porter_stem, rouge_tokenize, tokenize_13a
from divmeter.metrics.reduce import mean_pairwise

__all__ = [
    "SelfBleu",
    "SelfBleuStats",
    "self_bleu",
    "Homogenization",
    "homogenization",
    "homogenization_cost",
    "rouge_tokenize",
    "tokenize_13a",
    "lcs_length",
]

ZHU2018 = "Zhu et al. 2018, Texygen: A Benchmarking Platform for Text Generation Models (SIGIR)"
COMMONSENSE = (
    "Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in Commonsense "
    "Generation (corpus-level self-BLEU, footnote 1: diversity = 1 - self-BLEU)"
)
PATTR2025 = (
    "Deshpande et al. 2025, A Penalty Goes a Long Way: Measuring Lexical Diversity in Synthetic "
    "Texts Under Prompt-Influenced Length Variations (Section 3.3: Hugging Face BLEU)"
)
SHAIB2024 = (
    "Shaib et al. 2024, Standardizing the Measurement of Text Diversity: A Tool and a "
    "Comparative Analysis of Scores (homogenization score)"
)

VARIANTS: tuple[str, ...] = ("corpus", "sentence")
#: Smoothings of self-BLEU per variant; the first is the variant's default.
SMOOTHINGS: dict[str, tuple[str, ...]] = {"corpus": ("none", "coco"), "sentence": ("method1",)}
MEASURES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL", "bleu", "bleu-hf")
TOKENIZER_NAMES: tuple[str, ...] = (*TEXT_TOKENIZERS, "rouge")
EPSILON_METHOD1 = 0.1  # nltk SmoothingFunction().method1 default epsilon
COCO_TINY = 1e-15  # pycocoevalcap bleu_scorer: added to every order's clipped matches
COCO_SMALL = 1e-9  # pycocoevalcap bleu_scorer: added to every order's totals and to ref_len
#: homogenization's BLEU order (``bleu`` and ``bleu-hf``: BLEU-4, as the PATTR paper's HF BLEU).
_HOMOGENIZATION_ORDER = 4


# --------------------------------------------------------------------------------------------
# Sufficient statistics of self-BLEU, linear in the number of n-gram occurrences
# --------------------------------------------------------------------------------------------


def _leave_one_out_matches(idx: NgramIndex, group: np.ndarray, n: int) -> np.ndarray:
    """Clipped n-gram matches of every text against all other texts of its group.

    Returns ``(n, n_docs)``: row ``k-1`` holds, for each text ``i``, the sum over its distinct
    ``k``-grams ``g`` of ``min(count_i(g), max_{j != i, same group} count_j(g))``.
    Texts of one group must be contiguous.
    """
    n_docs = idx.n_docs
    out = np.zeros((n, n_docs), dtype=np.int64)
    for k in range(1, n + 1):
        ids, doc, m = idx.order(k)
        # an n-gram occurring once in the whole input can match nothing: drop it before sorting
        keep = np.bincount(ids, minlength=m)[ids] > 1
        ids, doc = ids[keep], doc[keep]
        if ids.size == 0:
            continue
        # (n-gram, text) pairs with their counts, sorted by n-gram then text; the texts of a
        # group are contiguous, so the runs of one (n-gram, group) are contiguous too.
        key, cnt = np.unique(ids * np.int64(n_docs) + doc, return_counts=True)
        e_id = key // n_docs
        e_doc = key - e_id * n_docs
        e_grp = group[e_doc]
        start = np.empty(key.size, dtype=bool)
        start[0] = True
        np.not_equal(e_id[1:], e_id[:-1], out=start[1:])
        start[1:] |= e_grp[1:] != e_grp[:-1]
        starts = np.flatnonzero(start)
        run = np.cumsum(start) - 1
        top1 = np.maximum.reduceat(cnt, starts)
        pos = np.arange(key.size)
        holder = np.minimum.reduceat(np.where(cnt == top1[run], pos, key.size), starts)
        rest = cnt.copy()
        rest[holder] = 0
        top2 = np.maximum.reduceat(rest, starts)
        ref_max = top1[run]
        ref_max[holder] = top2  # the text holding the top count sees the second-best count
        clipped = np.minimum(cnt, ref_max)
        out[k - 1] = np.bincount(e_doc, weights=clipped, minlength=n_docs).astype(np.int64)
    return out


def _closest_ref_lengths(lengths: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For each text, the length of the other text of its group closest to its own length.

    Ties go to the shorter length (nltk, sacrebleu, pycocoevalcap). Texts alone in their
    group get -1. Uses the sorted lengths: the answer is a neighbour in sorted order.
    """
    d = lengths.size
    order = np.lexsort((lengths, group))
    s_len = lengths[order]
    s_grp = group[order]
    big = np.iinfo(np.int64).max // 4
    prev_len = np.full(d, -1, dtype=np.int64)
    next_len = np.full(d, -1, dtype=np.int64)
    same_prev = np.zeros(d, dtype=bool)
    same_prev[1:] = s_grp[1:] == s_grp[:-1]
    prev_len[1:] = s_len[:-1]
    same_next = np.zeros(d, dtype=bool)
    same_next[:-1] = s_grp[:-1] == s_grp[1:]
    next_len[:-1] = s_len[1:]
    diff_prev = np.where(same_prev, s_len - prev_len, big)
    diff_next = np.where(same_next, next_len - s_len, big)
    best = np.where(diff_prev <= diff_next, prev_len, next_len)
    best = np.where(same_prev | same_next, best, -1)
    out = np.empty(d, dtype=np.int64)
    out[order] = best
    return out


def _brevity_penalty(sys_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    """BLEU's brevity penalty: 1 if c > r, 0 if c == 0, else exp(1 - r / c)."""
    c = sys_len.astype(float)
    r = ref_len.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.exp(1.0 - r / np.where(c > 0, c, 1.0))
    return np.where(c > r, 1.0, np.where(c == 0, 0.0, bp))


def _coco_bleu(
    c_sum: np.ndarray, t_sum: np.ndarray, sys_len: np.ndarray, ref_len: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """pycocoevalcap's corpus BLEU-n (``compute_score(option="closest")``), per column.

    ``prod_{k<=n} (c_k + 1e-15) / (t_k + 1e-9)`` multiplied order by order, to the power
    ``1/n``; ``ratio = (sys_len + 1e-15) / (ref_len + 1e-9)``; if ``ratio < 1`` the value is
    multiplied by ``exp(1 - 1/ratio)``. Same operations in the same order as the scorer, so the
    floating-point result is the scorer's. Returns (value, smoothed precisions, bp).
    """
    prec = (c_sum + COCO_TINY) / (t_sum + COCO_SMALL)
    prod = np.ones(c_sum.shape[1])
    for k in range(n):
        prod = prod * prec[k]
    ratio = (sys_len + COCO_TINY) / (ref_len + COCO_SMALL)
    bp = np.where(ratio < 1, np.exp(1.0 - 1.0 / ratio), 1.0)
    return prod ** (1.0 / n) * bp, prec, bp


def _corpus_bleu(c_sum: np.ndarray, t_sum: np.ndarray, sys_len: np.ndarray,
                 ref_len: np.ndarray, n: int, smooth: str
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Corpus BLEU-n per column from the summed statistics (``(n, g)`` clipped matches and
    totals, ``(g,)`` hypothesis and closest reference lengths): exact (``none``: 0 as soon as
    one order has no match) or ``coco``. Returns (value, precisions, bp)."""
    if smooth == "coco":
        return _coco_bleu(c_sum, t_sum, sys_len, ref_len, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(t_sum > 0, c_sum / np.where(t_sum > 0, t_sum, 1), 0.0)
        log_mean = np.log(np.where(c_sum > 0, prec, 1.0)).sum(axis=0) / n
    bp = _brevity_penalty(sys_len, ref_len)
    return np.where((c_sum > 0).all(axis=0), bp * np.exp(log_mean), 0.0), prec, bp


def _sentence_bleu(matches: np.ndarray, totals: np.ndarray, lengths: np.ndarray,
                   closest: np.ndarray, n: int) -> np.ndarray:
    """nltk's ``sentence_bleu`` with smoothing method1 of each hypothesis (a column of the
    ``(n, d)`` clipped matches and totals): a zero match count becomes ``0.1`` over the
    ``max(1, total)`` denominator; no unigram match scores 0."""
    den = np.maximum(totals, 1).astype(float)
    prec = np.where(matches > 0, matches, EPSILON_METHOD1) / den
    log_mean = np.log(prec).sum(axis=0) / n
    bp = _brevity_penalty(lengths, closest)
    return np.asarray(np.where(matches[0] > 0, bp * np.exp(log_mean), 0.0))


def _self_bleu_groups(
    token_lists: Sequence[Sequence[str]],
    sizes: Sequence[int],
    n: int,
    variant: str,
    smooth: str = "none",
) -> dict[str, np.ndarray]:
    """self-BLEU of several groups (sets) at once; groups need >= 2 texts each."""
    sizes_arr = np.asarray(sizes, dtype=np.int64)
    group = np.repeat(np.arange(sizes_arr.size, dtype=np.int64), sizes_arr)
    idx = NgramIndex.from_tokens(token_lists)
    lengths = idx.lengths
    matches = _leave_one_out_matches(idx, group, n)  # (n, D)
    orders = np.arange(1, n + 1)[:, None]
    totals = np.maximum(lengths[None, :] - orders + 1, 0)  # (n, D)
    closest = _closest_ref_lengths(lengths, group)
    g = sizes_arr.size
    if variant == "corpus":
        c_sum = np.stack([np.bincount(group, weights=row, minlength=g) for row in matches])
        t_sum = np.stack([np.bincount(group, weights=row, minlength=g) for row in totals])
        sys_len = np.bincount(group, weights=lengths, minlength=g)
        ref_len = np.bincount(group, weights=closest, minlength=g)
        value, prec, bp = _corpus_bleu(c_sum, t_sum, sys_len, ref_len, n, smooth)
        return {
            "value": value,
            "matches": c_sum,
            "totals": t_sum,
            "precisions": prec,
            "bp": bp,
            "sys_len": sys_len,
            "ref_len": ref_len,
        }
    # sentence: nltk sentence_bleu with method1, per hypothesis, then the mean per group
    per = _sentence_bleu(matches, totals, lengths, closest, n)
    value = np.bincount(group, weights=per, minlength=g) / sizes_arr
    return {"value": value, "per_response": per, "group": group}


def _pair_reason(n_texts: int, has_tokens: bool, what: str) -> str | None:
    """The pair metrics' own reasons for a set they cannot score (the rule for degenerate sets
    keeps most such sets from them; the formula still answers them, e.g. in
    :func:`divmeter.testing.formula`)."""
    if n_texts == 0:
        return "empty set"
    if n_texts == 1:
        return f"one response: {what} needs at least two"
    if not has_tokens:
        return "no tokens in any response"
    return None


class SelfBleuStats(FrozenTables):
    """self-BLEU's corpus statistics, in two passes, read from the metric's resolved settings
    (order, variant, smoothing, tokenizer). Pass 1: for every n-gram (orders 1..n) the two
    largest counts any single response has (a multiset top-two, merged exactly), kept as an
    :class:`divmeter.inputs.text.table.NgramTable` (spilled past the memory budget) and frozen
    as the n-grams of two responses or more (the others clip to 0), and the multiset of
    response lengths. Pass 2: each response's clipped matches against the best *other*
    response (``min(c, top2 if c == top1 else top1)``), its totals and its closest other
    length, summed as integers (corpus variant) or its sentence BLEU in an :class:`ExactSum`
    (sentence variant); the value is the metric's arithmetic on those sums."""

    metric: SelfBleu

    def _setup(self) -> None:
        self.n = self.metric.n
        self._tables(tuple(range(1, self.n + 1)), TOP2)
        self.lengths: Counter[int] = Counter()
        self.n_docs = self.n_tokens = 0
        self._sorted: list[int] = []

    def _reset(self) -> None:
        if self.pass_ == 0:
            self.table = self._table()
            self.frozen = None
            self.lengths = Counter()
            self.n_tokens = 0
        self.matches = [0] * self.n
        self.totals = [0] * self.n
        self.sys_len = self.ref_len = 0
        self.sentence = ExactSum()

    def _add(self, texts: Sequence[str]) -> None:
        for chunk in hashed_chunks(texts, self.metric.tok):
            if self.pass_ == 0:
                lens, mult = np.unique(chunk.lengths, return_counts=True)
                self.lengths.update(dict(zip(lens.tolist(), mult.tolist(), strict=True)))
                self.n_tokens += int(chunk.ids.size)
                self.table.add_chunk(chunk)
            else:
                self._score(chunk)

    def _score(self, chunk: HashedChunk) -> None:
        frozen = self.frozen
        assert frozen is not None  # set by next_pass
        n_texts = chunk.lengths.size
        per = np.zeros((self.n, n_texts), dtype=np.int64)
        for k, hi, lo, doc in order_keys(chunk, self.orders):
            per[k - 1] = frozen[k].doc_sums(hi, lo, doc, n_texts, TOP2)
        lens = chunk.lengths.astype(np.int64)
        tot = np.maximum(lens[None, :] - np.arange(self.n)[:, None], 0)
        uniq, inv = np.unique(lens, return_inverse=True)
        closest = np.array([self._closest(int(v)) for v in uniq.tolist()],
                           dtype=np.int64)[inv.reshape(-1)]
        if self.metric.variant == "corpus":
            for k in range(self.n):
                self.matches[k] += int(per[k].sum())
                self.totals[k] += int(tot[k].sum())
            self.sys_len += int(lens.sum())
            self.ref_len += int(closest.sum())
            return
        self.sentence.extend(_sentence_bleu(per, tot, lens, closest, self.n).tolist())

    def _closest(self, length: int) -> int:
        """The length of the other response closest to ``length`` (ties: the shorter)."""
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

    def _merge(self, other: SelfBleuStats) -> None:
        if self.pass_ == 0:
            self.lengths.update(other.lengths)
            self.n_tokens += other.n_tokens
            self.table.merge(other.table)
            return
        self.matches = [a + b for a, b in zip(self.matches, other.matches, strict=True)]
        self.totals = [a + b for a, b in zip(self.totals, other.totals, strict=True)]
        self.sys_len += other.sys_len
        self.ref_len += other.ref_len
        self.sentence.merge(other.sentence)

    def _freeze(self) -> None:
        self._sorted = sorted(self.lengths)
        super()._freeze()

    def result(self) -> MetricResult:
        metric = self.metric
        reason = _pair_reason(self.n_docs, self.n_tokens > 0, "self-BLEU")
        if reason:
            return metric.result(None, reason)
        if metric.variant == "sentence":
            value = self.sentence.value() / self.n_docs
            return metric.result(value, details={"diversity": 1.0 - value})
        c_sum = np.array(self.matches, dtype=np.float64)[:, None]
        t_sum = np.array(self.totals, dtype=np.float64)[:, None]
        sys_len = np.array([float(self.sys_len)])
        ref_len = np.array([float(self.ref_len)])
        values, prec, bp = _corpus_bleu(c_sum, t_sum, sys_len, ref_len, self.n, metric.smooth)
        return metric.pack({"value": values, "matches": c_sum, "totals": t_sum,
                            "precisions": prec, "bp": bp, "sys_len": sys_len,
                            "ref_len": ref_len}, 0)


def _smooth_relation(smooth: Any, p: Mapping[str, Any]) -> str | None:
    """``smooth`` must be one of the variant's smoothings (``None``: the variant's own)."""
    allowed = SMOOTHINGS.get(p["variant"], ())
    if smooth is None or smooth in allowed:
        return None
    return f"with variant={p['variant']} must be one of {', '.join(allowed)}; got {smooth!r}."


@register
class SelfBleu(Metric):
    """self-BLEU-n: each response is a hypothesis, all the other responses its references.

    Uniform weights ``1/n`` over orders ``1..n``. ``variant="corpus"`` aggregates clipped
    matches and totals over the hypotheses (corpus BLEU, closest reference length, no
    smoothing; sacrebleu's numbers exactly); ``variant="sentence"`` averages nltk's
    ``sentence_bleu`` with smoothing method1 (Texygen). See the module docstring for every
    convention, including texts shorter than ``n``. Never quadratic in the number of responses.
    :func:`divmeter.score_many` scores many sets in one vectorised pass (the same numbers);
    corpus mode merges the statistics of :class:`SelfBleuStats` exactly, in two passes.

    ``smooth="coco"`` (corpus variant only) is the arithmetic of ``pycocoevalcap``'s BLEU
    scorer (nlg-eval), which the commonsense meta-evaluation's code calls: with ``C_k`` and
    ``T_k`` the summed clipped matches and totals of order ``k``, ``c`` the summed hypothesis
    lengths and ``r`` the summed closest reference lengths,
    ``BLEU = (prod_k (C_k + 1e-15) / (T_k + 1e-9)) ** (1/n) * BP`` with
    ``BP = exp(1 - 1/ratio)`` if ``ratio = (c + 1e-15) / (r + 1e-9) < 1``, else 1. A set whose
    responses share no ``k``-gram for some order then scores a tiny positive,
    length-dependent value (e.g. ``~3.5e-16`` for ``["a b", "c d"]`` at ``n=2``) instead of
    exactly 0, which breaks the ties that exact BLEU gives such sets; an order with no
    ``k``-gram at all (every text shorter than ``k``) gets ``1e-15 / 1e-9 = 1e-6``; when every
    order matches, the value moves by less than 1e-9 (identical responses score
    ``1 - ~6e-10``, not 1).

    Args:
        responses: The response set.
        n: Highest n-gram order (BLEU-n), 1 to :data:`~divmeter.core.params.MAX_ORDER` (100).
        variant: ``corpus`` or ``sentence``.
        tokenizer: ``whitespace`` (the default: the commonsense paper's code splits on
            whitespace), ``tevet``, ``word`` or ``rouge``.
        lowercase: Lowercase before tokenizing.
        smooth: ``None`` (the variant's own: ``none`` for corpus, ``method1`` for sentence),
            ``"none"`` or ``"coco"`` (corpus), ``"method1"`` (sentence).

    Returns:
        MetricResult whose ``value`` is self-BLEU in [0, 1] (higher = less diverse), with
        ``details["diversity"] = 1 - self-BLEU``. The corpus variant adds the sufficient
        statistics (``matches``, ``totals`` per order, ``sys_len``, ``ref_len``, ``bp``,
        ``precisions``; with ``coco`` the smoothed precisions and its BP); the sentence
        variant adds ``per_response``. ``value`` is ``None`` for a set the rule for degenerate
        sets refuses (fewer than two non-blank responses) and for a set without any token.

    Raises:
        InvalidInputError: For a bad parameter or input.

    Example:
        >>> r = self_bleu(["a b c d", "a b c e"], n=2)
        >>> round(r.value, 6), round(r.details["diversity"], 6)
        (0.707107, 0.292893)
        >>> r.signature
        'self-bleu|n:2|variant:corpus|smooth:none|tok:whitespace|case:mixed|v:0.1.0'
        >>> f"{self_bleu(['a b', 'c d'], n=2, smooth='coco').value:.4e}"
        '3.5355e-16'
    """

    name = "self-bleu"
    family = "form"
    granularity = "set"
    higher_is_more_diverse = False
    bounds = (0.0, 1.0)
    citation = f"corpus: {COMMONSENSE}; sentence: {ZHU2018}"
    description = ("BLEU-n of each response against all the others (corpus-level or mean "
                   "sentence-level); details['diversity'] = 1 - self-BLEU")
    params = {
        "n": Param(int, ge=1, le=MAX_ORDER, default=4, doc="highest n-gram order of BLEU"),
        "variant": Param(str, choices=VARIANTS, default="corpus",
                         doc="corpus BLEU or mean sentence BLEU"),
        "tokenizer": tokenizer_param("whitespace", TOKENIZER_NAMES),
        "lowercase": LOWERCASE,
        "smooth": Param(str, allow_none=True, default=None, alternative="coco",
                        doc="smoothing: none or coco (corpus), method1 (sentence); none given: "
                        "the variant's own (corpus: none, sentence: method1)",
                        relation=_smooth_relation),
    }
    statistics = SelfBleuStats

    def setup(self) -> None:
        p = self.p
        self.n: int = p["n"]
        self.variant: str = p["variant"]
        self.smooth: str = p["smooth"] or SMOOTHINGS[self.variant][0]
        self.tok = get_tokenizer(p["tokenizer"], p["lowercase"])

    def signature(self) -> str:
        return make_signature("self-bleu", n=self.n, variant=self.variant, smooth=self.smooth,
                              tok=self.tok.name, case=self.tok.case)

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        tokens = self.tok.many([t for s in sets for t in s])
        per_set: list[list[list[str]]] = []
        pos = 0
        for s in sets:
            per_set.append(tokens[pos : pos + len(s)])
            pos += len(s)
        results: list[MetricResult | None] = [None] * len(per_set)
        ok: list[int] = []
        for i, t in enumerate(per_set):
            reason = _pair_reason(len(t), any(t), "self-BLEU")
            if reason:
                results[i] = self.result(None, reason)
            else:
                ok.append(i)
        if ok:
            stats = _self_bleu_groups([tok for i in ok for tok in per_set[i]],
                                      [len(per_set[i]) for i in ok], self.n, self.variant,
                                      self.smooth)
            for g, i in enumerate(ok):
                results[i] = self.pack(stats, g)
        return [r for r in results if r is not None]

    def pack(self, stats: Mapping[str, np.ndarray], g: int) -> MetricResult:
        """The result of group ``g`` of the statistics of :func:`_self_bleu_groups` (or of the
        corpus accumulator's sums), with its details."""
        n = self.n
        value = float(stats["value"][g])
        details: dict[str, Any] = {"diversity": 1.0 - value}
        if self.variant == "corpus":
            details.update(
                matches={k + 1: int(stats["matches"][k, g]) for k in range(n)},
                totals={k + 1: int(stats["totals"][k, g]) for k in range(n)},
                precisions={k + 1: float(stats["precisions"][k, g]) for k in range(n)},
                bp=float(stats["bp"][g]),
                sys_len=int(stats["sys_len"][g]),
                ref_len=int(stats["ref_len"][g]),
            )
        else:
            details["per_response"] = stats["per_response"][stats["group"] == g].tolist()
        return self.result(value, details=details)


self_bleu = public_function(SelfBleu)


# --------------------------------------------------------------------------------------------
# Pairwise similarities for homogenization
# --------------------------------------------------------------------------------------------


def lcs_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Bit-parallel (Allison & Dix 1986; Hyyrö 2004) with Python integers as bit vectors:
    ``O(len(b) * len(a) / wordsize)``.

    Example:
        >>> lcs_length("the cat sat on the mat".split(), "the dog sat on a mat".split())
        4
    """
    if not a or not b:
        return 0
    masks: dict[Any, int] = {}
    for i, t in enumerate(a):
        masks[t] = masks.get(t, 0) | (1 << i)
    return _lcs_from_masks(masks, len(a), b)


def _lcs_from_masks(masks: dict[Any, int], m: int, b: Sequence[Any]) -> int:
    full = (1 << m) - 1
    v = full
    get = masks.get
    for t in b:
        u = v & get(t, 0)
        v = ((v + u) | (v - u)) & full
    return m - v.bit_count()


def _lcs_matrix(seqs: list[list[int]]) -> np.ndarray:
    """Symmetric matrix of pairwise LCS lengths (diagonal = own length)."""
    m = len(seqs)
    out = np.zeros((m, m), dtype=np.int64)
    for i, a in enumerate(seqs):
        out[i, i] = len(a)
        if not a:
            continue
        masks: dict[int, int] = {}
        for p, t in enumerate(a):
            masks[t] = masks.get(t, 0) | (1 << p)
        la = len(a)
        for j in range(i + 1, m):
            b = seqs[j]
            if b:
                out[i, j] = out[j, i] = _lcs_from_masks(masks, la, b)
    return out


def _level_matrix(idx: NgramIndex, k: int) -> sp.csr_matrix | None:
    """The binary text x (k-gram, level) matrix ``X`` with ``X X^T = O`` of :func:`_min_overlap`
    (``None`` when no text has a k-gram)."""
    d = idx.n_docs
    ids, doc, _ = idx.order(k)
    if ids.size == 0:
        return None
    order = np.lexsort((ids, doc))
    s_id, s_doc = ids[order], doc[order]
    start = np.empty(s_id.size, dtype=bool)
    start[0] = True
    start[1:] = (s_id[1:] != s_id[:-1]) | (s_doc[1:] != s_doc[:-1])
    starts = np.flatnonzero(start)
    rank = np.arange(s_id.size) - np.repeat(starts, np.diff(np.append(starts, s_id.size)))
    _, col = np.unique(s_id * np.int64(rank.max() + 1) + rank, return_inverse=True)
    return sp.csr_matrix(
        (np.ones(s_id.size), (s_doc, col.ravel())), shape=(d, int(col.max()) + 1)
    )


def _min_overlap(idx: NgramIndex, k: int, x: sp.csr_matrix | None = None,
                 rows: slice | None = None) -> np.ndarray:
    """``O[i, j] = sum_g min(count_i(g), count_j(g))`` over the k-grams, for all pairs (or for
    the rows ``rows`` against every text, given the :func:`_level_matrix` ``x``).

    Each occurrence of ``g`` in a text gets its rank ``t`` among the occurrences of ``g`` in
    that text; the binary text x (g, t) matrix ``X`` then gives ``O = X X^T``, since
    ``min(a, b)`` is the number of levels ``t`` reached by both counts.
    """
    d = idx.n_docs
    if rows is None:
        x = _level_matrix(idx, k)
        if x is None:
            return np.zeros((d, d))
        return np.asarray((x @ x.T).toarray(), dtype=float)
    if x is None:
        return np.zeros((len(range(d)[rows]), d))
    return np.asarray((x[rows] @ x.T).toarray(), dtype=float)


def _f_from_overlap(overlap: np.ndarray, totals: np.ndarray,
                    row_totals: np.ndarray | None = None) -> np.ndarray:
    """F-measure 2PR/(P+R) = 2 * overlap / (total_i + total_j); 0 where the overlap is 0
    (``row_totals``: the totals of the rows of a block, default ``totals``)."""
    s = (totals if row_totals is None else row_totals)[:, None] + totals[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(overlap > 0, 2.0 * overlap / np.where(s > 0, s, 1), 0.0)
    return np.asarray(f, dtype=float)


def _order_overlaps(idx: NgramIndex, n: int, xs: list[sp.csr_matrix | None] | None,
                    rows: slice | None) -> Iterator[tuple[int, np.ndarray]]:
    """``(k, O_k)`` for the orders ``k = 1..n``: the :func:`_min_overlap` of every pair (or of
    the rows ``rows`` against every text, given the level matrices ``xs`` of orders 1..n)."""
    for k in range(1, n + 1):
        yield k, (_min_overlap(idx, k) if xs is None else _min_overlap(idx, k, xs[k - 1], rows))


def _pairwise_bleu(idx: NgramIndex, n: int, xs: list[sp.csr_matrix | None] | None = None,
                   rows: slice | None = None) -> np.ndarray:
    """``S[i, j]``: sentence BLEU-n of hypothesis ``j`` against the single reference ``i``
    (all ``i``, or the rows ``rows`` given the level matrices ``xs`` of orders 1..n).

    No smoothing (0 if an order has no match), uniform weights, brevity penalty.
    """
    lengths = idx.lengths
    d = lengths.size
    r = lengths if rows is None else lengths[rows]
    log_sum = np.zeros((r.size, d))
    all_pos = np.ones((r.size, d), dtype=bool)
    for k, o in _order_overlaps(idx, n, xs, rows):
        tot = np.maximum(lengths - k + 1, 0).astype(float)
        all_pos &= o > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            log_sum += np.log(np.where(o > 0, o, 1.0) / np.where(tot > 0, tot, 1.0)[None, :])
    hyp = np.broadcast_to(lengths[None, :], (r.size, d))
    ref = np.broadcast_to(r[:, None], (r.size, d))
    bp = _brevity_penalty(hyp, ref)
    return np.where(all_pos, bp * np.exp(log_sum / n), 0.0)


def _pairwise_bleu_hf(idx: NgramIndex, n: int, xs: list[sp.csr_matrix | None] | None = None,
                      rows: slice | None = None) -> np.ndarray:
    """``S[i, j]``: Hugging Face ``evaluate`` BLEU-n of prediction ``i`` against reference ``j``
    (all ``i``, or the rows ``rows`` given the level matrices ``xs`` of orders 1..n).

    The arithmetic of its ``compute_bleu`` (tensorflow/nmt) for one prediction and one
    reference: ``p_k = matches_k / (len_i - k + 1)``, and ``p_k = 0`` when the prediction has no
    ``k``-gram; geometric mean ``exp(sum_k log(p_k) / n)`` if every ``p_k > 0``, else 0; with
    ``ratio = len_i / len_j``, ``BP = 1`` if ``ratio > 1``, else ``exp(1 - 1/ratio)``; an empty
    prediction or reference scores 0 (no n-gram can match).
    """
    lengths = idx.lengths.astype(float)
    d = lengths.size
    r = lengths if rows is None else lengths[rows]
    log_sum = np.zeros((r.size, d))
    all_pos = np.ones((r.size, d), dtype=bool)
    for k, o in _order_overlaps(idx, n, xs, rows):
        # symmetric: min(count_i, count_j) is the clipped match count
        tot = np.maximum(r - k + 1, 0.0)
        all_pos &= o > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(o > 0, o, 1.0) / np.where(tot > 0, tot, 1.0)[:, None]
            log_sum += (1.0 / n) * np.log(p)
    hyp = np.broadcast_to(r[:, None], (r.size, d))
    ref = np.broadcast_to(lengths[None, :], (r.size, d))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = hyp / np.where(ref > 0, ref, 1.0)
        bp = np.where(ratio > 1.0, 1.0, np.exp(1.0 - 1.0 / np.where(ratio > 0, ratio, 1.0)))
    ok = all_pos & (hyp > 0) & (ref > 0)
    return np.where(ok, np.exp(log_sum) * bp, 0.0)


#: Above this many responses homogenization scores its pairs in row blocks (memory linear in
#: the number of responses: blocks of at most ``divmeter.core.memory.BLOCK_BYTES`` per temporary)
#: and keeps no pair matrix; up to it, the whole matrix as before (values unchanged).
_DENSE_MAX = 1000


def _encoded(idx: NgramIndex) -> list[list[int]]:
    """Each text's token ids (for the LCS of ROUGE-L)."""
    enc: list[list[int]] = []
    pos = 0
    flat = idx.tokens.tolist()
    for ln in idx.lengths.tolist():
        enc.append(flat[pos : pos + ln])
        pos += ln
    return enc


def _blocked_mean(idx: NgramIndex, measure: str, n: int, block: int | None = None,
                  steps: Steps = NO_STEPS) -> float:
    """The homogenization value without the ``m x m`` matrix: pairs scored in row blocks.

    Equal to the mean of the dense path up to summation order (tested to 1e-12 relative). The
    sum runs over ``i < j`` for symmetric measures and ``bleu-hf`` (one direction), and over
    ``i != j`` for ``bleu`` (the mean of both directions). ``steps`` is told the pairs done
    after each row (``rougeL``) or block (progress only: the arithmetic does not change).
    """
    from divmeter.core.memory import BLOCK_BYTES

    m = idx.n_docs
    step = block or max(1, BLOCK_BYTES // (8 * m))
    total = 0.0
    pairs = m * (m - 1) // 2
    steps.stage("pairs", pairs)
    if measure == "rougeL":
        enc = _encoded(idx)
        lengths = idx.lengths.astype(float)
        for i in range(m - 1):
            steps(i * m - i * (i + 1) // 2)  # pairs of the rows before i
            seq = enc[i]
            row = np.zeros(m - i - 1)
            if seq:
                masks: dict[int, int] = {}
                for p, t in enumerate(seq):
                    masks[t] = masks.get(t, 0) | (1 << p)
                row = np.array([_lcs_from_masks(masks, len(seq), b) if b else 0
                                for b in enc[i + 1 :]], dtype=float)
            total += float(_f_from_overlap(row[None, :], lengths[i + 1 :],
                                           lengths[i : i + 1]).sum())
        steps(pairs)
        return total / (m * (m - 1) / 2)
    orders = [int(measure[-1])] if measure in ("rouge1", "rouge2") else list(range(1, n + 1))
    xs = [_level_matrix(idx, k) for k in range(1, max(orders) + 1)]
    cols = np.arange(m)
    for lo in range(0, m, step):
        hi = min(lo + step, m)
        rows = slice(lo, hi)
        idx_rows = np.arange(lo, hi)
        if measure in ("rouge1", "rouge2"):
            k = orders[0]
            tot = idx.doc_totals(k).astype(float)
            blk = _f_from_overlap(_min_overlap(idx, k, xs[k - 1], rows), tot, tot[rows])
        elif measure == "bleu":
            blk = _pairwise_bleu(idx, n, xs, rows)
        else:
            blk = _pairwise_bleu_hf(idx, n, xs, rows)
        if measure == "bleu":
            keep = cols[None, :] != idx_rows[:, None]
        else:
            keep = cols[None, :] > idx_rows[:, None]
        total += float(blk[keep].sum())
        steps(pairs - (m - hi) * (m - hi - 1) // 2)  # pairs of the rows before hi
    return total / (m * (m - 1) if measure == "bleu" else m * (m - 1) / 2)


@register
class Homogenization(Metric):
    """Homogenization score: the mean similarity over all pairs of responses.

    ``rouge1`` / ``rouge2`` / ``rougeL`` are rouge-score's F-measures (``2PR / (P + R)``,
    0 when nothing overlaps; ROUGE-L from the longest common subsequence, computed
    bit-parallel). They are symmetric, so the mean over ordered pairs ``i != j`` (what the
    ``diversity`` package loops over) equals the mean over unordered pairs. ``bleu`` is
    sentence BLEU-4 of ``r_j`` against the single reference ``r_i`` (uniform weights,
    brevity penalty, no smoothing), averaged over the ordered pairs ``i != j`` since BLEU is
    not symmetric.

    ``bleu-hf`` is the PATTR paper's setting (Section 3.3: "the implementations of ROUGE-1/2/L
    and BLEU scores in the Hugging Face library with default parameters", over the
    ``m(m-1)/2`` *unique* pairs): ``evaluate``'s BLEU with its defaults, i.e. the ``13a``
    tokenizer (:func:`tokenize_13a`), case kept, ``max_order=4``, no smoothing, and **one
    direction** per unordered pair: for ``i < j`` (input order) ``r_i`` is the prediction and
    ``r_j`` its single reference, ``bleu.compute(predictions=[r_i], references=[r_j])``; the
    value is the mean over the ``i < j`` pairs. Its brevity penalty is ``exp(1 - r/c)`` for
    ``c <= r`` (with one reference, shortest = closest). The tokenizer is part of the setting:
    ``tokenizer`` and ``lowercase`` must stay at their defaults (they are not used) and the
    signature records ``tok:13a|case:mixed``. Where ``evaluate`` divides by zero (an empty
    prediction or reference) the pair scores 0.

    Differences from ``diversity.homogenization_score`` (v0.3.1), named: it rounds the result
    to 3 decimals; it returns 1.0 when every pair scores 0 (its "all strings identical" branch
    fires for totally dissimilar sets); and its ``bleu`` divides one corpus-level BLEU (of
    all other responses against ``r_i``, HuggingFace ``evaluate``'s BLEU with 13a tokenization)
    by ``len - 1`` a second time. divmeter does none of these. With ``measure="rougeL"`` and
    the default tokenizer the numbers are otherwise identical.

    Args:
        responses: The response set.
        measure: ``rouge1``, ``rouge2``, ``rougeL``, ``bleu`` (both directions, divmeter
            tokens) or ``bleu-hf`` (the PATTR paper's Hugging Face BLEU, one direction).
        tokenizer: ``rouge`` (rouge-score's: lowercase, non-alphanumerics split), ``tevet``,
            ``whitespace`` or ``word``.
        lowercase: Lowercase first (default, as rouge-score; ``False`` keeps case).
        use_stemmer: Porter-stem tokens longer than 3 characters (``rouge`` tokenizer only,
            needs nltk), as ``rouge-score``'s ``use_stemmer``.

    Returns:
        MetricResult whose ``value`` is the mean pairwise similarity in [0, 1] (higher = less
        diverse), with ``details["diversity"] = 1 - value`` and ``details["similarity"]``, the
        symmetric ``(m, m)`` pair matrix (for ``bleu`` the mean of both directions; for
        ``bleu-hf`` entry ``[i, j]`` and ``[j, i]`` hold the BLEU of ``r_min(i,j)`` against
        ``r_max(i,j)``; the diagonal is not used). ``None`` for a set the rule for degenerate
        sets refuses (fewer than two non-blank responses) and for a set without any token.
        Above 1,000 responses the pairs are scored in row blocks, so memory grows linearly with
        the set (a 50,000-response set needs no 50,000 x 50,000 matrix);
        ``details["similarity"]`` is then ``None`` and the value equals the whole-matrix mean
        up to summation order. The cost of a large set (:meth:`Homogenization.cost`) is
        checked against the memory limit and announced before the first pair.

    Raises:
        InvalidInputError: For a bad parameter or input.

    Example:
        >>> round(homogenization(["the cat sat", "the cat ran", "a dog ran"]).value, 6)
        0.333333
        >>> homogenization(["a b", "a c"]).signature
        'homogenization|measure:rougeL|tok:rouge|case:lc|stem:no|v:0.1.0'
        >>> homogenization(["a b", "a c"], measure="bleu-hf").signature.split("|")[:5]
        ['homogenization', 'measure:bleu-hf', 'n:4', 'smooth:none', 'tok:13a']
    """

    name = "homogenization"
    family = "form"
    granularity = "set"
    higher_is_more_diverse = False
    bounds = (0.0, 1.0)
    citation = SHAIB2024
    description = ("Mean pairwise ROUGE-1/2/L F-measure or sentence BLEU over the set "
                   "(higher = more homogeneous); details['diversity'] = 1 - score")
    params = {
        "measure": Param(str, choices=MEASURES, default="rougeL", doc="pairwise similarity"),
        "tokenizer": tokenizer_param("rouge", TOKENIZER_NAMES),
        "lowercase": Param(bool, default=True, doc="lowercase before tokenizing"),
        "use_stemmer": Param(
            bool, default=False, doc="Porter stemming (rouge tokenizer only)",
            relation=lambda stem, p: None if not stem or p["tokenizer"] == "rouge" else (
                "applies to the rouge tokenizer only (as in rouge-score); got use_stemmer=True "
                f"with tokenizer={p['tokenizer']!r}.")),
    }
    #: Scored set by set: a large set's cost note and progress name the set.
    batched = False

    def setup(self) -> None:
        p = self.p
        self.measure: str = p["measure"]
        if self.measure == "bleu-hf":
            if p["tokenizer"] != "rouge" or p["lowercase"] is not True or p["use_stemmer"]:
                raise InvalidInputError(
                    "measure bleu-hf of homogenization fixes its tokenization (13a, case kept, "
                    "no stemming); expected tokenizer, lowercase and use_stemmer left at their "
                    f"defaults; got tokenizer={p['tokenizer']!r}, lowercase={p['lowercase']!r}, "
                    f"use_stemmer={p['use_stemmer']!r}."
                )
            self.tok = get_tokenizer("13a")
        else:
            self.tok = get_tokenizer(p["tokenizer"], p["lowercase"])
        self.stem: bool = p["use_stemmer"]

    def signature(self) -> str:
        bleu = self.measure in ("bleu", "bleu-hf")
        return make_signature(
            "homogenization", measure=self.measure, n=_HOMOGENIZATION_ORDER if bleu else None,
            smooth="none" if bleu else None, tok=self.tok.name, case=self.tok.case,
            stem=self.stem if self.tok.name == "rouge" else None)

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """The texts' tokens as the measure reads them (stemmed with ``use_stemmer``)."""
        tokens = self.tok.many(list(texts))
        return [porter_stem(t) for t in tokens] if self.stem else tokens

    def cost(self, n: int, items: Sequence[Any] | None = None) -> memory.Cost:
        """Every pair once (:func:`homogenization_cost`), its tokens counted by whitespace (a
        cheap estimate: the tokenizer may split punctuation further)."""
        tokens = sum(len(t.split()) for t in items) if items is not None else 0
        return homogenization_cost(n, tokens, self.measure, blocked=n > _DENSE_MAX)

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        return [self._one(s) for s in sets]

    def _one(self, texts: Sequence[str]) -> MetricResult:
        tokens = self.tokens(texts)
        reason = _pair_reason(len(tokens), any(tokens), "homogenization")
        if reason:
            return self.result(None, reason)
        idx = NgramIndex.from_tokens(tokens)
        n, measure = _HOMOGENIZATION_ORDER, self.measure
        if idx.n_docs > _DENSE_MAX:
            steps = memory.progress(self.cost(len(texts), texts))
            value = _blocked_mean(idx, measure, n, steps=steps)
            return self.result(value, details={"diversity": 1.0 - value, "similarity": None})
        if measure == "rougeL":
            sim = _f_from_overlap(_lcs_matrix(_encoded(idx)).astype(float),
                                  idx.lengths.astype(float))
        elif measure in ("rouge1", "rouge2"):
            k = int(measure[-1])
            sim = _f_from_overlap(_min_overlap(idx, k), idx.doc_totals(k).astype(float))
        elif measure == "bleu-hf":
            s = _pairwise_bleu_hf(idx, n)
            upper = np.triu(s, k=1)
            sim = upper + upper.T  # one direction: prediction r_i, reference r_j for i < j
        else:
            s = _pairwise_bleu(idx, n)
            sim = (s + s.T) / 2.0  # mean over ordered pairs == mean over unordered of the average
        value = mean_pairwise(sim)
        return self.result(value, details={"diversity": 1.0 - value, "similarity": sim})


homogenization = public_function(Homogenization)


#: Rough single-core seconds per pair of homogenization (``rougeL``: per pair and token of the
#: shorter side), measured on the project's 2-core machine (``benchmarks/bench_cost.py`` checks
#: the estimates against measured times; ``benchmarks/results_speed.md``).
HOMOGENIZATION_PAIR_SECONDS = {"rouge1": 1.2e-7, "rouge2": 8e-8, "bleu": 4e-7,
                               "bleu-hf": 3.3e-7, "rougeL": 1.6e-7}


def homogenization_cost(n: int, tokens: int, measure: str, *, blocked: bool = True,
                        orders: int = 4) -> memory.Cost:
    """The cost of homogenization on ``n`` responses of ``tokens`` tokens in all: every pair
    once (``bleu``: both directions); whole pair matrices, or (``blocked``, above 1,000
    responses) row blocks of at most :data:`~divmeter.core.memory.BLOCK_BYTES` per temporary.

    Example:
        >>> from divmeter.core.memory import format_seconds
        >>> c = homogenization_cost(20_000, 700_000, "rougeL")
        >>> c.pairs, format_seconds(c.seconds), c.what
        (199990000, '18.7 min', 'one row of pairs at a time')
    """
    pairs = n * (n - 1) // 2
    per_pair = HOMOGENIZATION_PAIR_SECONDS[measure]
    if measure == "rougeL":
        per_pair *= max(1.0, tokens / max(n, 1))
    if not blocked:
        needed, what = 6 * 8 * n * n, f"6 x a {n:,} x {n:,} pair matrix"
    elif measure == "rougeL":
        needed, what = 8 * 8 * n, "one row of pairs at a time"
    else:
        block = min(memory.BLOCK_BYTES, 8 * n * n)
        needed = 6 * block + 24 * tokens * (1 if measure in ("rouge1", "rouge2") else orders)
        what = "row blocks"
    cheaper = ("use homogenization:measure=rouge1 or rouge2 (tens of times faster), or score "
               "a random sample of the responses" if measure == "rougeL" else
               "score a random sample of the responses")
    return memory.Cost(f"homogenization ({measure})", n, needed, what, pairs, pairs * per_pair,
                       cheaper, hint=cheaper)
