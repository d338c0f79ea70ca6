"""The options every command shares, ``--quiet`` and ``--verbose`` (issue 15: the same in every
command), and the one place that decides what goes to stderr.

* ``-q``/``--quiet``: nothing on stderr but errors: no progress bar, note or summary from
  divmeter, and the model libraries' progress bars and info logs switched off too (through
  environment switches that worker processes inherit,
  :func:`divmeter.apps.cli.progress.quiet_libraries`).
* default: progress bars (on a terminal), notes and summaries; divmeter's info log (for example
  "loading MODEL (first use converts it into CACHE ...)") shows once.
* ``-v``/``--verbose``: also divmeter's debug log (which model was loaded from where and in how
  long) and the command's wall time at the end.

Both at once is a usage error (exit code 2). Each command declares them in its signature,
``quiet: QuietOpt = False, verbose: VerboseOpt = False``; the options' callbacks set the state
for the whole process, so a command body reads ``quiet`` only for its own notes.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import sys
import time
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from divmeter.core.errors import InvalidInputError

__all__ = ["QuietOpt", "VerboseOpt", "LOGGER", "is_quiet", "note", "capped", "SEED_CAP",
           "option_group"]

#: The largest seed an option takes (every generator divmeter seeds accepts it: numpy, torch,
#: UMAP and scikit-learn's random states, a server's sampling seed).
SEED_CAP = 2**32 - 1

#: The logger of the library (``divmeter`` and its children, e.g. ``divmeter.studies.generation``).
LOGGER = logging.getLogger("divmeter")
_META = "divmeter.verbosity"
_state = {"quiet": False}


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("divmeter: %(message)s"))

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


_HANDLER = _StderrHandler()


def _apply(ctx: typer.Context, key: str, value: bool) -> bool:
    flags = ctx.meta.setdefault(_META, {"quiet": False, "verbose": False})
    flags[key] = bool(value)
    if flags["quiet"] and flags["verbose"]:
        raise InvalidInputError("--quiet and --verbose exclude each other; give one of them.")
    _state["quiet"] = flags["quiet"]
    if LOGGER.handlers != [_HANDLER]:
        for h in list(LOGGER.handlers):
            LOGGER.removeHandler(h)
        LOGGER.addHandler(_HANDLER)
    LOGGER.propagate = False
    LOGGER.setLevel(logging.ERROR if flags["quiet"] else
                    logging.DEBUG if flags["verbose"] else logging.INFO)
    if flags["quiet"]:
        from divmeter.apps.cli.progress import quiet_libraries

        quiet_libraries()
    if key == "verbose" and value:
        t0 = time.perf_counter()
        name = ctx.command_path.split(" ", 1)[-1]  # "meta dectest", without "divmeter"
        ctx.call_on_close(lambda: LOGGER.debug("%s took %.1f s", name, time.perf_counter() - t0))
    return bool(value)


def _on_quiet(ctx: typer.Context, value: bool) -> bool:
    return _apply(ctx, "quiet", value)


def _on_verbose(ctx: typer.Context, value: bool) -> bool:
    return _apply(ctx, "verbose", value)


QuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", callback=_on_quiet,
    help="Nothing on stderr but errors: no progress, notes or summary (model libraries too).")]
VerboseOpt = Annotated[bool, typer.Option(
    "--verbose", "-v", callback=_on_verbose,
    help="Also log details on stderr: models loaded (from where, how long), time taken.")]


def capped(cap: int, low: int | None = None) -> Any:
    """The callback of an integer option that counts something costly (resamples, workers,
    samples, tokens, ...): a value above ``cap`` (or below ``low``) is refused in one line
    before the command runs ("--bootstrap must be an integer from 0 to 10,000,000; got
    1,000,000,000.").
    Every integer option of the CLI declares one (``tests/test_hostile_sweep.py`` walks them);
    the cap is the callback's ``cap``.

    Example:
        >>> capped(10, low=1).cap
        10
    """

    def check(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if ctx.resilient_parsing or value is None:
            return value
        name = max(param.opts, key=len) if param.opts else str(param.name)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            shown = f"{v:,}" if abs(v) < 10**15 else f"a {len(str(abs(v)))}-digit number"
            if (low is not None and v < low) or v > cap:
                allowed = f"at most {cap:,}" if low is None else (
                    f"an integer from {low:,} to {cap:,}")
                raise InvalidInputError(f"{name} must be {allowed}; got {shown}.")
        return value

    check.cap = cap  # type: ignore[attr-defined]
    return check


def is_quiet() -> bool:
    """Whether the running command was given ``--quiet``."""
    return _state["quiet"]


def note(msg: str) -> None:
    """A note on stderr (``divmeter: note: MSG``), unless ``--quiet``."""
    if not _state["quiet"]:
        typer.echo(f"divmeter: note: {msg}", err=True)


_Command = TypeVar("_Command", bound=Callable[..., Any])


def option_group(command: _Command) -> _Command:
    """Let ``command`` take a group of options as one argument.

    A parameter annotated with a dataclass whose fields are typer options (e.g.
    :class:`divmeter.apps.cli.meta.Output`; arguments too, and a field without a default is
    required) stands, in ``--help`` and on the command line, for those options in the fields'
    order, where the parameter is; the command receives one instance. Commands that share the
    options declare the dataclass once instead of repeating its fields in every signature.
    """
    groups: dict[str, Any] = {}
    params = []
    for p in inspect.signature(command, eval_str=True).parameters.values():
        if not dataclasses.is_dataclass(p.annotation):
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
            continue
        groups[p.name] = p.annotation
        hints = typing.get_type_hints(p.annotation, include_extras=True)
        params += [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                                     default=inspect.Parameter.empty
                                     if f.default is dataclasses.MISSING else f.default,
                                     annotation=hints[f.name])
                   for f in dataclasses.fields(p.annotation)]

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        for name, group in groups.items():
            kwargs[name] = group(**{f.name: kwargs.pop(f.name)
                                    for f in dataclasses.fields(group)})
        return command(**kwargs)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    # what typing.get_type_hints(run) reads (typer, and the tests that walk every option)
    run.__annotations__ = {p.name: p.annotation for p in params}
    return typing.cast(_Command, run)
