"""The flat result record of one set (see :mod:`divmeter.engine.batch`), from its outcome under each
metric, and the records of a chunk of sets (the unit of work of the process pool and of the
Ray engine)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.engine.batch.evaluate import Outcome, evaluate
from divmeter.engine.batch.plan import MetricPlan
from divmeter.inputs.data.model import ResponseSet

__all__ = ["RECORD_KEYS", "record", "score_chunk"]

#: Keys of a result record that are not metric columns.
RECORD_KEYS = ("set_id", "row", "label", "reasons", "per_response", "signatures")


def record(row: int, s: ResponseSet, plans: Sequence[MetricPlan], outcomes: Sequence[Outcome]
            ) -> dict[str, Any]:
    """The flat record of one set from its outcome under each plan."""
    rec: dict[str, Any] = {"set_id": s.set_id, "row": row}
    if s.label is not None:
        rec["label"] = s.label
    reasons: dict[str, str] = {}
    per_response: dict[str, Any] = {}
    signatures: dict[str, str] = {}
    for p, res in zip(plans, outcomes, strict=True):
        if isinstance(res, InvalidInputError):
            rec[p.column] = None
            reasons[p.column] = str(res)
            continue
        value = res.value
        if value is not None:
            value = float(value)
            if math.isnan(value):
                value = None
        rec[p.column] = value
        signatures[p.column] = res.signature
        if value is None:
            reasons[p.column] = res.reason or "undefined on this set"
        if p.granularity == "response":
            pr = res.details.get("per_response") if res.details else None
            per_response[p.column] = _floats(pr)
    rec["reasons"] = reasons
    if per_response:
        rec["per_response"] = per_response
    rec["signatures"] = signatures
    return rec


def _floats(values: Any) -> list[float | None] | None:
    if values is None:
        return None
    out: list[float | None] = []
    for v in list(values):
        f = None if v is None else float(v)
        out.append(None if f is None or math.isnan(f) else f)
    return out


def score_chunk(
    chunk: list[tuple[int, ResponseSet]], plans: Sequence[MetricPlan]
) -> list[dict[str, Any]]:
    """Records of a chunk of ``(row, set)`` (in this process or a worker)."""
    outcomes = evaluate([s.responses for _, s in chunk], plans,
                        prompts=[s.prompt for _, s in chunk],
                        fields=[s.metadata for _, s in chunk],
                        instantiations=[s.instantiations for _, s in chunk],
                        names=[f"set {s.set_id!r} (row {row})" for row, s in chunk],
                        vectors=[s.vectors for _, s in chunk]
                        if any(s.vectors is not None for _, s in chunk) else None)
    return [
        record(row, s, plans, [per_plan[i] for per_plan in outcomes])
        for i, (row, s) in enumerate(chunk)
    ]
