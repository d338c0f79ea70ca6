"""``divmeter compare A B [C ...]``: did B (or C ...) lose diversity against A on the same
prompts? Parse, load each system's scores, call :func:`divmeter.studies.meta.compare.compare`,
format."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from divmeter.apps.cli.meta import (
    BootOpt,
    CiOpt,
    ColumnOpt,
    EmptyOpt,
    LowerOpt,
    MetricOpt,
    Output,
    SeedOpt,
    _cond,
    _directions,
    _field,
    _fmt,
    _scores,
)
from divmeter.apps.cli.options import option_group
from divmeter.core.errors import InvalidInputError

__all__ = ["compare_cmd"]


def _named(arg: str) -> tuple[str, str]:
    """``NAME=PATH`` names a system; a plain path is named by its file name without suffixes."""
    if not os.path.exists(arg) and "=" in arg:
        name, _, path = arg.partition("=")
        if name and path:
            return name, path
    stem = Path(arg).name
    for suffix in (".gz", ".jsonl", ".json", ".csv", ".parquet"):
        stem = stem.removesuffix(suffix)
    return stem, arg


def _systems(files: list[str], by: str | None, metric: list[str] | None,
             column: list[str] | None, empty: str, key: str, workers: int, quiet: bool,
             signatures: dict[str, dict[str, str]]
             ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, list[str]], str]:
    """Scores and keys per system: one file per system, or one file split by the field ``by``;
    each system's metric signatures (computed, or read from its score file) go into
    ``signatures``."""
    systems: dict[str, dict[str, np.ndarray]] = {}
    keys: dict[str, list[str]] = {}
    if by is not None:
        if len(files) != 1:
            raise InvalidInputError(f"--by {by} splits one file into systems; got {len(files)} "
                                    "files.")
        table, scores, _, _, sigs, rows = _scores(files[0], metric, column, empty, None,
                                                  workers, quiet, need_labels=False)
        groups = [_system_of(table, i, by) for i in rows]
        for g in dict.fromkeys(groups):
            mask = np.array([x == g for x in groups])
            systems[g] = {m: v[mask] for m, v in scores.items()}
            signatures[g] = sigs
            keys[g] = [_cond(_field(table, i, key)) for i, hit in zip(rows, mask, strict=True)
                       if hit]
        return systems, keys, table.source
    if len(files) < 2:
        raise InvalidInputError("compare needs two files or more (one per system), or one file "
                                "and --by FIELD naming the system of each row.")
    for arg in files:
        name, path = _named(arg)
        if name in systems:
            raise InvalidInputError(f"two systems are named {name!r}; name them NAME=PATH.")
        table, scores, _, _, sigs, rows = _scores(path, metric, column, empty, None, workers,
                                                  quiet, need_labels=False)
        systems[name] = scores
        signatures[name] = sigs
        keys[name] = [_cond(_field(table, i, key)) for i in rows]
    return systems, keys, " vs ".join(systems)


def _system_of(table: Any, i: int, by: str) -> str:
    """The system a row belongs to (its ``--by`` field); a row without one is refused, never
    made a system named "None" or "nan"."""
    value = _field(table, i, by)
    if value is None or (isinstance(value, float) and value != value) or (
            isinstance(value, str) and not value.strip()):
        raise InvalidInputError(
            f"{table.source} row {i + 1} (set {table.ids[i]!r}): field {by!r} is empty; --by "
            "needs the system of every row (fill it in, or leave the row out).")
    return _cond(value)


@option_group
def compare_cmd(
    files: Annotated[list[str], typer.Argument(
        help="One file per system (`divmeter score` outputs or response sets; NAME=PATH names "
        "a system), the baseline first unless --baseline; or one file with --by.",
        show_default=False)],
    metric: MetricOpt = None,
    column: ColumnOpt = None,
    lower_is_diverse: LowerOpt = None,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="The system every other one is compared with (default: the first).",
        show_default=False)] = None,
    key: Annotated[str, typer.Option(
        "--key", help="What matches items across systems: set_id, prompt or a metadata "
        "field.")] = "set_id",
    by: Annotated[str | None, typer.Option(
        "--by", help="With one file: the field that names each row's system (e.g. model).",
        show_default=False)] = None,
    empty: EmptyOpt = "drop",
    bootstrap: BootOpt = 10_000,
    ci: CiOpt = "percentile",
    seed: SeedOpt = 0,
    *,
    out: Output,
) -> None:
    """Each system against a baseline on the same prompts: per metric the mean difference with
    a paired-bootstrap CI, the Wilcoxon p (Holm-corrected over every metric and system), Cohen's
    d and the win rate, all oriented so that a positive difference means MORE diverse than the
    baseline (self-BLEU and homogenization are turned around).

    Examples: `divmeter compare base.jsonl sft.jsonl -m distinct-n -m self-bleu`;
    `divmeter compare scores.jsonl --by model --baseline base -c distinct-n`.
    """
    _fmt(out.fmt, "compare")
    from divmeter.studies.meta.compare import compare

    if bootstrap is not None and bootstrap < 1:
        bootstrap = None
    sigs: dict[str, dict[str, str]] = {}
    systems, keys, source = _systems(files, by, metric, column, empty, key, out.workers,
                                     out.quiet, sigs)
    first = next(iter(systems.values()))
    dirs = _directions(metric, lower_is_diverse, list(first))
    result = compare(systems, keys, baseline=baseline, directions=dirs, bootstrap=bootstrap,
                     ci_method=ci, seed=seed, key=key, metric_signatures=sigs)
    out.emit(result, source=source)

