"""Tokenize-and-intern, once for every form metric: many texts (or many sets of texts) become
exact integer token ids with their offsets.

Two encodings, for the two kinds of form metric:

* :func:`encode_sets` (n-gram metrics pooled per set): every set's texts as one stream of
  set-local ids, each text followed by an end-of-text 0 (:class:`SetTokens`). A set is
  tokenized with one call of its tokenizer on its joined texts where the tokenizer splits on
  spaces (:data:`divmeter.inputs.text.tokenize.SPACE_SPLITS`), and interned with one ``dict`` pass.
  :func:`interned` keeps the last interning of an immutable batch per tokenizer, so several
  metrics scoring one batch tokenize it once. From 8,192 characters on, ``whitespace`` and
  ``tevet`` sets are tokenized and interned all at once in numpy from the UTF-8 bytes
  (:func:`_byte_tokens`, :func:`_intern_bytes`), giving the same ids.
* :class:`TokenKeys` (per-response metrics): the tokens of many texts as exact integer keys with
  each token's text; ``whitespace`` and ``tevet`` tokens are coded in numpy straight from the
  UTF-8 bytes (:func:`_byte_tokens`), other tokenizers go through
  :func:`divmeter.inputs.text.ngrams.encode_tokens`.

With numba installed (``divmeter[fast]``), once a process has sent :data:`_JIT_LOAD_CHARS`
characters through these byte paths, the compiled kernels of :mod:`divmeter.inputs.text.jit` take
the ``whitespace`` and ``tevet`` batches instead (:func:`_jit_map`, 1M characters at a time), for
both encodings and for the per-response kernels of TTR and MTLD (:func:`per_text`); same ids,
same numbers. ``DIVMETER_NO_JIT=1`` switches them off.

Both are exact: equal ids (keys) if and only if equal tokens.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from itertools import chain, count
from types import ModuleType
from typing import Any

import numpy as np

from divmeter.inputs.text.ngrams import KEY_BITS, encode_tokens
from divmeter.inputs.text.tokenize import (
    SPACE_SPLITS,
    Tokenizer,
    blank_whitespace_only,
    check_scripts,
)

__all__ = ["InternedSets", "SetTokens", "TokenIds", "TokenKeys", "compiled", "encode_sets",
           "intern_sets", "interned", "per_text"]

#: Marks the end of each text when a set's texts are tokenized as one joined string.
_SEP = "\x00"
_JOIN = " \x00 "
#: Marks the end of each text on the per-text path (a token can never be this object).
_END = object()


@dataclass
class SetTokens:
    """The tokens of many response sets as one id stream with set-local ids.

    Attributes:
        ids: Every set's texts in order, each text's token ids followed by 0 (end of text).
            Token ids are >= 1 and equal within a set iff the tokens are equal.
        n_words: Length of each set's part of ``ids`` (its tokens plus one 0 per text).
        n_texts: Text count of each set.
        width: A bound on each set's ids (they are < ``width[s]``).
        n_types: Number of distinct tokens of each set.
    """

    ids: np.ndarray
    n_words: np.ndarray
    n_texts: np.ndarray
    width: np.ndarray
    n_types: np.ndarray

    def group(self, a: int, b: int) -> SetTokens:
        """Sets ``a .. b-1`` (views, no copy)."""
        w0, w1 = int(self.n_words[:a].sum()), int(self.n_words[:b].sum())
        return SetTokens(self.ids[w0:w1], self.n_words[a:b], self.n_texts[a:b],
                          self.width[a:b], self.n_types[a:b])

    def n_tokens(self) -> np.ndarray:
        """Token count of each set."""
        out: np.ndarray = self.n_words - self.n_texts
        return out


@dataclass
class InternedSets:
    """Per-set interned words, before compaction (see :func:`intern_sets`)."""

    raw: np.ndarray  # 0: end of text, 1: empty word, else 2 + index of first occurrence
    n_words: list[int]
    n_texts: list[int]
    n_types: list[int]
    longest: np.ndarray | None = None  # tokens of each set's longest text, once computed


def intern_sets(text_sets: Sequence[Sequence[str]], tok: Tokenizer) -> InternedSets:
    """Tokenize every set and intern its words, in one dict pass per set.

    For the tokenizers that split on spaces (``tevet``, ``whitespace``) a set's texts are
    joined with ``" \x00 "`` and tokenized as one string (one ``split`` call instead of one per
    text); the ``\x00`` words mark the text ends. A set whose texts contain ``\x00``, and the
    ``word`` tokenizer, take the per-text path, with a sentinel object marking text ends. Each
    set's words go through one ``dict.setdefault`` pass mapping a word to 2 + the index of its first
    occurrence (0: end of text; 1: the empty word of runs of spaces).
    """
    if tok.name in _BYTE_SPLITS:
        fast = _intern_bytes(text_sets, tok)
        if fast is not None:
            return fast
    parts: list[np.ndarray] = []  # one array per set: the words die with their set (cache-hot)
    n_words: list[int] = []
    n_texts: list[int] = []
    n_types: list[int] = []
    joinable = tok.name in SPACE_SPLITS
    for texts in text_sets:
        n_texts.append(len(texts))
        words: list[Any]
        if not texts:
            n_words.append(0)
            n_types.append(0)
            continue
        cased = [t.lower() for t in texts] if tok.lowercase else texts
        if tok.name == "tevet":  # its split keeps a tab as a word, but not a blank response's
            cased = blank_whitespace_only(cased)
        joined = _JOIN.join(cased) + _JOIN[:-1]
        if joinable and joined.count(_SEP) == len(texts):
            words = SPACE_SPLITS[tok.name](joined)
            ids: dict[Any, int] = {_SEP: 0, "": 1}
        else:
            words = [w for t in tok.many(list(texts)) for w in chain(t, (_END,))]
            ids = {_END: 0}
        reserved = len(ids)
        parts.append(np.fromiter(map(ids.setdefault, words, count(2)), dtype=np.int64,
                                 count=len(words)))
        n_words.append(len(words))
        n_types.append(len(ids) - reserved)
    raw = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return InternedSets(raw, n_words, n_texts, n_types)


#: The last interning of an immutable batch (a tuple of tuples of texts, as
#: :mod:`divmeter.engine.batch` passes) per tokenizer, with the batch itself held so that its
#: identity stays unique: several metrics scoring one batch with one tokenizer tokenize it once.
#: Lists (mutable) are never cached.
_LAST_INTERNED: dict[Tokenizer, tuple[Any, InternedSets]] = {}


def interned(text_sets: Sequence[Sequence[str]], tok: Tokenizer) -> InternedSets:
    frozen = isinstance(text_sets, tuple) and all(type(t) is tuple for t in text_sets)
    last = _LAST_INTERNED.get(tok)
    if frozen and last is not None and last[0] is text_sets:
        return last[1]
    out = intern_sets(text_sets, tok)
    if frozen:
        _LAST_INTERNED[tok] = (text_sets, out)
    return out


def encode_sets(text_sets: Sequence[Sequence[str]], tok: Tokenizer, top: int,
                 factor: int = 1) -> SetTokens:
    """Every set's tokens as one id stream with set-local ids (see :class:`SetTokens`).

    The interned ids (2 + first-occurrence index) are kept when
    ``n_sets * (longest set)**top * factor`` fits the 62-bit n-gram keys; otherwise they are
    compacted to 2 + the rank of the token among its set's distinct tokens. Empty words are
    dropped.
    """
    it = interned(text_sets, tok)
    raw, n_words = it.raw, it.n_words
    total, n_sets = raw.size, len(it.n_texts)
    words_arr = np.array(n_words, dtype=np.int64)
    width = words_arr + 2
    if n_sets * max(int(width.max(initial=1)), 1) ** top * factor >= KEY_BITS:
        # compact: 2 + rank of the token's first occurrence among its set's first occurrences
        raw = raw.copy()  # the interning may be shared (cached)
        set_start = np.cumsum(words_arr) - words_arr
        start = np.repeat(set_start, words_arr)
        is_first = raw == np.arange(total, dtype=np.int64) - start + 2
        firsts_before = np.cumsum(is_first) - is_first
        tok_at = raw >= 2
        first_pos = (start + raw - 2)[tok_at]
        raw[tok_at] = 2 + firsts_before[first_pos] - firsts_before[start[tok_at]]
        width = 2 + np.bincount(np.repeat(np.arange(n_sets, dtype=np.int64), words_arr),
                                weights=is_first, minlength=n_sets).astype(np.int64)
    empty = raw == 1
    if empty.any():  # runs of spaces (or dots) gave empty words: drop them
        raw = raw[~empty]
        words_arr = words_arr - np.bincount(
            np.repeat(np.arange(n_sets, dtype=np.int64), words_arr)[empty], minlength=n_sets)
    return SetTokens(raw, words_arr, np.array(it.n_texts, dtype=np.int64), width,
                      np.array(it.n_types, dtype=np.int64))


# The whitespace fast path packs each token's UTF-8 bytes (zero-padded to K = 8..64 bytes; the
# text has no NUL) into K/8 unsigned 64-bit words: an exact, injective code. The sort key mixes
# the words (tokens of <= 8 bytes: the word itself); tokens with equal keys are then compared
# word by word, and on a collision (or a token over 64 bytes, a NUL, a non-ASCII space) the set
# falls back to the dictionary encoding, so the keys are always exact.
_MAX_PACK = 64
# the non-ASCII characters str.split() splits on (every c with chr(c).isspace(), c >= 128)
_BYTE_MASK = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)  # low k bytes
_MIX = np.array([1, 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                 0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53,
                 0x27D4EB2F165667C5], dtype=np.uint64)


#: Tokenizers whose tokens the byte path finds (maximal runs of non-separator bytes), with the
#: character joining the texts: ``whitespace`` (``str.split()``; ``\\x1f`` is whitespace to it)
#: and ``tevet`` (``.`` and ``\\n`` removed, split on ``" "``; ``\\x00`` joins).
_BYTE_SPLITS = {"whitespace": "\x1f", "tevet": "\x00"}


@dataclass
class _ByteTokens:
    """Tokens of many texts grouped by equal token: ``order`` lists the tokens sorted by
    (type, position), ``same[i]`` says that ``order[i + 1]`` is the same token as ``order[i]``;
    ``doc`` is the text of each token and ``lengths`` the token count of each text."""

    order: np.ndarray
    same: np.ndarray
    doc: np.ndarray
    lengths: np.ndarray


def _joined_bytes(texts: Sequence[str], name: str, check: bool = True
                  ) -> tuple[np.ndarray, bool] | None:
    """The UTF-8 bytes of ``texts`` for the byte paths (numpy and compiled): every text
    followed by the separator of :data:`_BYTE_SPLITS`, then 8 more separators (padding for
    8-byte reads), and whether the texts are ASCII; ``None`` where the byte paths do not apply
    (a NUL or separator character in a text, unless ``check`` is false: the compiled scan
    counts those bytes itself). Texts are taken as ``tok.lowercase`` left them; for
    ``whitespace``, non-ASCII whitespace becomes a space (``str.split()`` splits on both: the
    same tokens); for ``tevet``, whitespace-only texts are blanked (no token) and ``.`` and
    ``\\n`` removed."""
    if name == "tevet":  # a whitespace-only text has no token (str.split() gives none anyway)
        texts = blank_whitespace_only(texts)
    n_texts = len(texts)
    sep = _BYTE_SPLITS[name]
    # each text encoded alone (an ASCII text is one copy; one emoji does not widen the whole
    # batch's string), then the bytes joined; surrogatepass: a lone surrogate (invalid UTF-8,
    # but a valid str) gets its own 3 bytes, so the encoding stays injective (equal bytes iff
    # equal tokens)
    try:
        parts = list(map(str.encode, texts))  # strict UTF-8: the same bytes where it succeeds
    except UnicodeEncodeError:
        parts = [t.encode("utf-8", "surrogatepass") for t in texts]
    data = sep.encode().join([*parts, *[b""] * 9])
    if check and (data.count(b"\x00") != (n_texts + 8 if name == "tevet" else 0)
                  or (name == "whitespace" and data.count(b"\x1f") != n_texts + 8)):
        return None
    if name == "tevet":  # ASCII bytes: never inside a multi-byte character
        data = data.replace(b".", b"").replace(b"\n", b"")
    if not data.isascii():
        buf, unspaced = _non_ascii(data, name == "whitespace")
        if unspaced.size:  # the byte paths never call the tokenizer, which would warn
            ends = _text_ends(parts, buf, sep, by_length=name == "whitespace")  # (1:1 bytes)
            which = np.unique(np.searchsorted(ends, unspaced)).tolist()
            check_scripts([texts[i] for i in which if i < n_texts], name)
        return buf, False
    return np.frombuffer(data, dtype=np.uint8), True


#: UTF-8 code ranges (the bytes of a character as one big-endian number) of the scripts written
#: without spaces (:data:`divmeter.inputs.text.tokenize.UNSPACED_SHARE`): Thai and Lao,
#: Myanmar, Khmer, kana, CJK extension A, CJK, CJK compatibility.
_UNSPACED_CODES = ((0xE0B880, 0xE0BBBF), (0xE18080, 0xE1829F), (0xE19E80, 0xE19FBF),
                   (0xE38180, 0xE383BF), (0xE39080, 0xE4B6BF), (0xE4B880, 0xE9BFBF),
                   (0xEFA480, 0xEFABBF))
#: The UTF-8 codes of the non-ASCII characters ``str.split()`` splits on (U+0085, U+00A0 in two
#: bytes; U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000 in three).
_SPACE_CODES2 = np.array([0xC285, 0xC2A0], dtype=np.int64)
_SPACE_CODES3 = np.array([0xE19A80, *range(0xE28080, 0xE2808B), 0xE280A8, 0xE280A9, 0xE280AF,
                          0xE2819F, 0xE38080], dtype=np.int64)


def _text_ends(items: Sequence[Sized], buf: np.ndarray, sep: str, by_length: bool
               ) -> np.ndarray:
    """The offset in the joined bytes ``buf`` of each text's end (the separator after it):
    from the lengths of ``items`` where those are the texts' lengths in ``buf``
    (``by_length``), else by a pass over ``buf``."""
    if by_length:
        lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
        out: np.ndarray = np.cumsum(lengths + 1) - 1
        return out
    return np.flatnonzero(buf == ord(sep))[:len(items)]


def _codes_in(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Which of ``codes`` are in the sorted ``table`` (a binary search: cheaper than
    ``numpy.isin`` for the few codes a batch has)."""
    at = np.minimum(np.searchsorted(table, codes), table.size - 1)
    out: np.ndarray = table[at] == codes
    return out


_HIGH_BITS = np.uint64(0x8080808080808080)
_EIGHT = np.arange(8, dtype=np.int64)


def _lead_bytes(b: np.ndarray) -> np.ndarray:
    """Offsets of the bytes >= 0xC2 of ``b`` (lead bytes of multi-byte UTF-8 characters),
    looked for 8 bytes at a time: only the words with a byte >= 0x80 are opened."""
    n8 = b.size // 8
    words = np.frombuffer(b.data, dtype="<u8", count=n8)
    high = np.bitwise_and(words, _HIGH_BITS).astype(bool)
    pos = (np.flatnonzero(high)[:, None] * 8 + _EIGHT).ravel()
    pos = np.concatenate((pos, np.arange(8 * n8, b.size, dtype=np.int64)))
    return pos[b[pos] >= 0xC2]


def _non_ascii(data: bytes, spaces: bool) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of non-ASCII joined texts, with (``spaces``) every non-ASCII whitespace
    character replaced by as many spaces as it has bytes (``str.split()`` splits on both; the
    offsets stay the text's), and the offsets of the characters of scripts written without
    spaces (only the texts holding one are checked). One numpy pass over 8-byte words finds the
    lead bytes of multi-byte characters; only those few are looked at."""
    b = np.frombuffer(data, dtype=np.uint8)
    lead = _lead_bytes(b)
    if not lead.size:
        return b, lead
    nxt = b[np.minimum(lead + 1, b.size - 1)].astype(np.int64)
    code3 = (b[lead].astype(np.int64) << 16) | (nxt << 8) | b[np.minimum(lead + 2, b.size - 1)]
    hit = np.zeros(lead.size, dtype=bool)
    for lo, hi in _UNSPACED_CODES:
        hit |= (code3 >= lo) & (code3 <= hi)
    unspaced = lead[hit]
    if spaces:
        two = _codes_in(code3 >> 8, _SPACE_CODES2)
        three = _codes_in(code3, _SPACE_CODES3)
        if two.any() or three.any():
            b = b.copy()
            for k, hit in ((2, two), (3, three)):
                at = lead[hit]
                for j in range(k):
                    b[at + j] = 0x20
    return b, unspaced


def _byte_tokens(texts: Sequence[str], name: str) -> _ByteTokens | None:
    """``whitespace`` or ``tevet`` tokens of ``texts`` found and grouped in numpy from the UTF-8
    bytes of the joined texts, without a Python string per token; ``None`` where this does not
    apply (a NUL or separator character in a text, a token over 64 bytes, more than 2**32
    tokens, or a key collision: the caller then uses the dictionary path).

    A token's key is its UTF-8 bytes packed into a 64-bit word when it has at most 8 bytes
    (exact: the texts hold no NUL), else that word mixed with the later 8-byte words. One plain
    sort of ``hash32(key) << 32 | index`` groups equal keys in position order; the grouping is
    then checked exactly (equal hash32 iff equal key along the sorted order, and equal bytes for
    every pair of neighbours involving a token over 8 bytes), so equal groups iff equal tokens.
    """
    joined = _joined_bytes(texts, name)
    if joined is None:
        return None
    buf, ascii_only = joined
    n_texts = len(texts)
    sep = _BYTE_SPLITS[name]
    head = buf[:-8]
    if name == "whitespace":  # str.split()'s ASCII whitespace: 9-13 and 28-32
        shifted = head - np.uint8(9)
        ws = shifted <= 4
        shifted -= np.uint8(19)
        ws |= shifted <= 4
        del shifted
    else:
        ws = (head == 32) | (head == 0)
    edges = np.flatnonzero(ws[1:] != ws[:-1]) + 1
    if not ws[0]:
        edges = np.concatenate((np.zeros(1, dtype=np.int64), edges))
    st = edges[0::2]  # token = [st, en): a run of non-separator bytes (raw ends in one)
    tlen = edges[1::2] - st
    n_tok = int(st.size)
    if n_tok >= 1 << 32 or int(tlen.max(initial=1)) > _MAX_PACK:
        return None
    ends = _text_ends(texts, head, sep, by_length=name == "whitespace" and ascii_only)
    cum = np.searchsorted(st, ends)  # tokens before each text's end
    lengths = np.diff(cum, prepend=0)
    doc = np.repeat(np.arange(n_texts, dtype=np.int64), lengths)
    # words8[i] = the 8 bytes from i on, little-endian (an unaligned view, no copy)
    words8 = np.ndarray(buffer=buf, dtype="<u8", shape=(buf.size - 7,), strides=(1,))
    key = words8[st]
    key &= _BYTE_MASK[np.minimum(tlen, 8)]
    long_tok = tlen > 8
    lng = np.flatnonzero(long_tok)
    with np.errstate(over="ignore"):  # arithmetic modulo 2**64 on purpose
        if lng.size:
            h, sub, at = key[lng], lng, np.arange(lng.size)
            for j in range(1, _MAX_PACK // 8):
                live = tlen[sub] > 8 * j
                sub, at = sub[live], at[live]
                if not sub.size:
                    break
                h[at] ^= (words8[st[sub] + 8 * j]
                          & _BYTE_MASK[np.minimum(tlen[sub] - 8 * j, 8)]) * _MIX[j]
            key[lng] = h
        packed = key * _MIX[1]  # hash32(key) << 32 | index, sorted in place
    packed >>= np.uint64(32)
    packed <<= np.uint64(32)
    packed |= np.arange(n_tok, dtype=np.uint64)
    packed.sort()
    hs = packed >> np.uint64(32)
    packed &= np.uint64(0xFFFFFFFF)
    order = packed.view(np.int64)
    same = hs[1:] == hs[:-1]
    ks = key[order]
    key_same = ks[1:] == ks[:-1]
    if not np.array_equal(same, key_same):  # two keys share a hash32: exact (slower) sort
        order = np.argsort(key, kind="stable")
        ks = key[order]
        same = ks[1:] == ks[:-1]
    if lng.size:  # keys mixing several words may collide: compare those tokens' bytes
        lo = long_tok[order]
        eq = np.flatnonzero(same & (lo[1:] | lo[:-1]))
        a, b = order[eq], order[eq + 1]
        if not np.array_equal(tlen[a], tlen[b]):
            return None
        for j in range(1, _MAX_PACK // 8):
            live = tlen[a] > 8 * j
            a, b = a[live], b[live]
            if not a.size:
                break
            diff = (words8[st[a] + 8 * j] ^ words8[st[b] + 8 * j]) & _BYTE_MASK[
                np.minimum(tlen[a] - 8 * j, 8)]
            if diff.any():
                return None
    return _ByteTokens(order, same, doc, lengths)


#: Below this many characters in a batch, the dictionary path of :func:`intern_sets` is
#: quicker (the byte path's fixed cost is a few dozen numpy calls).
_BYTE_MIN_CHARS = 8192


# --------------------------------------------------------------------------------------------
# the compiled path (numba, optional: ``divmeter[fast]``)

#: From this many characters in a batch the compiled kernels of :mod:`divmeter.inputs.text.jit` run,
#: once loaded (below, the numpy and dictionary paths are quick enough).
_JIT_MIN_CHARS = _BYTE_MIN_CHARS
#: numba is imported (and the kernels loaded: about 0.5 s from numba's cache, about 10 s the
#: first time on a machine, when they are compiled) only once the process has sent this many
#: characters through the byte paths: a small job does not pay more for the load than the
#: compiled path would save it; a long one pays it once.
_JIT_LOAD_CHARS = 1 << 24
_chars_before_jit = 0
#: Held while a module of compiled kernels (:class:`Kernels`) or richness's ``_jit`` imports
#: numba: two threads importing it at once can see it partially initialised. (The Ray failure
#: with that message had another cause: a cancelled task interrupted inside the import; see
#: :func:`divmeter.engine.ray._stop`.)
JIT_IMPORT_LOCK = threading.RLock()
#: The bytes that separate tokens, per tokenizer, as two ranges ``(lo1, n1, lo2, n2)``:
#: ``str.split()``'s ASCII whitespace 9-13 and 28-32 (:func:`_joined_bytes` makes non-ASCII
#: whitespace a space), and ``tevet``'s space and text separator (NUL).
_SPACE_RANGES = {"whitespace": (9, 4, 28, 4), "tevet": (32, 0, 0, 0)}


class Kernels:
    """A module of compiled kernels, imported (with numba) the first time it is asked for, under
    :data:`JIT_IMPORT_LOCK`.

    Calling it gives the module, or ``None`` when numba is not installed (or cannot load: numba
    raises ``RuntimeError`` when no cache folder is writable) or the environment sets
    ``DIVMETER_NO_JIT=1`` (then nothing is imported).
    """

    def __init__(self, module: str) -> None:
        self.module = module
        #: The module once imported; ``False`` when it cannot be; ``None`` until asked for.
        self.loaded: Any = None

    def __call__(self) -> ModuleType | None:
        if os.environ.get("DIVMETER_NO_JIT", "") not in ("", "0"):
            return None
        if self.loaded is None:
            with JIT_IMPORT_LOCK:
                try:
                    self.loaded = importlib.import_module(self.module)
                except (ImportError, RuntimeError, OSError):  # the numpy path: the same numbers
                    self.loaded = False
        return self.loaded or None


_JIT = Kernels("divmeter.inputs.text.jit")


def compiled() -> ModuleType | None:
    """The compiled kernels (:mod:`divmeter.inputs.text.jit`, importing numba the first time), or
    ``None`` when numba is not installed (or cannot load: numba raises ``RuntimeError`` when no
    cache folder is writable) or the environment sets ``DIVMETER_NO_JIT=1``."""
    return _JIT()


#: The compiled path joins and scans a batch this many characters at a time (never splitting a
#: text, nor a set where set-local ids are made): the allocator reuses buffers of this size,
#: where a whole batch's would be mapped and faulted in afresh on every call (on the benchmark
#: machine that cost as much as the scan itself).
_JIT_CHUNK_CHARS = 1 << 20


@dataclass
class TokenIds:
    """The tokens of consecutive texts (a chunk of a batch) as exact ids, from the compiled path.

    Attributes:
        ids: The type of every token, in order; types are numbered 0, 1, ... by first
            occurrence in the chunk, and equal ids iff equal tokens.
        lengths: Token count of each text.
        n_types: Number of types (``ids < n_types``).
    """

    ids: np.ndarray
    lengths: np.ndarray
    n_types: int
    #: With ``types=True`` (:func:`_jit_map`): each type's first byte offset and byte length
    #: in ``words``, the chunk's bytes as 8-byte little-endian words from every offset.
    starts: np.ndarray | None = None
    sizes: np.ndarray | None = None
    words: np.ndarray | None = None
    #: With ``local`` (:func:`_jit_map`): each text's type count and sum of squared type
    #: counts; the ids (``local="ids"``; none for ``"counts"``) are then numbered by first
    #: occurrence in their text, and ``n_types`` is the most types of one text.
    types: np.ndarray | None = None
    squares: np.ndarray | None = None


def _jit_map(texts: Sequence[str], name: str, fn: Callable[[TokenIds, int, int], Any],
             groups: np.ndarray | None = None, *, types: bool = False,
             eager: bool = False, max_len: int = 0, local: str | None = None
             ) -> list[Any] | None:
    """``fn(chunk, g0, g1)`` of each chunk of :func:`divmeter.inputs.text.jit.scan_tokens` of
    ``texts`` (cased as the tokenizer wants; a tokenizer of :data:`_BYTE_SPLITS`), right after
    the chunk is scanned (so its buffers are reused for the next). Chunks hold about
    :data:`_JIT_CHUNK_CHARS` characters and never split a group (``groups``: sizes of
    consecutive groups of texts; ``None``: every text alone); ``g0 .. g1-1`` are a chunk's
    groups. ``None`` for no text, a batch under :data:`_JIT_MIN_CHARS` characters, until
    :data:`_JIT_LOAD_CHARS` characters have passed, without numba, and wherever the numpy byte
    path declines too (a NUL or separator character; with ``types``, a token over ``max_len``
    bytes). With ``types``, each chunk also holds its types' first occurrences
    (:func:`divmeter.inputs.text.jit.scan_types`); ``eager`` loads the kernels at once (corpus
    mode: a long job by design) instead of after :data:`_JIT_LOAD_CHARS` characters;
    ``max_len`` accepts tokens up to that many bytes (default: the numpy byte path's 64 with
    ``types``, else any length: the ids are exact whatever a token's length, and one URL in a
    chunk must not send a whole batch of per-response metrics to the dictionary path);
    ``local`` (``"counts"`` or ``"ids"``) counts each text's types in a table of its own
    (:func:`divmeter.inputs.text.jit.local_types`: the per-response metrics, which never compare
    two texts' tokens)."""
    global _chars_before_jit
    sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    chars = int(sizes.sum())
    if not texts or chars < _JIT_MIN_CHARS:
        return None
    if _JIT.loaded is None and not eager:  # not loaded yet
        _chars_before_jit += chars
        if _chars_before_jit < _JIT_LOAD_CHARS:
            return None
    jit = compiled()
    if jit is None:
        return None
    n_groups = len(texts) if groups is None else len(groups)
    chunks = [(0, len(texts), 0, n_groups)]  # (first text, end, first group, end)
    if chars > _JIT_CHUNK_CHARS:
        cum = np.concatenate(([0], np.cumsum(sizes)))
        starts = np.arange(len(texts) + 1) if groups is None else np.concatenate(
            ([0], np.cumsum(groups)))  # first text of each group
        picks = np.searchsorted(cum[starts], np.arange(_JIT_CHUNK_CHARS, chars, _JIT_CHUNK_CHARS))
        cuts = sorted({0, n_groups, *picks.tolist()})
        chunks = [(int(starts[g0]), int(starts[g1]), g0, g1)
                  for g0, g1 in zip(cuts, cuts[1:], strict=False)]
    end = ord(_BYTE_SPLITS[name])  # (a NUL in a text: declined, for both tokenizers)
    out: list[Any] = []
    for t0, t1, g0, g1 in chunks:
        part = texts[t0:t1]
        joined = _joined_bytes(part, name, check=False)
        if joined is None:
            return None
        buf = joined[0]
        words = np.ndarray(buffer=buf, dtype="<u8", shape=(buf.size - 7,), strides=(1,))
        if local:
            ids, lengths, v, m2, n_types = jit.local_types(  # (a token of any length)
                buf, words, _SPACE_RANGES[name], end, 0, len(part), max_len or buf.size,
                local == "ids")
            chunk = TokenIds(ids, lengths, n_types, types=v, squares=m2)
        elif types:
            ids, lengths, n_types, starts, sizes = jit.scan_types(
                buf, words, _SPACE_RANGES[name], end, 0, len(part), max_len or _MAX_PACK)
            chunk = TokenIds(ids, lengths, n_types, starts, sizes, words)
        else:
            ids, lengths, n_types = jit.scan_tokens(buf, words, _SPACE_RANGES[name], end, 0,
                                                    len(part), max_len or buf.size)
            chunk = TokenIds(ids, lengths, n_types)
        if n_types < 0:
            return None
        out.append(fn(chunk, g0, g1))
    return out


def per_text(texts: Sequence[str], tok: Tokenizer,
             values: Callable[[TokenIds], np.ndarray], local: str | None = None
             ) -> np.ndarray | None:
    """``values`` of each chunk of the compiled path's tokens of ``texts``, concatenated (one
    value per text; for the per-response metrics of :mod:`divmeter.metrics.richness`), or
    ``None`` where the compiled path does not run: a tokenizer other than ``whitespace`` and
    ``tevet``, and the cases of :func:`_jit_map` (whose ``local`` it passes on).

    Example:
        >>> from divmeter.inputs.text.tokenize import get_tokenizer
        >>> per_text(["a b"], get_tokenizer("whitespace"), lambda c: c.lengths) is None  # short
        True
    """
    if tok.name not in _BYTE_SPLITS:
        return None
    if tok.lowercase:
        if sum(map(len, texts)) < _JIT_MIN_CHARS:
            return None  # (checked first: no lowercasing for nothing)
        texts = [t.lower() for t in texts]
    found = _jit_map(texts, tok.name, lambda c, g0, g1: values(c), local=local)
    return None if found is None else np.concatenate(found)


def _intern_bytes(text_sets: Sequence[Sequence[str]], tok: Tokenizer) -> InternedSets | None:
    """:func:`intern_sets` from the compiled path (:func:`_jit_map`) or else the numpy byte
    path (:func:`_byte_tokens`) of every text of every set at once (the same ids: 2 + the index
    of the token's first occurrence in its set's stream); ``None`` where neither applies."""
    texts = list(chain.from_iterable(text_sets))
    if sum(map(len, texts)) < _BYTE_MIN_CHARS:
        return None
    n_texts = np.fromiter(map(len, text_sets), dtype=np.int64, count=len(text_sets))
    if tok.lowercase:
        texts = [t.lower() for t in texts]
    if not texts:
        zeros = [0] * len(text_sets)
        return InternedSets(np.zeros(0, dtype=np.int64), zeros, n_texts.tolist(), zeros)
    set_cum = np.concatenate(([0], np.cumsum(n_texts)))
    parts = _jit_map(texts, tok.name, lambda c, g0, g1: (  # (where the numpy path applies)
        *_JIT.loaded.set_local_ids(c.ids, c.lengths, n_texts[g0:g1], c.n_types), c.lengths),
        n_texts, max_len=_MAX_PACK)
    if parts is not None:
        raw, n_types, lengths = (np.concatenate(p) for p in zip(*parts, strict=True))
    else:
        bt = _byte_tokens(texts, tok.name)
        if bt is None:
            return None
        raw, n_types = _set_local_ids(bt, n_texts, set_cum)
        lengths = bt.lengths
    text_cum = np.concatenate(([0], np.cumsum(lengths)))
    n_words = np.diff(text_cum[set_cum]) + n_texts  # tokens + one end of text per text
    longest = np.zeros(len(text_sets), dtype=np.int64)
    live = n_texts > 0
    longest[live] = np.maximum.reduceat(lengths, set_cum[:-1][live])
    return InternedSets(raw, n_words.tolist(), n_texts.tolist(), n_types.tolist(), longest)


def _set_local_ids(bt: _ByteTokens, n_texts: np.ndarray, set_cum: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`divmeter.inputs.text.jit.set_local_ids` in numpy, from the grouping of
    :func:`_byte_tokens`: ``(raw, types per set)``."""
    n_sets, n_all, n_tok = n_texts.size, int(set_cum[-1]), int(bt.doc.size)
    raw = np.zeros(n_tok + n_all, dtype=np.int64)
    if not n_tok:
        return raw, np.zeros(n_sets, dtype=np.int64)
    set_of_text = np.repeat(np.arange(n_sets, dtype=np.int64), n_texts)
    text_cum = np.concatenate(([0], np.cumsum(bt.lengths)))
    n_words = np.diff(text_cum[set_cum]) + n_texts
    doc_o = bt.doc[bt.order]  # in the sorted order: text, set, position in the stream
    so = set_of_text[doc_o]
    doc_o += bt.order  # (texts end with a 0 in the stream)
    brk = np.empty(n_tok, dtype=bool)  # first of a (token, set) group in the sorted order
    brk[0] = True
    np.logical_not(bt.same, out=brk[1:])
    brk[1:] |= so[1:] != so[:-1]
    gstart = np.flatnonzero(brk)
    gset = so[gstart]
    first = doc_o[gstart] - (np.cumsum(n_words) - n_words)[gset] + 2
    raw[doc_o] = first[np.cumsum(brk) - 1]
    return raw, np.bincount(gset, minlength=n_sets)


class TokenKeys:
    """The tokens of a set as exact integer keys (equal keys = equal tokens; on the compiled
    path, within each chunk of responses, which is all the per-response metrics compare), with
    their response, and (lazily) each token's previous / next occurrence in its response.

    ``prev[j]`` is the global index of the previous occurrence of token ``j``'s type in the same
    response, or ``start - 1`` of that response when there is none; ``nxt[j]`` the next one, or
    the response's ``end`` (exclusive) when there is none.
    """

    def __init__(self, key: np.ndarray, lengths: np.ndarray,
                 doc: np.ndarray | None = None) -> None:
        self.key = key
        self.lengths = lengths
        self.ends = np.cumsum(lengths)
        self.starts = self.ends - lengths
        self.n_docs = int(lengths.shape[0])
        self.n_tokens = int(key.shape[0])
        if doc is None:
            doc = np.repeat(np.arange(self.n_docs, dtype=np.int64), lengths)
        self.doc = doc
        self._sort: tuple[np.ndarray, np.ndarray] | None = None
        self._pairs: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_texts(cls, texts: list[str], tok: Tokenizer) -> TokenKeys:
        if tok.name in _BYTE_SPLITS:
            fast = cls._fast(texts, tok.name, tok.lowercase)
            if fast is not None:
                return fast
        ids, lengths, _ = encode_tokens(tok.many(texts))
        return cls(ids, lengths)

    @classmethod
    def _fast(cls, texts: list[str], name: str, lowercase: bool) -> TokenKeys | None:
        """Keys from the compiled path (:func:`_jit_map`: the type ids, grouped by a
        counting sort) or else :func:`_byte_tokens` (each token's key is the index of its group
        in the sorted order), with that grouping kept as :meth:`sorted_keys`; ``None`` where the
        byte paths do not apply (e.g. for ``whitespace``: a NUL or \\x1f character, a token
        over 64 bytes, a key collision)."""
        if lowercase:
            texts = [t.lower() for t in texts]
        if not texts:
            return None
        chunks = _jit_map(texts, name, lambda c, g0, g1: c)
        if chunks is not None:  # types numbered per chunk: equal keys iff equal tokens there
            offsets = np.cumsum([0] + [c.n_types for c in chunks])
            key = np.concatenate([c.ids + off for c, off in zip(chunks, offsets, strict=False)])
            enc = cls(key, np.concatenate([c.lengths for c in chunks]))
            enc._sort = _JIT.loaded.group_order(key, int(offsets[-1]))
            return enc
        bt = _byte_tokens(texts, name)
        if bt is None:
            return None
        n_tok = bt.doc.size
        key = np.empty(n_tok, dtype=np.int64)
        if n_tok:
            type_at = np.empty(n_tok, dtype=np.int64)
            type_at[0] = 0
            np.cumsum(~bt.same, out=type_at[1:])
            key[bt.order] = type_at
        enc = cls(key, bt.lengths, bt.doc)
        enc._sort = (bt.order, bt.same)
        return enc

    def sorted_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """Stable order of the keys and, for consecutive sorted tokens, whether keys are equal."""
        if self._sort is None:
            self._sort = self._sort_by_hash32() or self._sort_stable()
        return self._sort

    def _sort_stable(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.key, kind="stable")
        ks = self.key[order]
        return order, ks[1:] == ks[:-1]

    def _sort_by_hash32(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The stable order from one plain sort of 64-bit values ``hash32(key) << 32 | pos``
        (much faster than a stable argsort); ``None`` if two different keys share a hash32."""
        if self.n_tokens >= 1 << 32:
            return None
        with np.errstate(over="ignore"):
            h = (self.key.astype(np.uint64, copy=False) * _MIX[1]) >> np.uint64(32)
        packed = np.sort((h << np.uint64(32)) | np.arange(self.n_tokens, dtype=np.uint64))
        order = (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)
        hs = packed >> np.uint64(32)
        same = hs[1:] == hs[:-1]
        ks = self.key[order]
        if not np.array_equal(same, ks[1:] == ks[:-1]):
            return None  # a group of equal hashes holds two keys: use the exact stable sort
        return order, same

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(a, b): every token ``a`` and the next occurrence ``b`` of the same key (any text)."""
        if self._pairs is None:
            order, same = self.sorted_keys()
            self._pairs = (order[:-1][same], order[1:][same])
        return self._pairs

    def prev(self) -> np.ndarray:
        a, b = self.pairs()
        prev = (self.starts - 1)[self.doc]  # "none" = one before the response's start
        prev[b] = np.maximum(a, prev[b])  # an occurrence in an earlier response does not count
        return prev

    def neighbours(self) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.pairs()
        nxt = self.ends[self.doc]  # "none" = the response's end
        nxt[a] = np.minimum(b, nxt[a])  # an occurrence in a later response does not count
        return self.prev(), nxt

    def type_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(response of each (response, type) pair, its count), ordered by type."""
        order, same = self.sorted_keys()
        d = self.doc[order]
        brk = np.ones(self.n_tokens, dtype=bool)
        brk[1:] = ~same | (d[1:] != d[:-1])
        first = np.flatnonzero(brk)
        counts = np.diff(np.append(first, self.n_tokens))
        return d[first], counts


def longest_response(text_sets: Sequence[Sequence[str]], tok: Tokenizer) -> np.ndarray:
    """The token count of each set's longest response (0 for an empty set), from the shared
    interning (so a batch is tokenized once).

    Example:
        >>> from divmeter.inputs.text.tokenize import get_tokenizer
        >>> longest_response([["a b c", "a"], [], ["  "]], get_tokenizer("whitespace")).tolist()
        [3, 0, 0]
    """
    it = interned(text_sets, tok)
    if it.longest is None:
        it.longest = _longest(it)
    return it.longest.copy()


def _longest(it: InternedSets) -> np.ndarray:
    raw = it.raw
    n_sets = len(it.n_texts)
    out = np.zeros(n_sets, dtype=np.int64)
    n_texts_total = int(sum(it.n_texts))
    if raw.size == 0 or n_texts_total == 0:
        return out
    text_of = np.cumsum(raw == 0) - (raw == 0)  # the text each word belongs to
    per_text = np.bincount(text_of[raw >= 2], minlength=n_texts_total)
    counts = np.array(it.n_texts, dtype=np.int64)
    live = counts > 0
    starts = (np.cumsum(counts) - counts)[live]
    out[live] = np.maximum.reduceat(per_text, starts)
    return out
