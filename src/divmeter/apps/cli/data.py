"""``divmeter data``: the benchmark data a user can fetch (list, fetch, path, verify).

Parsing and printing only; the registry and the atomic, verified fetcher are
:mod:`divmeter.studies.datasets`.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from divmeter.apps.cli.options import QuietOpt, VerboseOpt

data_app = typer.Typer(
    name="data",
    help="Benchmark data sets: list them, fetch one (verified, into the cache), print its "
    "folder, verify it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

NameArg = Annotated[str, typer.Argument(help="A data set (see divmeter data list).",
                                        metavar="NAME", show_default=False)]
FormatOpt = Annotated[str | None, typer.Option(
    "--format", "-f", help="table or json (default: table on a terminal, json when piped).",
    metavar="FORMAT", show_default=False)]


def _format(fmt: str | None) -> str:
    from divmeter.inputs.data.formats import check_format, default_format

    return default_format("data", terminal=sys.stdout.isatty()) if fmt is None \
        else check_format(fmt, "data")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


@data_app.command("list")
def list_cmd(fmt: FormatOpt = None, quiet: QuietOpt = False, verbose: VerboseOpt = False
             ) -> None:
    """The known data sets: name, what they hold, size, citation, and whether (and where) each
    is fetched.

    Example: divmeter data list
    """
    from divmeter.studies.datasets import list_datasets, status

    rows = [{**d.to_dict(), **status(d.name)} for d in list_datasets()]
    if _format(fmt) == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        where = f"fetched: {r['path']}" if r["fetched"] else \
            f"not fetched (divmeter data fetch {r['name']})"
        typer.echo(f"{r['name']}  {r['files']} files, {_mb(r['bytes'])}; {where}\n"
                   f"  {r['title']}\n  cite: {r['citation']}\n"
                   f"  from: {r['repository']} at {r['commit'][:12]}")


@data_app.command("fetch")
def fetch_cmd(
    name: NameArg,
    source: Annotated[str | None, typer.Option(
        "--from", help="Take the files from this local copy instead of downloading them (a "
        "checkout of the source repository, or a copy of a fetched folder): for a machine "
        "without internet. Every file is checked against the manifest all the same.",
        metavar="DIR", show_default=False)] = None,
    mirror: Annotated[str | None, typer.Option(
        "--mirror", help="Download from this base URL (the files at their repository paths) "
        "instead of the pinned raw URLs.", metavar="URL", show_default=False)] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Fetch again even when the cache holds a verified copy.")] = False,
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Seconds to wait for a connection and for each read.", min=1.0)
    ] = 60.0,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Download a data set (or copy it --from a local folder), check every file's size and
    SHA-256 against the manifest, and only then put it in the cache ($DIVMETER_CACHE/data):
    an interrupted or corrupted fetch leaves nothing behind. Prints where it came from and what
    to cite.

    Example: divmeter data fetch tevet
    """
    from divmeter.apps.cli.progress import progress_bar
    from divmeter.studies.datasets import fetch, get_dataset

    ds = get_dataset(name)
    with progress_bar(not quiet, ds.total_bytes, label=f"fetching {name}") as callback:
        res = fetch(name, source=source, mirror=mirror, force=force, timeout=timeout,
                    progress=callback)
    how = "already in the cache, verified" if res.cached else \
        f"{len(ds.files)} files, {_mb(ds.total_bytes)}, every sha256 checked"
    typer.echo(f"{name}: {res.path} ({how})")
    if not quiet:
        typer.echo(f"  from: {res.origin}\n  source: {ds.source}\n  cite: {ds.citation}",
                   err=True)


@data_app.command("path")
def path_cmd(name: NameArg, quiet: QuietOpt = False, verbose: VerboseOpt = False) -> None:
    """Print the folder of a fetched data set (exit code 2 if it is not fetched).

    Example: ls "$(divmeter data path tevet)/conTest"
    """
    from divmeter.studies.datasets import dataset_path

    typer.echo(str(dataset_path(name)))


@data_app.command("verify")
def verify_cmd(
    name: Annotated[str | None, typer.Argument(
        help="A data set (default: every fetched one).", metavar="[NAME]",
        show_default=False)] = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Hash every file of a fetched data set again and compare with the manifest; exit code 1
    when a file is missing or changed (each one named).

    Example: divmeter data verify tevet
    """
    from divmeter.studies.datasets import list_datasets, status, verify

    names = [name] if name is not None else [d.name for d in list_datasets()
                                             if status(d.name)["fetched"]]
    bad = 0
    for n in names:
        problems = verify(n)
        bad += len(problems)
        if problems:
            for p in problems:
                typer.echo(f"{n}: {p}", err=True)
        else:
            typer.echo(f"{n}: ok (every file matches the manifest)")
    if not names:
        typer.echo("no data set is fetched (divmeter data list).", err=True)
    if bad:
        raise typer.Exit(1)
