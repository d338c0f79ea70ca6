"""``divmeter list``: the registered metrics, one line each, and ``divmeter list NAME`` details.

Both read the registry only (no metric module imports torch at registration), and both fit the
terminal: one section per family (``--family`` shows one), within it one row per metric
(set-level metrics first, then the response-level ones) whose description wraps in its own
column to the terminal's width (at least 24 characters wide), never cut.

The documentation site's metric catalogue is generated from the same registry, so it cannot
drift: ``divmeter list --format markdown`` prints the overview table, ``--update FILE`` replaces
the table between a file's ``metrics-table`` markers.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from divmeter.apps.cli.options import QuietOpt, VerboseOpt
from divmeter.core.errors import InvalidInputError

__all__ = ["list_cmd", "markdown_table", "write_readme_table"]

FAMILIES = ("form", "content", "lm", "judge")
#: What each family measures, in its section heading.
FAMILY_TITLES = {"form": "words and n-grams", "content": "embeddings",
                 "lm": "language-model surprise", "judge": "LLM judges"}
#: Order of the levels inside a family section.
LEVELS = ("set", "corpus", "pair", "response")
#: The markers around the generated table in README.md.
README_MARKERS = ("<!-- metrics-table:start (generated: divmeter list --format markdown "
                  "--update README.md) -->", "<!-- metrics-table:end -->")


def _ordered(specs: list[Any]) -> list[Any]:
    """Family, then level (set, corpus, pair, response), then name."""
    fam = {f: i for i, f in enumerate(FAMILIES)}
    lev = {g: i for i, g in enumerate(LEVELS)}
    return sorted(specs, key=lambda s: (fam.get(s.family, 9), lev.get(s.granularity, 9), s.name))


def _rows(specs: list[Any]) -> list[tuple[str, ...]]:
    # imported here: the report package loads scipy, and `divmeter list` stays light
    from divmeter.report.metric_text import direction_text, range_text, short_description

    return [(s.name, direction_text(s.higher_is_more_diverse), range_text(s.bounds),
             short_description(s.description)) for s in specs]


#: The narrowest description column; below it each description goes under its metric's line.
MIN_DESCRIPTION = 24


def _list_tables(specs: list[Any], width: int) -> list[Any]:
    """A heading per family and a table per level inside it (set, corpus, pair, response),
    all with the same column widths (taken over every listed metric); the description takes
    what is left of ``width`` and wraps there, whole words, never cut. On a terminal too narrow
    for a description column of :data:`MIN_DESCRIPTION` cells, each description is printed
    under its metric's line instead, wrapped to the terminal."""
    from rich.cells import cell_len
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    specs = _ordered(specs)
    rows = _rows(specs)
    header = ("name", "direction", "range", "description")
    # terminal cells, not characters: some rich versions count ↑ and ∞ as two cells
    widths = [max([cell_len(header[i])] + [cell_len(r[i]) for r in rows]) for i in range(3)]
    room = width - sum(widths) - 2 * 3
    stacked = room < MIN_DESCRIPTION
    out: list[Any] = []
    families = [f for f in FAMILIES if any(s.family == f for s in specs)]
    families += sorted({s.family for s in specs} - set(FAMILIES))
    for family in families:
        mine = [(s, r) for s, r in zip(specs, rows, strict=True) if s.family == family]
        out += ["", Text(f"{family}: {FAMILY_TITLES.get(family, family)} ({len(mine)})",
                         style="bold")]
        for level in dict.fromkeys(s.granularity for s, _ in mine):
            group = [r for s, r in mine if s.granularity == level]
            if stacked:
                out.append(Text(f"{level} level ({len(group)})", style="italic"))
                for r in group:
                    out += [Text("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True))
                                 .rstrip()), Padding(Text(r[3]), (0, 0, 0, 4))]
                continue
            table = Table(title=f"{level} level ({len(group)})", title_justify="left",
                          title_style="italic", box=None, pad_edge=False, header_style="bold",
                          width=width)
            for i, h in enumerate(header[:3]):  # min = max: the same on every rich version
                table.add_column(h, no_wrap=True, min_width=widths[i], max_width=widths[i])
            table.add_column("description", ratio=1, overflow="fold")
            for r in group:
                table.add_row(*r[:3], r[3])
            out.append(table)
    return out


def markdown_table(specs: list[Any] | None = None) -> str:
    """The metric overview table (the documentation's catalogue), from the registry: one row
    per metric, grouped by family and level as ``divmeter list`` shows them, with the extra each
    one needs.

    Example:
        >>> print(markdown_table()[:63])
        | metric | family | level | direction | range | needs | what it
    """
    from divmeter.engine.registry import list_metrics
    from divmeter.report.metric_text import range_text, short_description

    lines = ["| metric | family | level | direction | range | needs | what it measures |",
             "|---|---|---|---|---|---|---|"]
    for s in _ordered(list(list_metrics()) if specs is None else specs):
        needs = f"`{s.extra}` extra" if s.extra else "core"
        desc = short_description(s.description).replace("|", "\\|")
        lines.append(f"| `{s.name}` | {s.family} | {s.granularity} | "
                     f"{'higher' if s.higher_is_more_diverse else 'lower'} = more diverse | "
                     f"{range_text(s.bounds)} | {needs} | {desc} |")
    return "\n".join(lines) + "\n"


def write_readme_table(text: str, table: str | None = None) -> str:
    """``text`` (a Markdown page) with the part between :data:`README_MARKERS` replaced by
    :func:`markdown_table`.

    Raises:
        InvalidInputError: If the markers are missing or out of order.

    Example:
        >>> doc = "intro\\n" + "\\n".join(README_MARKERS) + "\\nrest\\n"
        >>> write_readme_table(doc, "| t |\\n").splitlines()[2]
        '| t |'
    """
    start, end = README_MARKERS
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise InvalidInputError(
            f"the metric table markers are missing; expected {start!r} then {end!r}.")
    body = markdown_table() if table is None else table
    return text[: i + len(start)] + "\n" + body + text[j:]


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
    from divmeter.report.evidence import metric_evidence
    from divmeter.studies.reproduce.evidence import load_evidence

    lines += ["", Text("evidence (what the benchmarks say; ranking: divmeter list --evidence)",
                       style="bold"), *metric_evidence(load_evidence(), spec.name)]
    return lines


def _print_details(console: Any, spec: Any) -> None:
    """``divmeter list NAME``: tables and prose fit the terminal; signatures stay whole."""
    from divmeter.report.terminal import print_unbroken

    for item in _details(spec):
        if isinstance(item, str):
            print_unbroken(console, item)
        else:
            console.print(item)


def list_cmd(
    name: Annotated[str | None, typer.Argument(
        help="A metric: print its parameters (types, defaults, choices), citation and an "
        "example command.", metavar="[NAME]", show_default=False)] = None,
    family: Annotated[str | None, typer.Option(
        "--family", help="Only this family: form, content, lm, judge.", metavar="FAMILY")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, json or markdown (the "
                                     "catalogue's overview table).", metavar="FORMAT")] = "table",
    update: Annotated[str | None, typer.Option(
        "--update", help="With --format markdown: replace the table between this file's "
        "metrics-table markers.", metavar="FILE")] = None,
    evidence: Annotated[bool, typer.Option(
        "--evidence", help="Rank the metrics per benchmark (conTest, decTest, McDiv_nuggets) "
        "by divmeter's evidence table: which metric to trust.")] = False,
    benchmark: Annotated[str | None, typer.Option(
        "--benchmark", help="With --evidence: only this benchmark.", metavar="NAME")] = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List every registered metric (name, family, direction, range, what it measures), or
    one metric's details with NAME. --format json gives every field, parameters included.

    Example: divmeter list self-bleu
    """
    from divmeter.core._version import __version__
    from divmeter.engine.registry import get_metric, list_metrics
    from divmeter.inputs.data.formats import check_format

    fmt = check_format(fmt, "list")
    if benchmark is not None and not evidence:
        raise InvalidInputError("--benchmark goes with --evidence.")
    if evidence:
        _evidence(name, family, fmt, benchmark)
        return
    if update is not None and (fmt != "markdown" or name or family):
        raise InvalidInputError("--update goes with --format markdown, for all metrics.")
    if family is not None and family not in FAMILIES:
        raise InvalidInputError(
            f"--family must be one of {', '.join(FAMILIES)}; got {family!r}.")
    if name is not None and family is not None:
        raise InvalidInputError("give a metric NAME or --family, not both.")
    from rich.console import Console

    console = Console()
    if name is not None:
        spec = get_metric(name)
        if fmt == "markdown":
            typer.echo(markdown_table([spec]), nl=False)
            return
        if fmt == "json":
            from divmeter.studies.reproduce.evidence import load_evidence

            ev = load_evidence()
            typer.echo(json.dumps({**spec.to_dict(), "evidence": ev.entry(spec.name) or {
                "not_covered": ev.why_not(spec.name)}}, indent=2))
            return
        _print_details(console, spec)
        return
    specs = list_metrics(family)
    if fmt == "markdown":
        table = markdown_table(specs)
        if update is None:
            typer.echo(table, nl=False)
        else:
            _update_file(update, table)
        return
    if fmt == "json":
        typer.echo(json.dumps([s.to_dict() for s in specs], indent=2))
        return
    plural = "" if len(specs) == 1 else "s"
    what = f"{family} metric{plural}" if family else (
        f"metric{plural} in {len({s.family for s in specs})} families")
    console.print(f"[bold]divmeter {__version__}: {len(specs)} {what}[/bold]")
    for item in _list_tables(specs, console.width):
        console.print(item)
    console.print("\ndetails: divmeter list NAME" + ("" if family else
                                                       "; one family: --family form"))


def _evidence(name: str | None, family: str | None, fmt: str, benchmark: str | None) -> None:
    """``divmeter list --evidence``: the metrics ranked per benchmark."""
    from divmeter.engine.registry import list_metrics
    from divmeter.report.evidence import ranking_markdown, ranking_tables
    from divmeter.studies.reproduce.evidence import BENCHMARKS, load_evidence

    if name is not None:
        raise InvalidInputError("--evidence ranks every metric; for one metric's evidence use "
                                "divmeter list NAME.")
    if benchmark is not None and benchmark not in BENCHMARKS:
        raise InvalidInputError(f"--benchmark must be one of {', '.join(BENCHMARKS)}; got "
                                f"{benchmark!r}.")
    ev = load_evidence()
    metrics = [s.name for s in list_metrics(family)]
    if fmt == "json":
        typer.echo(json.dumps({b: [{"metric": m, "mean": mean, "per_task": per}
                                   for m, mean, per in ev.ranking(b, metrics)]
                               for b in ([benchmark] if benchmark else BENCHMARKS)}
                              | {"signature": ev.signature, "date": ev.date}, indent=2))
        return
    if fmt == "markdown":
        typer.echo(ranking_markdown(ev, benchmark=benchmark, metrics=metrics), nl=False)
        return
    from rich.console import Console

    from divmeter.report.terminal import print_unbroken

    console = Console()
    print_unbroken(console, *ranking_tables(ev, benchmark=benchmark, metrics=metrics,
                                            width=console.width))


def _update_file(path: str, table: str) -> None:
    from pathlib import Path

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read it ({exc.strerror}).") from None
    new = write_readme_table(text, table)
    if new != text:
        file.write_text(new, encoding="utf-8")
