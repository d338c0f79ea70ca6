"""Corpus checkpoints as data: JSON with a format name, a version and the hash of the run's
inputs, never ``pickle`` (a crafted pickle runs code when it is loaded).

A checkpoint holds the run's progress (pass, shards done, responses) and, per metric, the data
attributes of its accumulator (:mod:`divmeter.engine.corpus.stats`): numbers, strings, lists,
tuples, dicts and counters of them, exact sums, numpy arrays and n-gram tables
(:class:`NgramTable`, with their spilled runs read back, and frozen runs), each non-JSON type
tagged. Loading
rebuilds every accumulator from the run's own metrics (:func:`make_accumulator`) and only then
sets the attributes that accumulator already has, with values of the same kind; anything else
(another format, version or run, a file that is not JSON, an unknown tag) is refused with one
line naming the file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.engine.corpus.stats import Accumulator, ExactSum, make_accumulator
from divmeter.inputs.text.table import FrozenRun, NgramTable

__all__ = ["FORMAT", "VERSION", "save_checkpoint", "load_checkpoint"]

FORMAT = "divmeter-corpus-checkpoint"
VERSION = 1
#: The largest checkpoint read back (a checkpoint grows with the corpus's distinct n-grams).
MAX_BYTES = 16 << 30


class _Skip(Exception):
    """A value that is not data (a tokenizer, a function): rebuilt by the accumulator itself."""


def _enc(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if f == f and abs(f) != float("inf") else {"f": repr(f)}
    if isinstance(v, list):
        return [_enc(x) for x in v]
    if isinstance(v, tuple):
        return {"t": [_enc(x) for x in v]}
    if isinstance(v, Counter):
        return {"c": [[_enc(k), _enc(x)] for k, x in v.items()]}
    if isinstance(v, dict):
        return {"d": [[_enc(k), _enc(x)] for k, x in v.items()]}
    if isinstance(v, ExactSum):
        return {"x": [float(p) for p in v.partials]}
    if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
        return {"a": [v.dtype.str, list(v.shape),
                      base64.b64encode(np.ascontiguousarray(v).tobytes()).decode("ascii")]}
    if isinstance(v, NgramTable):
        return {"T": _enc(v.to_state())}
    if isinstance(v, FrozenRun):
        return {"F": _enc(np.asarray(v.run))}
    raise _Skip


def _dec(v: Any, where: str) -> Any:
    if v is None or isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, list):
        return [_dec(x, where) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise InvalidInputError(f"{where}: unknown value {str(v)[:60]!r}.")
    (tag, body), = v.items()
    try:
        if tag == "f":
            return float(body) if body in ("nan", "inf", "-inf") else _bad(where, tag)
        if tag == "t":
            return tuple(_dec(x, where) for x in body)
        if tag == "c":
            return Counter({_key(_dec(k, where), where): _dec(x, where) for k, x in body})
        if tag == "d":
            return {_key(_dec(k, where), where): _dec(x, where) for k, x in body}
        if tag == "x":
            s = ExactSum()
            s.partials = [float(p) for p in body]
            return s
        if tag == "T":
            state = _dec(body, where)
            if not isinstance(state, dict):
                return _bad(where, tag)
            return NgramTable.from_state(state)
        if tag == "F":
            run = _dec(body, where)
            if not isinstance(run, np.ndarray) or run.ndim != 2 or run.shape[0] != 3:
                return _bad(where, tag)
            return FrozenRun(run.astype(np.uint64))
        if tag == "a":
            dtype, shape, data = body
            dt = np.dtype(str(dtype))
            if dt.kind not in "biuf" or dt.hasobject:
                return _bad(where, tag)
            arr = np.frombuffer(base64.b64decode(data, validate=True), dtype=dt)
            return arr.reshape([int(n) for n in shape]).copy()
    except (TypeError, ValueError, KeyError):
        return _bad(where, tag)
    return _bad(where, tag)


def _key(k: Any, where: str) -> Any:
    if isinstance(k, list):
        raise InvalidInputError(f"{where}: a list cannot be a key.")
    return k


def _bad(where: str, tag: str) -> Any:
    raise InvalidInputError(f"{where}: malformed value of kind {tag!r}.")


def _accumulator_state(acc: Accumulator) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in acc.__dict__.items():
        if name in ("budget", "spill_dir"):  # the run's settings, given again on resume
            continue
        try:
            out[name] = _enc(value)
        except _Skip:
            continue
    return out


def _same_kind(fresh: Any, got: Any) -> bool:
    if fresh is None or got is None:
        return True  # e.g. an embedding sum that is None until the first batch
    if isinstance(fresh, bool) or isinstance(got, bool):
        return isinstance(fresh, bool) and isinstance(got, bool)
    if isinstance(fresh, (int, float)) and isinstance(got, (int, float)):
        return True
    return type(fresh) is type(got)


def save_checkpoint(path: str, key: str, state: dict[str, Any]) -> None:
    """Write the run ``state`` (``pass``, ``done``, ``responses``, ``accs``) for run ``key`` to
    ``path`` atomically (a temporary file beside it, renamed over it)."""
    body = {"pass": int(state["pass"]), "done": list(state["done"]),
            "responses": int(state["responses"]),
            "accs": [{"name": a.name, "state": _accumulator_state(a)} for a in state["accs"]]}
    blob = json.dumps(body, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    doc = json.dumps({"format": FORMAT, "version": VERSION, "key": key,
                      "sha256": hashlib.sha256(blob.encode("ascii")).hexdigest()},
                     separators=(",", ":"))
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="ascii") as fh:
        fh.write(doc[:-1] + ',"body":' + blob + "}\n")
    os.replace(tmp, path)  # atomic: an interrupted save leaves the previous checkpoint


def load_checkpoint(path: str, key: str, plans: Sequence[Any]) -> dict[str, Any]:
    """The run state saved at ``path`` for run ``key`` with the accumulators of ``plans``.

    Raises:
        InvalidInputError: One line naming the file, for anything that is not a checkpoint
            divmeter wrote for this run (metrics and shards).
    """
    name = os.path.basename(path)
    where = f"checkpoint {name}"
    try:
        size = os.path.getsize(path)
        if size > MAX_BYTES:
            raise InvalidInputError(f"{where} is {size} bytes; expected at most {MAX_BYTES}.")
        with open(path, "rb") as fh:
            raw = fh.read()
        doc = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidInputError(
            f"{where} is not a divmeter corpus checkpoint (not the JSON divmeter writes); "
            "remove it or use another --checkpoint file.") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InvalidInputError(
            f"{where} is not a divmeter corpus checkpoint (no format {FORMAT!r}); remove it or "
            "use another --checkpoint file.")
    if doc.get("version") != VERSION:
        raise InvalidInputError(
            f"{where} has version {doc.get('version')!r}; this divmeter reads version {VERSION}. "
            "Remove it to start over.")
    if doc.get("key") != key:
        raise InvalidInputError(
            f"cannot resume from {where}: it was written for other metrics or other shards; "
            "remove it or use another --checkpoint file.")
    body = doc.get("body")
    blob = json.dumps(body, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    if not isinstance(body, dict) or hashlib.sha256(blob.encode()).hexdigest() != doc.get(
            "sha256"):
        raise InvalidInputError(f"{where} is damaged (its hash does not match its content); "
                                "remove it to start over.")
    try:
        accs_in = body["accs"]
        state: dict[str, Any] = {"key": key, "pass": int(body["pass"]),
                                 "done": [str(s) for s in body["done"]],
                                 "responses": int(body["responses"])}
        if len(accs_in) != len(plans):
            raise ValueError
        accs = []
        for p, saved in zip(plans, accs_in, strict=True):
            if saved["name"] != p.name:
                raise ValueError
            acc = make_accumulator(p.name, p.params)
            for attr, value in saved["state"].items():
                if attr in ("name", "params"):  # the run's own, checked through the key
                    continue
                if attr not in acc.__dict__ and attr != "key":
                    raise InvalidInputError(f"{where}: unknown field {attr!r} of {p.name}.")
                got = _dec(value, f"{where} field {attr!r} of {p.name}")
                if not _same_kind(acc.__dict__.get(attr, ""), got):
                    raise InvalidInputError(f"{where}: field {attr!r} of {p.name} has the "
                                            f"wrong kind ({type(got).__name__}).")
                acc.__dict__[attr] = got
            accs.append(acc)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InvalidInputError(f"{where} is malformed; remove it to start over.") from None
    state["accs"] = accs
    return state
