"""Former name of :mod:`divmeter.metrics.decan` (renamed in the issue-9 reshaping); kept so old
imports keep working: importing it gives the very same module object."""

import sys

from divmeter.metrics import decan

sys.modules[__name__] = decan
