"""Command-line interface: parse, call the library, format. No logic of its own.

Subcommands live in sibling modules (``score``, ``meta``) and are mounted here.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from divmeter import __version__
from divmeter.errors import DivmeterError, InvalidInputError

app = typer.Typer(
    name="divmeter",
    help="Measure how diverse sets of generated texts are, and which diversity metric to trust.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"divmeter {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    _state["debug"] = debug


@app.command("list")
def list_cmd(
    family: Annotated[
        str | None, typer.Option("--family", help="Only this family: form, content, lm, judge.")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """List every registered metric with its family, granularity, direction and parameters
    (each as name: type and constraint = default; --format json adds each one's doc)."""
    from divmeter.params import describe
    from divmeter.registry import list_metrics

    specs = list_metrics(family)
    if fmt == "json":
        typer.echo(json.dumps([s.to_dict() for s in specs], indent=2))
        return
    if fmt != "table":
        raise InvalidInputError(f"--format must be table or json; got {fmt!r}.")
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"divmeter {__version__}: {len(specs)} metrics")
    for col in ("name", "family", "granularity", "direction", "params", "needs", "description"):
        table.add_column(col, overflow="fold")
    for s in specs:
        params = "\n".join(f"{k}: {describe(p)}" for k, p in s.schema.items())
        table.add_row(
            s.name,
            s.family,
            s.granularity,
            "higher" if s.higher_is_more_diverse else "lower",
            params,
            f"divmeter[{s.extra}]" if s.extra else "core",
            s.description,
        )
    Console().print(table)


def _mount() -> None:
    import importlib.util

    if importlib.util.find_spec("divmeter.cli.score") is not None:
        from divmeter.cli.score import score_cmd

        app.command("score")(score_cmd)
    if importlib.util.find_spec("divmeter.cli.meta") is not None:
        from divmeter.cli.meta import meta_app

        app.add_typer(meta_app, name="meta")
    if importlib.util.find_spec("divmeter.cli.annotate") is not None:
        from divmeter.cli.annotate import annotate_app

        app.add_typer(annotate_app, name="annotate")


_mount()


def main() -> None:
    """Console-script entry: one-line errors on stderr, exit code 2 for bad input."""
    debug = "--debug" in sys.argv[1:]
    try:
        # Without standalone mode typer turns Ctrl-C and typer.Exit into a returned exit code.
        rv = app(standalone_mode=False)
        if rv == 130:
            typer.echo("divmeter: interrupted (what was written so far is kept).", err=True)
        if isinstance(rv, int) and not isinstance(rv, bool) and rv:
            sys.exit(rv)
    except DivmeterError as exc:
        if debug:
            raise
        typer.echo(f"divmeter: error: {exc}", err=True)
        sys.exit(2)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        if debug:
            raise
        typer.echo(f"divmeter: error: {exc.strerror}: {exc.filename}", err=True)
        sys.exit(2)
    except OSError as exc:  # the system refused a read or a write (full disk, I/O error, ...)
        if debug or isinstance(exc, BrokenPipeError):
            raise
        where = f": {exc.filename}" if exc.filename else ""
        typer.echo(f"divmeter: error: {exc.strerror or exc}{where}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("divmeter: interrupted (what was written so far is kept).", err=True)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # usage errors of the CLI framework (typer vendors click)
        name = type(exc).__name__
        if name == "Abort":
            sys.exit(1)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(int(exc.exit_code) or 2)
        raise
