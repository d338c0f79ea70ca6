"""``divmeter score``: score every set of a file with one or more metrics.

Parsing and printing only; the work is :func:`divmeter.runner.score_file`.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from divmeter.errors import InvalidInputError

__all__ = ["score_cmd"]

_OUT_FORMATS = ("table", "json", "jsonl", "csv", "parquet")

InputArg = Annotated[list[str], typer.Argument(
    help="Response sets: .jsonl, .json, .csv (long or Tevet wide form), .parquet, "
    "optionally .gz; '-' reads stdin. With -m cdm: a JSONL of instantiations. With --corpus: "
    "one or more shards (also .txt, one response a line, or a Hugging Face dataset: a "
    "save_to_disk folder or hf:NAME[:SPLIT[:COLUMN]]).", metavar="INPUT...",
    show_default=False)]
MetricOpt = Annotated[list[str], typer.Option(
    "--metric", "-m",
    help="Metric to compute, NAME[:k=v,...]; repeat for several (see `divmeter list`).",
    metavar="NAME[:k=v,...]", show_default=False)]
OutputOpt = Annotated[str | None, typer.Option(
    "--output", "-o",
    help="Write results here, streaming (format from the extension unless --format).",
    metavar="OUT")]
FormatOpt = Annotated[str | None, typer.Option(
    "--format", "-f",
    help="Output format: table, json, jsonl, csv, parquet. Default: from -o's "
    "extension; without -o a table on a terminal and JSONL when piped.", metavar="FORMAT")]
InputFormatOpt = Annotated[str | None, typer.Option(
    "--input-format", help="jsonl, json, csv or parquet (default: from the extension).",
    metavar="FORMAT")]
SummaryOpt = Annotated[bool, typer.Option(
    "--summary",
    help="Print mean, std, count and nulls per metric at the end (stderr, or after the "
    "table); with --format json also stored in the output as 'summary'.")]
ResumeOpt = Annotated[bool, typer.Option(
    "--resume", help="Skip the sets already in OUTPUT (from an interrupted run) and append.")]
WorkersOpt = Annotated[int, typer.Option(
    "--workers", "-j", help="Processes to spread the sets over.", min=1)]
SignaturesOpt = Annotated[bool, typer.Option(
    "--signatures", help="Add each metric's signature to every record.")]
QuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", help="No progress bar and no closing note.")]
CorpusOpt = Annotated[bool, typer.Option(
    "--corpus", help="Score all responses of all INPUT files (shards, in any order) as one "
    "corpus: one record per metric, from exactly merged per-shard statistics.")]
EngineOpt = Annotated[str, typer.Option(
    "--engine", help="local (default) or ray (pip install 'divmeter[dist]').",
    metavar="ENGINE")]
AddressOpt = Annotated[str | None, typer.Option(
    "--address", help="With --engine ray: the cluster (auto, ray://HOST:PORT); default: start "
    "a local one.", metavar="ADDRESS")]
CheckpointOpt = Annotated[str | None, typer.Option(
    "--checkpoint", help="With --corpus: keep the merged statistics here after every shard; "
    "rerunning with the same file resumes.", metavar="FILE")]
BudgetOpt = Annotated[float | None, typer.Option(
    "--memory-budget", help="With --corpus: MB of text buffered per batch is a quarter of this "
    "(default 256).", metavar="MB")]


def _destination(output: str | None, fmt: str | None, resume: bool) -> tuple[str | None, str]:
    """Where records go (``None``: a table on the terminal, ``"-"``: stdout) and the format."""
    if fmt is not None and fmt.lower() not in _OUT_FORMATS:
        raise InvalidInputError(f"--format must be one of {', '.join(_OUT_FORMATS)}; got {fmt!r}.")
    if output is not None and output != "-":
        if fmt is not None and fmt.lower() == "table":
            raise InvalidInputError(
                "--format table prints to the terminal; for a file use json, jsonl, csv or parquet."
            )
        return output, (fmt or "").lower()
    if resume:
        raise InvalidInputError("--resume needs an output file (-o OUT) to resume from.")
    chosen = (fmt or ("table" if sys.stdout.isatty() else "jsonl")).lower()
    if chosen == "parquet":
        raise InvalidInputError("Parquet output needs a file: add -o OUT.parquet.")
    return (None if chosen == "table" else "-"), chosen


def score_cmd(
    input: InputArg,
    metric: MetricOpt,
    output: OutputOpt = None,
    fmt: FormatOpt = None,
    input_format: InputFormatOpt = None,
    summary: SummaryOpt = False,
    resume: ResumeOpt = False,
    workers: WorkersOpt = 1,
    signatures: SignaturesOpt = False,
    quiet: QuietOpt = False,
    corpus: CorpusOpt = False,
    engine: EngineOpt = "local",
    address: AddressOpt = None,
    checkpoint: CheckpointOpt = None,
    memory_budget: BudgetOpt = None,
) -> None:
    """Score every response set in INPUT with the given metrics.

    One record per set: set_id, row (0-based position in INPUT; the key when ids repeat), label
    if the set has one, one column per metric (null when undefined, with the reason under
    'reasons'), and per-response values for response-level metrics.

    With --corpus: every response of every INPUT is one corpus; one record per metric (metric,
    value, signature, merge, responses, shards).

    Example: divmeter score examples/stories.jsonl -m distinct-n -m self-bleu:n=3 -o scores.jsonl
    """
    from divmeter.batch import resolve_metrics
    from divmeter.cli.progress import progress_bar
    from divmeter.runner import score_file

    resolve_metrics(metric)  # bad metrics and parameters before any option problem
    _check_engine(engine, address)
    if corpus:
        _corpus(input, metric, output, fmt, input_format, quiet, engine, address, checkpoint,
                memory_budget)
        return
    if checkpoint is not None or memory_budget is not None:
        raise InvalidInputError("--checkpoint and --memory-budget need --corpus "
                                "(per-set scoring resumes with --resume).")
    if len(input) != 1:
        raise InvalidInputError(
            f"divmeter score takes one INPUT file (or --corpus with several); got {len(input)}.")
    dest, out_fmt = _destination(output, fmt, resume)
    options: dict[str, Any] = dict(fmt=out_fmt or None, input_format=input_format,
                                   resume=resume, signatures=signatures,
                                   summary_in_output=summary)
    try:
        with progress_bar(not quiet and sys.stderr.isatty()) as callback:
            if engine == "ray":
                from divmeter.engines.ray import score_file_ray

                run = score_file_ray(input[0], metric, dest, progress=callback, address=address,
                                     **options)
            else:
                run = score_file(input[0], metric, dest, workers=workers, progress=callback,
                                 **options)
    except BrokenPipeError:  # e.g. `divmeter score ... | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(0) from None

    from rich.console import Console

    stats = run.summary.to_dict()
    if dest is None:
        Console().print(_results_table(run.records, run.columns, run.has_label))
        if summary:
            Console().print(_summary_table(stats))
    elif summary:
        Console(stderr=True).print(_summary_table(stats))
    if not quiet and dest not in (None, "-"):
        resumed = f" ({run.skipped} already there)" if run.skipped else ""
        nulls = ", ".join(f"{c}: {v['nulls']}" for c, v in stats["metrics"].items() if v["nulls"])
        typer.echo(f"divmeter: scored {run.scored} sets{resumed} -> {output}"
                   + (f"; nulls {nulls}" if nulls else ""), err=True)


def _check_engine(engine: str, address: str | None) -> None:
    if engine not in ("local", "ray"):
        raise InvalidInputError(f"--engine must be local or ray; got {engine!r}.")
    if address is not None and engine != "ray":
        raise InvalidInputError("--address needs --engine ray.")


def _corpus(inputs: list[str], metric: list[str], output: str | None, fmt: str | None,
            input_format: str | None, quiet: bool, engine: str, address: str | None,
            checkpoint: str | None, memory_budget: float | None) -> None:
    """``--corpus``: one record per metric (JSON objects one a line for json/jsonl)."""
    import json

    from divmeter.cli.progress import progress_bar
    from divmeter.corpus.run import score_corpus

    if "-" in inputs:
        raise InvalidInputError("--corpus reads files (shards), not stdin; got '-'.")
    chosen = (fmt or "").lower() or (
        "json" if output and output.endswith(".json") else
        "jsonl" if output else ("table" if sys.stdout.isatty() else "json"))
    if chosen not in ("table", "json", "jsonl"):
        raise InvalidInputError(f"--corpus prints table, json or jsonl; got {chosen!r}.")
    with progress_bar(not quiet and sys.stderr.isatty(), label="corpus") as callback:
        def prog(responses: int, done: int, total: int) -> None:
            if callback is not None:
                callback(done, total)

        run = score_corpus(inputs, metric, input_format=input_format,
                           memory_budget_mb=memory_budget, checkpoint=checkpoint, progress=prog,
                           engine=engine, address=address)
    if chosen == "table":
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"corpus: {run.records[0]['responses']} responses, "
                      f"{run.records[0]['shards']} shards", title_justify="left")
        for col in ("metric", "value", "merge", "signature"):
            table.add_column(col, overflow="fold")
        for r in run.records:
            table.add_row(r["metric"], _fmt_value(r["value"]), r["merge"], r["signature"])
        Console().print(table)
    else:
        text = "".join(json.dumps(r) + "\n" for r in run.records)
        if output and output != "-":
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    if not quiet:
        first = run.records[0]
        typer.echo(f"divmeter: corpus of {first['responses']} responses in {first['shards']} "
                   f"shards; {run.responses} responses read in {run.seconds:.2f} s "
                   f"({run.throughput:,.0f} responses/s, every pass)"
                   + (f"; {run.resumed_shards} shard passes from the checkpoint"
                      if run.resumed_shards else ""), err=True)


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
