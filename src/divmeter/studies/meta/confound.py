"""Dataset-construction confound check for Decan (Khoriaty et al. 2026, appendix E).

In McDiv_nuggets / conTest the low-diversity set of a worker is five paraphrases of one of that
worker's own continuations, and the self-selected endings are more specific, hence more surprising
to the base model. The paper shows this with the first point of the curve, a_1 (the surprise of
the first response given only the prompt, which cannot reflect diversity):

* Table 7 (appendix E.2): mean a_1 of the high- and of the low-diversity sets, their gap
  (low - high), the mean response length in bytes of each class, and the set counts;
* Table 8: the same class means within bins of the set's mean response length
  ([20, 40), [40, 60), [60, 80), [80, 120) bytes), to show the gap is a content effect rather than
  a length artifact.

:func:`decan_confound` computes both tables for any per-set columns (default ``a_1`` and ``D``,
so the diversity score can be read next to the confound), and :func:`load_confound_inputs` lines
the columns up from a per-set results file (e.g. ``benchmarks/results_contest_decan.jsonl``),
taking the lengths either from a field of that file or from the response-set file it was scored
from. :func:`divmeter.report.decan_plot.plot_decan_confound` draws Figure 15 plus the Table 8
bins.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import jsonable, make_signature

__all__ = [
    "PAPER_BINS",
    "DEFAULT_COLUMNS",
    "ConfoundResult",
    "decan_confound",
    "load_confound_inputs",
    "mean_response_bytes",
]

#: Bin edges of Table 8 (appendix E.2), in mean response bytes: [20, 40), [40, 60), [60, 80),
#: [80, 120). Sets outside [20, 120) fall in no bin (counted as ``n_outside``).
PAPER_BINS: tuple[float, ...] = (20.0, 40.0, 60.0, 80.0, 120.0)
#: Columns tabulated by default: the confound probe a_1 (Table 7-8) and the score D = C x a_n.
DEFAULT_COLUMNS: tuple[str, ...] = ("a_1", "D")


@dataclass
class ConfoundResult:
    """Appendix E tables: class means of each column overall (Table 7) and per length bin (Table 8).

    Attributes:
        overall: Column -> ``{high_mean, low_mean, gap, n_high, n_low, n_missing}``; ``gap`` is
            low - high as in Tables 7 and 8, ``n_missing`` counts rows whose value is NaN (left
            out of that column only).
        length: The same statistics of the set length (Table 7, "Mean response bytes").
        by_bin: Column -> one dict per bin ``{bin, lo, hi, high_mean, low_mean, gap, n_high,
            n_low}``; a mean is ``None`` when its class has no set in the bin (the paper's
            "---"), and so is the gap.
        n_outside: Rows whose length lies outside every bin.
        reasons: Why a mean or gap is null beyond a bin without sets of a class: ``gap`` when
            one class is absent (a constant label), a column name when that column is missing
            on every set.
        settings: Bin edges, the label values of the two classes, the gap definition and the
            name of the length.
        signature: ``decan-confound|bins:...|high:...|low:...|gap:low-high|v:...``.
        arrays: Per column ``{values, high, lengths}`` (``high`` is the boolean class mask), for
            the plot; not serialised.
    """

    overall: dict[str, dict[str, Any]]
    length: dict[str, Any]
    by_bin: dict[str, list[dict[str, Any]]]
    n_outside: int
    settings: dict[str, Any]
    signature: str
    reasons: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)

    protocol = "decan-confound"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN as ``null``)."""
        return jsonable({
            "protocol": self.protocol,
            "signature": self.signature,
            "settings": self.settings,
            "overall": self.overall,
            "length": self.length,
            "by_bin": self.by_bin,
            "n_outside": self.n_outside,
            **({"reasons": self.reasons} if self.reasons else {}),
        })

    def markdown(self, *, title: str | None = None) -> str:
        """Table 7 (class means) and one Table 8 (by length bin) per column, in Markdown."""
        high, low = self.settings["high_label"], self.settings["low_label"]
        out = [f"## {title}", ""] if title else []
        out += [f"| | high diversity (label {high:g}) | low diversity (label {low:g}) | gap "
                "(low - high) |", "|---|---|---|---|"]
        for name, st in [*self.overall.items(), (self.settings["length"], self.length)]:
            out.append(f"| {name} | {_f(st['high_mean'])} | {_f(st['low_mean'])} | "
                       f"{_f(st['gap'], sign=True)} |")
        any_st = next(iter(self.overall.values()))
        out += [f"| n | {any_st['n_high']} | {any_st['n_low']} | |", ""]
        for name, rows in self.by_bin.items():
            out += [f"{name} by {self.settings['length']} bin:", "",
                    "| range | high mean | low mean | gap | n high | n low |",
                    "|---|---|---|---|---|---|"]
            for r in rows:
                out.append(f"| {r['bin']} | {_f(r['high_mean'])} | {_f(r['low_mean'])} | "
                           f"{_f(r['gap'], sign=True)} | {r['n_high']} | {r['n_low']} |")
            out.append("")
        out += [f"Sets outside every bin: {self.n_outside}", ""]
        out += [f"Undefined ({k}): {v}" for k, v in self.reasons.items()]
        out += [""] if self.reasons else []
        out += [f"Signature: `{self.signature}`", ""]
        return "\n".join(out)


def _f(v: Any, *, sign: bool = False) -> str:
    if v is None:
        return "---"
    return f"{v:+.3f}" if sign else f"{v:.3f}"


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if x.size else None


def _gap(hi: float | None, lo: float | None) -> float | None:
    return None if hi is None or lo is None else lo - hi


def _class_stats(v: np.ndarray, high: np.ndarray) -> dict[str, Any]:
    ok = ~np.isnan(v)
    hm, lm = _mean(v[ok & high]), _mean(v[ok & ~high])
    return {"high_mean": hm, "low_mean": lm, "gap": _gap(hm, lm),
            "n_high": int((ok & high).sum()), "n_low": int((ok & ~high).sum()),
            "n_missing": int((~ok).sum())}


def _bin_label(lo: float, hi: float) -> str:
    return f"[{lo:g}, {hi:g})"


def decan_confound(
    values: Mapping[str, Sequence[Any] | np.ndarray],
    labels: Sequence[Any] | np.ndarray,
    lengths: Sequence[Any] | np.ndarray,
    *,
    bins: Sequence[float] = PAPER_BINS,
    high_label: float = 1.0,
    low_label: float = 0.0,
    length_name: str = "bytes",
) -> ConfoundResult:
    """Class means of per-set columns overall and by length bin (appendix E, Tables 7 and 8).

    Args:
        values: Column name -> one value per set (e.g. ``a_1`` in bits/byte, ``D``); NaN / None
            values are left out of that column (counted in ``n_missing``).
        labels: One label per set, each equal to ``high_label`` or ``low_label``.
        lengths: One length per set (the paper: the set's mean response length in UTF-8 bytes).
        bins: Increasing bin edges; bin i is [bins[i], bins[i+1]) (default: Table 8's edges).
        high_label: Label of the high-diversity class (Tevet: 1).
        low_label: Label of the low-diversity class (Tevet: 0).
        length_name: Name of the length, echoed in the settings and tables.

    Returns:
        A :class:`ConfoundResult`; gaps are low - high, as in Tables 7 and 8.

    Raises:
        InvalidInputError: Empty or misaligned inputs, a label of neither class, a length that is
            not finite and >= 0, or bin edges that are not increasing.

    Example:
        >>> r = decan_confound({"a_1": [1.0, 1.2, 0.9, 1.5]}, [1, 0, 1, 0], [30, 30, 50, 50])
        >>> round(r.overall["a_1"]["gap"], 6), [round(b["gap"], 6) for b in r.by_bin["a_1"][:2]]
        (0.4, [0.2, 0.6])
    """
    if not isinstance(values, Mapping) or not values:
        raise InvalidInputError(
            "`values` must be a non-empty mapping of column name -> one value per set."
        )
    lab = np.asarray([math.nan if v is None else v for v in labels], dtype=np.float64)
    n = lab.size
    if n == 0:
        raise InvalidInputError("decan-confound needs at least one set; got none.")
    if n < 2:
        raise InvalidInputError("decan-confound needs at least 2 sets (one class mean beside "
                                "the other); got 1.")
    if high_label == low_label:
        raise InvalidInputError(
            f"`high_label` and `low_label` must differ; got {high_label!r} for both."
        )
    bad = np.flatnonzero((lab != high_label) & (lab != low_label))
    if bad.size:
        i = int(bad[0])
        raise InvalidInputError(
            f"row {i}: label must be {high_label:g} (high diversity) or {low_label:g} (low "
            f"diversity); got {str(labels[i])[:40]}."
        )
    ln = np.asarray([math.nan if v is None else v for v in lengths], dtype=np.float64)
    if ln.size != n:
        raise InvalidInputError(f"{ln.size} lengths for {n} labels; expected one per set.")
    bad = np.flatnonzero(~np.isfinite(ln) | (ln < 0))
    if bad.size:
        i = int(bad[0])
        raise InvalidInputError(
            f"row {i}: length must be a finite number >= 0; got {lengths[i]!r}."
        )
    edges = np.asarray(bins, dtype=np.float64)
    if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(
        np.diff(edges) <= 0
    ):
        raise InvalidInputError(
            f"`bins` must be at least 2 finite, strictly increasing edges; got {list(bins)!r}."
        )
    high = lab == high_label
    cols: dict[str, np.ndarray] = {}
    for name, vals in values.items():
        v = np.asarray([math.nan if x is None else x for x in vals], dtype=np.float64)
        if v.shape != (n,):
            raise InvalidInputError(
                f"column {name!r} has {v.size} values for {n} sets; expected one per set."
            )
        if np.isinf(v).any():
            i = int(np.flatnonzero(np.isinf(v))[0])
            raise InvalidInputError(f"row {i}: column {name!r} must be finite (or NaN for a "
                                    f"missing value); got {v[i]!r}.")
        cols[str(name)] = v
    if all(np.isnan(v).all() for v in cols.values()):
        raise InvalidInputError(
            f"no value to measure: {', '.join(cols)} {'is' if len(cols) == 1 else 'are'} "
            f"missing (null) on all {n} sets.")
    reasons: dict[str, str] = {}
    for cls, lbl, other in (("high", high_label, "low"), ("low", low_label, "high")):
        if not (lab == lbl).any():
            reasons["gap"] = (f"no set of the {cls} class (label {lbl:g}): every {cls} mean "
                              f"and every gap is undefined (the label is constant: only the "
                              f"{other} class)")
    for name, v in cols.items():
        if np.isnan(v).all():
            reasons[name] = (f"column {name!r} is missing (null) on every set: its means and "
                             "gaps are undefined")
    which = np.searchsorted(edges, ln, side="right") - 1  # bin i: edges[i] <= x < edges[i+1]
    inside = (which >= 0) & (which < edges.size - 1)
    by_bin: dict[str, list[dict[str, Any]]] = {}
    for name, v in cols.items():
        rows = []
        for b in range(edges.size - 1):
            st = _class_stats(v[which == b], high[which == b])
            del st["n_missing"]
            rows.append({"bin": _bin_label(edges[b], edges[b + 1]), "lo": float(edges[b]),
                         "hi": float(edges[b + 1]), **st})
        by_bin[name] = rows
    length = _class_stats(ln, high)
    del length["n_missing"]
    settings = {"bins": edges.tolist(), "high_label": float(high_label),
                "low_label": float(low_label), "gap": "low-high", "length": length_name}
    sig = make_signature("decan-confound", bins=",".join(f"{e:g}" for e in edges),
                         high=f"{high_label:g}", low=f"{low_label:g}", gap="low-high")
    return ConfoundResult(
        overall={name: _class_stats(v, high) for name, v in cols.items()},
        length=length,
        by_bin=by_bin,
        n_outside=int((~inside).sum()),
        settings=settings,
        signature=sig,
        reasons=reasons,
        arrays={name: {"values": v, "high": high, "lengths": ln} for name, v in cols.items()},
    )


def mean_response_bytes(responses: Sequence[str]) -> float:
    """Mean UTF-8 byte length of a set's responses (the length of Tables 7 and 8).

    Example:
        >>> mean_response_bytes(["ab", "héllo"])
        4.0
    """
    if not responses:
        raise InvalidInputError("a set with no responses has no mean response length.")
    return float(np.mean([len(r.encode("utf-8")) for r in responses]))


def _num(rec: Mapping[str, Any], key: str, where: str) -> float:
    if key not in rec:
        raise InvalidInputError(f"{where}: field {key!r} is missing; got fields "
                                f"{', '.join(map(str, rec)) or 'none'}.")
    v = rec[key]
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise InvalidInputError(f"{where}: field {key!r} must be a number; got {v!r}.")
    try:
        x = float(v)
    except (ValueError, OverflowError):
        raise InvalidInputError(f"{where}: field {key!r} must be a number; got "
                                f"{str(v)[:40]!r}.") from None
    if math.isinf(x):
        raise InvalidInputError(f"{where}: field {key!r} must be a finite number (or null for "
                                f"a missing value); got {str(v)[:40]!r}.")
    return x


def load_confound_inputs(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str] = DEFAULT_COLUMNS,
    label: str = "label",
    length: str | None = "mean_bytes",
    sets: str | os.PathLike[str] | None = None,
    where: Mapping[str, str] | None = None,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, dict[str, Any]]:
    """Per-set columns, labels and lengths for :func:`decan_confound` from a results file.

    The results file (JSONL / JSON / CSV / Parquet, read by
    :func:`divmeter.inputs.data.readers.read_records`) holds one record per scored set with numeric
    fields: the ``columns`` (``null`` = missing), the ``label`` and, unless ``sets`` is given,
    the ``length``. With ``sets`` (the response-set file the results were scored from, e.g. a
    Tevet conTest CSV), the length of each record is the mean UTF-8 byte length of the responses
    of set number ``row`` (the record's ``row`` field, the 0-based position in that file; the
    record's position when it has no ``row``); a record whose label differs from that set's
    label is an error (the files are not aligned).

    Args:
        path: The results file, e.g. ``benchmarks/results_contest_decan.jsonl``.
        columns: Numeric fields to tabulate.
        label: Field holding the class label.
        length: Field holding the set length (ignored with ``sets``).
        sets: Response-set file to measure lengths from.
        where: Keep only the records whose field equals the given text (e.g.
            ``{"task": "story_gen"}``), compared as strings.

    Returns:
        ``(values, labels, lengths, info)``; ``info`` names the source, the filters, the length
        (``mean_response_bytes`` when measured from ``sets``) and the file it came from, and the
        number of records read and kept.

    Raises:
        InvalidInputError: Missing fields, non-numeric values, no record left after filtering,
            a row outside the sets file or a label mismatch with it.
        FileNotFoundError: A missing file.
    """
    from divmeter.inputs.data.readers import read_records

    for p in (path, sets):
        if p is not None and str(p) != "-" and not os.path.exists(p):
            raise FileNotFoundError(2, "No such file or directory", str(p))
    name = os.path.basename(str(path))
    records = list(read_records(path))
    conds = dict(where or {})
    for key in conds:
        if not any(key in r for r in records):
            raise InvalidInputError(f"{name}: --where field {key!r} is in no record.")
    kept = [(i, r) for i, r in enumerate(records)
            if all(str(r.get(k)) == v for k, v in conds.items())]
    if not records:
        raise InvalidInputError(f"{name}: no record (an empty table); expected one per set.")
    if not kept:
        raise InvalidInputError(
            f"{name}: no record left after filtering ({len(records)} read; where "
            f"{', '.join(f'{k}={v}' for k, v in conds.items()) or 'nothing'})."
        )
    values = {c: np.array([_num(r, c, f"{name} record {i}") for i, r in kept]) for c in columns}
    labels = np.array([_num(r, label, f"{name} record {i}") for i, r in kept])
    if sets is not None:
        from divmeter.inputs.data.readers import read_sets

        set_list = list(read_sets(sets))
        sname = os.path.basename(str(sets))
        lens = []
        for pos, (i, r) in enumerate(kept):
            row = int(_num(r, "row", f"{name} record {i}")) if "row" in r else pos
            if not 0 <= row < len(set_list):
                raise InvalidInputError(
                    f"{name} record {i}: row {row} is outside {sname} ({len(set_list)} sets)."
                )
            s = set_list[row]
            if s.label is not None and not math.isnan(labels[pos]) and float(s.label) != labels[
                pos
            ]:
                raise InvalidInputError(
                    f"{name} record {i}: label {labels[pos]:g} differs from the label "
                    f"{float(s.label):g} of set {row} in {sname}; the files are not aligned."
                )
            lens.append(mean_response_bytes(s.responses))
        lengths = np.asarray(lens, dtype=np.float64)
        length_name = "mean_response_bytes"
    else:
        if length is None:
            raise InvalidInputError("give a length field or a sets file to measure lengths.")
        lengths = np.array([_num(r, length, f"{name} record {i}") for i, r in kept])
        length_name = length
    info = {"source": name, "where": conds, "length": length_name,
            "lengths_from": os.path.basename(str(sets)) if sets is not None else name,
            "records": len(records), "kept": len(kept)}
    return values, labels, lengths, info


def parse_where(conditions: Sequence[str]) -> dict[str, str]:
    """``["task=story_gen", ...]`` -> ``{"task": "story_gen"}`` (the CLI's ``--where``).

    Example:
        >>> parse_where(["task=story_gen"])
        {'task': 'story_gen'}
    """
    conds: dict[str, str] = {}
    for w in conditions:
        key, eq, value = w.partition("=")
        if not eq or not key:
            raise InvalidInputError(f"--where must be KEY=VALUE; got {w!r}.")
        conds[key] = value
    return conds


def parse_bins(text: str) -> list[float]:
    """Comma-separated bin edges (the CLI's ``--bins``).

    Example:
        >>> parse_bins("20,40,60")
        [20.0, 40.0, 60.0]
    """
    try:
        return [float(e) for e in text.split(",")]
    except ValueError:
        raise InvalidInputError(
            f"--bins must be comma-separated numbers, e.g. 20,40,60,80,120; got {text!r}."
        ) from None
