"""Declared metric parameters: one type and constraint per parameter, checked once at the boundary.

Every metric declares its parameters in :func:`divmeter.engine.registry.register` as
:class:`Param` s (in the spirit of scikit-learn's ``validate_params``). :func:`validate` checks a
call's keyword parameters against them before any set is scored (by :func:`divmeter.score`,
:func:`divmeter.score_many`, :func:`divmeter.engine.batch.score_sets` and so ``divmeter score`` for
every family and every ``-j``), with one message shape::

    `n` of distinct-n must be an integer >= 1; got 0.

:meth:`Param.parse` turns a command-line string (``-m distinct-n:n=2,lowercase=true``) into a
value of the declared type; a string that is not one is an error (``lowercase=maybe``), never a
silent guess. Integers are written as integers: ``n=2.0`` is an error, not 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from divmeter.core.errors import InvalidInputError

__all__ = [
    "Param",
    "UNSET",
    "validate",
    "parse_value",
    "describe",
    "tokenizer_param",
    "LOWERCASE",
    "TEXT_TOKENIZERS",
    "MAX_ORDER",
]

#: The tokenizers of :mod:`divmeter.inputs.text.tokenize` (repeated here so that declaring a
#: parameter imports nothing; a test checks the two agree). The overlap metrics add ``rouge``.
TEXT_TOKENIZERS: tuple[str, ...] = ("tevet", "whitespace", "word", "char")

#: The highest ``n_max`` (top n-gram order of the metrics that average or sum over orders
#: ``1..n_max``) and self-BLEU's ``n``. Orders beyond a set's longest response hold no n-gram
#: and count as 0 (Tevet's rule; BLEU's own conventions for self-BLEU), so a larger order only
#: dilutes the value while its cost grows with every order: 100 bounds the work
#: (``n_max=10**9`` is refused before the first set, issue 16). A single order ``n`` of an
#: n-gram count has no such bound: beyond the longest response the set is null at once.
MAX_ORDER = 100

_TYPE_NAMES = {int: "int", float: "float", str: "str", bool: "bool", object: "any"}


class _Unset:
    """The default of a :class:`Param` that leaves it to the function's signature."""

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


#: A :class:`Param` ``default`` (or ``alternative``) that is not given: :func:`register` takes
#: the default from the metric function's signature (defaults are written once).
UNSET: Any = _Unset()


@dataclass(frozen=True)
class Param:
    """One declared parameter of a metric.

    Attributes:
        type: ``int``, ``float`` (any real number, ints included), ``str``, ``bool`` or ``object``
            (anything; no check).
        default: The default value. Left :data:`UNSET`, :func:`divmeter.engine.registry.register`
            takes it from the function's signature (write it once, there); when both are
            written they must agree (registration fails otherwise).
        ge, gt, le, lt: Bounds of a number.
        choices: The allowed values of a string.
        allow_none: Whether ``None`` is allowed (e.g. ``n=None``: every order up to ``n_max``).
        predicate: A custom check replacing type and bounds; then ``expect`` must say what it
            accepts.
        expect: What a valid value is, in the error message (default: from the constraints).
        doc: One line for ``divmeter list``.
        relation: A check against the call's other parameters (defaults filled in): returns
            ``None`` or the rest of an error sentence, e.g. ``"applies to the rouge tokenizer
            only"``.
        message: A whole error message template (``{name}``, ``{metric}``, ``{got}``,
            ``{choices}``) for the few parameters whose wording users already rely on.
        alternative: Another valid value, for the contract that every parameter changes the
            value or the signature (:func:`divmeter.testing.check_metric`), where
            :meth:`alternative_value` cannot derive a telling one (a free string, a choice
            equal in effect to the default).
        runtime: ``True`` for a setting of where or how the work runs, never of the number
            (``device``, a server address, threads, timeouts): it is left out of the
            signature and of that contract.
        cap: The largest value allowed for a count that costs time or memory (permutations,
            samples, restarts, window lengths ...): shown by ``divmeter list``, refused before
            any work with its own message (``... must be at most CAP ...``).
        applies_with: Settings of other parameters under which this one matters (the set's
            ``prompt`` of the partition metrics is read by ``equivalence=judge``; a field name
            by ``quality=field``): the contract checks the alternative with them, and reports
            the parameter as skipped with the reason where they need something absent (a
            server, a model folder, the set's fields).

    Example:
        >>> Param(int, ge=1, default=4).expected()
        'an integer >= 1'
        >>> Param(str, choices=("corpus", "sentence"), default="corpus").expected()
        'one of corpus, sentence'
    """

    type: type = object
    default: Any = UNSET
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[Any, ...] | None = None
    allow_none: bool = False
    predicate: Callable[[Any], bool] | None = field(default=None, compare=False)
    expect: str | None = None
    doc: str = ""
    relation: Callable[[Any, Mapping[str, Any]], str | None] | None = field(
        default=None, compare=False
    )
    message: str | None = None
    alternative: Any = UNSET
    runtime: bool = False
    cap: float | None = None
    applies_with: Mapping[str, Any] | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ describing

    def expected(self) -> str:
        """What a valid value is, as it reads in an error message."""
        if self.expect is not None:
            return self.expect
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.type is bool:
            return "true or false"
        if self.type is str:
            return "a string"
        noun = "an integer" if self.type is int else "a number"
        lo = f">= {_num(self.ge)}" if self.ge is not None else (
            f"> {_num(self.gt)}" if self.gt is not None else None)
        hi = f"<= {_num(self.le)}" if self.le is not None else (
            f"< {_num(self.lt)}" if self.lt is not None else None)
        if lo and hi:
            return f"{noun} {lo} and {hi}"
        bound = lo or hi
        return f"{noun} {bound}" if bound else noun

    def type_name(self) -> str:
        """``int``, ``float``, ``str``, ``bool`` or ``any`` (``|None`` when None is allowed)."""
        name = _TYPE_NAMES.get(self.type, getattr(self.type, "__name__", "any"))
        return name + ("|None" if self.allow_none else "")

    def to_dict(self) -> dict[str, Any]:
        """The declaration as JSON-ready data (``divmeter list --format json``)."""
        out: dict[str, Any] = {"type": self.type_name(), "default": _jsonable(self.default)}
        if self.choices is not None:
            out["choices"] = [_jsonable(c) for c in self.choices]
        if self.type is not object:
            # a choice spelled "none" already says it; never "one of none, coco or none"
            said = self.choices is not None and "none" in self.choices
            out["constraint"] = self.expected() + (" or none" if self.allow_none and not said
                                                   else "")
            if self.cap is not None:
                out["constraint"] += f", at most {_num(self.cap)}"
        if self.doc:
            out["doc"] = self.doc
        return out

    def alternative_value(self) -> Any:
        """A valid value other than the default: the declared ``alternative``, else another
        choice, the other boolean, or a number next to the default within the bounds (an
        order ``n`` whose default is ``None`` gets its lowest value). :data:`UNSET` when none
        can be derived (a free string): declare ``alternative=`` then.

        Example:
            >>> Param(int, ge=1, default=4).alternative_value()
            5
            >>> Param(int, ge=1, le=4, default=4).alternative_value()
            3
            >>> Param(str, choices=("a", "b"), default="a").alternative_value()
            'b'
            >>> Param(int, ge=1, allow_none=True, default=None).alternative_value()
            1
            >>> Param(str, default="x").alternative_value()
            UNSET
        """
        if self.alternative is not UNSET:
            return self.alternative
        default = self.default
        if self.choices is not None:
            return next((c for c in self.choices if c != default and self.accepts(c)), UNSET)
        if self.type is bool:
            return not default if isinstance(default, bool) else UNSET
        if self.type not in (int, float) or self.predicate is not None:
            return UNSET
        if default is None:
            low = self.ge if self.ge is not None else (
                self.gt + 1 if self.gt is not None else 0)
            cands: list[Any] = [low, 1]
        elif isinstance(default, (int, float)) and not isinstance(default, bool):
            if isinstance(default, float) and math.isinf(default):
                cands = [1.0, 2.0]
            else:
                cands = [default + 1, default - 1, default * 2, default / 2]
        else:
            return UNSET
        for c in cands:
            c = int(c) if self.type is int and float(c).is_integer() else c
            if self.type is float and isinstance(c, int):
                c = float(c)
            if c != default and self.accepts(c):
                return c
        return UNSET

    # ------------------------------------------------------------------ checking

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` satisfies the declaration (not counting ``relation``)."""
        if value is None and self.allow_none:
            return True
        if self.predicate is not None:
            return bool(self.predicate(value))
        if self.type is object:
            return True
        if self.choices is not None:
            return any(value == c and type(value) is type(c) for c in self.choices)
        if self.type is bool:
            return isinstance(value, bool)
        if self.type is str:
            return isinstance(value, str)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.type is int and not isinstance(value, int):
            return False
        if value != value:  # NaN
            return False
        return not (
            (self.ge is not None and value < self.ge)
            or (self.gt is not None and value <= self.gt)
            or (self.le is not None and value > self.le)
            or (self.lt is not None and value >= self.lt)
        )

    def check(self, value: Any, name: str, metric: str) -> None:
        """Raise :class:`~divmeter.core.errors.InvalidInputError` if ``value`` is not valid.

        Example:
            >>> Param(int, ge=1, default=2).check(0, "n", "distinct-n")  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            divmeter.core.errors.InvalidInputError: `n` of distinct-n must be ... >= 1; got 0.
        """
        if self.accepts(value):
            if (self.cap is not None and isinstance(value, (int, float))
                    and not isinstance(value, bool) and value > self.cap):
                raise InvalidInputError(
                    f"`{name}` of {metric} must be at most {_num(self.cap)} (a bound that keeps "
                    f"its time and memory finite); got {value!r}.")
            return
        if self.message is not None:
            text = self.message.format(name=name, metric=metric, got=repr(value),
                                       choices=", ".join(str(c) for c in self.choices or ()))
            raise InvalidInputError(text)
        shown = type(value).__name__ if self.type is str and self.choices is None else repr(value)
        raise InvalidInputError(f"`{name}` of {metric} must be {self.expected()}; got {shown}.")

    # ------------------------------------------------------------------ parsing

    def parse(self, text: str, name: str, metric: str) -> Any:
        """A command-line string as a value of the declared type (checked by :meth:`check`).

        ``none``/``null`` is ``None`` where allowed; booleans are ``true``/``false`` (or
        ``yes``/``no``); integers must be written as integers; numbers may be ``inf``.

        Example:
            >>> Param(bool, default=False).parse("yes", "lowercase", "ttr")
            True
            >>> Param(bool, default=False).parse("maybe", "lowercase", "ttr")  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            divmeter.core.errors.InvalidInputError: `lowercase` of ttr must be true or false; ...
        """
        low = text.lower()
        if self.allow_none and low in {"none", "null"}:
            return None
        value: Any = text
        if self.type is bool:
            value = {"true": True, "yes": True, "false": False, "no": False}.get(low, text)
        elif self.type in (int, float) or (self.type is object and self.default is not None
                                           and not isinstance(self.default, str)):
            value = parse_value(text)
        self.check(value, name, metric)
        return value


def tokenizer_param(default: str = UNSET, choices: tuple[str, ...] = TEXT_TOKENIZERS) -> Param:
    """The ``tokenizer`` parameter shared by the form metrics (default: the function's).

    Its message keeps the ``unknown tokenizer 'x'`` opening users (and tests) already match on.

    Example:
        >>> tokenizer_param("tevet").check("spacy", "tokenizer", "ttr")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: unknown tokenizer 'spacy': `tokenizer` of ttr ...
    """
    return Param(str, default=default, choices=choices, doc="how texts are split into tokens",
                 message="unknown tokenizer {got}: `{name}` of {metric} must be one of {choices}.")


#: The ``lowercase`` parameter shared by the form metrics.
LOWERCASE = Param(bool, default=False, doc="lowercase before tokenizing")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def parse_value(text: str) -> Any:
    """An undeclared command-line value: bool, ``inf``, ``None``, int or float if it reads as one,
    else the string.

    Example:
        >>> parse_value("3"), parse_value("0.5"), parse_value("inf"), parse_value("corpus")
        (3, 0.5, inf, 'corpus')
    """
    low = text.lower()
    if low in {"true", "yes"}:
        return True
    if low in {"false", "no"}:
        return False
    if low in {"inf", "+inf", "infinity"}:
        return float("inf")
    if low in {"none", "null"}:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def validate(metric: str, schema: Mapping[str, Param], params: Mapping[str, Any]) -> None:
    """Check a call's parameters against a metric's declarations: names, then each value, then
    relations between them.

    Raises:
        InvalidInputError: ``"metric 'x' has no parameter 'm'; its parameters are: ..."`` for an
            undeclared name, else the first bad value's message.

    Example:
        >>> validate("demo", {"n": Param(int, ge=1, default=2)}, {"n": 2})
        >>> validate("demo", {"n": Param(int, ge=1, default=2)}, {"m": 2})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: metric 'demo' has no parameter 'm'; ...
    """
    unknown = [k for k in params if k not in schema]
    if unknown:
        valid = ", ".join(schema) or "none"
        raise InvalidInputError(
            f"metric {metric!r} has no parameter {unknown[0]!r}; its parameters are: {valid}."
        )
    for key, value in params.items():
        schema[key].check(value, key, metric)
    resolved = {k: p.default for k, p in schema.items()}
    resolved.update(params)
    for key, p in schema.items():
        if p.relation is not None:
            problem = p.relation(resolved[key], resolved)
            if problem:
                raise InvalidInputError(f"`{key}` of {metric} {problem}")


def describe(p: Param) -> str:
    """A short description for tables: ``{corpus,sentence}=corpus``, ``int>=1|None=None``.

    Example:
        >>> describe(Param(str, choices=("corpus", "sentence"), default="corpus"))
        '{corpus,sentence}=corpus'
        >>> describe(Param(int, ge=1, allow_none=True, default=None))
        'int>=1|None=None'
        >>> describe(Param(float, gt=0, lt=1, default=0.72))
        'float(0,1)=0.72'
    """
    if p.choices is not None:
        kind = "{" + ",".join(str(c) for c in p.choices) + "}"
    else:
        kind = _TYPE_NAMES.get(p.type, "any")
        lo = ("[", p.ge) if p.ge is not None else ("(", p.gt) if p.gt is not None else None
        hi = ("]", p.le) if p.le is not None else (")", p.lt) if p.lt is not None else None
        if p.predicate is not None:
            kind = f"({p.expected()})"
        elif lo and hi:
            kind += f"{lo[0]}{_num(lo[1])},{_num(hi[1])}{hi[0]}"
        elif lo:
            kind += (">=" if lo[0] == "[" else ">") + _num(lo[1])
        elif hi:
            kind += ("<=" if hi[0] == "]" else "<") + _num(hi[1])
    if p.allow_none:
        kind += "|None"
    default = _jsonable(p.default)
    blank = isinstance(default, str) and (not default or default.strip() != default)
    shown = repr(default) if blank else default
    return f"{kind}={shown}"
