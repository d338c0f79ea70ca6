"""How consistent the judge is with itself, and how its agreement with a reference changes with
the number of samples N and with the temperature (the commonsense paper's appendix E question:
its Table 6 reports the judge's mean pairwise accuracy against humans at temperatures 0-1.0, each
from five runs).

* :func:`self_consistency`: agreement among the N samples of each item, treating sample k as
  rater k: mean pairwise agreement, Krippendorff's alpha (ordinal and nominal) and the mean
  within-item standard deviation of the ratings.
* :func:`accuracy_by_n`: for n = 1..N, the pairwise accuracy against reference labels of the
  labels obtained from the first n samples (of every presentation order).
* :func:`accuracy_by_temperature`: runs the pairwise judge at each temperature and reports the
  accuracy (and its curve over n) per temperature.

Accuracy here: over pairs whose reference label is 0 or 1 (reference ties are dropped, as
``divmeter meta pairwise --label-ties drop``) and that the judge labelled, the share where the
judge's label equals the reference; a judge tie (label 2) counts as a miss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from divmeter.backends.judge.config import JudgeConfig
from divmeter.backends.judge.results import JudgedPair, JudgeRun
from divmeter.backends.judge.run import judge_pairs
from divmeter.core.errors import InvalidInputError
from divmeter.studies.meta.agreement import krippendorff_alpha, pairwise_agreement

__all__ = ["self_consistency", "accuracy_by_n", "accuracy_by_temperature", "labels_from_samples"]


def _sample_matrix(items: Sequence[Any]) -> list[list[Any]]:
    """Rater-major ratings: one row per (order, sample index), one column per item; for pairs
    the rated quantity is the difference rating1 - rating2."""
    keys = sorted({(s.order or "", s.sample) for it in items for s in it.samples})
    rows = []
    for key in keys:
        row: list[Any] = []
        for it in items:
            got = [s for s in it.samples if (s.order or "", s.sample) == key]
            if not got or got[0].scores is None:
                row.append(None)
            elif len(got[0].scores) == 1:
                row.append(got[0].scores[0])
            else:
                row.append(got[0].scores[0] - got[0].scores[1])
        rows.append(row)
    return rows


def self_consistency(run: JudgeRun) -> dict[str, Any]:
    """Agreement among the judge's samples of each item.

    For absolute runs the rated value is the score; for pairwise runs the difference
    score1 - score2 of one answer (ordinal, -4..4). Sample k of order o is rater (o, k).

    Returns:
        ``{"raters", "items", "mean_pairwise_agreement", "krippendorff_alpha_ordinal",
        "krippendorff_alpha", "mean_item_std", "reasons"}``.
    """
    rows = _sample_matrix(run.items)
    alpha_o, why_o = krippendorff_alpha(rows, "ordinal") if rows else (None, "no samples")
    alpha_n, why_n = krippendorff_alpha(rows, "nominal") if rows else (None, "no samples")
    stds = []
    for j in range(len(run.items)):
        vals = [r[j] for r in rows if r[j] is not None]
        if len(vals) >= 2:
            stds.append(float(np.std(vals, ddof=1)))
    reasons = {k: v for k, v in (("krippendorff_alpha_ordinal", why_o),
                                 ("krippendorff_alpha", why_n)) if v}
    return {
        "raters": len(rows),
        "items": len(run.items),
        "mean_pairwise_agreement": pairwise_agreement(rows) if len(rows) >= 2 else None,
        "krippendorff_alpha_ordinal": alpha_o,
        "krippendorff_alpha": alpha_n,
        "mean_item_std": float(np.mean(stds)) if stds else None,
        "reasons": reasons,
    }


def labels_from_samples(pairs: Sequence[JudgedPair], n: int) -> list[int | None]:
    """Per pair, the label from the samples with index < ``n`` (every order): 0 when set1's mean
    is higher, 1 when set2's, 2 when equal, ``None`` without a valid sample."""
    out: list[int | None] = []
    for p in pairs:
        got = [s.scores for s in p.samples if s.sample < n and s.scores is not None]
        if not got:
            out.append(None)
            continue
        r1 = sum(g[0] for g in got) / len(got)
        r2 = sum(g[1] for g in got) / len(got)
        out.append(0 if r1 > r2 else 1 if r2 > r1 else 2)
    return out


def _accuracy(labels: Sequence[int | None], reference: Sequence[Any]) -> dict[str, Any]:
    hits = n = 0
    for lab, ref in zip(labels, reference, strict=True):
        if ref not in (0, 1) or lab is None:
            continue
        n += 1
        hits += int(lab == ref)
    return {"accuracy": hits / n if n else None, "n": n}


def accuracy_by_n(run: JudgeRun, reference: Sequence[Any]) -> dict[int, dict[str, Any]]:
    """Pairwise accuracy against ``reference`` of the labels from the first n samples.

    Args:
        run: A pairwise :class:`~divmeter.studies.judge.protocol.JudgeRun`.
        reference: Per pair, the reference label (0, 1, 2 = tie, or ``None``).

    Returns:
        ``{n: {"accuracy", "n"}}`` for n = 1..N (``n`` inside: pairs counted).

    Raises:
        InvalidInputError: If ``reference`` does not have one label per pair.

    Example:
        >>> from collections import Counter
        >>> from divmeter.backends.judge.results import Sample
        >>> s = (Sample(0, "ab", (2, 4), None), Sample(1, "ab", (5, 1), None),
        ...      Sample(2, "ab", (5, 1), None))
        >>> run = JudgeRun("sig", [JudgedPair(4.0, 2.0, 0, None, s, {})], Counter(), {})
        >>> {k: v["accuracy"] for k, v in accuracy_by_n(run, [0]).items()}
        {1: 0.0, 2: 1.0, 3: 1.0}
    """
    if len(reference) != len(run.items):
        raise InvalidInputError(f"`reference` must have one label per pair ({len(run.items)}); "
                                f"got {len(reference)}.")
    top = max((s.sample for it in run.items for s in it.samples), default=-1) + 1
    return {n: _accuracy(labels_from_samples(run.items, n), reference)
            for n in range(1, top + 1)}


def accuracy_by_temperature(
    pairs: Sequence[tuple[Sequence[str], Sequence[str]]],
    reference: Sequence[Any],
    config: JudgeConfig,
    temperatures: Sequence[float] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
    *,
    contexts: Sequence[str | None] | None = None,
    client: Any = None,
) -> dict[float, dict[str, Any]]:
    """Run the pairwise judge at each temperature (the paper's Table 6 grid by default) and
    report its accuracy against ``reference``, overall and by n, with its position bias.

    Returns:
        ``{temperature: {"accuracy", "n", "by_n", "position_bias", "signature"}}``.
    """
    if len(reference) != len(pairs):
        raise InvalidInputError(f"`reference` must have one label per pair ({len(pairs)}); got "
                                f"{len(reference)}.")
    out: dict[float, dict[str, Any]] = {}
    for t in temperatures:
        run = judge_pairs(pairs, replace(config, temperature=float(t)), contexts=contexts,
                          client=client)
        acc = _accuracy([p.label for p in run.items], reference)
        out[float(t)] = {**acc, "by_n": accuracy_by_n(run, reference),
                         "position_bias": run.bias.to_dict() if run.bias else None,
                         "signature": run.signature}
    return out
