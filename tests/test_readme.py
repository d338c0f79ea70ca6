"""README never drifts (issue 15, "The newcomer's path"): every command of its fenced ``bash``
blocks runs, from a copy of examples/, and exits 0; the one-minute example prints what README
shows. Commands run on the shipped examples/ (a packaged model where one is needed); those that
install packages, need a server, the user's own files or Tevet & Berant's data are skipped by the
explicit allow-list SKIP below (each with its reason), never silently.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
BIN = Path(sys.executable).parent

#: Command prefixes not run here, and why.
SKIP = {
    "python3 -m venv": "installs packages (network); CI's .ci/run does it",
    ".venv-bench/": "benchmarks need the bench extra and minutes",
    "divmeter annotate serve": "starts a web server (tested in tests/test_annotate_*.py)",
    "divmeter meta contest hds.csv": "needs the export of a finished annotation study",
    "divmeter meta contest $T/": "needs Tevet & Berant's data (tests/test_meta_tevet.py)",
    "divmeter meta dectest $T/": "needs Tevet & Berant's data (tests/test_meta_tevet.py)",
    "divmeter meta nuggets $T/": "needs Tevet & Berant's data (tests/test_meta_tevet.py)",
    "divmeter generate prompts.jsonl": "the user's prompts: Gemma at decTest's size takes "
    "minutes on a CPU, openai:NAME needs a server (the examples/prompts.jsonl line runs here; "
    "tests/test_generate*.py run both backends on small inputs)",
    "divmeter meta dectest results_dectest_e2e.jsonl": "reads the full generation run's output "
    "(benchmarks/results_dectest_e2e.jsonl; tests/test_generate.py checks meta dectest reads it)",
    "export OPENAI_API_KEY": "a key for a hosted API",
    "divmeter judge examples/pairs.jsonl --consistency": "needs a judge model behind a server "
    "(tests/test_judge*.py; the --dry-run line runs here)",
    "divmeter score sets.jsonl -m judge": "needs a judge model behind a server",
    "divmeter judge pairs.jsonl": "needs a model behind a server (tests/test_judge_llama.py "
    "runs the log-probability answers on llama.cpp's server)",
    "divmeter meta pairwise labelled.jsonl": "reads the judge's output",
    "divmeter build para ": "needs a generator server (NAME, URL are the user's; "
    "tests/test_build_generated.py)",
    "divmeter build nonsensical ": "needs a generator server (NAME, URL are the user's)",
    "divmeter build cdm-fillers ": "needs a generator server and the user's frames",
    "divmeter score cdm.jsonl": "reads the CDM builder's output (from a server)",
    "divmeter build pattr-grid topics.txt": "needs a generator server (the prompt grid alone, "
    "from examples/topics.txt, runs here)",
    "divmeter meta length-bias pools.jsonl": "reads the PATTR grid builder's output (from a "
    "server; examples/pools.jsonl runs in the command-line section)",
    'S="python -m divmeter.backends.llamacpp_server': "starts llama.cpp's server (the tests "
    "start it the same way: tests/llama_server.py, tests/test_cli_server_models.py)",
    "$S --model": "starts llama.cpp's server on the user's GGUF file",
}


def bash_commands(text: str) -> list[str]:
    """The commands of every ```bash block, continuation lines joined, comments dropped.

    Example:
        >>> bash_commands("```bash\\na \\\\\\n  b   # note\\n# c\\n```\\n```text\\nx\\n```")
        ['a b   # note']
    """
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", "", block)
        out += [ln.strip() for ln in joined.splitlines()
                if ln.strip() and not ln.strip().startswith("#")]
    return out


COMMANDS = bash_commands(README.read_text(encoding="utf-8"))


def _skip_reason(cmd: str) -> str | None:
    return next((why for prefix, why in SKIP.items() if cmd.startswith(prefix)), None)


def test_readme_has_commands_and_skips_are_used() -> None:
    assert len(COMMANDS) >= 15
    used = {p for p in SKIP for c in COMMANDS if c.startswith(p)}
    assert used == set(SKIP), f"allow-list entries no README command needs: {set(SKIP) - used}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("readme")
    shutil.copytree(REPO / "examples", d / "examples")
    return d


def _run(cmd: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "80"}
    return subprocess.run(["bash", "-c", f"set -o pipefail; {cmd}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("cmd", COMMANDS)
def test_readme_command_runs(cmd: str, workdir: Path) -> None:
    why = _skip_reason(cmd)
    if why:
        pytest.skip(why)
    proc = _run(cmd, workdir)
    assert proc.returncode == 0, f"{cmd}\n{proc.stderr}"


def test_one_minute_output_is_what_readme_shows(workdir: Path) -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## In one minute", 1)[1].split("\n## ", 1)[0]
    cmd = bash_commands(section)[1]
    assert cmd.startswith("divmeter score examples/stories.jsonl")
    shown = re.search(r"```text\n(.*?)```", section, flags=re.S).group(1).splitlines()
    proc = _run(cmd, workdir)
    assert proc.returncode == 0, proc.stderr
    got = [ln.rstrip() for ln in proc.stdout.splitlines()]
    for line in shown:
        if line != "...":
            assert line.rstrip() in got, line


def test_first_steps_run_as_written_in_a_plain_shell() -> None:
    """The two set-up commands of "In one minute", in one shell with nothing of divmeter on the
    PATH: the install command's own steps must put `divmeter` there (its network steps, venv and
    pip, are what CI's .ci/run already ran into REPO/.venv; every other step runs as written)."""
    if not (REPO / ".venv" / "bin" / "divmeter").exists():
        pytest.skip("no .venv in the repository (made by the README's install command / CI)")
    section = README.read_text(encoding="utf-8").split("## In one minute", 1)[1]
    install, main = bash_commands(section.split("\n## ", 1)[0])[:2]
    steps = [s.strip() for s in install.split("&&")]
    assert steps[0].startswith("python3 -m venv .venv")
    rest = [s for s in steps if not s.startswith(("python3 -m venv", ".venv/bin/pip install"))]
    assert rest, "the install command never makes `divmeter` reachable"
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if Path(p).resolve() != BIN.resolve() and p)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(PATH=path, COLUMNS="80")
    proc = subprocess.run(["bash", "-c", " && ".join(rest + [main])], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "lighthouse-diverse" in proc.stdout
