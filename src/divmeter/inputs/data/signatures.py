"""The signatures a score output carries, read back from the file (issue 31).

``divmeter score`` keeps each metric's signature in every record (a ``signatures`` field of
``{column: signature}``; CSV and Parquet hold it as JSON text), in a JSON output's summary, and in
a Parquet file's schema metadata (:data:`divmeter.inputs.data.formats.PARQUET_SIGNATURES_KEY`).
``divmeter report``, ``meta`` and ``compare`` read them here instead of recomputing them: a
signature recomputed on another install is not the one that made the numbers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from divmeter.inputs.data.formats import PARQUET_SIGNATURES_KEY
from divmeter.inputs.data.lines import detect_format

__all__ = ["record_signatures", "read_signatures", "summary_signatures"]


def record_signatures(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{column: signature}`` over score records' ``signatures`` fields (the first record that
    has a column's signature gives it).

    Example:
        >>> record_signatures([{"signatures": {"ttr": "ttr|v:1"}}, {"signatures": {}}])
        {'ttr': 'ttr|v:1'}
    """
    out: dict[str, str] = {}
    for r in records:
        sigs = r.get("signatures")
        if isinstance(sigs, Mapping):
            for c, s in sigs.items():
                if isinstance(s, str):
                    out.setdefault(str(c), s)
    return out


def summary_signatures(doc: Any) -> dict[str, str]:
    """``{column: signature}`` of a JSON score output's ``summary`` (empty if it has none)."""
    if not isinstance(doc, Mapping):
        return {}
    metrics = (doc.get("summary") or {}).get("metrics") or {}
    if not isinstance(metrics, Mapping):
        return {}
    return {str(k): v["signature"] for k, v in metrics.items()
            if isinstance(v, Mapping) and isinstance(v.get("signature"), str)}


def _parquet_signatures(path: str | os.PathLike[str]) -> dict[str, str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return {}
    try:
        meta = pq.read_schema(str(path)).metadata or {}
    except Exception:  # pyarrow's own errors: not a readable Parquet file, nothing to say
        return {}
    raw = meta.get(PARQUET_SIGNATURES_KEY)
    if raw is None:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        return {}
    return {str(k): v for k, v in doc.items() if isinstance(v, str)} \
        if isinstance(doc, dict) else {}


def read_signatures(path: str | os.PathLike[str],
                    records: Iterable[Mapping[str, Any]] | None = None) -> dict[str, str]:
    """Every ``{column: signature}`` a score output holds: its records' ``signatures`` (from
    ``records`` when they were read already), a JSON output's summary, a Parquet file's schema
    metadata. Empty for a file written with ``--no-signatures`` (or by another tool).

    Example:
        >>> import json, pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
        >>> _ = p.write_text(json.dumps({"set_id": "a", "row": 0, "ttr": 0.5,
        ...                              "signatures": {"ttr": "ttr|tok:ws|v:1"}}) + "\\n")
        >>> read_signatures(p)
        {'ttr': 'ttr|tok:ws|v:1'}
    """
    from divmeter.inputs.data.readers import read_records

    fmt = detect_format(path)
    out: dict[str, str] = {}
    if fmt == "parquet":
        out.update(_parquet_signatures(path))
    if fmt == "json":
        from divmeter.inputs.data.lines import loads, read_text

        try:
            out.update(summary_signatures(loads(read_text(path, "a JSON file"),
                                                os.path.basename(str(path)))))
        except (OSError, ValueError):
            pass
    for c, s in record_signatures(read_records(path) if records is None else records).items():
        out.setdefault(c, s)
    return out
