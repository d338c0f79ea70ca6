"""Helpers shared by the benchmarks and the fixture-freezing scripts (run with .venv-bench).

Benchmarks import it as ``from _common import ...`` (their folder is ``sys.path[0]``); the
scripts under ``tests/fixtures/`` put this folder on ``sys.path`` first. Nothing here is used by
divmeter or its tests.

* :func:`best_time`: best time of a few runs (the machine is shared: best-of is stabler);
* :func:`zipf_probs`: the Zipf-like word distribution of the generated benchmark texts;
* :func:`compiled_path`: load divmeter's compiled kernels and name the path that runs;
* :func:`pkg_resources_shim`, :func:`load_diversity`, :func:`load_diversity_homogenization`:
  import the peer libraries whose packaging is broken in a modern environment.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def best_time(fn: Callable[[], Any], repeat: int = 1,
              clock: Callable[[], float] = time.process_time) -> tuple[float, Any]:
    """The best ``clock`` time of ``repeat`` runs of ``fn`` and the last run's result
    (default clock: CPU time of this process, since wall-clock time on a shared machine would
    mostly measure the other processes)."""
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
    return best, out


def best_times(fns: dict[str, Callable[[], Any]], repeat: dict[str, int]
               ) -> tuple[dict[str, float], dict[str, Any]]:
    """Best CPU time of each function over its ``repeat`` runs, the runs interleaved (round
    ``r`` runs every function still due, so a slow spell of the machine hits all of them), and
    each one's last result."""
    best = {k: math.inf for k in fns}
    out: dict[str, Any] = {}
    for r in range(max(repeat.values())):
        for k, fn in fns.items():
            if r >= repeat[k]:
                continue
            t0 = time.process_time()
            out[k] = fn()
            best[k] = min(best[k], time.process_time() - t0)
    return best, out


def zipf_probs(v: int, s: float = 1.1) -> np.ndarray:
    """Probabilities ``1 / r**s`` of the ranks ``r = 1..v``, normalised."""
    p = 1.0 / np.arange(1, v + 1) ** s
    out: np.ndarray = p / p.sum()
    return out


def pkg_resources_shim() -> None:
    """taaled and lexical-diversity import ``pkg_resources`` (gone from setuptools >= 81) only
    for ``resource_filename``; provide that one function when the module is missing."""
    if importlib.util.find_spec("pkg_resources") is not None:
        return
    shim = types.ModuleType("pkg_resources")

    def resource_filename(package: str, name: str) -> str:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        return os.path.join(os.path.dirname(spec.origin), name)

    shim.resource_filename = resource_filename  # type: ignore[attr-defined]
    sys.modules["pkg_resources"] = shim


def load_diversity() -> types.SimpleNamespace:
    """The `diversity` package's (Shaib et al.) ``compression_ratio``,
    ``ngram_diversity_score`` and ``self_repetition_score``, imported from its metric modules
    without its ``__init__`` (which needs spaCy)."""
    spec = importlib.util.find_spec("diversity")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("the `diversity` package is missing: run with .venv-bench/bin/python")
    pkg = types.ModuleType("diversity")
    pkg.__path__ = list(spec.submodule_search_locations)
    sys.modules.setdefault("diversity", pkg)
    return types.SimpleNamespace(
        compression_ratio=importlib.import_module("diversity.compression").compression_ratio,
        ngram_diversity_score=importlib.import_module(
            "diversity.ngram_diversity").ngram_diversity_score,
        self_repetition_score=importlib.import_module(
            "diversity.self_repetition").self_repetition_score,
    )


def load_diversity_homogenization() -> Callable[..., float]:
    """``diversity.homogenization_score`` without the package ``__init__`` (which imports spaCy):
    its module file is loaded directly."""
    spec = importlib.util.find_spec("diversity")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "homogenization.py"
    mod_spec = importlib.util.spec_from_file_location("diversity_homogenization", path)
    assert mod_spec is not None and mod_spec.loader is not None
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod.homogenization_score  # type: ignore[no-any-return]


def compiled_path() -> str:
    """Load divmeter's compiled kernels now, as a long job does after its first 16M characters
    (numba import + the first call of the cached kernels), and say which path the timed runs
    take: ``jit`` (numba, ``divmeter[fast]``) or ``numpy`` (no numba, or ``DIVMETER_NO_JIT=1``)."""
    from divmeter.inputs.text import intern
    from divmeter.metrics.richness import ttr

    t0 = time.perf_counter()
    jit = intern.compiled()
    if jit is None:
        return "numpy (numba not installed, or DIVMETER_NO_JIT=1)"
    t1 = time.perf_counter()
    ttr(["warm up the cached kernels " * 400])
    import numba

    return (f"jit (numba {numba.__version__}; import {t1 - t0:.2f} s, first call of the "
            f"cached kernels {time.perf_counter() - t1:.2f} s, paid once per process)")
