"""Exception hierarchy of divmeter.

Every error divmeter raises on purpose derives from :class:`DivmeterError`, so callers can catch
one class. Messages follow one shape: what was wrong, what was expected, what was got.
"""

from __future__ import annotations


class DivmeterError(Exception):
    """Base class of every error raised by divmeter on purpose."""


class InvalidInputError(DivmeterError, ValueError):
    """User input (texts, parameters, files) is malformed.

    The message names the offending field and, for files, the file and line/row.
    """


class MissingDependencyError(DivmeterError, ImportError):
    """An optional dependency is not installed; the message gives the pip line that fixes it."""


class UnavailableError(InvalidInputError):
    """What a call needs is not here: a server to ask, a model the call names but nobody gave
    (the message says what to pass). Still bad input to the caller (exit code 2 on the command
    line); :func:`divmeter.testing.check_metric` reports the checks that need it as skipped,
    with the message as the reason, instead of failing."""


class UnknownMetricError(DivmeterError, KeyError):
    """A metric name is not in the registry; the message suggests close names."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""
