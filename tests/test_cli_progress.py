"""Quiet means quiet, and progress off a terminal is plain lines (issue 26): `-q` leaves stderr
empty on success, model libraries and warnings included; without a TTY, progress is a line
every PLAIN_EVERY seconds with a newline, never `\\r`-joined frames."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from divmeter.apps.cli import progress

DIVMETER = Path(sys.executable).parent / "divmeter"


def _sets(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "sets.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS",)}
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=900,
                          cwd=cwd, env=env)


def test_quiet_drops_warnings_that_show_without_it(tmp_path: Path) -> None:
    # text written without spaces makes the tevet tokenizer warn (UnspacedScriptWarning)
    path = _sets(tmp_path, [{"set_id": "zh", "responses": ["今天天气很好我们去公园", "明天下雨"]}])
    loud = run("score", str(path), "-m", "distinct-n", "-o", "a.jsonl", cwd=tmp_path)
    assert loud.returncode == 0 and "UnspacedScriptWarning" in loud.stderr
    quiet = run("score", str(path), "-m", "distinct-n", "-o", "b.jsonl", "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()


@pytest.mark.lm
@pytest.mark.slow
def test_decan_quiet_prints_nothing_on_stderr(tmp_path: Path) -> None:
    path = _sets(tmp_path, [{"set_id": "s", "responses": ["The cat sat.", "A dog ran off."]}])
    proc = run("score", str(path), "-m", "decan:permutations=1", "-q", "-o", "d.jsonl",
               cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert json.loads((tmp_path / "d.jsonl").read_text())["decan:permutations=1"] is not None


def test_plain_progress_lines_end_in_newlines(monkeypatch, capsys) -> None:
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with progress.progress_bar(True, 4, label="scoring") as tick:
        assert tick is not None
        for done in range(1, 5):
            tick(done, None)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert [ln.split(",")[0] for ln in lines] == [f"divmeter: scoring: {d}/4 ({25 * d}%)"
                                                 for d in range(1, 5)]


def test_no_progress_when_not_shown() -> None:
    with progress.progress_bar(False, 3) as tick:
        assert tick is None
