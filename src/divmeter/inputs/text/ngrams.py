"""Exact, vectorised n-gram interning shared by every form metric.

Texts are turned into integer token ids once; n-grams of every order are then given exact
integer ids by iterated pair-interning: the id of an (n)-gram is the rank of the pair
(id of its leading (n-1)-gram, id of its last token) among all such pairs, found with
``numpy.unique``. No hashing, so no collisions, and n-grams never cross text boundaries.

From the ids, every count-based statistic is a ``bincount`` away: pooled counts (distinct-n,
entropy-n), per-text count vectors (cosine, BLEU clipping), max counts among the other texts
(linear-time self-BLEU).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from divmeter.inputs.text.intern import SetTokens

__all__ = ["KEY_BITS", "NgramIndex", "encode_tokens", "fit_groups", "ngram_tuples",
           "set_ngram_keys"]

#: Exact integer n-gram keys must stay below this bound (int64 arithmetic with room to spare).
KEY_BITS = 2**62


def encode_tokens(token_lists: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray, int]:
    """Map tokens to integer ids.

    Returns:
        ``(ids, lengths, vocab_size)``: the concatenated ids (int64), the token count of each
        text, and the number of distinct tokens.
    """
    flat = list(chain.from_iterable(token_lists))
    # first-occurrence order ids, built and looked up in C (dict.fromkeys / map)
    vocab = {t: i for i, t in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    return ids, lengths, len(vocab)


def ngram_tuples(tokens: Sequence[str], k: int) -> Iterable[Any]:
    """The ``k``-grams of one token list, in order: the tokens themselves for ``k = 1``, else
    tuples (hashable keys of the streaming corpus accumulators).

    Example:
        >>> list(ngram_tuples(["a", "b", "c"], 2))
        [('a', 'b'), ('b', 'c')]
    """
    if k == 1:
        return tokens
    return zip(*(tokens[i:] for i in range(k)), strict=False)


@dataclass
class NgramIndex:
    """Exact n-gram ids of a list of tokenized texts, built lazily order by order.

    Example:
        >>> idx = NgramIndex.from_tokens([["a", "b", "a", "b"], ["a", "b"]])
        >>> ids, doc, k = idx.order(2)
        >>> ids.tolist(), doc.tolist(), k
        ([0, 1, 0, 0], [0, 0, 0, 1], 2)
    """

    tokens: np.ndarray
    lengths: np.ndarray
    vocab_size: int
    _orders: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def from_tokens(cls, token_lists: Sequence[Sequence[str]]) -> NgramIndex:
        ids, lengths, vocab = encode_tokens(token_lists)
        return cls(ids, lengths, vocab)

    @classmethod
    def from_texts(cls, texts: Sequence[str], tok: Any, chunk: int = 2048) -> NgramIndex:
        """:meth:`from_tokens` of ``tok.many(texts)``, tokenized ``chunk`` texts at a time so
        that only one chunk's token strings exist at once (the same ids: first-occurrence
        order over all texts).

        Example:
            >>> from divmeter.inputs.text import get_tokenizer
            >>> idx = NgramIndex.from_texts(["a b", "b c"], get_tokenizer("whitespace"), chunk=1)
            >>> idx.tokens.tolist(), idx.lengths.tolist()
            ([0, 1, 1, 2], [2, 2])
        """
        vocab: dict[str, int] = {}
        ids: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        for a in range(0, len(texts), chunk):
            token_lists = tok.many(texts[a : a + chunk])
            flat = list(chain.from_iterable(token_lists))
            for t in dict.fromkeys(flat):
                vocab.setdefault(t, len(vocab))
            ids.append(np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat)))
            lengths.append(np.fromiter(map(len, token_lists), dtype=np.int64,
                                       count=len(token_lists)))
        if not ids:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
        return cls(np.concatenate(ids), np.concatenate(lengths), len(vocab))

    @property
    def n_docs(self) -> int:
        return int(self.lengths.shape[0])

    def _first(self) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]:
        """Order 1 as ``(ids, doc, start positions, n_unique)``, and the exclusive end of each
        token's own text (for :meth:`_extend`)."""
        doc = np.repeat(np.arange(self.n_docs, dtype=np.int64), self.lengths)
        ends = np.repeat(np.cumsum(self.lengths), self.lengths)
        pos = np.arange(self.tokens.shape[0], dtype=np.int64)
        return (self.tokens, doc, pos, self.vocab_size), ends

    def _extend(self, cur: tuple[np.ndarray, np.ndarray, np.ndarray, int], k: int,
                ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Order ``k + 1`` from order ``k``: each k-gram that has a next token in its text,
        extended by it and given the rank of (its id, that token) as id."""
        ids, doc, pos, _ = cur
        if ids.shape[0] == 0:  # no k-gram, so no longer one
            return ids, doc, pos, 0
        nxt = pos + k  # index of the token that extends the k-gram
        keep = nxt < ends[pos]
        key = ids[keep] * np.int64(self.vocab_size) + self.tokens[nxt[keep]]
        uniq, inv = np.unique(key, return_inverse=True)
        return inv.astype(np.int64), doc[keep], pos[keep], int(uniq.shape[0])

    def _base(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        if 1 not in self._orders:
            self._orders[1], self._ends = self._first()
        return self._orders[1]

    def order(self, n: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Ids of every n-gram occurrence, the text each comes from, and the number of ids.

        Occurrences are listed in text order, then position order. Ids run over
        ``range(n_unique)``.
        """
        if n < 1:
            raise ValueError("n must be >= 1")
        self._base()
        k = max(o for o in self._orders if o <= n)
        while k < n:
            cur = self._orders[k]
            if cur[0].shape[0] == 0:  # no k-gram, so no longer one: skip to n at once
                self._orders[n] = self._extend(cur, k, self._ends)
                break
            self._orders[k + 1] = self._extend(cur, k, self._ends)
            k += 1
        ids, doc, _, m = self._orders[n]
        return ids, doc, m

    def iter_orders(self, n_max: int) -> Iterator[tuple[int, np.ndarray, np.ndarray, int]]:
        """``(n, ids, doc, n_unique)`` for ``n = 1..n_max``, as :meth:`order` gives them, but
        holding only the current order (nothing is cached): for corpora too large to keep
        every order's arrays at once."""
        cur, ends = self._first()
        for n in range(1, n_max + 1):
            if n > 1:
                cur = self._extend(cur, n - 1, ends)
            yield n, cur[0], cur[1], cur[3]

    def pooled_counts(self, n: int) -> np.ndarray:
        """Count of each distinct n-gram over all texts (length ``n_unique``)."""
        ids, _, m = self.order(n)
        return np.bincount(ids, minlength=m)

    def doc_totals(self, n: int) -> np.ndarray:
        """Number of n-grams in each text (``max(len - n + 1, 0)``)."""
        return np.maximum(self.lengths - n + 1, 0)


def fit_groups(st: SetTokens, top: int, per_set_factor: np.ndarray | None = None
               ) -> Iterator[tuple[int, int, bool]]:
    """Consecutive runs ``(a, b, False)`` of sets whose keys ``set * B**top * F`` fit in 62 bits
    together (``B``: the largest id bound of the run, ``F``: the largest factor), and
    ``(i, i + 1, True)`` for a set that does not fit even alone."""
    width = st.width.tolist()
    factor = [1] * len(width) if per_set_factor is None else per_set_factor.tolist()
    a, big_b, big_f = 0, 1, 1
    for i, (v, f) in enumerate(zip(width, factor, strict=True)):
        nb, nf = max(big_b, v, 1), max(big_f, f, 1)
        if (i - a + 1) * nb**top * nf < KEY_BITS:
            big_b, big_f = nb, nf
            continue
        if i > a:
            yield a, i, False
        a, big_b, big_f = i, max(v, 1), max(f, 1)
        if big_b**top * big_f >= KEY_BITS:
            yield i, i + 1, True
            a, big_b, big_f = i + 1, 1, 1
    if a < len(width):
        yield a, len(width), False


def set_ngram_keys(st: SetTokens, orders: Sequence[int]
                    ) -> Iterator[tuple[int, np.ndarray, np.ndarray, int]]:
    """For each order ``n`` (ascending): ``(n, keys, valid, B**n)``. ``keys[p]`` is
    ``set * B**n + (base-B number of the ids p .. p+n-1)``, an exact key of the n-gram starting
    at stream position ``p`` together with its set; ``valid[p]`` says that this window holds
    no end of text (so it is an n-gram of one text). Both are views that the next order
    overwrites."""
    wanted = set(orders)
    base = max(int(st.width.max(initial=1)), 1)
    key = np.repeat(np.arange(st.n_words.size, dtype=np.int64), st.n_words) * base + st.ids
    inside = st.ids != 0
    valid = inside.copy()
    for n in range(1, max(wanted) + 1):
        if n > 1:  # windows crossing a text (or set) contain its end marker: marked invalid
            key = key[:-1]
            key *= base
            key += st.ids[n - 1:]
            valid = valid[:-1]
            valid &= inside[n - 1:]
        if n in wanted:
            yield n, key, valid, base**n
