"""Small helpers shared by metric implementations (validation of parameters, results)."""

from __future__ import annotations

import math
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetricResult

__all__ = ["check_int", "check_positive", "undefined", "check_choice", "entropy_base"]


def check_int(value: Any, name: str, metric: str, *, minimum: int = 1,
              maximum: int | None = None) -> int:
    """Validate an integer parameter: ``"`n` of distinct-n must be an integer >= 1; got 0."``
    (with ``maximum``: ``"... an integer >= 1 and <= 100; ..."``, as the declarations say)."""
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or (maximum is not None and value > maximum)):
        upto = "" if maximum is None else f" and <= {maximum}"
        raise InvalidInputError(
            f"`{name}` of {metric} must be an integer >= {minimum}{upto}; got {value!r}."
        )
    return value


def check_positive(value: Any, name: str, metric: str, *, allow_zero: bool = False) -> float:
    """Validate a positive real parameter (``inf`` allowed)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or value != value or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidInputError(f"`{name}` of {metric} must be a number {bound}; got {value!r}.")
    return float(value)


def check_choice(value: Any, name: str, metric: str, choices: tuple[str, ...]) -> str:
    """Validate a string parameter against its allowed values."""
    if value not in choices:
        raise InvalidInputError(
            f"`{name}` of {metric} must be one of {', '.join(choices)}; got {value!r}."
        )
    return str(value)


def undefined(metric: str, signature: str, reason: str, **details: Any) -> MetricResult:
    """A result whose value is undefined on this input, with the reason."""
    return MetricResult(metric, None, signature, reason=reason, details=details)


def entropy_base(base: Any) -> tuple[float, str]:
    """An entropy's logarithm base (declared: ``"e"``/``"nats"``, ``"bits"`` or a number > 0
    other than 1) and its signature label.

    Example:
        >>> entropy_base("bits"), entropy_base(10), entropy_base(2.5)
        ((2.0, '2'), (10.0, '10'), (2.5, '2.5'))
    """
    if base in ("e", "nats"):
        return math.e, "e"
    if base == "bits":
        return 2.0, "2"
    b = float(base)
    return b, (str(int(b)) if b.is_integer() else repr(b))
