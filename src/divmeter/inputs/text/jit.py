"""Compiled kernels (numba) for tokenize-and-intern and the per-response loops of TTR and MTLD.

Optional (``pip install 'divmeter[fast]'``). This module imports numba when it is imported, and
only :func:`divmeter.inputs.text.intern.compiled` imports it, lazily, once a process has sent
:data:`divmeter.inputs.text.intern._JIT_LOAD_CHARS` characters (16M) through the byte paths;
``import divmeter`` never does. Without numba, or with the environment variable
``DIVMETER_NO_JIT=1``, the numpy path of :mod:`divmeter.inputs.text.intern` runs instead, with the
same results.

Every kernel is exact (integers, or the same float operations in the same order as the numpy
code it replaces), compiled once per machine and cached (``cache=True``: next to this file in
``__pycache__``, or in numba's per-user cache directory when that is not writable).

* :func:`scan_tokens`: one pass over the UTF-8 bytes of the joined texts finds the tokens (runs
  of non-separator bytes) and interns them in an open-addressing hash table that compares the
  bytes of two tokens whenever their 64-bit hashes match, so equal ids iff equal tokens.
* :func:`set_local_ids`, :func:`group_order`: the two encodings the callers consume (set-local
  ids for the n-gram metrics; tokens grouped by type for MATTR and HD-D).
* :func:`mtld_values`: MTLD's factor rounds (McCarthy & Jarvis 2010) over the token ids.
* :func:`type_counts`: types and the sum of squared type counts of every text (the counts the
  richness indices of :mod:`divmeter.metrics.richness` are formulas of).
* :func:`local_types`: the same tokens and counts with a table per text (ids numbered per text),
  for the per-response metrics, which never compare two texts' tokens.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["scan_tokens", "scan_types", "set_local_ids", "group_order", "mtld_values",
           "type_counts", "local_types"]

_U1 = np.uint64(1)
_GOLD = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: slot = (key * _GOLD) >> (64 - bits)
_MIX = np.uint64(0xC2B2AE3D27D4EB4F)
_NOT_LOW_BYTE = np.uint64(0xFFFFFFFFFFFFFF00)
_FIRST_BITS = 12  # first table: 4,096 slots
_LOW = np.uint64(0x0101010101010101)  # the low bit of each byte
_GATHER = np.uint64(0x0102040810204080)  # (x & _LOW) * _GATHER >> 56: those 8 bits packed


def _ctz_typing(typingctx: Any, x: Any) -> Any:
    """Trailing zero bits of a nonzero uint64 (LLVM's cttz)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))
    return types.uint64(types.uint64), codegen


def _popcount_typing(typingctx: Any, x: Any) -> Any:
    """Set bits of a uint64 (LLVM's ctpop)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctpop(args[0])
    return types.uint64(types.uint64), codegen


def _clz_typing(typingctx: Any, x: Any) -> Any:
    """Leading zero bits of a nonzero uint64 (LLVM's ctlz)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))
    return types.uint64(types.uint64), codegen


_ctz: Any = intrinsic(_ctz_typing)
_popcount: Any = intrinsic(_popcount_typing)
_clz: Any = intrinsic(_clz_typing)


@njit(cache=True, nogil=True, inline="always")
def _tail(words: np.ndarray, i: Any, size: Any) -> np.uint64:
    """The 8 bytes from ``i`` (``words``: the buffer's 8-byte words at every byte offset) with
    the bytes from ``size`` on (``size < 8``) cleared."""
    word = words[i]
    if size < 8:
        word &= (_U1 << np.uint64(8 * size)) - _U1
    return word


@njit(cache=True, nogil=True, inline="always")
def _long_key(words: np.ndarray, start: Any, size: Any) -> np.uint64:
    """The table key of a token of more than 8 bytes: a hash of its 8-byte words (any hash is
    exact here, the bytes are compared) with the low byte cleared, so that it never equals a
    short token's key (whose low byte is its first byte, never 0)."""
    h = words[start] * _GOLD
    j = 8
    while j < size:
        h = (h ^ (h >> np.uint64(29)) ^ _tail(words, start + j, size - j)) * _MIX
        j += 8
    return (h ^ (h >> np.uint64(32))) & _NOT_LOW_BYTE


@njit(cache=True, nogil=True, inline="always")
def _next_token(todo: Any, m: Any, base: Any, last_sep: Any) -> Any:
    """The token that ends at the lowest bit of ``todo`` (the token ends of the word ``m`` of
    separator flags, whose bit 0 is byte ``base``; ``last_sep`` the last separator before it):
    ``todo`` without that bit, the token's first byte and its size. It starts after the highest
    separator bit below its end, or after ``last_sep`` when there is none."""
    bit = _ctz(todo)
    below = m & ((_U1 << bit) - _U1)
    start = base + 64 - np.int64(_clz(below)) if below else last_sep + 1
    return todo & (todo - _U1), start, base + np.int64(bit) - start


@njit(cache=True, nogil=True, inline="always")
def _key(words: np.ndarray, start: Any, size: Any) -> np.uint64:
    """The table key of the token of ``size`` bytes from ``start``: its bytes themselves up to 8
    bytes, else :func:`_long_key`."""
    if size > 8:
        return _long_key(words, start, size)
    return _tail(words, start, size)


@njit(cache=True, nogil=True, inline="always")
def _end_texts(e: Any, stops: Any, k0: Any, lengths: np.ndarray, doc: Any, doc_first: Any,
               n_texts: Any) -> Any:
    """Sets the token counts in ``lengths`` of the texts that end in a word: ``e`` flags their
    end bytes, ``stops`` the word's token ends, ``k0`` the tokens before the word; ``doc`` is the
    next text to end and ``doc_first`` its first token. Returns both, moved past these texts."""
    while e and doc < n_texts:
        bit = _ctz(e)
        e &= e - _U1
        upto = k0 + np.int64(_popcount(stops & (((_U1 << bit) - _U1) | (_U1 << bit))))
        lengths[doc] = upto - doc_first
        doc_first = upto
        doc += 1
    return doc, doc_first


@njit(cache=True, nogil=True, inline="always")
def _same_bytes(words: np.ndarray, a: Any, b: Any, size: Any) -> bool:
    """Whether the ``size`` bytes from ``a`` equal those from ``b``, 8 at a time."""
    j = 0
    while j < size:
        if _tail(words, a + j, size - j) != _tail(words, b + j, size - j):
            return False
        j += 8
    return True


@njit(cache=True, nogil=True)
def _masks(buf: np.ndarray, spaces: tuple[int, int, int, int], end: int, nul: int
           ) -> tuple[np.ndarray, np.ndarray, np.int64]:
    """Bit ``j`` of word ``w`` flags byte ``64 w + j``: in ``sep`` a token separator (a byte in
    ``lo1 .. lo1 + n1`` or ``lo2 .. lo2 + n2``, ``spaces = (lo1, n1, lo2, n2)``; bits past the
    end are set), in ``ends`` the byte ``end`` or ``nul``; with the count of those bytes.

    Each byte's two flags come from a 256-entry table (bit 0: separator, bit 1: end), and each
    8 flag bytes are packed into 8 bits by one multiplication: byte ``j``'s bit lands on bit
    ``56 + j`` of ``x * 0x0102040810204080`` (the other products fall on distinct lower bits,
    so nothing carries)."""
    lo1, n1, lo2, n2 = spaces
    lut = np.empty(256, np.uint8)
    for b in range(256):
        lut[b] = (np.uint8((np.uint8(b - lo1) <= n1) | (np.uint8(b - lo2) <= n2))
                  | (np.uint8((b == end) | (b == nul)) << np.uint8(1)))
    n_full = buf.size // 64
    flags = np.empty(64 * (n_full + 1), np.uint8)
    for i in range(buf.size):
        flags[i] = lut[buf[i]]
    flags[buf.size:] = 1  # past the end: separators
    f64 = flags.view(np.uint64)
    sep = np.empty(n_full + 1, np.uint64)
    ends = np.empty(n_full + 1, np.uint64)
    n_end = np.int64(0)
    for w in range(n_full + 1):
        m = np.uint64(0)
        e = np.uint64(0)
        for q in range(8):
            x = f64[8 * w + q]
            m |= (((x & _LOW) * _GATHER) >> np.uint64(56)) << np.uint64(8 * q)
            e |= ((((x >> _U1) & _LOW) * _GATHER) >> np.uint64(56)) << np.uint64(8 * q)
        sep[w] = m
        ends[w] = e
        n_end += np.int64(_popcount(e))
    return sep, ends, n_end


@njit(cache=True, nogil=True)
def _grow(table: np.ndarray, t_start: np.ndarray, t_len: np.ndarray, n_types: int,
          bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hash table rebuilt with ``2**bits`` slots, and room for ``2**(bits-2)`` types."""
    capacity = 1 << bits
    grown = np.zeros(2 * capacity, np.uint64)
    shift = np.uint64(64 - bits)
    for slot in range(table.size // 2):
        if table[2 * slot + 1]:
            key = table[2 * slot]
            j = np.int64((key * _GOLD) >> shift)
            while grown[2 * j + 1]:
                j = (j + 1) & (capacity - 1)
            grown[2 * j] = key
            grown[2 * j + 1] = table[2 * slot + 1]
    starts = np.empty(capacity // 4, np.int64)
    starts[:n_types] = t_start[:n_types]
    sizes = np.empty(capacity // 4, np.int64)
    sizes[:n_types] = t_len[:n_types]
    return grown, starts, sizes


@njit(cache=True, nogil=True)
def _scan_words(words: np.ndarray, sep: np.ndarray, ends: np.ndarray, w0: int,
                state: np.ndarray, table: np.ndarray, t_start: np.ndarray, t_len: np.ndarray,
                ids: np.ndarray, lengths: np.ndarray, max_len: int) -> int:
    """Tokens of the flag words ``w0 ..`` of :func:`_masks`, interned in ``table`` (fixed here:
    a table that never moves keeps this loop fast). A token ends at each separator that follows
    a non-separator and starts after the separator before it (the highest separator bit below,
    or the last separator of an earlier word); a text's token count is the number of token ends
    up to its end byte. ``state`` holds ``[tokens so far, texts so far, first token of the
    current text, last separator before the current word, carry, types]`` and is updated.
    Returns -1 when done, -2 for a token over ``max_len`` bytes, or the word to resume from
    once the table has grown (``state`` is then as at that word's start; its tokens already
    interned are found again)."""
    k, doc, doc_first, last_sep, carry, n_types = state
    n_texts = lengths.size
    capacity = table.size // 2
    shift = np.uint64(64 - np.int64(_ctz(np.uint64(capacity))))
    for w in range(w0, sep.size):
        state[0], state[1], state[2], state[3], state[4] = k, doc, doc_first, last_sep, carry
        m = sep[w]
        stops = m & ~((m << _U1) | np.uint64(carry))  # separators right after a token
        carry = np.int64(m >> np.uint64(63))
        base = 64 * w
        k0 = k
        todo = stops
        while todo:
            todo, start, size = _next_token(todo, m, base, last_sep)
            if size > max_len and size > 8:
                return -2
            key = _key(words, start, size)
            slot = np.int64((key * _GOLD) >> shift)
            while True:
                found = table[2 * slot + 1]
                if found == 0:  # a new type
                    if 4 * (n_types + 1) > capacity:  # keep the table at most 1/4 full
                        state[5] = n_types
                        return w
                    t = n_types
                    table[2 * slot] = key
                    table[2 * slot + 1] = t + 1
                    t_start[t] = start
                    t_len[t] = size
                    n_types += 1
                    break
                t = np.int64(found) - 1
                if table[2 * slot] == key:
                    if size <= 8:
                        break
                    if t_len[t] == size and _same_bytes(words, t_start[t], start, size):
                        break
                slot = (slot + 1) & (capacity - 1)
            ids[k] = t
            k += 1
        doc, doc_first = _end_texts(ends[w], stops, k0, lengths, doc, doc_first, n_texts)
        if m:
            last_sep = base + 63 - np.int64(_clz(m))
    state[5] = n_types
    return -1


@njit(cache=True, nogil=True)
def scan_tokens(buf: np.ndarray, words: np.ndarray, spaces: tuple[int, int, int, int],
                end: int, nul: int, n_texts: int, max_len: int
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Tokens of ``n_texts`` texts joined in ``buf`` (UTF-8), interned to exact ids: the first
    three results of :func:`scan_types`."""
    ids, lengths, n_types, _, _ = scan_types(buf, words, spaces, end, nul, n_texts, max_len)
    return ids, lengths, n_types


@njit(cache=True, nogil=True)
def scan_types(buf: np.ndarray, words: np.ndarray, spaces: tuple[int, int, int, int],
               end: int, nul: int, n_texts: int, max_len: int
               ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """Tokens of ``n_texts`` texts joined in ``buf`` (UTF-8), interned to exact ids, with the
    first occurrence of each type (its byte offset in ``buf`` and its length).

    A token is a maximal run of bytes that are not separators. Separators are flagged 64 bytes
    to a word; tokens are then read off the flags' edges (no branch per byte). A token of up to
    8 bytes is keyed by its bytes packed into a 64-bit word (exact: no token holds a NUL byte,
    and its first byte is the key's nonzero low byte); a longer one by a hash of its words with
    the low byte cleared, and two long tokens are the same type only if their bytes are equal.
    The table is open-addressed (linear probing, at most a quarter full).

    Args:
        buf: The texts' bytes, each text followed by the byte ``end``, then 8 more ``end``
            bytes (the 8-byte reads of the last token stay inside ``buf``).
        words: ``buf``'s 8 bytes from every offset as little-endian uint64 (a view with a
            1-byte stride: one unaligned load per read).
        spaces: The bytes that separate tokens (``end`` among them), as two ranges
            ``(lo1, n1, lo2, n2)``: ``lo1 .. lo1 + n1`` and ``lo2 .. lo2 + n2``.
        end: The byte that ends a text; a text must not contain it.
        nul: A byte no text may contain (or ``end`` again).
        n_texts: Number of texts in ``buf``.
        max_len: Longest token accepted, in bytes.

    Returns:
        ``(ids, lengths, n_types, starts, sizes)``: the type of every token in order (types
        numbered 0, 1, ... by first occurrence; equal ids iff equal bytes), the token count of
        each text, the number of types, and each type's first byte offset in ``buf`` and byte
        length (the first ``n_types`` entries); ``n_types = -1`` (and no ids) when a token is
        longer than ``max_len`` or a text holds ``end`` or ``nul`` (more than ``n_texts + 8``
        of them).
    """
    sep, ends, n_end = _masks(buf, spaces, end, nul)
    lengths = np.zeros(n_texts, np.int64)
    none = np.empty(0, np.int64)
    if n_end != n_texts + 8:  # a text holds the end byte or a NUL
        return none, lengths, -1, none, none
    n_tok = np.int64(0)
    carry = _U1  # the byte before the buffer counts as a separator
    for w in range(sep.size):
        n_tok += np.int64(_popcount(~sep[w] & ((sep[w] << _U1) | carry)))
        carry = sep[w] >> np.uint64(63)
    ids = np.empty(n_tok, np.int64)
    bits = _FIRST_BITS
    table = np.zeros(2 << bits, np.uint64)  # per slot: key, type + 1 (0: empty)
    t_start = np.empty(1 << (bits - 2), np.int64)  # first occurrence of each type in buf
    t_len = np.empty(1 << (bits - 2), np.int64)
    state = np.zeros(6, np.int64)
    state[3] = -1  # the byte before the buffer counts as a separator
    state[4] = 1
    w = 0
    while True:
        w = _scan_words(words, sep, ends, w, state, table, t_start, t_len, ids, lengths,
                        max_len)
        if w == -1:
            return ids, lengths, state[5], t_start, t_len
        if w == -2:
            return none, lengths, -1, none, none
        bits += 1
        table, t_start, t_len = _grow(table, t_start, t_len, state[5], bits)


@njit(cache=True, nogil=True)
def set_local_ids(ids: np.ndarray, lengths: np.ndarray, set_sizes: np.ndarray,
                  n_types: int) -> tuple[np.ndarray, np.ndarray]:
    """Each set's stream of set-local ids (:class:`divmeter.inputs.text.intern.InternedSets`'
    ``raw``): every text's tokens then a 0; a token's id is 2 + the index in its set's stream of the
    first occurrence of its type. Returns ``(raw, types per set)``."""
    raw = np.empty(ids.size + lengths.size, np.int64)
    set_types = np.zeros(set_sizes.size, np.int64)
    seen_in = np.full(n_types, -1, np.int64)  # the last set each type was seen in
    first = np.empty(n_types, np.int64)
    out = 0
    tok = 0
    text = 0
    for s in range(set_sizes.size):
        local = 0
        for _ in range(set_sizes[s]):
            for _ in range(lengths[text]):
                g = ids[tok]
                if seen_in[g] != s:
                    seen_in[g] = s
                    first[g] = local + 2
                    set_types[s] += 1
                raw[out] = first[g]
                out += 1
                local += 1
                tok += 1
            raw[out] = 0
            out += 1
            local += 1
            text += 1
    return raw, set_types


@njit(cache=True, nogil=True)
def group_order(ids: np.ndarray, n_types: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens grouped by type, in position order within a type (a counting sort), and for
    consecutive tokens of that order whether they are of the same type
    (:meth:`divmeter.inputs.text.intern.TokenKeys.sorted_keys`)."""
    start = np.zeros(n_types + 1, np.int64)
    for g in ids:
        start[g + 1] += 1
    for t in range(n_types):
        start[t + 1] += start[t]
    order = np.empty(ids.size, np.int64)
    for i in range(ids.size):
        g = ids[i]
        order[start[g]] = i
        start[g] += 1
    same = np.empty(max(ids.size - 1, 0), np.bool_)
    for i in range(ids.size - 1):
        same[i] = ids[order[i + 1]] == ids[order[i]]
    return order, same


@njit(cache=True, nogil=True, error_model="numpy")
def mtld_values(ids: np.ndarray, lengths: np.ndarray, n_types: int,
                threshold: float) -> np.ndarray:
    """Bidirectional MTLD of every text (NaN where undefined), exactly as
    :func:`divmeter.metrics.richness._mtld_values` defines it (McCarthy & Jarvis 2010).

    Reading forward, then backward (the reversed text), a factor grows one token at a time
    until its TTR ``types / tokens`` is ``<= threshold``; the count then gains 1.0 and a new
    factor starts. An unfinished last factor adds ``(1 - TTR) / (1 - threshold)``. The value is
    ``(n / forward + n / backward) / 2``, NaN when a direction has no factor (no token, or no
    repeated type). A type is new in the current factor unless its stamp is the factor's number.
    """
    out = np.full(lengths.size, np.nan)
    stamp = np.full(n_types, -1, np.int64)
    factor = 0  # number of the current factor (every factor of every text has its own)
    one_minus = 1.0 - threshold
    start = 0
    for d in range(lengths.size):
        n = lengths[d]
        end = start + n
        counts = np.zeros(2)
        for direction in range(2):
            count = 0.0
            types = 0
            ratio = 1.0
            size = 0  # tokens in the current factor
            factor += 1
            for k in range(n):
                j = start + k if direction == 0 else end - 1 - k
                g = ids[j]
                types += stamp[g] != factor  # (no branch)
                stamp[g] = factor
                size += 1
                ratio = types / size
                if ratio <= threshold:
                    count += 1.0
                    types = 0
                    size = 0
                    factor += 1
            if size > 0:
                count += (1.0 - ratio) / one_minus
            counts[direction] = count
        if counts[0] > 0 and counts[1] > 0:
            out[d] = (n / counts[0] + n / counts[1]) / 2.0
        start = end
    return out


@njit(cache=True, nogil=True)
def type_counts(ids: np.ndarray, lengths: np.ndarray, n_types: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Types ``V`` and the sum of squared type counts ``M2`` of every text (int64), in one
    pass: a stamp per type (the last text it was seen in) and its count in that text;
    ``M2`` grows by ``2c + 1`` when a type's count goes from ``c`` to ``c + 1``."""
    v = np.zeros(lengths.size, np.int64)
    m2 = np.zeros(lengths.size, np.int64)
    stamp = np.full(n_types, -1, np.int64)
    count = np.zeros(n_types, np.int64)
    tok = 0
    for d in range(lengths.size):
        types = 0
        sq = 0
        for _ in range(lengths[d]):
            g = ids[tok]
            if stamp[g] != d:
                stamp[g] = d
                count[g] = 0
                types += 1
            sq += 2 * count[g] + 1
            count[g] += 1
            tok += 1
        v[d] = types
        m2[d] = sq
    return v, m2


@njit(cache=True, nogil=True)
def local_types(buf: np.ndarray, words: np.ndarray, spaces: tuple[int, int, int, int],
                end: int, nul: int, n_texts: int, max_len: int, want_ids: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The tokens of :func:`scan_types` (the same bytes, the same tokens), each text's types
    counted in a table of its own: for the per-response metrics, which never compare two
    texts' tokens.

    A text's table has at least twice as many slots as the text has tokens (a prefix of one
    buffer; a slot is free for text ``d`` unless stamped ``d``), so a short text's table stays
    in the cache where one table of the whole chunk's types would not; and no pass over the ids
    is needed for the counts. Keys and the byte comparison of long tokens are
    :func:`scan_types`'s.

    Returns:
        ``(ids, lengths, types, squares, most)``: with ``want_ids``, the type of every token
        numbered 0, 1, ... by first occurrence in its text (else no ids); the token count, the
        type count and the sum of squared type counts of each text; the most types of one text.
        ``most = -1`` (and no ids) where :func:`scan_types` gives ``n_types = -1``.
    """
    sep, ends, n_end = _masks(buf, spaces, end, nul)
    lengths = np.zeros(n_texts, np.int64)
    v = np.zeros(n_texts, np.int64)
    m2 = np.zeros(n_texts, np.int64)
    none = np.empty(0, np.int64)
    if n_end != n_texts + 8:  # a text holds the end byte or a NUL
        return none, lengths, v, m2, -1
    # each text's token count (the token ends up to its end byte), as _scan_words counts them
    n_tok = np.int64(0)
    carry = _U1  # the byte before the buffer counts as a separator
    doc = 0
    doc_first = np.int64(0)
    for w in range(sep.size):
        m = sep[w]
        stops = m & ~((m << _U1) | carry)
        carry = m >> np.uint64(63)
        k0 = n_tok
        n_tok += np.int64(_popcount(stops))
        doc, doc_first = _end_texts(ends[w], stops, k0, lengths, doc, doc_first, n_texts)
    most_tokens = lengths.max() if n_texts else 0
    bits = 4
    while (1 << bits) < 2 * most_tokens:
        bits += 1
    keys = np.empty(1 << bits, np.uint64)
    stamp = np.full(1 << bits, -1, np.int64)
    count = np.empty(1 << bits, np.int64)
    first = np.empty(1 << bits, np.int64)  # byte offset of the type's first occurrence
    length = np.empty(1 << bits, np.int64)  # and its byte length
    local = np.empty(1 << bits, np.int64)  # the type's number in its text
    ids = np.empty(n_tok if want_ids else 0, np.int64)
    most = 0
    d = -1
    left = 0  # tokens of text d still to come
    types = 0
    sq = 0
    mask = 0
    shift = np.uint64(60)
    k = 0
    carry = _U1
    last_sep = np.int64(-1)
    for w in range(sep.size):
        m = sep[w]
        stops = m & ~((m << _U1) | carry)
        carry = m >> np.uint64(63)
        base = 64 * w
        todo = stops
        while todo:
            todo, start, size = _next_token(todo, m, base, last_sep)
            while left == 0:  # the next text with a token
                if d >= 0:
                    v[d] = types
                    m2[d] = sq
                    most = max(most, types)
                d += 1
                left = lengths[d]
                types = 0
                sq = 0
                b = 4
                while (1 << b) < 2 * left:
                    b += 1
                mask = (1 << b) - 1
                shift = np.uint64(64 - b)
            if size > max_len and size > 8:
                return none, lengths, v, m2, -1
            key = _key(words, start, size)
            slot = np.int64((key * _GOLD) >> shift)
            while True:
                if stamp[slot] != d:  # a new type of this text
                    stamp[slot] = d
                    keys[slot] = key
                    count[slot] = 1
                    first[slot] = start
                    length[slot] = size
                    local[slot] = types
                    if want_ids:
                        ids[k] = types
                    types += 1
                    sq += 1
                    break
                if keys[slot] == key and (size <= 8 or (length[slot] == size and _same_bytes(
                        words, first[slot], start, size))):
                    sq += 2 * count[slot] + 1
                    count[slot] += 1
                    if want_ids:
                        ids[k] = local[slot]
                    break
                slot = (slot + 1) & mask
            left -= 1
            k += 1
        if m:
            last_sep = base + 63 - np.int64(_clz(m))
    if d >= 0:
        v[d] = types
        m2[d] = sq
        most = max(most, types)
    return ids, lengths, v, m2, most
