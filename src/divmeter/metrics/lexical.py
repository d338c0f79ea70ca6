"""Former name of :mod:`divmeter.metrics.ngram` (renamed in the issue-9 reshaping), kept so old
imports keep working: importing it gives the very same module object, with a
:class:`DeprecationWarning` (once per process: the module is imported once). Import
:mod:`divmeter.metrics.ngram` instead."""

import sys
import warnings

from divmeter.metrics import ngram

warnings.warn(
    "divmeter.metrics.lexical is deprecated; import divmeter.metrics.ngram (the same module).",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = ngram
