"""Write a meta-evaluation report folder: ``report.json``, ``report.md`` and PNG plots."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from divmeter.studies.meta.protocols import ProtocolResult
from divmeter.report import plots
from divmeter.report.tables import markdown_table
from divmeter.core.result import jsonable

__all__ = ["report_dict", "write_report"]


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
    ``kappa.png``; length bias -> ``length_<metric>.png``.

    Returns:
        The written files.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    p = out / "report.json"
    p.write_text(json.dumps(report_dict(result, source=source), indent=2, allow_nan=False) + "\n",
                 encoding="utf-8")
    files.append(p)
    title = f"{result.protocol}" + (f" — {source}" if source else "")
    p = out / "report.md"
    p.write_text(markdown_table(result, title=title), encoding="utf-8")
    files.append(p)
    if not plot:
        return files
    for name, arr in result.arrays.items():
        if result.protocol == "contest":
            r = result.results[name].values
            files.append(plots.class_histogram(
                arr["scores"], arr["labels"], arr["threshold"],
                out / f"hist_{plots.slug(name)}.png",
                title=f"{name}: OCA {r['oca']:.3f}, Spearman {r['spearman']:.3f}",
            ))
        elif result.protocol == "dectest":
            r = result.results[name].values
            files.append(plots.parameter_scatter(
                arr["scores"], arr["values"], out / f"scatter_{plots.slug(name)}.png",
                title=f"{name}: Spearman {r['spearman']:.3f}", xlabel=xlabel,
            ))
        elif result.protocol in ("paired", "stages", "compare"):
            if result.protocol == "compare":
                labels = tuple(arr["labels"])
            elif result.protocol == "stages":
                left, _, right = name.replace("!=", ">").partition(">")
                labels = (left, right)
            else:
                labels = ("high (P1)", "low (P2)")
            files.append(plots.paired_differences(
                arr["a"], arr["b"], out / f"paired_{plots.slug(name)}.png", title=name,
                labels=labels, direction=result.results[name].values.get("direction", "higher"),
                reference=labels[1] if result.protocol == "compare" else None,
            ))
        elif result.protocol == "length-bias":
            r = result.results[name].values
            files.append(plots.length_scatter(
                arr["scores"], arr["lengths"], out / f"length_{plots.slug(name)}.png",
                title=f"{name}: short win rate {r['short_win_rate']:.3f}",
            ))
    if result.protocol == "pairwise" and "kappa" in result.extra:
        k = result.extra["kappa"]
        files.append(plots.kappa_heatmap(k["names"], k["matrix"], out / "kappa.png"))
    return files
