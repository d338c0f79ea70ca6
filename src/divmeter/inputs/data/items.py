"""Record shapes of the two other JSONL inputs: preference pairs and CDM instantiations.

* a **pair** (``divmeter meta pairwise``): ``{"set1": [...], "set2": [...], "label": 0|1|2}``,
  each set a list of strings or an object with ``responses``;
* a **CDM item** (Susilo, Suominen & Haslum, sec. 3 and 5): ``{"instantiations": [[...], ...]}``
  (``k`` position-aligned lists of ``n`` filler phrases) or ``{"texts": [...]}`` with the fillers
  marked ``[[...]]`` in the same order in every text (:func:`fillers_from_marked`); optional
  ``id`` and ``label``; other keys go into ``metadata``.

Errors name the place and the field in the phrasing of :mod:`divmeter.inputs.data.lines`:
``NAME line N: field 'set1' must be a list of strings ...; got str.``
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.lines import string_list, type_name

__all__ = ["pair_texts", "pair_label", "CDMItem", "cdm_item", "fillers_from_marked"]

_PAIR_LABELS = "0 (set1 more diverse), 1 (set2) or 2 (tie)"
_CDM_KEYS = {"id", "instantiations", "texts", "label"}


def _missing(where: str, key: str, expected: str) -> InvalidInputError:
    return InvalidInputError(f"{where}: field {key!r} is missing; expected {expected}.")


def pair_texts(row: dict[str, Any], key: str, where: str) -> list[str]:
    """The texts of set ``key`` (``set1``/``set2``) of a pair row.

    Example:
        >>> pair_texts({"set1": {"responses": ["a", "b"]}}, "set1", "p.jsonl line 1")
        ['a', 'b']
    """
    if key not in row:
        raise _missing(where, key, "a list of strings")
    value = row[key]
    if isinstance(value, dict):
        value = value.get("responses")
    return list(string_list(value, where, key,
                            expected="a list of strings (or an object with 'responses')"))


def pair_label(row: dict[str, Any], where: str) -> float:
    """The decision of a pair row: 0 = set1 more diverse, 1 = set2, 2 = tie (as a float)."""
    if "label" not in row:
        raise _missing(where, "label", _PAIR_LABELS)
    lab = row["label"]
    if isinstance(lab, bool) or lab not in (0, 1, 2):
        raise InvalidInputError(f"{where}: field 'label' must be {_PAIR_LABELS}; got {lab!r}.")
    return float(lab)


@dataclass
class CDMItem:
    """One CDM input: an id, the instantiations, optional texts and label, other fields."""

    item_id: str
    instantiations: list[list[str]]
    texts: list[str] | None = None
    label: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _instantiations(value: Any, where: str) -> list[list[str]]:
    key = "instantiations"
    if not isinstance(value, list):
        raise InvalidInputError(
            f"{where}: field {key!r} must be a list of lists of phrases; got {type_name(value)}."
        )
    for i, inst in enumerate(value):
        string_list(inst, where, f"{key}[{i}]", noun="phrases")
    for i, inst in enumerate(value):
        if len(inst) != len(value[0]):
            raise InvalidInputError(
                f"{where}: field {key!r} must hold lists of one length (position-aligned); "
                f"instantiation 0 has {len(value[0])} phrases, instantiation {i} has {len(inst)}."
            )
    return [list(inst) for inst in value]


def cdm_item(
    obj: dict[str, Any], where: str, index: int, *, open_mark: str = "[[", close_mark: str = "]]"
) -> CDMItem:
    """One CDM item from a JSON object read at ``where`` (``index``: the id of an item without
    one).

    Raises:
        InvalidInputError: Naming ``where`` and the field.

    Example:
        >>> item = cdm_item({"texts": ["[[a]] x", "[[b]] y"], "n": 1}, "c.jsonl line 1", 0)
        >>> item.item_id, item.instantiations, item.texts, item.metadata
        ('0', [['a'], ['b']], ['a x', 'b y'], {'n': 1})
    """
    texts = None
    if "instantiations" in obj:
        insts = _instantiations(obj["instantiations"], where)
    elif "texts" in obj:
        marked = string_list(obj["texts"], where, "texts")
        try:
            insts, texts = fillers_from_marked(marked, open_mark=open_mark, close_mark=close_mark)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: field 'texts': {exc}") from None
    else:
        raise _missing(
            where, "instantiations",
            f"lists of phrases (or a field 'texts' with {open_mark}filler{close_mark} marks)",
        )
    meta = {k: v for k, v in obj.items() if k not in _CDM_KEYS}
    return CDMItem(str(obj.get("id", index)), insts, texts, obj.get("label"), meta)


def fillers_from_marked(
    texts: Sequence[str], *, open_mark: str = "[[", close_mark: str = "]]"
) -> tuple[list[list[str]], list[str]]:
    """Build CDM filler lists from texts whose fillers are marked, e.g. ``[[Armin]]``.

    Args:
        texts: One text per instantiation, fillers marked in the same order in every text.
        open_mark: Opening mark.
        close_mark: Closing mark.

    Returns:
        ``(instantiations, plain_texts)``: the filler lists (position-aligned by order of
        appearance) and the texts with the marks removed.

    Raises:
        InvalidInputError: Unbalanced marks, an empty filler, or texts with different numbers of
            fillers.

    Example:
        >>> texts = ["[[Armin]] does [[fieldwork]].", "[[Jessica]] does [[market research]]."]
        >>> fillers_from_marked(texts)[0]
        [['Armin', 'fieldwork'], ['Jessica', 'market research']]
    """
    if isinstance(texts, (str, bytes)):
        raise InvalidInputError("`texts` must be a list of strings; got a single str.")
    pat = re.compile(re.escape(open_mark) + r"(.*?)" + re.escape(close_mark), re.S)
    insts: list[list[str]] = []
    plains: list[str] = []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InvalidInputError(f"`texts[{i}]` must be a string; got {type(t).__name__}.")
        found = [m.strip() for m in pat.findall(t)]
        rest = pat.sub("", t)
        if open_mark in rest or close_mark in rest:
            raise InvalidInputError(
                f"text {i}: unbalanced {open_mark}...{close_mark} marks in {t!r}."
            )
        if any(not f for f in found):
            raise InvalidInputError(f"text {i}: an empty filler {open_mark}{close_mark}.")
        insts.append(found)
        plains.append(pat.sub(lambda m: m.group(1), t))
    if insts and any(len(x) != len(insts[0]) for x in insts):
        counts = [len(x) for x in insts]
        raise InvalidInputError(
            f"every text must mark the same number of fillers; got {counts}."
        )
    return insts, plains
