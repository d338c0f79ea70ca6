"""Former name of :mod:`divmeter.metrics.decan` (renamed in the issue-9 reshaping), kept so old
imports keep working: importing it gives the very same module object, with a
:class:`DeprecationWarning` (once per process: the module is imported once). Import
:mod:`divmeter.metrics.decan` instead."""

import sys
import warnings

from divmeter.metrics import decan

warnings.warn(
    "divmeter.metrics.icl is deprecated; import divmeter.metrics.decan (the same module).",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = decan
