"""Former name of :mod:`divmeter.metrics.ngram` (renamed in the issue-9 reshaping); kept so old
imports keep working: importing it gives the very same module object."""

import sys

from divmeter.metrics import ngram

sys.modules[__name__] = ngram
