"""A Griffe extension for the API pages (mkdocs.yml, mkdocstrings' python handler).

divmeter's Google-style docstrings head their doctests ``Example:`` (singular). Griffe's
Google parser takes only ``Examples:`` as the section whose ``>>>`` lines are code, so the
singular is renamed before a docstring is parsed; the source stays as it is.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"(?m)^(\s*)Example:[ \t]*$")


class DoctestExamples(griffe.Extension):
    """Rename ``Example:`` section headers to ``Examples:`` in every docstring."""

    def on_object(self, *, obj: Any, loader: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
