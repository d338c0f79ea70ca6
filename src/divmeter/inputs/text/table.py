"""Compact exact n-gram statistics of a corpus: :class:`NgramTable`, per n-gram order a set of
sorted runs of fixed-width records (key hi, key lo, value: three uint64, 24 bytes a distinct
n-gram), merged exactly, spilled to disk past a memory budget and streamed back in key order.

This is the statistics object of the n-gram family in corpus mode (issue 32): the accumulators
of :mod:`divmeter.metrics.ngram` (distinct-n, entropy-n, EAD, n-gram diversity,
self-repetition) and :mod:`divmeter.metrics.overlap` (self-BLEU) keep one, shards' tables merge
(:meth:`NgramTable.merge`: associative, commutative, exact), a Ray cluster reduces them by key
range (:meth:`NgramTable.split`), and each metric finishes its value from what it needs: the
count spectrum (:meth:`NgramTable.spectrum`: how many n-grams occur ``c`` times, for every
``c``), or a frozen table to look keys up in (:meth:`NgramTable.frozen`).

Keys are the portable 128-bit hashes of :mod:`divmeter.inputs.text.keys` ("exact" = exact counts
of those keys; see there for the collision bound). A run is a ``(3, m)`` uint64 array sorted by
``(hi, lo)`` with unique keys; values are occurrence counts, document frequencies (both
combined by addition) or the two largest per-document counts packed as ``top1 << 32 | top2``
(combined by keeping the two largest).

Memory: a table holds its in-memory runs (24 bytes a record); :meth:`NgramTable.add_run` keeps
them few by merging the newest two while the newer is at least as large as the older (each
record is merged O(log) times), and past ``budget`` bytes every order's runs are merged into one and
written to ``spill_dir`` (a sorted run on disk, read back memory-mapped). Finishing streams all
runs of an order through a k-way merge in blocks, so memory stays bounded by the budget plus a
block per run.

With numba (``divmeter[fast]``) the kernels of :mod:`divmeter.inputs.text.jit_ngrams` do the
work; without it the numpy code here computes the same records.

Example:
    >>> from divmeter.inputs.text import get_tokenizer
    >>> t = NgramTable((1, 2))
    >>> t.add_texts(["a b a", "a b"], get_tokenizer("whitespace"))
    >>> t.spectrum(1), t.spectrum(2)  # unigrams: a x3, b x2; bigrams: "a b" x2, "b a" x1
    (({2: 1, 3: 1}, 2, 5), ({1: 1, 2: 1}, 2, 3))
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from types import ModuleType
from typing import Any

import numpy as np

from divmeter.inputs.text import intern as _intern
from divmeter.inputs.text.keys import MULS, SEEDS, STEPS, hash_words, step_keys, token_hashes
from divmeter.inputs.text.tokenize import Tokenizer

__all__ = ["NgramTable", "FrozenRun", "HashedChunk", "Scratch", "hashed_chunks", "chunk_runs",
           "compiled_ngrams", "RECORD_BYTES", "COUNT", "DOCS", "TOP2"]

#: Bytes of memory per record (distinct n-gram) held: key hi, key lo, value.
RECORD_BYTES = 24
#: What a run's values are: occurrences, documents holding the n-gram (both combine by
#: addition), or the top two per-document counts (combine by keeping the two largest).
COUNT, DOCS, TOP2 = 0, 1, 2
#: Characters of text hashed and counted at a time (bounds the working arrays of a batch).
CHUNK_CHARS = 1 << 20
#: Longest token the compiled scan takes (bytes); a text with a longer one is tokenized by
#: the dictionary path.
_MAX_TOKEN = 1 << 24
#: Records read from each run per step of the k-way merge.
BLOCK = 1 << 18
_EMPTY = np.zeros((3, 0), np.uint64)
_NO_DOC = np.zeros(1, np.int64)
_NO_WEIGHT = np.zeros(0, np.uint64)
_S32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFFFFFF)

_JIT = _intern.Kernels("divmeter.inputs.text.jit_ngrams")


def compiled_ngrams() -> ModuleType | None:
    """The compiled kernels (:mod:`divmeter.inputs.text.jit_ngrams`, importing numba the first
    time), or ``None`` without numba or with ``DIVMETER_NO_JIT=1``."""
    return _JIT()


# --------------------------------------------------------------------------------------------
# texts -> hashed tokens


@dataclass
class HashedChunk:
    """The tokens of consecutive texts with their types' hashes.

    Attributes:
        ids: The type of every token, in order (chunk-local ids ``0 .. n_types - 1``).
        lengths: Token count of each text.
        ha: First hash lane of each type (:mod:`divmeter.inputs.text.keys`).
        hb: Second hash lane of each type.
    """

    ids: np.ndarray
    lengths: np.ndarray
    ha: np.ndarray
    hb: np.ndarray


def _dict_chunk(texts: Sequence[str], tok: Tokenizer) -> HashedChunk:
    token_lists = tok.many(list(texts))
    flat = list(chain.from_iterable(token_lists))
    vocab = {t: i for i, t in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    ha, hb = token_hashes(list(vocab))
    return HashedChunk(ids, lengths, ha, hb)


def _jit_hashes(c: Any, jit: ModuleType | None) -> HashedChunk:
    n = int(c.n_types)
    if jit is not None:
        ha, hb = jit.type_hashes(c.words, c.starts, c.sizes, n, SEEDS, MULS)
    else:  # numba's scan, numpy's hash (the same bits)
        size = c.sizes[:n]
        width = int((size.max(initial=0) + 7) // 8)
        words = np.zeros((n, max(width, 1)), np.uint64)
        for j in range(width):
            left = np.clip(size - 8 * j, 0, 8)
            w = c.words[np.minimum(c.starts[:n] + 8 * j, c.words.size - 1)]
            words[:, j] = w & _intern._BYTE_MASK[left]
        ha, hb = hash_words(words, size)
    return HashedChunk(c.ids, c.lengths, ha, hb)


def hashed_chunks(texts: Sequence[str], tok: Tokenizer) -> Iterator[HashedChunk]:
    """The tokens of ``texts`` (tokenized by ``tok``) with their types' hashes, about
    :data:`CHUNK_CHARS` characters of text at a time; texts are never split.

    The ``whitespace`` and ``tevet`` tokenizers go through the compiled scan of
    :mod:`divmeter.inputs.text.jit` when numba is there; every other case through the
    tokenizer and a dictionary of types. Both give the same tokens, hence the same hashes.
    """
    texts = list(texts)
    # a part ends with the first text that brings it to CHUNK_CHARS characters (or the last)
    ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
    a = 0
    while a < len(texts):
        before = int(ends[a - 1]) if a else 0
        b = min(int(np.searchsorted(ends, before + CHUNK_CHARS, side="left")) + 1, len(texts))
        yield _hash_part(texts[a:b], tok)
        a = b


def _hash_part(part: list[str], tok: Tokenizer) -> HashedChunk:
    """The hashed tokens of ``part``: the compiled scan where it applies (any token length);
    where it declines (a NUL or separator character in a text, non-ASCII whitespace for
    ``whitespace``), the part is halved and each half tried again, down to the dictionary path
    for the few texts that need it."""
    if tok.name in _intern._BYTE_SPLITS and compiled_ngrams() is not None:
        cased = [t.lower() for t in part] if tok.lowercase else part
        jit = compiled_ngrams()
        got = _intern._jit_map(cased, tok.name, lambda c, g0, g1: _jit_hashes(c, jit),
                               types=True, eager=True, max_len=_MAX_TOKEN)
        if got is not None:
            return got[0] if len(got) == 1 else _concat_chunks(got)
        if len(part) > 64:
            half = len(part) // 2
            return _concat_chunks([_hash_part(part[:half], tok), _hash_part(part[half:], tok)])
    return _dict_chunk(part, tok)


def _concat_chunks(parts: list[HashedChunk]) -> HashedChunk:
    offsets = np.cumsum([0] + [p.ha.size for p in parts])
    ids = np.concatenate([p.ids + off for p, off in zip(parts, offsets, strict=False)])
    return HashedChunk(ids, np.concatenate([p.lengths for p in parts]),
                       np.concatenate([p.ha for p in parts]),
                       np.concatenate([p.hb for p in parts]))


# --------------------------------------------------------------------------------------------
# hashed tokens -> keys of every order -> sorted runs


def _window_index(lengths: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions starting an n-gram of their text, and the text of each (numpy)."""
    ends = np.cumsum(lengths)
    doc_of = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    pos = np.arange(int(ends[-1]) if ends.size else 0, dtype=np.int64)
    keep = pos + n <= ends[doc_of]
    return pos[keep], doc_of[keep]


class Scratch:
    """Working arrays reused from one chunk to the next (and from order to order): fresh
    memory costs a page fault per page on first touch, about as much as the work done in it.
    A consumer holds an array from :meth:`get` only until its next call for that name."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, size: int, dtype: Any) -> np.ndarray:
        a = self.arrays.get(name)
        if a is None or a.size < size or a.dtype != dtype:
            a = self.arrays[name] = np.empty(size + size // 4, dtype)
        return a[:size]


def order_keys(chunk: HashedChunk, orders: Sequence[int], want_doc: bool = True,
               scratch: Scratch | None = None
               ) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """``(n, hi, lo, doc)`` for each order of ``orders`` (ascending): the key of every n-gram
    occurrence of the chunk (n-grams never cross texts) and the text it is in (nondecreasing;
    an empty array unless ``want_doc``). With ``scratch``, the arrays of an order are
    overwritten by the next order's (use each before asking for the next)."""
    jit = compiled_ngrams()
    work = scratch if scratch is not None else Scratch()
    size = int(chunk.ids.size)
    ka = np.take(chunk.ha, chunk.ids, out=work.get("ka", size, np.uint64))
    kb = np.take(chunk.hb, chunk.ids, out=work.get("kb", size, np.uint64))
    top = max(orders)
    for n in range(1, top + 1):
        if jit is not None:
            if n in orders:
                if scratch is None:  # the caller may keep them
                    work = Scratch()
                hi = work.get("hi", size, np.uint64)
                lo = work.get("lo", size, np.uint64)
                doc = work.get("doc", size if want_doc else 0, np.int64)
                k = jit.step_take(ka, kb, chunk.ids, chunk.lengths, chunk.ha, chunk.hb, n,
                                  STEPS, want_doc, hi, lo, doc)
                yield n, hi[:k], lo[:k], doc[:k]
            elif n > 1:
                jit.extend_keys(ka, kb, chunk.ids, chunk.lengths, chunk.ha, chunk.hb, n, STEPS)
            continue
        pos, doc = _window_index(chunk.lengths, n)
        if n > 1:
            nxt = chunk.ids[pos + n - 1]
            sub_a, sub_b = ka[pos], kb[pos]
            step_keys(sub_a, sub_b, chunk.ha[nxt], chunk.hb[nxt])
            ka[pos], kb[pos] = sub_a, sub_b
        if n in orders:
            yield n, ka[pos], kb[pos], doc if want_doc else doc[:0]


def sorted_order(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stable order of the keys ``(hi, lo)`` (unsigned, ``hi`` first), with the keys in that
    order: one plain sort of 64-bit words ``hi``'s top bits | index (a vectorised sort, far
    quicker than an argsort), exact because the result is checked and the rare chunk where two
    different keys share those top bits and come out of order is sorted again by
    ``numpy.lexsort``."""
    n = hi.size
    bits = max(1, int(n - 1).bit_length())
    if bits > 40:
        order = np.lexsort((lo, hi))
        return order, hi[order], lo[order]
    packed = hi >> np.uint64(bits)
    packed <<= np.uint64(bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    packed &= np.uint64((1 << bits) - 1)
    order = packed.view(np.int64)
    sh, sl = hi[order], lo[order]
    if n > 1:
        dh = sh[1:] < sh[:-1]
        dh |= (sh[1:] == sh[:-1]) & (sl[1:] < sl[:-1])
        if dh.any():
            order = np.lexsort((lo, hi))
            sh, sl = hi[order], lo[order]
    return order, sh, sl


def as_run(buf: np.ndarray, m: int) -> np.ndarray:
    """The ``(3, m)`` run a kernel wrote into the first ``3 * m`` words of ``buf`` (a fresh
    array of its own); the rest of ``buf`` goes back to the allocator in place (a ``realloc``
    that shrinks), not by a copy of the run."""
    if buf.size > 3 * m:
        buf.resize(3 * m, refcheck=False)
    return buf.reshape(3, m)


def sort_run(hi: np.ndarray, lo: np.ndarray, doc: np.ndarray, mode: int,
             weight: np.ndarray | None = None, scratch: Scratch | None = None) -> np.ndarray:
    """The sorted run of occurrences ``(hi, lo)`` in texts ``doc`` (nondecreasing), with values
    by ``mode`` (:data:`COUNT`, :data:`DOCS` or :data:`TOP2`); for :data:`COUNT`, occurrence
    ``i`` counts ``weight[i]`` times where ``weight`` is given (uint64)."""
    if hi.size == 0:
        return _EMPTY.copy()
    jit = compiled_ngrams()
    bits = max(1, int(hi.size - 1).bit_length())
    if jit is not None and bits <= 40:  # sort the packed words, then one compiled pass
        packed = (scratch or Scratch()).get("packed", hi.size, np.uint64)
        jit.packed_keys(hi, bits, packed)
        packed.sort()
        buf = np.empty(3 * hi.size, np.uint64)
        m = jit.run_of_sorted(packed, bits, hi, lo, doc if doc.size else _NO_DOC, mode, buf,
                              _NO_WEIGHT if weight is None else weight)
        if m >= 0:
            return as_run(buf, m)
    order, sh, sl = sorted_order(hi, lo)  # stable: texts stay in order within a key
    new = np.empty(sh.size, dtype=bool)
    new[0] = True
    np.not_equal(sh[1:], sh[:-1], out=new[1:])
    new[1:] |= sl[1:] != sl[:-1]
    starts = np.flatnonzero(new)
    out = np.empty((3, starts.size), np.uint64)
    out[0], out[1] = sh[starts], sl[starts]
    if mode == COUNT:
        out[2] = (np.diff(np.append(starts, sh.size)) if weight is None
                  else np.add.reduceat(weight[order], starts))
        return out
    sd = doc[order]
    new_doc = new.copy()
    new_doc[1:] |= sd[1:] != sd[:-1]
    pair_starts = np.flatnonzero(new_doc)
    key_of_pair = np.cumsum(new)[pair_starts] - 1
    if mode == DOCS:
        out[2] = np.bincount(key_of_pair, minlength=starts.size)
        return out
    counts = np.diff(np.append(pair_starts, sh.size)).astype(np.uint64)
    # top two per key: pairs sorted by (key, -count)
    o = np.lexsort((-counts.astype(np.int64), key_of_pair))
    k_sorted, c_sorted = key_of_pair[o], counts[o]
    first = np.ones(k_sorted.size, dtype=bool)
    first[1:] = k_sorted[1:] != k_sorted[:-1]
    second = np.zeros(k_sorted.size, dtype=bool)
    second[1:] = ~first[1:] & first[:-1]
    t1 = np.zeros(starts.size, np.uint64)
    t2 = np.zeros(starts.size, np.uint64)
    t1[k_sorted[first]] = c_sorted[first]
    t2[k_sorted[second]] = c_sorted[second]
    out[2] = (t1 << _S32) | t2
    return out


def chunk_runs(chunk: HashedChunk, orders: Sequence[int], mode: int,
               scratch: Scratch | None = None) -> dict[int, np.ndarray]:
    """The sorted run of every order of ``orders`` over one chunk (see :func:`sort_run`)."""
    out: dict[int, np.ndarray] = {}
    work = scratch if scratch is not None else Scratch()
    for n, hi, lo, doc in order_keys(chunk, orders, want_doc=mode != COUNT, scratch=work):
        if n == 1 and mode == COUNT:  # unigrams: one record per type, weighted by its count
            # (a chunk joined from several scans holds a type once per scan: the run adds
            # those up)
            counts = np.bincount(chunk.ids, minlength=chunk.ha.size).astype(np.uint64)
            live = np.flatnonzero(counts)
            out[1] = sort_run(chunk.ha[live], chunk.hb[live], _NO_DOC[:0], COUNT, counts[live])
            continue
        out[n] = sort_run(hi, lo, doc, mode, scratch=work)
    return out


# --------------------------------------------------------------------------------------------
# merging runs


def _combine(a: np.ndarray, b: np.ndarray, mode: int) -> np.ndarray:
    if mode != TOP2:
        return a + b
    a1, a2 = a >> _S32, a & _LOW32
    b1, b2 = b >> _S32, b & _LOW32
    swap = b1 > a1
    hi1 = np.where(swap, b1, a1)
    lo1 = np.where(swap, b2, a2)
    other = np.where(swap, a1, b1)
    return (hi1 << _S32) | np.maximum(lo1, other)


def merge_runs(x: np.ndarray, y: np.ndarray, mode: int) -> np.ndarray:
    """Two sorted runs merged into one: values of equal keys combined (added, or their top two
    kept for :data:`TOP2`)."""
    if x.shape[1] == 0:
        return y
    if y.shape[1] == 0:
        return x
    jit = compiled_ngrams()
    if jit is not None:
        buf = np.empty(3 * (x.shape[1] + y.shape[1]), np.uint64)
        return as_run(buf, jit.merge_runs(x, y, mode, buf))
    both = np.concatenate((x, y), axis=1)
    order = np.lexsort((both[1], both[0]))
    s = both[:, order]
    dup = np.flatnonzero((s[0, 1:] == s[0, :-1]) & (s[1, 1:] == s[1, :-1]))
    if dup.size:
        s[2, dup] = _combine(s[2, dup], s[2, dup + 1], mode)
        s = np.delete(s, dup + 1, axis=1)
    return s


def _count_le(run: np.ndarray, a: int, h: np.uint64, lw: np.uint64) -> int:
    """How many records of ``run`` from ``a`` have a key ``<= (h, lw)`` (the run is sorted)."""
    hi = run[0]
    i = a + int(np.searchsorted(hi[a:], h, side="right"))
    while i > a and hi[i - 1] == h and run[1, i - 1] > lw:
        i -= 1
    return i - a


def kway_blocks(runs: Sequence[np.ndarray], mode: int, block: int = BLOCK
                ) -> Iterator[np.ndarray]:
    """The merge of sorted ``runs`` (arrays or memory maps), in key order, a block at a time:
    each step takes up to ``block`` records from every run, up to the smallest of their last
    keys (so no later record can be smaller), and merges those."""
    live = [r for r in runs if r.shape[1]]
    if len(live) == 1:
        r = live[0]
        for a in range(0, r.shape[1], block):
            yield np.asarray(r[:, a:a + block])
        return
    pos = [0] * len(live)
    while True:
        ends = [min(p + block, r.shape[1]) for p, r in zip(pos, live, strict=True)]
        active = [i for i, (p, r) in enumerate(zip(pos, live, strict=True)) if p < r.shape[1]]
        if not active:
            return
        # the smallest last key of a block that does not reach its run's end
        fence = None
        for i in active:
            if ends[i] < live[i].shape[1]:
                k = (live[i][0, ends[i] - 1], live[i][1, ends[i] - 1])
                if fence is None or k < fence:
                    fence = k
        parts = []
        for i in active:
            r = live[i]
            if fence is None:
                take = ends[i] - pos[i]
            else:
                take = _count_le(np.asarray(r[:, pos[i]:ends[i]]), 0, fence[0], fence[1])
            if take:
                parts.append(np.asarray(r[:, pos[i]:pos[i] + take]))
                pos[i] += take
        merged = _merge_many(parts, mode)
        if merged.shape[1]:
            yield merged


def _merge_many(parts: list[np.ndarray], mode: int) -> np.ndarray:
    """Merge several sorted runs (pairwise, smallest first)."""
    if not parts:
        return _EMPTY.copy()
    parts = sorted(parts, key=lambda p: p.shape[1])
    while len(parts) > 1:
        a, b = parts.pop(0), parts.pop(0)
        m = merge_runs(a, b, mode)
        i = 0
        while i < len(parts) and parts[i].shape[1] < m.shape[1]:
            i += 1
        parts.insert(i, m)
    return parts[0]


# --------------------------------------------------------------------------------------------
# the table


class FrozenRun:
    """A merged, read-only run (in memory, or memory-mapped from the spill folder) with a table
    of bucket starts, to look many keys up at once (:meth:`lookup`, :meth:`doc_sums`)."""

    def __init__(self, run: np.ndarray, path: str | None = None,
                 own_dir: str | None = None) -> None:
        self.run = run
        self.path = path  # the file of a memory-mapped run, removed by close()
        self.own_dir = own_dir
        m = run.shape[1]
        self.bits = max(1, min(26, int(m).bit_length() - 2))
        hi = np.asarray(run[0])
        jit = compiled_ngrams()
        if jit is not None:
            self.starts = jit.bucket_starts(hi, self.bits)
        else:
            tops = np.arange(1 << self.bits, dtype=np.uint64) << np.uint64(64 - self.bits)
            self.starts = np.append(np.searchsorted(hi, tops, side="left"), m).astype(np.int64)

    @property
    def size(self) -> int:
        return int(self.run.shape[1])

    def close(self) -> None:
        """Remove the file of a memory-mapped run (the run is empty afterwards)."""
        self.run = _EMPTY.copy()
        self.starts = np.zeros((1 << self.bits) + 1, np.int64)
        for f in [self.path] if self.path else []:
            try:
                os.remove(f)
            except OSError:
                pass
        if self.own_dir is not None:
            shutil.rmtree(self.own_dir, ignore_errors=True)
        self.path = self.own_dir = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its run in memory (another process cannot map this one's file)."""
        state = dict(self.__dict__)
        state["run"] = np.array(self.run)
        state["path"] = state["own_dir"] = None
        return state

    def lookup(self, qh: np.ndarray, ql: np.ndarray) -> np.ndarray:
        """The value of each key (0 where absent)."""
        hi, lo, val = (np.asarray(self.run[i]) for i in range(3))
        jit = compiled_ngrams()
        if jit is not None:
            out: np.ndarray = jit.lookup(hi, lo, val, self.starts, self.bits, qh, ql)
            return out
        i = np.searchsorted(hi, qh, side="left")
        j = np.searchsorted(hi, qh, side="right")
        res = np.zeros(qh.size, np.uint64)
        one = np.flatnonzero(j - i == 1)
        hit = one[lo[i[one]] == ql[one]]
        res[hit] = val[i[hit]]
        for k in np.flatnonzero(j - i > 1).tolist():  # two keys share hi (a 64-bit collision)
            for m in range(int(i[k]), int(j[k])):
                if lo[m] == ql[k]:
                    res[k] = val[m]
        return res

    def doc_sums(self, hi: np.ndarray, lo: np.ndarray, doc: np.ndarray, n_docs: int,
                 mode: int) -> np.ndarray:
        """Per text, over its distinct n-grams: :data:`DOCS` sums ``df - 1`` (self-repetition's
        ``s_d``), :data:`TOP2` sums ``min(c, top2 if c == top1 else top1)`` (self-BLEU's clipped
        matches against the best other text). ``doc`` is nondecreasing."""
        if hi.size == 0:
            return np.zeros(n_docs, np.int64)
        jit = compiled_ngrams()
        if jit is not None:
            t = [np.asarray(self.run[i]) for i in range(3)]
            out: np.ndarray = jit.doc_sums(hi, lo, doc, n_docs, t[0], t[1], t[2], self.starts,
                                           self.bits, mode)
            return out
        order = np.lexsort((lo, hi, doc))
        sh, sl, sd = hi[order], lo[order], doc[order]
        new = np.ones(sh.size, dtype=bool)
        new[1:] = (sh[1:] != sh[:-1]) | (sl[1:] != sl[:-1]) | (sd[1:] != sd[:-1])
        starts = np.flatnonzero(new)
        c = np.diff(np.append(starts, sh.size)).astype(np.int64)
        v = self.lookup(sh[starts], sl[starts])
        if mode == DOCS:
            term = np.where(v >= 2, v.astype(np.int64) - 1, 0)
        else:
            t1 = (v >> _S32).astype(np.int64)
            t2 = (v & _LOW32).astype(np.int64)
            term = np.where(v != 0, np.minimum(c, np.where(c == t1, t2, t1)), 0)
        out = np.zeros(n_docs, np.int64)
        np.add.at(out, sd[starts], term)
        return out


class NgramTable:
    """Exact n-gram statistics of many texts: for each order, sorted runs of (key, value)
    records in memory and spilled runs on disk (see the module docstring).

    Args:
        orders: The n-gram orders kept.
        mode: :data:`COUNT` (occurrences), :data:`DOCS` (texts holding the n-gram) or
            :data:`TOP2` (the two largest per-text counts).
        budget: Bytes of in-memory runs above which every order is spilled to disk (``None``:
            never).
        spill_dir: Folder of the spilled runs (default: a new temporary folder, removed with
            :meth:`close`).
    """

    def __init__(self, orders: Sequence[int], mode: int = COUNT, budget: int | None = None,
                 spill_dir: str | None = None) -> None:
        self.orders = tuple(sorted(set(int(n) for n in orders)))
        self.mode = int(mode)
        self.budget = budget
        self.spill_dir = spill_dir
        self.runs: dict[int, list[np.ndarray]] = {n: [] for n in self.orders}
        self.files: dict[int, list[str]] = {n: [] for n in self.orders}
        self._own_dir: str | None = None
        self._scratch = Scratch()
        #: Tokens and texts added (merged with the tables).
        self.tokens = 0
        self.texts = 0

    # building -------------------------------------------------------------------------------

    def add_texts(self, texts: Sequence[str], tok: Tokenizer) -> None:
        """Count the n-grams of ``texts`` (each text is one document for :data:`DOCS` and
        :data:`TOP2`)."""
        for chunk in hashed_chunks(texts, tok):
            self.add_chunk(chunk)

    def add_chunk(self, chunk: HashedChunk) -> None:
        """Count the n-grams of one chunk of hashed texts."""
        self.tokens += int(chunk.ids.size)
        self.texts += int(chunk.lengths.size)
        for n, run in chunk_runs(chunk, self.orders, self.mode, self._scratch).items():
            self.add_run(n, run)

    def add_run(self, n: int, run: np.ndarray) -> None:
        """Add one sorted run of order ``n``; merge the newest two runs while the newer is at
        least as large as the older (a binary counter: a record is merged O(log) times); spill
        past the budget."""
        if run.shape[1] == 0:
            return
        runs = self.runs[n]
        runs.append(run)
        while len(runs) >= 2 and runs[-1].shape[1] >= runs[-2].shape[1]:
            y = runs.pop()
            x = runs.pop()
            runs.append(merge_runs(x, y, self.mode))
        if self.budget is not None and self.held() > self.budget:
            self.spill()

    def merge(self, other: NgramTable) -> None:
        """Add another table's statistics (same orders and mode): exact, in any order. Its
        spilled runs become this table's."""
        if other.orders != self.orders or other.mode != self.mode:
            raise ValueError("cannot merge n-gram tables of other orders or values")
        self.tokens += other.tokens
        self.texts += other.texts
        for n in self.orders:
            self.files[n].extend(other.files[n])
            other.files[n] = []
            for run in other.runs[n]:
                self.add_run(n, run)
        if other._own_dir is not None:  # its files now live on in this table
            self._adopt(other._own_dir)
            other._own_dir = None

    def held(self) -> int:
        """Bytes of the runs held in memory."""
        return RECORD_BYTES * sum(r.shape[1] for rs in self.runs.values() for r in rs)

    def records(self, n: int) -> int:
        """Records of order ``n`` in memory and on disk (a key held in several runs counts
        once per run)."""
        return sum(r.shape[1] for r in self.runs[n]) + sum(
            _run_file(f).shape[1] for f in self.files[n])

    # spilling -------------------------------------------------------------------------------

    def _dir(self) -> str:
        if self.spill_dir is not None:
            os.makedirs(self.spill_dir, exist_ok=True)
            return self.spill_dir
        if self._own_dir is None:
            self._own_dir = tempfile.mkdtemp(prefix="divmeter-spill-")
        return self._own_dir

    def _adopt(self, folder: str) -> None:
        if self._own_dir is None:
            self._own_dir = folder
        else:
            self._extra_dirs = [*getattr(self, "_extra_dirs", []), folder]

    def spill(self) -> None:
        """Merge every order's in-memory runs into one and write it to disk."""
        folder = self._dir()
        for n in self.orders:
            if not self.runs[n]:
                continue
            run = _merge_many(self.runs[n], self.mode)
            path = os.path.join(folder, f"run-{n}-{uuid.uuid4().hex}.npy")
            # C order: DiskRun reads rows by offset (numpy's merge may give a Fortran-ordered
            # array, indexing columns)
            np.save(path, np.ascontiguousarray(run))
            self.files[n].append(path)
            self.runs[n] = []

    def close(self) -> None:
        """Remove the spilled runs (the table is empty afterwards)."""
        for n in self.orders:
            for f in self.files[n]:
                try:
                    os.remove(f)
                except OSError:
                    pass
            self.files[n] = []
            self.runs[n] = []
        for d in [self._own_dir, *getattr(self, "_extra_dirs", [])]:
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)
        self._own_dir = None

    def __del__(self) -> None:
        if getattr(self, "_own_dir", None) is not None:
            try:
                self.close()
            except Exception:  # noqa: S110 - at interpreter exit modules may be gone
                pass

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (shipped to another process) with its spilled runs read back into memory."""
        state = dict(self.__dict__)
        state["runs"] = {n: [*self.runs[n], *(_run_file(f)[:, :] for f in self.files[n])]
                         for n in self.orders}
        state["files"] = {n: [] for n in self.orders}
        state["_own_dir"] = None
        state["_scratch"] = Scratch()  # (working arrays: not shipped)
        state.pop("_extra_dirs", None)
        return state

    # reading --------------------------------------------------------------------------------

    def sources(self, n: int) -> list[Any]:
        """Every run of order ``n``: in-memory arrays and spilled runs (:class:`DiskRun`)."""
        return [*self.runs[n], *(_run_file(f) for f in self.files[n])]

    def blocks(self, n: int, block: int = BLOCK) -> Iterator[np.ndarray]:
        """The merged records of order ``n``, in key order, a block at a time."""
        yield from kway_blocks(self.sources(n), self.mode, block)

    def spectrum(self, n: int) -> tuple[dict[int, int], int, int]:
        """``(spectrum, distinct, total)`` of order ``n``: how many n-grams have each merged
        value (a count, or a document frequency), the number of distinct n-grams and the sum of
        the values."""
        spec: dict[int, int] = {}
        distinct = total = 0
        for b in self.blocks(n):
            vals, mult = np.unique(b[2], return_counts=True)
            for v, m in zip(vals.tolist(), mult.tolist(), strict=True):
                spec[v] = spec.get(v, 0) + m
            distinct += int(b.shape[1])
            total += int(np.sum(b[2], dtype=np.uint64))
        return spec, distinct, total

    def frozen(self, n: int, keep: str = "shared") -> FrozenRun:
        """The merged run of order ``n`` reduced to the records that matter to a second pass
        (``shared``: n-grams of two texts or more, i.e. a document frequency >= 2 for
        :data:`DOCS`, a second count > 0 for :data:`TOP2`), in memory, or written to the spill
        folder and memory-mapped when it is over the budget."""
        kept: list[np.ndarray] = []
        size = 0
        path = None
        for b in self.blocks(n):
            if self.mode == TOP2:
                b = b[:, (b[2] & _LOW32) > 0]
            elif keep == "shared":
                b = b[:, b[2] >= 2]
            if not b.shape[1]:
                continue
            kept.append(np.ascontiguousarray(b))
            size += b.shape[1]
            if self.budget is not None and RECORD_BYTES * size > self.budget and path is None:
                own = None if self.spill_dir is not None else tempfile.mkdtemp(
                    prefix="divmeter-frozen-")
                folder = own if own is not None else self._dir()
                path = os.path.join(folder, f"frozen-{n}-{uuid.uuid4().hex}.bin")
            if path is not None:
                _append_raw(path, kept)
                kept = []
        if path is None:
            run = np.concatenate(kept, axis=1) if kept else _EMPTY.copy()
            return FrozenRun(run)
        return FrozenRun(_raw_to_run(path, size), path + ".npy", own)

    # partitions (the distributed reduce) ------------------------------------------------------

    def split(self, parts: int) -> list[NgramTable]:
        """This table cut into ``parts`` tables by key range (equal ranges of the key's top
        bits): the i-th holds exactly the records whose key falls in the i-th range, so the
        tables' statistics are disjoint and their spectra add up to this one's."""
        bounds = [np.uint64(((i << 64) // parts) & ((1 << 64) - 1)) for i in range(1, parts)]
        out = [NgramTable(self.orders, self.mode) for _ in range(parts)]
        for n in self.orders:
            for r in self.sources(n):
                r = r[:, :]  # (a spilled run read back)
                cuts = [0, *np.searchsorted(r[0], bounds, side="left").tolist(), r.shape[1]]
                for i in range(parts):
                    if cuts[i + 1] > cuts[i]:
                        out[i].runs[n].append(np.array(r[:, cuts[i]:cuts[i + 1]]))
        return out

    # checkpoints ------------------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """The table as data for a checkpoint (its spilled runs read back: a checkpoint holds
        everything it needs)."""
        return {"orders": list(self.orders), "mode": self.mode, "tokens": self.tokens,
                "texts": self.texts,
                "runs": {str(n): _merge_many([r[:, :] for r in self.sources(n)], self.mode)
                         for n in self.orders}}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> NgramTable:
        t = cls([int(n) for n in state["orders"]], int(state["mode"]))
        t.tokens, t.texts = int(state["tokens"]), int(state["texts"])
        for n in t.orders:
            run = np.asarray(state["runs"][str(n)], dtype=np.uint64)
            if run.ndim != 2 or run.shape[0] != 3:
                raise ValueError("malformed n-gram table")
            if run.shape[1]:
                t.runs[n].append(run)
        return t


class DiskRun:
    """A sorted run spilled to disk (a ``.npy`` of shape ``(3, m)``), read a slice at a time
    with plain file reads: only what a merge step holds is in memory (a memory map would keep
    every page it touched resident until it is closed)."""

    def __init__(self, path: str) -> None:
        head = np.load(path, mmap_mode="r")  # the header only: shape and data offset
        if not head.flags.c_contiguous:
            raise ValueError(f"{path}: a spilled run must be stored in C order")
        self.path = path
        self.shape = tuple(int(x) for x in head.shape)
        self._offset = int(head.offset)
        del head

    def _read(self, row: int, a: int, b: int) -> np.ndarray:
        m = self.shape[1]
        a, b = max(0, min(a, m)), max(0, min(b, m))
        if b <= a:
            return np.zeros(0, np.uint64)
        with open(self.path, "rb") as fh:
            return np.fromfile(fh, dtype=np.uint64, count=b - a,
                               offset=self._offset + 8 * (row * m + a))

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, tuple):
            key = (key, slice(None))
        row, col = key
        if isinstance(col, slice):
            a, b, _ = col.indices(self.shape[1])
            if isinstance(row, slice):
                return np.stack([self._read(k, a, b) for k in range(3)])
            return self._read(int(row), a, b)
        i = int(col) + (self.shape[1] if int(col) < 0 else 0)
        return self._read(int(row), i, i + 1)[0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self[:, :]
        return out if dtype is None else out.astype(dtype)


def _run_file(path: str) -> DiskRun:
    return DiskRun(path)


def _append_raw(path: str, blocks: list[np.ndarray]) -> None:
    """Append records to the three row files ``path.0``, ``path.1``, ``path.2``."""
    for k in range(3):
        with open(f"{path}.{k}", "ab") as fh:
            for b in blocks:
                fh.write(np.ascontiguousarray(b[k]).tobytes())


def _raw_to_run(path: str, size: int) -> np.ndarray:
    """The run written by :func:`_append_raw` as one ``(3, size)`` ``.npy`` (its rows copied in
    by plain file writes), memory-mapped for lookups."""
    out = np.lib.format.open_memmap(path + ".npy", mode="w+", dtype=np.uint64, shape=(3, size))
    offset = int(out.offset)
    del out
    with open(path + ".npy", "r+b") as dst:
        for k in range(3):
            dst.seek(offset + 8 * k * size)
            with open(f"{path}.{k}", "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 22)
            os.remove(f"{path}.{k}")
    run: np.ndarray = np.load(path + ".npy", mmap_mode="r")
    return run
