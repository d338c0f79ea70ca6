"""What the benchmarks say about each metric: the evidence table.

For every registered metric at its defaults, on Tevet & Berant's data (the ``tevet`` data set)
and per task (prompt_gen, resp_gen, story_gen):

* **conTest** (200+ sets per task, human-made high vs low content diversity, with human
  scores): Spearman with the class, OCA (Tevet's direction-blind optimal classification
  accuracy), ROC AUC, and Spearman with the human diversity score (absHDS);
* **decTest** (1,000 sets per task sampled at temperatures 0.2 to 1.2): Spearman with the
  temperature;
* **McDiv_nuggets** (~1,000 sets per task whose form diversity was neutralised, so only content
  tells the classes apart): Spearman with the class, OCA and ROC AUC.

Spearman and AUC are oriented by the metric's direction (a lower-is-more-diverse metric's
scores are negated first), so a positive value always means "agrees with the benchmark". The
numbers come from the same functions as ``divmeter meta contest`` / ``dectest``
(:func:`~divmeter.studies.meta.loaders.prepare_scores`, the protocols). Sets on which a metric
is undefined are left out (counted in ``n``).

``divmeter reproduce --evidence`` computes the table (:func:`compute_evidence`) and writes it;
the package ships one (``evidence.json`` beside this file, with its signature, the data's
hashes and the date), read by :func:`load_evidence` for ``divmeter list NAME``, ``divmeter
list --evidence`` and the HTML reports. A metric the table does not cover says why.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from divmeter.core.errors import DivmeterError, InvalidInputError

__all__ = [
    "Benchmark",
    "BENCHMARKS",
    "TASKS",
    "EvidenceTable",
    "benchmark_cells",
    "compute_evidence",
    "load_evidence",
    "evidence_from_dict",
    "write_evidence",
]

TASKS = ("prompt_gen", "resp_gen", "story_gen")
#: Rounding of the shipped numbers (the drift test compares to this).
DECIMALS = 6
#: A metric is ranked on a benchmark only where it is defined on at least this share of the
#: sets of every task (a statistic over 5 of 1,008 sets says nothing about the metric).
MIN_COVERAGE = 0.5


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of the table.

    Attributes:
        name: ``conTest``, ``decTest``, ``McDiv_nuggets``.
        file: The data file of a task (``{task}``), inside the ``tevet`` data set.
        protocol: ``contest`` (a 0/1 class) or ``dectest`` (a temperature).
        statistics: What the table holds for it.
        headline: The statistic ranked by ``divmeter list --evidence``.
        what: One line for people.
    """

    name: str
    file: str
    protocol: str
    statistics: tuple[str, ...]
    headline: str
    what: str


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("conTest", "conTest/con_test_200_with_hds_{task}.csv", "contest",
              ("spearman", "oca", "auc", "spearman_hds"), "oca",
              "human-written sets of high vs low content diversity; OCA separating the "
              "classes, Spearman with the human score (absHDS)"),
    Benchmark("decTest", "decTest/dec_test_1000_no_hds_{task}.csv", "dectest",
              ("spearman",), "spearman",
              "model sets sampled at temperatures 0.2-1.2; Spearman with the temperature"),
    Benchmark("McDiv_nuggets", "McDiv_nuggets/mcdiv_nuggets_no_hds_{task}.csv", "contest",
              ("spearman", "oca", "auc"), "oca",
              "high vs low content diversity with form diversity neutralised; OCA"),
)}
#: Short names of the statistics, for tables.
STAT_NAMES = {"spearman": "ρ", "oca": "OCA", "auc": "AUC", "spearman_hds": "ρ(HDS)"}
HDS_COLUMN = "metric_abs_hds_mean"


def _round(v: Any) -> float | None:
    if v is None:
        return None
    f = float(v)
    return None if math.isnan(f) else round(f, DECIMALS)


def benchmark_cells(metric: str, benchmark: str, task: str, *,
                    root: str | os.PathLike[str], tables: dict[str, Any] | None = None
                    ) -> tuple[dict[str, Any], str | None]:
    """One cell of the table: ``metric`` (at its defaults) on one benchmark and task.

    Args:
        metric: A registered metric.
        benchmark: A key of :data:`BENCHMARKS`.
        task: One of :data:`TASKS`.
        root: The ``tevet`` data set's folder.
        tables: A cache of loaded files (shared across calls).

    Returns:
        ``({statistic: value, "n": sets used}, metric signature)``; values are rounded to
        :data:`DECIMALS` decimals, ``None`` where undefined.
    """
    import numpy as np

    from divmeter.engine.registry import get_metric
    from divmeter.inputs.data.tables import load_table
    from divmeter.studies.meta.loaders import prepare_scores
    from divmeter.studies.meta.protocols import contest, dectest

    b = BENCHMARKS[benchmark]
    path = Path(root) / b.file.format(task=task)
    cache_ = tables if tables is not None else {}
    if str(path) not in cache_:
        cache_[str(path)] = load_table(path)
    table = cache_[str(path)]
    prep = prepare_scores(table, metrics=[metric], empty="drop")
    column = next(iter(prep.scores))
    sign = 1.0 if get_metric(metric).higher_is_more_diverse else -1.0
    scores = {column: sign * prep.scores[column]}
    cells: dict[str, Any] = {"n": int(len(prep.labels))}
    if b.protocol == "contest":
        v = contest(scores, prep.labels).results[column].values
        cells.update(spearman=_round(v.get("spearman")), oca=_round(v.get("oca")),
                     auc=_round(v.get("auc")))
        if "spearman_hds" in b.statistics:
            hds = table.columns[HDS_COLUMN][prep.rows]
            keep = ~np.isnan(hds)
            h = dectest({column: scores[column][keep]}, hds[keep]).results[column].values
            cells["spearman_hds"] = _round(h.get("spearman"))
    else:
        v = dectest(scores, prep.labels).results[column].values
        cells["spearman"] = _round(v.get("spearman"))
    return cells, prep.signatures.get(column)


#: Why a metric is left out of the computed table when it is not asked for by name (its
#: family needs a model pass too costly for a CPU run over the ~50,000 texts, or a server).
NOT_BY_DEFAULT = {
    "lm": "needs a language-model pass with permutations over ~50,000 benchmark texts (run "
          "divmeter reproduce --evidence -m {name} on a GPU)",
    "judge": "needs an LLM judge server (divmeter reproduce --evidence -m {name} with one)",
}
#: Metrics of the other families left out of the default table, with the reason.
NOT_BY_DEFAULT_METRICS = {
    "bertscore": "needs about 2.5 hours of CPU time (a BERTScore model pass over every ordered "
                 "pair of responses of ~50,000 benchmark texts): run divmeter reproduce "
                 "--evidence -m {name}, best on a GPU",
}


def compute_evidence(root: str | os.PathLike[str], *, metrics: Sequence[str] = (),
                     progress: Callable[[int, int | None], None] | None = None,
                     on_error: Callable[[str, str], None] | None = None,
                     previous: dict[str, Any] | None = None,
                     on_metric: Callable[[dict[str, Any]], object] | None = None
                     ) -> dict[str, Any]:
    """The evidence table of ``metrics`` (default: every registered metric; the LM and judge
    families are recorded as not covered, with the reason) from the ``tevet`` data set at
    ``root``.

    Args:
        root: The fetched ``tevet`` folder (``divmeter data path tevet``).
        metrics: Registered metric names (at their defaults).
        progress: ``progress(cells done, cells)``.
        on_error: Called as ``on_error(metric, reason)`` when a metric cannot be computed
            (a missing extra, a model that cannot be loaded); it is then recorded as not
            covered with that reason.
        previous: A table written before (an interrupted run, or one computed elsewhere,
            e.g. the LM metrics on a GPU): its metrics with numbers are kept as they are when
            its signature is this run's (same data, same divmeter version), the others are
            computed; a table with another signature is not reused.
        on_metric: Called with the table so far after each metric (``-o`` writes it, so an
            interrupted run keeps what it computed).

    Returns:
        The table as a JSON-ready dict (see :func:`write_evidence`).
    """
    from divmeter.core._version import __version__
    from divmeter.core.result import make_signature
    from divmeter.engine.registry import get_metric, list_metrics
    from divmeter.studies.datasets import get_dataset

    names = list(metrics) or [s.name for s in list_metrics()]
    for n in names:
        get_metric(n)  # an unknown name fails before any work
    ds = get_dataset("tevet")
    files = {b.file.format(task=t) for b in BENCHMARKS.values() for t in TASKS}
    hashes = {ds.local(f): f.sha256 for f in ds.files if ds.local(f) in files}
    sig = make_signature("evidence", data=f"tevet@{ds.commit[:12]}",
                         benchmarks="+".join(BENCHMARKS), params="defaults",
                         orient="direction", empty="drop")
    kept = dict((previous or {}).get("metrics") or {}) \
        if (previous or {}).get("signature") == sig else {}
    total = len(names) * len(BENCHMARKS) * len(TASKS)
    done = 0
    tables: dict[str, Any] = {}
    out: dict[str, Any] = {m: e for m, e in kept.items() if m not in names}
    table = {"signature": sig, "divmeter": __version__, "date": date.today().isoformat(),
             "data": {"tevet": {"repository": ds.repository, "commit": ds.commit,
                                "files": dict(sorted(hashes.items()))}},
             "benchmarks": {b.name: {"file": b.file, "protocol": b.protocol,
                                     "statistics": list(b.statistics), "headline": b.headline,
                                     "what": b.what, "sets": _sets(root, b, tables)}
                            for b in BENCHMARKS.values()},
             "metrics": out}
    for name in names:
        spec = get_metric(name)
        if "cells" in (kept.get(name) or {}):  # computed by an earlier run of this table
            out[name] = kept[name]
            done += len(BENCHMARKS) * len(TASKS)
            continue
        if spec.input != "texts":
            out[name] = {"not_covered": f"scores {spec.input}, which these benchmarks' sets of "
                                        "free texts do not have"}
            done += len(BENCHMARKS) * len(TASKS)
            continue
        if not metrics and (spec.family in NOT_BY_DEFAULT or name in NOT_BY_DEFAULT_METRICS):
            why = NOT_BY_DEFAULT_METRICS.get(name) or NOT_BY_DEFAULT[spec.family]
            out[name] = {"not_covered": why.format(name=name)}
            done += len(BENCHMARKS) * len(TASKS)
            continue
        entry: dict[str, Any] = {"signature": None, "cells": {}}
        try:
            for b in BENCHMARKS:
                for t in TASKS:
                    try:
                        cells, msig = benchmark_cells(name, b, t, root=root, tables=tables)
                    except InvalidInputError as exc:  # undefined on (nearly) every set
                        cells, msig = {"n": 0, "reason": _why(exc)}, None
                    entry["cells"].setdefault(b, {})[t] = cells
                    entry["signature"] = entry["signature"] or msig
                    done += 1
                    if progress is not None:
                        progress(done, total)
        except (DivmeterError, ImportError, OSError, RuntimeError, ValueError) as exc:
            if on_error is not None:
                on_error(name, _why(exc))
            entry = {"not_covered": f"could not be computed here: {_why(exc)}"}
        if "cells" in entry and not any(c.get("n") for per in entry["cells"].values()
                                        for c in per.values()):
            first = next(c["reason"] for per in entry["cells"].values() for c in per.values())
            entry = {"not_covered": f"undefined on every set of the benchmarks; first: {first}"}
        out[name] = entry
        if on_metric is not None:
            on_metric(table)
    table["metrics"] = dict(sorted(out.items(), key=lambda kv: _order(kv[0])))
    return table


def _order(name: str) -> tuple[int, str]:
    """Registry order (family, then name) for the written table."""
    from divmeter.engine.registry import list_metrics

    names = [s.name for s in list_metrics()]
    return (names.index(name), name) if name in names else (len(names), name)


def _sets(root: str | os.PathLike[str], b: Benchmark, tables: dict[str, Any]) -> dict[str, int]:
    """Sets per task a metric can be measured on (the file's, less its all-empty sets)."""
    from divmeter.inputs.data.tables import load_table
    from divmeter.studies.meta.loaders import is_empty_set

    out = {}
    for t in TASKS:
        path = str(Path(root) / b.file.format(task=t))
        if path not in tables:
            tables[path] = load_table(path)
        sets = tables[path].sets or []
        out[t] = len(sets) - sum(is_empty_set(s) for s in sets)
    return out


def _why(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def write_evidence(table: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write the table as JSON (atomically: a temporary file renamed into place)."""
    from divmeter.inputs.data.outputs import replace_atomically

    p = Path(path)
    with replace_atomically(p) as tmp:
        Path(tmp).write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n",
                             encoding="utf-8")
    return p


@dataclass(frozen=True)
class EvidenceTable:
    """The evidence table as shipped (or as computed)."""

    doc: dict[str, Any]

    @property
    def signature(self) -> str:
        return str(self.doc.get("signature", ""))

    @property
    def date(self) -> str:
        return str(self.doc.get("date", ""))

    @property
    def commit(self) -> str:
        return str(self.doc.get("data", {}).get("tevet", {}).get("commit", ""))

    def metrics(self) -> list[str]:
        return list(self.doc.get("metrics", {}))

    def entry(self, metric: str) -> dict[str, Any] | None:
        """The metric's entry (``cells`` and ``signature``, or ``not_covered``); ``None`` when
        the table does not list it (a metric newer than the table)."""
        e = self.doc.get("metrics", {}).get(metric)
        return e if isinstance(e, dict) else None

    def why_not(self, metric: str) -> str | None:
        """Why the table has no numbers for ``metric`` (``None`` when it has)."""
        e = self.entry(metric)
        if e is None:
            return ("not in the shipped evidence table; compute it with divmeter reproduce "
                    f"--evidence -m {metric}")
        return e.get("not_covered")

    def coverage(self, metric: str, benchmark: str) -> str | None:
        """Why a metric is not ranked on a benchmark although it has numbers (defined on
        fewer than :data:`MIN_COVERAGE` of the sets of a task); ``None`` when it is."""
        e = self.entry(metric) or {}
        sets = ((self.doc.get("benchmarks") or {}).get(benchmark) or {}).get("sets") or {}
        for t in TASKS:
            cell = ((e.get("cells") or {}).get(benchmark) or {}).get(t) or {}
            n, total = cell.get("n", 0), sets.get(t)
            if total and n < MIN_COVERAGE * total:
                return f"defined on {n} of {total} {t} sets"
        return None

    def headline(self, metric: str, benchmark: str) -> tuple[float | None, list[float | None]]:
        """``(mean over tasks, per task)`` of the benchmark's headline statistic; the mean is
        ``None`` where a task has no number or too few sets (:meth:`coverage`)."""
        stat = BENCHMARKS[benchmark].headline
        e = self.entry(metric) or {}
        per = [((e.get("cells") or {}).get(benchmark) or {}).get(t, {}).get(stat)
               for t in TASKS]
        got = [v for v in per if v is not None]
        ok = len(got) == len(TASKS) and self.coverage(metric, benchmark) is None
        return (sum(got) / len(got) if ok else None), per

    def mean(self, metric: str, benchmark: str, stat: str) -> float | None:
        e = self.entry(metric) or {}
        per = [((e.get("cells") or {}).get(benchmark) or {}).get(t, {}).get(stat)
               for t in TASKS]
        return None if any(v is None for v in per) else sum(per) / len(per)  # type: ignore[arg-type]

    def unranked(self, benchmark: str, metrics: Iterable[str] | None = None
                 ) -> list[tuple[str, str]]:
        """``(metric, why)`` for the metrics with numbers that :meth:`ranking` leaves out."""
        out = []
        for m in metrics if metrics is not None else self.metrics():
            if self.why_not(m) is None and self.headline(m, benchmark)[0] is None:
                out.append((m, self.coverage(m, benchmark) or "undefined on a task"))
        return out

    def ranking(self, benchmark: str, metrics: Iterable[str] | None = None
                ) -> list[tuple[str, float, list[float | None]]]:
        """Metrics with numbers on ``benchmark``, best first by the mean of its headline
        statistic over the tasks."""
        if benchmark not in BENCHMARKS:
            raise InvalidInputError(f"unknown benchmark {benchmark!r}; known: "
                                    f"{', '.join(BENCHMARKS)}.")
        rows = []
        for m in metrics if metrics is not None else self.metrics():
            mean, per = self.headline(m, benchmark)
            if mean is not None:
                rows.append((m, mean, per))
        return sorted(rows, key=lambda r: (-r[1], r[0]))

    def rank(self, metric: str, benchmark: str) -> tuple[int, int] | None:
        """``(rank, out of)`` of a metric on a benchmark (``None``: not covered)."""
        names = [r[0] for r in self.ranking(benchmark)]
        return (names.index(metric) + 1, len(names)) if metric in names else None

    def summary(self, metric: str) -> str:
        """One line per table cell group: ``conTest OCA 0.675/0.677/0.772 (rank 3 of 31)``."""
        why = self.why_not(metric)
        if why is not None:
            return f"no benchmark evidence: {why}"
        parts = []
        for b in BENCHMARKS:
            mean, per = self.headline(metric, b)
            if mean is None:
                why = self.coverage(metric, b) or "undefined on a task"
                parts.append(f"{b}: not ranked ({why})")
                continue
            stat = STAT_NAMES[BENCHMARKS[b].headline]
            rank = self.rank(metric, b)
            parts.append(f"{b} {stat} " + "/".join("–" if v is None else f"{v:.2f}"
                                                     for v in per)
                         + (f" (rank {rank[0]} of {rank[1]})" if rank else ""))
        return "; ".join(parts)


def evidence_from_dict(doc: dict[str, Any]) -> EvidenceTable:
    return EvidenceTable(doc)


@cache
def load_evidence() -> EvidenceTable:
    """The evidence table shipped with the package (``evidence.json``); an empty one if the
    file is missing (a source checkout before it was computed)."""
    try:
        text = resources.files("divmeter.studies.reproduce").joinpath(
            "evidence.json").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return EvidenceTable({"metrics": {}})
    return EvidenceTable(json.loads(text))
