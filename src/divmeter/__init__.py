"""divmeter: measure how diverse a set of generated texts is, and which measurement to trust.

Public API (light: importing divmeter never imports torch):

>>> import divmeter
>>> divmeter.score(["the cat sat", "the dog ran"], "distinct-n", n=1).value
0.8333333333333334
"""

from __future__ import annotations

from divmeter.api import score, score_many
from divmeter.core._version import __version__
from divmeter.core.errors import (
    DivmeterError,
    InvalidInputError,
    MissingDependencyError,
    UnknownMetricError,
)
from divmeter.core.result import MetaResult, MetricResult
from divmeter.engine.registry import MetricSpec, get_metric, list_metrics
from divmeter.inputs.data.model import ResponseSet

__all__ = [
    "__version__",
    "score",
    "score_many",
    "list_metrics",
    "get_metric",
    "MetricSpec",
    "MetricResult",
    "MetaResult",
    "ResponseSet",
    "DivmeterError",
    "InvalidInputError",
    "MissingDependencyError",
    "UnknownMetricError",
    "score_frame",
]


def __getattr__(name: str) -> object:
    """Lazy subpackages: ``divmeter.studies.meta.oca(...)`` works after a bare ``import divmeter``.

    ``meta`` and ``report`` (and :func:`divmeter.engine.frame.score_frame`, which needs pandas) are
    imported on first access only, so ``import divmeter`` stays light.
    """
    if name in ("meta", "report"):
        import importlib

        return importlib.import_module(f"divmeter.{name}")
    if name == "score_frame":  # imports pandas: only when used
        from divmeter.engine.frame import score_frame

        return score_frame
    raise AttributeError(f"module 'divmeter' has no attribute {name!r}")
