"""What a model load tells the user (issue 15: "the first use of a model says once what it is
converting or loading and how long it will take").

The packaged models are prepared on their first use: the Gemma and SmolLM2 GGUF files are
converted into transformers folders, the mpnet part packages are joined and unpacked, all into the
divmeter cache. :func:`first_use` says so once per model and process on the ``divmeter`` logger at
INFO level, which the command line shows on stderr (silenced by ``--quiet``); :func:`timed_load`
logs at DEBUG level (``--verbose``) where each model was loaded from and how long it took.
Python users see both after ``logging.basicConfig(level=logging.INFO)``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["first_use", "announce_load", "timed_load", "FIRST_USE_SECONDS"]

_log = logging.getLogger("divmeter.models")
_SAID: set[str] = set()
_LOCK = threading.Lock()

#: How long a first use takes on an idle CPU, shown in the notice: the CPU time of one
#: conversion with an empty cache (measured with transformers 5.23 on this project's 2-core
#: machine: Gemma 68.7 s including assembling its GGUF, SmolLM2 27.6 s). The conversion runs on one
#: core, so on an idle machine the wall time is about the same; on a busy one it is longer.
FIRST_USE_SECONDS: dict[str, str] = {
    "gemma-3-270m": "about 70 s on an idle CPU",
    "smollm2-135m-instruct": "about 30 s on an idle CPU",
}


def first_use(name: str, cache: str | Path, *, action: str = "converts") -> None:
    """Say, once per model and process, that a model is prepared on its first use.

    Args:
        name: The model's name as the user wrote it or as it is packaged.
        cache: Where the prepared copy goes.
        action: What the first use does to it (``"converts"``, ``"unpacks"``).

    Example:
        >>> import logging
        >>> first_use("doctest-model", "/tmp/cache")  # logged at INFO, once
        >>> "doctest-model" in _SAID
        True
    """
    with _LOCK:
        if name in _SAID:
            return
        _SAID.add(name)
    took = FIRST_USE_SECONDS.get(name)
    _log.info("loading %s (first use %s it into %s%s; later runs load from cache)", name, action,
              cache, f", {took}" if took else "")


def announce_load(name: str, what: str) -> None:
    """Say, once per model and process, that ``what`` ``name`` is being loaded, before the
    seconds that takes (a sentence encoder: importing torch and reading the model, ~6 s cold),
    so that a progress bar that has not moved yet is explained. Nothing when :func:`first_use`
    already spoke of this model.

    Example:
        >>> announce_load("doctest-encoder", "sentence encoder")  # logged at INFO, once
        >>> "load:doctest-encoder" in _SAID
        True
    """
    with _LOCK:
        if name in _SAID or f"load:{name}" in _SAID:
            return
        _SAID.add(f"load:{name}")
    _log.info("loading the %s %s (a few seconds; the progress bar moves once it is loaded)",
              what, name)


@contextmanager
def timed_load(name: str, where: str | Path) -> Iterator[None]:
    """Log at DEBUG level (``--verbose``) how long loading ``name`` from ``where`` took."""
    t0 = time.perf_counter()
    yield
    _log.debug("loaded %s from %s in %.1f s", name, where, time.perf_counter() - t0)
