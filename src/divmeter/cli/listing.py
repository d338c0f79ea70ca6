"""``divmeter list``: the registered metrics, one line each, and ``divmeter list NAME`` details.

Both read the registry only (no metric module imports torch at registration), and both fit an
80-column terminal: one row per metric with a one-line description cut with an ellipsis, never
a table whose description wraps one word per line.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from divmeter.cli.options import QuietOpt, VerboseOpt
from divmeter.errors import InvalidInputError

__all__ = ["list_cmd"]

FAMILIES = ("form", "content", "lm", "judge")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)].rstrip() + "…"


def _list_table(specs: list[Any], title: str, width: int) -> Any:
    """One row per metric; the description takes what is left of ``width`` (at least 24)."""
    from rich.table import Table

    # imported here: the report package loads scipy, and `divmeter list` stays light
    from divmeter.report.metric_text import direction_text, range_text, short_description

    rows = [(s.name, s.family, direction_text(s.higher_is_more_diverse), range_text(s.bounds),
             short_description(s.description)) for s in specs]
    header = ("name", "family", "direction", "range", "description")
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(4)]
    room = max(24, width - sum(widths) - 2 * 4)
    table = Table(title=title, title_justify="left", box=None, pad_edge=False,
                  header_style="bold", caption="details: divmeter list NAME",
                  caption_justify="left")
    for i, h in enumerate(header[:4]):
        table.add_column(h, no_wrap=True, width=widths[i])
    table.add_column("description", no_wrap=True, width=room)
    for r in rows:
        table.add_row(*r[:4], _cut(r[4], room))
    return table


def _params_table(spec: Any) -> Any:
    from rich.table import Table

    table = Table(title="parameters", title_justify="left", box=None, pad_edge=False,
                  header_style="bold")
    table.add_column("name", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("default", overflow="fold", max_width=16)
    table.add_column("allowed / meaning", overflow="fold", min_width=30, ratio=1)
    for k, p in spec.schema.items():
        d = p.to_dict()
        allowed = d.get("constraint", "any value")
        if p.doc:
            allowed += f". {p.doc}"
        table.add_row(k, p.type_name(), json.dumps(d["default"]), allowed)
    return table


def _details(spec: Any) -> list[Any]:
    from rich.markup import escape
    from rich.text import Text

    from divmeter.report.metric_text import example_command, range_text

    lines: list[Any] = [
        Text(spec.name, style="bold"),
        Text(spec.description),
        "",
        f"family       {spec.family}",
        f"granularity  {spec.granularity}",
        "direction    " + ("higher = more diverse" if spec.higher_is_more_diverse
                           else "lower = more diverse"),
        f"range        {range_text(spec.bounds)}",
        "needs        " + escape(f"pip install 'divmeter[{spec.extra}]'" if spec.extra
                                 else "the core install"),
        f"corpus merge {spec.merge}",
        "",
    ]
    if spec.schema:
        lines.append(_params_table(spec))
    else:
        lines.append("parameters   none")
    lines += ["", Text("citation", style="bold"), Text(spec.citation), "",
              Text("example", style="bold"), Text(example_command(spec))]
    return lines


def list_cmd(
    name: Annotated[str | None, typer.Argument(
        help="A metric: print its parameters (types, defaults, choices), citation and an "
        "example command.", metavar="[NAME]", show_default=False)] = None,
    family: Annotated[str | None, typer.Option(
        "--family", help="Only this family: form, content, lm, judge.", metavar="FAMILY")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.", metavar="FORMAT")
                   ] = "table",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List every registered metric (name, family, direction, range, what it measures), or
    one metric's details with NAME. --format json gives every field, parameters included.

    Example: divmeter list self-bleu
    """
    from divmeter._version import __version__
    from divmeter.registry import get_metric, list_metrics

    if fmt not in ("table", "json"):
        raise InvalidInputError(f"--format must be table or json; got {fmt!r}.")
    if family is not None and family not in FAMILIES:
        raise InvalidInputError(
            f"--family must be one of {', '.join(FAMILIES)}; got {family!r}.")
    if name is not None and family is not None:
        raise InvalidInputError("give a metric NAME or --family, not both.")
    from rich.console import Console

    console = Console()
    if name is not None:
        spec = get_metric(name)
        if fmt == "json":
            typer.echo(json.dumps(spec.to_dict(), indent=2))
            return
        for item in _details(spec):
            console.print(item)
        return
    specs = list_metrics(family)
    if fmt == "json":
        typer.echo(json.dumps([s.to_dict() for s in specs], indent=2))
        return
    what = f"{family} metrics" if family else "metrics"
    console.print(_list_table(specs, f"divmeter {__version__}: {len(specs)} {what}",
                              console.width))
