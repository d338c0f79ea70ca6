"""What an earlier (possibly interrupted) run already wrote: its rows and set ids, after
repairing a torn last line, so ``divmeter score --resume`` appends only the missing sets."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.engine.batch.records import RECORD_KEYS
from divmeter.inputs.data.lines import detect_format
from divmeter.inputs.data.outputs import reading_own_outputs
from divmeter.inputs.data.readers import read_records

__all__ = ["metric_columns", "completed_rows"]


def metric_columns(record: Mapping[str, Any]) -> list[str]:
    """The metric columns of a result record (every key but :data:`RECORD_KEYS`)."""
    return [k for k in record if k not in RECORD_KEYS]


def _torn_tail_start(path: Path) -> int | None:
    """Where a last line without its newline starts (``None``: the file ends with one)."""
    size = path.stat().st_size
    if size == 0:
        return None
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        block = 1 << 16
        pos = size
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            data = fh.read(pos - start)
            nl = data.rfind(b"\n")
            if nl >= 0:
                return start + nl + 1
            pos = start
    return 0


#: How every JSONL record divmeter score writes begins (the writer's first key).
_RECORD_PREFIX = b'{"set_id": '


def _truncate_torn_tail(path: Path, refuse: str, *, ours: bool) -> None:
    """Cut a last line that an interrupted write left without its newline, but only in a file
    this run can prove divmeter wrote: ``ours`` (complete divmeter records or header before it)
    or a torn line that starts as divmeter's records start. Anything else is someone's text."""
    start = _torn_tail_start(path)
    if start is None:
        return
    if not ours:
        with open(path, "rb") as fh:
            fh.seek(start)
            head = fh.read(len(_RECORD_PREFIX))
        if not _RECORD_PREFIX.startswith(head) and not head.startswith(_RECORD_PREFIX):
            raise InvalidInputError(
                f"{refuse}: its last line (no newline at the end) is not a record divmeter "
                "wrote, and nothing before it proves the file is a divmeter score output; it "
                "was left as it is. Use another output file.")
    with open(path, "rb+") as fh:
        fh.truncate(start)


def completed_rows(
    path: str | os.PathLike[str], fmt: str | None = None, *, columns: Sequence[str] | None = None
) -> tuple[dict[int, str], list[dict[str, Any]]]:
    """What an earlier (possibly interrupted) run already wrote to ``path``.

    For JSONL and CSV a torn last line is cut from the file so appending continues cleanly. For
    JSON and Parquet the finished file (if any) and the ``.partial.jsonl`` sidecar of an
    interrupted run are both read.

    Args:
        path: The output file of the earlier run.
        fmt: Its format (default: from the extension).
        columns: The metric columns of this run; an output written with others is an error.

    Returns:
        ``({row: set_id}, records)``; empty when the file does not exist.

    Raises:
        InvalidInputError: If the output's metric columns differ from ``columns``, or a record has
            no ``row``.
    """
    chosen = detect_format(path, fmt)
    p = Path(path)
    sources: list[tuple[Path, str]] = []
    if chosen in {"json", "parquet"}:
        if p.exists() and p.stat().st_size > 0:
            sources.append((p, chosen))
        side = Path(f"{path}.partial.jsonl")
        if side.exists():
            sources.append((side, "jsonl"))
    elif p.exists():
        sources.append((p, chosen))
    records: list[dict[str, Any]] = []
    refuse = f"cannot resume from {p.name}"
    for src, f in sources:
        if f == "csv":  # the header proves the file is divmeter's before anything is cut
            has_header = _check_csv_header(src, refuse, columns)
            _truncate_torn_tail(src, refuse, ours=has_header)
        try:
            with reading_own_outputs():  # the run's own output, read back
                got = list(read_records(src, f))  # JSONL: a torn last line is not read
        except InvalidInputError as exc:
            raise InvalidInputError(
                f"{refuse}: {exc} It is not a complete divmeter score output; use another "
                "output file."
            ) from None
        _check_records(got, len(records), refuse, columns)
        if f == "jsonl":
            _truncate_torn_tail(src, refuse, ours=bool(got))
        records.extend(got)
    rows = {rec["row"]: str(rec["set_id"]) for rec in records}
    return rows, records


def _check_records(records: list[dict[str, Any]], offset: int, refuse: str,
                   columns: Sequence[str] | None) -> None:
    """Records read back for --resume must be divmeter score records of the same metrics."""
    for i, rec in enumerate(records, offset):
        row = rec.get("row")
        bad_row = isinstance(row, bool) or not isinstance(row, int) or row < 0
        if bad_row or not isinstance(row, int) or "set_id" not in rec:
            field = "'row' field (an integer >= 0)" if bad_row else "'set_id' field"
            raise InvalidInputError(
                f"{refuse}: record {i + 1} has no {field}; it was not written by divmeter score."
            )
        if columns is not None:
            have = metric_columns(rec)
            if have != list(columns):
                raise InvalidInputError(
                    f"{refuse}: it holds metrics {have} but this run asks for "
                    f"{list(columns)}; use another output file or the same metrics."
                )


def _check_csv_header(path: Path, refuse: str, columns: Sequence[str] | None) -> bool:
    """A CSV output being resumed must start with divmeter's header (even with no rows yet);
    ``True`` when that header is a complete line (the file is provably divmeter's)."""
    with open(path, "rb") as fh:
        first = fh.readline()
    if not first.strip():
        return False
    import csv

    try:
        header = next(csv.reader([first.decode("utf-8-sig")]))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        header = []
    metrics = [c for c in header if c not in RECORD_KEYS]
    if header[:2] != ["set_id", "row"] or (columns is not None and metrics != list(columns)):
        raise InvalidInputError(
            f"{refuse}: its header is {header[:8]}, not that of a divmeter score output with "
            f"metrics {list(columns or [])}; use another output file."
        )
    return first.endswith(b"\n")
