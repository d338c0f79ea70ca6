"""Precomputed embeddings in: arrays, ``.npy`` files and columns of lists.

Metrics that take vectors (``divmeter list --family content``: the embedding and geometry
metrics) score precomputed embeddings instead of embedding texts. They come in as:

* **Python**: an ``(n, d)`` NumPy array (or a list of equal-length lists of numbers) in place of a
  set of texts: ``divmeter.score(X, "diameter")``, ``divmeter.score_many([X1, X2], ...)``;
  with ``kernel="precomputed"`` an ``(n, n)`` similarity matrix.
* **A ``.npy`` file as the input** of ``divmeter score``: ``(S, n, d)`` is ``S`` sets of ``n``
  vectors (ids ``"0"`` .. ``"S-1"``), ``(n, d)`` one set.
* **``--vectors SOURCE`` beside a file of sets**: SOURCE is a ``.npy`` file whose rows follow the
  responses of the sets in file order (``(N, d)`` with ``N`` the total number of responses, or
  ``(S, n, d)`` one block per set), or the name of a field of each set: a JSONL/JSON key or a
  CSV/Parquet column holding the set's vectors as a list of lists (CSV: as JSON text). In a
  Parquet file in long form (one row per response, ``set_id``) the column holds one vector (a
  list of numbers) per row, and the file may have no text column at all.

Every array is checked once here (numbers, 2-D, finite) and becomes float64; a malformed one
stops the run with one line naming the file and the set. Only numpy is imported (pyarrow
lazily, for Parquet).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.lines import display_name, json_field
from divmeter.inputs.data.model import ResponseSet
from divmeter.inputs.data.outputs import note_read

__all__ = [
    "is_vector_input",
    "as_vectors",
    "read_npy_sets",
    "vector_reader",
    "is_npy",
]

Reader = Callable[..., Iterator[ResponseSet]]


def is_npy(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a NumPy ``.npy`` file (by its extension)."""
    return str(path).lower().endswith(".npy")


def is_vector_input(x: Any) -> bool:
    """Whether ``x`` is a set of precomputed vectors rather than texts: a numeric array, or a
    non-empty list whose items are all numeric arrays or lists of numbers.

    Example:
        >>> is_vector_input(np.zeros((2, 3))), is_vector_input([[0.1, 0.2], [0.3, 0.4]])
        (True, True)
        >>> is_vector_input(["a", "b"]), is_vector_input([]), is_vector_input([["a", "b"]])
        (False, False, False)
    """
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is not None:
        return kind in "biuf"
    if not isinstance(x, (list, tuple)) or not x or type(x[0]) is str:  # (texts: at once)
        return False
    for row in x:
        rkind = getattr(getattr(row, "dtype", None), "kind", None)
        if rkind is not None:
            if rkind not in "biuf":
                return False
            continue
        if not isinstance(row, (list, tuple)) or not row:
            return False
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row):
            return False
    return True


def as_vectors(x: Any, *, what: str = "vectors", check_finite: bool = True) -> np.ndarray:
    """``x`` as an ``(n, d)`` float64 array, checked.

    ``check_finite=False`` leaves the check for NaN and infinities to the caller (the vector
    kernels make it from the squared norms they compute anyway, saving a pass over the data).

    Raises:
        InvalidInputError: Not numbers, not 2-D (rows of unequal length included), a row with
            NaN or an infinity, or zero dimensions.

    Example:
        >>> as_vectors([[1, 2], [3, 4]]).dtype
        dtype('float64')
        >>> as_vectors([[1.0, float("nan")]])
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: `vectors` row 0 holds NaN or an infinity.
    """
    if isinstance(x, np.ndarray) and x.dtype == np.float64 and x.ndim == 2 and x.shape[1]:
        if check_finite and not math.isfinite(float(x.sum())):  # NaN and inf reach the sum
            _check_finite(x, what)
        return x
    kind = _leaf_kind(x)
    if kind is not None and kind not in "biuf":  # strings ("1") are text, never numbers
        raise InvalidInputError(
            f"`{what}` must be an (n, d) array of numbers (one row per response); got "
            f"{'strings' if kind in 'USa' else 'values that are not numbers'}.")
    try:
        X = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"`{what}` must be an (n, d) array of numbers (one row per response); got rows "
            "that are not numbers or differ in length."
        ) from None
    if X.ndim != 2 or (X.shape[0] and X.shape[1] == 0):
        raise InvalidInputError(
            f"`{what}` must be an (n, d) array of numbers (one row per response); got shape "
            f"{X.shape}."
        )
    if check_finite:
        _check_finite(X, what)
    return X


def _leaf_kind(x: Any) -> str | None:
    """The numpy kind of what ``x`` holds (``"U"`` for strings, ``"f"`` for floats...), or
    ``None`` when numpy cannot tell (ragged rows: left to the conversion's own error)."""
    if isinstance(x, np.ndarray):
        return x.dtype.kind
    try:
        kind: str = np.asarray(x).dtype.kind
    except (TypeError, ValueError):
        return None
    if kind == "O":  # mixed: any string or bytes among the values is text
        flat = [v for row in x for v in (row if isinstance(row, (list, tuple)) else [row])]
        return "U" if any(isinstance(v, (str, bytes)) for v in flat) else None
    return kind


def _check_finite(X: np.ndarray, what: str) -> None:
    bad = np.flatnonzero(~np.isfinite(X).all(axis=1))
    if bad.size:
        raise InvalidInputError(f"`{what}` row {int(bad[0])} holds NaN or an infinity.")


def _load_npy(path: str | os.PathLike[str]) -> np.ndarray:
    """The array of a ``.npy`` file, memory-mapped (read as it is used, once): its header is
    checked first (numbers, 2 or 3 dimensions, and one set's float64 copy within the memory
    limit), so a file too large is refused before a byte of it is read."""
    name = display_name(path)
    note_read(path)  # the command's guard knows every file it reads
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError) as exc:
        raise InvalidInputError(f"{name}: not a readable .npy array of numbers ({exc}).") from None
    if not isinstance(A, np.ndarray):  # an .npz archive (or another container) named .npy
        closer = getattr(A, "close", None)
        if closer is not None:
            closer()
        raise InvalidInputError(
            f"{name}: is not a .npy array but a {type(A).__name__} (an .npz archive?); save "
            "one array with numpy.save.")
    if A.dtype.kind not in "biuf":
        raise InvalidInputError(f"{name}: must hold numbers; got dtype {A.dtype}.")
    if A.ndim not in (2, 3):
        raise InvalidInputError(
            f"{name}: must be (sets, n, d) or (n, d) (one set); got shape {A.shape}."
        )
    from divmeter.core import memory

    n, d = A.shape[-2:]
    memory.check("vectors", 16 * n * d,
                 f"one set of {n:,} x {d:,} vectors of {name} as float64, and a working copy")
    return A


def read_npy_sets(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[ResponseSet]:
    """The sets of a ``.npy`` file: ``(S, n, d)`` is ``S`` sets (ids ``"0"``..), ``(n, d)`` one.

    The sets have no texts (``responses == []``) and their ``vectors``.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "emb.npy"
        >>> np.save(p, np.ones((2, 3, 4)))
        >>> [(s.set_id, s.vectors.shape) for s in read_npy_sets(p)]
        [('0', (3, 4)), ('1', (3, 4))]
    """
    A = _load_npy(path)
    name = display_name(path)
    blocks = A if A.ndim == 3 else A[None]
    for i, block in enumerate(blocks):
        yield ResponseSet(str(i), [], vectors=as_vectors(block, what=f"{name} set {i}"))


def _attach_npy(sets: Iterator[ResponseSet], path: str, input_name: str
                ) -> Iterator[ResponseSet]:
    A = _load_npy(path)
    name = display_name(path)
    row = 0
    for i, s in enumerate(sets):
        n = len(s.responses)
        if A.ndim == 3:
            if i >= A.shape[0] or A.shape[1] != n:
                got = "no block" if i >= A.shape[0] else f"{A.shape[1]} rows"
                raise InvalidInputError(
                    f"{name}: set {s.set_id!r} of {input_name} has {n} responses; its block "
                    f"has {got} (a (sets, n, d) file needs sets of n responses)."
                )
            block = A[i]
        else:
            block = A[row : row + n]
            if block.shape[0] != n:
                raise InvalidInputError(
                    f"{name}: has {A.shape[0]} rows, fewer than the responses of {input_name} "
                    f"(set {s.set_id!r} needs rows {row}..{row + n - 1})."
                )
            row += n
        s.vectors = as_vectors(block, what=f"{name} set {s.set_id!r}")
        yield s
    if A.ndim == 2 and row != A.shape[0]:
        raise InvalidInputError(
            f"{name}: has {A.shape[0]} rows but the sets of {input_name} hold {row} responses."
        )


def _attach_field(sets: Iterator[ResponseSet], field: str, input_name: str
                  ) -> Iterator[ResponseSet]:
    for s in sets:
        if field not in s.metadata:
            raise InvalidInputError(
                f"{input_name}: set {s.set_id!r} has no field {field!r} (--vectors names the "
                "field or column holding each set's vectors, or a .npy file)."
            )
        value = s.metadata.pop(field)
        if isinstance(value, str):
            value = json_field(value, f"{input_name}: set {s.set_id!r}: field {field!r}",
                               "a list of vectors")
        if hasattr(value, "tolist"):
            value = value.tolist()
        where = f"{input_name} set {s.set_id!r} field {field!r}"
        X = as_vectors(value if value else np.zeros((0, 1)), what=where)
        if s.responses and X.shape[0] != len(s.responses):
            raise InvalidInputError(
                f"{where}: has {X.shape[0]} vectors for {len(s.responses)} responses."
            )
        s.vectors = X
        yield s


def _parquet_sets(path: str, column: str) -> Iterator[ResponseSet]:
    """Sets from a Parquet file whose ``column`` holds vectors: a list of lists per row (one row
    per set) or a list of numbers per row (long form: one row per response, ``set_id``)."""
    from divmeter.core._optional import require

    pq = require("pyarrow.parquet", extra="io", package="pyarrow")
    pa = require("pyarrow", extra="io")
    name = display_name(path)
    table = pq.read_table(path)
    if column not in table.column_names:
        raise InvalidInputError(
            f"{name}: has no column {column!r}; its columns are {', '.join(table.column_names)}."
        )
    typ = table.schema.field(column).type
    if not pa.types.is_list(typ) and not pa.types.is_large_list(typ):
        raise InvalidInputError(f"{name}: column {column!r} must hold lists; got {typ}.")
    nested = pa.types.is_list(typ.value_type) or pa.types.is_large_list(typ.value_type)
    cols = table.column_names
    id_col = next((c for c in ("set_id", "id", "sample_id") if c in cols), None)
    label_col = next((c for c in ("label", "label_value") if c in cols), None)
    data = table.to_pydict()
    n_rows = table.num_rows

    def label(i: int) -> Any:
        return data[label_col][i] if label_col else None

    if nested:
        for i in range(n_rows):
            sid = str(data[id_col][i]) if id_col else str(i)
            texts = data["responses"][i] if "responses" in cols else []
            where = f"{name} row {i + 1} column {column!r}"
            X = as_vectors(data[column][i] or np.zeros((0, 1)), what=where)
            if texts and len(texts) != X.shape[0]:
                raise InvalidInputError(f"{where}: has {X.shape[0]} vectors for {len(texts)} "
                                        "responses.")
            yield ResponseSet(sid, list(texts or []), label=label(i), vectors=X)
        return
    if id_col is None:
        raise InvalidInputError(
            f"{name}: a column of vectors with one vector per row needs a 'set_id' column."
        )
    groups: dict[str, list[int]] = {}
    for i in range(n_rows):
        groups.setdefault(str(data[id_col][i]), []).append(i)
    for sid, rows in groups.items():
        where = f"{name} set {sid!r} column {column!r}"
        X = as_vectors([data[column][i] for i in rows], what=where)
        texts = [data["response"][i] or "" for i in rows] if "response" in cols else []
        yield ResponseSet(sid, texts, label=label(rows[0]), vectors=X)


def vector_reader(base: Reader, source: str | None) -> Reader:
    """A set reader for precomputed vectors: ``.npy`` inputs, or ``base`` (the usual reader of
    sets) with each set's vectors attached from ``source`` (a ``.npy`` file or a field / column
    name; see the module docstring).

    Example:
        >>> import tempfile, pathlib
        >>> from divmeter.inputs.data import read_sets
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "s.jsonl").write_text('{"id": "a", "responses": ["x", "y"]}\\n')
        >>> np.save(d / "e.npy", np.eye(2))
        >>> [s.vectors.tolist() for s in vector_reader(read_sets, str(d / "e.npy"))(
        ...     str(d / "s.jsonl"), None)]
        [[[1.0, 0.0], [0.0, 1.0]]]
    """

    def read(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[ResponseSet]:
        if is_npy(path):
            if source is not None:
                raise InvalidInputError(
                    f"{display_name(path)} is already an array of vectors; --vectors goes with "
                    "a file of sets."
                )
            yield from read_npy_sets(path)
            return
        if source is None:
            yield from base(path, fmt)
            return
        if str(path) == "-":
            raise InvalidInputError("--vectors needs a file of sets, not stdin.")
        name = display_name(path)
        if is_npy(source):
            yield from _attach_npy(base(path, fmt), source, name)
            return
        parquet = (fmt or "").lower() == "parquet" or Path(path).name.lower().endswith(
            (".parquet", ".parquet.gz"))
        if parquet:
            yield from _parquet_sets(str(path), source)
            return
        yield from _attach_field(base(path, fmt), source, name)

    return read
