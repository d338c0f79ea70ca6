"""The bookkeeping of a scoring run: running per-column aggregates of the records
(:class:`Summary`) and the count of sets done for progress (:class:`Tally`), shared by every
engine."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProgressFn", "Summary", "Tally"]

ProgressFn = Callable[[int, int | None], None]


@dataclass
class _Stat:
    count: int = 0
    nulls: int = 0
    mean: float = 0.0
    m2: float = 0.0
    reasons: Counter[str] = field(default_factory=Counter)
    signature: str | None = None


class Summary:
    """Running per-column aggregates of result records: mean, std, count, nulls, reasons.

    ``std`` is the sample standard deviation (ddof = 1) of the non-null values; ``None`` with
    fewer than two values. Feed it with :meth:`add` (``score_sets(..., summary=s)`` does).

    Example:
        >>> s = Summary(["m"])
        >>> for v in (1.0, 3.0, None):
        ...     s.add({"m": v, "reasons": {"m": "empty set"} if v is None else {}})
        >>> s.to_dict()["metrics"]["m"]["mean"], s.to_dict()["metrics"]["m"]["nulls"]
        (2.0, 1)
    """

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.sets = 0
        self._stats = {c: _Stat() for c in self.columns}

    def add(self, record: Mapping[str, Any]) -> None:
        """Add one result record."""
        self.sets += 1
        reasons = record.get("reasons") or {}
        sigs = record.get("signatures") or {}
        for c in self.columns:
            st = self._stats[c]
            v = record.get(c)
            if st.signature is None and c in sigs:
                st.signature = sigs[c]
            if v is None:
                st.nulls += 1
                st.reasons[str(reasons.get(c, "undefined"))] += 1
                continue
            st.count += 1
            d = float(v) - st.mean
            st.mean += d / st.count
            st.m2 += d * (float(v) - st.mean)

    def to_dict(self) -> dict[str, Any]:
        """``{"sets": N, "metrics": {column: {mean, std, count, nulls, reasons, signature}}}``."""
        out: dict[str, Any] = {}
        for c, st in self._stats.items():
            out[c] = {
                "mean": st.mean if st.count else None,
                "std": math.sqrt(st.m2 / (st.count - 1)) if st.count > 1 else None,
                "count": st.count,
                "nulls": st.nulls,
                "reasons": dict(st.reasons.most_common()),
            }
            if st.signature is not None:
                out[c]["signature"] = st.signature
        return {"sets": self.sets, "metrics": out}


class Tally:
    """The bookkeeping of a scoring run shared by every engine: counts the sets done (scored
    or skipped on resume) for ``progress``, adds each record to ``summary`` and drops its
    signatures unless ``with_signatures``."""

    def __init__(self, progress: ProgressFn | None, total: int | None,
                 summary: Summary | None, with_signatures: bool) -> None:
        self.progress, self.total = progress, total
        self.summary, self.with_signatures = summary, with_signatures
        self.done = 0

    def skipped(self) -> None:
        """Count a set skipped on resume."""
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)

    def finish(self, rec: dict[str, Any]) -> dict[str, Any]:
        """Count a scored set; returns its record as written."""
        if self.summary is not None:
            self.summary.add(rec)
        if not self.with_signatures:
            rec.pop("signatures", None)
        self.skipped()
        return rec
