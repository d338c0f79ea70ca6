"""The one guard for every path a command writes, and whole-file writes checked to the last byte.

Every command calls :func:`guard_outputs` with the paths it will write (``-o``, ``--pairs``,
``--nulls``, ``--db``, ``--checkpoint``, ``--html``, the files of a ``--report`` folder,
sidecars, exports, ...) and every path it reads, before anything is opened for writing. Inside a
command (:func:`~divmeter.inputs.data.outputs.command_paths`, entered by the CLI for every
command) the guard also knows every file the command has read so far (inputs, ``--vectors``,
templates, databases: the readers note them), records the outputs, and is asked again by every
writer before it writes (:func:`~divmeter.inputs.data.outputs.claim_write`), so an input read
after the guard ran is still never written. A path is refused, in one line naming the option, when

* it is one of the run's inputs (the same path, through a symbolic or a hard link too: files
  are compared by inode, and by resolved path when one does not exist yet),
* it is another output of the same run (``-o X --nulls X``),
* it is a folder, a socket or a block device.

Character devices and FIFOs (``/dev/stdout``, ``/dev/null``, ``/dev/full``, a named pipe) are
written in place and never replaced, renamed or removed: :func:`write_whole` writes a regular
file to a temporary file beside it and renames it into place, and anything else by copying a
finished temporary file into it, so no library that deletes a file it failed to write (Parquet
writers do) ever sees the device node. Every write is flushed and closed inside the check, so a
full disk surfaces as an error, never as a silently short file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.outputs import (
    claim_write,
    command_paths,
    input_refused,
    note_output,
    note_read,
    read_paths,
    replace_atomically,
    same_file,
)

__all__ = ["guard_outputs", "report_folder", "is_stream", "write_whole", "written",
           "command_paths", "note_read", "claim_write"]

PathLike = str | os.PathLike[str]


def is_stream(path: PathLike) -> bool:
    """Whether reading ``path`` consumes it (stdin ``-``, a pipe, a FIFO, a character device,
    ``/dev/stdin``, a ``<(...)`` process substitution): such an input is read once, streamed.

    Example:
        >>> is_stream("-"), is_stream(__file__)
        (True, False)
    """
    if str(path) == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _kind(path: PathLike) -> str | None:
    """``None`` for a missing or writable-in-place path, else what it is."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISBLK(mode):
        return "a block device"
    return None


def report_folder(folder: PathLike | None, files: Sequence[PathLike],
                  option: str = "--report") -> list[PathLike] | None:
    """The files a report folder will hold, to pass to :func:`guard_outputs` (each is checked
    like any output); the folder must be a folder or not exist yet.

    Raises:
        InvalidInputError: ``folder`` is a file.
    """
    if folder is None:
        return None
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise InvalidInputError(f"{option} {os.fspath(folder)} is a file; expected a folder to "
                                "write the report into.")
    return list(files)


def guard_outputs(outputs: Mapping[str, PathLike | Sequence[PathLike] | None],
                  inputs: Iterable[PathLike | None] = ()) -> None:
    """Refuse, before anything is written, an output path that would destroy data.

    Args:
        outputs: ``{option: path}`` of everything the command will write (``None`` and ``-``
            are skipped), e.g. ``{"-o": out, "--nulls": nulls}``; a list for an option that
            writes several files (the files of a ``--report`` folder).
        inputs: Every path the run reads (``None``, ``-`` and paths that do not exist are
            skipped); inside a command, the files it has read so far are added.

    Raises:
        InvalidInputError: One line naming the option and the path.

    Example:
        >>> import pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp()) / "in.jsonl"
        >>> _ = src.write_text("{}")
        >>> guard_outputs({"--pairs": src}, [src])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: --pairs /.../in.jsonl is the input file ...
    """
    ins = [("input", os.fspath(p)) for p in inputs if p is not None and str(p) != "-"]
    ins += read_paths()
    seen: list[tuple[str, str]] = []
    for opt, value in outputs.items():
        many: Sequence[PathLike | None] = (
            value if isinstance(value, (list, tuple)) else [value])  # type: ignore[list-item]
        for item in many:
            if item is None or str(item) == "-":
                continue
            out = os.fspath(item)
            for what, src in ins:
                if os.path.exists(src) and same_file(src, out):
                    raise input_refused(opt, out, src, what)
            for other_opt, other in seen:
                if same_file(other, out):
                    raise InvalidInputError(
                        f"{opt} {out} is also the file of {other_opt}; give each output its own "
                        "file.")
            seen.append((opt, out))
            kind = _kind(out)
            if kind is not None:
                raise InvalidInputError(f"{opt} {out} is {kind}; expected a file to write.")
    for opt, out in seen:
        note_output(opt, out)


#: A temporary file to write whose content becomes the path when the block succeeds (see
#: :func:`divmeter.inputs.data.outputs.replace_atomically`: renamed over a regular file, copied into
#: a device or FIFO, which is never replaced or removed).
written = replace_atomically


def write_whole(path: PathLike, data: str | bytes) -> None:
    """Write ``data`` as the whole content of ``path`` (``-``: stdout) through :func:`written`:
    every byte written, flushed and closed, or an ``OSError`` and ``path`` unchanged."""
    import sys

    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    if str(path) == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        return
    with written(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(raw)
