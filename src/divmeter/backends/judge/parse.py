"""Strict parsing of a judge's answer: a rating 1-5 (absolute) or one rating per set (pairwise).

Parsing never invents a value. An answer yields a rating only when it states one unambiguously;
everything else is a :class:`ParseError` with a one-line reason and a kind, which the protocol
(:mod:`divmeter.studies.judge.protocol`) retries a bounded number of times and then reports as a
null.

Accepted shapes, tried in this order:

1. **JSON**: the first ``{...}`` object in the answer (inside a Markdown code fence or not) with a
   score key. Absolute: ``score``, ``rating``, ``diversity_score`` or ``diversity`` (keys compared
   without case, spaces, ``_`` or ``-``). Pairwise: the keys of the commonsense paper's output
   format (appendix D, Figure 8) ``Diversity_Score_Set1`` / ``Diversity_Score_Set2``, or
   ``set1`` / ``set2`` / ``score_set1`` / ``set1_score`` ...
2. **Key: value** lines: ``Score: 4``, ``**Diversity score:** 4/5``, ``Rating = 4`` (absolute);
   ``"Diversity_Score_Set1": 4, "Diversity_Score_Set2": 2`` (the paper's format, which is not a
   JSON object), ``Set 1: 4`` (pairwise). The same key stated twice with different numbers is
   ambiguous (an error); stated twice with the same number is fine.
3. **A bare number** (absolute only): the whole answer is ``4``, ``4.`` or ``4/5``.

A rating must be an integer from 1 to 5 (``4.0`` counts as 4). A number outside 1-5 (``7``,
``0``, ``10/10``) or a fraction (``3.5``) is an error of its own kind, never clipped or rounded:
the paper's scale has five points (appendix D). The rationale is the JSON field ``rationale`` /
``explanation`` / ``reason`` when there is one, else the answer's text with the score lines
removed (``None`` when nothing is left).

Error kinds (the keys of the run summary): ``no_score`` (nothing that states a rating: refusals,
prose), ``ambiguous`` (two different ratings), ``out_of_range``, ``not_integer``, ``empty``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ParseError",
    "Rating",
    "PairRating",
    "PARSE_KINDS",
    "parse_absolute",
    "parse_pairwise",
]

#: Kinds of parse failures, in the order summaries print them.
PARSE_KINDS = ("empty", "no_score", "ambiguous", "out_of_range", "not_integer")

LOW, HIGH = 1, 5

_ABS_KEYS = {"score", "rating", "diversityscore", "diversity", "diversityrating"}
_RATIONALE_KEYS = ("rationale", "explanation", "reason", "reasoning", "justification")
_NUM = r"(-?\d+(?:\.\d+)?)"
# "Score: 4", "**Diversity score:** 4/5", "rating = 4", "\"score\": 4"
_ABS_LINE = re.compile(
    r"(?i)[\"'*_]*\b(?:diversity[ _-]?)?(?:score|rating)\b[\"'*_]*\s*[:=]\s*[\"'*_]*\s*"
    + _NUM + r"(?:\s*/\s*(\d+))?"
)
# "Diversity_Score_Set1": 4 / Set 1: 4 / score for set 2 = 3 / Set2 score: 5
_PAIR_LINE = re.compile(
    r"(?i)[\"'*_]*\b(?:diversity[ _-]?)?(?:score[ _-]?)?(?:for[ _-]?)?set[ _-]?([12])"
    r"(?:[ _-]?(?:diversity[ _-]?)?(?:score|rating))?\b[\"'*_]*\s*[:=]\s*[\"'*_]*\s*"
    + _NUM + r"(?:\s*/\s*(\d+))?"
)
_BARE = re.compile(r"^\s*[\"'*_]*" + _NUM + r"(?:\s*/\s*(\d+))?[\"'*_]*\.?\s*$")
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


class ParseError(Exception):
    """An answer that does not state a valid rating: ``kind`` (one of :data:`PARSE_KINDS`) and a
    one-line ``message``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Rating:
    """A parsed absolute rating with the judge's rationale (``None`` when it gave none)."""

    score: int
    rationale: str | None


@dataclass(frozen=True)
class PairRating:
    """Parsed ratings of the set shown first (Set 1) and second (Set 2), with the rationale."""

    score1: int
    score2: int
    rationale: str | None


def _norm_key(key: str) -> str:
    return re.sub(r"[\s_\-]", "", key).lower()


def _check(value: Any, where: str) -> int:
    """The rating as an int in 1..5, or a ParseError (out of range / not an integer)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ParseError("no_score", f"{where} is not a number: {value!r}")
    if isinstance(value, str):
        m = _BARE.match(value)
        if not m:
            raise ParseError("no_score", f"{where} is not a number: {value!r}")
        return _check_number(m.group(1), m.group(2), where)
    return _check_number(str(value), None, where)


def _check_number(num: str, denom: str | None, where: str) -> int:
    x = float(num)
    if denom is not None and int(denom) != HIGH:
        raise ParseError("out_of_range",
                         f"{where} is {num}/{denom}, not on the {LOW}-{HIGH} scale")
    if not math.isfinite(x) or x < LOW or x > HIGH:
        raise ParseError("out_of_range", f"{where} {num} is outside {LOW}-{HIGH}")
    if not x.is_integer():
        raise ParseError("not_integer", f"{where} {num} is not a whole point of the {LOW}-{HIGH} "
                         "scale")
    return int(x)


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in the text: fenced blocks first, then balanced ``{...}`` spans."""
    found: list[dict[str, Any]] = []
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    depth, start = 0, -1
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                candidates.append(text[start:i + 1])
    for c in candidates:
        try:
            obj = json.loads(c.strip())
        except ValueError:
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found


def _rationale_from(obj: dict[str, Any]) -> str | None:
    for k, v in obj.items():
        if _norm_key(k) in _RATIONALE_KEYS and isinstance(v, str) and v.strip():
            return v.strip()
    return None


_RATIONALE_FIELD = re.compile(r'(?i)"(?:rationale|explanation|reason|reasoning|justification)"'
                              r'\s*:\s*"((?:[^"\\]|\\.)*)"')


def _leftover(text: str, pattern: re.Pattern[str]) -> str | None:
    if text.lstrip().startswith(("{", "```")):  # broken JSON: only a complete rationale field
        m = _RATIONALE_FIELD.search(text)
        return m.group(1).strip() or None if m else None
    rest = pattern.sub("", text)
    rest = "\n".join(line.strip() for line in rest.splitlines() if line.strip(" \t*_\"',{}"))
    return rest.strip() or None


def _single(values: list[tuple[str, str | None]], where: str) -> int:
    """One rating from one or more statements of it; different numbers are ambiguous."""
    distinct = sorted({(float(n), d) for n, d in values}, key=lambda t: t[0])
    if len(distinct) > 1:
        shown = ", ".join(n if d is None else f"{n}/{d}" for n, d in values)
        raise ParseError("ambiguous", f"{where} is stated more than once with different values "
                         f"({shown})")
    return _check_number(*values[0], where)


def parse_absolute(text: str) -> Rating:
    """Parse an absolute answer: one rating 1-5 of one set.

    Args:
        text: The judge's answer (the message content).

    Returns:
        The :class:`Rating` (score and rationale).

    Raises:
        ParseError: With kind ``empty``, ``no_score``, ``ambiguous``, ``out_of_range`` or
            ``not_integer`` and a one-line message.

    Example:
        >>> parse_absolute('{"score": 4, "rationale": "Varied topics."}')
        Rating(score=4, rationale='Varied topics.')
        >>> parse_absolute("The set repeats itself.\\nScore: 2/5").score
        2
        >>> parse_absolute("Score: 7")
        Traceback (most recent call last):
        ...
        divmeter.backends.judge.parse.ParseError: score 7 is outside 1-5
    """
    if not text or not text.strip():
        raise ParseError("empty", "the answer is empty")
    for obj in _json_objects(text):
        keys = [k for k in obj if _norm_key(k) in _ABS_KEYS]
        if not keys:
            continue
        if len(keys) > 1 and len({json.dumps(obj[k]) for k in keys}) > 1:
            raise ParseError("ambiguous", "the JSON answer has more than one score "
                             f"({', '.join(f'{k}={obj[k]!r}' for k in keys)})")
        score = _check(obj[keys[0]], "score")
        return Rating(score, _rationale_from(obj) or _leftover_json(text))
    lines = [(m.group(1), m.group(2)) for m in _ABS_LINE.finditer(text)]
    if lines:
        return Rating(_single(lines, "score"), _leftover(text, _ABS_LINE))
    m = _BARE.match(text)
    if m:
        return Rating(_check_number(m.group(1), m.group(2), "score"), None)
    raise ParseError("no_score", f"no rating found in the answer: {_clip(text)!r}")


def _leftover_json(text: str) -> str | None:
    """Prose around a JSON answer (kept as the rationale when the JSON has none)."""
    rest = _FENCE.sub("", text)
    rest = re.sub(r"\{.*\}", "", rest, flags=re.DOTALL)
    return rest.strip() or None


def parse_pairwise(text: str) -> PairRating:
    """Parse a pairwise answer: one rating 1-5 for Set 1 and one for Set 2.

    Args:
        text: The judge's answer.

    Returns:
        The :class:`PairRating` (``score1`` for the set shown first).

    Raises:
        ParseError: As :func:`parse_absolute`; ``no_score`` also when only one set is rated.

    Example:
        >>> parse_pairwise('"Diversity_Score_Set1": 2, "Diversity_Score_Set2": 4')
        PairRating(score1=2, score2=4, rationale=None)
    """
    if not text or not text.strip():
        raise ParseError("empty", "the answer is empty")
    for obj in _json_objects(text):
        per: dict[str, list[Any]] = {"1": [], "2": []}
        for k, v in obj.items():
            m = re.fullmatch(r"(?:diversity)?(?:score)?(?:for)?set([12])(?:diversity)?(?:score|"
                             r"rating)?", _norm_key(k))
            if m:
                per[m.group(1)].append(v)
        if not per["1"] and not per["2"]:
            continue
        scores = []
        for s in ("1", "2"):
            if not per[s]:
                raise ParseError("no_score", f"the JSON answer rates only one set (no Set {s})")
            if len({json.dumps(v) for v in per[s]}) > 1:
                raise ParseError("ambiguous", f"the JSON answer gives Set {s} more than one score")
            scores.append(_check(per[s][0], f"Set {s} score"))
        return PairRating(scores[0], scores[1], _rationale_from(obj) or _leftover_json(text))
    found: dict[str, list[tuple[str, str | None]]] = {"1": [], "2": []}
    for m in _PAIR_LINE.finditer(text):
        found[m.group(1)].append((m.group(2), m.group(3)))
    if found["1"] or found["2"]:
        for s in ("1", "2"):
            if not found[s]:
                raise ParseError("no_score", f"the answer rates only one set (no Set {s} score)")
        return PairRating(_single(found["1"], "Set 1 score"), _single(found["2"], "Set 2 score"),
                          _leftover(text, _PAIR_LINE))
    raise ParseError("no_score", f"no ratings found in the answer: {_clip(text)!r}")


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
