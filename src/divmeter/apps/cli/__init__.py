"""Command-line interface: parse, call the library, format. No logic of its own.

Subcommands live in sibling modules (``score``, ``meta``) and are mounted here.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from typing import Annotated, Literal

import typer

from divmeter.core._version import __version__
from divmeter.core.errors import DivmeterError

#: Shown under every ``--help``: what the exit code of any command means.
EXIT_CODES = ("Exit codes: 0 ok; 1 the run produced nothing usable (e.g. no valid judge "
              "rating); 2 refused: bad input (file, option or metric) or an internal error (a "
              "divmeter bug: please report it); 130 interrupted. Errors, warnings and progress "
              "go to stderr, results to stdout or -o.")

app = typer.Typer(
    name="divmeter",
    help="Measure how diverse sets of generated texts are, and which diversity metric to trust.",
    epilog=EXIT_CODES,
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
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    _state["debug"] = debug
    from divmeter.inputs.data.outputs import command_paths

    # the paths this command reads and writes, checked by the one guard (inputs/data/paths.py)
    # until the command ends, however it ends
    ctx.with_resource(command_paths())


_PLAIN_TYPES = {"int": "INT", "int range": "INT", "float": "NUMBER", "float range": "NUMBER",
                "str": "TEXT", "bool": "FLAG", "list[str]": "TEXT", "list[int]": "INT",
                "list[float]": "NUMBER"}


def _plain_metavars() -> None:
    """Help shows ``FLAG``, ``INT``, ``TEXT`` (and each option's own metavar, e.g.
    ``NAME[:k=v,...]``) instead of typer's ``<bool>``, ``<list[str]>``.

    One patch of typer's option display here, so every command (those other modules add
    included, and the help option itself) reads the same. ``display_type_rich`` is a private
    hook of recent typers only: where it is missing (typer 0.12 to 0.20 and 0.27 among the
    versions ``pyproject.toml`` allows) help keeps typer's own type names and nothing is patched.
    """
    try:
        from typer.core import TyperArgument, TyperOption
    except ImportError:  # pragma: no cover - typer without its click-based core module
        return
    original = getattr(TyperOption, "display_type_rich", None)
    if not callable(original) or not hasattr(TyperArgument, "display_type_rich"):
        return
    # an argument's name (INPUT, FILE...) says what it is; its type adds nothing
    TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
    if getattr(original, "_divmeter", False):
        return

    def display_type_rich(self: TyperOption, ctx: object) -> str | None:
        if self.metavar is None and self.is_flag:
            return "FLAG"
        shown = original(self, ctx)  # type: ignore[arg-type]
        if shown and shown.startswith("<") and shown.endswith(">"):
            inner = shown[1:-1]
            return _PLAIN_TYPES.get(inner, inner.upper())
        return shown

    display_type_rich._divmeter = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


#: What ``divmeter`` mounts, in this order: (its name, the module of :mod:`divmeter.apps.cli`
#: that holds it, the command or typer app there, and the module whose absence leaves it out,
#: a trimmed install's, or ``None``). A name ``group command`` mounts on that group.
_MOUNTS: tuple[tuple[str, str, str, str | None], ...] = (
    ("list", "listing", "list_cmd", None),
    ("report", "report", "report_cmd", None),
    ("score", "score", "score_cmd", "score"),
    ("meta", "meta", "meta_app", "meta"),
    ("meta agreement", "agreement", "agreement_cmd", "meta"),
    ("compare", "compare", "compare_cmd", "meta"),
    ("annotate", "annotate", "annotate_app", "annotate"),
    ("build", "build", "build_app", "build"),
    ("judge", "judge", "judge_cmd", None),
    ("generate", "generate", "generate_cmd", "generate"),
    ("data", "data", "data_app", None),
    ("reproduce", "reproduce", "reproduce_cmd", None),
    ("embed-parity", "backends", "embed_parity_cmd", "backends"),
)


def _mount() -> None:
    """Every command and group of :data:`_MOUNTS` on :data:`app`."""
    import importlib
    import importlib.util

    groups: dict[str, typer.Typer] = {}
    for name, module, attr, needs in _MOUNTS:
        if needs and importlib.util.find_spec(f"divmeter.apps.cli.{needs}") is None:
            continue
        found = getattr(importlib.import_module(f"divmeter.apps.cli.{module}"), attr)
        group, _, name = name.rpartition(" ")
        if isinstance(found, typer.Typer):
            groups[name] = found
            app.add_typer(found, name=name)
        else:
            (groups[group] if group else app).command(name)(found)


#: How every ``--help`` reads its texts: as Markdown, so a docstring's paragraphs are wrapped
#: to the terminal (typer's "rich" mode keeps a docstring's hard line breaks, which broke
#: sentences mid-line) and brackets are text (rich markup ate ``[dist]`` of ``'divmeter[dist]'``).
HELP_MARKUP: Literal["markdown"] = "markdown"


def _epilogs(typer_app: typer.Typer) -> None:
    """The exit codes under every command's ``--help``, not only the top one, and the same
    help rendering (:data:`HELP_MARKUP`) for every group."""
    typer_app.rich_markup_mode = HELP_MARKUP
    typer_app.info.epilog = typer_app.info.epilog or EXIT_CODES
    for cmd in typer_app.registered_commands:
        cmd.epilog = cmd.epilog or EXIT_CODES
    for group in typer_app.registered_groups:
        group.epilog = group.epilog or EXIT_CODES
        if group.typer_instance is not None:
            _epilogs(group.typer_instance)


_plain_metavars()
_mount()
_epilogs(app)


def main() -> None:
    """Console-script entry: one-line errors on stderr, exit code 2 for bad input."""
    debug = "--debug" in sys.argv[1:]
    try:
        # Without standalone mode typer turns Ctrl-C and typer.Exit into a returned exit code.
        rv = app(standalone_mode=False)
        if rv == 130:
            _interrupted()
        if isinstance(rv, int) and not isinstance(rv, bool) and rv:
            sys.exit(rv)
    except DivmeterError as exc:
        if debug:
            raise
        _fail(str(exc))
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        if debug:
            raise
        _fail(f"{exc.strerror}: {exc.filename}")
    except OSError as exc:  # the system refused a read or a write (full disk, I/O error, ...)
        if debug or isinstance(exc, BrokenPipeError):
            raise
        where = f": {exc.filename}" if exc.filename else ""
        _fail(f"{exc.strerror or exc}{where}")
    except sqlite3.Error as exc:  # a --db / DB that is not a study database (or is damaged)
        if debug:
            raise
        _fail(f"database error: {' '.join(str(exc).split())} (is it a divmeter study database, "
              "and is its folder writable?)")
    except MemoryError:
        if debug:
            raise
        _fail("not enough memory for this run; use smaller inputs or parameters (see "
              "--max-memory where a command has it).")
    except KeyboardInterrupt:
        _interrupted()
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # usage errors of the CLI framework (typer vendors click)
        name = type(exc).__name__
        if name == "Abort":
            sys.exit(1)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(int(exc.exit_code) or 2)
        if debug:
            raise
        # a bug of divmeter: one line (no traceback unless --debug), exit code 2 like every
        # other refusal at the boundary (1 is kept for runs that produced nothing usable)
        text = " ".join(str(exc).split())[:300]
        typer.echo(_redacted(f"divmeter: internal error: {name}: {text} (rerun with --debug "
                             "for the traceback, and please report it)"), err=True)
        sys.exit(2)


def _interrupted() -> None:
    """Say so and exit 130; a second Ctrl-C while the run winds down changes nothing."""
    import signal

    # the process is ending: a Ctrl-C still in flight (the second of two) is not raised
    # while it exits, so the status stays 130
    with contextlib.suppress(ValueError):  # not the main thread: nothing to hold off
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    typer.echo("divmeter: interrupted (what was written so far is kept).", err=True)
    sys.exit(130)


def _redacted(line: str) -> str:
    from divmeter.core.redact import redact

    return redact(line)


def _fail(message: str) -> None:
    """Bad input: one line on stderr (secrets redacted, on one line), exit code 2."""
    # any line break (also \v, \f, \x1c-\x1e, \x85, \u2028 from a file's own text) is folded
    text = " ".join(message.split()) if len((message + ".").splitlines()) > 1 else message
    typer.echo(_redacted(f"divmeter: error: {text}"), err=True)
    sys.exit(2)
