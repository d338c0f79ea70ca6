"""Issue 27: every command of the CLI against hostile inputs, in process.

Two bounded matrices over the commands that ``divmeter --help`` lists (every subcommand of
``meta``, ``annotate`` and ``build`` included; ``list`` has its own small test; servers are an
unreachable ``127.0.0.1`` port, judges run ``--dry-run``, ``annotate serve`` is given an address
it cannot bind so it never serves):

* **hostile files** in the input's place: empty, binary garbage, UTF-16, a lone surrogate
  (escaped in JSON, and as raw bytes), an unterminated last line, a directory, a missing path,
  ``/dev/null``, binary garbage on stdin as ``-``, 5,000-digit integers;
* **hostile numbers** in every numeric option of the command (found from its signature), with a
  good input: a negative count and a 41-digit integer (integer options), NaN and -1 (number
  options).

Each case must end the way every divmeter run ends: exit code 0, 1 or 2, and no traceback and no
``divmeter: internal error`` line (an exception that reached the CLI boundary: a bug) on stderr,
within CASE_SECONDS; an input with nothing usable in it (binary, UTF-16, a directory, a missing
path) is refused with exit 2 in one line. About 40 s on two shared cores (most of it the
client's back-off before an unreachable server is given up).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import random
import signal
import sys
import time
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from divmeter.apps.cli import app, main

#: Seconds one case may take (a hang is a failure, not a stuck suite).
CASE_SECONDS = 20
DEAD = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there

SET_ROWS = [
    {"set_id": f"s{i}", "prompt": f"p{i % 2}", "label": i % 2,
     "metadata": {"temperature": 0.5 + i / 4, "stage": "base" if i % 2 else "sft"},
     "responses": [f"the cat {w} on a mat" for w in ("sat", "ran", "lay")[: 2 + i % 2]]}
    for i in range(6)
]

#: Each command: (id, argv with {IN} for the input and {OUT} for a fresh output stem, the
#: suffix its input file gets, the good input's name).
COMMANDS: list[tuple[str, list[str], str, str]] = [
    ("score", ["score", "{IN}", "-m", "distinct-n", "-o", "{OUT}.jsonl", "-q"], ".jsonl", "sets"),
    ("score-csv", ["score", "{IN}", "-m", "ttr", "-o", "{OUT}.jsonl", "-q"], ".csv", "sets_csv"),
    ("score-json", ["score", "{IN}", "-m", "ttr", "-o", "{OUT}.csv", "-q"], ".json", "sets_json"),
    ("score-corpus", ["score", "--corpus", "{IN}", "-m", "distinct-n", "-o", "{OUT}.json", "-q"],
     ".jsonl", "sets"),
    ("score-corpus-txt", ["score", "--corpus", "{IN}", "-m", "entropy-n", "-q"], ".txt",
     "lines"),
    ("compare", ["compare", "{GOOD}", "{IN}", "-m", "distinct-n", "-f", "json", "-q"], ".jsonl",
     "sets"),
    ("report", ["report", "{IN}", "-o", "{OUT}.html"], ".jsonl", "scores"),
    ("judge", ["judge", "{IN}", "-o", "{OUT}.jsonl", "--model", "openai:x", "--base-url", DEAD,
               "--dry-run"], ".jsonl", "pairs"),
    ("judge-absolute", ["judge", "{IN}", "-o", "{OUT}.jsonl", "--model", "openai:x",
                        "--base-url", DEAD, "--task", "absolute", "--dry-run"], ".jsonl", "sets"),
    ("generate", ["generate", "{IN}", "-o", "{OUT}.jsonl", "--model", "openai:x", "--base-url",
                  DEAD, "-n", "1", "--timeout", "2", "-q"], ".jsonl", "prompts"),
    ("embed-parity", ["embed-parity", "{IN}", "--model", "openai:x", "--base-url", DEAD, "-q"],
     ".jsonl", "sets"),
    ("meta-contest", ["meta", "contest", "{IN}", "-m", "distinct-n", "-f", "json", "-q"],
     ".jsonl", "sets"),
    ("meta-dectest", ["meta", "dectest", "{IN}", "-m", "distinct-n", "-f", "json", "-q"],
     ".jsonl", "sets"),
    ("meta-nuggets", ["meta", "nuggets", "{IN}", "-m", "distinct-n", "-f", "json", "-q"],
     ".jsonl", "sets"),
    ("meta-paired", ["meta", "paired", "{IN}", "-m", "distinct-n", "--key", "prompt", "-f",
                     "json", "-q"], ".jsonl", "sets"),
    ("meta-pairwise", ["meta", "pairwise", "{IN}", "-m", "distinct-n", "-f", "json", "-q",
                       "--resamples", "50"], ".jsonl", "pairs"),
    ("meta-length-bias", ["meta", "length-bias", "{IN}", "-m", "ttr", "-f", "json", "-q",
                          "--pairs", "20"], ".jsonl", "sets"),
    ("meta-decan-confound", ["meta", "decan-confound", "{IN}", "-f", "json", "-q"], ".jsonl",
     "scores"),
    ("meta-pattr-sensitivity", ["meta", "pattr-sensitivity", "{IN}", "-f", "json", "-q"],
     ".jsonl", "sets"),
    ("meta-agreement", ["meta", "agreement", "{IN}", "-r", "a", "-r", "b", "-f", "json"],
     ".csv", "ratings"),
    ("meta-agreement-jsonl", ["meta", "agreement", "{IN}", "-r", "a", "-r", "b", "-f", "json"],
     ".jsonl", "ratings_jsonl"),
    ("annotate-init", ["annotate", "init", "{IN}", "--db", "{OUT}.sqlite", "--kind", "abs", "-q"],
     ".jsonl", "sets"),
    ("annotate-serve", ["annotate", "serve", "{IN}", "--host", "203.0.113.1", "-q"], ".sqlite",
     "db"),
    ("annotate-invite", ["annotate", "invite", "{IN}"], ".sqlite", "db"),
    ("annotate-status", ["annotate", "status", "{IN}"], ".sqlite", "db"),
    ("annotate-export", ["annotate", "export", "{IN}", "-o", "{OUT}.csv"], ".sqlite", "db"),
    ("annotate-report", ["annotate", "report", "{IN}", "-o", "{OUT}", "--no-plots",
                         "--reps", "5"], ".sqlite", "db"),
    ("build-rndshuff", ["build", "rndshuff", "{IN}", "-o", "{OUT}.jsonl", "-q"], ".jsonl",
     "sets"),
    ("build-nounshuff", ["build", "nounshuff", "{IN}", "-o", "{OUT}.jsonl", "-q"], ".jsonl",
     "sets"),
    ("build-para", ["build", "para", "{IN}", "-o", "{OUT}.jsonl", "--model", "x", "--base-url",
                    DEAD, "-q"], ".jsonl", "sets"),
    ("build-nonsensical", ["build", "nonsensical", "{IN}", "-o", "{OUT}.jsonl", "--model", "x",
                           "--base-url", DEAD, "-q"], ".jsonl", "sets"),
    ("build-cdm-fillers", ["build", "cdm-fillers", "{IN}", "-o", "{OUT}.jsonl", "--model", "x",
                           "--base-url", DEAD, "-q"], ".txt", "frames"),
    ("build-pattr-grid", ["build", "pattr-grid", "{IN}", "-o", "{OUT}.jsonl", "--levels", "0:1",
                          "--styles", "1"], ".txt", "topics"),
    # the data sets: a hostile path where a local copy, a data set's name or a paper is expected
    ("data-fetch", ["data", "fetch", "tevet", "--from", "{IN}", "--timeout", "2", "-q"],
     ".csv", "sets"),
    ("data-path", ["data", "path", "{IN}"], ".csv", "sets"),
    ("data-verify", ["data", "verify", "{IN}", "-q"], ".csv", "sets"),
    ("reproduce", ["reproduce", "{IN}", "-f", "json", "-q"], ".csv", "sets"),
]

_rng = random.Random(27)
HUGE = "1" + "0" * 5000
#: Hostile contents: bytes, or what the path is instead of a file.
HOSTILE: dict[str, bytes | str] = {
    "empty": b"",
    "binary": bytes(_rng.randrange(256) for _ in range(3000)),
    "utf16": '{"set_id": "a", "responses": ["x y", "y z"]}\n'.encode("utf-16"),
    "surrogate-escaped": b'{"set_id": "\\ud800", "prompt": "\\udfff", "label": 1, '
                         b'"responses": ["a \\ud800 b", "c d"], "a": 1, "b": 2}\n',
    "surrogate-raw": b'{"set_id": "\xed\xa0\x80", "responses": ["a b", "c d"]}\n',
    "unterminated": b'{"set_id": "a", "responses": ["a b", "c d"]}\n{"set_id": "b", "respo',
    "directory": "dir",
    "missing": "missing",
    "devnull": "devnull",
    "stdin-binary": "stdin",
    "huge-int": (f'{{"set_id": {HUGE}, "label": {HUGE}, "a": {HUGE}, "b": 1, "responses": '
                 f'["a b", "c d"], "metadata": {{"temperature": {HUGE}}}}}\n').encode(),
}

#: Hostile values of numeric options: a negative count, a 41-digit integer, NaN.
HOSTILE_INT = ["-1", "1" + "0" * 40]
HOSTILE_FLOAT = ["nan", "-1"]

#: Cases known to fail, each with its reason (xfail; a "hang" is not run); empty since the
#: annotation CLI caps --ratings and -n and checks the address before serving.
KNOWN: dict[str, str] = {}


class CaseTimeout(BaseException):
    """A case ran past CASE_SECONDS (a BaseException: the CLI boundary must not catch it)."""


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    if not hasattr(signal, "SIGALRM"):  # not on this platform: no deadline
        yield
        return

    def fire(*_: Any) -> None:
        raise CaseTimeout

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


_COMMAND: list[Any] = []


def invoke(argv: list[str], cwd: Path, stdin: bytes = b"") -> tuple[int, str, str, float]:
    """``divmeter ARGV`` through :func:`divmeter.apps.cli.main` in this process (its exception
    handling is what is tested), with typer's CliRunner isolating stdin (``stdin``), stdout
    and stderr: (exit code, stdout, stderr, seconds). The click command typer builds from the
    app is built once (building it takes ~0.1 s, more than most cases)."""
    import divmeter.apps.cli

    if not _COMMAND:
        _COMMAND.append(typer.main.get_command(app))
    runner = CliRunner()
    old_argv, old_cwd = sys.argv, os.getcwd()
    code = 0
    t0 = time.perf_counter()
    with runner.isolation(input=stdin) as streams, pytest.MonkeyPatch.context() as mp:
        mp.setattr(divmeter.apps.cli, "app", _COMMAND[0])
        sys.argv = ["divmeter", *argv]
        os.chdir(cwd)
        try:
            with _deadline(CASE_SECONDS):
                main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except CaseTimeout:
            code = -1
        finally:
            sys.argv = old_argv
            os.chdir(old_cwd)
            sys.stdout.flush()
            sys.stderr.flush()
        out = streams[0].getvalue()
        err_stream = streams[1] if len(streams) > 1 and streams[1] is not None else streams[0]
        err = err_stream.getvalue()
    return (code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
            time.perf_counter() - t0)


def _write_inputs(root: Path) -> dict[str, Path]:
    good = root / "good"
    good.mkdir()
    paths: dict[str, Path] = {}

    def put(name: str, file: str, text: str) -> None:
        paths[name] = good / file
        paths[name].write_text(text, encoding="utf-8")

    put("sets", "sets.jsonl", "".join(json.dumps(r) + "\n" for r in SET_ROWS))
    put("sets_json", "sets.json", json.dumps(SET_ROWS))
    put("sets_csv", "sets.csv", "set_id,response,label\n" + "".join(
        f"{r['set_id']},{t},{r['label']}\n" for r in SET_ROWS for t in r["responses"]))
    put("lines", "lines.txt", "the cat sat\nthe dog ran\n\na red tree\n")
    put("pairs", "pairs.jsonl", "".join(json.dumps(
        {"set1": a["responses"], "set2": b["responses"], "label": i % 3}) + "\n"
        for i, (a, b) in enumerate(zip(SET_ROWS, SET_ROWS[1:], strict=False))))
    put("prompts", "prompts.jsonl", '{"id": "a", "prompt": "Say hi."}\n')
    put("ratings", "ratings.csv", "a,b\n1,1\n2,1\n1,2\n2,2\n1,1\n")
    put("ratings_jsonl", "ratings.jsonl", "".join(
        json.dumps({"a": a, "b": b}) + "\n" for a, b in [(1, 1), (2, 1), (1, 2), (2, 2)]))
    put("frames", "frames.txt", "[[Armin]] walks to [[the station]].\n")
    put("topics", "topics.txt", "Write about cats.\nWrite about rivers.\n")
    put("paired", "paired.jsonl", "".join(json.dumps(
        {"set_id": f"s{i}", "prompt_id": i // 2, "stage": "base" if i % 2 else "sft",
         "responses": [f"the cat {w} on a mat {i}" for w in ("sat", "ran", "lay")]}) + "\n"
        for i in range(8)))
    put("decan", "decan.jsonl", "".join(json.dumps(
        {"set_id": f"s{i}", "label": i % 2, "mean_bytes": 10 + i, "a_1": i / 10,
         "D": 1 + i / 20}) + "\n" for i in range(12)))
    scores = good / "scores.jsonl"
    code, _, err, _ = invoke(["score", str(paths["sets"]), "-m", "distinct-n", "-m", "ttr",
                              "-o", str(scores), "-q"], root)
    assert code == 0, err
    paths["scores"] = scores
    db = good / "study.sqlite"
    code, _, err, _ = invoke(["annotate", "init", str(paths["sets"]), "--db", str(db),
                              "--kind", "abs", "-q"], root)
    assert code == 0, err
    paths["db"] = db
    return paths


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _write_inputs(tmp_path_factory.mktemp("sweep"))


def _hostile_path(root: Path, kind: str, suffix: str) -> str:
    content = HOSTILE[kind]
    path = root / f"in{suffix}"
    if content == "dir":
        path.mkdir()
    elif content == "missing":
        pass
    elif content == "devnull":
        return os.devnull
    elif content == "stdin":  # "-": binary garbage on stdin (see test_hostile_file)
        return "-"
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    return str(path)


def _argv(template: list[str], inp: str, out: Path, good: str) -> list[str]:
    return [a.replace("{IN}", inp).replace("{OUT}", str(out)).replace("{GOOD}", good)
            for a in template]


def _check(code: int, err: str, what: str) -> None:
    assert code != -1, f"{what}: still running after {CASE_SECONDS} s"
    assert code in (0, 1, 2), f"{what}: exit {code}; stderr:\n{err[-2000:]}"
    assert "Traceback" not in err, f"{what}: a traceback on stderr:\n{err[-3000:]}"
    assert "internal error" not in err, f"{what}: {err.strip()[-600:]}"


@pytest.mark.parametrize("kind", list(HOSTILE))
@pytest.mark.parametrize(("cid", "template", "suffix", "good"), COMMANDS,
                         ids=[c[0] for c in COMMANDS])
def test_hostile_file(cid: str, template: list[str], suffix: str, good: str, kind: str,
                      inputs: dict[str, Path], tmp_path: Path) -> None:
    inp = _hostile_path(tmp_path, kind, suffix)
    argv = _argv(template, inp, tmp_path / "out", str(inputs["sets"]))
    code, _, err, _ = invoke(argv, tmp_path, stdin=HOSTILE["binary"] if inp == "-" else b"")
    _check(code, err, f"divmeter {' '.join(argv)}")
    if kind in ("binary", "directory", "missing", "utf16", "surrogate-raw", "stdin-binary"):
        # nothing usable in the input: refused, in one line naming it
        assert code == 2, f"{cid} on {kind}: exit {code}; stderr: {err[-600:]}"
        assert err.strip().splitlines()[-1].startswith(("divmeter: error:", "Error:")), err


# ------------------------------------------------------------------------------------------------
# hostile numbers in every numeric option


def _command_functions() -> dict[str, Any]:
    """``"meta contest"`` -> the function behind it, for every command of the app."""
    out: dict[str, Any] = {}

    def walk(t: typer.Typer, prefix: list[str]) -> None:
        for cmd in t.registered_commands:
            name = cmd.name or (cmd.callback.__name__ if cmd.callback else "")
            out[" ".join([*prefix, name])] = cmd.callback
        for group in t.registered_groups:
            if group.typer_instance is not None:
                walk(group.typer_instance, [*prefix, group.name or ""])

    walk(app, [])
    return out


def _numeric_options(func: Any) -> list[tuple[str, type]]:
    """(option name, int or float) of every numeric option of a command function."""
    hints = typing.get_type_hints(func, include_extras=True)
    found = []
    for pname in inspect.signature(func).parameters:
        hint = hints.get(pname)
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        base, *meta = typing.get_args(hint)
        kinds = {a for a in typing.get_args(base)} if typing.get_args(base) else {base}
        kinds.discard(type(None))
        if kinds not in ({int}, {float}):
            continue
        info = next((m for m in meta if isinstance(m, typer.models.OptionInfo)), None)
        if info is None:
            continue
        decls = [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str)
                 and d.startswith("-")]
        longs = [d for d in decls if d.startswith("--")]
        name = (longs or decls or ["--" + pname.replace("_", "-")])[0]
        found.append((name, kinds.pop()))
    return found


def _command_key(template: list[str], funcs: dict[str, Any]) -> str:
    words = [w for w in template if not w.startswith(("-", "{"))]
    return " ".join(words[:2]) if " ".join(words[:2]) in funcs else words[0]


def _number_cases() -> list[tuple[str, list[str], str, str, str]]:
    """One case per (command, numeric option, hostile value), on the command's first entry."""
    funcs = _command_functions()
    cases = []
    seen: set[str] = set()
    for _, template, _, good in COMMANDS:
        key = _command_key(template, funcs)
        if key in seen:
            continue
        seen.add(key)
        for option, kind in _numeric_options(funcs[key]):
            for value in HOSTILE_INT if kind is int else HOSTILE_FLOAT:
                cases.append((f"{key} {option} {value[:6]}", template, good, option, value))
    return cases


NUMBER_CASES = _number_cases()


def _marked(case: tuple[str, list[str], str, str, str]) -> Any:
    reason = KNOWN.get(case[0])
    if reason is None:
        return pytest.param(*case, id=case[0])
    return pytest.param(*case, id=case[0],
                        marks=pytest.mark.xfail(reason=reason, run="hang" not in reason))


def test_the_sweep_covers_every_command() -> None:
    """Every command the CLI lists is in the hostile-file matrix, and every numeric option of
    each has its hostile values (the matrices follow the CLI as it grows)."""
    funcs = _command_functions()
    covered = {_command_key(template, funcs) for _, template, _, _ in COMMANDS}
    missing = set(funcs) - covered - {"list", "data list"}  # no input to make hostile
    assert not missing, f"commands without hostile cases: {sorted(missing)}"
    assert len(NUMBER_CASES) > 100


@pytest.mark.parametrize(("case", "template", "good", "option", "value"),
                         [_marked(c) for c in NUMBER_CASES])
def test_hostile_number(case: str, template: list[str], good: str, option: str, value: str,
                        inputs: dict[str, Path], tmp_path: Path) -> None:
    argv = _argv(template, str(inputs[good]), tmp_path / "out", str(inputs["sets"]))
    argv = [*argv, option, value]
    code, _, err, _ = invoke(argv, tmp_path)
    _check(code, err, f"divmeter {' '.join(argv)}")


@pytest.mark.parametrize("name", ["", "\ud800", "x" * 5000, "distinct-n:n=nan",
                                  "distinct-n:n=" + "9" * 5000, "../../etc/passwd"])
def test_hostile_list_name(name: str, tmp_path: Path) -> None:
    for fmt in ("table", "json"):
        code, _, err, _ = invoke(["list", name, "--format", fmt], tmp_path)
        _check(code, err, f"divmeter list {name[:20]!r}")


# ------------------------------------------------------------------------------------------------
# issue 34: every path a command writes, pointed at every file it reads, through a link


#: The options that name a file (or a folder) a command writes, and the suffix a link gets.
OUTPUT_SUFFIX = {"-o": None, "--output": None, "--html": ".html", "--report": "/",
                 "--nulls": ".jsonl", "--pairs": ".jsonl", "--db": ".sqlite", "--raw": ".csv",
                 "--checkpoint": ".json", "--batch-write": ".jsonl"}
#: Commands whose -o is a folder.
FOLDER_OUTPUT = {"annotate report"}


def _options(func: Any) -> list[str]:
    """Every name of every text option of a command function."""
    hints = typing.get_type_hints(func, include_extras=True)
    names = []
    for pname in inspect.signature(func).parameters:
        hint = hints.get(pname)
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        base, *meta = typing.get_args(hint)
        info = next((m for m in meta if isinstance(m, typer.models.OptionInfo)), None)
        if info is None or not ({*typing.get_args(base)} or {base}) & {str}:
            continue
        decls = [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str)
                 and d.startswith("-")]
        names += decls
    return names


#: Commands whose entry in COMMANDS does not run to its outputs on the good input.
OUTPUT_COMMANDS: list[tuple[str, list[str], str, str]] = [
    ("meta-paired", ["meta", "paired", "{IN}", "-m", "distinct-n", "--by", "stage", "--key",
                     "prompt_id", "--high", "base", "--low", "sft", "-f", "json", "-q"],
     ".jsonl", "paired"),
    ("meta-decan-confound", ["meta", "decan-confound", "{IN}", "-f", "json", "-q"], ".jsonl",
     "decan"),
]


def _output_cases() -> list[tuple[str, list[str], str, str, str]]:
    """(case id, template, input suffix, good input, output option) for every output option of
    every command (its first entry in OUTPUT_COMMANDS, else in COMMANDS)."""
    funcs = _command_functions()
    cases, seen = [], set()
    for _cid, template, suffix, good in [*OUTPUT_COMMANDS, *COMMANDS]:
        key = _command_key(template, funcs)
        # list reads nothing; reproduce reads only the verified data cache, never a user's file
        if key in seen or key in ("list", "reproduce"):
            continue
        seen.add(key)
        opts = set(_options(funcs[key]))
        for option in OUTPUT_SUFFIX:
            if option in opts and not (option == "--output" and "-o" in opts):
                cases.append((f"{key} {option}", template, suffix, good, option))
    return cases


OUTPUT_CASES = _output_cases()


def _link_to(target: Path, at: Path, kind: str) -> None:
    if kind == "symlink":
        at.symlink_to(target)
    else:
        os.link(target, at)


def _with_option(argv: list[str], option: str, value: str) -> list[str]:
    """``argv`` with ``option`` set to ``value`` (its value replaced when it is there)."""
    alias = {"-o": "--output", "--output": "-o"}.get(option)
    for i, a in enumerate(argv[:-1]):
        if a in (option, alias):
            return [*argv[:i + 1], value, *argv[i + 2:]]
    return [*argv, option, value]


def _refused_intact(argv: list[str], files: list[Path], cwd: Path, what: str) -> None:
    before = [(p.read_bytes(), p.stat().st_ino) for p in files]
    code, _, err, _ = invoke(argv, cwd)
    _check(code, err, what)
    assert [(p.read_bytes(), p.stat().st_ino) for p in files] == before, \
        f"{what}: an input changed; stderr: {err[-600:]}"
    assert code == 2, f"{what}: exit {code}; stderr: {err[-600:]}"
    assert "would destroy it" in err or "would write over what it reads" in err, err


def test_every_output_option_is_swept() -> None:
    """The matrix below follows the CLI: each command's writing options are in it."""
    names = {c[0] for c in OUTPUT_CASES}
    for must in ("score -o", "score --html", "score --checkpoint", "compare --report",
                 "compare --html", "meta paired --report", "meta decan-confound --report",
                 "judge --nulls", "judge --batch-write", "annotate export --raw",
                 "annotate report -o", "annotate init --db", "build para --pairs",
                 "meta nuggets -o", "report -o", "generate -o"):
        assert must in names, must


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
@pytest.mark.parametrize(("case", "template", "suffix", "good", "option"), OUTPUT_CASES,
                         ids=[c[0] for c in OUTPUT_CASES])
def test_no_output_reaches_an_input(case: str, template: list[str], suffix: str, good: str,
                                    option: str, kind: str, inputs: dict[str, Path],
                                    tmp_path: Path) -> None:
    """Every output option of every command, given a link (symbolic or hard) to the command's
    input (for a report folder: a folder whose report.json is the input), is refused with
    exit 2 before anything is written, and the input keeps its bytes and its inode."""
    src = tmp_path / f"in{suffix}"
    src.write_bytes(inputs[good].read_bytes())
    folder = OUTPUT_SUFFIX[option] == "/" or case.rsplit(" ", 1)[0] in FOLDER_OUTPUT
    if folder:
        target = tmp_path / "rep"
        target.mkdir()
        _link_to(src, target / "report.json", kind)
    else:
        ext = OUTPUT_SUFFIX[option] or next(
            (Path(a).suffix for a in template if a.startswith("{OUT}")), ".jsonl")
        target = tmp_path / f"link{ext}"
        _link_to(src, target, kind)
    argv = _with_option(_argv(template, str(src), tmp_path / "out", str(inputs["sets"])),
                        option, str(target))
    _refused_intact(argv, [src], tmp_path, f"{kind} {case}")


def _scores(tmp: Path, inputs: dict[str, Path], name: str) -> Path:
    p = tmp / name
    p.write_bytes(inputs["scores"].read_bytes())
    return p


#: Inputs that are not a command's first argument: (id, argv builder) -> (argv, inputs).
def _extra_cases(tmp: Path, inputs: dict[str, Path], case: str) -> tuple[list[str], list[Path]]:
    sets = tmp / "sets.jsonl"
    sets.write_bytes(inputs["sets"].read_bytes())
    if case.startswith("score --vectors"):
        vec = tmp / "v.npy"
        import numpy as np

        rows = [r for r in SET_ROWS]
        np.save(vec, np.random.default_rng(0).normal(size=(sum(len(r["responses"])
                                                               for r in rows), 4)))
        out = str(vec) if case.endswith("same") else str(tmp / "link.jsonl")
        if not case.endswith("same"):
            (tmp / "link.jsonl").symlink_to(vec)
        return (["score", str(sets), "--vectors", str(vec), "-m", "diameter", "-o", out, "-q",
                 *(["-f", "jsonl"] if case.endswith("same") else [])], [vec])
    if case.startswith("compare"):
        a, b = _scores(tmp, inputs, "a.jsonl"), _scores(tmp, inputs, "b.jsonl")
        (tmp / "r.html").symlink_to(a)
        extra = ["--baseline", "b"] if case.endswith("baseline") else []
        return (["compare", str(a), str(b), "-c", "distinct-n", "-f", "json", "-q",
                 "--html", str(tmp / "r.html"), *extra], [a, b])
    if case == "meta paired --report .":
        rep = tmp / "report.json"
        rep.write_text(json.dumps([{"set_id": f"s{i}", "prompt_id": i // 2,
                                    "stage": "base" if i % 2 else "sft", "distinct-n": i / 10}
                                   for i in range(8)]))
        return (["meta", "paired", str(rep), "-c", "distinct-n", "--by", "stage", "--key",
                 "prompt_id", "--high", "base", "--low", "sft", "--report", str(tmp), "-f",
                 "json", "-q"], [rep])
    if case == "build para --template":
        tpl = tmp / "tpl.txt"
        tpl.write_text("Rewrite: {text}\n")
        return (["build", "para", str(sets), "-o", str(tpl), "--model", "x", "--base-url", DEAD,
                 "--template", str(tpl), "-q"], [tpl, sets])
    if case == "build rndshuff rejected sidecar":
        side = tmp / "out.rejected.jsonl"
        side.write_bytes(inputs["sets"].read_bytes())
        return (["build", "rndshuff", str(side), "-o", str(tmp / "out.jsonl"), "-q"], [side])
    raise AssertionError(case)


EXTRA_CASES = ["score --vectors same", "score --vectors link", "compare first system",
               "compare baseline", "meta paired --report .", "build para --template",
               "build rndshuff rejected sidecar"]


@pytest.mark.parametrize("case", EXTRA_CASES)
def test_no_output_reaches_another_input(case: str, inputs: dict[str, Path],
                                         tmp_path: Path) -> None:
    """The issue's cases: a --html link to the first of several systems' files (each load used
    to replace the list of inputs), a --report folder holding the input report.json, -o over
    the --vectors file, over a template, a sidecar over the input."""
    argv, files = _extra_cases(tmp_path, inputs, case)
    _refused_intact(argv, files, tmp_path, case)


# ------------------------------------------------------------------------------------------------
# issue 34: every count is capped at its declaration (metric parameters and CLI options)

#: Integer parameters that count nothing: a value of any size costs the same.
NOT_COUNTS = {
    "n": "one n-gram order: beyond the longest response the set is null at once (checked below)",
    "label": "the classifier's 'equivalent' label: compared with its answers, never allocated",
    "seed": "a seed: any size seeds the generator the same way (checked below)",
}


def test_every_count_parameter_of_every_metric_is_capped() -> None:
    """Walks the registry: every integer parameter declares a cap (or an upper bound), unless
    it counts nothing (NOT_COUNTS); the cap is refused before any set, in one line."""
    from divmeter.core.errors import InvalidInputError
    from divmeter.engine.registry import check_params, list_metrics

    missing = []
    for spec in list_metrics():
        for name, p in spec.schema.items():
            if p.type is not int or p.choices is not None:
                continue
            top = p.cap if p.cap is not None else p.le if p.le is not None else (
                p.lt - 1 if p.lt is not None else None)
            if top is None:
                if name not in NOT_COUNTS:
                    missing.append(f"{spec.name}:{name}")
                continue
            with pytest.raises(InvalidInputError, match=f"`{name}` of {spec.name} must be"):
                check_params(spec, {name: int(top) + 1})
    assert not missing, f"count parameters without a cap: {missing}"


@pytest.mark.parametrize("metric", ["distinct-n", "entropy-n", "ead", "ngram-cosine",
                                    "self-repetition"])
def test_an_order_beyond_every_text_is_null_at_once(metric: str) -> None:
    import divmeter

    r = divmeter.score(["the cat sat", "a dog ran off"], metric, n=2**70)
    assert r.value is None and "larger than the longest response" in (r.reason or "")


@pytest.mark.parametrize(("metric", "params", "data"), [
    ("vocd-d", {}, "texts"), ("vendi-ngram", {"approx": "slq"}, "texts"),
    ("kmeans-inertia", {}, "vectors"),
])
def test_a_huge_seed_is_a_seed(metric: str, params: dict[str, Any], data: str) -> None:
    """Seeds are not capped (any size costs the same) and a huge one is used, not a crash."""
    import numpy as np

    import divmeter

    x: Any = ([" ".join(f"w{(i * 7 + j) % 40}" for j in range(60)) for i in range(3)]
              if data == "texts" else np.random.default_rng(0).normal(size=(8, 4)))
    r = divmeter.score(x, metric, seed=2**70, **params)
    assert r.value is not None and np.isfinite(r.value), r.reason


def _int_options() -> list[tuple[str, str, Any]]:
    """(command, option, OptionInfo) of every integer option of every command."""
    out = []
    for key, func in _command_functions().items():
        hints = typing.get_type_hints(func, include_extras=True)
        for pname in inspect.signature(func).parameters:
            hint = hints.get(pname)
            if typing.get_origin(hint) is not typing.Annotated:
                continue
            base, *meta = typing.get_args(hint)
            info = next((m for m in meta if isinstance(m, typer.models.OptionInfo)), None)
            kinds = {*typing.get_args(base)} or {base}
            if info is None or not kinds & {int, list[int]} or bool in kinds:
                continue
            decls = [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str)]
            out.append((key, max(decls, key=len) if decls else pname, info))
    return out


def test_every_integer_option_of_the_cli_is_capped() -> None:
    """Walks the typer commands: every integer option declares its cap (options.capped)."""
    options = _int_options()
    assert len(options) > 60
    missing = [f"{k} {o}" for k, o, info in options if getattr(info.callback, "cap", None)
               is None and info.max is None]
    assert not missing, f"integer options without a cap: {missing}"


def test_the_cli_caps_are_the_library_caps() -> None:
    from divmeter.apps.cli import annotate, build, meta
    from divmeter.apps.web import store
    from divmeter.engine.batch import pool
    from divmeter.studies.meta import stats
    from divmeter.studies.perturb import pattr_grid

    assert meta.MAX_RESAMPLES == stats.MAX_RESAMPLES
    assert meta.MAX_WORKERS == pool.MAX_WORKERS
    assert build.MAX_STYLES == pattr_grid.MAX_STYLES
    assert (annotate.MAX_RATINGS, annotate.MAX_INVITES) == (store.MAX_RATINGS, store.MAX_INVITES)


@pytest.mark.parametrize(("argv", "message"), [
    (["compare", "{S}", "{S2}", "-c", "distinct-n", "--bootstrap", "-5", "-f", "json"],
     "--bootstrap must be an integer from 0 to 10,000,000; got -5."),
    (["score", "{SETS}", "-m", "vocd-d:samples=1000000000", "-f", "jsonl"],
     "`samples` of vocd-d must be at most 100000"),
    (["score", "{SETS}", "-m", "vocd-d:samples=1e20", "-f", "jsonl"],
     "`samples` of vocd-d must be an integer >= 1; got 1e+20."),
    (["score", "{SETS}", "-m", "msttr:segment=1000000000000000000000", "-f", "jsonl"],
     "`segment` of msttr must be at most 10000000"),
    (["score", "{SETS}", "-m", "vocd-d:max_size=1000000000", "-f", "jsonl"],
     "`max_size` of vocd-d must be at most 100000"),
    (["score", "{SETS}", "-m", "vocd-d:samples=100000,trials=100", "-f", "jsonl"],
     "`trials` of vocd-d with samples=100000 over sizes 35..50 draws 6,800,000,000 tokens"),
])
def test_the_issue_counts_are_refused(argv: list[str], message: str, inputs: dict[str, Path],
                                      tmp_path: Path) -> None:
    s2 = tmp_path / "b.jsonl"
    s2.write_bytes(inputs["scores"].read_bytes())
    argv = [a.replace("{S}", str(inputs["scores"])).replace("{S2}", str(s2))
            .replace("{SETS}", str(inputs["sets"])) for a in argv]
    code, out, err, _ = invoke(argv, tmp_path)
    _check(code, err, " ".join(argv))
    assert code == 2 and message in err, err


# ------------------------------------------------------------------------------------------------
# issue 34: every value that reaches the terminal is shown, never interpreted

#: Set ids, system names and column names a table must print as they are.
HOSTILE_NAMES = ["[/INST]", "[bold red]x[/]", "\x1b]0;X\x07\x1b[2J", "a\u202eb", "a|b", "x\ny",
                 "\x9b31m"]


def _terminal_cases(root: Path) -> list[tuple[str, list[str]]]:
    rows = []
    for i, name in enumerate(HOSTILE_NAMES * 2):
        rows.append({"set_id": name, "label": i % 2, "metadata": {"stage": name},
                     **{n: (i * k) % 5 / 10 for k, n in enumerate(HOSTILE_NAMES)},
                     "prompt": f"p{i // len(HOSTILE_NAMES)}",
                     "responses": [f"the cat {w} on a mat {i}" for w in ("sat", "ran", "lay")]})
    sets = root / "hostile.jsonl"
    sets.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cases = []
    for fmt in ("table", "markdown"):
        cases += [
            (f"score {fmt}", ["score", str(sets), "-m", "distinct-n", "-f", fmt, "--summary"]),
            (f"compare --by {fmt}", ["compare", str(sets), "--by", "stage", "--key", "prompt",
                                     "-m", "distinct-n", "-f", fmt, "--bootstrap", "0"]),
            (f"meta contest -c {fmt}", ["meta", "contest", str(sets), *[
                a for n in HOSTILE_NAMES for a in ("-c", n)], "-f", fmt]),
        ]
    return cases


def test_no_value_reaches_the_terminal_raw(tmp_path: Path) -> None:
    """Set ids, system names and column names holding rich markup, escape sequences, bells,
    bidirectional overrides, pipes and newlines: every table and Markdown output prints them
    escaped (exit 0, no markup error, no control character but the line ends)."""
    import re

    control = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
    for what, argv in _terminal_cases(tmp_path):
        code, out, err, _ = invoke(argv, tmp_path)
        _check(code, err, what)
        assert code == 0, f"{what}: {err[-800:]}"
        assert not control.search(out), f"{what}: {out[:2000]!r}"
        assert "[/INST]" in out and "\\x1b]0;X\\x07" in out, f"{what}: {out[:2000]}"


# ------------------------------------------------------------------------------------------------
# issue 34: every vector metric at scales of 1e+-200, qualities at the extremes (hypothesis)

def _vector_metrics() -> list[str]:
    from divmeter.engine.registry import list_metrics

    return [s.name for s in list_metrics() if s.takes_vectors]


@pytest.mark.parametrize("metric", _vector_metrics())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 7), d=st.integers(3, 6),
       power=st.sampled_from([-200, -180, -160, 154, 160, 200]))
def test_every_vector_metric_at_extreme_scales(metric: str, seed: int, n: int, d: int,
                                              power: int) -> None:
    """Vectors scaled by 10^power (1e+-154 and beyond: their squares and Gram products leave
    float64): a scale-free metric (the value at 3x equals the value at 1x) gives the value of
    the unscaled vectors; any other gives a finite number within its bounds, the unscaled
    value times the scale to its degree, or a null with its reason. Never NaN, never the
    wrong cosine of 0fca95d (-0.0, 1.0, 0.0), never an exception."""
    import math
    import warnings

    import numpy as np

    import divmeter
    from divmeter.engine.registry import get_metric

    X = np.random.default_rng(seed).normal(size=(n, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the kernels' own warnings are not the question
        base, triple, scaled = (divmeter.score(Y, metric) for Y in (X, 3 * X, X * 10.0**power))
    if base.value is None:
        assert scaled.value is None and scaled.reason, (scaled, base)
        return
    if scaled.value is None:  # a null says why
        assert scaled.reason and ("float64" in scaled.reason or base.reason is None), scaled
        free = triple.value is not None and math.isclose(triple.value, base.value,
                                                         rel_tol=1e-7, abs_tol=1e-12)
        assert not free, f"{metric} is scale-free but null at 1e{power}: {scaled.reason}"
        return
    assert math.isfinite(scaled.value), scaled
    lo, hi = get_metric(metric).bounds
    assert (lo is None or scaled.value >= lo - 1e-9) and (hi is None or scaled.value <= hi + 1e-9)
    if triple.value is not None and math.isclose(triple.value, base.value, rel_tol=1e-7,
                                                 abs_tol=1e-12):
        assert scaled.value == pytest.approx(base.value, rel=1e-6, abs=1e-9), (metric, power)
    else:
        k = round(math.log(triple.value / base.value) / math.log(3))
        assert math.log10(abs(scaled.value)) == pytest.approx(
            math.log10(abs(base.value)) + k * power, abs=1e-6), (metric, power, k)


@pytest.mark.embed
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(q=st.lists(st.one_of(st.floats(-1e308, 1e308, allow_nan=False, allow_infinity=False),
                            st.sampled_from([0.0, 1e308, -1e308, 5e-324, 1.7976931348623157e308])),
                  min_size=4, max_size=4))
def test_novelty_utility_qualities_at_the_extremes(q: list[float]) -> None:
    """Qualities anywhere in float64: a number in [0, max quality] (NoveltyBench's utility is
    a weighted mean of them), or, with a negative one, a null that says so."""
    import math
    import warnings

    import divmeter

    texts = ["The cat sat.", "Stocks fell sharply today.", "The cat sat.", "Rain again."]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = divmeter.score(texts, "novelty-utility", quality="field", fields={"quality": q})
    if min(q) < 0:
        assert r.value is None and "is negative" in (r.reason or "")
        return
    assert r.value is not None and math.isfinite(r.value), r
    assert 0.0 <= r.value <= max(q) * (1 + 1e-12)
