"""The one progress bar of the command line (``divmeter score``, ``divmeter meta``)."""

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


#: Environment switches that silence the progress bars and info logs of the model libraries
#: (transformers, huggingface_hub, sentence-transformers' tqdm, datasets).
QUIET_ENV = {
    "TRANSFORMERS_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def quiet_libraries() -> None:
    """Make ``-q`` silence the model libraries too: set :data:`QUIET_ENV` (inherited by worker
    processes) and, for libraries already imported, their own switches."""
    import os
    import sys

    os.environ.update(QUIET_ENV)
    if "transformers" in sys.modules:
        sys.modules["transformers"].logging.set_verbosity_error()
        sys.modules["transformers"].logging.disable_progress_bar()
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
