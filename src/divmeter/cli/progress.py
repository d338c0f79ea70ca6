"""The one progress bar of the command line (``divmeter score``, ``divmeter meta``).

On a terminal it is a rich bar that disappears when done; off a terminal (a log file, CI) it is
a plain line every :data:`PLAIN_EVERY` seconds, each ending in a newline, so a log never holds
``\\r``-joined bar frames.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_bar", "quiet_libraries", "QUIET_ENV"]


@contextmanager
def progress_bar(
    show: bool, total: int | None = None, label: str = "scoring"
) -> Iterator[Callable[[int, int | None], None] | None]:
    """A rich progress bar on stderr, removed when done; yields its callback
    ``callback(done, total)`` (``None`` when not shown, e.g. with ``--quiet`` or off a terminal).
    """
    if not show:
        yield None
        return
    import sys

    if not sys.stderr.isatty():
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
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=total, completed=0)

        def callback(done: int, total_: int | None) -> None:
            bar.update(task, completed=done, total=total_ if total_ is not None else total)

        yield callback


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
