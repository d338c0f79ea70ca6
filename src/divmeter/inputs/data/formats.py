"""The one registry of output formats: what each format is, and which commands print or write it.

``divmeter score``, ``meta``, ``compare``, ``reproduce``, ``data`` and ``list`` all check their
``--format`` here (one message for a bad one), choose their default here (a table on a terminal,
JSON or JSONL when piped) and read a format from an output's extension here. The record formats
(files of result records that :func:`divmeter.inputs.data.readers.read_records` reads back) are
:data:`RECORD_FORMATS`; the readers' input formats are the same four.

Every format keeps the signatures of the metrics that made its numbers (issue 31): record files
in each record's ``signatures`` field (Parquet also in its schema metadata, key
:data:`PARQUET_SIGNATURES_KEY`), JSON in its summary too, tables and Markdown in a signature
list under the table.

Example:
    >>> check_format("JSON", "meta")
    'json'
    >>> try:
    ...     check_format("csv", "meta")
    ... except ValueError as exc:
    ...     print(exc)
    --format must be one of table, json, markdown; got 'csv'.
    >>> format_from_extension("scores.csv.gz")
    'csv'
"""

from __future__ import annotations

from dataclasses import dataclass

from divmeter.core.errors import InvalidInputError

__all__ = [
    "OutputFormat",
    "OUTPUT_FORMATS",
    "RECORD_FORMATS",
    "COMMAND_FORMATS",
    "PARQUET_SIGNATURES_KEY",
    "check_format",
    "default_format",
    "format_from_extension",
    "formats_of",
]


@dataclass(frozen=True)
class OutputFormat:
    """One output format.

    Attributes:
        name: What ``--format`` takes.
        extensions: File extensions that select it with ``-o`` (first: the usual one).
        records: A file of result records (read back by ``read_records``, resumable).
        stdout: Can be printed to standard output (Parquet cannot).
        what: One line for help texts.
    """

    name: str
    extensions: tuple[str, ...]
    records: bool
    stdout: bool
    what: str


OUTPUT_FORMATS: dict[str, OutputFormat] = {f.name: f for f in (
    OutputFormat("table", (), False, True, "a table for the terminal"),
    OutputFormat("markdown", (".md",), False, True, "Markdown tables"),
    OutputFormat("json", (".json",), True, True, "one JSON document"),
    OutputFormat("jsonl", (".jsonl",), True, True, "one JSON record a line"),
    OutputFormat("csv", (".csv",), True, True, "comma-separated values"),
    OutputFormat("parquet", (".parquet",), True, False, "Apache Parquet (needs a file)"),
)}

#: The formats of files of result records (also the readable input formats).
RECORD_FORMATS: tuple[str, ...] = ("jsonl", "json", "csv", "parquet")

#: What each command prints or writes, in the order its help lists them.
COMMAND_FORMATS: dict[str, tuple[str, ...]] = {
    "score": ("table", "markdown", "json", "jsonl", "csv", "parquet"),
    "meta": ("table", "json", "markdown"),
    "compare": ("table", "json", "markdown"),
    "reproduce": ("table", "json", "markdown"),
    "list": ("table", "json", "markdown"),
    "data": ("table", "json"),
}

#: The Parquet schema metadata key holding ``{column: signature}`` as JSON text.
PARQUET_SIGNATURES_KEY = b"divmeter.signatures"


def formats_of(command: str) -> tuple[str, ...]:
    """The formats ``command`` prints or writes.

    Example:
        >>> formats_of("compare")
        ('table', 'json', 'markdown')
    """
    return COMMAND_FORMATS[command]


def check_format(fmt: str, command: str, option: str = "--format") -> str:
    """``fmt`` lower-cased if ``command`` has it; else the one error every command gives.

    Raises:
        InvalidInputError: ``"--format must be one of ...; got 'x'."``
    """
    allowed = formats_of(command)
    low = fmt.lower() if isinstance(fmt, str) else fmt
    if low not in allowed:
        raise InvalidInputError(f"{option} must be one of {', '.join(allowed)}; got {fmt!r}.")
    return low


def default_format(command: str, *, terminal: bool) -> str:
    """A table on a terminal; when piped, JSONL for ``score`` (a record a line) and JSON for
    the others.

    Example:
        >>> default_format("score", terminal=False), default_format("meta", terminal=False)
        ('jsonl', 'json')
    """
    if terminal:
        return "table"
    return "jsonl" if command == "score" else "json"


def format_from_extension(path: str) -> str | None:
    """The format an output path's extension selects (``.gz`` looked through), or ``None``."""
    low = path.lower().removesuffix(".gz")
    for f in OUTPUT_FORMATS.values():
        if any(low.endswith(ext) for ext in f.extensions):
            return f.name
    return None
