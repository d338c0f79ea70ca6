"""Guards around output files: never write over an input, one writer at a time, whole files.

* :func:`command_paths`: the paths one command reads and writes. Inside it every reader of a
  user's file notes the path (:func:`note_read`: ``open_source``, ``.npy`` vectors, study
  databases), :func:`divmeter.inputs.data.paths.guard_outputs` records the outputs the command
  declared, and every writer checks its target before writing (:func:`claim_write`, called by
  :func:`replace_atomically` and :func:`output_lock`): a file the command read is never written,
  and a file it declared as an output is never read as an input. Files are compared by inode and
  by resolved path (:func:`same_file`). Outside a command (the Python API) nothing is recorded.
* :func:`refuse_input_as_output`: ``-o`` that resolves to an input file (the same path, a
  symlink to it, a hard link) is refused before anything is opened for writing.
* :func:`output_lock`: an exclusive, non-blocking OS lock (``fcntl.flock``) on the file a run
  streams to, so two runs writing the same output fail clearly instead of interleaving records.
* :func:`replace_atomically`: a whole-file output (JSON, Parquet, response sets) is written to a
  temporary file next to the target and renamed over it only once complete, so an interrupted or
  failed write never leaves a half-written or truncated file in its place.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from divmeter.core.errors import InvalidInputError

__all__ = ["same_file", "refuse_input_as_output", "output_lock", "replace_atomically",
           "command_paths", "note_read", "note_output", "claim_write", "reading_own_outputs"]

PathLike = str | os.PathLike[str]


@dataclass
class CommandPaths:
    """What one command has read (``(what, absolute path)``, e.g. ``("--vectors", ...)``) and
    the outputs it declared (``(option, absolute path)``)."""

    reads: list[tuple[str, str]] = field(default_factory=list)
    outputs: list[tuple[str, str]] = field(default_factory=list)
    reading_own: int = 0


#: The command being run (a module global, not a context variable: reader threads see it too).
_CURRENT: list[CommandPaths] = []


@contextlib.contextmanager
def command_paths() -> Iterator[CommandPaths]:
    """The scope of one command: the paths it reads and writes are recorded and checked.

    Example:
        >>> import pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp()) / "in.jsonl"
        >>> _ = src.write_text("{}")
        >>> with command_paths():
        ...     note_read(src)
        ...     claim_write(src, "--html")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: --html /.../in.jsonl is the input file in.jsonl; ...
    """
    run = CommandPaths()
    _CURRENT.append(run)
    try:
        yield run
    finally:
        _CURRENT.remove(run)


def _current() -> CommandPaths | None:
    return _CURRENT[-1] if _CURRENT else None


@contextlib.contextmanager
def reading_own_outputs() -> Iterator[None]:
    """Inside: the command reads back files it declared as outputs (``--resume`` reads what
    is done, a report reads the scores just written); those reads are not refused."""
    run = _current()
    if run is None:
        yield
        return
    run.reading_own += 1
    try:
        yield
    finally:
        run.reading_own -= 1


def _regular(path: PathLike) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def input_refused(option: str, out: PathLike, src: PathLike, what: str = "") -> InvalidInputError:
    """The one message for an output that is an input: ``-o X is the input file Y (through a
    link); writing there would destroy it. Choose another output file.``"""
    how = "" if os.path.abspath(src) == os.path.abspath(out) else " (through a link)"
    of = f" ({what})" if what and what != "input" else ""
    return InvalidInputError(
        f"{option} {os.fspath(out)} is the input file {Path(src).name}{of}{how}; writing there "
        "would destroy it. Choose another output file.")


def note_read(path: PathLike, what: str = "input", *, own: bool = False) -> None:
    """Record that the command reads ``path`` (a regular file; streams are not recorded).

    Args:
        path: The file.
        what: What it is to the command (``"input"``, ``"--vectors"``, ``"template"``).
        own: The command reads back one of its own outputs (``--resume``): allowed.

    Raises:
        InvalidInputError: The file is an output the command declared (and not ``own``).
    """
    run = _current()
    if run is None or own or run.reading_own or str(path) == "-" or not _regular(path):
        return  # the command's own files (read back to resume) are not inputs
    for option, out in run.outputs:
        if same_file(out, path):
            raise InvalidInputError(
                f"{what} {os.fspath(path)} is also the file of {option}; the run would "
                "write over what it reads. Choose another output file.")
    run.reads.append((what, os.path.abspath(path)))


def note_output(option: str, path: PathLike) -> None:
    """Record an output the command declared (by
    :func:`~divmeter.inputs.data.paths.guard_outputs`)."""
    run = _current()
    if run is not None and str(path) != "-":
        run.outputs.append((option, os.path.abspath(path)))


def read_paths() -> list[tuple[str, str]]:
    """``(what, path)`` of every file the current command has read so far (none outside one)."""
    run = _current()
    return list(run.reads) if run is not None else []


def claim_write(path: PathLike, option: str = "output") -> None:
    """Refuse, in a command, to write a file it has read as an input (through any link); its
    own files read back (``--resume``, checkpoints: :func:`reading_own_outputs`) are not inputs.

    Raises:
        InvalidInputError: One line naming the option and the input.
    """
    run = _current()
    if run is None or str(path) == "-" or not os.path.lexists(path):
        return
    for what, src in run.reads:
        if os.path.exists(src) and same_file(src, path):
            raise input_refused(option, path, src, what)


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name the same file (through symlinks and hard links too).

    ``"-"`` (stdin/stdout) is never the same file as anything.

    Example:
        >>> same_file("a/../b.jsonl", "b.jsonl"), same_file("-", "-")
        (True, False)
    """
    if str(a) == "-" or str(b) == "-":
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare the resolved paths
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_input_as_output(
    inputs: Iterable[str | os.PathLike[str]], output: str | os.PathLike[str] | None
) -> None:
    """Refuse an output that is one of the inputs.

    Raises:
        InvalidInputError: ``"-o scores.jsonl is the input file sets.jsonl (through a link);
            writing there would destroy it. Choose another output file."``

    Example:
        >>> refuse_input_as_output(["in.jsonl"], "./in.jsonl")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: -o ./in.jsonl is the input file in.jsonl; ...
    """
    if output is None or str(output) == "-":
        return
    for src in inputs:
        if same_file(src, output):
            raise input_refused("-o", output, src)


@contextlib.contextmanager
def output_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing, never truncated) while inside.

    The lock is the operating system's advisory ``flock``: another divmeter run that asks for it
    fails at once; it is released when the process ends, however it ends. Where ``fcntl`` does
    not exist (Windows) no lock is taken.

    Raises:
        InvalidInputError: If another process holds the lock.
    """
    claim_write(path)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InvalidInputError(
                f"{Path(path).name} is being written by another process (it holds the file's "
                "lock); wait for that run to finish or choose another output file."
            ) from None
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def replace_atomically(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path to write; when the block succeeds its content becomes ``path``.

    A regular (or missing) ``path`` is replaced by renaming the temporary file, made beside it,
    over it (atomic; the old file's permission bits kept). Anything else (``/dev/stdout``, a
    FIFO, ``/dev/full``) gets the finished temporary file's bytes copied into it, in place: the
    node itself is never handed to a writer (Parquet's deletes the file it failed to write),
    renamed or removed. On an error the temporary file is removed and a regular ``path`` is
    left as it was.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.json"
        >>> with replace_atomically(p) as tmp:
        ...     _ = tmp.write_text("[]")
        >>> p.read_text()
        '[]'
    """
    import shutil

    claim_write(path)
    target = Path(os.path.realpath(path))  # through a symlink: replace the file it points to
    regular = not target.exists() or target.is_file()
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                dir=target.parent if regular else None)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if not regular:
            with open(tmp, "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
                dst.flush()
            return
        if target.exists():
            with contextlib.suppress(OSError):
                os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
