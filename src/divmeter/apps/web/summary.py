"""Statistics of a study's answers: per-item means and sample standard deviations, and simHDS's
pair similarities reduced to a set diversity (Tevet & Berant 2021, section 5, through
:func:`divmeter.metrics.reduce.reduce_pairs`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.metrics.reduce import reduce_pairs

__all__ = ["sim_reduction", "summarise", "unit_set_id"]


def sim_reduction(similarities: Sequence[float]) -> float:
    """Tevet & Berant's similarity-to-diversity reduction (section 5, the equation of m~_div).

    Args:
        similarities: One similarity per unordered pair of the set (all C(|S|, 2) pairs).

    Returns:
        The negated mean similarity.

    Raises:
        InvalidInputError: No pairs.

    Example:
        >>> sim_reduction([5.0, 3.0, 1.0])
        -3.0
    """
    if len(similarities) == 0:
        raise InvalidInputError("sim_reduction needs at least one pair similarity; got none.")
    return reduce_pairs(similarities, "neg-mean")


def unit_set_id(kind: str, payload: Mapping[str, Any]) -> str:
    return "|".join(s["set_id"] for s in payload["sets"])


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof = 1; ``None`` below 2 values)."""
    n = len(values)
    if n == 0:
        return None, None
    mean = sum(values) / n
    if n < 2:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var)


def summarise(kind: str, items: Sequence[tuple[str, Mapping[str, Any]]],
              raw: Sequence[Mapping[str, Any]], *, level: str = "item") -> list[dict[str, Any]]:
    """Per-item means, sample standard deviations (ddof = 1) and counts of the raw ratings.

    One row per item with ``item_id``, ``set_id``, ``kind``, ``n_ratings``, ``mean``, ``std``
    (``None`` when there are fewer than 2 ratings; ``mean`` ``None`` with none) and ``label`` when
    the task file gave numeric labels. Per kind:

    * ``abs``: the diversity rating (absHDS).
    * ``asp``: ``mean``/``std`` are the *content* aspect (aspHDS_content, the column of Tevet &
      Berant's Table 4 conTest); ``form_mean``, ``form_std``, ``content_mean``, ``content_std``
      are both aspects, named.
    * ``sim``: per pair, the mean similarity (5 = very similar). With ``level="set"``: one row
      per set, ``mean`` = the section 5 reduction ``-mean_pairs(pair mean similarity)`` over all
      C(|S|, 2) pairs (``None`` until every pair has a rating), ``std`` ``None``, ``n_pairs``.
    * ``rnk``: the 1-5 answer (5 = set A much more diverse); ``label`` = label(A) - label(B)
      (Appendix C correlates rnkHDS with the temperature difference); ``set_a``, ``set_b``.
    * ``cs``: one row per *set* (``item_id`` = ``GROUP/SET``), the 1-5 rating, plus
      ``rank_mean`` (1 = most diverse) and ``group``.

    Raises:
        InvalidInputError: ``level`` is not ``item``/``set``, or ``set`` for a kind other than sim.
    """
    if level not in ("item", "set"):
        raise InvalidInputError(f"--level must be item or set; got {level!r}.")
    if level == "set" and kind != "sim":
        raise InvalidInputError(
            f"--level set applies to simHDS only (pairs -> sets); kind {kind!r} is already per set."
        )
    by: dict[tuple[str, str, str], list[int]] = {}
    for r in raw:
        by.setdefault((r["item_id"], r["aspect"], r["set_id"]), []).append(int(r["value"]))
    rows: list[dict[str, Any]] = []

    def row(item_id: str, set_id: str, values: Sequence[int], label: Any) -> dict[str, Any]:
        mean, std = _mean_std(values)
        out: dict[str, Any] = {"item_id": item_id, "set_id": set_id, "kind": kind,
                               "n_ratings": len(values), "mean": mean, "std": std}
        if label is not None:
            out["label"] = label
        return out

    if kind == "sim" and level == "set":
        per_set: dict[str, dict[str, Any]] = {}
        for key, p in items:
            s = p["sets"][0]
            entry = per_set.setdefault(s["set_id"], {"label": s["label"], "pairs": [],
                                                     "n": 0, "expected": math.comb(
                                                         p["n_responses"], 2)})
            vals = by.get((key, "similarity", s["set_id"]), [])
            entry["n"] += len(vals)
            if vals:
                entry["pairs"].append(sum(vals) / len(vals))
        for sid, e in per_set.items():
            complete = len(e["pairs"]) == e["expected"]
            out = {"item_id": sid, "set_id": sid, "kind": kind, "n_ratings": e["n"],
                   "mean": sim_reduction(e["pairs"]) if complete else None, "std": None,
                   "n_pairs": e["expected"], "n_pairs_rated": len(e["pairs"])}
            if e["label"] is not None:
                out["label"] = e["label"]
            rows.append(out)
        return rows
    for key, p in items:
        sets = p["sets"]
        if kind == "abs":
            rows.append(row(key, sets[0]["set_id"], by.get((key, "diversity", sets[0]["set_id"]),
                                                           []), sets[0]["label"]))
        elif kind == "asp":
            sid = sets[0]["set_id"]
            form = by.get((key, "form", sid), [])
            content = by.get((key, "content", sid), [])
            r = row(key, sid, content, sets[0]["label"])
            r["form_mean"], r["form_std"] = _mean_std(form)
            r["content_mean"], r["content_std"] = _mean_std(content)
            rows.append(r)
        elif kind == "sim":
            sid = sets[0]["set_id"]
            r = row(key, sid, by.get((key, "similarity", sid), []), sets[0]["label"])
            r["pair"] = f"{p['pair'][0]}-{p['pair'][1]}"
            rows.append(r)
        elif kind == "rnk":
            a, b = sets
            la, lb = a["label"], b["label"]
            sid = f"{a['set_id']}|{b['set_id']}"
            r = row(key, sid, by.get((key, "ranking", sid), []),
                    la - lb if la is not None and lb is not None else None)
            r["set_a"], r["set_b"] = a["set_id"], b["set_id"]
            rows.append(r)
        else:
            for s in sets:
                sid = s["set_id"]
                r = row(f"{key}/{sid}", sid, by.get((key, "diversity", sid), []), s["label"])
                r["rank_mean"] = _mean_std(by.get((key, "rank", sid), []))[0]
                r["group"] = key
                rows.append(r)
    return rows
