"""Issue 27: the hypothesis fuzz at the command line (test_reliability_fuzz.py fuzzes the
functions underneath): ``divmeter meta agreement`` on any table, ``divmeter annotate`` on any
input file, and ``divmeter judge`` against tests/faultserver.py (127.0.0.1 only) answering
whatever a fuzzed script says.

Each run ends in a result (exit 0; 1 for a judge run that got no valid rating, as documented)
or in one refusal line ``divmeter: error: ...`` with exit 2: never a traceback, and never the
``divmeter: internal error: ...`` line the CLI boundary prints for an unexpected exception (a
divmeter bug), which counts as a failure here. Bounded: 25-40 examples each (a fixed draw),
no deadline.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cli_util import run_main  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: A deeper, random run on demand (DIVMETER_FUZZ_EXAMPLES=500); the suite's run is fixed.
DEEP = int(os.environ.get("DIVMETER_FUZZ_EXAMPLES", "0"))
BOUNDED = settings(max_examples=DEEP or 40, deadline=None, derandomize=not DEEP,
                   suppress_health_check=[HealthCheck.too_slow,
                                          HealthCheck.function_scoped_fixture])


def _clean_end(code: int, out: str, err: str, *, ok: tuple[int, ...] = (0,)) -> None:
    """A result, or exactly one refusal line; never a traceback or an internal error."""
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        lines = [ln for ln in err.strip().splitlines() if ln.startswith("divmeter: error: ")]
        assert len(lines) == 1, err
        assert err.strip().splitlines()[-1] == lines[0], err
    else:
        assert code in ok, (code, err)


# ---------------------------------------------------------------------------------------------
# meta agreement: any labels, any shape, CSV / TSV / JSON / JSONL

LABEL = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.sampled_from(["", " ", "1", "2", "nan", "inf", "-0", "1e999", "NaN", "\u00e9", "a,b",
                     '"', "\t"]),
)


def _write_table(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    suffix = path.suffix
    if suffix in (".csv", ".tsv"):
        import csv

        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, delimiter="\t" if suffix == ".tsv" else ",")
            w.writerow(columns)
            for r in rows:
                w.writerow(["" if r.get(c) is None else r.get(c) for c in columns])
    elif suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        path.write_text(json.dumps(rows), encoding="utf-8")


@BOUNDED
@given(rows=st.lists(st.fixed_dictionaries({"r1": LABEL, "r2": LABEL, "ref": LABEL}),
                     max_size=8),
       suffix=st.sampled_from([".csv", ".tsv", ".jsonl", ".json"]),
       raters=st.sampled_from([["r1"], ["r1", "r2"], ["r2", "r1", "r1"]]),
       reference=st.booleans(), fmt=st.sampled_from(["json", "markdown", "table"]))
def test_meta_agreement_cli_on_any_table(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str],
                                         rows: list[dict[str, Any]], suffix: str,
                                         raters: list[str], reference: bool, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"ratings{suffix}"
        _write_table(path, rows, ["r1", "r2", "ref"])
        args = [a for r in raters for a in ("-r", r)] + (["--reference", "ref"] if reference
                                                          else [])
        code, out, err = run_main(monkeypatch, capsys, "meta", "agreement", str(path), *args,
                                  "-f", fmt)
    _clean_end(code, out, err)
    if code == 0 and fmt == "json":
        d_ = json.loads(out)  # strict JSON: no NaN / Infinity tokens
        assert d_["n_items"] == len(rows) and d_["n_raters"] == len(set(raters))


BINARY_PIECES = [b"PK\x03\x04", b"PAR1", b"\x00" * 8, b"\xff\xfe", b"r1,r2\n", b"1,2\n",
                 b"[Content_Types].xml", b"xl/worksheets/sheet1.xml", b"<sheetData/>",
                 b"\xef\xbb\xbf", b'{"r1": 1}', b"\n"]


@BOUNDED
@given(data=st.one_of(st.binary(max_size=300),
                      st.lists(st.sampled_from(BINARY_PIECES), max_size=12).map(b"".join)),
       suffix=st.sampled_from([".xlsx", ".parquet", ".csv", ".tsv", ".json", ".jsonl"]))
def test_meta_agreement_cli_on_any_bytes(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str], data: bytes,
                                         suffix: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"ratings{suffix}"
        path.write_bytes(data)
        code, out, err = run_main(monkeypatch, capsys, "meta", "agreement", str(path), "-r",
                                  "r1", "-r", "r2", "-f", "json")
    _clean_end(code, out, err)


@pytest.mark.parametrize("header", [b"\x0b", b"a\x0cb", b"r\xc2\x85x", b"\xe2\x80\xa8"])
def test_a_line_break_inside_a_message_is_folded(header: bytes, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # found by the fuzz above: a CSV header of one vertical tab made the refusal ("no column
    # 'r1'; columns: \x0b.") two lines; every line break of a file's text is folded now
    path = tmp_path / "ratings.csv"
    path.write_bytes(header + b"\n1\n")
    code, out, err = run_main(monkeypatch, capsys, "meta", "agreement", str(path), "-r", "r1",
                              "-r", "r2")
    assert code == 2 and len(err.strip().splitlines()) == 1, repr(err)
    assert err.startswith("divmeter: error: ratings.csv: no column 'r1'; columns: ")


# ---------------------------------------------------------------------------------------------
# the score-table meta commands on any numbers (test_meta_degenerate.py holds the named cases)

# mostly valid values, so that runs reach the statistics, with every kind of bad one mixed in
LABEL_N = st.sampled_from([0, 1] * 10 + [0.0, 1.0, 2, None, 0.5, "x", 10**400])
_GOOD = st.one_of(st.floats(min_value=-2, max_value=2), st.sampled_from([0.5, 0.5, 1.0]))
SCORE_N = st.one_of(*[_GOOD] * 8,  # one draw in ten is a bad one
                    st.sampled_from([None, float("nan"), float("inf"), "1", True, 10**400]))
LENGTH_N = st.one_of(*[st.floats(min_value=0, max_value=150)] * 9,
                     st.sampled_from([None, -1, float("inf"), "x", 10**400]))
META_RUNS = [["contest", "-c", "m"], ["dectest", "-c", "m", "--pair-accuracy"],
             ["dectest", "-c", "m", "--ranking", "--context-field", "k"],
             ["nuggets", "-c", "m", "--group-size", "2"], ["paired", "-c", "m", "--key", "k"],
             ["contest", "-c", "m", "--nan", "omit", "--bootstrap", "20"],
             ["decan-confound", "-c", "m", "--length", "len"]]


@BOUNDED
@given(rows=st.lists(st.fixed_dictionaries(
           {"set_id": st.sampled_from(["a", "b", "c"]), "label": LABEL_N, "m": SCORE_N,
            "k": st.sampled_from(["p", "q", "r", None]), "len": LENGTH_N}), max_size=8),
       run=st.sampled_from(META_RUNS))
def test_meta_commands_on_any_numbers(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str],
                                      rows: list[dict[str, Any]], run: list[str]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scores.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        code, out, err = run_main(monkeypatch, capsys, "meta", run[0], str(path), *run[1:],
                                  "-f", "json")
    _clean_end(code, out, err)
    hypothesis.event(f"{run[0]} exit {code}")
    if code == 0:
        json.loads(out)  # strict JSON: no NaN / Infinity tokens
        assert err.strip() == "" or all(ln.startswith("divmeter: note: ")
                                        for ln in err.strip().splitlines()), err


# ---------------------------------------------------------------------------------------------
# annotate: init on any input file, then the other subcommands on the study it made

TASK_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-5, max_value=10**6)
    | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=3),
    max_leaves=8)
TASK_ROWS = st.lists(st.fixed_dictionaries(
    {"set_id": st.one_of(st.text(max_size=5), st.integers(), st.none()),
     "responses": st.one_of(st.lists(st.text(max_size=30), max_size=5), TASK_VALUE)},
    optional={"prompt": TASK_VALUE, "label": TASK_VALUE, "group": TASK_VALUE,
              "metadata": TASK_VALUE}), max_size=6)


@BOUNDED
@given(rows=TASK_ROWS, kind=st.sampled_from(["abs", "asp", "sim", "rnk", "cs", "xyz"]),
       ratings=st.sampled_from(["1", "3", "0", "-1"]), strict=st.booleans())
def test_annotate_cli_on_any_task_file(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str],
                                       rows: list[dict[str, Any]], kind: str, ratings: str,
                                       strict: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        tasks = Path(d) / "tasks.jsonl"
        tasks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        db = Path(d) / "study.sqlite"
        code, out, err = run_main(monkeypatch, capsys, "annotate", "init", str(tasks), "--db",
                                  str(db), "--kind", kind, "--ratings", ratings,
                                  *(["--strict"] if strict else []))
        _clean_end(code, out, err)
        hypothesis.event(f"init exit {code}")
        if code != 0:
            return
        for cmd in (["status"], ["invite", "-n", "2"], ["export", "-o", "-"],
                    ["report", "-o", str(Path(d) / "rep"), "--no-plots", "--reps", "5"]):
            code, out, err = run_main(monkeypatch, capsys, "annotate", cmd[0], str(db), *cmd[1:])
            _clean_end(code, out, err)
            hypothesis.event(f"{cmd[0]} exit {code}")


@BOUNDED
@given(data=st.one_of(st.binary(max_size=300),
                      st.lists(st.sampled_from([b'{"set_id": "a", "responses": ["x", "y"]}',
                                                b"\n", b"\xff", b"\x00", b"{", b"]", b'"',
                                                b"set_id,response\n", b"a,b\n"]),
                               max_size=12).map(b"".join)),
       suffix=st.sampled_from([".jsonl", ".csv", ".json"]))
def test_annotate_init_on_any_bytes(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str], data: bytes,
                                    suffix: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        tasks = Path(d) / f"tasks{suffix}"
        tasks.write_bytes(data)
        code, out, err = run_main(monkeypatch, capsys, "annotate", "init", str(tasks), "--db",
                                  str(Path(d) / "s.sqlite"), "--kind", "abs")
    _clean_end(code, out, err)


# ---------------------------------------------------------------------------------------------
# judge against the fault-injecting loopback server


@pytest.fixture(scope="module")
def fault_server():  # type: ignore[no-untyped-def]
    pytest.importorskip("httpx")
    pytest.importorskip("tenacity")
    from faultserver import FaultServer

    fs = FaultServer({})
    assert fs.url.startswith("http://127.0.0.1:")
    yield fs
    fs.close()


ANSWERS = st.one_of(
    st.sampled_from(["ok", "429", "500", "drop", "garbage", "truncated", "400", "echo-auth",
                     'say:{"rationale": "r", "score": 4}', 'say:{"score": 1e999}',
                     'say:{"score": NaN}', 'say:{"score": "4"}', 'say:{"score": [4]}',
                     "say:Set A", "say:B", "say:tie", "say:", "say:\u0000",
                     'say:{"rationale": "' + "x" * 2000 + '", "score": 3}']),
    st.text(max_size=40).map(lambda t: f"say:{t}"),
)


@settings(max_examples=DEEP or 25, deadline=None, derandomize=not DEEP,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(script=st.lists(ANSWERS, min_size=1, max_size=3),
       task=st.sampled_from(["pairwise", "absolute"]))
def test_judge_cli_against_any_server_answers(fault_server, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              script: list[str], task: str) -> None:
    fault_server.scripts["chat/completions"] = script
    fault_server.scripts["completions"] = script
    fault_server.attempts.clear()
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.jsonl"  # two items: two requests a run
        name = "pairs.jsonl" if task == "pairwise" else "pools.jsonl"
        src.write_text("".join((EXAMPLES / name).read_text().splitlines(True)[:2]))
        monkeypatch.setenv("DIVMETER_CACHE", str(Path(d) / "cache"))
        monkeypatch.setenv("DIVMETER_API_KEY", "sk-fuzz-secret")
        code, out, err = run_main(monkeypatch, capsys, "judge", str(src), "--task", task,
                                  "--model", "openai:fault-model", "--base-url", fault_server.url,
                                  "-o", str(Path(d) / "j.jsonl"),
                                  "-n", "1", "--retries", "1", "--max-attempts", "2",
                                  "--orders", "ab", "--fewshot", "none", "--timeout", "5",
                                  "-q")
    hypothesis.event(f"judge exit {code}")
    # 1: the run produced no valid rating (the judge's documented failure)
    _clean_end(code, out, err, ok=(0, 1))
    assert "sk-fuzz-secret" not in err + out
