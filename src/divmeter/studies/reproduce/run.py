"""Recompute every published number the fetched data allows, beside the printed one.

:func:`reproduce` reads each data file once, scores it the way ``divmeter meta contest`` /
``dectest`` / ``paired`` do (the same functions: :func:`~divmeter.inputs.data.tables.load_table`,
:func:`~divmeter.studies.meta.loaders.prepare_scores`, the protocols of
:mod:`divmeter.studies.meta.protocols`), and returns one row per :class:`Claim` of
:mod:`divmeter.studies.reproduce.published`: the printed number, divmeter's, their difference,
the tolerance and whether it holds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import make_signature
from divmeter.studies.reproduce.published import (
    CDM_TABLE4,
    PAPERS,
    Claim,
    claims,
)

__all__ = ["Row", "Reproduction", "reproduce", "PAPER_NAMES"]

PAPER_NAMES = tuple(PAPERS)
ProgressFn = Callable[[int, int | None], None]


@dataclass(frozen=True)
class Row:
    """One published number and divmeter's.

    Attributes:
        claim: What is published, where, and how divmeter recomputes it.
        reproduced: divmeter's number (``None``: undefined, with ``note``).
        tolerance: The tolerance applied (the claim's, plus a Monte Carlo allowance).
        status: ``ok``, ``off`` (beyond the tolerance) or ``not reproducible`` (the released
            data cannot give the printed number: ``note`` says why; not counted).
        note: Why a row is not reproducible or undefined.
        signature: The protocol's signature.
        metric_signature: The signature of divmeter's metric (``None`` for a column).
    """

    claim: Claim
    reproduced: float | None
    tolerance: float
    status: str
    note: str | None = None
    signature: str = ""
    metric_signature: str | None = None

    @property
    def diff(self) -> float | None:
        return None if self.reproduced is None else self.reproduced - self.claim.published

    def to_dict(self) -> dict[str, Any]:
        return {**self.claim.to_dict(), "reproduced": self.reproduced, "diff": self.diff,
                "tolerance": self.tolerance, "status": self.status, "note": self.note,
                "signature": self.signature, "metric_signature": self.metric_signature}


@dataclass
class Reproduction:
    """What :func:`reproduce` found.

    Attributes:
        rows: One per published number.
        papers: The papers reproduced.
        skipped: Paper -> why it was not reproduced (its data is not fetched).
        data: Data set -> ``{"path", "repository", "commit", "files": {path: sha256}}``.
        signature: ``reproduce|papers:...|data:tevet@<commit>|v:...``.
    """

    rows: list[Row]
    papers: list[str]
    skipped: dict[str, str] = field(default_factory=dict)
    data: dict[str, dict[str, Any]] = field(default_factory=dict)
    signature: str = ""

    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "off": 0, "not reproducible": 0}
        for r in self.rows:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    @property
    def ok(self) -> bool:
        """Every checked number is within its tolerance."""
        return all(r.status != "off" for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {"signature": self.signature, "papers": self.papers, "skipped": self.skipped,
                "data": self.data, "counts": self.counts(), "ok": self.ok,
                "rows": [r.to_dict() for r in self.rows]}


def _check_names(names: Sequence[str]) -> list[str]:
    bad = [n for n in names if n not in PAPERS]
    if bad:
        raise InvalidInputError(f"unknown paper {bad[0]!r} to reproduce; known: "
                                f"{', '.join(PAPERS)}.")
    return list(dict.fromkeys(names))


def _data_info(name: str, root: Path) -> dict[str, Any]:
    from divmeter.studies.datasets import get_dataset

    ds = get_dataset(name)
    return {"path": str(root), "repository": ds.repository, "commit": ds.commit,
            "files": {ds.local(f): f.sha256 for f in ds.files}}


class _Scorer:
    """Each data file read once; its scores per (kind, empty policy) computed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tables: dict[str, Any] = {}
        self.prepared: dict[tuple[str, str, tuple[str, ...], bool], Any] = {}

    def table(self, file: str) -> Any:
        from divmeter.inputs.data.tables import load_table

        if file not in self.tables:
            path = self.root / file
            if not path.is_file():
                raise InvalidInputError(f"{path}: missing from the data set folder; run "
                                        "divmeter data verify.")
            self.tables[file] = load_table(path)
        return self.tables[file]

    def scores(self, file: str, names: tuple[str, ...], computed: bool, empty: str) -> Any:
        """:func:`prepare_scores` as ``meta contest/dectest`` run it: columns as they are;
        divmeter's metrics rounded to three decimals, as Tevet's columns are."""
        from divmeter.studies.meta.loaders import prepare_scores

        key = (file, empty, names, computed)
        if key not in self.prepared:
            t = self.table(file)
            self.prepared[key] = prepare_scores(
                t, metrics=names if computed else (), columns=() if computed else names,
                empty=empty, round_=3 if computed else None)
        return self.prepared[key]


def _file_rows(group: list[Claim], scorer: _Scorer) -> list[Row]:
    """The claims on one file under one protocol: each kind of scores computed once."""
    from divmeter.studies.meta.protocols import contest, dectest

    c0 = group[0]
    assert c0.file is not None
    per_temp = c0.protocol == "dectest-per-temperature"
    empty = "zero" if per_temp else "drop"
    out = []
    for kind in ("column", "metric"):
        mine = [c for c in group if c.scores[0] == kind]
        if not mine:
            continue
        names = tuple(dict.fromkeys(c.scores[1] for c in mine))
        prep = scorer.scores(c0.file, names, kind == "metric", empty)
        if c0.protocol == "contest":
            res = contest(prep.scores, prep.labels, metric_signatures=prep.signatures,
                          settings=prep.settings)
        elif per_temp:  # Tevet 6.3: 100 draws of two sets per temperature, seed 0
            res = dectest(prep.scores, prep.labels, metric_signatures=prep.signatures,
                          settings=prep.settings, sample="per-temperature", repeats=100, seed=0)
        else:
            res = dectest(prep.scores, prep.labels, metric_signatures=prep.signatures,
                          settings=prep.settings)
        for c in mine:
            r = res.results[c.scores[1]]
            out.append(_row(c, r.values.get(c.statistic), r.signature,
                            (r.details or {}).get("metric_signature"),
                            std=r.values.get("spearman_std")))
    return out


def _row(c: Claim, value: Any, signature: str, metric_sig: str | None,
         std: float | None = None) -> Row:
    tol = c.tolerance + (3 * std / 10 if c.monte_carlo and std is not None else 0.0)
    v = None if value is None or (isinstance(value, float) and np.isnan(value)) else float(value)
    why = c.not_reproducible
    if why is not None:
        status = "not reproducible"
    elif v is None:
        status, why = "off", "undefined on the data"
    else:
        status = "ok" if abs(v - c.published) <= tol else "off"
    return Row(c, v, tol, status, why, signature, metric_sig)


def _cdm_rows(group: list[Claim]) -> list[Row]:
    """CDM Tables 2 and 4: the paired protocol on the per-scenario values Table 4 prints;
    self-BLEU enters as raw self-BLEU (1 - the printed dissimilarity), lower = more diverse."""
    from divmeter.studies.meta.protocols import paired

    out = []
    for c in group:
        p1, p2 = (np.asarray(v) for v in CDM_TABLE4[c.metric])
        lower = c.metric == "Self-BLEU"
        a, b = (1 - p1, 1 - p2) if lower else (p1, p2)
        r = paired({c.metric: a}, {c.metric: b},
                   directions={c.metric: "lower"} if lower else None).results[c.metric]
        out.append(_row(c, r.values.get(c.statistic), r.signature, None))
    return out


def reproduce(names: Sequence[str] = (), *, roots: dict[str, str | os.PathLike[str]] | None = None,
              progress: ProgressFn | None = None) -> Reproduction:
    """Recompute the published numbers of the named papers (default: every paper whose data
    is fetched) and compare.

    Args:
        names: Paper keys (``tevet``, ``decan``, ``cdm``); empty: all (those whose data is not
            fetched are skipped, with the reason).
        roots: Data set -> a folder laid out as a fetched one (default: the fetched copy).
        progress: Called as ``progress(groups done, groups)``.

    Returns:
        A :class:`Reproduction`.

    Raises:
        InvalidInputError: An unknown paper.
        DatasetError: A named paper's data is not fetched (says how to fetch it).
    """
    from divmeter.studies.datasets import DatasetError, dataset_path

    explicit = bool(names)
    papers = _check_names(names) if explicit else list(PAPERS)
    found: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    for p in list(papers):
        ds = PAPERS[p][1]
        if ds is None or ds in found:
            continue
        try:
            found[ds] = Path((roots or {})[ds]) if ds in (roots or {}) else dataset_path(ds)
        except DatasetError as exc:
            if explicit:
                raise
            skipped[p] = str(exc)
            papers.remove(p)
    for p in list(papers):
        if PAPERS[p][1] is not None and PAPERS[p][1] not in found:
            skipped[p] = skipped.get(p) or f"data set {PAPERS[p][1]!r} is not fetched"
            papers.remove(p)
    todo = [c for p in papers for c in claims(p)]
    groups: dict[tuple[str, str], list[Claim]] = {}
    for c in todo:
        groups.setdefault((c.file or "", c.protocol), []).append(c)
    rows: list[Row] = []
    scorers = {ds: _Scorer(root) for ds, root in found.items()}
    for i, ((_, protocol), group) in enumerate(groups.items()):
        if protocol == "paired":
            rows += _cdm_rows(group)
        else:
            rows += _file_rows(group, scorers[PAPERS[group[0].paper][1] or ""])
        if progress is not None:
            progress(i + 1, len(groups))
    order = {id(c): i for i, c in enumerate(todo)}
    rows.sort(key=lambda r: order[id(r.claim)])
    data = {ds: _data_info(ds, root) for ds, root in found.items()}
    sig = make_signature("reproduce", papers="+".join(papers) or None,
                         data="+".join(f"{ds}@{data[ds]['commit'][:12]}" for ds in data) or None)
    return Reproduction(rows, papers, skipped, data, sig)
