"""Former name of :mod:`divmeter.metrics.decan` (renamed in issue 9): importing it gives
the very same module, with a DeprecationWarning once per process (:func:`~._alias.alias`)."""

from divmeter.metrics._alias import alias

alias(__name__, "divmeter.metrics.decan")
