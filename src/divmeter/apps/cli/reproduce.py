"""``divmeter reproduce [NAME...]``: the papers' published numbers beside divmeter's, and
``--evidence``: the table of what the benchmarks say about every metric.

Parsing and printing only; the work is :func:`divmeter.studies.reproduce.reproduce` and
:func:`divmeter.studies.reproduce.evidence.compute_evidence`.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from divmeter.apps.cli.options import QuietOpt, VerboseOpt
from divmeter.core.errors import InvalidInputError

__all__ = ["reproduce_cmd"]


def _fmt(fmt: str | None) -> str:
    from divmeter.inputs.data.formats import check_format, default_format

    return default_format("reproduce", terminal=sys.stdout.isatty()) if fmt is None \
        else check_format(fmt, "reproduce")


def reproduce_cmd(
    names: Annotated[list[str] | None, typer.Argument(
        help="Papers: tevet (Tevet & Berant 2021), decan (its Tables 2-3 baselines), cdm "
        "(Tables 2 and 4, from its printed values). Default: every paper whose data is "
        "fetched.", metavar="[NAME]...", show_default=False)] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help="table, json or markdown (default: table on a terminal, json "
        "when piped).", metavar="FORMAT", show_default=False)] = None,
    html: Annotated[str | None, typer.Option(
        "--html", help="Also write the tables as one self-contained HTML page.",
        metavar="REPORT.html", show_default=False)] = None,
    brief: Annotated[bool, typer.Option(
        "--brief", help="Table: only the rows off their tolerance or not reproducible.")
    ] = False,
    evidence: Annotated[bool, typer.Option(
        "--evidence", help="Instead: compute what the benchmarks (conTest, decTest, "
        "McDiv_nuggets) say about every metric, from the fetched tevet data; -o writes the "
        "table (the one divmeter ships: src/divmeter/studies/reproduce/evidence.json).")
    ] = False,
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", "-m", help="With --evidence: only these metrics (at their defaults); "
        "repeatable. Default: all (the LM and judge families are recorded as not covered).",
        metavar="NAME", show_default=False)] = None,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", help="With --evidence: write the table (JSON) here, after every "
        "metric; the metrics a table already in FILE holds for the same data and divmeter "
        "version are kept (an interrupted run goes on; -m adds metrics to it).",
        metavar="FILE.json", show_default=False)] = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Recompute every published number the fetched data allows (Tevet & Berant's conTest,
    decTest and McDiv tables; the Decan paper's baselines on them; CDM's Tables 2 and 4 from
    its printed values) and print published and reproduced side by side, with the difference
    and the tolerance. Exit code 1 when a number is off by more than its tolerance.

    Example: divmeter data fetch tevet && divmeter reproduce tevet
    """
    from divmeter.apps.cli.progress import progress_bar
    from divmeter.inputs.data.paths import guard_outputs

    chosen = _fmt(fmt)
    if (metric or output) and not evidence:
        raise InvalidInputError("-m and -o go with --evidence.")
    guard_outputs({"--html": html, "-o": output}, [])
    if html is not None:
        from divmeter.report.html import check_destination

        check_destination(html)
    if evidence:
        if names:
            raise InvalidInputError("--evidence computes every benchmark of the tevet data "
                                    "set; give no NAME.")
        _evidence(metric or [], output, chosen, quiet)
        return
    from divmeter.studies.reproduce import reproduce

    with progress_bar(not quiet, label="reproducing") as callback:
        rep = reproduce(names or [], progress=callback)
    _print(rep, chosen, brief)
    if html is not None:
        from divmeter.report.reproduction import reproduction_html

        reproduction_html(rep, html)
        if not quiet:
            typer.echo(f"divmeter: report written to {html}", err=True)
    if not quiet:
        for p, why in rep.skipped.items():
            typer.echo(f"divmeter: note: {p} not reproduced: {why}", err=True)
    if not rep.ok:
        raise typer.Exit(1)


def _print(rep: object, chosen: str, brief: bool) -> None:
    from divmeter.report.reproduction import reproduction_markdown, reproduction_tables

    if chosen == "json":
        typer.echo(json.dumps(rep.to_dict(), indent=1))  # type: ignore[attr-defined]
    elif chosen == "markdown":
        typer.echo(reproduction_markdown(rep), nl=False)
    else:
        from rich.console import Console

        from divmeter.report.terminal import print_unbroken

        console = Console()
        print_unbroken(console, *reproduction_tables(rep, width=console.width, off_only=brief))


def _previous(output: str | None) -> dict | None:
    """The table an earlier run wrote to ``output`` (``None``: none, or not a table)."""
    import os

    if output is None or not os.path.isfile(output):
        return None
    try:
        with open(output, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        raise InvalidInputError(f"{output}: exists and is not an evidence table; name another "
                                "file.") from None
    if not isinstance(doc, dict) or "metrics" not in doc:
        raise InvalidInputError(f"{output}: exists and is not an evidence table; name another "
                                "file.")
    return doc


def _evidence(metrics: list[str], output: str | None, chosen: str, quiet: bool) -> None:
    from divmeter.apps.cli.progress import progress_bar
    from divmeter.studies.datasets import dataset_path
    from divmeter.studies.reproduce.evidence import (
        compute_evidence,
        evidence_from_dict,
        write_evidence,
    )

    root = dataset_path("tevet")

    def note(name: str, why: str) -> None:
        if not quiet:
            typer.echo(f"divmeter: note: {name} not covered: {why}", err=True)

    previous = _previous(output)
    with progress_bar(not quiet, label="evidence", within_sets=True) as callback:
        table = compute_evidence(
            root, metrics=metrics, progress=callback, on_error=note, previous=previous,
            on_metric=(lambda t: write_evidence(t, output)) if output is not None else None)
    if output is not None:
        write_evidence(table, output)
        if not quiet:
            typer.echo(f"divmeter: evidence table written to {output}", err=True)
        return
    if chosen == "json":
        typer.echo(json.dumps(table, indent=1, ensure_ascii=False))
        return
    from divmeter.report.evidence import ranking_markdown, ranking_tables

    ev = evidence_from_dict(table)
    if chosen == "markdown":
        typer.echo(ranking_markdown(ev), nl=False)
        return
    from rich.console import Console

    from divmeter.report.terminal import print_unbroken

    console = Console()
    print_unbroken(console, *ranking_tables(ev, width=console.width))
