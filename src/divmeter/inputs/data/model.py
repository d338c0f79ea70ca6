"""The response-set data model and input validation at the public boundary."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.core.errors import InvalidInputError

__all__ = ["ResponseSet", "as_texts"]


@dataclass
class ResponseSet:
    """Several generated outputs for one prompt.

    Attributes:
        set_id: Unique id of the set within its file.
        responses: The generated texts.
        prompt: The prompt / context they answer, if known.
        label: A label (e.g. 1 = high / 0 = low content diversity) or a parameter value
            (e.g. sampling temperature), if known.
        metadata: Anything else (precomputed metric columns, label names, ...).
        instantiations: For metrics whose input is not texts (CDM): ``k`` position-aligned lists
            of filler phrases, as read by :func:`divmeter.inputs.data.read_instantiation_sets`;
            ``None`` for an ordinary set. Not written by the set writers.
        vectors: Precomputed embeddings, an ``(n, d)`` float64 array (one row per response, or
            the set's only content when it has no texts), read by
            :mod:`divmeter.inputs.data.vectors`; metrics that take vectors use them instead of
            embedding the texts. ``None`` for an ordinary set. Not written by the set writers.
    """

    set_id: str
    responses: list[str]
    prompt: str | None = None
    label: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    instantiations: list[list[str]] | None = field(default=None, repr=False)
    vectors: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"set_id": self.set_id}
        if self.prompt is not None:
            out["prompt"] = self.prompt
        out["responses"] = list(self.responses)
        if self.label is not None:
            out["label"] = self.label
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out


def as_texts(responses: Any, *, what: str = "responses") -> list[str]:
    """Validate a list of texts and return it as a list.

    A bare string is an error (not a list of characters); every item must be a ``str``.

    Example:
        >>> as_texts(("a", "b"))
        ['a', 'b']
        >>> as_texts("abc")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: `responses` must be a list of strings; got ...
    """
    if isinstance(responses, ResponseSet):
        responses = responses.responses
    if getattr(getattr(responses, "dtype", None), "kind", "") in ("b", "i", "u", "f", "c"):
        raise InvalidInputError(
            f"`{what}` must be a list of strings; got an array of shape "
            f"{tuple(responses.shape)} (precomputed vectors go to metrics that take vectors: "
            "divmeter list --family content)."
        )
    if isinstance(responses, (str, bytes)):
        shown = repr(responses if len(responses) <= 30 else responses[:27])
        if len(responses) > 30:
            shown += "..."
        raise InvalidInputError(
            f"`{what}` must be a list of strings; got a single {type(responses).__name__}. "
            f"Wrap it in a list: [{shown}]."
        )
    if not isinstance(responses, (Sequence, Iterable)):
        raise InvalidInputError(
            f"`{what}` must be a list of strings; got {type(responses).__name__}."
        )
    out = list(responses)
    for i, r in enumerate(out):
        if not isinstance(r, str):
            raise InvalidInputError(
                f"`{what}[{i}]` must be a string; got {type(r).__name__}."
            )
    return out
