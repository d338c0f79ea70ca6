"""DataFrames and Hugging Face datasets in, a DataFrame out: divmeter in a notebook.

:func:`score_frame` scores response sets held in a pandas DataFrame (or a ``datasets.Dataset``):

* **long form**, one row per response: ``by`` names the column(s) whose value tells the sets
  apart (e.g. ``prompt_id``); the result has one row per set;
* **wide form**, one row per set: the ``text`` column holds a list of responses; the result keeps
  the input's rows (and its other columns).

Either way the result has one column per metric (named like ``divmeter score``'s, e.g.
``self-bleu:n=3``), a ``reasons`` column (``{column: why}`` for every null value) and the
signatures in ``df.attrs["signatures"]``. The numbers are those of :func:`divmeter.score`: the
work is :func:`divmeter.engine.batch.score_sets`, as for ``divmeter score``.

pandas is imported only here (``pip install 'divmeter[io]'``); ``import divmeter`` stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError

__all__ = ["score_frame", "sets_from_frame", "load_hf"]


def _as_pandas(data: Any) -> Any:
    pd = require("pandas", extra="io")
    if isinstance(data, pd.DataFrame):
        return data
    if hasattr(data, "to_pandas") and hasattr(data, "column_names"):  # datasets.Dataset
        return data.to_pandas()
    raise InvalidInputError(
        f"score_frame needs a pandas DataFrame or a datasets.Dataset; got {type(data).__name__}.")


def _plain(v: Any) -> Any:
    """numpy / pandas scalars as Python ones (JSON-safe metadata)."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            return v.item()
        except (ValueError, AttributeError):
            return v
    return v


def _is_texts(v: Any) -> bool:
    import numpy as np

    return isinstance(v, (list, tuple, np.ndarray)) and all(isinstance(t, str) for t in v)


def sets_from_frame(data: Any, *, text: str = "response", by: str | Sequence[str] | None = None,
                    label: str | None = None) -> tuple[list[Any], Any]:
    """The response sets of a long- or wide-form frame, and the frame of their keys.

    Args:
        data: A pandas DataFrame or a ``datasets.Dataset``.
        text: The column of texts (long form: one string per row; wide form: a list per row).
        by: Long form: the column(s) whose values tell the sets apart. ``None``: wide form.
        label: A column holding each set's label (long form: the first row's of the set).

    Returns:
        ``(sets, keys)``: :class:`~divmeter.inputs.data.ResponseSet` s and a DataFrame with one row
        per set (long form: the ``by`` columns; wide form: the input without ``text``).

    Raises:
        InvalidInputError: A missing column, texts that are not strings, a string column in wide
            form, a list column in long form.
    """
    from divmeter.inputs.data import ResponseSet

    df = _as_pandas(data)
    keys = [by] if isinstance(by, str) else list(by or [])
    for c in [text, *keys, *([label] if label else [])]:
        if c not in df.columns:
            raise InvalidInputError(
                f"column {c!r} not found; the frame has {', '.join(map(str, df.columns))}.")
    values = df[text].tolist()
    if not keys:
        sets = []
        for i, v in enumerate(values):
            if isinstance(v, str) or not _is_texts(v):
                what = "a string" if isinstance(v, str) else type(v).__name__
                raise InvalidInputError(
                    f"row {i}: column {text!r} must hold a list of strings (wide form) or give "
                    f"by=... to group one response per row (long form); got {what}.")
            meta = {c: _plain(df[c].iloc[i]) for c in df.columns if c not in (text, label)}
            sets.append(ResponseSet(str(df.index[i]), [str(t) for t in v],
                                    label=None if label is None else _plain(df[label].iloc[i]),
                                    metadata={k: v for k, v in meta.items()
                                              if v is None or isinstance(v, (str, int, float,
                                                                             bool))}))
        return sets, df.drop(columns=[text])
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise InvalidInputError(
                f"row {i}: column {text!r} must hold one string per row in long form "
                f"(by={by!r}); got {type(v).__name__}.")
    groups = df.groupby(keys, sort=False, dropna=False)
    sets, rows = [], []
    for key, part in groups:
        key_t = key if isinstance(key, tuple) else (key,)
        sid = "|".join(str(k) for k in key_t)
        lab = None if label is None else _plain(part[label].iloc[0])
        row = {k: _plain(v) for k, v in zip(keys, key_t, strict=True)}
        sets.append(ResponseSet(sid, part[text].tolist(), label=lab, metadata=dict(row)))
        rows.append(row)
    pd = require("pandas", extra="io")
    return sets, pd.DataFrame(rows, columns=keys)


def score_frame(data: Any, metrics: str | Sequence[Any], *, text: str = "response",
                by: str | Sequence[str] | None = None, label: str | None = None,
                workers: int = 1) -> Any:
    """Score the response sets of a DataFrame (or ``datasets.Dataset``) with one or more metrics.

    Args:
        data: Long form (one response per row, grouped by ``by``) or wide form (a column of
            lists, ``by=None``).
        metrics: ``"name[:k=v,...]"`` or ``(name, params)``, or a list of them.
        text: The text column.
        by: Long form: the column(s) telling the sets apart.
        label: A label column (kept as ``label``).
        workers: Processes to spread the sets over.

    Returns:
        A DataFrame with one row per set: the keys (long form: ``by``; wide form: the input's
        other columns, same index), ``n_responses``, one column per metric (``NaN`` where the
        metric is undefined) and ``reasons``; ``attrs["signatures"]`` maps each metric column to
        its signature.

    Raises:
        InvalidInputError, UnknownMetricError: Bad frame, metric or parameter.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"prompt_id": [1, 1, 2, 2],
        ...                    "response": ["a b", "a c", "x y", "x y"]})
        >>> out = score_frame(df, "distinct-n:n=1", by="prompt_id")
        >>> out[["prompt_id", "distinct-n:n=1"]].to_dict("records")
        [{'prompt_id': 1, 'distinct-n:n=1': 0.75}, {'prompt_id': 2, 'distinct-n:n=1': 0.5}]
        >>> out.attrs["signatures"]["distinct-n:n=1"][:22]
        'distinct-n|n:1|tok:tev'
    """
    from divmeter.engine.batch import resolve_metrics, score_sets

    wanted = [metrics] if isinstance(metrics, (str, tuple)) else list(metrics)
    plans = resolve_metrics(wanted)
    sets, keys = sets_from_frame(data, text=text, by=by, label=label)
    out = keys.copy()
    if label is not None and by is not None:
        out["label"] = [s.label for s in sets]
    out["n_responses"] = [len(s.responses) for s in sets]
    records = list(score_sets(sets, plans, workers=workers,
                              with_signatures=True))
    signatures: dict[str, str] = {}
    for p in plans:
        out[p.column] = [float("nan") if r.get(p.column) is None else r[p.column]
                         for r in records]
        for r in records:
            sig = (r.get("signatures") or {}).get(p.column)
            if sig:
                signatures[p.column] = sig
                break
    out["reasons"] = [dict(r.get("reasons") or {}) for r in records]
    out.attrs["signatures"] = signatures
    return out


def load_hf(path: str, *, split: str | None = None) -> Any:
    """A local Hugging Face dataset, offline: a folder written by ``save_to_disk`` or a dataset
    folder / data file that ``datasets.load_dataset`` reads (json, csv, parquet).

    Raises:
        InvalidInputError: The path does not exist, or the split is not in the dataset.
        MissingDependencyError: Without the ``datasets`` package (``divmeter[hf]``).
    """
    import os

    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # local datasets only: never the hub
    datasets = require("datasets", extra="hf")
    datasets.disable_progress_bars()  # results and errors only; loading a local file is quick
    if not os.path.exists(path):
        raise InvalidInputError(
            f"hf:{path}: no such local dataset (divmeter reads saved or local datasets only, "
            "offline).")
    if os.path.isdir(path) and (os.path.exists(os.path.join(path, "dataset_dict.json"))
                                or os.path.exists(os.path.join(path, "dataset_info.json"))):
        ds = datasets.load_from_disk(path)
    elif os.path.isfile(path):
        ext = path.rsplit(".", 1)[-1].lower()
        builder = {"jsonl": "json", "json": "json", "csv": "csv", "parquet": "parquet"}.get(ext)
        if builder is None:
            raise InvalidInputError(
                f"hf:{path}: expected a saved dataset folder or a .json/.jsonl/.csv/.parquet "
                f"file; got .{ext}.")
        ds = datasets.load_dataset(builder, data_files=path)
    else:
        ds = datasets.load_dataset(path)
    if isinstance(ds, datasets.DatasetDict):
        if split is None:
            split = "test" if "test" in ds else next(iter(ds))
        if split not in ds:
            raise InvalidInputError(
                f"hf:{path}: split {split!r} not found; it has {', '.join(ds)}.")
        return ds[split]
    return ds
