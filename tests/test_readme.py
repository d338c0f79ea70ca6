"""README never drifts (issues 15 and 33): every command of its fenced ``bash`` blocks runs, from a
copy of examples/, and exits 0; the one-minute example prints what README shows; the test
command it gives is the one CI runs (``.ci/run``); README stays short (the reference material
lives in the documentation site, whose examples tests/test_docs_site.py runs). Commands that
install packages are skipped by the explicit allow-list SKIP below (with its reason), never
silently.
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
    assert len(COMMANDS) >= 5
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


def test_readme_is_short_and_links_resolve() -> None:
    """About 200 lines (issue 33), and every link into docs/ names a page that exists."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 220
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (REPO / target).is_file(), target


def test_ci_runs_the_readme_test_command() -> None:
    """`.ci/run` runs the test command README gives, character for character."""
    test_cmd = next(c for c in COMMANDS if c.endswith("-m pytest"))
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test_cmd in ci.splitlines()
