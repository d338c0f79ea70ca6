"""Issue 27, round 3: the line bound of every reader, and binary files given as input.

One bound (``$DIVMETER_MAX_LINE``, 256 MiB by default; ``divmeter.inputs.data.lines.max_line``)
holds for a line of JSONL/CSV, a CSV field, a ``.txt`` shard's line, the first line of stdin read to
sniff its format, and every file read whole (a ``.json`` document, Parquet from a pipe, a
template): past it, one line of error naming the file and line and how to raise it. Binary input
(random bytes, gzip, PNG) anywhere a text file is read is one line with exit 2 naming the file;
the line says what the file looks like when its first bytes tell.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from cli_util import run_main
from divmeter.core.errors import InvalidInputError
from divmeter.engine.corpus.shards import iter_texts
from divmeter.inputs.data import read_sets
from divmeter.inputs.data.lines import read_head, read_whole
from divmeter.inputs.data.readers import read_records

LIMIT = 100_000
SET = {"set_id": "a", "responses": ["the cat sat", "a dog ran"]}


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIVMETER_MAX_LINE", str(LIMIT))


def _too_long(name: str, line: int = 1) -> str:
    return (f"{name} line {line}: longer than 100,000 bytes in all, and a JSON file is read "
            "whole; expected a smaller file, or JSONL: one record per line, streamed (or set "
            "DIVMETER_MAX_LINE to allow longer ones).")


def test_whole_json_file_is_bounded(small_limit: None, tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps([SET] * 3000, indent=1))  # ~300 KB over many lines
    assert big.stat().st_size > LIMIT
    lines_before = big.read_bytes()[:LIMIT].count(b"\n") + 1
    with pytest.raises(InvalidInputError) as exc:
        list(read_sets(big))
    assert str(exc.value) == _too_long("big.json", lines_before)
    with pytest.raises(InvalidInputError, match="big.json line .*: longer than 100,000 bytes"):
        list(read_records(big))
    small = tmp_path / "small.json"  # under the bound: read as before
    small.write_text(json.dumps([SET, SET]))
    assert [s.responses for s in read_sets(small)] == [SET["responses"]] * 2


def test_dev_zero_named_json_is_one_line(small_limit: None, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    code, out, err = run_main(monkeypatch, capsys, "score", str(zero), "-m", "distinct-n")
    assert (code, out) == (2, "")
    assert err == f"divmeter: error: {_too_long('zero.json')}\n"


def test_read_whole_reads_at_most_one_byte_past_the_bound(small_limit: None) -> None:
    class Counting(io.BytesIO):
        asked: list[int] = []

        def read(self, size: int | None = -1) -> bytes:
            self.asked.append(-1 if size is None else size)
            return super().read(size)

    src = Counting(b"x" * (3 * LIMIT))
    with pytest.raises(InvalidInputError):
        read_whole(src, "x.json", "a JSON file")
    assert src.asked == [LIMIT + 1]


def test_csv_fields_follow_the_line_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """csv's own default (131,072 characters) refused a long response; the bound is the line
    bound, and a quoted field running over many lines past it is refused as a field."""
    long = tmp_path / "long.csv"
    response = "word " * 60_000  # 300,000 characters
    long.write_text(f"set_id,response\na,{response}\na,short one\n")
    sets = list(read_sets(long))
    assert [len(r) for r in sets[0].responses] == [len(response), len("short one")]
    monkeypatch.setenv("DIVMETER_MAX_LINE", str(LIMIT))
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('set_id,response\na,"' + "many lines\n" * 20_000 + '"\n')
    with pytest.raises(InvalidInputError) as exc:
        list(read_sets(quoted))
    assert str(exc.value).startswith("quoted.csv line ")
    assert str(exc.value).endswith(
        ": a field longer than 100,000 characters; expected shorter fields (a quote left open "
        "runs to the end of the file; set DIVMETER_MAX_LINE to allow longer ones).")


def test_stdin_is_sniffed_from_its_first_line_and_streamed(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """A pipe on stdin: the first set comes out while the writer is still writing (the format
    is sniffed from the first line; stdin was read whole before, and waited for its end)."""
    r, w = os.pipe()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(open(r, "rb")))  # noqa: SIM115
    writer = open(w, "wb", buffering=0)  # noqa: SIM115
    writer.write(b"\n" + json.dumps(SET).encode() + b"\n")
    got: list[object] = []

    def first() -> None:
        it = read_sets("-")
        got.append(next(it))
        got.append(it)

    reader = threading.Thread(target=first, daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert got and got[0].responses == SET["responses"]  # type: ignore[attr-defined]
    writer.write(json.dumps({**SET, "set_id": "b"}).encode() + b"\n")
    writer.close()
    assert [s.set_id for s in got[1]] == ["b"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("data", "fmt"), [
    (b'{"set_id": "a", "responses": ["x y", "y z"]}\n{"set_id": "b", "responses": ["q"]}\n',
     "jsonl"),
    (b'\n\n[{"set_id": "a", "responses": ["x y", "y z"]},\n {"set_id": "b", "responses": []}]',
     "json"),
    (b"\xef\xbb\xbfset_id,response\na,x y\nb,q\n", "csv"),
])
def test_stdin_formats_still_sniffed(data: bytes, fmt: str, monkeypatch: pytest.MonkeyPatch
                                     ) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert [s.set_id for s in read_sets("-")] == ["a", "b"], fmt


def test_stdin_without_newline_is_bounded(small_limit: None, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{" + b"\0" * 300_000)))
    code, out, err = run_main(monkeypatch, capsys, "score", "-", "-m", "distinct-n")
    assert (code, out) == (2, "")
    assert err == ("divmeter: error: <stdin> line 1: longer than 100,000 bytes with no newline; "
                   "expected a text file of lines (set DIVMETER_MAX_LINE to allow longer "
                   "ones).\n")
    with pytest.raises(InvalidInputError, match="<stdin> line 3: longer than 100,000 bytes"):
        read_head(io.BytesIO(b"\n \n" + b"x" * 200_000), "<stdin>")


def test_txt_shard_lines_are_bounded_and_decoded_as_before(small_limit: None, tmp_path: Path
                                                           ) -> None:
    zero = tmp_path / "zero.txt"
    zero.symlink_to("/dev/zero")
    with pytest.raises(InvalidInputError, match=r"^zero.txt line 1: longer than 100,000 bytes "
                       "with no newline"):
        list(iter_texts(str(zero)))
    # lines end at \n, \r\n and a lone \r (as Python's text mode read them); a BOM is skipped
    txt = tmp_path / "a.txt"
    txt.write_bytes(b"\xef\xbb\xbfone\rtwo\r\nthree\n\nfour\r")
    assert list(iter_texts(str(txt))) == ["one", "two", "three", "", "four"]
    gz = tmp_path / "a.txt.gz"
    gz.write_bytes(gzip.compress(b"x y\nz\n"))
    assert list(iter_texts(str(gz))) == ["x y", "z"]


def test_templates_and_prompt_files_are_bounded(small_limit: None, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"set1": ["a b", "c d"], "set2": ["e f", "g h"]}) + "\n")
    zero = tmp_path / "template.txt"
    zero.symlink_to("/dev/zero")
    code, _, err = run_main(monkeypatch, capsys, "judge", str(pairs), "-o",
                            str(tmp_path / "out.jsonl"), "--model", "openai:x", "--base-url",
                            "http://127.0.0.1:9/v1", "--template", str(zero), "--dry-run")
    assert code == 2
    assert err == ("divmeter: error: template.txt line 1: longer than 100,000 bytes in all, and "
                   "a judge template is read whole; expected a smaller file (or set "
                   "DIVMETER_MAX_LINE to allow longer ones).\n")
    prompts = tmp_path / "prompts.txt"
    prompts.write_bytes(b"Say hi.\n" + b"x" * 200_000)
    code, _, err = run_main(monkeypatch, capsys, "generate", str(prompts), "-o",
                            str(tmp_path / "gen.jsonl"), "--model", "openai:x", "--base-url",
                            "http://127.0.0.1:9/v1")
    assert code == 2 and err.startswith("divmeter: error: prompts.txt line 2: longer than "
                                        "100,000 bytes with no newline"), err


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
BINARY = {
    "png": (PNG, "(byte 0x89 at column 1); divmeter reads UTF-8 only; it looks like a PNG "
                 "image, not text."),
    "gzip": (gzip.compress(b'{"set_id": "a"}\n' * 50),
             "(byte 0x8b at column 2); divmeter reads UTF-8 only; it looks gzip-compressed: "
             "name it .gz."),
    "random": (bytes([0xC3, 0x28]) + os.urandom(2000),
               "(byte 0xc3 at column 1); divmeter reads UTF-8 only."),
}


@pytest.mark.parametrize("kind", list(BINARY))
@pytest.mark.parametrize("command", ["score", "corpus", "corpus-txt", "meta", "judge",
                                     "judge-absolute"])
def test_binary_input_is_one_line(command: str, kind: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    data, message = BINARY[kind]
    path = tmp_path / ("shard.txt" if command == "corpus-txt" else "input.jsonl")
    path.write_bytes(data)
    argv = {
        "score": ["score", str(path), "-m", "distinct-n"],
        "corpus": ["score", "--corpus", str(path), "-m", "distinct-n"],
        "corpus-txt": ["score", "--corpus", str(path), "-m", "distinct-n"],
        "meta": ["meta", "contest", str(path), "-m", "distinct-n"],
        "judge": ["judge", str(path), "-o", str(tmp_path / "o.jsonl"), "--model", "openai:x",
                  "--base-url", "http://127.0.0.1:9/v1", "--dry-run"],
        "judge-absolute": ["judge", str(path), "-o", str(tmp_path / "o.jsonl"), "--model",
                           "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--task",
                           "absolute", "--dry-run"],
    }[command]
    code, out, err = run_main(monkeypatch, capsys, *argv)
    assert (code, out) == (2, "")
    assert err == f"divmeter: error: {path.name} line 1: not valid UTF-8 {message}\n"


@pytest.mark.parametrize(("argv", "message"), [
    # bugs the hostile sweep (tests/test_hostile_sweep.py) found: each was an internal error,
    # a hang or a server probe before the input was read
    (["score", "{SETS}", "-m", "distinct-n", "--workers", "1" + "0" * 40],
     "--workers must be an integer from 1 to 1,024; got a 41-digit number."),
    (["meta", "contest", "{SETS}", "-m", "distinct-n", "--round", "1" + "0" * 40],
     "--round must be an integer from 0 to 15; got a 41-digit number."),
    (["meta", "pattr-sensitivity", "{SETS}", "--top-k", "3", "--pairs", "-1"],
     "--pairs must be an integer from 1 to 10,000,000; got -1."),
    (["judge", "{PAIRS}", "-o", "{OUT}", "--model", "openai:x", "--base-url",
      "http://127.0.0.1:9/v1", "--dry-run", "--samples", "1" + "0" * 40],
     "--samples must be an integer from 1 to 100; got a 41-digit number."),
    (["generate", "{PROMPTS}", "-o", "{OUT}", "--model", "openai:x", "--base-url",
      "http://127.0.0.1:9/v1", "--timeout", "nan"],
     "`timeout` must be a number of seconds > 0; got nan."),
    (["build", "pattr-grid", "{PROMPTS}", "-o", "{OUT}", "--styles", "1" + "0" * 40],
     "--styles must be an integer from 1 to 10,000; got a 41-digit number."),
    (["build", "para", "{MISSING}", "-o", "{OUT}", "--model", "x", "--base-url",
      "http://127.0.0.1:9/v1"], "No such file or directory: "),
    (["build", "para", "{SETS}", "-o", "{OUT}", "--model", "x", "--base-url",
      "http://127.0.0.1:9/v1", "--temperature", "nan"],
     "`temperature` must be a number >= 0; got nan."),
    (["build", "cdm-fillers", "{HUGE}", "-o", "{OUT}", "--model", "x", "--base-url",
      "http://127.0.0.1:9/v1"], "frames.txt line 1: a number too long to read"),
    # a template without its field, named before the (unreachable) server is probed
    (["build", "para", "{SETS}", "-o", "{OUT}", "--model", "x", "--base-url",
      "http://127.0.0.1:9/v1", "--template", "{PROMPTS}"], "{sentence}"),
])
def test_sweep_findings_are_one_line_refusals(argv: list[str], message: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    files = {"{SETS}": tmp_path / "sets.jsonl", "{PAIRS}": tmp_path / "pairs.jsonl",
             "{PROMPTS}": tmp_path / "prompts.txt", "{HUGE}": tmp_path / "frames.txt"}
    files["{SETS}"].write_text("".join(json.dumps({**SET, "set_id": f"s{i}", "label": i % 2})
                                       + "\n" for i in range(4)))
    files["{PAIRS}"].write_text(json.dumps({"set1": ["a b", "c d"], "set2": ["e f", "g"]}) + "\n")
    files["{PROMPTS}"].write_text("Say hi.\n")
    files["{HUGE}"].write_text('{"id": 1' + "0" * 5000 + ', "text": "[[a]] b"}\n')
    subst = {**{k: str(v) for k, v in files.items()}, "{OUT}": str(tmp_path / "out.jsonl"),
             "{MISSING}": str(tmp_path / "missing.jsonl")}
    code, out, err = run_main(monkeypatch, capsys, *[subst.get(a, a) for a in argv])
    assert code == 2 and out == "", err
    assert err.startswith("divmeter: error: ") and message in err and len(err.splitlines()) == 1


def test_generate_never_reads_a_device_output_back(tmp_path: Path) -> None:
    """``generate -o /dev/zero`` (a device is written in place): the rows to resume are read
    from regular files only; reading /dev/zero back grew without end."""
    from divmeter.studies.generation.sweep import _existing

    assert _existing(Path("/dev/zero")) == []
    out = tmp_path / "out.jsonl"
    out.write_text('{"set_id": "p0", "responses": ["a"]}\n')
    assert _existing(out) == [{"set_id": "p0", "responses": ["a"]}]
