"""The unit of corpus work: every response of one shard (file) streamed in batches into fresh
accumulators (:func:`shard_statistics`), which the local run (:mod:`divmeter.engine.corpus.run`) and
the distributed engines (:mod:`divmeter.engine.ray`) both call.

Inputs: what :func:`divmeter.inputs.data.read_sets` reads (JSONL, JSON, CSV, Parquet, optionally
``.gz``; Parquet in record batches), a plain-text file of one response per line (``.txt``), or a
Hugging Face ``datasets`` dataset: a folder written by ``Dataset.save_to_disk`` or
``hf:NAME[:SPLIT[:COLUMN]]`` (streamed; the column defaults to ``text``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from divmeter.core.errors import InvalidInputError
from divmeter.engine.corpus.stats import Accumulator
from divmeter.inputs.data.lines import text_lines
from divmeter.inputs.data.model import as_texts

__all__ = ["iter_texts", "shard_statistics", "ShardPass", "DEFAULT_BATCH_BYTES"]

#: Text held per batch when no memory budget is given (a quarter of the default 256 MB).
DEFAULT_BATCH_BYTES = 64 << 20
#: One pass of an engine over shards: ``(shards, accumulators, input_format=, batch_bytes=)``
#: -> an iterable of ``(shard, its accumulators, responses read)`` per shard, in any order; it
#: may also have ``reduce()``, giving per accumulator the summaries of the key ranges its
#: statistics were cut into (:meth:`divmeter.engine.corpus.stats.Accumulator.split`), or
#: ``None``, once every shard is merged.
ShardPass = Callable[..., Iterable[tuple[str, list[Accumulator], int]]]


def _hf_texts(src: str) -> Iterator[str]:
    from divmeter.core._optional import require

    datasets = require("datasets", extra="dist")
    if src.startswith("hf:"):
        name, _, rest = src[3:].partition(":")
        split, _, column = rest.partition(":")
        ds = datasets.load_dataset(name, split=split or "train", streaming=True)
    else:
        ds, column = datasets.load_from_disk(src), ""
        if hasattr(ds, "keys") and not hasattr(ds, "features"):  # a DatasetDict
            ds = ds[sorted(ds.keys())[0]]
    column = column or "text"
    for i, row in enumerate(ds):
        value = row.get(column)
        if isinstance(value, list):
            yield from as_texts(value, what=f"{src} row {i + 1} field {column!r}")
        elif isinstance(value, str):
            yield value
        else:
            raise InvalidInputError(
                f"{src} row {i + 1}: field {column!r} must be a string or a list of strings; "
                f"got {type(value).__name__}."
            )


def iter_texts(src: str, input_format: str | None = None) -> Iterator[str]:
    """Every response of a shard, streamed.

    Example:
        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
        >>> _ = p.write_text("one\\ntwo three\\n")
        >>> list(iter_texts(str(p)))
        ['one', 'two three']
    """
    if src.startswith("hf:") or (Path(src).is_dir() and (Path(src) / "state.json").exists()
                                 or (Path(src) / "dataset_dict.json").exists()):
        yield from _hf_texts(src)
        return
    low = src.lower()
    if input_format == "txt" or low.endswith((".txt", ".txt.gz")):
        for _, line in text_lines(src):  # UTF-8, bounded lines (one-line errors: file, line)
            # a lone carriage return ends a line too, as Python's text mode read it
            yield from line.split("\r") if "\r" in line else (line,)
        return
    from divmeter.inputs.data import read_sets

    for s in read_sets(src, input_format):
        yield from s.responses


def _batches(texts: Iterator[str], budget: int) -> Iterator[list[str]]:
    buf: list[str] = []
    size = 0
    for t in texts:
        buf.append(t)
        size += len(t) + 64
        if size >= budget:
            yield buf
            buf, size = [], 0
    if buf:
        yield buf


def shard_statistics(
    src: str,
    accs: Sequence[Accumulator],
    *,
    input_format: str | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    on_batch: Callable[[int], None] | None = None,
) -> tuple[list[Accumulator], int]:
    """Statistics of one shard for the current pass of each accumulator: fresh accumulators
    spawned from ``accs`` (which are not changed), and the number of responses read. This is
    the unit of work a distributed engine ships to a worker."""
    out = [a.spawn() for a in accs]
    for a in out:
        a.key = src  # one-worker metrics order the texts by shard
    n = 0
    for batch in _batches(iter_texts(src, input_format), batch_bytes):
        for a in out:
            a.add(batch)
        n += len(batch)
        if on_batch is not None:
            on_batch(len(batch))
    return out, n
