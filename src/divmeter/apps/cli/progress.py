"""The one progress bar of the command line (``divmeter score``, ``divmeter meta``).

On a terminal it is a rich bar that disappears when done; off a terminal (a log file, CI) it is
a plain line every :data:`PLAIN_EVERY` seconds, each ending in a newline, so a log never holds
``\\r``-joined bar frames.

With ``within_sets=True`` it also listens to the metrics (:func:`divmeter.core.memory.reporting`):
before the work on a set whose rough time reaches :data:`divmeter.core.memory.ANNOUNCE_SECONDS`
(homogenization, vendi-ngram, the pair matrices of the embedding metrics), one line on stderr
says its cost (:meth:`divmeter.core.memory.Cost.note`), and the work inside that set (pair blocks,
Gram rows, the eigenvalue solver) advances a second bar, or a plain line every
:data:`PLAIN_EVERY` seconds off a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["progress_bar", "quiet_libraries", "QUIET_ENV"]


@contextmanager
def progress_bar(
    show: bool, total: int | None = None, label: str = "scoring", *, within_sets: bool = False
) -> Iterator[Callable[[int, int | None], None] | None]:
    """A rich progress bar on stderr, removed when done; yields its callback
    ``callback(done, total)`` (``None`` when not shown, e.g. with ``--quiet``; off a terminal a
    plain line every :data:`PLAIN_EVERY` seconds). ``within_sets``: also the cost notes and the
    progress inside large sets (see the module docstring).
    """
    if not show:
        yield None
        return
    import sys

    from divmeter.core import memory

    if not sys.stderr.isatty():
        if not within_sets:
            yield _plain_progress(label, total)
            return
        with memory.reporting(_note, _plain_steps()):
            yield _plain_progress(label, total)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=total, completed=0)
        inner: list[Any] = []  # the task of the set being worked on, once there is one

        def callback(done: int, total_: int | None) -> None:
            bar.update(task, completed=done, total=total_ if total_ is not None else total)
            if inner:
                bar.update(inner[0], visible=False)

        def note(line: str) -> None:
            bar.console.print(f"divmeter: {line}", markup=False, highlight=False, soft_wrap=True)

        def steps(what: str, done: int, total_: int | None) -> None:
            if not inner:
                inner.append(bar.add_task(what, total=total_, completed=done))
            bar.update(inner[0], description=what, completed=done, total=total_, visible=True)

        if not within_sets:
            yield callback
            return
        with memory.reporting(note, steps):
            yield callback


def _note(line: str) -> None:
    """A cost note off a terminal: one line on stderr."""
    import sys

    print(f"divmeter: {line}", file=sys.stderr, flush=True)


def _plain_steps() -> Callable[[str, int, int | None], None]:
    """Progress inside a set off a terminal: a line every :data:`PLAIN_EVERY` seconds, and one
    when a stage starts."""
    import sys
    import time

    start = last = time.monotonic()
    stage = [""]

    def report(what: str, done: int, total: int | None) -> None:
        nonlocal last
        now = time.monotonic()
        if what == stage[0] and now - last < PLAIN_EVERY:
            return
        stage[0], last = what, now
        share = f"/{total:,} ({100 * done / total:.0f}%)" if total else ""
        print(f"divmeter: {what}: {done:,}{share}, {now - start:.0f} s", file=sys.stderr,
              flush=True)

    return report


#: Seconds between two plain progress lines off a terminal.
PLAIN_EVERY = 10.0


def _plain_progress(label: str, total: int | None) -> Callable[[int, int | None], None]:
    import sys
    import time

    start = last = time.monotonic()

    def callback(done: int, total_: int | None) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < PLAIN_EVERY:
            return
        last = now
        n = total_ if total_ is not None else total
        share = f" ({100 * done / n:.0f}%)" if n else ""
        of = f"/{n}" if n else ""
        print(f"divmeter: {label}: {done}{of}{share}, {now - start:.0f} s", file=sys.stderr,
              flush=True)

    return callback


#: Environment switches that silence the progress bars and info logs of the model libraries
#: (transformers, huggingface_hub, sentence-transformers' tqdm, datasets).
QUIET_ENV = {
    "TRANSFORMERS_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "RAY_DEDUP_LOGS": "0",
    "DIVMETER_QUIET": "1",
}

#: Loggers of the libraries divmeter drives, held at ERROR under ``-q``.
QUIET_LOGGERS = ("transformers", "sentence_transformers", "torch", "ray", "ray.data", "httpx",
                 "urllib3", "datasets", "huggingface_hub", "numba", "tokenizers", "llama_cpp",
                 "accelerate", "spacy")


def quiet_libraries() -> None:
    """Make ``-q`` silence the model libraries too: set :data:`QUIET_ENV` (inherited by worker
    processes) and, for libraries already imported, their own switches."""
    import logging
    import os
    import sys
    import warnings

    os.environ.update(QUIET_ENV)
    # third-party warnings (transformers' FutureWarnings, ...) and logs: dropped under -q
    os.environ["PYTHONWARNINGS"] = "ignore"
    warnings.simplefilter("ignore")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    if "transformers" in sys.modules:
        sys.modules["transformers"].logging.set_verbosity_error()
        sys.modules["transformers"].logging.disable_progress_bar()
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
