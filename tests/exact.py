"""Exact equality of metric results' values and details, for tests that compare two paths
(batched vs per-set, one engine vs another)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def same(a: Any, b: Any) -> bool:
    """Exact equality, numpy arrays, nested containers and NaN included."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b
