"""What an annotator or admin request may carry, and how a refusal is answered: the HTTP status
of each refusal (:class:`RequestError`) and the parsing of the rating forms (one reason to
change: the forms)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from divmeter.core.errors import DivmeterError

__all__ = ["RequestError", "parse_rating", "parse_answer"]


class RequestError(DivmeterError):
    """A refused annotator/admin request: an HTTP status and a one-line reason.

    Attributes:
        status: 403 (bad CSRF token), 404 (unknown link or item), 409 (replayed or expired),
            413 (body too large), 422 (a value outside what the form allows).
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_rating(value: Any, field: str) -> int:
    if not isinstance(value, str) or value not in ("1", "2", "3", "4", "5"):
        raise RequestError(
            422, f"field '{field}' must be an integer rating from 1 to 5; got {value!r}."
        )
    return int(value)


def parse_answer(kind: str, payload: Mapping[str, Any],
                  fields: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    """Validated rating values of one answer, keyed by (aspect, target)."""
    if kind == "abs":
        return {("diversity", ""): parse_rating(fields.get("diversity"), "diversity")}
    if kind == "asp":
        return {("form", ""): parse_rating(fields.get("form"), "form"),
                ("content", ""): parse_rating(fields.get("content"), "content")}
    if kind == "sim":
        return {("similarity", ""): parse_rating(fields.get("similarity"), "similarity")}
    if kind == "rnk":
        return {("ranking", ""): parse_rating(fields.get("ranking"), "ranking")}
    sets = payload["sets"]
    k = len(sets)
    ratings = [parse_rating(fields.get(f"diversity_{i}"), f"diversity_{i}") for i in range(k)]
    ranks = []
    for i in range(k):
        raw = fields.get(f"rank_{i}")
        if not isinstance(raw, str) or not raw.isdigit() or not 1 <= int(raw) <= k:
            raise RequestError(422, f"field 'rank_{i}' must be a rank from 1 to {k}; got {raw!r}.")
        ranks.append(int(raw))
    if sorted(ranks) != list(range(1, k + 1)):
        raise RequestError(422, f"the ranks must use each of 1..{k} once; got {ranks}.")
    for i in range(k):
        for j in range(k):
            if ratings[i] > ratings[j] and ranks[i] > ranks[j]:
                raise RequestError(
                    422, f"the ranking must agree with the ratings (it only breaks ties): set "
                         f"{i + 1} is rated {ratings[i]} > {ratings[j]} but ranked below set "
                         f"{j + 1}.")
    out = {("diversity", sets[i]["set_id"]): ratings[i] for i in range(k)}
    out.update({("rank", sets[i]["set_id"]): ranks[i] for i in range(k)})
    return out
