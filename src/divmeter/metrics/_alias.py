"""Former module names of the metric families, kept so old imports keep working."""

from __future__ import annotations

import importlib
import sys
import warnings

__all__ = ["alias"]


def alias(old: str, new: str) -> None:
    """Make module ``old`` (being imported) the very module ``new``, with a
    :class:`DeprecationWarning` pointing at the importing line. It is issued once per process:
    the old name is imported once, then found in :data:`sys.modules`."""
    warnings.warn(f"{old} is deprecated; import {new} (the same module).", DeprecationWarning,
                  stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
