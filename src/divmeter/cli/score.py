"""``divmeter score``: score every set of a file with one or more metrics.

Parsing and formatting only; the work is :func:`divmeter.batch.score_sets`.
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from divmeter.errors import InvalidInputError

__all__ = ["score_cmd"]

_OUT_FORMATS = ("table", "json", "jsonl", "csv", "parquet")


def score_cmd(
    input: Annotated[
        str,
        typer.Argument(
            help="Response sets: .jsonl, .json, .csv (long or Tevet wide form), .parquet, "
            "optionally .gz; '-' reads stdin. With -m cdm: a JSONL of instantiations.",
            metavar="INPUT",
            show_default=False,
        ),
    ],
    metric: Annotated[
        list[str],
        typer.Option(
            "--metric",
            "-m",
            help="Metric to compute, NAME[:k=v,...]; repeat for several (see `divmeter list`).",
            metavar="NAME[:k=v,...]",
            show_default=False,
        ),
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Write results here, streaming (format from the extension unless --format).",
            metavar="OUT",
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="Output format: table, json, jsonl, csv, parquet. Default: from -o's "
            "extension; without -o a table on a terminal and JSONL when piped.",
            metavar="FORMAT",
        ),
    ] = None,
    input_format: Annotated[
        str | None,
        typer.Option(
            "--input-format",
            help="jsonl, json, csv or parquet (default: from the extension).",
            metavar="FORMAT",
        ),
    ] = None,
    summary: Annotated[
        bool,
        typer.Option(
            "--summary",
            help="Print mean, std, count and nulls per metric at the end (stderr, or after the "
            "table); with --format json also stored in the output as 'summary'.",
        ),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Skip the sets already in OUTPUT (from an interrupted run) and append."
        ),
    ] = False,
    workers: Annotated[
        int, typer.Option("--workers", "-j", help="Processes to spread the sets over.", min=1)
    ] = 1,
    signatures: Annotated[
        bool,
        typer.Option("--signatures", help="Add each metric's signature to every record."),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no closing note.")
    ] = False,
) -> None:
    """Score every response set in INPUT with the given metrics.

    One record per set: set_id, row (0-based position in INPUT; the key when ids repeat), label
    if the set has one, one column per metric (null when undefined, with the reason under
    'reasons'), and per-response values for response-level metrics.

    Example: divmeter score examples/stories.jsonl -m distinct-n -m self-bleu:n=3 -o scores.jsonl
    """
    from divmeter.batch import Summary, completed_rows, resolve_metrics, score_sets
    from divmeter.data.lines import detect_format
    from divmeter.data.readers import read_instantiation_sets, read_sets
    from divmeter.data.writers import open_record_writer

    plans = resolve_metrics(metric)
    columns = [p.column for p in plans]

    # where the results go -------------------------------------------------------------------
    if fmt is not None and fmt.lower() not in _OUT_FORMATS:
        raise InvalidInputError(f"--format must be one of {', '.join(_OUT_FORMATS)}; got {fmt!r}.")
    to_stdout = output is None or output == "-"
    if to_stdout:
        out_fmt = (fmt or ("table" if sys.stdout.isatty() else "jsonl")).lower()
        if out_fmt == "parquet":
            raise InvalidInputError("Parquet output needs a file: add -o OUT.parquet.")
        if resume:
            raise InvalidInputError("--resume needs an output file (-o OUT) to resume from.")
    else:
        if fmt is not None and fmt.lower() == "table":
            raise InvalidInputError(
                "--format table prints to the terminal; for a file use json, jsonl, csv or parquet."
            )
        out_fmt = detect_format(output, fmt)  # type: ignore[arg-type]
        parent = Path(output).parent  # type: ignore[arg-type]
        if not parent.is_dir():
            raise InvalidInputError(f"output folder {str(parent)!r} does not exist.")

    # what is already done (--resume) ----------------------------------------------------------
    skip: dict[int, str] = {}
    agg = Summary(columns)
    appending = False
    if resume and output is not None:
        skip, old = completed_rows(output, out_fmt, columns=columns)
        for rec in old:
            agg.add(rec)
        appending = bool(old) or Path(output).exists()

    # the input (instantiations for CDM-like metrics): a validating counting pass for files (so
    # a malformed file stops before any output is written, and the progress bar knows the total)
    reader = read_sets
    if any(p.input == "instantiations" for p in plans):
        reader = read_instantiation_sets
    total: int | None = None
    if input != "-":
        total = sum(1 for _ in reader(input, input_format))
    sets = reader(input, input_format)
    first = next(sets, None)
    has_label = first is not None and first.label is not None
    sets = itertools.chain([first] if first is not None else [], sets)

    record_cols = ["set_id", "row"] + (["label"] if has_label else []) + columns + ["reasons"]
    if any(p.granularity == "response" for p in plans):
        record_cols.append("per_response")
    if signatures:
        record_cols.append("signatures")

    show_progress = not quiet and sys.stderr.isatty()
    table_rows: list[dict[str, Any]] = []
    writer = None
    if out_fmt != "table":
        writer = open_record_writer(
            "-" if to_stdout else output,  # type: ignore[arg-type]
            out_fmt,
            columns=record_cols,
            append=appending,
        )

    progress_cm, callback = _progress(show_progress, total, len(skip))
    new = 0
    try:
        with progress_cm:
            for rec in score_sets(
                sets,
                [(p.name, p.params) for p in plans],
                workers=workers,
                progress=callback,
                total=total,
                skip=skip,
                summary=agg,
                with_signatures=True,
            ):
                if not signatures:
                    rec.pop("signatures", None)
                new += 1
                if writer is None:
                    table_rows.append(rec)
                else:
                    writer.write(rec)
        if writer is not None:
            if summary and out_fmt == "json":
                writer.extra = {"summary": agg.to_dict()}
            writer.close()
            writer = None
    except BrokenPipeError:  # e.g. `divmeter score ... | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(0) from None
    finally:
        if writer is not None:  # interrupted: keep what was written (JSON/Parquet: the sidecar)
            writer.__exit__(KeyboardInterrupt, None, None)

    # report ---------------------------------------------------------------------------------
    from rich.console import Console

    if out_fmt == "table":
        out_console = Console()
        out_console.print(_results_table(table_rows, columns, has_label))
        if summary:
            out_console.print(_summary_table(agg.to_dict()))
    elif summary:
        Console(stderr=True).print(_summary_table(agg.to_dict()))
    if not quiet and not to_stdout:
        resumed = f" ({len(skip)} already there)" if skip else ""
        nulls = agg.to_dict()["metrics"]
        null_note = ", ".join(f"{c}: {v['nulls']}" for c, v in nulls.items() if v["nulls"])
        typer.echo(
            f"divmeter: scored {new} sets{resumed} -> {output}"
            + (f"; nulls {null_note}" if null_note else ""),
            err=True,
        )


def _progress(show: bool, total: int | None, already: int) -> tuple[Any, Any]:
    """A rich progress bar on stderr (a no-op context when not shown) and its callback."""
    import contextlib

    if not show:
        return contextlib.nullcontext(), None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        SpinnerColumn(),
        TextColumn("scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("score", total=total, completed=0)

    def callback(done: int, total_: int | None) -> None:
        progress.update(task, completed=done)

    return progress, callback


def _fmt_value(v: Any) -> str:
    if v is None:
        return "[dim]null[/dim]"
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def _results_table(rows: list[dict[str, Any]], columns: list[str], has_label: bool) -> Any:
    from rich.table import Table

    table = Table(title=f"{len(rows)} sets", title_justify="left")
    table.add_column("row", justify="right", style="dim")
    table.add_column("set_id", overflow="fold", max_width=40)
    if has_label:
        table.add_column("label", justify="right")
    for c in columns:
        table.add_column(c, justify="right")
    reasons: dict[str, int] = {}
    for r in rows:
        cells = [str(r["row"]), str(r["set_id"])]
        if has_label:
            cells.append(_fmt_value(r.get("label")))
        cells += [_fmt_value(r.get(c)) for c in columns]
        table.add_row(*cells)
        for c, why in (r.get("reasons") or {}).items():
            key = f"{c}: {why}"
            reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        table.caption = "null: " + "; ".join(f"{k} (x{n})" for k, n in reasons.items())
        table.caption_justify = "left"
    return table


def _summary_table(stats: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=f"summary over {stats['sets']} sets", title_justify="left")
    for col in ("metric", "mean", "std", "count", "nulls", "signature"):
        table.add_column(
            col,
            justify="left" if col in {"metric", "signature"} else "right",
            overflow="fold",
        )
    for name, s in stats["metrics"].items():
        table.add_row(
            name,
            _fmt_value(s["mean"]),
            _fmt_value(s["std"]),
            str(s["count"]),
            str(s["nulls"]),
            s.get("signature", ""),
        )
    return table
