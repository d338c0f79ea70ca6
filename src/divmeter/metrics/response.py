"""Former name of :mod:`divmeter.metrics.richness` (renamed in the issue-9 reshaping), kept so old
imports keep working: importing it gives the very same module object, with a
:class:`DeprecationWarning` (once per process: the module is imported once). Import
:mod:`divmeter.metrics.richness` instead."""

import sys
import warnings

from divmeter.metrics import richness

warnings.warn(
    "divmeter.metrics.response is deprecated; import divmeter.metrics.richness (the same module).",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = richness
