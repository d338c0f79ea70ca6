"""How a registry metric reads to a person: its short description, direction, value range and
a runnable example command (``divmeter list``, score tables and reports share them).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["short_description", "direction_text", "range_text", "example_command"]


def short_description(text: str) -> str:
    """The first clause of a metric's description (up to the first ``;`` outside parentheses,
    so a parenthesis is never left open).

    Example:
        >>> short_description("Type-token ratio of each response; mean over the set")
        'Type-token ratio of each response'
        >>> short_description("Mean distance (cosine variant; eq. 3 is another); per set")
        'Mean distance (cosine variant; eq. 3 is another)'
    """
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth <= 0 and text.startswith("; ", i):
            return text[:i].strip()
    return text.strip()


def direction_text(higher_is_more_diverse: bool) -> str:
    """``↑ diverse`` (higher = more diverse) or ``↓ diverse`` (lower = more diverse)."""
    return "↑ diverse" if higher_is_more_diverse else "↓ diverse"


def _bound(v: float | None, low: bool) -> str:
    if v is None or (isinstance(v, float) and math.isinf(v)):
        return "-∞" if low else "∞"
    return str(int(v)) if float(v).is_integer() else str(v)


def range_text(bounds: tuple[float | None, float | None]) -> str:
    """The range of a metric's value, e.g. ``[0, 1]`` or ``[0, ∞)``.

    Example:
        >>> range_text((0.0, 1.0)), range_text((1.0, None))
        ('[0, 1]', '[1, ∞)')
    """
    lo, hi = bounds
    left = "(" if lo is None else "["
    right = ")" if hi is None else "]"
    return f"{left}{_bound(lo, True)}, {_bound(hi, False)}{right}"


def example_command(spec: Any) -> str:
    """A runnable ``divmeter score`` line for the metric on the bundled example.

    Shows the first numeric parameter (else the first one with choices) set to its default, so
    the ``NAME:k=v`` syntax is visible; CDM-like metrics name an instantiations file instead.

    Example:
        >>> from divmeter.engine.registry import get_metric
        >>> example_command(get_metric("self-bleu"))
        'divmeter score examples/stories.jsonl -m self-bleu:n=4'

    """
    arg = spec.name
    numeric = [(k, p.default) for k, p in spec.schema.items()
               if isinstance(p.default, (int, float)) and not isinstance(p.default, bool)]
    chosen = [(k, p.default) for k, p in spec.schema.items() if p.choices and p.default]
    for k, v in (numeric + chosen)[:1]:
        arg = f"{spec.name}:{k}={v}"
    src = (f"examples/{'instantiations' if spec.input == 'instantiations' else 'stories'}"
           ".jsonl")
    return f"divmeter score {src} -m {arg}"
