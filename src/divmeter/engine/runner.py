"""Score a whole file of response sets into an output file: what ``divmeter score`` runs.

:func:`score_file` reads the input (a validating counting pass first, so a malformed file stops
before any output is written), resumes from what an interrupted run already wrote, streams one
record per set to the output (JSONL, JSON, CSV or Parquet; ``"-"`` for stdout) or collects them,
and keeps the running summary. The command line only parses options and prints.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from divmeter.core.errors import DivmeterError, InvalidInputError
from divmeter.engine.batch import (
    MetricArg,
    MetricPlan,
    ProgressFn,
    Summary,
    completed_rows,
    resolve_metrics,
    score_sets,
)
from divmeter.inputs.data import (
    detect_format,
    open_record_writer,
    read_instantiation_sets,
    read_sets,
)
from divmeter.inputs.data.outputs import output_lock, refuse_input_as_output
from divmeter.inputs.data.paths import is_stream
from divmeter.inputs.data.vectors import is_npy, vector_reader

__all__ = ["FileRun", "score_file", "record_columns", "carried_fields", "with_metadata",
           "input_values", "table_fields", "INPUT_PREFIX"]

_SCALARS = (str, int, float, bool)
#: The prefix of an input field whose name a record already uses (a key of the record, or a
#: metric column of the run): the input's value is kept under ``input.<name>``, never dropped
#: and never overwritten by a score.
INPUT_PREFIX = "input."


@dataclass
class FileRun:
    """What :func:`score_file` did.

    Attributes:
        plans: The resolved metrics.
        columns: Their output columns.
        has_label: Whether the input's sets carry labels.
        metadata: The input's own fields carried into every record (:func:`carried_fields`:
            the prompt and every scalar field of the sets, Tevet's ``metric_*`` columns
            included; a name the record already uses becomes ``input.<name>``).
        scored: Sets scored by this run.
        skipped: Sets already in the output (``--resume``).
        summary: Running aggregates over every set in the output (resumed ones included).
        records: The records, when no output was given (else empty).
        output: Where the records went (``None``: only ``records``).
    """

    plans: list[MetricPlan]
    columns: list[str]
    has_label: bool = False
    metadata: list[str] = field(default_factory=list)
    scored: int = 0
    skipped: int = 0
    summary: Summary = field(default_factory=lambda: Summary([]))
    records: list[dict[str, Any]] = field(default_factory=list)
    output: str | None = None


def record_columns(plans: Sequence[MetricPlan], *, has_label: bool, signatures: bool,
                   metadata: Sequence[str] = ()) -> list[str]:
    """The fields of a result record, in output order.

    Example:
        >>> record_columns(resolve_metrics(["ttr"]), has_label=False, signatures=True)
        ['set_id', 'row', 'ttr', 'reasons', 'per_response', 'signatures']
        >>> record_columns(resolve_metrics(["ttr"]), has_label=True, signatures=False,
        ...                metadata=["stage"])
        ['set_id', 'row', 'label', 'stage', 'ttr', 'reasons', 'per_response']
    """
    cols = ["set_id", "row"] + (["label"] if has_label else []) + list(metadata)
    cols += [p.column for p in plans]
    cols.append("reasons")
    if any(p.granularity == "response" for p in plans):
        cols.append("per_response")
    if signatures:
        cols.append("signatures")
    return cols


def input_values(s: Any) -> dict[str, Any]:
    """A set's own fields as a score record carries them: its ``prompt`` (Tevet's ``context``)
    when it has one, then every metadata field whose value is a scalar or null (``stage``,
    ``prompt_id``, ``temperature``, ``label_name``, Tevet's ``metric_*`` columns, ...). Lists and
    objects (``seeds``, ``provenance``, per-response ``quality``) stay in the input file.

    Example:
        >>> from divmeter.inputs.data import ResponseSet
        >>> input_values(ResponseSet("a", ["x"], "Tell a joke.", metadata={"tags": ["t"],
        ...                                                                 "metric_bleu": 0.2}))
        {'prompt': 'Tell a joke.', 'metric_bleu': 0.2}
    """
    out: dict[str, Any] = {} if s.prompt is None else {"prompt": s.prompt}
    out.update((k, v) for k, v in s.metadata.items() if v is None or isinstance(v, _SCALARS))
    return out


def carried_fields(first: Any, columns: Sequence[str], names: Sequence[str] = ()
                   ) -> list[str]:
    """The input fields a score output carries into its records (:func:`input_values`), so
    that ``divmeter meta paired scores.jsonl --by stage`` groups the scores and ``divmeter meta
    contest scores.jsonl -c metric_sent_bert`` finds Tevet's human and metric columns.

    The rule for names: a score never overwrites an input field. A field whose name the record
    already uses (``set_id``, ``row``, ``label``, ``reasons``, ``per_response``, ``signatures``,
    or a metric column of this run) is carried as ``input.<name>``.

    Args:
        first: The first set (``None``: an empty input).
        columns: The run's metric columns.
        names: Input field names seen on the other sets (the counting pass over a file), after
            the first set's own.

    Example:
        >>> from divmeter.inputs.data import ResponseSet
        >>> s = ResponseSet("a", ["x"], "Go.", metadata={"stage": "sft", "metric_bleu": 0.2,
        ...                                              "tags": ["t"], "ttr": 0.5})
        >>> carried_fields(s, ["ttr"])
        ['prompt', 'stage', 'metric_bleu', 'input.ttr']
    """
    from divmeter.engine.batch import RECORD_KEYS

    found = list(input_values(first)) if first is not None else []
    found += [k for k in names if k not in found]
    taken = set(RECORD_KEYS) | set(columns)
    return [INPUT_PREFIX + k if k in taken else k for k in found]


def table_fields(fields: Sequence[str]) -> list[str]:
    """The carried fields a table on the terminal (or in Markdown) shows: the short ones that
    tell sets apart (``stage``, ``prompt_id``, ...), not the prompt's text, the input's own
    scores (``metric_*``) or renamed clashes (``input.*``), which the records keep.

    Example:
        >>> table_fields(["prompt", "stage", "metric_bleu", "input.ttr"])
        ['stage']
    """
    return [k for k in fields if k != "prompt" and not k.startswith(("metric_", INPUT_PREFIX))]


def with_metadata(record: dict[str, Any], values: dict[str, Any], fields: Sequence[str]
                  ) -> dict[str, Any]:
    """``record`` with ``fields`` (from ``values``, a set's :func:`input_values`; ``None`` when
    absent; ``input.<name>`` from ``name``) after its label.

    Example:
        >>> with_metadata({"set_id": "a", "row": 0, "ttr": 1.0}, {"stage": "sft", "ttr": 2},
        ...               ["stage", "input.ttr"])
        {'set_id': 'a', 'row': 0, 'stage': 'sft', 'input.ttr': 2, 'ttr': 1.0}
    """
    if not fields:
        return record
    head = ("set_id", "row", "label")
    out = {k: record[k] for k in head if k in record}
    for k in fields:
        v = values.get(k, values.get(k.removeprefix(INPUT_PREFIX)) if
                       k.startswith(INPUT_PREFIX) else None)
        out[k] = v if v is None or isinstance(v, _SCALARS) else str(v)
    out.update((k, v) for k, v in record.items() if k not in head)
    return out


def _output_format(output: str, fmt: str | None) -> str:
    if output == "-":
        chosen = (fmt or "jsonl").lower()
        if chosen == "parquet":
            raise InvalidInputError("Parquet output needs a file: add -o OUT.parquet.")
        return chosen
    chosen = detect_format(output, fmt)
    parent = Path(output).parent
    if not parent.is_dir():
        raise InvalidInputError(f"output folder {str(parent)!r} does not exist.")
    return chosen


def score_file(
    input: str | os.PathLike[str],
    metrics: Sequence[MetricArg],
    output: str | None = None,
    *,
    fmt: str | None = None,
    input_format: str | None = None,
    resume: bool = False,
    workers: int = 1,
    signatures: bool | None = None,
    summary_in_output: bool = False,
    progress: ProgressFn | None = None,
    scorer: Callable[..., Iterator[dict[str, Any]]] | None = None,
    vectors: str | None = None,
    group_by: Sequence[str] | None = None,
    text_column: str = "response",
    label_column: str | None = None,
    keep_records: bool = False,
) -> FileRun:
    """Score every set of a file with every metric.

    Args:
        input: A response-set file (``.jsonl``, ``.json``, ``.csv``, ``.parquet``, optionally
            ``.gz``) or ``"-"`` for stdin.
        metrics: ``"name[:k=v,...]"`` strings, ``(name, params)`` pairs or resolved
            :class:`~divmeter.engine.batch.plan.MetricPlan` s.
        output: Output file (streamed; format from ``fmt`` or the extension), ``"-"`` for
            stdout (JSONL unless ``fmt``), or ``None`` to collect the records in
            :attr:`FileRun.records`.
        fmt: Output format: jsonl, json, csv or parquet.
        input_format: Input format (default: from the extension).
        resume: Skip the sets already in ``output`` (from an interrupted run) and append.
        workers: Processes to spread the sets over.
        signatures: Keep each metric's signature in every record (a ``signatures`` field;
            Parquet also in its schema metadata). Default: yes when writing ``output``, no
            when collecting records. With ``resume``, the output's signatures must be this
            run's (a file written with other settings or another divmeter version is refused).
        summary_in_output: Kept for compatibility: JSON output always has one shape,
            ``{"results": [...], "summary": {...}}``.
        progress: Called as ``progress(done, total)`` after each set (resumed ones included).
        scorer: What scores the sets, with :func:`divmeter.engine.batch.score_sets`'s signature and
            contract (default: that function); the Ray engine passes its own
            (:func:`divmeter.engine.ray.ray_score_sets`).
        vectors: Precomputed embeddings of the sets' responses: a ``.npy`` file or the name of
            a field / column holding each set's vectors (:mod:`divmeter.inputs.data.vectors`);
            metrics that take vectors score them instead of embedding the texts. A ``.npy``
            ``input`` is read as vectors without it.
        keep_records: Also collect the records written to ``output`` in
            :attr:`FileRun.records` (for a report made from a run streamed to stdout).
        group_by: A long-form input (one response a row) without ``set_id``: the column(s)
            telling its sets apart (:func:`divmeter.inputs.data.read_sets`).
        text_column: The column of texts of a long-form input.
        label_column: The column of labels of a long-form input.

    Returns:
        A :class:`FileRun`.

    Raises:
        UnknownMetricError, InvalidInputError: For bad metrics or parameters, a malformed input
            (file and line), an output that cannot be written or resumed; all before any set is
            scored.

    Example:
        >>> import json, pathlib, tempfile
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> rec = {"set_id": "a", "responses": ["x y", "x z"]}
        >>> _ = (d / "in.jsonl").write_text(json.dumps(rec))
        >>> score_file(d / "in.jsonl", ["distinct-n:n=1"]).records
        [{'set_id': 'a', 'row': 0, 'distinct-n:n=1': 0.75, 'reasons': {}}]
    """
    plans = resolve_metrics(metrics)
    columns = [p.column for p in plans]
    src = os.fspath(input)
    if signatures is None:
        signatures = output is not None
    if resume and (output is None or output == "-"):
        raise InvalidInputError("resuming needs an output file to resume from.")
    out_fmt = None if output is None else _output_format(output, fmt)
    run = FileRun(plans, columns, summary=Summary(columns), output=output)

    if output is not None:
        refuse_input_as_output([src], output)

    # CDM-like metrics read a JSONL of instantiations (marked texts become the responses)
    reader: Any = read_sets
    if group_by or text_column != "response" or label_column:
        reader = functools.partial(read_sets, group_by=group_by, text_column=text_column,
                                   label_column=label_column)
    if any(p.input == "instantiations" for p in plans):
        reader = read_instantiation_sets
    if vectors is not None or is_npy(src):  # precomputed embeddings
        reader = vector_reader(reader, vectors)
    total: int | None = None
    names: dict[str, None] = {}
    if not is_stream(src):  # validates the whole file before any output is written
        # (a pipe, FIFO or /dev/stdin can be read only once: it is streamed, not counted), and
        # finds every input field the records carry; a file up to ONE_PASS_BYTES is parsed
        # once and its sets kept, a larger one is read twice rather than held in memory
        keep = os.path.getsize(src) <= ONE_PASS_BYTES // (8 if src.endswith(".gz") else 1)
        kept: list[Any] = []
        total = 0
        for s in reader(src, input_format):
            total += 1
            names.update(dict.fromkeys(input_values(s)))
            if keep:
                kept.append(s)
        if keep:
            reader = _from(kept)

    with contextlib.ExitStack() as stack:
        if output is not None and output != "-":
            # one writer per output: the file streamed to (JSON/Parquet: their sidecar) is locked
            # before it is read for --resume or truncated
            streamed = Path(f"{output}.partial.jsonl") if out_fmt in {"json", "parquet"} \
                else Path(output)
            if not streamed.exists():
                stack.push(_remove_if_failed(streamed))
            stack.enter_context(output_lock(streamed))
        _run(run, src, reader, input_format, total, output, out_fmt, resume=resume,
             workers=workers, signatures=signatures, summary_in_output=summary_in_output,
             progress=progress, scorer=scorer, names=list(names), keep_records=keep_records)
    return run


#: Input files up to this size (an eighth of it compressed) are parsed once, their sets kept
#: for the scoring pass.
ONE_PASS_BYTES = 64 << 20


def _from(kept: list[Any]) -> Callable[..., Any]:
    """A reader that hands out the sets parsed already."""

    def read(_src: str, _fmt: str | None = None) -> Any:
        return iter(kept)

    return read
def _old_signatures(output: str, old: Sequence[dict[str, Any]], signatures: bool
                    ) -> dict[str, str] | None:
    """``{column: signature}`` of the records an interrupted run wrote (the first of each
    column), for :func:`_check_resumed_signatures`; ``None`` when there is nothing to check
    (the file holds no signatures and this run writes none either).

    Raises:
        InvalidInputError: The file holds no signatures but this run writes them (its records
            cannot be shown to come from the same settings).
    """
    found: dict[str, str] = {}
    for rec in old:
        for c, sig in (rec.get("signatures") or {}).items():
            found.setdefault(c, sig)
    if found:
        return found
    if signatures:
        raise InvalidInputError(
            f"cannot resume {Path(output).name}: its records carry no signatures (written with "
            "--no-signatures or by an older divmeter), so they cannot be shown to come from "
            "this run's settings; score into a new file, or add --no-signatures to extend it "
            "unchecked.")
    return None


def _check_resumed_signatures(output: str | None, old: dict[str, str], new: dict[str, str]
                              ) -> None:
    """Refuse to extend a file whose records were made with other settings (another
    tokenizer, model or divmeter version): their signatures differ from this run's."""
    for column, sig in new.items():
        was = old.get(column)
        if was is not None and was != sig:
            raise InvalidInputError(
                f"cannot resume {Path(str(output)).name}: its {column!r} was scored as {was!r}, "
                f"this run scores it as {sig!r}; score into a new file (or rerun with the "
                "settings and divmeter version that wrote it).")


def _remove_if_failed(path: Path) -> Callable[..., bool]:
    """An exit callback removing ``path`` (created by this run for its lock) when the run failed
    before writing anything to it."""

    def callback(exc_type: Any, *_: Any) -> bool:
        if exc_type is not None and path.exists() and path.stat().st_size == 0:
            with contextlib.suppress(OSError):
                path.unlink()
        return False

    return callback


def _run(run: FileRun, src: str, reader: Any, input_format: str | None, total: int | None,
         output: str | None, out_fmt: str | None, *, resume: bool, workers: int,
         signatures: bool, summary_in_output: bool, progress: ProgressFn | None,
         scorer: Callable[..., Iterator[dict[str, Any]]] | None, names: Sequence[str] = (),
         keep_records: bool = False) -> None:
    """The body of :func:`score_file` once the output is locked."""
    plans = run.plans
    sets = reader(src, input_format)
    first = next(sets, None)
    run.has_label = first is not None and first.label is not None
    run.metadata = carried_fields(first, run.columns, names)
    skip: dict[int, str] = {}
    appending = False
    old_sigs: dict[str, str] | None = None
    if resume and output is not None:
        skip, old = completed_rows(output, out_fmt, columns=run.metadata + run.columns)
        for rec in old:
            run.summary.add(rec)
        appending = bool(old) or (Path(output).exists() and Path(output).stat().st_size > 0)
        if old:
            old_sigs = _old_signatures(output, old, signatures)
    run.skipped = len(skip)
    meta_rows: dict[int, dict[str, Any]] = {}

    def remembered(it: Any) -> Any:  # each set's carried metadata, by row, until its record
        for row, s in enumerate(it):
            if run.metadata and row not in skip:
                meta_rows[row] = input_values(s)
            yield s

    sets = remembered(itertools.chain([first] if first is not None else [], sets))
    writer = None
    try:
        if output is not None:
            cols = record_columns(plans, has_label=run.has_label, signatures=signatures,
                                  metadata=run.metadata)
            writer = open_record_writer(output, out_fmt, columns=cols, append=appending)
        scorer = scorer or score_sets
        if progress is not None:  # the bar shows 0/N (not 0/?) while the first set's model loads
            progress(len(skip), total)
        for rec in scorer(sets, plans, workers=workers,
                          progress=progress, total=total, skip=skip, summary=run.summary,
                          with_signatures=True):
            if old_sigs is not None:  # --resume: the first new record proves the settings
                _check_resumed_signatures(output, old_sigs, rec.get("signatures") or {})
                old_sigs = None
            if not signatures:
                rec.pop("signatures", None)
            run.scored += 1
            rec = with_metadata(rec, meta_rows.pop(rec["row"], {}), run.metadata)
            if writer is None or keep_records:
                run.records.append(rec)
            if writer is not None:
                writer.write(rec)
        if writer is not None:
            if out_fmt == "json":  # one shape, with or without --summary
                writer.extra = {"summary": run.summary.to_dict()}
            w, writer = writer, None
            w.close()
    except OSError as exc:
        if output is None or output == "-" or isinstance(exc, BrokenPipeError):
            raise
        raise DivmeterError(
            f"cannot write {output}: {exc.strerror or exc} (after {run.scored} sets); what was "
            "written before stays, and --resume continues from it."
        ) from None
    finally:
        if writer is not None:  # interrupted: keep what was written (JSON/Parquet: the sidecar)
            with contextlib.suppress(OSError):  # the original error is the one to report
                writer.__exit__(KeyboardInterrupt, None, None)
