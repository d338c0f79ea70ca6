"""``divmeter meta agreement``: agreement of raters with a reference and among themselves.

Reads the table, calls :func:`divmeter.studies.meta.agreement.agreement`, formats the result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from divmeter.apps.cli.options import QuietOpt, VerboseOpt
from divmeter.core.errors import InvalidInputError

__all__ = ["agreement_cmd", "read_rating_table"]

_READERS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "json",
            ".parquet": "parquet", ".xlsx": "excel", ".xlsm": "excel", ".xls": "excel"}


def read_rating_table(path: str, columns: list[str], sheet: str | None = None
                      ) -> dict[str, list[Any]]:
    """The named columns of a CSV / TSV / JSONL / JSON / Parquet / Excel table (``sheet``:
    an Excel sheet name; default the first sheet), as lists with ``None`` for missing cells.

    Text tables are read by divmeter's own readers (UTF-8 only, file and line in every error):
    a CSV row with another number of fields than the header, and a JSON value that is not a
    label (an object or a list) are refused, never read as missing or as text.

    Raises:
        InvalidInputError: Unknown extension, ``sheet`` on a non-Excel file, a missing sheet or
            column (the available ones are listed), a malformed or unreadable file.
    """
    name = os.path.basename(path)
    ext = os.path.splitext(path)[1].lower()
    kind = _READERS.get(ext)
    if kind is None:
        raise InvalidInputError(f"{name}: cannot read a {ext or 'extension-less'} table; expected "
                                f"{', '.join(sorted(_READERS))}.")
    if sheet is not None and kind != "excel":
        raise InvalidInputError(f"--sheet applies to Excel files; got {name}.")
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    if kind in ("csv", "tsv"):
        header, rows = _text_table(path, name, "\t" if kind == "tsv" else ",")
    elif kind in ("jsonl", "json"):
        header, rows = _json_table(path, name, kind, columns)
    else:
        header, rows = _binary_table(path, name, kind, sheet)
    missing = [c for c in columns if c not in header]
    if missing:
        shown = (h if h.isprintable() else repr(h) for h in map(str, header))  # one line
        raise InvalidInputError(f"{name}: no column {missing[0]!r}; columns: "
                                f"{', '.join(shown)}.")
    return {c: [r.get(c) for r in rows] for c in columns}


def _text_table(path: str, name: str, sep: str) -> tuple[list[str], list[dict[str, Any]]]:
    import csv

    from divmeter.inputs.data.lines import csv_error, csv_reader, decode_lines, open_source

    counter = [0]
    rows: list[dict[str, Any]] = []
    with open_source(path) as fh:
        reader = csv_reader(decode_lines(fh, name, counter), delimiter=sep)
        try:
            header = next(reader, None)
            if not header:
                raise InvalidInputError(f"{name}: empty table; expected a header line and rows.")
            for cells in reader:
                if not cells:
                    continue
                if len(cells) != len(header):
                    raise InvalidInputError(
                        f"{name} line {counter[0]}: expected {len(header)} fields as in the "
                        f"header; got {len(cells)}.")
                rows.append({h: (c if c.strip() else None) for h, c in zip(header, cells,
                                                                          strict=True)})
        except csv.Error as exc:
            raise csv_error(name, counter[0], exc) from None
    return header, rows


def _label(value: Any, where: str, key: str) -> Any:
    from divmeter.inputs.data.lines import type_name

    if isinstance(value, (dict, list)):
        raise InvalidInputError(f"{where}: field {key!r} must be a label (a string, a number or "
                                f"null); got {type_name(value)}.")
    if isinstance(value, float) and value != value:
        return None
    return value


def _json_table(path: str, name: str, kind: str, columns: Sequence[str]
                ) -> tuple[list[str], list[dict[str, Any]]]:
    """The rows of a JSON / JSONL table; the fields named in ``columns`` must hold labels (other
    fields, e.g. the judge output's response lists, are carried, not read)."""
    from divmeter.inputs.data.lines import (
        decode_all,
        loads,
        open_source,
        read_json_lines,
        read_whole,
        type_name,
    )

    if kind == "jsonl":
        items = list(read_json_lines(path))
    else:
        with open_source(path) as fh:
            doc = loads(decode_all(read_whole(fh, name, "a JSON table"), name), name)
        if isinstance(doc, dict) and all(isinstance(v, list) for v in doc.values()):
            n = {len(v) for v in doc.values()}
            if len(n) > 1:
                raise InvalidInputError(f"{name}: every column must have the same length; got "
                                        f"{sorted(n)}.")
            doc = [dict(zip(doc, vals, strict=True)) for vals in zip(*doc.values(),
                                                                      strict=True)]
        if not isinstance(doc, list):
            raise InvalidInputError(f"{name}: a JSON table must be a list of row objects (or an "
                                    f"object of column lists); got {type_name(doc)}.")
        items = [(f"{name} item {i + 1}", r) for i, r in enumerate(doc)]
    header: list[str] = []
    rows: list[dict[str, Any]] = []
    for where, rec in items:
        if not isinstance(rec, dict):
            raise InvalidInputError(f"{where}: each row must be a JSON object; got "
                                    f"{type_name(rec)}.")
        for k in rec:
            if k not in header:
                header.append(k)
        rows.append({k: _label(v, where, k) if k in columns else v for k, v in rec.items()})
    if not rows:
        raise InvalidInputError(f"{name}: empty table; expected rows.")
    return header, rows


def _binary_table(path: str, name: str, kind: str, sheet: str | None
                  ) -> tuple[list[str], list[dict[str, Any]]]:
    from divmeter.core._optional import require

    pd = require("pandas", extra="judge")
    what = "Excel" if kind == "excel" else "Parquet"
    try:
        if kind == "excel":
            require("openpyxl", extra="judge")
            try:
                df = pd.read_excel(path, sheet_name=sheet if sheet is not None else 0)
            except ValueError as exc:
                if sheet is not None and "not found" in str(exc):
                    sheets = pd.ExcelFile(path).sheet_names
                    raise InvalidInputError(f"{name}: no sheet {sheet!r}; sheets: "
                                            f"{', '.join(sheets)}.") from None
                raise
        else:
            df = pd.read_parquet(path)
    except (InvalidInputError, ImportError):
        raise
    except Exception as exc:  # pandas, openpyxl, zipfile and pyarrow each raise their own
        text = " ".join(str(exc).split())[:160]
        raise InvalidInputError(f"{name}: not a readable {what} file ({type(exc).__name__}: "
                                f"{text}).") from None
    header = [str(c) for c in df.columns]
    rows = []
    for i, rec in enumerate(df.to_dict("records")):
        rows.append({str(k): None if _isna(pd, v) else _label(v, f"{name} row {i + 2}", str(k))
                     for k, v in rec.items()})
    return header, rows


def _isna(pd: Any, v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # a list or array cell
        return False


def _check_measurable(table: dict[str, list[Any]], rater: list[str], reference: str | None,
                      name: str) -> None:
    """Refuse a table that gives nothing to measure (no row, one row, no label at all, or one
    rater whose reference holds no label); a statistic undefined by nature (one rater's
    among-raters statistics, a constant label) stays a documented null."""
    from divmeter.studies.meta.agreement import has_label

    n = len(table[rater[0]])
    if n < 2:
        raise InvalidInputError(f"{name}: {'no row' if n == 0 else 'one row'} of ratings; "
                                "agreement needs at least 2 rated items.")
    if not any(has_label(v) for c in dict.fromkeys(rater) for v in table[c]):
        raise InvalidInputError(f"{name}: no labels: every rating of {', '.join(rater)} is "
                                f"missing on all {n} rows.")
    if len(set(rater)) < 2 and not reference:
        raise InvalidInputError("one rater and no --reference: nothing to measure; give a second "
                                "--rater (agreement among raters) or a --reference (accuracy "
                                "and kappa against it).")
    if reference and len(set(rater)) < 2 and not any(has_label(v) for v in table[reference]):
        raise InvalidInputError(f"{name}: no labels in the reference column {reference!r} (all "
                                f"{n} rows missing) and one rater: nothing to measure.")


def _f(v: Any, digits: int = 4) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _ci(pair: list[Any]) -> str:
    return "-" if pair[0] is None else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def agreement_cmd(
    file: Annotated[str, typer.Argument(help="Table: .csv .tsv .jsonl .json .parquet .xlsx.",
                                        show_default=False)],
    rater: Annotated[list[str], typer.Option("--rater", "-r", help="Column of one rater's "
                                             "labels; repeatable.", show_default=False)],
    reference: Annotated[str | None, typer.Option(
        "--reference", help="Column of reference labels (accuracy and kappa per rater).",
        show_default=False)] = None,
    sheet: Annotated[str | None, typer.Option("--sheet", help="Excel sheet (default: the "
                                              "first).", show_default=False)] = None,
    confidence: Annotated[float, typer.Option("--confidence", help="Interval level.")] = 0.95,
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help="table, json or markdown (default: table on a terminal, json "
        "when piped).", show_default=False)] = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Accuracy and Cohen's kappa (with CIs) per rater against --reference; Fleiss' kappa,
    Krippendorff's alpha (nominal, ordinal) and mean pairwise agreement among the raters."""
    from divmeter.apps.cli.meta import _fmt
    from divmeter.studies.meta.agreement import agreement

    chosen = _fmt(fmt)  # the one registry of formats (divmeter.inputs.data.formats)
    cols = list(dict.fromkeys(rater + ([reference] if reference else [])))
    table = read_rating_table(file, cols, sheet)
    _check_measurable(table, rater, reference, os.path.basename(file))
    result = agreement({c: table[c] for c in rater},
                       table[reference] if reference else None, confidence=confidence)
    d = result.to_dict(with_details=True)
    if chosen == "json":
        typer.echo(json.dumps(d, indent=2, allow_nan=False))
        return
    lines = _markdown(d, os.path.basename(file))
    if chosen == "markdown":
        typer.echo("\n".join(lines))
        return
    from rich.console import Console

    from divmeter.report.terminal import folded_tables, print_unbroken

    con = Console()
    if d["per_rater"]:
        rows = [[k, str(v["n"]), _f(v["accuracy"]), _ci(v["accuracy_ci"]), _f(v["kappa"]),
                 _ci(v["kappa_ci"])] for k, v in d["per_rater"].items()]
        print_unbroken(con, *folded_tables(
            ["rater", "n", "accuracy", "accuracy CI", "kappa", "kappa CI"], rows, keys=1,
            width=con.width, title=f"agreement with {reference}: {os.path.basename(file)}"))
    rows = [[k, _f(d[k])] for k in ("mean_accuracy", "fleiss_kappa", "krippendorff_alpha",
                                    "krippendorff_alpha_ordinal", "mean_pairwise_agreement")]
    rows.append(["items / raters", f"{d['n_items']} / {d['n_raters']}"])
    reasons = [f"  {k}: {v}" for k, v in d.get("details", {}).get("reasons", {}).items()]
    print_unbroken(con, *folded_tables(["statistic", "value"], rows, keys=1, width=con.width,
                                       title="among raters"), d["signature"],
                   *(["undefined (null):", *reasons] if reasons else []))


def _markdown(d: dict[str, Any], source: str) -> list[str]:
    lines = [f"### agreement: {source}", ""]
    if d["per_rater"]:
        lines += ["| rater | n | accuracy | accuracy CI | kappa | kappa CI |",
                  "|---|---|---|---|---|---|"]
        for k, v in d["per_rater"].items():
            lines.append(f"| {k} | {v['n']} | {_f(v['accuracy'])} | {_ci(v['accuracy_ci'])} | "
                         f"{_f(v['kappa'])} | {_ci(v['kappa_ci'])} |")
        lines.append("")
    lines += ["| statistic | value |", "|---|---|"]
    for k in ("mean_accuracy", "fleiss_kappa", "krippendorff_alpha",
              "krippendorff_alpha_ordinal", "mean_pairwise_agreement"):
        lines.append(f"| {k} | {_f(d[k])} |")
    lines += [f"| items / raters | {d['n_items']} / {d['n_raters']} |", "",
              f"`{d['signature']}`", ""]
    reasons = d.get("details", {}).get("reasons", {})
    if reasons:
        lines += ["Undefined (null):", ""] + [f"- {k}: {v}" for k, v in reasons.items()] + [""]
    return lines
