"""Sources and lines: the one place that opens input files and reads JSON lines.

Every reader of divmeter (response sets, pairs, CDM instantiations, score records for
``--resume``) goes through here, so they agree on:

* **sources**: a path, a ``.gz`` path (decompressed), or ``"-"`` for stdin (shown as
  ``<stdin>`` in messages); files are named by their base name in messages;
* **encoding**: UTF-8 only; a byte-order mark at the start of the file is skipped (``utf-8-sig``
  on the first line), nowhere else; a bad byte is reported with its line and column;
* **JSON lines**: blank lines are skipped; line numbers count every line, blank ones included;
* **one phrasing** for every error, ``NAME line N: what was wrong; what was expected``, e.g.
  ``pairs.jsonl line 3: invalid JSON (Expecting value at column 12).`` or
  ``pairs.jsonl line 3: each pair must be a JSON object; got list.``

It also decides the format of a path from its extension (:func:`detect_format`).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.formats import RECORD_FORMATS
from divmeter.inputs.data.outputs import note_read

_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")

__all__ = [
    "FORMATS",
    "detect_format",
    "display_name",
    "type_name",
    "json_field",
    "string_list",
    "open_source",
    "decode_lines",
    "decode_all",
    "invalid_json",
    "loads",
    "json_lines",
    "read_json_lines",
    "require_object",
    "MAX_LINE_BYTES",
    "max_line",
    "bounded_lines",
    "read_whole",
    "read_head",
    "prepend",
    "read_text",
    "text_lines",
    "csv_reader",
    "csv_error",
]

#: Formats understood by the readers and writers.
FORMATS: tuple[str, ...] = RECORD_FORMATS

_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def display_name(path: str | os.PathLike[str]) -> str:
    """How a source is named in messages: its base name, or ``<stdin>`` for ``"-"``.

    Example:
        >>> display_name("runs/a/sets.jsonl"), display_name("-")
        ('sets.jsonl', '<stdin>')
    """
    return "<stdin>" if str(path) == "-" else Path(path).name


def type_name(value: Any) -> str:
    """The JSON-ish name of a value's type, for messages (``null``, ``bool``, ``object``, ...).

    Example:
        >>> type_name(None), type_name(True), type_name({}), type_name([1]), type_name("x")
        ('null', 'bool', 'object', 'list', 'str')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def string_list(
    value: Any, where: str, key: str, *, noun: str = "strings", expected: str | None = None
) -> list[str]:
    """Check that field ``key`` of the record read at ``where`` is a list of strings.

    Args:
        value: The field's value.
        where: Where the record was read, e.g. ``"s.jsonl line 3"``.
        key: The field's name as messages show it (``"instantiations[2]"`` for a nested list).
        noun: What the strings are, for the message (``"strings"``, ``"phrases"``).
        expected: The whole expectation, when it is more than ``a list of NOUN``.

    Returns:
        ``value`` itself.

    Raises:
        InvalidInputError: ``WHERE: field 'KEY' must be a list of NOUN; got TYPE.``, or
            ``WHERE: field 'KEY[i]' must be a string; got TYPE.`` for the first non-string.

    Example:
        >>> string_list(["a", "b"], "s.jsonl line 1", "responses")
        ['a', 'b']
        >>> string_list(["a", 2], "s.jsonl line 1", "r")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: s.jsonl line 1: field 'r[1]' must be ...; got int.
    """
    if not isinstance(value, list):
        raise InvalidInputError(f"{where}: field '{key}' must be {expected or 'a list of ' + noun}"
                                f"; got {type_name(value)}.")
    for i, s in enumerate(value):
        if not isinstance(s, str):
            raise InvalidInputError(
                f"{where}: field '{key}[{i}]' must be a string; got {type_name(s)}.")
    return value


def detect_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, else from the extension (``.gz`` looked through).

    Args:
        path: A file path, or ``"-"`` for stdin/stdout.
        fmt: An explicit format (``jsonl``, ``json``, ``csv``, ``parquet``), or ``None``.

    Returns:
        The format name.

    Raises:
        InvalidInputError: For an unknown format or extension. For ``"-"`` without ``fmt`` the
            answer is ``"jsonl"`` (readers sniff stdin instead of calling this).

    Example:
        >>> detect_format("runs/scores.jsonl")
        'jsonl'
        >>> detect_format("sets.csv.gz")
        'csv'
    """
    if fmt is not None:
        low = fmt.lower()
        if low == "ndjson":
            low = "jsonl"
        if low not in FORMATS:
            raise InvalidInputError(f"format must be one of {', '.join(FORMATS)}; got {fmt!r}.")
        return low
    if str(path) == "-":
        return "jsonl"
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = os.path.splitext(name)[1]
    if ext not in _EXTENSIONS:
        raise InvalidInputError(
            f"{Path(path).name}: cannot tell the format from the extension {ext or '(none)'!r}; "
            f"expected one of {', '.join(sorted(_EXTENSIONS))}, or give the format explicitly."
        )
    return _EXTENSIONS[ext]


@contextmanager
def open_source(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """Open a source for reading bytes: a file, a ``.gz`` file, or stdin for ``"-"``.

    A ``.gz`` file that is not gzip, or is cut short, fails while it is read with a one-line
    :class:`InvalidInputError` naming the file (not gzip's own exception).

    Raises:
        FileNotFoundError: If the file does not exist.
    """
    if str(path) == "-":
        yield sys.stdin.buffer
        return
    note_read(path)  # the command's guard knows every file it reads
    gz = str(path).lower().endswith(".gz")
    if gz:
        fh: IO[bytes] = gzip.open(path, "rb")  # type: ignore[assignment]
    else:
        fh = open(path, "rb")  # noqa: SIM115
    try:
        yield fh
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        if not gz:
            raise
        what = ("is cut short (the compressed stream ends early)" if isinstance(exc, EOFError)
                else "is not a valid gzip file")
        raise InvalidInputError(
            f"{display_name(path)}: the file {what}; expected a complete gzip-compressed file "
            "(or drop the .gz extension)."
        ) from None
    finally:
        fh.close()


def loads(text: str | bytes, name: str, lineno: int = 1) -> Any:
    """``json.loads`` with divmeter's one-line errors: syntax errors name the line and column,
    and nesting too deep for the parser is refused instead of a ``RecursionError``.

    Example:
        >>> loads("[[[1]]]", "x.json")
        [[[1]]]
        >>> loads("[" * 100_000, "x.json")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: x.json line 1: JSON nested too deeply ...
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise invalid_json(name, lineno + exc.lineno - 1, exc) from None
    except RecursionError:
        raise InvalidInputError(
            f"{name} line {lineno}: JSON nested too deeply to read (more levels than the parser "
            "allows); expected response sets a few levels deep."
        ) from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        raise InvalidInputError(
            f"{name} line {lineno}: a number too long to read ({' '.join(str(exc).split()[:6])}"
            "...); expected numbers of at most 4,300 digits."
        ) from None
    if _SURROGATE.search(text if isinstance(text, str) else text.decode("utf-8", "replace")):
        try:  # an escaped lone surrogate (\\ud800) decodes to a string no writer can encode
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start:exc.end].encode("unicode_escape").decode("ascii")
            raise InvalidInputError(
                f"{name} line {lineno}: the escape {bad} is a lone surrogate, not text; expected "
                "valid Unicode (a surrogate pair or the character itself).") from None
    return value


#: The first bytes of binary files people give by mistake, and what to say about them.
_MAGIC = ((b"\x1f\x8b", "it looks gzip-compressed: name it .gz"),
          (b"\x89PNG", "it looks like a PNG image, not text"),
          (b"PK\x03\x04", "it looks like a zip archive (an Excel file?), not text"),
          (b"PAR1", "it looks like a Parquet file: name it .parquet"),
          (b"\xff\xfe", "it looks like UTF-16 text: save it as UTF-8"),
          (b"\xfe\xff", "it looks like UTF-16 text: save it as UTF-8"))


def _utf8_hint(lineno: int, data: bytes) -> str:
    if lineno == 1:
        for magic, hint in _MAGIC:
            if data.startswith(magic):
                return f"; {hint}"
    return ""


def _bad_utf8(name: str, lineno: int, line: bytes, exc: UnicodeDecodeError) -> InvalidInputError:
    return InvalidInputError(
        f"{name} line {lineno}: not valid UTF-8 (byte 0x{line[exc.start]:02x} at "
        f"column {exc.start + 1}); divmeter reads UTF-8 only{_utf8_hint(lineno, line)}."
    )


#: The longest line any reader accepts, in bytes (``$DIVMETER_MAX_LINE`` overrides): a file with
#: no newline (``/dev/zero``, a binary) is refused at this length instead of filling memory. The
#: same bound holds for a CSV field (quoted newlines included) and for the files read whole
#: (a ``.json`` document, a Parquet stream from a pipe, a template): see :func:`read_whole`.
MAX_LINE_BYTES = 256 << 20

_RAISE = "set DIVMETER_MAX_LINE to allow longer ones"


def max_line() -> int:
    """The line-length bound in force: ``$DIVMETER_MAX_LINE`` (at least 1024) or
    :data:`MAX_LINE_BYTES`."""
    try:
        return max(1024, int(os.environ.get("DIVMETER_MAX_LINE", MAX_LINE_BYTES)))
    except ValueError:
        return MAX_LINE_BYTES


def _too_long(name: str, lineno: int, limit: int) -> InvalidInputError:
    return InvalidInputError(
        f"{name} line {lineno}: longer than {limit:,} bytes with no newline; expected "
        f"a text file of lines ({_RAISE}).")


def bounded_lines(raw: Iterable[bytes], name: str) -> Iterator[bytes]:
    """The lines of ``raw``; a binary file object is read with a bound on each line's length
    (:func:`max_line`) and a longer line is a one-line error naming the file and line.

    Example:
        >>> import io
        >>> list(bounded_lines(io.BytesIO(b"a\\nb"), "x.jsonl"))
        [b'a\\n', b'b']
    """
    readline = getattr(raw, "readline", None)
    if readline is None:
        yield from raw
        return
    limit = max_line()
    lineno = 0
    while True:
        line = readline(limit + 1)
        if not line:
            return
        lineno += 1
        if len(line) > limit and not line.endswith(b"\n"):
            raise _too_long(name, lineno, limit)
        yield line


def read_whole(fh: IO[bytes], name: str, what: str, hint: str = "") -> bytes:
    """All of ``fh``, for a reader that needs the whole file at once; a file longer than
    :func:`max_line` is a one-line error (instead of filling memory from ``/dev/zero``).

    Args:
        fh: The open source.
        name: Its name in messages.
        what: What is read whole, for the message (``"a JSON file"``, ``"a template"``).
        hint: What else the user may do, for the message (``", or JSONL"``).

    Example:
        >>> import io, os
        >>> os.environ["DIVMETER_MAX_LINE"] = "1024"
        >>> read_whole(io.BytesIO(b"[]"), "x.json", "a JSON file")
        b'[]'
        >>> read_whole(io.BytesIO(b"\\n" * 2000), "x.json", "a JSON file")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: x.json line 1025: longer than 1,024 bytes ...
        >>> del os.environ["DIVMETER_MAX_LINE"]
    """
    limit = max_line()
    data = fh.read(limit + 1)
    if len(data) > limit:
        lineno = data.count(b"\n", 0, limit) + 1
        raise InvalidInputError(
            f"{name} line {lineno}: longer than {limit:,} bytes in all, and {what} is read "
            f"whole; expected a smaller file{hint} (or {_RAISE}).")
    return data


def read_head(fh: IO[bytes], name: str) -> bytes:
    """The first bytes of a stream up to its first non-blank line (blank lines before it
    included), consumed from ``fh``; a first line longer than :func:`max_line` is the
    one-line error of :func:`bounded_lines`. Used to sniff a format, then :func:`prepend`."""
    limit = max_line()
    head = b""
    lineno = 0
    while len(head) <= limit:
        line = fh.readline(limit + 1 - len(head))
        lineno += 1
        head += line
        if len(head) > limit and not line.endswith(b"\n"):
            raise _too_long(name, lineno, limit)
        if not line.endswith(b"\n") or line.strip(b"\xef\xbb\xbf \t\r\n"):
            break
    return head


class _Prefixed(io.RawIOBase):
    """``prefix`` then the rest of ``rest``, as one raw stream."""

    def __init__(self, prefix: bytes, rest: IO[bytes]) -> None:
        self._prefix = prefix
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._prefix:
            n = min(len(view), len(self._prefix))
            view[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        read1 = getattr(self._rest, "read1", self._rest.read)
        data = read1(len(view))
        view[:len(data)] = data
        return len(data)


def prepend(prefix: bytes, rest: IO[bytes]) -> IO[bytes]:
    """A binary stream of ``prefix`` followed by what is left of ``rest`` (a pipe whose first
    bytes were read to sniff its format is read on, not read whole).

    Example:
        >>> import io
        >>> src = io.BytesIO(b"a\\nb\\n")
        >>> head = read_head(src, "x")
        >>> prepend(head, src).read()
        b'a\\nb\\n'
    """
    return io.BufferedReader(_Prefixed(prefix, rest))


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """A whole UTF-8 text file (a template, a prompt list), bounded as :func:`read_whole`,
    a bad byte named with its line (:func:`decode_all`)."""
    name = display_name(path)
    with open_source(path) as fh:
        return decode_all(read_whole(fh, name, what), name)


def text_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line of a UTF-8 text source (path, ``.gz`` or ``"-"``),
    streamed and bounded (:func:`bounded_lines`), the line end (``\\n``, ``\\r\\n``) removed.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
        >>> _ = p.write_bytes(b"\\xef\\xbb\\xbfone\\r\\ntwo")
        >>> list(text_lines(p))
        [(1, 'one'), (2, 'two')]
    """
    name = display_name(path)
    counter = [0]
    with open_source(path) as fh:
        for text in decode_lines(fh, name, counter):
            yield counter[0], text.removesuffix("\n").removesuffix("\r")


def csv_reader(lines: Iterable[str], **options: Any) -> Any:
    """``csv.reader`` over ``lines`` whose field bound is :func:`max_line` (the :mod:`csv`
    default, 131,072 characters, refused long responses); see :func:`csv_error`."""
    import csv

    csv.field_size_limit(max_line())
    return csv.reader(lines, strict=True, **options)


def csv_error(name: str, lineno: int, exc: Exception) -> InvalidInputError:
    """The one-line error for a :class:`csv.Error` met at line ``lineno`` of ``name``."""
    if "field larger than field limit" in str(exc):
        return InvalidInputError(
            f"{name} line {lineno}: a field longer than {max_line():,} characters; expected "
            f"shorter fields (a quote left open runs to the end of the file; {_RAISE}).")
    return InvalidInputError(f"{name} line {lineno}: invalid CSV ({exc}).")


def decode_lines(raw: Iterable[bytes], name: str, counter: list[int]) -> Iterator[str]:
    """Decode byte lines as UTF-8 one at a time, so a bad byte is reported with its line.

    ``counter[0]`` holds the 1-based number of the line last decoded (for readers, such as
    :mod:`csv`, that consume several lines per record). A BOM is skipped on the first line only.
    """
    for i, line in enumerate(bounded_lines(raw, name)):
        counter[0] = i + 1
        try:
            text = line.decode("utf-8-sig" if i == 0 else "utf-8")
        except UnicodeDecodeError as exc:
            raise _bad_utf8(name, i + 1, line, exc) from None
        yield text


def decode_all(data: bytes, name: str) -> str:
    """Decode a whole file as UTF-8 (BOM skipped), naming the line of a bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInputError(
            f"{name} line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); "
            f"divmeter reads UTF-8 only{_utf8_hint(line, data)}."
        ) from None


def invalid_json(name: str, lineno: int, exc: json.JSONDecodeError) -> InvalidInputError:
    """The error for a JSON syntax error in file ``name`` at line ``lineno``."""
    msg = exc.msg.removesuffix(" at")  # "Invalid control character at" (json's own wording)
    return InvalidInputError(f"{name} line {lineno}: invalid JSON ({msg} at column {exc.colno}).")


def json_field(value: str, where: str, expect: str) -> Any:
    """A table cell or field that holds JSON text, parsed; text that is not JSON gives the
    one-line error ``{where} must hold {expect}; got '...'`` (its first 40 characters).

    Example:
        >>> json_field("[1, 2", "t.csv line 2: field 'x'", "a list")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: t.csv line 2: field 'x' must hold ...; got '[1, 2'.
    """
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise InvalidInputError(f"{where} must hold {expect}; got {value[:40]!r}.") from None


def require_object(value: Any, where: str, what: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else the one-phrasing error.

    Example:
        >>> require_object([1], "p.jsonl line 2", "pair")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: p.jsonl line 2: each pair must be a JSON object; ...
    """
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{where}: each {what} must be a JSON object; got {type_name(value)}."
        )
    return value


def json_lines(
    raw: Iterable[bytes], name: str, *, torn_tail: bool = False
) -> Iterator[tuple[str, Any]]:
    """Parse JSON lines: yield ``(where, value)`` per non-blank line, ``where`` = ``NAME line N``.

    Args:
        raw: The byte lines of the source (an open binary file iterates so).
        name: The source's name in messages.
        torn_tail: Drop, silently, a last line that has no newline and is not valid UTF-8/JSON
            (what an interrupted writer leaves); used when resuming a run.

    Raises:
        InvalidInputError: For a line that is not valid UTF-8 or not valid JSON.

    Example:
        >>> list(json_lines([b'{"a": 1}\\n', b'\\n', b'[2]\\n'], "x.jsonl"))
        [('x.jsonl line 1', {'a': 1}), ('x.jsonl line 3', [2])]
    """
    for i, line in enumerate(bounded_lines(raw, name)):
        lineno = i + 1
        try:
            text = line.decode("utf-8-sig" if i == 0 else "utf-8")
        except UnicodeDecodeError as exc:
            if torn_tail and not line.endswith(b"\n"):
                return
            raise _bad_utf8(name, lineno, line, exc) from None
        if not text.strip():
            continue
        try:
            value = loads(text, name, lineno)
        except InvalidInputError as exc:
            if torn_tail and not line.endswith(b"\n"):
                return
            hint = table_hint(text) if i == 0 else ""
            if hint:
                raise InvalidInputError(f"{str(exc).removesuffix('.')}; {hint}") from None
            raise
        yield f"{name} line {lineno}", value


def table_hint(first_line: str) -> str:
    """What to do when a JSON file's first line is not JSON but plainly a CSV header (a CSV
    saved as ``.jsonl``); ``""`` when it is not.

    Example:
        >>> table_hint("prompt,response")  # doctest: +ELLIPSIS
        "it looks like a CSV header ('prompt,response'): name the file .csv or give --input-..."
        >>> table_hint('{"set_id": 1')
        ''
    """
    head = first_line.strip()
    if not head or head[0] in "{[\"" or "," not in head:
        return ""
    shown = head if len(head) <= 40 else head[:37] + "..."
    return (f"it looks like a CSV header ({shown!r}): name the file .csv or give "
            "--input-format csv")


def read_json_lines(
    path: str | os.PathLike[str], *, torn_tail: bool = False
) -> Iterator[tuple[str, Any]]:
    """Read a JSONL source (path, ``.gz`` or ``"-"``) lazily with :func:`json_lines`.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
        >>> _ = p.write_bytes(b'\\xef\\xbb\\xbf{"a": 1}\\n{"a": 2')
        >>> list(read_json_lines(p, torn_tail=True))
        [('r.jsonl line 1', {'a': 1})]
    """
    with open_source(path) as fh:
        yield from json_lines(fh, display_name(path), torn_tail=torn_tail)
