"""Constant-memory distinct counts: a HyperLogLog sketch over the portable 128-bit n-gram keys
of :mod:`divmeter.inputs.text.keys` (the ``approx=hll`` mode of distinct-n, EAD and n-gram
diversity, for corpora where even spilling exact tables to disk is too much).

Written here rather than taken from ``datasketch`` or Apache DataSketches: the keys are already
uniform 128-bit hashes, so the sketch is 2**p one-byte registers, an update is one maximum per
key (register = the key's top ``p`` bits of ``hi``, value = 1 + the leading zero bits of
``lo``), and a merge is the element-wise maximum: exact, associative and commutative, so
shards, processes and Ray workers give the same registers bit for bit, and the per-set and
corpus paths the same estimate. Neither library hashes our keys as they are (they rehash the
bytes they are given, with their own seeds); ours stay the same on every machine.

Estimate: Ertl's improved estimator (Ertl 2017, "New cardinality estimation algorithms for
HyperLogLog sketches", eq. (19)), ``alpha_inf m^2 / (m sigma(C_0/m) + sum_k C_k 2^-k + m tau(1 -
C_65/m) 2^-64)`` from the register histogram ``C``: one closed form over the whole range, with
none of the classic estimator's bias where it switches to linear counting (Flajolet, Fusy,
Gandouet & Meunier 2007) and no empirical correction tables. With ``m = 2**14`` registers (16
KiB per n-gram order) the relative standard error is ``1.04 / sqrt(m) = 0.81%`` (:data:`RSE`):
about 68% of estimates fall within 0.81% of the truth and 99.7% within 2.4% (3 RSE); below a few
thousand distinct n-grams the estimate is tighter still. A test checks the bound on data with a
known answer. The sketch and its error are written in the signature (``approx:hll-p14``,
``rse:0.0081``).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> h = HyperLogLog()
    >>> keys = rng.integers(0, 2**64 - 1, (2, 200_000), dtype=np.uint64, endpoint=True)
    >>> h.add(keys[0], keys[1])
    >>> abs(h.estimate() / 200_000 - 1) < 3 * RSE
    True
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["HyperLogLog", "P", "RSE", "LABEL"]

#: Register index bits (2**P one-byte registers).
P = 14
#: Relative standard error of an estimate, ``1.04 / sqrt(2**P)``.
RSE = 1.04 / math.sqrt(1 << P)
#: The sketch's name in signatures.
LABEL = f"hll-p{P}"
#: Rank bits of a key (a register holds 1 + the leading zeros of ``lo``: 1 .. 65).
_Q = 64
_ALPHA_INF = 1.0 / (2.0 * math.log(2.0))


def _ranks(lo: np.ndarray) -> np.ndarray:
    """``1 +`` the leading zero bits of each 64-bit ``lo`` (65 for 0), exactly: the bit length
    is read from the float exponent of each 32-bit half (exact in a float64)."""
    high = (lo >> np.uint64(32)).astype(np.float64)
    low = (lo & np.uint64(0xFFFFFFFF)).astype(np.float64)
    bl_high = np.frexp(high)[1]
    bl_low = np.frexp(low)[1]
    bit_length = np.where(high > 0, bl_high + 32, bl_low)
    out: np.ndarray = (65 - bit_length).astype(np.uint8)
    return out


class HyperLogLog:
    """A HyperLogLog sketch of 128-bit keys (see the module docstring)."""

    def __init__(self) -> None:
        self.registers = np.zeros(1 << P, dtype=np.uint8)

    def add(self, hi: np.ndarray, lo: np.ndarray) -> None:
        """Add keys ``(hi, lo)`` (uint64 arrays)."""
        if hi.size == 0:
            return
        idx = (hi >> np.uint64(64 - P)).astype(np.intp)
        np.maximum.at(self.registers, idx, _ranks(lo))

    def merge(self, other: HyperLogLog) -> None:
        """The sketch of the union (element-wise maximum: exact, in any order)."""
        np.maximum(self.registers, other.registers, out=self.registers)

    def estimate(self) -> float:
        """The estimated number of distinct keys added (0.0 for none): Ertl's improved
        estimator (see the module docstring)."""
        m = self.registers.size
        counts = np.bincount(self.registers, minlength=_Q + 2).tolist()
        if counts[0] == m:
            return 0.0
        z = m * _tau(1.0 - counts[_Q + 1] / m)
        for k in range(_Q, 0, -1):
            z = 0.5 * (z + counts[k])
        z += m * _sigma(counts[0] / m)
        return _ALPHA_INF * m * m / z


def _sigma(x: float) -> float:
    """Ertl's sigma(x) = x + sum_k x^(2^k) 2^(k-1) (infinite at 1)."""
    if x == 1.0:
        return math.inf
    y, z = 1.0, x
    while True:
        x *= x
        before = z
        z += x * y
        y += y
        if z == before:
            return z


def _tau(x: float) -> float:
    """Ertl's tau(x) = (1 - x - sum_k (1 - x^(2^-k))^2 2^-k) / 3 (0 at 0 and 1)."""
    if x == 0.0 or x == 1.0:
        return 0.0
    y, z = 1.0, 1.0 - x
    while True:
        x = math.sqrt(x)
        before = z
        y *= 0.5
        z -= (1.0 - x) ** 2 * y
        if z == before:
            return z / 3.0
