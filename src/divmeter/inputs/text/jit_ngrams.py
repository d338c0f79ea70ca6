"""Compiled kernels (numba) of corpus n-gram statistics (:mod:`divmeter.inputs.text.table`).

Optional (``pip install 'divmeter[fast]'``); imported only by
:func:`divmeter.inputs.text.table.compiled_ngrams`, lazily. Every kernel computes exactly what
the numpy code of :mod:`divmeter.inputs.text.table` and :mod:`divmeter.inputs.text.keys`
computes (integers only), so the two paths give the same keys, runs and counts.

* :func:`type_hashes`: the 128-bit hash of each token type's bytes (:mod:`keys`' definition);
* :func:`extend_keys`, :func:`step_take`: keys of order ``n`` from those of order ``n - 1``
  (in place), and each order's keys taken in the same pass;
* :func:`packed_keys`, :func:`run_of_sorted`: the sorted run of a chunk's n-gram occurrences
  once numpy has sorted them as packed 64-bit words: one pass over runs of equal keys
  (occurrences, documents, or the top two per-document counts), checking the order;
* :func:`merge_runs`: two sorted runs into one (values added, or top two kept);
* :func:`lookup`: the values of many keys in a sorted run (0 where absent), through a table of
  bucket starts;
* :func:`doc_sums`: self-repetition's ``s_d`` and self-BLEU's clipped matches per response.

The kernels that make runs write them into a buffer the caller allocates (``3 * capacity``
words) and pack its rows to the size they found, so the caller hands the rest back to the
allocator without copying the run (:func:`divmeter.inputs.text.table.as_run`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from divmeter.inputs.text.keys import fmix_steps

__all__ = ["type_hashes", "extend_keys", "step_take", "packed_keys", "run_of_sorted", "merge_runs",
           "lookup", "bucket_starts", "doc_sums"]

_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
#: A text with more n-grams than this sorts them by two stable merge sorts, not an insertion
#: sort (:func:`doc_sums`).
_SMALL = 48


#: MurmurHash3's finaliser of one uint64 (:func:`divmeter.inputs.text.keys.fmix_steps`).
_fmix = njit(cache=True, nogil=True, inline="always")(fmix_steps)


@njit(cache=True, nogil=True)
def type_hashes(words: np.ndarray, starts: np.ndarray, sizes: np.ndarray, n_types: int,
                seeds: tuple[int, int], muls: tuple[int, int]
                ) -> tuple[np.ndarray, np.ndarray]:
    """The two lanes of each type's hash (:func:`divmeter.inputs.text.keys.hash_words`), from
    its first occurrence: ``sizes[t]`` bytes from ``starts[t]`` (``words``: 8 bytes from every
    offset)."""
    ha = np.empty(n_types, np.uint64)
    hb = np.empty(n_types, np.uint64)
    s0, s1 = np.uint64(seeds[0]), np.uint64(seeds[1])
    m0, m1 = np.uint64(muls[0]), np.uint64(muls[1])
    for t in range(n_types):
        size = sizes[t]
        a = s0 + np.uint64(size)
        b = s1 + np.uint64(size)
        j = 0
        while j < size:
            w = words[starts[t] + j]
            left = size - j
            if left < 8:
                w &= (np.uint64(1) << np.uint64(8 * left)) - np.uint64(1)
            a = _fmix((a ^ w) * m0)
            b = _fmix((b ^ w) * m1)
            j += 8
        ha[t] = a
        hb[t] = b
    return ha, hb


@njit(cache=True, nogil=True)
def extend_keys(ka: np.ndarray, kb: np.ndarray, ids: np.ndarray, lengths: np.ndarray,
                ha: np.ndarray, hb: np.ndarray, n: int, steps: tuple[int, int]) -> None:
    """Keys of order ``n`` at every position that starts an n-gram of its text, from the keys
    of order ``n - 1`` there (``k = fmix64(k * STEP + h(token at p + n - 1))``); the other
    positions are left as they were."""
    st0, st1 = np.uint64(steps[0]), np.uint64(steps[1])
    p = 0
    for d in range(lengths.size):
        end = p + lengths[d]
        for q in range(p, end - n + 1):
            g = ids[q + n - 1]
            ka[q] = _fmix(ka[q] * st0 + ha[g])
            kb[q] = _fmix(kb[q] * st1 + hb[g])
        p = end


@njit(cache=True, nogil=True)
def step_take(ka: np.ndarray, kb: np.ndarray, ids: np.ndarray, lengths: np.ndarray,
              ha: np.ndarray, hb: np.ndarray, n: int, steps: tuple[int, int], want_doc: bool,
              hi: np.ndarray, lo: np.ndarray, doc: np.ndarray) -> int:
    """:func:`extend_keys` to order ``n`` (for ``n > 1``) and the keys of every n-gram of the
    chunk taken in the same pass into ``hi``, ``lo`` and (``want_doc``) ``doc``, arrays of at
    least ``ids.size`` items; returns how many."""
    st0, st1 = np.uint64(steps[0]), np.uint64(steps[1])
    k = 0
    p = 0
    for d in range(lengths.size):
        end = p + lengths[d]
        for q in range(p, end - n + 1):
            a, b = ka[q], kb[q]
            if n > 1:
                g = ids[q + n - 1]
                a = _fmix(a * st0 + ha[g])
                b = _fmix(b * st1 + hb[g])
                ka[q] = a
                kb[q] = b
            hi[k] = a
            lo[k] = b
            if want_doc:
                doc[k] = d
            k += 1
        p = end
    return k


@njit(cache=True, nogil=True, inline="always")
def _top2_with(run: np.uint64, t1: np.uint64, t2: np.uint64) -> Any:
    """The two largest of ``t1 >= t2`` and ``run``, largest first."""
    if run > t1:
        return run, t1
    if run > t2:
        return t1, run
    return t1, t2


@njit(cache=True, nogil=True, inline="always")
def _less(h1: np.uint64, l1: np.uint64, h2: np.uint64, l2: np.uint64) -> Any:
    return h1 < h2 or (h1 == h2 and l1 < l2)


@njit(cache=True, nogil=True)
def packed_keys(hi: np.ndarray, bits: int, out: np.ndarray) -> None:
    """``out``: the words ``hi``'s top ``64 - bits`` bits | index (index in the low ``bits``),
    to be sorted as plain uint64 (:func:`run_of_sorted`)."""
    b = np.uint64(bits)
    for i in range(hi.size):
        out[i] = ((hi[i] >> b) << b) | np.uint64(i)


@njit(cache=True, nogil=True, inline="always")
def _pack_rows(buf: np.ndarray, k: int, c: int) -> None:
    """Rows written at capacity ``c`` (keys hi at 0, lo at ``c``, values at ``2c``) moved to
    capacity ``k <= c``: forward copies, each destination starting before its source."""
    if k < c:
        for t in range(k):
            buf[k + t] = buf[c + t]
        for t in range(k):
            buf[2 * k + t] = buf[2 * c + t]


@njit(cache=True, nogil=True)
def run_of_sorted(packed: np.ndarray, bits: int, hi: np.ndarray, lo: np.ndarray,
                  doc: np.ndarray, mode: int, buf: np.ndarray, weight: np.ndarray) -> int:
    """The run of occurrences in the order of ``packed`` (sorted :func:`packed_keys`), in one
    pass: records of equal keys, with values by ``mode`` as :func:`sort_run` (mode 0: each
    occurrence counts ``weight[j]`` if ``weight`` is not empty, else 1), written to ``buf``
    (``3 * packed.size`` words) as ``(3, m)`` rows; returns ``m``, or -1 if that order is not
    sorted by the full keys."""
    weighted = weight.size > 0
    n = packed.size
    mask = np.uint64((1 << bits) - 1)
    oh, ol, ov = buf[:n], buf[n:2 * n], buf[2 * n:3 * n]
    m = -1
    ph = np.uint64(0)
    pl = np.uint64(0)
    prev_doc = np.int64(-1)
    run = np.uint64(0)
    t1 = np.uint64(0)
    t2 = np.uint64(0)
    for i in range(n):
        j = np.int64(packed[i] & mask)
        h, lw = hi[j], lo[j]
        new = i == 0
        if not new:
            if _less(h, lw, ph, pl):
                return -1
            new = h != ph or lw != pl
        if new:
            if mode == 2 and m >= 0:
                t1, t2 = _top2_with(run, t1, t2)
                ov[m] = (t1 << _S32) | t2
            m += 1
            oh[m] = h
            ol[m] = lw
            ov[m] = 0
            prev_doc = np.int64(-1)
            run = np.uint64(0)
            t1 = np.uint64(0)
            t2 = np.uint64(0)
            ph, pl = h, lw
        if mode == 0:
            ov[m] += weight[j] if weighted else np.uint64(1)
        else:
            d = doc[j]
            if mode == 1:
                if d != prev_doc:
                    ov[m] += np.uint64(1)
                    prev_doc = d
            else:
                if d != prev_doc:
                    if prev_doc >= 0:
                        t1, t2 = _top2_with(run, t1, t2)
                    run = np.uint64(0)
                    prev_doc = d
                run += np.uint64(1)
    if mode == 2 and m >= 0:
        t1, t2 = _top2_with(run, t1, t2)
        ov[m] = (t1 << _S32) | t2
    _pack_rows(buf, m + 1, n)
    return m + 1


@njit(cache=True, nogil=True, inline="always")
def _top2(a: np.uint64, b: np.uint64) -> np.uint64:
    a1, a2 = a >> _S32, a & _LOW32
    b1, b2 = b >> _S32, b & _LOW32
    if b1 > a1:
        a1, a2, b1, b2 = b1, b2, a1, a2
    # a1 is the largest; the second is the larger of a2 and b1
    second = a2 if a2 > b1 else b1
    return (a1 << _S32) | second


@njit(cache=True, nogil=True)
def merge_runs(x: np.ndarray, y: np.ndarray, mode: int, buf: np.ndarray) -> int:
    """Two sorted runs merged into one (values of equal keys added, ``mode`` 0 or 1; or their
    top two kept, ``mode`` 2), written to ``buf`` (``3 * (nx + ny)`` words) as ``(3, k)``
    rows; returns ``k``."""
    xh, xl, xv = x[0], x[1], x[2]
    yh, yl, yv = y[0], y[1], y[2]
    nx, ny = xh.size, yh.size
    c = nx + ny
    oh, ol, ov = buf[:c], buf[c:2 * c], buf[2 * c:3 * c]
    i = j = k = 0
    while i < nx and j < ny:
        a, b = xh[i], yh[j]
        if _less(a, xl[i], b, yl[j]):
            oh[k] = a
            ol[k] = xl[i]
            ov[k] = xv[i]
            i += 1
        elif a == b and xl[i] == yl[j]:
            oh[k] = a
            ol[k] = xl[i]
            ov[k] = xv[i] + yv[j] if mode != 2 else _top2(xv[i], yv[j])
            i += 1
            j += 1
        else:
            oh[k] = b
            ol[k] = yl[j]
            ov[k] = yv[j]
            j += 1
        k += 1
    # one run is used up: the rest of the other follows as it is
    left = nx - i
    oh[k:k + left] = xh[i:]
    ol[k:k + left] = xl[i:]
    ov[k:k + left] = xv[i:]
    k += left
    left = ny - j
    oh[k:k + left] = yh[j:]
    ol[k:k + left] = yl[j:]
    ov[k:k + left] = yv[j:]
    k += left
    _pack_rows(buf, k, c)
    return k


@njit(cache=True, nogil=True)
def bucket_starts(hi: np.ndarray, bits: int) -> np.ndarray:
    """For a sorted ``hi``: the index of the first key of each of the ``2**bits`` buckets of
    top bits (and ``hi.size`` at the end)."""
    nb = 1 << bits
    out = np.empty(nb + 1, np.int64)
    shift = np.uint64(64 - bits)
    b = 0
    for i in range(hi.size):
        top = np.int64(hi[i] >> shift)
        while b <= top:
            out[b] = i
            b += 1
    while b <= nb:
        out[b] = hi.size
        b += 1
    return out


@njit(cache=True, nogil=True, inline="always")
def _find(hi: np.ndarray, lo: np.ndarray, val: np.ndarray, starts: np.ndarray,
          shift: np.uint64, h: np.uint64, lw: np.uint64) -> np.uint64:
    b = np.int64(h >> shift)
    i = starts[b]
    e = starts[b + 1]
    while i < e:
        if hi[i] == h:
            if lo[i] == lw:
                return val[i]
            if lo[i] > lw:
                return np.uint64(0)
        elif hi[i] > h:
            return np.uint64(0)
        i += 1
    return np.uint64(0)


@njit(cache=True, nogil=True)
def lookup(hi: np.ndarray, lo: np.ndarray, val: np.ndarray, starts: np.ndarray, bits: int,
           qh: np.ndarray, ql: np.ndarray) -> np.ndarray:
    """The value of each key ``(qh, ql)`` in the sorted run ``(hi, lo, val)`` (0 where absent);
    ``starts``: :func:`bucket_starts` of ``hi`` with ``bits``."""
    out = np.empty(qh.size, np.uint64)
    shift = np.uint64(64 - bits)
    for i in range(qh.size):
        out[i] = _find(hi, lo, val, starts, shift, qh[i], ql[i])
    return out


@njit(cache=True, nogil=True)
def doc_sums(hi: np.ndarray, lo: np.ndarray, doc: np.ndarray, n_docs: int,
             t_hi: np.ndarray, t_lo: np.ndarray, t_val: np.ndarray, starts: np.ndarray,
             bits: int, mode: int) -> np.ndarray:
    """Per text (``doc``: nondecreasing), over its distinct n-gram keys ``g`` with count ``c``
    in that text and value ``v`` in the table (0 where absent): ``mode`` 1 sums ``v - 1``
    where ``v >= 2`` (self-repetition's ``s_d``, ``v`` a document frequency); ``mode`` 2 sums
    ``min(c, top2 if c == top1 else top1)`` (self-BLEU's clipped matches, ``v`` the packed top
    two)."""
    out = np.zeros(n_docs, np.int64)
    shift = np.uint64(64 - bits)
    n = hi.size
    i = 0
    bh = np.empty(0, np.uint64)
    bl = np.empty(0, np.uint64)
    while i < n:
        d = doc[i]
        e = i
        while e < n and doc[e] == d:
            e += 1
        m = e - i
        if bh.size < m:
            bh = np.empty(2 * m, np.uint64)
            bl = np.empty(2 * m, np.uint64)
        if m <= _SMALL:
            for k in range(m):  # insertion sort of the text's keys
                h, lw = hi[i + k], lo[i + k]
                j = k - 1
                while j >= 0 and _less(h, lw, bh[j], bl[j]):
                    bh[j + 1] = bh[j]
                    bl[j + 1] = bl[j]
                    j -= 1
                bh[j + 1] = h
                bl[j + 1] = lw
        else:  # a long text: stable sorts by lo, then by hi
            order = np.argsort(lo[i:e], kind="mergesort")
            order = order[np.argsort(hi[i:e][order], kind="mergesort")]
            bh[:m] = hi[i:e][order]
            bl[:m] = lo[i:e][order]
        total = np.int64(0)
        k = 0
        while k < m:
            c = 1
            while k + c < m and bh[k + c] == bh[k] and bl[k + c] == bl[k]:
                c += 1
            v = _find(t_hi, t_lo, t_val, starts, shift, bh[k], bl[k])
            if mode == 1:
                if v >= 2:
                    total += np.int64(v) - 1
            elif v != 0:
                t1 = np.int64(v >> _S32)
                t2 = np.int64(v & _LOW32)
                other = t2 if c == t1 else t1
                total += c if c < other else other
            k += c
        out[d] = total
        i = e
    return out
