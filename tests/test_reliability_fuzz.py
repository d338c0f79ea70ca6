"""Issue 16: a fuzz test over the readers and the metric-argument parser.

Whatever the bytes of a JSONL or CSV file, or the text of a ``-m`` argument, divmeter answers
with its result or one of its own errors (:class:`~divmeter.errors.DivmeterError`: one line,
naming the place), never another exception: 1,000 examples each.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from divmeter.batch import resolve_metrics  # noqa: E402
from divmeter.data import read_sets  # noqa: E402
from divmeter.data.readers import read_records  # noqa: E402
from divmeter.errors import DivmeterError  # noqa: E402

FUZZ = settings(max_examples=1000, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# raw bytes, and byte strings built from the pieces that make JSON and CSV interesting
PIECES = [b"{", b"}", b"[", b"]", b'"', b",", b":", b"\n", b"\r\n", b" ", b"\xef\xbb\xbf",
          b"\xff", b"\x00", b'"set_id"', b'"responses"', b'"label"', b"1", b"-1e999", b"null",
          b"true", b'"a b"', b"set_id", b"response", b"resp_0", b"resp_1", b"label_value",
          b'"metadata"', b"NaN", b"\\u0000", b"\\ud800"]
FILE_BYTES = st.one_of(st.binary(max_size=300),
                       st.lists(st.sampled_from(PIECES), max_size=60).map(b"".join))
JSON_ROWS = st.lists(st.dictionaries(
    st.sampled_from(["set_id", "id", "responses", "prompt", "label", "metadata", "x"]),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                 lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6),
    max_size=6), max_size=5)


def _read_all(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"f{suffix}"
        path.write_bytes(data)
        try:
            for s in read_sets(path):
                assert isinstance(s.set_id, str)
                assert all(isinstance(r, str) for r in s.responses)
        except DivmeterError as exc:
            assert "\n" not in str(exc)
        try:
            list(read_records(path))
        except DivmeterError as exc:
            assert "\n" not in str(exc)


@FUZZ
@given(FILE_BYTES, st.sampled_from([".jsonl", ".csv", ".json"]))
def test_readers_never_raise_anything_else(data: bytes, suffix: str) -> None:
    _read_all(data, suffix)


@FUZZ
@given(JSON_ROWS)
def test_jsonl_reader_on_wrong_shapes(rows: list[dict[str, object]]) -> None:
    _read_all("".join(json.dumps(r) + "\n" for r in rows).encode(), ".jsonl")


NAMES = ["distinct-n", "self-bleu", "ttr", "decan", "vendi-ngram", "ngram-cosine", "distinct",
         "entropy-n", "compression-ratio", ""]
ARG_PIECES = ["n", "n_max", "=", ",", ":", "1", "0", "-1", "1e9", "true", "maybe", "x", " ",
              "tokenizer", "whitespace", "lowercase", "variant", "corpus", "\u00e9", "None",
              "[1]", "{}", "q", "inf", "nan"]
METRIC_ARGS = st.one_of(
    st.text(max_size=40),
    st.tuples(st.sampled_from(NAMES), st.lists(st.sampled_from(ARG_PIECES), max_size=12))
    .map(lambda t: t[0] + "".join(t[1])),
)


@FUZZ
@given(METRIC_ARGS)
def test_metric_argument_parser_never_raises_anything_else(arg: str) -> None:
    try:
        plans = resolve_metrics([arg])
    except DivmeterError as exc:
        assert "\n" not in str(exc).strip()
        return
    assert len(plans) == 1 and plans[0].column
