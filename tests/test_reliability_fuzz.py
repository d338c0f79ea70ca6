"""Issues 16 and 27: fuzz tests over the readers, the metric-argument parser, the agreement
readers, the annotation CLI and the HTTP client (against tests/faultserver.py).

Whatever the bytes of a JSONL or CSV file, or the text of a ``-m`` argument, divmeter answers
with its result or one of its own errors (:class:`~divmeter.core.errors.DivmeterError`: one line,
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

from divmeter.core.errors import DivmeterError  # noqa: E402
from divmeter.engine.batch import resolve_metrics  # noqa: E402
from divmeter.inputs.data import read_sets  # noqa: E402
from divmeter.inputs.data.readers import read_records  # noqa: E402

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


# ---------------------------------------------------------------------------------------------
# Issue 27: the agreement readers, the annotation CLI and the HTTP client, fuzzed

SMALL = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
TABLE_PIECES = [b"r1", b"r2", b",", b"\t", b"\n", b'"', b"{", b"}", b"[", b"]", b":", b"1",
                b"2", b"null", b'"r1"', b'"r2"', b"\xff", b"\x00", b"\xef\xbb\xbf", b" ",
                b"9" * 5000, b"\\ud800", b"NaN"]
TABLE_BYTES = st.one_of(st.binary(max_size=200),
                        st.lists(st.sampled_from(TABLE_PIECES), max_size=40).map(b"".join))


@SMALL
@given(TABLE_BYTES, st.sampled_from([".csv", ".tsv", ".jsonl", ".json"]))
def test_agreement_readers_never_raise_anything_else(data: bytes, suffix: str) -> None:
    from divmeter.apps.cli.agreement import read_rating_table

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"t{suffix}"
        path.write_bytes(data)
        try:
            table = read_rating_table(str(path), ["r1", "r2"])
        except DivmeterError as exc:
            assert "\n" not in str(exc).strip()
            return
        assert len(table["r1"]) == len(table["r2"])
        assert all(not isinstance(v, (dict, list)) for v in table["r1"] + table["r2"])


DB_PIECES = [b"SQLite format 3\x00", b"\x00" * 100, b"\x10\x00", b"\xff" * 20, b"CREATE TABLE",
             b"not a database\n"]


@SMALL
@given(st.one_of(st.binary(max_size=400),
                 st.lists(st.sampled_from(DB_PIECES), max_size=8).map(b"".join)),
       st.sampled_from([["status"], ["invite", "-n", "1"], ["export", "-o", "-"]]))
def test_annotation_cli_on_any_database_bytes(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str], data: bytes,
                                              cmd: list[str]) -> None:
    from cli_util import run_main

    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "s.sqlite"
        db.write_bytes(data)
        code, _, err = run_main(monkeypatch, capsys, "annotate", cmd[0], str(db), *cmd[1:])
        assert code in (0, 2), err
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and err.startswith("divmeter: error: ")


BEHAVIOURS = ["ok", "429", "500", "drop", "garbage", "truncated", "400", "echo-auth",
              "say:x", "say:"]


@pytest.fixture(scope="module")
def fault_server():  # type: ignore[no-untyped-def]
    pytest.importorskip("httpx")
    pytest.importorskip("tenacity")
    from faultserver import FaultServer

    fs = FaultServer({})
    yield fs
    fs.close()


@SMALL
@given(st.lists(st.sampled_from(BEHAVIOURS), min_size=1, max_size=4),
       st.sampled_from(["completions", "chat/completions", "embeddings", "other"]),
       st.integers(min_value=1, max_value=3))
def test_http_client_always_ends_in_an_answer_or_a_failure(fault_server, script: list[str],
                                                           path: str, n: int) -> None:
    from divmeter.backends.http import Failure, HttpClient

    fault_server.scripts[path] = script
    fault_server.attempts.clear()
    with tempfile.TemporaryDirectory() as d:
        c = HttpClient(fault_server.url, api_key="sk-fuzz-secret", cache=Path(d),
                       max_attempts=2, timeout=3, backoff=0.001, backoff_max=0.002)
        out = c.post_many(path, [{"id": i} for i in range(n)])
        assert len(out) == n
        for r in out:
            assert isinstance(r, (dict, Failure))
            if isinstance(r, Failure):
                assert "\n" not in r.message and "sk-fuzz-secret" not in r.message
        assert c.stats.requests + c.stats.cache_hits >= n
