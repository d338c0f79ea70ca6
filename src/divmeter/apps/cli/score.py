"""``divmeter score``: score every set of a file with one or more metrics.

Parsing and printing only; the work is :func:`divmeter.engine.runner.score_file`.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from divmeter.apps.cli.meta import MAX_WORKERS
from divmeter.apps.cli.options import QuietOpt, VerboseOpt, capped
from divmeter.core.errors import InvalidInputError

__all__ = ["score_cmd"]

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
    help="Output format: table, markdown, json, jsonl, csv, parquet. Default: from -o's "
    "extension (.md: markdown); without -o a table on a terminal and JSONL when piped.",
    metavar="FORMAT")]
InputFormatOpt = Annotated[str | None, typer.Option(
    "--input-format", help="jsonl, json, csv or parquet (default: from the extension).",
    metavar="FORMAT")]
SummaryOpt = Annotated[bool, typer.Option(
    "--summary",
    help="Print mean, std, count and nulls per metric at the end (stderr, or after the "
    "table or markdown). JSON output always holds it as 'summary'.")]
ResumeOpt = Annotated[bool, typer.Option(
    "--resume", help="Skip the sets already in OUTPUT (from an interrupted run) and append.")]
WorkersOpt = Annotated[int, typer.Option(
    "--workers", "-j",
    callback=capped(MAX_WORKERS, low=1), help="Processes to spread the sets over.", min=1)]
SignaturesOpt = Annotated[bool, typer.Option(
    "--signatures/--no-signatures", help="Keep each metric's signature in every record "
    "(a 'signatures' field; Parquet also in its schema metadata). --resume checks them.")]
SplitOpt = Annotated[str | None, typer.Option(
    "--split", help="hf: inputs: the split (default: test if there is one, else the first).",
    metavar="SPLIT")]
TextColumnOpt = Annotated[str, typer.Option(
    "--text-column", help="Long form (one response a row): the column of texts; hf: inputs "
    "without --group-by: a column holding a list per row.", metavar="COLUMN")]
GroupByOpt = Annotated[list[str] | None, typer.Option(
    "--group-by", help="Long form (one response a row; CSV, JSONL, Parquet or hf:) without a "
    "set_id column: the column(s) telling the sets apart (e.g. prompt); repeatable. A set's id "
    "is their values joined with |.", metavar="COLUMN", show_default=False)]
LabelColumnOpt = Annotated[str | None, typer.Option(
    "--label-column", help="Long form or hf: inputs: a column holding each set's label.",
    metavar="COLUMN")]
HtmlOpt = Annotated[str | None, typer.Option(
    "--html", help="Also write a self-contained HTML report here (summary, signatures, "
    "distributions, correlations).", metavar="REPORT.html")]
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
    "--memory-budget", help="With --corpus: MB for the text batches and the n-gram statistics; "
    "past it the statistics spill to disk as sorted runs (TMPDIR) and merge at the end, with "
    "the same values (default: no bound, 64 MB batches).", metavar="MB")]
VectorsOpt = Annotated[str | None, typer.Option(
    "--vectors", help="Precomputed embeddings for the metrics that take vectors: a .npy file "
    "(rows follow the responses in file order) or the field/column holding each set's vectors "
    "(a list of lists; Parquet long form: a list per row). A .npy INPUT needs no --vectors.",
    metavar="FILE.npy|FIELD")]
MaxMemoryOpt = Annotated[str | None, typer.Option(
    "--max-memory", help="Memory limit of pairwise and kernel metrics (vendi-ngram, chamfer, "
    "...): a set whose estimate exceeds it stops the run with a one-line error (default 4G; "
    "e.g. 16G, 512M).", metavar="SIZE")]


def _destination(output: str | None, fmt: str | None, resume: bool,
                 html: str | None = None) -> tuple[str | None, str]:
    """Where records go (``None``: a table on the terminal, ``"-"``: stdout) and the format;
    a ``--html`` report that cannot be written is refused here too, before any work."""
    if html is not None:
        from divmeter.report.html import check_destination

        check_destination(html)
    from divmeter.inputs.data.formats import check_format, default_format, format_from_extension

    if fmt is not None:
        fmt = check_format(fmt, "score")
    markdown = fmt == "markdown" or (
        fmt is None and output is not None and format_from_extension(output) == "markdown")
    if markdown:
        if resume:
            raise InvalidInputError("--resume needs a jsonl, json, csv or parquet output.")
        return output, "markdown"
    if output is not None and output != "-":
        if fmt is not None and fmt.lower() == "table":
            raise InvalidInputError(
                "--format table prints to the terminal; for a file use json, jsonl, csv or parquet."
            )
        return output, (fmt or "").lower()
    if resume:
        raise InvalidInputError("--resume needs an output file (-o OUT) to resume from.")
    chosen = fmt or default_format("score", terminal=sys.stdout.isatty())
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
    signatures: SignaturesOpt = True,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    html: HtmlOpt = None,
    split: SplitOpt = None,
    text_column: TextColumnOpt = "response",
    group_by: GroupByOpt = None,
    label_column: LabelColumnOpt = None,
    corpus: CorpusOpt = False,
    engine: EngineOpt = "local",
    address: AddressOpt = None,
    checkpoint: CheckpointOpt = None,
    memory_budget: BudgetOpt = None,
    max_memory: MaxMemoryOpt = None, vectors: VectorsOpt = None,
) -> None:
    """Score every response set in INPUT with the given metrics.

    One record per set: set_id, row (0-based position in INPUT; the key when ids repeat), label
    if the set has one, the input's own fields, one column per metric (null when undefined,
    with the reason under 'reasons'), and per-response values for response-level metrics.

    The input's own fields go into the records: the prompt and every field holding one value
    (stage, prompt_id, Tevet's metric_* columns, ...), so `divmeter meta paired scores.jsonl
    --by stage` groups them. A field named like a record key or a metric column of the run is
    kept as input.NAME: a score never overwrites an input value.

    Long form (one response a row) without set_id: --group-by COLUMN. INPUT may also be
    hf:PATH, a local Hugging Face dataset (a save_to_disk folder, or a dataset folder /
    .jsonl/.csv/.parquet file read offline) with --split.

    With --corpus: every response of every INPUT is one corpus; one record per metric (metric,
    value, signature, merge, responses, shards).

    Example: divmeter score examples/stories.jsonl -m distinct-n -m self-bleu:n=3 -o scores.jsonl
    """
    from divmeter.apps.cli.progress import progress_bar, quiet_libraries

    if quiet:
        quiet_libraries()
    plans = _plans(metric, corpus)
    _set_max_memory(max_memory)
    _guard(input, output, html, checkpoint, vectors)
    if _corpus_or_one_file(input, corpus, engine, address, checkpoint, memory_budget, vectors):
        _corpus(input, plans, output, fmt, input_format, quiet, engine, address, checkpoint,
                memory_budget)
        return
    dest, out_fmt = _destination(output, fmt, resume, html)
    text_out = out_fmt == "markdown"
    source = input[0]
    path, grouping = _input_path(source, split, text_column, group_by, label_column)
    options: dict[str, Any] = dict(fmt=None if text_out else (out_fmt or None),
                                   input_format=input_format, resume=resume, vectors=vectors,
                                   signatures=signatures, summary_in_output=summary,
                                   keep_records=html is not None and dest == "-", **grouping)
    try:
        with progress_bar(not quiet, within_sets=True) as callback:
            run = _score(path, plans, None if text_out else dest, engine=engine,
                         address=address, workers=workers, progress=callback, **options)
    except BrokenPipeError:  # e.g. `divmeter score ... | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(0) from None
    finally:
        if source != path:
            os.unlink(path)

    stats = run.summary.to_dict()
    _print_results(run, stats, dest, text_out=text_out, summary=summary)
    _finish(run, stats, dest, source, output, html=html, text_out=text_out, quiet=quiet,
            input_format=input_format, grouping=grouping)


def _input_path(source: str, split: str | None, text: str, by: list[str] | None,
                label: str | None) -> tuple[str, dict[str, Any]]:
    """The file to score and how its long form is grouped: a plain file as it is (grouped as it
    is read), an hf: dataset as a temporary JSONL of sets (grouped by the dataset loader)."""
    if source.startswith("hf:"):
        return _hf_to_jsonl(source[3:], split, text, by, label), {}
    return source, dict(group_by=by or None, text_column=text, label_column=label)


def _guard(inputs: list[str], output: str | None, html: str | None, checkpoint: str | None,
           vectors: str | None) -> None:
    """Every path the run writes, checked against every path it reads before any work
    (--vectors names a .npy file or a field: a file is an input like the others)."""
    from divmeter.inputs.data.paths import guard_outputs

    guard_outputs({"-o": output, "--html": html, "--checkpoint": checkpoint},
                  [*inputs, vectors if vectors and os.path.isfile(vectors) else None])


def _set_max_memory(max_memory: str | None) -> None:
    """``--max-memory``: through the environment, so ``-j`` workers inherit the limit."""
    from divmeter.core.memory import ENV, current_limit, parse_memory

    if max_memory is not None:
        os.environ[ENV] = str(parse_memory(max_memory))
    current_limit()  # a bad $DIVMETER_MAX_MEMORY is refused before any work


def _score(path: str, metric: list[Any], dest: str | None, *, engine: str, address: str | None,
           workers: int, progress: Any, **options: Any) -> Any:
    """Score the file on the chosen engine (the same records either way)."""
    if engine == "ray":
        from divmeter.engine.ray import score_file_ray

        options.pop("vectors", None)  # refused with ray (_corpus_or_one_file)
        return score_file_ray(path, metric, dest, progress=progress, address=address, **options)
    from divmeter.engine.runner import score_file

    return score_file(path, metric, dest, workers=workers, progress=progress, **options)


def _report_texts(source: str, input_format: str | None, limit: int = 500,
                  grouping: dict[str, Any] | None = None) -> dict[str, list[str]]:
    """The responses of the first ``limit`` sets, for the report's text viewer (a regular
    input file only: a pipe was read once already, a Hugging Face dataset is gone)."""
    import itertools

    from divmeter.inputs.data import read_sets

    if source.startswith("hf:") or not os.path.isfile(source):
        return {}
    return {s.set_id: list(s.responses)
            for s in itertools.islice(read_sets(source, input_format, **(grouping or {})),
                                      limit)}


def _finish(run: Any, stats: dict[str, Any], dest: str | None, source: str, output: str | None,
            *, html: str | None, text_out: bool, quiet: bool,
            input_format: str | None = None, grouping: dict[str, Any] | None = None) -> None:
    """The --html report and the closing note on stderr."""
    if html is not None:
        from divmeter.report.html import score_report

        # records streamed to stdout cannot be read back: the run kept them (keep_records)
        records = run.records if dest in (None, "-") or text_out else None
        sigs = {c: v["signature"] for c, v in stats["metrics"].items() if v.get("signature")}
        from divmeter.inputs.data.outputs import reading_own_outputs

        with reading_own_outputs():  # the report reads back the scores just written to -o
            score_report([str(dest) if records is None else source], html, records=records,
                         columns=run.columns, signatures=sigs,
                         title=f"divmeter score: {source}",
                         texts=_report_texts(source, input_format, grouping=grouping))
        if not quiet:
            typer.echo(f"divmeter: report written to {html}", err=True)
    if not quiet and dest not in (None, "-"):
        resumed = f" ({run.skipped} already there)" if run.skipped else ""
        nulls = ", ".join(f"{c}: {v['nulls']}" for c, v in stats["metrics"].items() if v["nulls"])
        typer.echo(f"divmeter: scored {run.scored} sets{resumed} -> {output}"
                   + (f"; nulls {nulls}" if nulls else ""), err=True)


def _print_results(run: Any, stats: dict[str, Any], dest: str | None, *, text_out: bool,
                   summary: bool) -> None:
    """Markdown (stdout or file), the terminal table, and the --summary table."""
    from rich.console import Console

    from divmeter.engine.runner import table_fields
    from divmeter.report.scores import records_markdown, records_table, summary_table
    from divmeter.report.terminal import print_unbroken

    shown = table_fields(run.metadata)  # the records keep every input field; tables the short
    sigs = {c: v["signature"] for c, v in stats["metrics"].items() if v.get("signature")}
    if text_out:
        text = records_markdown(run.records, run.columns, has_label=run.has_label,
                                metadata=shown, summary=stats if summary else None,
                                plans=run.plans, signatures=sigs)
        if dest is None or dest == "-":
            typer.echo(text, nl=False)
        else:
            with open(dest, "w", encoding="utf-8") as fh:
                fh.write(text)
    elif dest is None:
        console = Console()
        print_unbroken(console, *records_table(run.records, run.columns,
                                               has_label=run.has_label, metadata=shown,
                                               width=console.width, plans=run.plans,
                                               signatures=sigs))
        if summary:
            print_unbroken(console, *summary_table(stats, run.plans, signatures=False))
    elif summary:
        print_unbroken(Console(stderr=True), *summary_table(stats, run.plans))


def _hf_to_jsonl(path: str, split: str | None, text: str, by: list[str] | None,
                 label: str | None) -> str:
    """A local Hugging Face dataset as a temporary JSONL of response sets (removed after)."""
    import tempfile

    from divmeter.engine.frame import load_hf, sets_from_frame
    from divmeter.inputs.data import write_sets

    sets, _ = sets_from_frame(load_hf(path, split=split), text=text, by=by or None, label=label)
    fd, tmp = tempfile.mkstemp(prefix="divmeter-hf-", suffix=".jsonl")
    os.close(fd)
    write_sets(sets, tmp, "jsonl")
    return tmp


def _plans(metrics: list[str], corpus: bool) -> list[Any]:
    """The run's metrics, resolved once: bad metrics and parameters before anything else; with
    ``--corpus``, a metric of instantiations (CDM) is refused before any is set up (setting CDM
    up loads its model, which may not be installed)."""
    from divmeter.engine.batch import resolve_metrics

    if corpus:
        from divmeter.engine.corpus.run import refuse_non_texts

        refuse_non_texts(metrics)
    return resolve_metrics(metrics)


def _corpus_or_one_file(inputs: list[str], corpus: bool, engine: str, address: str | None,
                        checkpoint: str | None, memory_budget: float | None,
                        vectors: str | None = None) -> bool:
    """Check the engine and input options; ``True`` for a --corpus run."""
    _check_engine(engine, address)
    if vectors is not None and (corpus or engine != "local"):
        raise InvalidInputError("--vectors scores sets one by one: not with --corpus or "
                                "--engine ray.")
    if corpus:
        return True
    if checkpoint is not None or memory_budget is not None:
        raise InvalidInputError("--checkpoint and --memory-budget need --corpus "
                                "(per-set scoring resumes with --resume).")
    if len(inputs) != 1:
        raise InvalidInputError(
            f"divmeter score takes one INPUT file (or --corpus with several); got {len(inputs)}.")
    return False


def _check_engine(engine: str, address: str | None) -> None:
    if engine not in ("local", "ray"):
        raise InvalidInputError(f"--engine must be local or ray; got {engine!r}.")
    if address is not None and engine != "ray":
        raise InvalidInputError("--address needs --engine ray.")


def _corpus(inputs: list[str], metric: list[Any], output: str | None, fmt: str | None,
            input_format: str | None, quiet: bool, engine: str, address: str | None,
            checkpoint: str | None, memory_budget: float | None) -> None:
    """``--corpus``: one record per metric (JSON objects one a line for json/jsonl)."""
    import json

    from divmeter.apps.cli.progress import progress_bar
    from divmeter.engine.corpus.run import score_corpus

    if "-" in inputs:
        raise InvalidInputError("--corpus reads files (shards), not stdin; got '-'.")
    chosen = (fmt or "").lower() or (
        "json" if output and output.endswith(".json") else
        "jsonl" if output else ("table" if sys.stdout.isatty() else "json"))
    if chosen not in ("table", "json", "jsonl"):
        raise InvalidInputError(f"--corpus prints table, json or jsonl; got {chosen!r}.")
    with progress_bar(not quiet, label="corpus", within_sets=True) as callback:
        def prog(responses: int, done: int, total: int) -> None:
            if callback is not None:
                callback(done, total)

        options: dict[str, Any] = {"input_format": input_format, "progress": prog,
                                   "memory_budget_mb": memory_budget, "checkpoint": checkpoint}
        if engine == "ray":
            from divmeter.engine.ray import score_corpus_ray

            run = score_corpus_ray(inputs, metric, address=address, **options)
        else:
            run = score_corpus(inputs, metric, **options)
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
        from divmeter.inputs.data.paths import write_whole

        text = "".join(json.dumps(r) + "\n" for r in run.records)
        write_whole(output or "-", text)  # every byte written, or an error
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
