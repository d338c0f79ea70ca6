"""``divmeter report``: one self-contained HTML page from score outputs and meta reports."""

from __future__ import annotations

from typing import Annotated

import typer

from divmeter.apps.cli.options import QuietOpt, VerboseOpt

__all__ = ["report_cmd"]


def report_cmd(
    results: Annotated[list[str], typer.Argument(
        help="divmeter score outputs (.jsonl, .json, .csv, .parquet) and/or meta report.json "
        "files (from meta ... --report DIR).", metavar="RESULTS...", show_default=False)],
    output: Annotated[str, typer.Option(
        "--output", "-o", help="The .html file to write.", metavar="REPORT.html",
        show_default=False)],
    title: Annotated[str, typer.Option("--title", help="Page title.", metavar="TEXT")
                     ] = "divmeter report",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Write one self-contained HTML report (no network: styles, scripts and plots inline):
    signatures, summary table, per-metric distributions, metric-metric correlations, the sets.

    Example: divmeter report scores.jsonl -o report.html
    """
    from divmeter.inputs.data.paths import guard_outputs
    from divmeter.report.html import report_from_files

    guard_outputs({"-o": output}, results)
    path = report_from_files(results, output, title=title)
    if not quiet:
        typer.echo(f"divmeter: report written to {path}", err=True)
