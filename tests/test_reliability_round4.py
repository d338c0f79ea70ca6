"""Issue 34 (reliability, round 4): the cases of a hostile sweep of the newer features that
each failed on 0fca95d: interrupts of ``-j`` runs, uncapped counts, markup and control
characters reaching the terminal, costs, internal errors, wrong numbers at the extremes. The
classes they belong to are swept in ``test_hostile_sweep.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from divmeter.inputs.data import ResponseSet, read_records, write_sets

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "stories.jsonl"
CLI = [sys.executable, "-c", "from divmeter.apps.cli import main; main()"]


def _many_sets(path: Path, n_sets: int, n_resp: int) -> list[ResponseSet]:
    import random

    rng = random.Random(34)
    words = [f"w{i}" for i in range(60)]
    sets = [ResponseSet(f"s{i}", [" ".join(rng.choices(words, k=12)) for _ in range(n_resp)])
            for i in range(n_sets)]
    write_sets(sets, path)
    return sets


# ------------------------------------------------------------------------------------------------
# item 4: two Ctrl-C on a -j run end it (exit 130), never hang it


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_two_interrupts_of_a_worker_run_never_hang(tmp_path: Path) -> None:
    """Two SIGINTs 0.2-0.5 s apart to the whole process group (what Ctrl-C twice does) while
    two workers score: exit 130 with the one line, no traceback, within the deadline (it hung
    in 7 of 8 trials on 0fca95d: the parent in wait, a worker on a futex); --resume then
    finishes the file with the records of a run in one process."""
    src = tmp_path / "many.jsonl"
    sets = _many_sets(src, 300, 30)
    metrics = ["-m", "homogenization", "-m", "distinct-n"]
    out = tmp_path / "out.jsonl"
    for trial, gap in enumerate((0.2, 0.5)):
        out.unlink(missing_ok=True)
        proc = subprocess.Popen(
            [*CLI, "score", str(src), *metrics, "-j", "2", "-o", str(out), "-q"],
            stderr=subprocess.PIPE, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            while not (out.exists() and out.stat().st_size > 0):
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.02)
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(gap)
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"trial {trial}: still running 90 s after two SIGINTs") from None
        text = err.decode()
        assert proc.returncode == 130, (trial, proc.returncode, text[-2000:])
        assert "Traceback" not in text, text[-2000:]
        assert text.endswith("divmeter: interrupted (what was written so far is kept).\n")
    again = subprocess.run([*CLI, "score", str(src), *metrics, "-j", "2", "-o", str(out),
                            "--resume", "-q"], capture_output=True, timeout=600)
    assert again.returncode == 0, again.stderr.decode()
    from divmeter.engine.batch import score_sets

    assert list(read_records(out)) == list(score_sets(sets, ["homogenization", "distinct-n"]))


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(x) for x in (task / "children").read_text().split()]
    return kids


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="Linux /proc")
def test_a_killed_worker_is_said_in_words(tmp_path: Path) -> None:
    """A -j worker killed by the system (SIGKILL, as the OOM killer does): exit 2 and one line
    that says what happened and what to do, not 'internal error: BrokenProcessPool ... please
    report it'."""
    src = tmp_path / "many.jsonl"
    _many_sets(src, 300, 30)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([*CLI, "score", str(src), "-m", "homogenization", "-j", "2", "-o",
                             str(out), "-q"], stderr=subprocess.PIPE)
    try:
        while not (out.exists() and out.stat().st_size > 0):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        workers = [k for k in _children(proc.pid)
                   if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]
        assert workers
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.decode()
    assert proc.returncode == 2, text
    assert text.startswith("divmeter: error: a worker process of -j died"), text
    assert "internal error" not in text and "Traceback" not in text
    assert "--resume" in text
