"""Portable n-gram keys: 128-bit hashes of an n-gram's tokens, the same on every shard, every
process and every machine (corpus mode, :mod:`divmeter.inputs.text.table`).

The per-set kernels intern tokens to exact integer ids (:mod:`divmeter.inputs.text.intern`);
those ids depend on the batch, so statistics of two shards cannot be merged through them. Corpus
statistics key an n-gram instead by a 128-bit hash of the UTF-8 bytes of its tokens, defined
here with integer arithmetic modulo ``2**64`` (numpy's ``uint64``; the compiled kernels of
:mod:`divmeter.inputs.text.jit_ngrams` compute the same bits):

* a token of ``L`` bytes, read as little-endian 64-bit words ``w_0 .. w_m`` (the last one padded
  with zero bytes), has two lanes ``j = 0, 1``: ``h = SEED_j + L``, then for every word
  ``h = fmix64((h ^ w) * MUL_j)``, with ``fmix64`` MurmurHash3's 64-bit finaliser (a bijection);
* the n-gram ``t_1 .. t_n`` has the key ``(k_0, k_1)`` with ``k_j = h_j(t_1)``, then for each next
  token ``k_j = fmix64(k_j * STEP_j + h_j(t_i))``: a key of order ``n`` is one step from the key of
  its leading ``(n-1)``-gram, so every order is computed from the one below in one pass.

Keys of different n-grams of one order collide only by chance: modelling the hash as a random
function, the probability that any two of ``D`` distinct n-grams of an order share a key is at
most ``D (D - 1) / 2**129`` (``2.9e-21`` at a billion distinct n-grams, ``1.5e-15`` at a
trillion). "Exact" in corpus mode means exact integer counts of these keys: equal to the counts
of the n-grams themselves unless such a collision happened. The scheme is named in a corpus
result's signature (``key:h128``).

Example:
    >>> ha, hb = token_hashes(["a", "b"])
    >>> bool(ha[0] != ha[1]), bool(hb[0] != hb[1])
    (True, True)
    >>> ka, kb = ha[[0]].copy(), hb[[0]].copy()
    >>> step_keys(ka, kb, ha[[1]], hb[[1]])  # the bigram "a b"
    >>> int(ka[0]) == bigram_key(b"a", b"b")[0]
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["KEY_SCHEME", "SEEDS", "MULS", "STEPS", "fmix64", "hash_words", "token_hashes",
           "step_keys", "token_hash_int", "bigram_key"]

#: The name of the key scheme in signatures.
KEY_SCHEME = "h128"
SEEDS = (0x243F6A8885A308D3, 0x13198A2E03707344)
MULS = (0xA4093822299F31D1, 0x9E3779B97F4A7C15)
STEPS = (0x082EFA98EC4E6C89, 0xC2B2AE3D27D4EB4F)
_M64 = (1 << 64) - 1
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_SEED = tuple(np.uint64(s) for s in SEEDS)
_MUL = tuple(np.uint64(m) for m in MULS)
_STEP = tuple(np.uint64(s) for s in STEPS)


def fmix_steps(x: Any) -> Any:
    """MurmurHash3's 64-bit finaliser, the one definition: of every entry of a uint64 array, in
    place (:func:`fmix64`), or of one ``np.uint64`` inside a compiled kernel
    (:func:`divmeter.inputs.text.jit_ngrams._fmix`). Products wrap modulo 2**64."""
    x ^= x >> _S33
    x *= _F1
    x ^= x >> _S33
    x *= _F2
    x ^= x >> _S33
    return x


def fmix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser of every entry of ``x`` (uint64), in place; returns ``x``."""
    with np.errstate(over="ignore"):
        fmix_steps(x)
    return x


def hash_words(words: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two hash lanes of tokens given as rows of zero-padded little-endian 64-bit words
    (``words``: shape ``(tokens, max words)``, uint64) and their byte lengths."""
    n_tok = int(nbytes.shape[0])
    n_words = (nbytes + 7) // 8
    out = []
    for lane in (0, 1):
        h = nbytes.astype(np.uint64) + _SEED[lane]
        for j in range(words.shape[1] if n_tok else 0):
            live = np.flatnonzero(n_words > j)
            if not live.size:
                break
            x = h[live] ^ words[live, j]
            with np.errstate(over="ignore"):
                x *= _MUL[lane]
            h[live] = fmix64(x)
        out.append(h)
    return out[0], out[1]


def token_hashes(tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The two hash lanes (uint64 arrays) of each token's UTF-8 bytes (a lone surrogate as its
    own three bytes, as the byte paths of :mod:`divmeter.inputs.text.intern` encode it)."""
    raw = [t.encode("utf-8", "surrogatepass") for t in tokens]
    nbytes = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
    width = int((nbytes.max(initial=0) + 7) // 8)
    if not raw:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    padded = b"".join(r.ljust(8 * width, b"\0") for r in raw)
    words = np.frombuffer(padded, dtype="<u8").reshape(len(raw), max(width, 1) if width else 0)
    return hash_words(words.astype(np.uint64), nbytes)


def step_keys(ka: np.ndarray, kb: np.ndarray, ta: np.ndarray, tb: np.ndarray) -> None:
    """Extend keys of order ``n`` by one token each (``ta``, ``tb``: the next token's lanes):
    ``k = fmix64(k * STEP + t)``, in place."""
    with np.errstate(over="ignore"):
        ka *= _STEP[0]
        ka += ta
        kb *= _STEP[1]
        kb += tb
    fmix64(ka)
    fmix64(kb)


# --------------------------------------------------------------------------------------------
# the definition in plain Python integers (the reference the tests check both paths against)


def _fmix_int(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _M64
    return x ^ (x >> 33)


def token_hash_int(data: bytes, lane: int) -> int:
    """One lane of a token's hash, in Python integers (the definition, for tests).

    Example:
        >>> token_hash_int(b"a", 0) == int(token_hashes(["a"])[0][0])
        True
    """
    h = (SEEDS[lane] + len(data)) & _M64
    for i in range(0, len(data), 8):
        w = int.from_bytes(data[i:i + 8].ljust(8, b"\0"), "little")
        h = _fmix_int(((h ^ w) * MULS[lane]) & _M64)
    return h


def bigram_key(*tokens: bytes) -> tuple[int, int]:
    """The key of the n-gram ``tokens`` (any n >= 1), in Python integers (for tests)."""
    key = []
    for lane in (0, 1):
        k = token_hash_int(tokens[0], lane)
        for t in tokens[1:]:
            k = _fmix_int((k * STEPS[lane] + token_hash_int(t, lane)) & _M64)
        key.append(k)
    return key[0], key[1]
