"""Guards around output files: never write over an input, one writer at a time, whole files.

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
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from divmeter.core.errors import InvalidInputError

__all__ = ["same_file", "refuse_input_as_output", "output_lock", "replace_atomically"]


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
            how = "" if os.path.abspath(src) == os.path.abspath(output) else " (through a link)"
            raise InvalidInputError(
                f"-o {output} is the input file {Path(src).name}{how}; writing there would "
                "destroy it. Choose another output file."
            )


@contextlib.contextmanager
def output_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing, never truncated) while inside.

    The lock is the operating system's advisory ``flock``: another divmeter run that asks for it
    fails at once; it is released when the process ends, however it ends. Where ``fcntl`` does
    not exist (Windows) no lock is taken.

    Raises:
        InvalidInputError: If another process holds the lock.
    """
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
