"""Write a meta-evaluation report folder: ``report.json``, ``report.md`` and PNG plots."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from divmeter.core.result import jsonable
from divmeter.inputs.data.paths import write_whole
from divmeter.report import plots
from divmeter.report.tables import markdown_table
from divmeter.studies.meta.protocols import ProtocolResult

__all__ = ["report_dict", "report_files", "write_report"]


def report_dict(result: ProtocolResult, *, source: str | None = None) -> dict[str, Any]:
    """Every number with its signature, the settings and the protocol-level extras."""
    from divmeter.core._version import __version__

    return {
        "protocol": result.protocol,
        "source": source,
        "divmeter_version": __version__,
        "settings": jsonable(result.settings),
        "results": result.to_dict(),
        "extra": jsonable(result.extra),
    }


def _plot_plan(result: ProtocolResult, out: Path, xlabel: str
               ) -> list[tuple[Path, Callable[[Path], Path]]]:
    """Each PNG plot of the report: its path and the function that draws it there."""
    plan: list[tuple[Path, Callable[[Path], Path]]] = []
    for name, arr in result.arrays.items():
        slug = plots.slug(name)
        if result.protocol in ("contest", "dectest", "paired", "stages", "compare",
                               "length-bias"):
            r = result.results[name].values
        if result.protocol == "contest":
            plan.append((out / f"hist_{slug}.png", partial(
                plots.class_histogram, arr["scores"], arr["labels"], arr["threshold"],
                title=f"{name}: OCA {r['oca']:.3f}, Spearman {r['spearman']:.3f}")))
        elif result.protocol == "dectest":
            plan.append((out / f"scatter_{slug}.png", partial(
                plots.parameter_scatter, arr["scores"], arr["values"],
                title=f"{name}: Spearman {r['spearman']:.3f}", xlabel=xlabel)))
        elif result.protocol in ("paired", "stages", "compare"):
            if result.protocol == "compare":
                labels = tuple(arr["labels"])
            elif result.protocol == "stages":
                left, _, right = name.replace("!=", ">").partition(">")
                labels = (left, right)
            else:
                labels = ("high (P1)", "low (P2)")
            plan.append((out / f"paired_{slug}.png", partial(
                plots.paired_differences, arr["a"], arr["b"], title=name, labels=labels,
                direction=r.get("direction", "higher"),
                reference=labels[1] if result.protocol == "compare" else None)))
        elif result.protocol == "length-bias":
            plan.append((out / f"length_{slug}.png", partial(
                plots.length_scatter, arr["scores"], arr["lengths"],
                title=f"{name}: short win rate {r['short_win_rate']:.3f}")))
    if result.protocol == "pairwise" and "kappa" in result.extra:
        k = result.extra["kappa"]
        plan.append((out / "kappa.png", partial(plots.kappa_heatmap, k["names"], k["matrix"])))
    return plan


def report_files(result: ProtocolResult, out_dir: str | os.PathLike[str], *,
                 plot: bool = True) -> list[Path]:
    """The files :func:`write_report` writes for ``result`` (so a command can check them all
    against its inputs before anything is written)."""
    out = Path(out_dir)
    plan = _plot_plan(result, out, "parameter") if plot else []
    return [out / "report.json", out / "report.md", *(p for p, _ in plan)]


def write_report(
    result: ProtocolResult,
    out_dir: str | os.PathLike[str],
    *,
    source: str | None = None,
    plot: bool = True,
    xlabel: str = "parameter",
) -> list[Path]:
    """Write ``report.json``, ``report.md`` and (with ``plot``) the protocol's PNG plots.

    Plots: conTest -> ``hist_<metric>.png`` (class histograms, optimal threshold marked);
    decTest -> ``scatter_<metric>.png``; paired / stages -> ``paired_<name>.png``; pairwise ->
    ``kappa.png``; length bias -> ``length_<metric>.png``. Each file is written whole
    (:func:`divmeter.inputs.data.paths.write_whole`).

    Returns:
        The written files.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "report.json", out / "report.md"]
    write_whole(files[0], json.dumps(report_dict(result, source=source), indent=2,
                                     allow_nan=False) + "\n")
    title = f"{result.protocol}" + (f" — {source}" if source else "")
    write_whole(files[1], markdown_table(result, title=title))
    if not plot:
        return files
    for path, draw in _plot_plan(result, out, xlabel):
        files.append(draw(path))
    return files
