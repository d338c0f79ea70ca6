"""Result objects. Every result carries the signature of the settings that produced it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from divmeter.core._version import __version__

__all__ = ["MetricResult", "MetaResult", "Signature", "make_signature", "jsonable"]


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value.is_integer():
            return str(int(value)) if abs(value) < 1e15 else repr(value)
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ",".join(_fmt(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class Signature:
    """The resolved settings that can change a number, in a stable order.

    Rendered sacrebleu-style: ``name|key:value|...|v:VERSION``. Keys keep the order given by the
    metric (the order users read them in), and the library version always comes last.

    Example:
        >>> str(Signature("distinct-n", (("n", 2), ("tok", "tevet")), "0.1.0"))
        'distinct-n|n:2|tok:tevet|v:0.1.0'
    """

    name: str
    items: tuple[tuple[str, Any], ...] = ()
    version: str = ""

    def __str__(self) -> str:
        parts = [self.name] + [f"{k}:{_fmt(v)}" for k, v in self.items]
        if self.version:
            parts.append(f"v:{self.version}")
        return "|".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (name and version included)."""
        out: dict[str, Any] = {"name": self.name}
        out.update({k: v for k, v in self.items})
        out["version"] = self.version
        return out


def make_signature(name: str, **items: Any) -> str:
    """Build a signature string for ``name`` with ``items`` in the given order.

    ``None`` values are left out, so optional settings appear only when they apply.

    Example:
        >>> make_signature("self-bleu", n=4, variant="corpus", tok="whitespace", case="mixed")[:45]
        'self-bleu|n:4|variant:corpus|tok:whitespace|c'
    """
    kept = tuple((k, v) for k, v in items.items() if v is not None)
    return str(Signature(name, kept, __version__))


@dataclass(frozen=True, slots=True)
class MetricResult:
    """The score of one metric on one input (a response set, a pair of sets, a corpus).

    Attributes:
        metric: Registered metric name.
        value: The headline number, or ``None`` when the metric is undefined on this input.
        signature: Resolved settings, e.g. ``distinct-n|n:2|tok:tevet|case:mixed|v:0.1.0``.
        reason: Why ``value`` is ``None`` (empty set, one response, texts shorter than n, ...).
        details: Further numbers: per-n values, per-response values (``"per_response"``),
            sufficient statistics. Plain Python / numpy values.
    """

    metric: str
    value: float | None
    signature: str
    reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the metric produced a value."""
        return self.value is not None

    def __float__(self) -> float:
        return float("nan") if self.value is None else float(self.value)

    def to_dict(self, *, with_details: bool = False) -> dict[str, Any]:
        """A JSON-ready dict: ``json.dumps(r.to_dict(with_details=True), allow_nan=False)``
        works whatever the details hold (numpy arrays and scalars become lists and numbers,
        NaN and infinities ``None``, tuples lists, sets sorted lists).

        Example:
            >>> import json, numpy as np
            >>> r = MetricResult("m", np.float64(0.5), "m|v:0", details={"a": np.arange(2)})
            >>> json.dumps(r.to_dict(with_details=True), allow_nan=False)
            '{"metric": "m", "value": 0.5, "signature": "m|v:0", "details": {"a": [0, 1]}}'
        """
        out: dict[str, Any] = {
            "metric": self.metric,
            "value": _strict(jsonable(self.value)),
            "signature": self.signature,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if with_details and self.details:
            out["details"] = _strict(jsonable(dict(self.details)))
        return out

    def _repr_html_(self) -> str:
        """A small table in Jupyter: metric, value (or null and why), signature, details."""
        from html import escape

        value = "null" if self.value is None else f"{float(self.value):.6g}"
        rows = [("metric", self.metric), ("value", value)]
        if self.reason:
            rows.append(("reason", self.reason))
        rows.append(("signature", f"<code>{escape(self.signature)}</code>"))
        if self.details:
            rows.append(("details", ", ".join(escape(str(k)) for k in self.details)))
        return _html_table(rows)


@dataclass(frozen=True)
class MetaResult:
    """The result of a meta-evaluation statistic or protocol.

    Attributes:
        name: What was computed (``"oca"``, ``"contest"``, ...).
        values: The numbers, keyed by their names.
        signature: Resolved settings (seed, number of resamples, tie policy, ...).
        details: Anything else worth keeping (thresholds, per-bin counts, ...).
    """

    name: str
    values: Mapping[str, Any]
    signature: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __getattr__(self, key: str) -> Any:
        values = object.__getattribute__(self, "values")
        if key in values:
            return values[key]
        raise AttributeError(key)

    def _repr_html_(self) -> str:
        """A small table in Jupyter: each value, then the signature."""
        from html import escape

        rows = [("name", self.name)]
        for k, v in self.values.items():
            shown = f"{v:.6g}" if isinstance(v, float) else escape(str(jsonable(v)))
            rows.append((str(k), shown))
        rows.append(("signature", f"<code>{escape(self.signature)}</code>"))
        return _html_table(rows)

    def to_dict(self, *, with_details: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, **jsonable(dict(self.values))}
        out["signature"] = self.signature
        if with_details and self.details:
            out["details"] = jsonable(dict(self.details))
        return out


def _html_table(rows: list[tuple[str, str]]) -> str:
    from html import escape

    body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th>"
                   f"<td style='text-align:left'>{v}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _strict(obj: Any) -> Any:
    """:func:`jsonable` output with infinities as ``None`` too (strict JSON has no inf)."""
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_strict(v) for v in obj]
    if isinstance(obj, float) and math.isinf(obj):
        return None
    return obj


def jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays (and NaN) to JSON-friendly Python values."""
    import numpy as np

    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [jsonable(v) for v in sorted(obj, key=str)]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj
